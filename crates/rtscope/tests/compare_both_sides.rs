//! Issue 65, item 3: `compare` says only what both sides measured. On one run per side a
//! change beyond the threshold is `higher (untested)` or `lower (untested)` — symmetric words,
//! `better`/`worse` only where the significance test decided; an explicit `--stat` list is
//! honoured on noise runs even when it spells out the latency default; and the kernel-function
//! block appears only when both groups took kernel stacks (a timer callback's name is no
//! stack), a group without them being one line, with advice only where it can be followed.
//! Synthetic runs and explanation summaries in a temporary database; nothing depends on load.

use crate::common;

use rtscope_store::{CampaignRun, NewCampaign, RunId, RunStatus, SpikeSummaryRow, Store};
use rtscope_testkit::synthetic::{write_run, SyntheticRun};
use rtscope_testkit::synthetic_noise::{write_noise_run, SyntheticNoise};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Output;

fn rtscope(args: &[&str]) -> Output {
    common::run(env!("CARGO_BIN_EXE_rtscope"), args)
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// `rtscope compare --db DB ARGS…`, asserting the exit code.
fn compare(db: &Path, args: &[&str], code: i32) -> String {
    let mut all = vec!["compare", "--db", db.to_str().unwrap()];
    all.extend_from_slice(args);
    let o = rtscope(&all);
    assert_eq!(o.status.code(), Some(code), "{}", common::dump(&o));
    stdout(&o)
}

fn compare_json(db: &Path, args: &[&str], code: i32) -> Value {
    let mut all = args.to_vec();
    all.push("--json");
    serde_json::from_str(&compare(db, &all, code)).expect("compare --json prints JSON")
}

fn db(name: &str) -> PathBuf {
    common::fresh_dir(&format!("compare-sides-{name}")).join("rtscope.db")
}

/// Imports one cyclictest histogram fixture with a label.
fn import(db: &Path, fixture: &str, label: &str) {
    let file = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/import")
        .join(fixture);
    let o = rtscope(&[
        "import",
        "--db",
        db.to_str().unwrap(),
        "--label",
        label,
        file.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", common::dump(&o));
}

/// The statistics row of `stat`.
fn line<'a>(text: &'a str, stat: &str) -> &'a str {
    let prefix = format!("{stat} ");
    text.lines()
        .find(|l| l.starts_with(&prefix))
        .unwrap_or_else(|| panic!("no {stat} row in {text}"))
}

fn change<'a>(doc: &'a Value, stat: &str) -> &'a Value {
    let rows = doc["statistics"].as_array().unwrap();
    let row = rows.iter().find(|r| r["stat"] == stat).unwrap();
    &row["changes"][0]
}

/// One imported run per side (max 168 µs against 528 µs): the rise is `higher (untested)`, the
/// fall `lower (untested)`, in text and JSON alike; neither fails, and `--fail-untested` fails
/// the rise only.
#[test]
fn one_run_per_side_says_higher_or_lower_untested_and_only_a_rise_can_fail() {
    let d = db("words");
    import(&d, "hist-h100-b300.txt", "low");
    import(&d, "hist-H100.txt", "high");
    let rise = compare(&d, &["low", "high"], 0);
    assert!(
        line(&rise, "max").ends_with("+214.3%  higher (untested, n=1 per side)"),
        "{rise}"
    );
    let fall = compare(&d, &["high", "low"], 0);
    assert!(
        line(&fall, "max").ends_with("-68.2%  lower (untested, n=1 per side)"),
        "{fall}"
    );
    for text in [&rise, &fall] {
        for word in ["undecided", "worse", "better"] {
            assert!(!text.contains(word), "{word}: {text}");
        }
    }
    let doc = compare_json(&d, &["high", "low"], 0);
    let max = change(&doc, "max");
    assert_eq!(
        (&max["verdict"], &max["untested"]),
        (&"lower".into(), &true.into())
    );
    let doc = compare_json(&d, &["low", "high"], 0);
    let max = change(&doc, "max");
    assert_eq!(
        (&max["verdict"], &max["untested"]),
        (&"higher".into(), &true.into())
    );
    assert_eq!(max["threshold_verdict"], "REGRESSION");
    // --fail-untested: the rise fails, the fall never does.
    let strict = compare(&d, &["low", "high", "--fail-untested"], 1);
    assert!(
        line(&strict, "max").ends_with("REGRESSION (untested, n=1 per side)"),
        "{strict}"
    );
    let strict = compare(&d, &["high", "low", "--fail-untested"], 0);
    assert!(
        line(&strict, "max").ends_with("lower (untested, n=1 per side)"),
        "{strict}"
    );
}

