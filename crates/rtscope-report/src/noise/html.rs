//! The noise section of `report.html` and of `summary.md`: `rtla osnoise top`'s columns per
//! run and CPU, the time per cause, the worst gaps with their causes ([`super::answer`]), and
//! the section's figures.

use super::{pct, CpuNoise, NOT_EXPLAINED};
use crate::figures::{NamedFigure, Section};
use crate::model::RunData;
use std::fmt::Write;

/// The columns of the per-CPU table (`rtla osnoise top`'s, the threshold, rtla's
/// interference counts, and what the run read below the kernel: steal time and SMIs).
pub const COLUMNS: [&str; 18] = [
    "run",
    "name",
    "CPU",
    "runtime (s)",
    "noise (µs)",
    "available (%)",
    "max single (µs)",
    "gaps > threshold",
    "iterations/s",
    "resolution (ns)",
    "threshold (ns)",
    "HW",
    "NMI",
    "IRQ",
    "softirq",
    "thread",
    "steal (µs)",
    "SMI",
];

/// One row of the per-CPU table, as text (`-` where unknown).
pub fn cells(r: &RunData, c: &CpuNoise) -> [String; 18] {
    let opt = |v: Option<u64>| v.map_or("-".into(), |v| v.to_string());
    [
        r.id().to_string(),
        r.name(),
        c.cpu_name(),
        c.runtime_ns
            .map_or("-".into(), |v| format!("{:.3}", v as f64 / 1e9)),
        crate::table::us1(c.noise_ns),
        c.available_percent().map_or("-".into(), pct),
        crate::table::us1(c.max_single_ns),
        opt(c.gaps_over),
        c.iterations_per_s()
            .map_or("-".into(), rtscope_core::text::count),
        opt(c.resolution_ns),
        opt(c.threshold_ns),
        opt(c.counts[0]),
        opt(c.counts[1]),
        opt(c.counts[2]),
        opt(c.counts[3]),
        opt(c.counts[4]),
        crate::table::us1(c.steal_ns),
        opt(c.smis),
    ]
}

/// One row's cells as HTML (the name left-aligned, every text escaped).
pub fn row(cells: &[String; 18]) -> String {
    let mut h = String::new();
    for (i, v) in cells.iter().enumerate() {
        let class = if i == 1 { " class=\"t\"" } else { "" };
        let _ = write!(h, "<td{class}>{}</td>", crate::escape::escape(v));
    }
    h
}

/// Every row of the per-CPU table: runs, then CPUs.
fn rows(runs: &[RunData]) -> Vec<[String; 18]> {
    let each = |r| CpuNoise::of_run(r).into_iter().map(move |c| cells(r, &c));
    runs.iter().flat_map(each).collect()
}

/// The noise section: the per-CPU table, the time per cause, the worst gaps and the figures.
pub fn section(h: &mut String, runs: &[RunData], figs: &[(&NamedFigure, &str)]) {
    if runs.is_empty() {
        return;
    }
    h.push_str("<h2 id=\"noise\">OS noise per CPU</h2>\n<table><tr>");
    for (i, c) in COLUMNS.iter().enumerate() {
        let class = if i == 1 { " class=\"t\"" } else { "" };
        let _ = write!(h, "<th{class}>{c}</th>");
    }
    h.push_str("</tr>\n");
    for r in rows(runs) {
        let _ = writeln!(h, "<tr>{}</tr>", row(&r));
    }
    h.push_str("</table>\n<p class=\"muted\">Busy-loop gaps, not wake-ups. Noise is from the gap histogram and the run's threshold (an oslat import has none: -); an rtla import's figures are rtla's (an osnoise hist import's gaps are its noises over the threshold). HW, NMI, IRQ, softirq, thread: counts of interference, not times — rtla osnoise top's for an rtla import, the traced gaps' culprits for a run of rtscope noise --explain (every interrupt entry, softirq, NMI and thread run, as osnoise counts; runs recorded before 26 Nov 2026 count a gap once per distinct culprit; HW: a gap with no kernel context); - where the run did not count them. Steal (the hypervisor's, /proc/stat in 10 ms ticks) and SMI (MSR 0x34) over the run as rtscope noise read them; - where the run did not read them (imports, runs recorded before they were stored, no SMI counter on the CPU).</p>\n");
    causes(h, runs);
    super::answer::worst_gaps(h, runs);
    crate::markup::figures(h, figs, Section::Noise);
}

/// The time per cause of each run, µs: `--explain`'s classes, or "not explained".
fn causes(h: &mut String, runs: &[RunData]) {
    h.push_str("<h3>Noise time per cause (µs)</h3>\n<table><tr><th>run</th>");
    for c in rtscope_explain::classes::Class::ALL {
        let _ = write!(h, "<th>{}</th>", c.name());
    }
    let _ = writeln!(h, "<th>{NOT_EXPLAINED}</th></tr>");
    for r in runs {
        let _ = write!(h, "<tr><td>{}</td>", r.id());
        let parts = super::causes(r, &CpuNoise::of_run(r));
        // The classes, then "not explained"; a run has one or the other.
        let slots = rtscope_explain::classes::Class::ALL.map(super::slot);
        for slot in slots.into_iter().chain([super::NOT_EXPLAINED_COLOUR]) {
            let cell = parts.iter().find(|p| p.1 == slot);
            let _ = write!(
                h,
                "<td>{}</td>",
                cell.map_or("-".into(), |p| crate::us(p.2))
            );
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</table>\n");
}

/// The per-CPU table in Markdown, for `summary.md`.
pub fn markdown(runs: &[RunData]) -> String {
    let mut md = String::from("\n## OS noise per CPU\n\n");
    let _ = writeln!(md, "| {} |", COLUMNS.join(" | "));
    let _ = writeln!(md, "|{}", "---|".repeat(COLUMNS.len()));
    for row in rows(runs) {
        let _ = writeln!(md, "| {} |", row.join(" | "));
    }
    md
}
