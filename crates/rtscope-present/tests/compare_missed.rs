//! `rtscope compare` of runs in a store written through its API: missed deadlines compared
//! as a rate, in the typed comparison and in the text report's row and legend (moved from
//! rtscope-analysis's compare/load_tests.rs with the text report).

use rtscope_analysis::compare::analysis::Comparison;
use rtscope_analysis::compare::load::groups;
use rtscope_analysis::compare::model::{Stat, DEFAULT_STATS};
use rtscope_analysis::compare::verdict::Thresholds;
use rtscope_core::{Histogram, Nanos};
use rtscope_present::compare_text as text;
use rtscope_store::{
    Checkpoint, MonitorBatch, NewRun, RunKind, RunStatus, Store, ThreadInfo, ThreadStats,
};
use std::path::PathBuf;

fn tmpdb(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "rtscope-present-compare-{}-{name}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("rtscope.db")
}

/// A finished one-thread run with `n` samples of `value_us`, `missed` missed deadlines and
/// `tags`.
fn add_run_with(s: &mut Store, value_us: u64, n: u64, missed: u64, tags: &[(&str, &str)]) -> i64 {
    let id = s
        .begin_run(&NewRun {
            kind: RunKind::Measure,
            label: None,
            tags: tags
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            started: "2026-11-22T03:00:00Z".into(),
            started_unix_ns: 1,
            pid: std::process::id(),
            tool_version: "0.1.0".into(),
            command_line_json: "[]".into(),
            config_json: "{}".into(),
            environment: vec![
                ("uname.release".into(), "6.18-rt".into()),
                ("rtscope.sample_rule".into(), "wake-up".into()),
            ],
            threads: vec![ThreadInfo {
                thread: 0,
                cpu: Some(0),
                policy: "fifo".into(),
                priority: 90,
                interval_ns: 1_000_000,
            }],
        })
        .unwrap();
    let mut h = Histogram::new();
    h.record_n(Nanos::from_us(value_us), n);
    let last = Checkpoint {
        progress_ns: n * 1_000_000,
        at_unix_ns: 2,
        threads: vec![ThreadStats {
            thread: 0,
            tid: 1,
            figures: rtscope_store::SampleFigures {
                samples: n,
                min_ns: h.min().map(|v| v.0),
                mean_ns: Some(value_us as f64 * 1e3),
                max_ns: h.max().map(|v| v.0),
                max_cycle: Some(0),
                max_offset_ns: Some(0),
            },
            missed,
            raw_dropped: 0,
            histogram: &h,
        }],
        series: vec![],
        events: vec![],
        samples: vec![],
        monitor: MonitorBatch::default(),
    };
    s.finish_run(id, &last, RunStatus::Complete, "2026-11-22T03:00:01Z", 0)
        .unwrap();
    id
}

/// The comparison of the groups `selectors` name in the store at `path`, with the options of
/// `rtscope compare` (`stats`, `--threshold-only`) and its defaults otherwise.
fn compare(
    path: &std::path::Path,
    selectors: &[&str],
    stats: &str,
    threshold_only: bool,
) -> Comparison {
    let s = Store::open(path).unwrap();
    let selectors: Vec<String> = selectors.iter().map(|t| t.to_string()).collect();
    let loaded = groups(&s, &selectors).unwrap();
    let stats: Vec<Stat> = stats
        .split(',')
        .map(|t| Stat::parse(t, "--stat").unwrap())
        .collect();
    let mut thresholds = Thresholds::parse(&[], "1us").unwrap();
    thresholds.threshold_only = threshold_only;
    let matrix = Stat::parse("max", "--matrix").unwrap();
    Comparison::new(loaded.groups, &stats, thresholds, matrix, None)
}

/// Missed deadlines are compared as a rate: B's runs are twice as long with twice the misses
/// (1 % of the deadlines each), so nothing changed, although B missed twice as many.
#[test]
fn missed_deadlines_compare_per_deadline_not_as_counts() {
    let path = tmpdb("missed");
    let mut s = Store::open(&path).unwrap();
    for (k, n, missed) in [("a", 990, 10), ("b", 1_980, 20)] {
        for round in ["1", "2"] {
            add_run_with(&mut s, 10, n, missed, &[("kernel", k), ("round", round)]);
        }
    }
    drop(s);
    let c = compare(&path, &["kernel=a", "kernel=b"], DEFAULT_STATS, false);
    assert_eq!(c.regressions(), 0);
    // What compare's JSON document (rtscope-present) writes, on the typed comparison.
    let missed = &c.stats[4];
    assert_eq!(missed.stat.name(), "missed");
    assert_eq!(missed.stat.unit(), "ppb");
    let values: serde_json::Map<String, serde_json::Value> = c
        .groups
        .iter()
        .zip(&missed.values)
        .map(|(g, v)| (g.name.clone(), serde_json::json!(v)))
        .collect();
    assert_eq!(
        serde_json::Value::Object(values),
        serde_json::json!({"A": 10_000_000, "B": 10_000_000})
    );
    assert_eq!(missed.changes[0].delta.map(|d| d as i64), Some(0));
    assert_eq!(missed.changes[0].verdict.word(), "same");
    let text = text::render(&c);
    let row = text.lines().find(|l| l.starts_with("missed ")).unwrap();
    let row = row.split_whitespace().collect::<Vec<_>>().join(" ");
    assert_eq!(
        row, "missed 1.00% 1.00% +0.0% same (untested, n=1 per side × 2 strata)",
        "{text}"
    );
    assert!(
        text.contains("missed = missed deadlines in % of all deadlines"),
        "{text}"
    );
}
