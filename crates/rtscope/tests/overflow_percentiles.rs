//! Percentiles of an imported cyclictest histogram with overflows (samples at or above its
//! `-h` limit, counted but without a value): ranked over ALL samples, and where the rank falls
//! among the overflows only a lower bound is shown — `≥400.0` in `runs show`, the report's
//! tables and warnings, `null` plus `percentiles_lower_bound_ns` in JSON, null in exports.
//! Expected values are computed here, independently, from the reference capture.

use crate::common;

use serde_json::Value;
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/import")
        .join(name)
}

fn rtscope(args: &[&str]) -> String {
    let o = common::run(env!("CARGO_BIN_EXE_rtscope"), args);
    assert_eq!(o.status.code(), Some(0), "{}", common::dump(&o));
    String::from_utf8(o.stdout).unwrap()
}

/// Thread `t`'s bucket rows (µs, count) and overflow count, read from the histogram text.
fn rows_of(text: &str, t: usize) -> (Vec<(u64, u64)>, u64) {
    let rows = text
        .lines()
        .filter(|l| l.starts_with(|c: char| c.is_ascii_digit()))
        .map(|l| {
            let v: Vec<u64> = l.split_whitespace().map(|x| x.parse().unwrap()).collect();
            (v[0], v[1 + t])
        })
        .collect();
    let over = text
        .lines()
        .find_map(|l| l.strip_prefix("# Histogram Overflows:"))
        .unwrap()
        .split_whitespace()
        .nth(t)
        .unwrap()
        .parse()
        .unwrap();
    (rows, over)
}

/// The nearest-rank value (µs) at quantile `q` over all samples; `None` when it is an overflow.
fn rank_value(rows: &[(u64, u64)], over: u64, q: f64) -> Option<u64> {
    let total: u64 = rows.iter().map(|r| r.1).sum::<u64>() + over;
    let rank = ((q * total as f64).ceil() as u64).max(1);
    let mut seen = 0;
    rows.iter().find_map(|&(us, n)| {
        seen += n;
        (seen >= rank).then_some(us)
    })
}

/// Within the histogram's bucket width (0.1 %) of `us` µs.
fn near(ns: &Value, us: u64) -> bool {
    ns.as_u64()
        .is_some_and(|v| v.abs_diff(us * 1000) * 1000 <= us * 1000)
}

#[test]
fn percentiles_rank_over_every_sample_and_overflowed_ranks_are_lower_bounds() {
    let file = fixture("hist-h400.txt");
    let text = std::fs::read_to_string(&file).unwrap();
    let (rows, over) = rows_of(&text, 0);
    assert_eq!(over, 6);
    // The figures: p99.9 of thread 0 is 268 µs by rank over all 20,000 samples (217
    // over the 19,994 kept ones); p99.99 falls among the overflows.
    assert_eq!(rank_value(&rows, over, 0.999), Some(268));
    assert_eq!(rank_value(&rows, over, 0.9999), None);

    let dir = common::fresh_dir("overflow-percentiles");
    let db = dir.join("o.db");
    let db = db.to_str().unwrap();
    rtscope(&["import", "--db", db, file.to_str().unwrap()]);
    let run = common::show_last(Path::new(db));
    let t0 = &run["thread_stats"][0];
    assert!(near(&t0["percentiles_ns"]["p99.9"], 268), "{t0}");
    assert!(near(
        &t0["percentiles_ns"]["p99"],
        rank_value(&rows, over, 0.99).unwrap()
    ));
    for p in ["p99.99", "p99.999", "p99.9999"] {
        assert_eq!(
            t0["percentiles_ns"][p],
            Value::Null,
            "{p}: no fake exact value"
        );
        assert_eq!(t0["percentiles_lower_bound_ns"][p], 400_000, "{p}");
    }
    assert!(t0["percentiles_lower_bound_ns"].get("p99.9").is_none());
    // All threads: 25 overflows in 39,982 samples; p99.9 = 368 µs.
    assert!(near(&run["percentiles_ns"]["p99.9"], 368), "{run}");
    assert_eq!(run["percentiles_lower_bound_ns"]["p99.99"], 400_000);

    let table = rtscope(&["runs", "--db", db, "show", "last"]);
    let line = table.lines().find(|l| l.starts_with("0 ")).unwrap();
    assert!(line.contains("267.9") || line.contains("268.0"), "{table}");
    assert!(line.contains("≥400.0"), "{table}");
    assert!(table.contains("≥ lower bound"), "{table}");
    let list = rtscope(&["runs", "--db", db]);
    assert!(list.contains("≥400.0"), "p99.99 in the run list: {list}");

    let out = dir.join("report");
    rtscope(&["report", "--db", db, "--last", "-o", out.to_str().unwrap()]);
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(md.contains("≥400.0"), "{md}");
    let csv = std::fs::read_to_string(out.join("summary.csv")).unwrap();
    assert!(csv.contains(",>=400.000,"), "{csv}");
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(
        html.contains("source histogram was too short"),
        "warning missing"
    );
    assert!(html.contains("11.3× the limit"), "by how much");
    assert!(html.contains("from p99.99 up are lower bounds"));
    let svg = std::fs::read_to_string(out.join("histogram.svg")).unwrap();
    assert!(
        svg.contains("6 overflows ≥400 µs"),
        "the overflow bar is labelled"
    );
}
