//! The answer a noise run gives, first on the page, and its worst gaps with their causes: per
//! run, the total noise and the share available, the longest gap with the parts it is made of
//! (its largest causes, the others together, its unexplained rest: shares that sum to 100 %,
//! [`rtscope_explain::parts`]), the culprits over the traced gap time, and each CPU's figures.
//! A run recorded without `--explain` says its gaps were not explained, never a cause.
//! Every text from a run (names, task names) is escaped.

use super::{pct, CpuNoise};
use crate::escape::escape;
use crate::model::RunData;
use crate::units::latency;
use rtscope_explain::book::{ExplainSummary, Explained};
use rtscope_explain::cause::CauseLine;
use rtscope_explain::model::Attribution;
use rtscope_explain::parts::{parts, PartKind};
use rtscope_explain::render::culprit_label;
use rtscope_explain::words::label;
use std::fmt::Write;

/// Worst gaps listed per run.
pub const MAX_GAPS: usize = 10;
/// Culprits named per run in the answer (the table under the worst gaps has more).
const ANSWER_CULPRITS: usize = 3;
/// Culprit rows per run under the worst gaps.
const TABLE_CULPRITS: usize = 15;

/// A traced gap's parts as text: `thread cc1:4101:nice0 7.88 ms (8 %), …, + 107 other causes
/// 84.3 ms (82 %), unexplained rest 1.20 ms (1 %)`, unescaped.
pub fn gap_parts(a: &Attribution) -> String {
    let list: Vec<String> = parts(a, true)
        .iter()
        .map(|p| {
            let name = match &p.kind {
                PartKind::Cause(c) => label(c),
                PartKind::Others(n) => format!("+ {n} other causes"),
                PartKind::Rest => "unexplained rest".to_string(),
            };
            format!("{name} {} ({} %)", latency(p.ns), p.percent)
        })
        .collect();
    list.join(", ")
}

/// The traced gap time of a summary: what its culprits and unexplained rests share.
fn traced_ns(s: &ExplainSummary) -> u64 {
    match s.counts.traced_ns {
        0 => s.class_totals().total_ns(),
        ns => ns,
    }
}

/// Who took the traced gap time: the culprit when one holds at least half of it, else the
/// largest few with their shares (`spread over 111 culprits: …`); `None` without culprits.
pub fn culprits_phrase(s: &ExplainSummary) -> Option<String> {
    let total = traced_ns(s).max(1);
    let first = s.culprits.first()?;
    let share = |ns: u64| ns * 100 / total;
    let named = |rows: &[rtscope_explain::culprits::CulpritRow]| -> Vec<String> {
        rows.iter()
            .map(|r| format!("{} {} %", culprit_label(r), share(r.total_ns)))
            .collect()
    };
    if first.total_ns * 2 >= total {
        return Some(format!(
            "{} took {} % of the traced gap time ({})",
            culprit_label(first),
            share(first.total_ns),
            latency(traced_ns(s))
        ));
    }
    let n = s.culprits.len();
    let top = &s.culprits[..n.min(ANSWER_CULPRITS)];
    let more = if n > top.len() {
        format!(" and {} more", n - top.len())
    } else {
        String::new()
    };
    Some(format!(
        "no culprit took half of the traced gap time ({}): spread over {n} culprits, {}{more}",
        latency(traced_ns(s)),
        named(top).join(", ")
    ))
}

