//! "Why were the worst wake-ups late?": for runs recorded with `--explain`, one stacked bar per
//! worst spike (every nanosecond of its latency by category, docs/explain.md) and the table of
//! culprits over the run. Spike times link to the over-time plots.

use crate::escape::escape;
use crate::model::RunData;
use rtscope_explain::book::{ExplainSummary, Explained};
use rtscope_explain::coarse::CoarseExplanation;
use rtscope_explain::culprits::CulpritRow;
use rtscope_explain::model::{Attribution, Category, LateCause};
use rtscope_explain::render::{coverage, culprit_label, merge_note};
use rtscope_explain::words::{dur, label};
use std::fmt::Write;

/// Spikes drawn per run.
const MAX_BARS: usize = 12;

/// The colour of a category family.
fn colour(c: &Category) -> &'static str {
    match c {
        Category::TimerIrqLate {
            cause: LateCause::ExitFromIdle,
        } => "#8fbc8f",
        Category::TimerIrqLate {
            cause: LateCause::PreviousIrq { .. },
        } => "#d2691e",
        Category::TimerIrqLate {
            cause: LateCause::IrqsOffOrHypervisor { .. },
        } => "#a9a9a9",
        Category::TimerIrqHandler => "#1f77b4",
        Category::Irq { .. } => "#ff7f0e",
        Category::Softirq { .. } => "#bcbd22",
        Category::Nmi => "#9467bd",
        Category::Thread { .. } => "#d62728",
        Category::Blocking { .. } => "#e377c2",
        Category::ReturnToUser => "#17becf",
        Category::MeasuringThreadBlocked => "#8c564b",
        Category::RtThrottling => "#6b4c9a",
        Category::Hypervisor => "#708090",
        Category::Firmware => "#b8860b",
        Category::Unexplained => "#dddddd",
    }
}

/// The section (always present, so the navigation link has a target).
pub fn section(h: &mut String, runs: &[RunData]) {
    h.push_str("<h2 id=\"why\">Why were the worst wake-ups late?</h2>\n");
    let explained: Vec<(&RunData, &ExplainSummary, u64)> = runs
        .iter()
        .filter_map(|r| r.explain.as_ref().map(|(s, start)| (r, s, *start)))
        .collect();
    off_note(h, runs);
    if explained.is_empty() {
        h.push_str("<p class=\"muted\">No run was recorded with <code>--explain</code>.</p>\n");
        return;
    }
    for (r, s, start) in explained {
        run_section(h, r, s, start);
    }
}

/// The runs whose explanation was on by default but could not run here, with the reason and
/// the fix each recorded (`rtscope.explain` in the environment): never a silent "no run".
fn off_note(h: &mut String, runs: &[RunData]) {
    let mut reasons: Vec<(&str, Vec<String>)> = Vec::new();
    for r in runs {
        let env = &r.detail.environment;
        let Some((_, v)) = env.iter().find(|(k, _)| k == "rtscope.explain") else {
            continue;
        };
        let Some(why) = v.strip_prefix("off: ") else {
            continue;
        };
        let label = match &r.detail.summary.label {
            Some(l) => format!("run {} ({l})", r.detail.summary.id),
            None => format!("run {}", r.detail.summary.id),
        };
        match reasons.iter_mut().find(|(w, _)| *w == why) {
            Some((_, l)) => l.push(label),
            None => reasons.push((why, vec![label])),
        }
    }
    for (why, labels) in reasons {
        let _ = writeln!(
            h,
            "<p class=\"warn\">Explaining was off for {} run(s) ({}): {}</p>",
            labels.len(),
            escape(&labels.join(", ")),
            escape(why)
        );
    }
}

