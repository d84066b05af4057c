//! The Grafana dashboard of watch's own series (docs/grafana-rtscope-watch.json): every metric
//! it queries is one the watch serves, buckets are drawn as per-bucket counts, the `cpu="all"`
//! series are never summed with the per-CPU ones, it uses the data source chosen at import;
//! Grafana's own dashboard schema (npm's `@grafana/schema`, checked by `tsc`, installed by
//! .ci/run in `$RTSCOPE_NODE`) accepts it and it breaks no rule of Grafana's dashboard linter
//! (rtscope_testkit::grafana). Its queries against a real Prometheus scraping a real watch:
//! crates/rtscope/tests/watch_dashboard.rs.

use rtscope_core::{Histogram, Nanos};
use rtscope_store::watch::{Level, WatchWindow};
use rtscope_testkit::grafana;
use rtscope_watch::cause::Cause;
use rtscope_watch::metrics::{Exposition, Format};
use serde_json::Value;
use std::path::Path;

const DASHBOARD: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../docs/grafana-rtscope-watch.json"
);

fn dashboard() -> Value {
    serde_json::from_str(&std::fs::read_to_string(DASHBOARD).unwrap()).unwrap()
}

/// Every target's query, with its panel.
fn targets(d: &Value) -> Vec<(Value, String)> {
    let mut out = Vec::new();
    for p in d["panels"].as_array().unwrap() {
        for t in p["targets"].as_array().unwrap() {
            out.push((p.clone(), t["expr"].as_str().unwrap().to_string()));
        }
    }
    out
}

/// The metric names of a page a watch of two CPUs serves, with a cause.
fn served() -> String {
    let row = |cpu: Option<u32>| {
        let mut h = Histogram::new();
        [3_000, 150_000].iter().for_each(|&v| h.record(Nanos(v)));
        WatchWindow {
            level: Level::Window,
            start_ns: 60_000_000_000,
            end_ns: 120_000_000_000,
            cpu,
            spikes: 1,
            histogram: h,
            missed: 0,
            alert: None,
            explain: None,
        }
    };
    let mut e = Exposition::new("s");
    e.add(&[row(Some(0)), row(Some(1)), row(None)], &[153_000; 3]);
    e.set_causes(&[Cause {
        name: "thread culprit".into(),
        pids: vec![4711],
        more_pids: 0,
        time: Nanos(90_000),
    }]);
    e.render(Format::Text)
}

#[test]
fn every_metric_the_dashboard_queries_is_one_the_watch_serves() {
    let page = served();
    let d = dashboard();
    let all = targets(&d);
    assert!(all.len() >= 10, "{}", all.len());
    for (_, expr) in &all {
        let mut rest = expr.as_str();
        while let Some(i) = rest.find("rtscope_watch_") {
            let name: String = rest[i..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            assert!(
                page.lines().any(|l| l.starts_with(&format!("{name}{{"))),
                "`{name}` of `{expr}` is not served"
            );
            rest = &rest[i + name.len()..];
        }
    }
}

#[test]
fn buckets_are_drawn_as_counts_and_all_cpus_are_never_summed_with_each_cpu() {
    let d = dashboard();
    for input in d["__inputs"].as_array().unwrap() {
        let name = input["name"].as_str().unwrap();
        let text = d.to_string();
        assert!(
            text.contains(&format!("${{{name}}}")),
            "input {name} unused"
        );
    }
    for (p, expr) in targets(&d) {
        assert!(!expr.contains("quantile"), "{expr}");
        if expr.contains("_bucket") {
            assert_eq!(p["type"], "heatmap", "{expr}");
            assert_eq!(p["targets"][0]["format"], "heatmap", "{expr}");
            assert_eq!(p["options"]["calculate"], false);
        }
        // The cpu="all" series already hold every CPU: a sum over cpu must leave them out.
        if expr.starts_with("sum") {
            assert!(expr.contains("cpu!=\"all\""), "{expr}");
        }
        // Counters change once per window: a rate() spans many windows (docs/watch.md).
        if expr.contains("rate(") {
            assert_eq!(p["interval"], "10m", "{expr}");
        }
    }
}

#[test]
fn the_dashboard_passes_grafanas_own_schema() {
    rtscope_testkit::grafana::assert_schema_accepts(Path::new(DASHBOARD));
}

#[test]
fn the_dashboard_breaks_no_rule_of_grafanas_dashboard_linter() {
    let found = grafana::lint(&dashboard());
    assert!(found.is_empty(), "{}", found.join("\n"));
}