/// The longest gap of a run as sentences: for a traced one, its cause by the cause rule
/// ([`rtscope_explain::cause`]: a culprit only with half of the gap, else the group or the
/// spread with every share), then its parts that add up to it.
fn longest_gap(r: &RunData, cpus: &[CpuNoise]) -> Vec<String> {
    let traced = r.explain.as_ref().and_then(|(s, start)| {
        let worst = s.worst.iter().max_by_key(|e| e.latency_ns())?;
        let at = worst.wakeup_ns().saturating_sub(*start) as f64 / 1e9;
        Some(match worst {
            Explained::Traced(a) => {
                let subject = format!(
                    "the longest traced gap ({} on CPU {} at {at:.3} s)",
                    latency(a.spike.latency_ns()),
                    a.spike.cpu
                );
                let cause = match CauseLine::of(a) {
                    Some(c) => c.sentence(&subject),
                    None => subject,
                };
                vec![cause, format!("its parts: {}", gap_parts(a))]
            }
            Explained::Coarse(x) => vec![format!(
                "the longest gap explained, {} on CPU {} at {at:.3} s, from the monitors only",
                latency(x.spike.latency_ns()),
                x.spike.cpu
            )],
        })
    });
    traced.unwrap_or_else(|| {
        let Some((c, max)) = cpus
            .iter()
            .filter_map(|c| Some((c, c.max_single_ns?)))
            .max_by_key(|(_, m)| *m)
        else {
            return Vec::new();
        };
        let why = if r.explain.is_some() {
            "no gap was traced"
        } else {
            "not explained (the run stored no explanation: recorded without --explain, or imported)"
        };
        vec![format!(
            "the longest gap, {} on {}: {why}",
            latency(max),
            c.cpu_name()
        )]
    })
}

/// The hint a run below a real-time policy needs (its stored `config_json.policy`).
fn policy_note(r: &RunData) -> Option<String> {
    let v: serde_json::Value = serde_json::from_str(&r.detail.config_json).ok()?;
    let p = v["policy"].as_str()?;
    matches!(p, "other" | "batch" | "idle").then(|| {
        format!(
            "the loops ran at SCHED_{}: every normal thread on their CPUs took turns with them \
             and counts as noise (--policy fifo -p 95 counts only what can preempt a real-time \
             thread)",
            p.to_uppercase()
        )
    })
}

/// One CPU's figures: `CPU 0: 412 µs of noise, 99.9993 % available, longest gap 23.1 µs, 12
/// gaps over the threshold`.
fn cpu_line(c: &CpuNoise) -> String {
    let opt = |v: Option<u64>| v.map_or("unknown".into(), latency);
    let mut l = format!(
        "{}: {} of noise, {} % available, longest gap {}",
        c.cpu_name(),
        opt(c.noise_ns),
        c.available_percent().map_or("unknown".into(), pct),
        opt(c.max_single_ns)
    );
    if let Some(n) = c.gaps_over {
        let _ = write!(l, ", {n} gaps over the threshold");
    }
    l
}

/// A run's answer: its headline, then the lines under it (longest gap, culprits, policy, CPUs),
/// unescaped.
pub fn answer_of(r: &RunData) -> (String, Vec<String>) {
    let cpus = CpuNoise::of_run(r);
    let noise: Option<u64> = cpus.iter().map(|c| c.noise_ns).sum();
    let runtime: Option<u64> = cpus.iter().map(|c| c.runtime_ns).sum();
    let mut head = match noise {
        Some(ns) => format!("{} of noise", latency(ns)),
        None => "noise unknown (the run has no threshold)".to_string(),
    };
    if let Some(rt) = runtime {
        let n = cpus.len();
        let cpu_s = if n == 1 { "CPU" } else { "CPUs" };
        let _ = write!(head, " in {} spun on {n} {cpu_s}", latency(rt));
    }
    if let Some(a) = noise
        .zip(runtime)
        .and_then(|(n, rt)| super::available(rt, n))
    {
        let _ = write!(head, ", {} % available", pct(a));
    }
    let mut lines = longest_gap(r, &cpus);
    if let Some(p) = r.explain.as_ref().and_then(|(s, _)| culprits_phrase(s)) {
        lines.push(p);
    }
    lines.extend(policy_note(r));
    if cpus.len() > 1 {
        lines.extend(cpus.iter().map(cpu_line));
    }
    (head, lines)
}

