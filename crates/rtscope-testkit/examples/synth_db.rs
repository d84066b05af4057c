//! Writes synthetic runs into a database, as one campaign: the data behind
//! bench/report-speed.sh and a quick way to see a report without a real-time kernel.
//!
//! Usage: `cargo run --release -p rtscope-report --example synth_db -- DB RUNS SAMPLES [NAME
//! [CPUS]]` (SAMPLES per CPU; campaign NAME defaults to `synthetic`, CPUS to 2).

use rtscope_store::{CampaignRun, NewCampaign, RunStatus, Store};
use rtscope_testkit::synthetic::{write_run, SyntheticRun};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [db, runs, samples, rest @ ..] = args.as_slice() else {
        return Err("usage: synth_db DB RUNS SAMPLES [CAMPAIGN [CPUS]]".into());
    };
    let name = rest.first().map_or("synthetic", String::as_str);
    let cpus: u32 = rest.get(1).map_or(Ok(2), |c| c.parse())?;
    let (runs, samples): (u32, u64) = (runs.parse()?, samples.parse()?);
    let mut store = Store::open(std::path::Path::new(db))?;
    let cid = store.begin_campaign(&NewCampaign {
        name: name.into(),
        source: "preset:synthetic".into(),
        definition: String::new(),
        started: "2026-11-22T03:00:00Z".into(),
        planned_runs: runs,
        command_line: vec!["synth_db".into()],
    })?;
    let cases = ["idle", "cpu", "io", "messaging", "network"];
    for seq in 0..runs {
        let case = cases[seq as usize % cases.len()];
        let spec = SyntheticRun {
            label: format!("{case}-{seq}"),
            samples,
            cpus,
            base_ns: 4_000 + 1_500 * (seq as u64 % cases.len() as u64),
            seed: u64::from(seq) + 1,
            ..SyntheticRun::default()
        };
        let run_id = write_run(&mut store, &spec)?;
        let place = CampaignRun {
            seq,
            run_id,
            scenario: "default".into(),
            load_case: case.into(),
            repeat: seq / cases.len() as u32 + 1,
            status: RunStatus::Running,
        };
        store.add_campaign_run(cid, &place)?;
    }
    store.finish_campaign(cid, RunStatus::Complete, "2026-11-22T04:00:00Z")?;
    println!("wrote {runs} runs of {samples} samples per CPU into {db} (campaign {name})");
    Ok(())
}
