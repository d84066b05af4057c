//! Plain-text rendering of an [`ExplainSummary`] for `rtscope runs explain` and the section of
//! `rtscope runs show`. Pure functions returning strings; task names are escaped (they come
//! from the traced system).

use crate::book::{Counts, ExplainSummary, Explained, SmtCounts};
use crate::classes::Class;
use crate::coarse::CoarseExplanation;
use crate::culprits::CulpritRow;
use crate::culprits::Merge;
use crate::model::{Attribution, Category, Handler, MissingExits};
use crate::words::{command_label, dur, escaped, label};
use std::fmt::Write;

/// A culprit row's label, escaped: its category's for one culprit; for the threads of one
/// command, the command name with the number of PIDs and the first ones (`thread cc1 (212
/// PIDs: 4101, 4107, 4111, 4120 +208 more)`); for the rest of a class beyond the table's bounds,
/// `other thread (37 culprits)`.
pub fn culprit_label(r: &CulpritRow) -> String {
    match &r.merged {
        Merge::Single => label(&r.category),
        Merge::Command { pids, more_pids } => {
            let l = command_label(&r.category);
            let n = pids.len() as u64 + more_pids;
            let list: Vec<String> = pids.iter().map(i32::to_string).collect();
            let more = if *more_pids > 0 {
                format!(" +{more_pids} more")
            } else {
                String::new()
            };
            format!("{l} ({n} PIDs: {}{more})", list.join(", "))
        }
        Merge::Other { culprits, at_least } => {
            let ge = if *at_least { "≥ " } else { "" };
            let class = Class::of(&r.category).name();
            format!("other {class} ({ge}{culprits} culprits)")
        }
    }
}

/// What a run's explanation is about: a measurement's late wake-ups (spikes) or a noise run's
/// gaps (the busy loop's lost time), in the words each is printed with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subject {
    /// `measure`, campaigns, `watch`: wake-ups later than the threshold.
    WakeUps,
    /// `noise`: gaps of the busy loop longer than the threshold.
    Gaps,
}

impl Subject {
    fn title(self) -> &'static str {
        match self {
            Subject::WakeUps => "Why were the worst wake-ups late?",
            Subject::Gaps => "What took the CPU in the longest gaps?",
        }
    }

    fn many(self) -> &'static str {
        match self {
            Subject::WakeUps => "spikes",
            Subject::Gaps => "gaps",
        }
    }

    fn one(self) -> &'static str {
        match self {
            Subject::WakeUps => "spike",
            Subject::Gaps => "gap",
        }
    }
}

/// How much of the run the trace explains: `traced X of Y spikes above the threshold (Z % of
/// spike time)`, then why the others were not traced. A summary recorded before spike time
/// was counted says the share is unknown.
pub fn coverage(c: &Counts) -> String {
    coverage_of(c, Subject::WakeUps)
}

/// [`coverage`] in the words of `what` (`traced X of Y gaps … (Z % of gap time)`).
pub fn coverage_of(c: &Counts, what: Subject) -> String {
    let (many, one) = (what.many(), what.one());
    let mut o = format!(
        "traced {} of {} {many} above the threshold",
        c.traced, c.spikes
    );
    if c.spikes > 0 && c.spike_ns == 0 {
        let _ = write!(o, " (share of {one} time unknown)");
    } else if c.spikes > 0 {
        let share = c.traced_ns as f64 * 100.0 / c.spike_ns as f64;
        let _ = write!(o, " ({share:.1} % of {one} time)");
    }
    let why: Vec<String> = c
        .not_traced
        .nonzero()
        .into_iter()
        .map(|(w, n)| format!("{n} {}", w.describe()))
        .collect();
    if !why.is_empty() {
        let _ = write!(o, "; not traced: {}", why.join(", "));
    }
    o
}

/// One line per reason spikes were not traced: what to change, for people (empty when every
/// spike was traced).
pub fn coverage_hints(c: &Counts) -> Vec<String> {
    c.not_traced
        .nonzero()
        .into_iter()
        .map(|(w, n)| format!("{n} not traced ({}): {}", w.describe(), w.fix()))
        .collect()
}