/// The answer box of the noise runs, with `id` (`answer` on a page of noise runs alone).
pub fn section(h: &mut String, runs: &[RunData], id: &str) {
    if runs.is_empty() {
        return;
    }
    let title = if id == "answer" {
        "The answer"
    } else {
        "The answer: OS noise"
    };
    let _ = writeln!(
        h,
        "<div class=\"answer\" id=\"{id}\"><h2>{title}</h2>\n<ul>"
    );
    for r in runs {
        let (head, lines) = answer_of(r);
        // A run without a label is named `run N` already.
        let name = match r.name() {
            n if n == format!("run {}", r.id()) => n,
            n => format!("{n} (run {})", r.id()),
        };
        let _ = write!(h, "<li><b>{}</b>: {}", escape(&name), escape(&head));
        if !lines.is_empty() {
            h.push_str("<ul>");
            for l in &lines {
                let _ = write!(h, "<li>{}</li>", escape(l));
            }
            h.push_str("</ul>");
        }
        h.push_str("</li>\n");
    }
    h.push_str(
        "</ul>\n<p class=\"muted\">Noise = the busy loop's gaps over its threshold; a gap's \
         parts add up to the gap (its largest causes, the other causes together, and the \
         unexplained rest no trace event covers). <a href=\"#noise-gaps\">Worst gaps</a> · \
         <a href=\"#noise\">per CPU</a>.</p></div>\n",
    );
}

/// The worst gaps of each run with their causes, and the culprits over the run.
pub fn worst_gaps(h: &mut String, runs: &[RunData]) {
    h.push_str("<h3 id=\"noise-gaps\">Worst gaps and their causes</h3>\n");
    for r in runs {
        let Some((s, start)) = &r.explain else {
            let _ = writeln!(
                h,
                "<p class=\"muted\">Run {}: its gaps were not explained (the run stored no \
                 explanation: recorded without <code>--explain</code>, or imported).</p>",
                r.id()
            );
            continue;
        };
        let _ = writeln!(
            h,
            "<p>Run {} — {}.</p>",
            r.id(),
            escape(&rtscope_explain::render::coverage_of(
                &s.counts,
                rtscope_explain::render::Subject::Gaps
            ))
        );
        gap_table(h, s, *start);
        culprit_table(h, s);
    }
}

/// The longest gaps of a run, each with its parts.
fn gap_table(h: &mut String, s: &ExplainSummary, start: u64) {
    let mut worst: Vec<&Explained> = s.worst.iter().collect();
    if worst.is_empty() {
        h.push_str("<p class=\"muted\">No gap was traced.</p>\n");
        return;
    }
    worst.sort_by_key(|e| std::cmp::Reverse(e.latency_ns()));
    h.push_str("<table><tr><th>at (s)</th><th>CPU</th><th>gap</th><th class=\"t\">causes (share of the gap; they add up to it)</th></tr>\n");
    for e in worst.into_iter().take(MAX_GAPS) {
        let at = e.wakeup_ns().saturating_sub(start) as f64 / 1e9;
        let (cpu, causes) = match e {
            Explained::Traced(a) => (a.spike.cpu, gap_parts(a)),
            Explained::Coarse(x) => (x.spike.cpu, "from the monitors only".to_string()),
        };
        let _ = writeln!(
            h,
            "<tr><td>{at:.3}</td><td>{cpu}</td><td>{}</td><td class=\"t\">{}</td></tr>",
            latency(e.latency_ns()),
            escape(&causes)
        );
    }
    h.push_str("</table>\n");
}

/// The culprits over a run's traced gap time, with their shares.
fn culprit_table(h: &mut String, s: &ExplainSummary) {
    if s.culprits.is_empty() {
        return;
    }
    let total = traced_ns(s).max(1);
    h.push_str("<table><tr><th class=\"t\">culprit over the run</th><th>gaps (main)</th><th>gaps (any)</th><th>total time</th><th>share of the traced gap time</th></tr>\n");
    for row in s.culprits.iter().take(TABLE_CULPRITS) {
        let _ = writeln!(
            h,
            "<tr><td class=\"t\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{} %</td></tr>",
            escape(&culprit_label(row)),
            row.spikes_as_main,
            row.spikes,
            latency(row.total_ns),
            row.total_ns * 100 / total
        );
    }
    h.push_str("</table>\n");
    if s.culprits.len() > TABLE_CULPRITS {
        let rest = &s.culprits[TABLE_CULPRITS..];
        let ns: u64 = rest.iter().map(|r| r.total_ns).sum();
        let _ = writeln!(
            h,
            "<p class=\"muted\">… {} more culprits, {} in all.</p>",
            rest.len(),
            latency(ns)
        );
    }
}