fn run_section(h: &mut String, r: &RunData, s: &ExplainSummary, start: u64) {
    let c = &s.counts;
    let _ = write!(
        h,
        "<h3>Run {} — tier {}, threshold {}</h3>\n<p>{} spikes at or above the threshold: {} traced ({} partial), {} from the monitors only, {} without context.",
        r.detail.summary.id,
        s.tier.name(),
        escape(&dur(s.threshold_ns)),
        c.spikes,
        c.traced,
        c.partial,
        c.coarse,
        c.no_context
    );
    if let Some(why) = &s.tier_reason {
        let _ = write!(h, " <span class=\"muted\">({})</span>", escape(why));
    }
    if let Some(cost) = r.recorder_cost() {
        let _ = write!(h, " <span class=\"muted\">Its {}.</span>", escape(&cost));
    }
    let _ = writeln!(h, "<br>{}.</p>", escape(&coverage(c)));
    let mut worst: Vec<&Explained> = s.worst.iter().collect();
    worst.sort_by_key(|e| std::cmp::Reverse(e.latency_ns()));
    let stacks = crate::stacks::any(s);
    let stack_th = if stacks {
        "<th class=\"t\">where in the kernel (handler, or stack: first frames)</th>"
    } else {
        ""
    };
    let _ = writeln!(h, "<table><tr><th>at (s)</th><th>CPU</th><th>latency</th><th class=\"t\">where the time went</th><th class=\"t\">cause</th>{stack_th}</tr>");
    for e in worst.into_iter().take(MAX_BARS) {
        let at = e.wakeup_ns().saturating_sub(start) as f64 / 1e9;
        let _ = write!(h, "<tr><td><a href=\"#latency\">{at:.3}</a></td>");
        match e {
            Explained::Traced(a) => traced_cells(h, a),
            Explained::Coarse(x) => coarse_cells(h, x),
        }
        if stacks {
            let _ = write!(
                h,
                "<td class=\"t\"><code>{}</code></td>",
                escape(&crate::stacks::cell(e))
            );
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</table>\n");
    legend(h, s);
    culprit_table(h, &s.culprits);
    crate::stacks::section(h, s);
}

/// A traced spike's cells: its CPU, latency, the bar of where its time went, and its cause
/// line (a culprit only with half of the spike).
fn traced_cells(h: &mut String, a: &Attribution) {
    let lat = a.spike.latency_ns().max(1);
    let _ = write!(h, "<td>{}</td><td>{}</td><td class=\"t\"><div style=\"display:flex;width:320px;height:14px\">", a.spike.cpu, escape(&dur(lat)));
    for ch in &a.charges {
        let pct = ch.ns as f64 * 100.0 / lat as f64;
        let _ = write!(
            h,
            "<div title=\"{} {}\" style=\"width:{pct:.2}%;background:{}\"></div>",
            escape(&label(&ch.category)),
            escape(&dur(ch.ns)),
            colour(&ch.category)
        );
    }
    let main = rtscope_explain::cause::CauseLine::of(a).map_or(String::new(), |c| c.to_string());
    let _ = write!(h, "</div></td><td class=\"t\">{}</td>", escape(&main));
}

/// A spike the monitors alone saw: its interrupts and busiest threads.
fn coarse_cells(h: &mut String, x: &CoarseExplanation) {
    let irqs: Vec<String> = x
        .top_irqs
        .iter()
        .map(|(n, k)| format!("{n} ×{k}"))
        .collect();
    let thr: Vec<String> = x
        .top_threads
        .iter()
        .map(|(t, ns)| format!("{t} {}", dur(*ns)))
        .collect();
    let why = x.not_traced.map_or(String::new(), |w| {
        format!(" (not traced: {})", w.describe())
    });
    let _ = write!(
        h,
        "<td>{}</td><td>{}</td><td class=\"t\">monitors only{}: IRQs {}</td><td class=\"t\">busiest: {}</td>",
        x.spike.cpu,
        escape(&dur(x.spike.latency_ns())),
        escape(&why),
        escape(&irqs.join(", ")),
        escape(&thr.join(", "))
    );
}

/// The culprits over the run (the first 15, then what the others hold, and what merged rows
/// mean).
fn culprit_table(h: &mut String, culprits: &[CulpritRow]) {
    if culprits.is_empty() {
        return;
    }
    h.push_str("<table><tr><th class=\"t\">culprit over the run</th><th>spikes (main)</th><th>spikes (any)</th><th>total time</th></tr>\n");
    for row in culprits.iter().take(15) {
        let _ = writeln!(
            h,
            "<tr><td class=\"t\"><span style=\"color:{}\">■</span> {}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            colour(&row.category),
            escape(&culprit_label(row)),
            row.spikes_as_main,
            row.spikes,
            escape(&dur(row.total_ns))
        );
    }
    h.push_str("</table>\n");
    if culprits.len() > 15 {
        let rest = &culprits[15..];
        let ns: u64 = rest.iter().map(|r| r.total_ns).sum();
        let _ = writeln!(
            h,
            "<p class=\"muted\">… {} more rows, {} in all.</p>",
            rest.len(),
            escape(&dur(ns))
        );
    }
    if let Some(note) = merge_note(culprits) {
        let _ = writeln!(h, "<p class=\"muted\">{}</p>", escape(&note));
    }
}

fn legend(h: &mut String, s: &ExplainSummary) {
    let mut seen: Vec<(&'static str, &'static str)> = Vec::new();
    for c in s.culprits.iter().map(|r| &r.category) {
        let name = match c {
            Category::TimerIrqLate {
                cause: LateCause::ExitFromIdle,
            } => "timer IRQ late: idle exit",
            Category::TimerIrqLate {
                cause: LateCause::PreviousIrq { .. },
            } => "timer IRQ late: previous IRQ",
            Category::TimerIrqLate { .. } => "timer IRQ late: IRQs off / hypervisor",
            Category::TimerIrqHandler => "timer IRQ handler",
            Category::Irq { .. } => "IRQ",
            Category::Softirq { .. } => "softirq",
            Category::Nmi => "NMI",
            Category::Thread { .. } => "higher-priority thread",
            Category::Blocking { .. } => "lower-priority task holding the CPU",
            Category::ReturnToUser => "scheduling and return to user",
            Category::MeasuringThreadBlocked => "measuring thread blocked (D)",
            Category::RtThrottling => "RT throttling",
            Category::Hypervisor => "hypervisor/steal",
            Category::Firmware => "firmware (SMI)",
            Category::Unexplained => "unexplained (not covered by the trace)",
        };
        if !seen.iter().any(|s| s.0 == name) {
            seen.push((name, colour(c)));
        }
    }
    h.push_str("<p class=\"muted\">");
    for (name, col) in seen {
        let _ = write!(
            h,
            "<span style=\"color:{col}\">■</span> {} &nbsp; ",
            escape(name)
        );
    }
    h.push_str("</p>\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtscope_explain::culprits::Merge;
    use rtscope_explain::model::Task;

    fn row(comm: &str, pid: i32, total_ns: u64, merged: Merge) -> CulpritRow {
        let task = Task {
            comm: comm.into(),
            pid,
            prio: 120,
        };
        CulpritRow {
            category: Category::Thread { task },
            spikes_as_main: 1,
            spikes: 1,
            total_ns,
            merged,
        }
    }

    #[test]
    fn the_culprit_table_shows_a_commands_merged_pids_the_other_row_and_says_what_they_are() {
        let mut rows = vec![
            row("inject", 7, 9_000, Merge::Single),
            row(
                "cc1",
                100,
                5_000,
                Merge::Command {
                    pids: vec![100, 101],
                    more_pids: 40,
                },
            ),
            row(
                "<b>",
                5,
                4_000,
                Merge::Other {
                    culprits: 12,
                    at_least: false,
                },
            ),
        ];
        rows.extend((0..20).map(|i| row("small", 200 + i, 10, Merge::Single)));
        let mut h = String::new();
        culprit_table(&mut h, &rows);
        assert!(h.contains("thread inject:7:nice0"), "{h}");
        assert!(h.contains("thread cc1 (42 PIDs: 100, 101 +40 more)"), "{h}");
        assert!(h.contains("other thread (12 culprits)"), "{h}");
        assert!(h.contains("… 8 more rows, 80 ns in all."), "{h}");
        assert!(
            h.contains("a row with PIDs merges the threads of one command"),
            "{h}"
        );
        assert!(!h.contains("<b>"), "{h}");
    }
}