/// The whole section. `run_start_ns` (CLOCK_MONOTONIC at the run's start) turns wake-up times
/// into seconds into the run; `max_spikes` limits the spike list.
pub fn summary(s: &ExplainSummary, run_start_ns: u64, max_spikes: usize) -> String {
    summary_of(s, run_start_ns, max_spikes, Subject::WakeUps)
}

/// [`summary`] in the words of `what` (a noise run's gaps: "What took the CPU in the longest
/// gaps?", "worst gaps").
pub fn summary_of(
    s: &ExplainSummary,
    run_start_ns: u64,
    max_spikes: usize,
    what: Subject,
) -> String {
    let mut o = String::new();
    let c = &s.counts;
    let _ = writeln!(
        o,
        "{} (tier {}, threshold {})",
        what.title(),
        s.tier.name(),
        dur(s.threshold_ns)
    );
    if let Some(r) = &s.tier_reason {
        let _ = writeln!(o, "  note: {}", r.escape_debug());
    }
    let _ = writeln!(
        o,
        "  {} {}: {} traced ({} partial), {} from the monitors only, {} without context",
        c.spikes,
        what.many(),
        c.traced,
        c.partial,
        c.coarse,
        c.no_context
    );
    let _ = writeln!(o, "  {}", coverage_of(c, what));
    for hint in coverage_hints(c) {
        let _ = writeln!(o, "  hint: {hint}");
    }
    if let Some(smt) = &s.smt {
        let _ = writeln!(o, "  {}", smt_line(smt));
    }
    for m in &s.missing_exits {
        let _ = writeln!(o, "  {}", missing_exits_line(m, run_start_ns));
    }
    if let Some(line) = crate::cause::worst_line(s, what.one()) {
        let _ = writeln!(o, "  {line}");
    }
    culprits(&mut o, &s.culprits);
    let mut worst: Vec<&Explained> = s.worst.iter().collect();
    worst.sort_by_key(|e| std::cmp::Reverse(e.latency_ns()));
    if !worst.is_empty() {
        let _ = writeln!(o, "\n  worst {}", what.many());
    }
    for e in worst.into_iter().take(max_spikes) {
        let at = e.wakeup_ns().saturating_sub(run_start_ns) as f64 / 1e9;
        let _ = match e {
            Explained::Traced(a) => writeln!(o, "  {at:>9.3}s {}", traced_line_of(a, what)),
            Explained::Coarse(x) => writeln!(o, "  {at:>9.3}s {}", coarse_line(x)),
        };
        if let Explained::Traced(a) = e {
            if let Some(h) = &a.handler {
                let _ = writeln!(o, "             handler: {}", handler_line(h));
            }
            if let Some(st) = &a.stack {
                let _ = writeln!(o, "             {}", escaped(&st.line()));
            }
        }
    }
    functions(&mut o, s);
    o
}

/// `noisy_long_softirq [noisy] (tasklet, 480.0 µs in 1 run)`: a spike's handler, escaped.
pub fn handler_line(h: &Handler) -> String {
    let runs = if h.times == 1 { "run" } else { "runs" };
    format!(
        "{} ({}, {} in {} {runs})",
        escaped(&h.function),
        h.kind.context(),
        dur(h.ns),
        h.times
    )
}