/// Five synthetic runs per side, every B run 50 % faster: the test decides, and the word is
/// `better` (and, the other way round, `REGRESSION`), never `lower`/`higher`.
#[test]
fn a_change_the_test_decided_is_better_or_a_regression() {
    let d = db("tested");
    let mut store = Store::open(&d).unwrap();
    for (g, (kernel, base_ns)) in [("a", 7_500), ("b", 5_000)].into_iter().enumerate() {
        for k in 0..5 {
            let spec = SyntheticRun {
                label: format!("{kernel}-{k}"),
                cpus: 1,
                samples: 20_000,
                base_ns,
                seed: 100 * g as u64 + k + 1,
                monitors: false,
                tags: vec![("kernel".into(), kernel.into())],
                ..SyntheticRun::default()
            };
            write_run(&mut store, &spec).unwrap();
        }
    }
    drop(store);
    let text = compare(&d, &["kernel=a", "kernel=b"], 0);
    assert!(line(&text, "p50").ends_with("better"), "{text}");
    assert!(
        !text.contains("untested") && !text.contains("lower"),
        "{text}"
    );
    let doc = compare_json(&d, &["kernel=b", "kernel=a"], 1);
    assert_eq!(change(&doc, "p50")["verdict"], "REGRESSION");
    assert_eq!(change(&doc, "p50")["untested"], false);
}

/// Noise runs compared with `--stat` spelling out the latency default: those statistics, in
/// that order; without `--stat`, noise's own defaults.
#[test]
fn an_explicit_stat_list_is_honoured_on_noise_runs_even_when_it_is_the_default_list() {
    let d = db("noise-stat");
    let mut store = Store::open(&d).unwrap();
    for (label, len) in [("quiet", 2_000), ("noisy", 9_000)] {
        let spec = SyntheticNoise {
            label: label.into(),
            cpus: vec![1],
            threshold_ns: 1000,
            iterations: 10_000,
            gaps: vec![vec![(100_000_000, len), (200_000_000, len + 500)]],
            explain_json: None,
            tags: Vec::new(),
        };
        write_noise_run(&mut store, &spec).unwrap();
    }
    drop(store);
    let stats = |args: &[&str]| -> Vec<String> {
        let doc = compare_json(&d, args, 0);
        let rows = doc["statistics"].as_array().unwrap();
        rows.iter()
            .map(|r| r["stat"].as_str().unwrap().to_string())
            .collect()
    };
    let asked = ["quiet", "noisy", "--stat", "p50,p99,p99.99,max,missed"];
    assert_eq!(stats(&asked), ["p50", "p99", "p99.99", "max", "missed"]);
    let repeated = [
        "quiet",
        "noisy",
        "--stat",
        "p50",
        "--stat",
        "p99,p99.99",
        "--stat",
        "max,missed",
    ];
    assert_eq!(stats(&repeated), ["p50", "p99", "p99.99", "max", "missed"]);
    assert_eq!(
        stats(&["quiet", "noisy"]),
        ["max", "available", "noise/s", "p50", "p99", "p99.99"]
    );
}

/// A 1 s synthetic latency run tagged `group=GROUP`.
fn latency_run(store: &mut Store, group: &str, k: u64) -> RunId {
    let spec = SyntheticRun {
        label: format!("{group}-{k}"),
        cpus: 1,
        samples: 1_000,
        base_ns: 5_000,
        seed: k + 1,
        monitors: false,
        tags: vec![("group".into(), group.into())],
        ..SyntheticRun::default()
    };
    write_run(store, &spec).unwrap()
}

/// Stores an explanation summary for `run` with these function rows (ns), `traced` spikes.
fn explain(store: &mut Store, run: RunId, functions: &[(&str, u64)], traced: u64) {
    let rows: Vec<Value> = functions
        .iter()
        .map(|(f, ns)| serde_json::json!({"function": f, "ns": ns, "spikes": 1}))
        .collect();
    let traced_ns: u64 = functions.iter().map(|f| f.1).sum();
    let summary = serde_json::json!({
        "counts": {"spikes": traced, "traced": traced, "traced_ns": traced_ns},
        "functions": rows,
        "worst": [],
    });
    let row = SpikeSummaryRow {
        tier: "flight_recorder".into(),
        tier_reason: None,
        threshold_ns: 100_000,
        clock_start_ns: 0,
        summary: summary.to_string(),
    };
    store.write_spikes(run, &row, &[]).unwrap();
}

/// A campaign `name` holding `runs`.
fn campaign(store: &mut Store, name: &str, runs: &[RunId]) {
    let cid = store
        .begin_campaign(&NewCampaign {
            name: name.into(),
            source: "campaign.toml".into(),
            definition: String::new(),
            started: "2026-11-22T03:00:00Z".into(),
            planned_runs: runs.len() as u32,
            command_line: vec!["rtscope".into(), "run".into(), "campaign.toml".into()],
        })
        .unwrap();
    for (seq, &run_id) in runs.iter().enumerate() {
        let r = CampaignRun {
            seq: seq as u32,
            run_id,
            scenario: "1:1".into(),
            load_case: "idle".into(),
            repeat: seq as u32 + 1,
            status: RunStatus::Complete,
        };
        store.add_campaign_run(cid, &r).unwrap();
    }
}

