//! `rtscope import` of cyclictest output without a histogram: the `-q` summary, a live status
//! captured without `-q`, and `--spike` output (the reference captures of cyclictest 2.40 in
//! tests/reference/, and a fresh run of the real cyclictest when it is installed). Each imports
//! as a run with the summary statistics it carries, flagged as summary-only, with no
//! percentiles; spikes are kept in the configuration.

use crate::common;

use serde_json::Value;
use std::path::{Path, PathBuf};

const BIN: &str = env!("CARGO_BIN_EXE_rtscope");

fn reference(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/reference/cyclictest-2.40")
        .join(name)
}

/// Imports `file` into a fresh database and reads the run back.
fn import(name: &str, file: &Path) -> Value {
    let db = common::fresh_dir(&format!("import-summary-{name}")).join("s.db");
    let db = db.to_str().unwrap();
    let o = common::run(BIN, &["import", "--db", db, file.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", common::dump(&o));
    common::show_last(Path::new(db))
}

/// (tid, prio, interval µs, cycles, min, avg, max) of every `T:` line of the last block,
/// parsed here independently.
fn expected(text: &str) -> Vec<[u64; 7]> {
    let mut out: Vec<(u64, [u64; 7])> = Vec::new();
    for l in text
        .lines()
        .filter(|l| l.contains(" P:") && l.contains("Max:"))
    {
        let l = &l[l.find("T:").unwrap()..];
        let nums: Vec<u64> = l
            .split(|c: char| !c.is_ascii_digit())
            .filter(|s| !s.is_empty())
            .map(|s| s.parse().unwrap())
            .collect();
        // T, tid, P, I, C, Min, Act, Avg, Max
        let row = [
            nums[1], nums[2], nums[3], nums[4], nums[5], nums[7], nums[8],
        ];
        match out.iter_mut().find(|(t, _)| *t == nums[0]) {
            Some(e) => e.1 = row,
            None => out.push((nums[0], row)),
        }
    }
    out.into_iter().map(|e| e.1).collect()
}

fn check(run: &Value, text: &str) {
    let want = expected(text);
    let threads = run["thread_stats"].as_array().unwrap();
    assert_eq!(threads.len(), want.len(), "{run}");
    for (t, w) in threads.iter().zip(&want) {
        let got = [
            t["tid"].as_u64().unwrap(),
            t["priority"].as_u64().unwrap(),
            t["interval_ns"].as_u64().unwrap() / 1000,
            t["samples"].as_u64().unwrap(),
            t["min_ns"].as_u64().unwrap() / 1000,
            t["mean_ns"].as_f64().unwrap() as u64 / 1000,
            t["max_ns"].as_u64().unwrap() / 1000,
        ];
        assert_eq!(&got, w, "{t}");
        assert_eq!(
            t["percentiles_ns"]["p50"],
            Value::Null,
            "no histogram: no percentiles"
        );
    }
    let src = &run["config"]["source"];
    assert_eq!(src["format"], "cyclictest-summary");
    assert_eq!(src["summary_only"], true);
}

#[test]
fn q_summaries_and_a_live_status_import_with_their_statistics() {
    for name in ["summary-q.txt", "live-status.txt"] {
        let file = reference(name);
        let run = import(name, &file);
        check(&run, &std::fs::read_to_string(&file).unwrap());
        assert!(run["config"]["source"].get("spikes").is_none(), "{name}");
    }
}

#[test]
fn spike_output_imports_with_its_spikes() {
    let file = reference("spike-100.txt");
    let run = import("spike", &file);
    check(&run, &std::fs::read_to_string(&file).unwrap());
    let src = &run["config"]["source"];
    assert_eq!(
        src["spikes"],
        serde_json::json!([{"thread": 1, "latency_us": 162, "ts_us": 2162688834u64}])
    );
    assert_eq!(src["spikes_reported"], 1);
}

#[test]
fn a_fresh_real_cyclictest_q_and_spike_run_imports() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    let dir = common::fresh_dir("import-summary-real-run");
    let out = dir.join("spike.txt");
    // A 1 µs spike threshold: every wake-up is a spike, so some are always printed.
    let (stdout, _) =
        common::reference::cyclictest(&["-l500", "-m", "-q", "-p80", "-i200", "--spike=1"]);
    std::fs::write(&out, &stdout).unwrap();
    let text = stdout;
    let run = import("real-db", &out);
    check(&run, &text);
    let lines = text.lines().filter(|l| l.contains("Spike:")).count();
    let kept = run["config"]["source"]["spikes"]
        .as_array()
        .map_or(0, Vec::len);
    assert_eq!(kept, lines, "every spike line is kept");
}
