//! The human summary of `rtscope measure`: one row per thread and one for all threads.

use super::limits::Check;
use rtscope_core::{Histogram, Nanos, Stats, PERCENTILES};
use std::fmt::Write;

/// One row of the table.
pub struct Row<'a> {
    /// `0`, `1` … or `all`.
    pub label: String,
    /// CPU (`-` when not pinned or for `all`).
    pub cpu: String,
    /// Statistics.
    pub stats: &'a Stats,
    /// Histogram.
    pub hist: &'a Histogram,
    /// Offset of the max from the start of the run.
    pub max_at: Option<Nanos>,
}

fn us(v: Nanos) -> String {
    format!("{:.1}", v.as_us_f64())
}

/// Renders the table. Percentiles resting on fewer than 10 samples beyond them get a `*`.
pub fn render(rows: &[Row]) -> String {
    let mut head: Vec<String> = ["thread", "cpu", "samples", "min", "mean"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    head.extend(PERCENTILES.iter().map(|(l, _)| l.to_string()));
    head.extend(["max", "max at", "missed"].iter().map(|s| s.to_string()));
    let mut cells: Vec<Vec<String>> = vec![head];
    let mut starred = false;
    for r in rows {
        let mut c = vec![r.label.clone(), r.cpu.clone(), r.stats.count.to_string()];
        let has = r.stats.count > 0;
        c.push(if has { us(r.stats.min) } else { "-".into() });
        c.push(
            r.stats
                .mean_ns()
                .map_or("-".into(), |m| format!("{:.1}", m / 1000.0)),
        );
        for p in r.hist.percentiles() {
            let star = if p.is_supported() { "" } else { "*" };
            starred |= !p.is_supported() && p.value.is_some();
            c.push(p.value.map_or("-".into(), |v| format!("{}{star}", us(v))));
        }
        c.push(if has { us(r.stats.max) } else { "-".into() });
        c.push(
            r.max_at
                .map_or("-".into(), |t| format!("{:.3}s", t.as_secs_f64())),
        );
        c.push(r.stats.missed.to_string());
        cells.push(c);
    }
    let mut s = columns(&cells, 2);
    s.push_str("latencies in us; max at = seconds into the run; missed = deadlines passed without a wake-up\n");
    if starred {
        s.push_str("* fewer than 10 samples lie beyond this percentile: measure longer for a meaningful value\n");
    }
    s
}

/// Renders limit results: one line per check, failures first.
pub fn render_checks(checks: &[Check]) -> String {
    let mut s = String::new();
    let fmt = |c: &Check, v: u64| {
        if c.stat == "missed" {
            v.to_string()
        } else {
            Nanos(v).to_string()
        }
    };
    for c in checks
        .iter()
        .filter(|c| !c.passed)
        .chain(checks.iter().filter(|c| c.passed))
    {
        let verdict = if c.passed { "pass" } else { "FAIL" };
        let op = if c.passed { "<=" } else { ">" };
        let _ = writeln!(
            s,
            "limit {verdict}: {} on {} = {} {op} {}",
            c.stat,
            c.scope,
            fmt(c, c.value),
            fmt(c, c.limit)
        );
    }
    s
}

/// A count or rate for people: `5.13M`, `26.5k`, `812`, `9.7`.
pub fn count(v: f64) -> String {
    match v.abs() {
        x if x >= 1e9 => format!("{:.2}G", v / 1e9),
        x if x >= 1e6 => format!("{:.2}M", v / 1e6),
        x if x >= 1e4 => format!("{:.1}k", v / 1e3),
        x if x.fract() == 0.0 => format!("{v:.0}"),
        _ => format!("{v:.1}"),
    }
}

/// Lays out rows of cells as aligned columns under a rule: the first row is the header; columns
/// before `right_from` are left-aligned, the others right-aligned (numbers).
pub fn columns(cells: &[Vec<String>], right_from: usize) -> String {
    let n = cells.first().map_or(0, |r| r.len());
    let widths: Vec<usize> = (0..n)
        .map(|i| {
            cells
                .iter()
                .map(|r| r.get(i).map_or(0, |c| c.chars().count()))
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut s = String::new();
    for (row_no, row) in cells.iter().enumerate() {
        let line: Vec<String> = row
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(i, (c, w))| {
                if i < right_from {
                    format!("{c:<w$}")
                } else {
                    format!("{c:>w$}")
                }
            })
            .collect();
        let _ = writeln!(s, "{}", line.join("  ").trim_end());
        if row_no == 0 {
            let _ = writeln!(
                s,
                "{}",
                "-".repeat(widths.iter().sum::<usize>() + 2 * n.saturating_sub(1))
            );
        }
    }
    s
}