/// Two campaigns of the same plan, explained by default (no kernel stacks): in one the timer
/// callbacks named the spikes' time (`tcp_delack_timer`), in the other no callback ran long
/// enough. Neither took a kernel stack, so compare says nothing about kernel functions, and
/// the two say the same.
#[test]
fn campaigns_explained_without_stacks_get_no_kernel_function_block() {
    let d = db("campaigns");
    let mut store = Store::open(&d).unwrap();
    let one: Vec<RunId> = (0..2).map(|k| latency_run(&mut store, "one", k)).collect();
    let two: Vec<RunId> = (2..4).map(|k| latency_run(&mut store, "two", k)).collect();
    for &id in &one {
        explain(&mut store, id, &[("tcp_delack_timer", 115_800)], 2);
    }
    for &id in &two {
        explain(&mut store, id, &[], 2);
    }
    campaign(&mut store, "seed-002", &one);
    campaign(&mut store, "seed-004", &two);
    drop(store);
    for (a, b) in [
        ("campaign:seed-002", "campaign:seed-004"),
        ("campaign:seed-004", "campaign:seed-002"),
    ] {
        let text = compare(&d, &[a, b, "--no-fail"], 0);
        for absent in [
            "kernel functions",
            "kernel stacks",
            "tcp_delack_timer",
            "--explain-stacks",
        ] {
            assert!(!text.contains(absent), "{absent}: {text}");
        }
        let doc = compare_json(&d, &[a, b, "--no-fail"], 0);
        assert!(
            doc["kernel_functions"].is_null(),
            "{}",
            doc["kernel_functions"]
        );
    }
}

/// Group A measured with `--explain-stacks on`, group B explained without: no table of
/// functions, one line for B with the advice a `measure` can follow; campaign runs without
/// stacks get the line without advice (a campaign file has no `--explain-stacks`).
#[test]
fn a_group_without_stacks_is_one_line_and_no_table() {
    let d = db("one-side");
    let mut store = Store::open(&d).unwrap();
    let with: Vec<RunId> = (0..2).map(|k| latency_run(&mut store, "with", k)).collect();
    let without: Vec<RunId> = (2..4)
        .map(|k| latency_run(&mut store, "without", k))
        .collect();
    let camp: Vec<RunId> = (4..6).map(|k| latency_run(&mut store, "camp", k)).collect();
    for &id in &with {
        explain(
            &mut store,
            id,
            &[("do_idle", 300_000), ("tcp_delack_timer", 50_000)],
            3,
        );
    }
    for &id in without.iter().chain(&camp) {
        explain(&mut store, id, &[("tcp_delack_timer", 115_800)], 2);
    }
    campaign(&mut store, "nightly", &camp);
    drop(store);
    // The runs of A asked for stacks on their command line.
    let conn = rusqlite::Connection::open(&d).unwrap();
    let on = serde_json::to_string(&[
        "rtscope",
        "measure",
        "--explain",
        "100us",
        "--explain-stacks",
        "on",
    ])
    .unwrap();
    for id in &with {
        conn.execute(
            "UPDATE runs SET command_line=?1 WHERE id=?2",
            rusqlite::params![on, id],
        )
        .unwrap();
    }
    drop(conn);
    let text = compare(&d, &["group=with", "group=without", "--no-fail"], 0);
    assert!(!text.contains("kernel functions ("), "no block: {text}");
    assert!(!text.contains("B vs A:\n"), "no table: {text}");
    let said: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("kernel stacks"))
        .collect();
    assert_eq!(
        said,
        ["kernel functions not compared: B ('group=without') took no kernel stacks (explained without kernel stacks: runs 3, 4); to compare them, measure with --explain DUR --explain-stacks on"],
        "{text}"
    );
    let doc = compare_json(&d, &["group=with", "group=without", "--no-fail"], 0);
    let kf = &doc["kernel_functions"];
    assert_eq!(kf["candidates"][0]["compared"], false, "{kf}");
    assert_eq!(
        kf["groups"][1]["left_out"][0]["reason"], "no_stacks",
        "{kf}"
    );
    let text = compare(&d, &["group=with", "campaign:nightly", "--no-fail"], 0);
    let said: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("kernel stacks"))
        .collect();
    assert_eq!(
        said,
        ["kernel functions not compared: B ('campaign:nightly') took no kernel stacks (explained without kernel stacks: runs 5, 6)"],
        "{text}"
    );
    // Both sides with stacks: the block, its table, and no line about a missing side.
    let text = compare(&d, &["group=with", "group=with", "--no-fail"], 0);
    assert!(text.contains("kernel functions ("), "{text}");
    assert!(text.contains("A: 2 of 2 runs with kernel stacks"), "{text}");
    assert!(text.contains("B vs A:\n"), "{text}");
    assert!(!text.contains("not compared"), "{text}");
}