/// The time-by-kernel-function table (the first 10 rows, then what the others hold), and
/// how much of the traced spikes' time is under no kernel function (the hypervisor's, the
/// idle CPU's, interrupts', contexts without a stack: the culprits say whose).
fn functions(o: &mut String, s: &ExplainSummary) {
    let rows = &s.functions;
    if rows.is_empty() {
        return;
    }
    let shown: Vec<(String, &crate::stack::FunctionTime)> = rows
        .iter()
        .take(10)
        .map(|r| (escaped(&r.function), r))
        .collect();
    let w = shown
        .iter()
        .map(|r| r.0.chars().count())
        .max()
        .unwrap_or(0)
        .clamp(20, 72);
    let _ = writeln!(
        o,
        "\n  {:<w$}  spikes  total time",
        "time by kernel function"
    );
    for (name, r) in shown {
        let _ = writeln!(o, "  {name:<w$}  {:>6}  {}", r.spikes, dur(r.ns));
    }
    if rows.len() > 10 {
        let ns: u64 = rows[10..].iter().map(|r| r.ns).sum();
        let _ = writeln!(
            o,
            "  … {} more functions, {} in all",
            rows.len() - 10,
            dur(ns)
        );
    }
    let under: u64 = rows.iter().map(|r| r.ns).sum();
    let rest = s.counts.traced_ns.saturating_sub(under);
    if rest > 0 {
        let hv = s.class_totals().hypervisor_ns;
        let _ = writeln!(
            o,
            "  under no kernel function: {} of {} traced (hypervisor {}; the rest idle, \
             interrupts and contexts without a stack: the culprits above)",
            dur(rest),
            dur(s.counts.traced_ns),
            dur(hv)
        );
    }
}

/// The culprits over the run (the first 15, then what the others hold): spikes each was the
/// main cause of, spikes it took part in, its time; a note when rows merge culprits.
fn culprits(o: &mut String, culprits: &[CulpritRow]) {
    if culprits.is_empty() {
        return;
    }
    let rows: Vec<(String, &CulpritRow)> = culprits
        .iter()
        .take(15)
        .map(|r| (culprit_label(r), r))
        .collect();
    let w = rows
        .iter()
        .map(|r| r.0.chars().count())
        .max()
        .unwrap_or(0)
        .clamp(21, 72);
    let _ = writeln!(
        o,
        "\n  {:<w$}  main in  any in  total time",
        "culprits over the run"
    );
    for (l, row) in rows {
        let _ = writeln!(
            o,
            "  {l:<w$}  {:>7}  {:>6}  {}",
            row.spikes_as_main,
            row.spikes,
            dur(row.total_ns)
        );
    }
    if culprits.len() > 15 {
        let rest = &culprits[15..];
        let ns: u64 = rest.iter().map(|r| r.total_ns).sum();
        let _ = writeln!(o, "  … {} more rows, {} in all", rest.len(), dur(ns));
    }
    if let Some(note) = merge_note(culprits) {
        let _ = writeln!(o, "  {note}");
    }
}

/// What the merged rows of a culprit table mean, when there are any.
pub fn merge_note(culprits: &[CulpritRow]) -> Option<String> {
    let command = culprits
        .iter()
        .any(|r| matches!(r.merged, Merge::Command { .. }));
    let other = culprits
        .iter()
        .any(|r| matches!(r.merged, Merge::Other { .. }));
    let mut parts = Vec::new();
    if command {
        parts.push(format!(
            "a row with PIDs merges the threads of one command, each under {} % of the \
             charged time (one with more keeps its own row)",
            crate::culprits::OWN_ROW_PERMILLE as f64 / 10.0
        ));
    }
    if other {
        parts.push(format!(
            "an \"other\" row holds a class's culprits beyond the table's bounds ({} rows of \
             their own, {} commands)",
            crate::culprits::MAX_ROWS,
            crate::culprits::MAX_COMMANDS
        ));
    }
    (!parts.is_empty()).then(|| {
        parts.push("no culprit's time is in \"unexplained\"".into());
        format!("note: {}", parts.join(";\n        "))
    })
}

/// The time of `a` charged to no cause: its `unexplained` charges and what no charge covers
/// ([`crate::parts::rest_ns`]).
pub fn unexplained_rest_ns(a: &Attribution) -> u64 {
    crate::parts::rest_ns(a)
}

