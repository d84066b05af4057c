//! The Prometheus text exposition format as node_exporter's textfile collector reads it
//! (`--collector.textfile.directory`; the file name must end in `.prom`).
//!
//! Per CPU (label `cpu`; `t3` for an unpinned thread 3): a histogram
//! `rtscope_latency_seconds` with fixed 1-2-5 log-spaced buckets from 1 µs to 100 ms, so
//! histograms of every board and run add up; and, because buckets this coarse distort the tail,
//! the exact percentiles as the gauge `rtscope_latency_percentile_seconds{percentile="99.99"}`
//! (not a `quantile` label: Prometheus reserves it for summaries, and `promtool check metrics`
//! refuses it on a gauge) beside
//! it, with min, mean, max, missed deadlines and samples. The gauges are also given for
//! `cpu="all"` (all threads; a maximum or percentile cannot be summed from the CPUs').
//! Run-level: end time, time measured, whether it is still going, and the limit verdicts.
//!
//! Labels are `board`, `cpu`, `label` (and `percentile`, `le`, `stat`) only: no run id or start
//! time, so a board's next run replaces its series instead of adding new ones.

use crate::{Report, Scope, ScopeKind};
use rtscope_common::prometheus::{at_or_below, escape, le_label, BUCKETS_NS};
use rtscope_store::RunStatus;
use std::io::{self, Write};

fn secs(ns: u64) -> f64 {
    ns as f64 / 1e9
}

/// Samples at or below `le_ns`: a bucket of the lossless histogram counts by its midpoint
/// (clamped to the exact min and max), the value rtscope reports for it.
fn cumulative(s: &Scope, le_ns: u64) -> u64 {
    at_or_below(&s.histogram, s.stats.min.0, s.stats.max.0, le_ns)
}

struct Writer<'a> {
    out: &'a mut dyn Write,
    board: String,
    label: String,
}

impl Writer<'_> {
    fn family(&mut self, name: &str, kind: &str, help: &str) -> io::Result<()> {
        writeln!(self.out, "# HELP {name} {help}")?;
        writeln!(self.out, "# TYPE {name} {kind}")
    }

    fn sample(&mut self, name: &str, extra: &[(&str, &str)], value: f64) -> io::Result<()> {
        write!(
            self.out,
            "{name}{{board=\"{}\",label=\"{}\"",
            self.board, self.label
        )?;
        for (k, v) in extra {
            write!(self.out, ",{k}=\"{}\"", escape(v))?;
        }
        writeln!(self.out, "}} {value}")
    }
}

/// Writes `r` in the text exposition format.
pub fn write(out: &mut dyn Write, r: &Report) -> io::Result<()> {
    let mut w = Writer {
        out,
        board: escape(&r.board),
        label: escape(&r.label),
    };
    histogram(&mut w, r)?;
    gauges(&mut w, r)?;
    run_level(&mut w, r)
}

fn histogram(w: &mut Writer, r: &Report) -> io::Result<()> {
    let name = "rtscope_latency_seconds";
    w.family(name, "histogram", "Timer wake-up latency, seconds.")?;
    for s in r.scopes.iter().filter(|s| s.kind != ScopeKind::All) {
        let cpu = s.kind.label();
        for le in BUCKETS_NS {
            let le_text = le_label(le);
            w.sample(
                &format!("{name}_bucket"),
                &[("cpu", &cpu), ("le", &le_text)],
                cumulative(s, le) as f64,
            )?;
        }
        let count = s.stats.count as f64;
        w.sample(
            &format!("{name}_bucket"),
            &[("cpu", &cpu), ("le", "+Inf")],
            count,
        )?;
        w.sample(
            &format!("{name}_sum"),
            &[("cpu", &cpu)],
            s.stats.sum_ns as f64 / 1e9,
        )?;
        w.sample(&format!("{name}_count"), &[("cpu", &cpu)], count)?;
    }
    Ok(())
}

/// A quantile as the percentile label shows it: 0.9999 -> `99.99`, 0.5 -> `50`.
fn percent(q: f64) -> String {
    let v = (q * 1e8).round() / 1e6;
    format!("{v}")
}

fn gauges(w: &mut Writer, r: &Report) -> io::Result<()> {
    let name = "rtscope_latency_percentile_seconds";
    w.family(
        name,
        "gauge",
        "Exact latency percentile (nearest rank) of the run, seconds.",
    )?;
    for s in r.scopes.iter().filter(|s| s.stats.count > 0) {
        let cpu = s.kind.label();
        for p in s.exact_percentiles() {
            if let Some(v) = p.value {
                w.sample(
                    name,
                    &[("cpu", &cpu), ("percentile", &percent(p.quantile))],
                    secs(v.0),
                )?;
            }
        }
    }
    type Get = fn(&Scope) -> Option<f64>;
    let per_scope: [(&str, &str, Get); 5] = [
        (
            "rtscope_latency_min_seconds",
            "Smallest latency, seconds.",
            |s| (s.stats.count > 0).then(|| secs(s.stats.min.0)),
        ),
        (
            "rtscope_latency_mean_seconds",
            "Mean latency, seconds.",
            |s| s.stats.mean_ns().map(|m| m / 1e9),
        ),
        (
            "rtscope_latency_max_seconds",
            "Largest latency (exact), seconds.",
            |s| (s.stats.count > 0).then(|| secs(s.stats.max.0)),
        ),
        (
            "rtscope_missed_deadlines",
            "Periods that passed without a wake-up.",
            |s| Some(s.stats.missed as f64),
        ),
        ("rtscope_samples", "Wake-ups measured.", |s| {
            Some(s.stats.count as f64)
        }),
    ];
    for (name, help, get) in per_scope {
        w.family(name, "gauge", help)?;
        for s in &r.scopes {
            if let Some(v) = get(s) {
                w.sample(name, &[("cpu", &s.kind.label())], v)?;
            }
        }
    }
    Ok(())
}

fn run_level(w: &mut Writer, r: &Report) -> io::Result<()> {
    if let Some(t) = r.ended_unix_s {
        let name = "rtscope_run_end_timestamp_seconds";
        w.family(
            name,
            "gauge",
            "End of the run (while it runs: time of this snapshot), seconds since the epoch.",
        )?;
        w.sample(name, &[], t)?;
    }
    let name = "rtscope_run_measured_seconds";
    w.family(name, "gauge", "Time measured, seconds.")?;
    w.sample(name, &[], r.measured_s)?;
    let name = "rtscope_run_in_progress";
    w.family(name, "gauge", "1 while the run is still measuring.")?;
    let running = f64::from(u8::from(r.status == RunStatus::Running));
    w.sample(name, &[], running)?;
    if r.checks.is_empty() {
        return Ok(());
    }
    let name = "rtscope_limit_passed";
    w.family(
        name,
        "gauge",
        "1 when the statistic is within its --limit, 0 when it exceeds it.",
    )?;
    for c in &r.checks {
        let cpu = scope_label(&c.scope);
        let pass = f64::from(u8::from(c.passed));
        w.sample(name, &[("cpu", &cpu), ("stat", &c.stat)], pass)?;
    }
    let name = "rtscope_limits_passed";
    w.family(name, "gauge", "1 when every --limit held, else 0.")?;
    w.sample(name, &[], f64::from(u8::from(r.passed())))
}

/// `cpu 1` → `1`, `thread 3` → `t3`, `all` → `all`.
fn scope_label(scope: &str) -> String {
    if let Some(c) = scope.strip_prefix("cpu ") {
        c.to_string()
    } else if let Some(t) = scope.strip_prefix("thread ") {
        format!("t{t}")
    } else {
        scope.to_string()
    }
}