/// A traced spike or gap, `cpu1 1.2ms [partial]: ` and its parts ([`crate::parts::parts`]):
/// its four largest charges, `+ N other causes` together, and for a gap its unexplained rest
/// (the time charged to no cause, [`unexplained_rest_ns`]), so a gap's line accounts for the
/// whole gap and its shares sum to 100 %.
fn traced_line_of(a: &Attribution, what: Subject) -> String {
    let parts: Vec<String> = crate::parts::parts(a, what == Subject::Gaps)
        .iter()
        .map(|p| {
            let name = match &p.kind {
                crate::parts::PartKind::Cause(c) => label(c),
                crate::parts::PartKind::Others(n) => format!("+ {n} other causes"),
                crate::parts::PartKind::Rest => "unexplained rest".to_string(),
            };
            format!("{name} {} ({}%)", dur(p.ns), p.percent)
        })
        .collect();
    let flags = match (a.complete, a.lost_events) {
        (true, false) => "",
        (false, _) => " [partial]",
        (true, true) => " [events lost]",
    };
    let below = a.ns_where(|c| {
        matches!(
            c,
            Category::Hypervisor | Category::Firmware | Category::Unexplained
        )
    });
    // Beside time below the kernel, what the core's other hardware threads ran.
    let siblings: String = if below > 0 {
        a.siblings
            .iter()
            .map(|s| format!("; {}", escaped(&s.to_string())))
            .collect()
    } else {
        String::new()
    };
    format!(
        "cpu{} {}{flags}: {}{siblings}",
        a.spike.cpu,
        dur(a.spike.latency_ns()),
        parts.join(", ")
    )
}

/// `warning: CPU 1: 6 interrupts traced without their exit, the last exit 0.412 s into the
/// run: …`: a CPU whose trace can no longer tell an interrupt from the hypervisor.
pub fn missing_exits_line(m: &MissingExits, run_start_ns: u64) -> String {
    let at = m.since_ns.saturating_sub(run_start_ns) as f64 / 1e9;
    let since = if m.since_ns < run_start_ns {
        "no exit traced in the run".to_string()
    } else {
        format!("the last exit traced {at:.3} s into the run")
    };
    format!(
        "warning: CPU {}: {} interrupt(s) traced without their exit ({since}): the kernel's \
         interrupt exit events stopped, so time no event covers there is unexplained, not the \
         hypervisor's",
        m.cpu, m.missed
    )
}

/// The SMT siblings beside time below the kernel: how many such spikes had a busy sibling.
pub fn smt_line(s: &SmtCounts) -> String {
    format!(
        "SMT siblings traced: {} spikes had time below the kernel ({}); in {} of them ({}) a \
         sibling was busy for more than half of the spike",
        s.below_kernel,
        dur(s.below_kernel_ns),
        s.sibling_busy,
        dur(s.sibling_busy_ns)
    )
}

/// A spike explained from the monitors only: the interval's top IRQs, softirqs, threads and
/// steal.
fn coarse_line(x: &CoarseExplanation) -> String {
    let list = |v: Vec<String>| {
        if v.is_empty() {
            "-".into()
        } else {
            v.join(", ")
        }
    };
    let irqs = x
        .top_irqs
        .iter()
        .map(|(n, k)| format!("{} ×{k}", n.escape_debug()))
        .collect();
    let soft = x
        .top_softirqs
        .iter()
        .map(|(v, k)| format!("{v} ×{k}"))
        .collect();
    let thr = x
        .top_threads
        .iter()
        .map(|(t, ns)| format!("{t} {}", dur(*ns)))
        .collect();
    let why = x
        .not_traced
        .map_or(String::new(), |w| format!("; not traced: {}", w.describe()));
    format!(
        "cpu{} {} (monitors, {} interval{why}): IRQs {}; softirqs {}; threads {}; steal {}",
        x.spike.cpu,
        dur(x.spike.latency_ns()),
        dur(x.end_ns.saturating_sub(x.start_ns)),
        list(irqs),
        list(soft),
        list(thr),
        dur(x.steal_ns)
    )
}

#[cfg(test)]
#[path = "render_tests.rs"]
mod tests;
