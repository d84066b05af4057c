//! `rtscope compare`'s text report, from rtscope-analysis's [`Comparison`]: groups,
//! side-by-side statistics, tail levels, load-case matrix, differences, kernel functions,
//! verdict.

use rtscope_analysis::compare::analysis::{Comparison, Matrix};
use rtscope_analysis::compare::change::Change;
use rtscope_analysis::compare::differences::{self, DifferenceKind};
use rtscope_analysis::compare::functions::{
    Coverage, FunctionComparison, FunctionRow, LeftOut, Presence,
};
use rtscope_analysis::compare::group::Group;
use rtscope_analysis::compare::model::Stat;
use rtscope_analysis::compare::tail::{disjoint, Side, TailRow};
use rtscope_analysis::compare::verdict::Verdict;
use rtscope_core::text as table;
use rtscope_core::Nanos;
use rtscope_evt::units::us;
use rtscope_store::RunId;
use std::fmt::Write;

/// Renders the whole report.
pub fn render(c: &Comparison) -> String {
    let mut s = groups(&c.groups);
    s.push('\n');
    s.push_str(&side_by_side(c));
    if let Some(t) = &c.tail {
        s.push('\n');
        s.push_str(&tail(&c.groups, t));
    }
    if let Some(m) = &c.matrix {
        s.push('\n');
        s.push_str(&matrix(c, m));
    }
    if !c.differences.is_empty() {
        s.push('\n');
        s.push_str(&differences(c));
    }
    if let Some(f) = &c.functions {
        s.push('\n');
        s.push_str(&functions(f));
    }
    s.push('\n');
    s.push_str(&verdict_line(c));
    s
}

/// Function rows listed per candidate in the text; the rest are summed in one row.
const FUNCTION_ROWS: usize = 15;

/// Runs named per group among those left out of the comparison by function.
const LEFT_OUT_IDS: usize = 8;

/// The kernel functions whose charged time changed ([`rtscope_analysis::compare::functions`]): the block only
/// where a candidate and the baseline both took kernel stacks, then one line per group that
/// took none.
fn functions(f: &FunctionComparison) -> String {
    let mut s = if f.compared() {
        compared_functions(f)
    } else {
        String::new()
    };
    for c in f.coverage.iter().filter(|c| !c.took_stacks()) {
        s.push_str(&without_stacks(c));
    }
    s
}

/// The block: the groups with stacks, and each candidate compared.
fn compared_functions(f: &FunctionComparison) -> String {
    let unit = f.exposure.unit();
    let mut s = format!(
        "kernel functions (time of the traced spikes by the first function of their kernel stack, per {unit}; share of the group's traced spike time):\n"
    );
    for c in f.coverage.iter().filter(|c| c.took_stacks()) {
        s.push_str(&coverage_line(c));
    }
    if f.thresholds_differ() {
        let each: Vec<String> = f
            .coverage
            .iter()
            .filter(|c| !c.thresholds_ns.is_empty())
            .map(|c| {
                let t: Vec<String> = c
                    .thresholds_ns
                    .iter()
                    .map(|&t| Nanos(t).to_string())
                    .collect();
                format!("{} {}", c.group, t.join("/"))
            })
            .collect();
        let _ = writeln!(
            s,
            "  note: the runs were explained at different thresholds ({}): a function's time counts only the spikes above its run's threshold; compare runs explained at one threshold",
            each.join(", ")
        );
    }
    for cand in f.candidates.iter().filter(|c| c.compared) {
        s.push_str(&function_table(&cand.group, unit, &cand.rows));
    }
    s.push_str("(informative: the listing by function does not change the verdict)\n");
    s
}

/// One line for a group that took no kernel stacks: not compared, why (its runs by reason),
/// and how to take them only where its runs' command line could ask.
fn without_stacks(c: &Coverage) -> String {
    let mut reasons: Vec<(&LeftOut, Vec<RunId>)> = Vec::new();
    for (id, why) in &c.left_out {
        match reasons.iter_mut().find(|(w, _)| *w == why) {
            Some((_, ids)) => ids.push(*id),
            None => reasons.push((why, vec![*id])),
        }
    }
    let said: Vec<String> = reasons
        .iter()
        .map(|(why, ids)| format!("{}: {}", why.describe(), run_ids(ids)))
        .collect();
    let mut s = format!(
        "kernel functions not compared: {} ('{}') took no kernel stacks ({})",
        c.group,
        rtscope_core::text::escape(&c.selector),
        said.join("; ")
    );
    if c.askable {
        s.push_str("; to compare them, measure with --explain DUR --explain-stacks on");
    }
    s.push('\n');
    s
}

/// `run 3` or `runs 3, 4`, at most [`LEFT_OUT_IDS`] ids and the count of the rest.
fn run_ids(ids: &[RunId]) -> String {
    let mut named: Vec<String> = ids
        .iter()
        .take(LEFT_OUT_IDS)
        .map(|id| id.to_string())
        .collect();
    if ids.len() > LEFT_OUT_IDS {
        named.push(format!("… {} more", ids.len() - LEFT_OUT_IDS));
    }
    let word = if ids.len() == 1 { "run" } else { "runs" };
    format!("{word} {}", named.join(", "))
}

/// One group's runs with kernel stacks, and those left out (never counted as zero).
fn coverage_line(c: &Coverage) -> String {
    let n = c.with_stacks.len() + c.left_out.len();
    let charged = if c.traced_ns > 0 {
        format!(
            ", {:.1}% of it charged to a function",
            100.0 * c.function_ns as f64 / c.traced_ns as f64
        )
    } else {
        String::new()
    };
    let mut s = format!(
        "  {}: {} of {n} runs with kernel stacks; traced spike time {}{charged}\n",
        c.group,
        c.with_stacks.len(),
        Nanos(c.traced_ns)
    );
    if !c.left_out.is_empty() {
        let mut named: Vec<String> = c
            .left_out
            .iter()
            .take(LEFT_OUT_IDS)
            .map(|(id, why)| format!("run {id} {}", why.describe()))
            .collect();
        if c.left_out.len() > LEFT_OUT_IDS {
            named.push(format!("… {} more", c.left_out.len() - LEFT_OUT_IDS));
        }
        let _ = writeln!(
            s,
            "     left out (not counted as zero): {}",
            named.join(", ")
        );
    }
    s
}

/// A duration in ns per unit, rounded; `-` for none.
fn rate(ns: f64) -> String {
    if ns == 0.0 {
        "-".into()
    } else {
        Nanos(ns.round() as u64).to_string()
    }
}

fn signed(ns: f64) -> String {
    let sign = if ns < 0.0 { "-" } else { "+" };
    format!("{sign}{}", Nanos(ns.abs().round() as u64))
}

fn share(s: Option<f64>) -> String {
    s.map_or("-".into(), |v| format!("{:.1}%", 100.0 * v))
}

/// A candidate's functions: the first [`FUNCTION_ROWS`] by absolute change, the rest summed.
fn function_table(group: &str, unit: &str, rows: &[FunctionRow]) -> String {
    let mut table = vec![vec![
        "function".to_string(),
        format!("A /{unit}"),
        "A share".into(),
        format!("{group} /{unit}"),
        format!("{group} share"),
        "change".into(),
        "test".into(),
    ]];
    for r in rows.iter().take(FUNCTION_ROWS) {
        let mut test = r.outcome.text();
        if r.presence != Presence::Both {
            test = format!("{}; {test}", r.presence.word());
        }
        table.push(vec![
            r.function.clone(),
            rate(r.base.rate),
            share(r.base.share),
            rate(r.cand.rate),
            share(r.cand.share),
            signed(r.change),
            test,
        ]);
    }
    let mut s = format!("{group} vs A:\n{}", table::columns(&table, 1));
    if rows.len() > FUNCTION_ROWS {
        let rest = &rows[FUNCTION_ROWS..];
        let sum = |f: fn(&FunctionRow) -> f64| rest.iter().map(f).sum::<f64>();
        let _ = writeln!(
            s,
            "  … {} more functions: A {}, {group} {} per {unit} ({} of them significant)",
            rest.len(),
            rate(sum(|r| r.base.rate)),
            rate(sum(|r| r.cand.rate)),
            rest.iter().filter(|r| r.outcome.significant()).count()
        );
    }
    let all: Vec<&FunctionRow> = rows.iter().filter(|r| r.outcome.significant()).collect();
    let mut significant: Vec<String> = all
        .iter()
        .take(FUNCTION_ROWS)
        .map(|r| {
            format!(
                "{} ({} in {group})",
                rtscope_core::text::escape(&r.function),
                r.outcome.word()
            )
        })
        .collect();
    if all.len() > FUNCTION_ROWS {
        significant.push(format!("… {} more", all.len() - FUNCTION_ROWS));
    }
    let _ = writeln!(
        s,
        "  changed significantly: {}",
        if significant.is_empty() {
            "none".to_string()
        } else {
            significant.join(", ")
        }
    );
    s
}

/// The settings besides the compared one that differ between the groups.
fn differences(c: &Comparison) -> String {
    let mut s = String::from(
        "warning: the groups differ in more than what is compared; a latency difference may come from these:\n",
    );
    for d in &c.differences {
        let what = match d.kind {
            DifferenceKind::Check => "checked setting",
            DifferenceKind::Run => "run setting",
            DifferenceKind::Time => {
                let _ = writeln!(
                    s,
                    "  measured in separate blocks of time ({}): a drift of the machine between them (load, temperature) counts as a difference; interleave the groups' runs",
                    d.values.iter().map(|(g, v)| format!("{g} {}", v.join(""))).collect::<Vec<_>>().join(", ")
                );
                continue;
            }
        };
        let _ = writeln!(s, "  {what} {}", differences::describe(d));
    }
    s
}

/// Items joined with commas; past five, the count of the rest (a campaign has many labels).
/// Items are untrusted (labels, kernel names, campaign names): control characters escaped.
fn list(items: &[String]) -> String {
    let text = match items.len() {
        0 => "-".into(),
        n if n > 5 => format!("{}, … ({} more)", items[..4].join(", "), n - 4),
        _ => items.join(", "),
    };
    rtscope_core::text::escape(&text).into_owned()
}

/// Most run ids listed per group in the text (the first ones and the last).
const MAX_IDS: usize = 12;

fn groups(groups: &[Group]) -> String {
    let mut s = String::from("groups (A is the baseline):\n");
    for g in groups {
        let mut ids: Vec<String> = g.runs.iter().map(|r| r.id.to_string()).collect();
        let n = g.runs.len();
        if n > MAX_IDS {
            // The JSON lists every id; a line of hundreds (a watch period's hours) is unread.
            ids.truncate(MAX_IDS - 2);
            ids.push(format!("… {}", g.runs[n - 1].id));
        }
        let _ = writeln!(
            s,
            "  {}  {}: {n} run{} ({})",
            g.name,
            rtscope_core::text::escape(&g.selector),
            if n == 1 { "" } else { "s" },
            ids.join(", ")
        );
        let _ = writeln!(
            s,
            "     labels:   {}",
            list(&g.distinct(|r| r.label.as_deref()))
        );
        let _ = writeln!(
            s,
            "     kernel:   {}",
            list(&g.distinct(|r| r.kernel.as_deref()))
        );
        let _ = writeln!(
            s,
            "     campaign: {}",
            list(&g.distinct(|r| r.campaign.as_deref()))
        );
        let mut line = format!("     samples:  {}", g.merged.totals.samples);
        if let (true, Some((lo, hi))) = (n > 1, g.run_max_spread()) {
            let _ = write!(line, "; max per run {}..{}", Nanos(lo), Nanos(hi));
        }
        s.push_str(&line);
        s.push('\n');
    }
    s
}

fn change_text(stat: Stat, c: &Change) -> String {
    match (c.delta_pct, c.delta) {
        (Some(p), _) => format!("{p:+.1}%"),
        (None, Some(0)) => "0".into(),
        (None, Some(d)) => stat.show_delta(d),
        (None, None) => "-".into(),
    }
}

fn side_by_side(c: &Comparison) -> String {
    let mut header = vec!["stat".to_string()];
    header.extend(c.groups.iter().map(|g| g.name.clone()));
    for g in &c.groups[1..] {
        header.push(format!("{} vs A", g.name));
        header.push("verdict".into());
    }
    let mut rows = vec![header];
    for r in &c.stats {
        let mut row = vec![c.stat_name(r.stat).to_string()];
        row.extend(r.values.iter().map(|v| r.stat.show(*v)));
        for ch in &r.changes {
            row.push(change_text(r.stat, ch));
            row.push(ch.label(true));
        }
        rows.push(row);
    }
    if c.groups.iter().any(|g| g.runs.len() > 1) {
        let mut row = vec!["max/run".to_string()];
        row.extend(c.groups.iter().map(|g| match g.run_max_spread() {
            Some((lo, hi)) if g.runs.len() > 1 => format!("{}..{}", Nanos(lo), Nanos(hi)),
            _ => "-".into(),
        }));
        rows.push(row);
    }
    let width = rows[0].len();
    for r in &mut rows {
        r.resize(width, String::new());
    }
    let mut s = table::columns(&rows, 1);
    s.push_str(&thresholds_line(c));
    s
}

/// Every change of the comparison: statistics rows, then the matrix cells.
fn all_changes(c: &Comparison) -> impl Iterator<Item = &Change> {
    let cells = c
        .matrix
        .iter()
        .flat_map(|m| &m.verdicts)
        .flat_map(|(_, v)| v);
    c.stats.iter().flat_map(|r| &r.changes).chain(cells)
}

fn thresholds_line(c: &Comparison) -> String {
    let t = &c.thresholds;
    let mut s = format!("threshold {}%", t.default_pct);
    for (stat, pct) in &t.per_stat {
        let _ = write!(s, ", {stat} {pct}%");
    }
    let _ = write!(
        s,
        "; latency changes up to {} are noise",
        Nanos(t.min_delta_ns)
    );
    if c.stats.iter().any(|r| r.stat.is_share()) {
        s.push_str("; available = share of the runtime not lost to noise (its change in points)");
    }
    let gaps: Vec<_> = c.groups.iter().map(|g| g.merged.gaps).collect();
    if gaps.iter().any(|&g| g != gaps[0]) && c.stats.iter().any(|r| r.stat.of_distribution()) {
        s.push_str("; min, mean and percentiles are - (not comparable): some histograms hold every gap of the loop, others only the noises over the threshold (rtla osnoise hist)");
    }
    if c.stats.iter().any(|r| r.stat == Stat::Missed) {
        s.push_str(if c.events {
            "; lost = events lost in % of all events sent (lost / (received + lost))"
        } else {
            "; missed = missed deadlines in % of all deadlines (missed / (samples + missed))"
        });
    }
    if all_changes(c).any(|ch| ch.verdict == Verdict::Worse) {
        s.push_str("; worse = higher beyond the threshold but not failing (a percentile on too few samples)");
    }
    if all_changes(c).any(Change::untested) {
        let _ = write!(
            s,
            "; untested = too few runs for the significance test, judged by the threshold alone ({})",
            if t.threshold_only {
                "a rise fails"
            } else if t.fail_untested {
                "said lower or higher; a rise fails"
            } else {
                "said lower or higher; a rise does not fail; --fail-untested fails it"
            }
        );
    }
    if c.thresholds.threshold_only {
        s.push_str("; --threshold-only: no significance test");
    } else if c
        .stats
        .iter()
        .flat_map(|r| &r.changes)
        .any(|ch| ch.test.is_some())
    {
        let test = if c.strata_keys.is_empty() {
            "Mann-Whitney U"
        } else {
            "van Elteren's stratified Mann-Whitney U"
        };
        let _ = write!(
            s,
            "; a change is significant when the per-run values differ ({test}, p < 0.05)"
        );
    }
    s.push('\n');
    s.push_str(&strata_lines(c));
    s
}

/// How the runs were matched for the test, when they are stratified.
fn strata_lines(c: &Comparison) -> String {
    let mut s = String::new();
    if c.strata_keys.is_empty() {
        return s;
    }
    let keys: Vec<&str> = c.strata_keys.iter().map(|k| k.name()).collect();
    for st in &c.strata {
        let matched: Vec<String> = st
            .matched
            .iter()
            .map(|(n, a, b)| format!("{n} ({a} vs {b})"))
            .collect();
        let _ = writeln!(
            s,
            "{} vs A tested within {}: {}",
            st.group,
            keys.join(" · "),
            if matched.is_empty() {
                "no stratum in common".into()
            } else {
                matched.join(", ")
            }
        );
        for (only, side) in [(&st.only_base, "A"), (&st.only_cand, st.group.as_str())] {
            if !only.is_empty() {
                let _ = writeln!(
                    s,
                    "  only in {side}, left out of the test: {}",
                    only.join(", ")
                );
            }
        }
    }
    s
}

fn matrix(c: &Comparison, m: &Matrix) -> String {
    let mut header = vec![m.rows_by.clone()];
    header.extend(m.columns.iter().cloned());
    let mut rows = vec![header];
    for (name, cells) in &m.rows {
        let mut row = vec![name.clone()];
        row.extend(cells.iter().map(|v| m.stat.show(*v)));
        rows.push(row);
    }
    for (name, verdicts) in &m.verdicts {
        let mut row = vec![name.clone()];
        row.extend(verdicts.iter().map(|v| v.label(false)));
        rows.push(row);
    }
    let word = c.case_word();
    format!(
        "{word}s ({} of each {} and {word}):\n{}",
        c.stat_name(m.stat),
        m.rows_by,
        table::columns(&rows, 1)
    )
}

/// The last line: the overall verdict.
pub fn verdict_line(c: &Comparison) -> String {
    let mut bad: Vec<String> = Vec::new();
    for (i, g) in c.groups.iter().enumerate().skip(1) {
        let stats: Vec<&str> = c
            .stats
            .iter()
            .filter(|r| r.changes[i - 1].verdict == Verdict::Regression)
            .map(|r| c.stat_name(r.stat))
            .collect();
        if !stats.is_empty() {
            bad.push(format!("{} on {}", g.name, stats.join(", ")));
        }
    }
    if let Some(m) = &c.matrix {
        for (g, cases) in c.case_regressions() {
            bad.push(format!(
                "{g} on {} in {}",
                c.stat_name(m.stat),
                cases.join(", ")
            ));
        }
    }
    let (tail, names) = c.tail_where(|ch| ch.verdict == Verdict::Regression);
    bad.extend(names.iter().map(|g| format!("{g} on {tail}")));
    let mut line = if bad.is_empty() {
        "verdict: no regression against A\n".to_string()
    } else {
        format!("verdict: REGRESSION against A: {}\n", bad.join("; "))
    };
    let untested = untested_rises(c);
    if !untested.is_empty() {
        let t = &c.thresholds;
        let effect = if t.fail_untested || t.threshold_only {
            "it fails the gate"
        } else {
            "reported as higher, not failing; --fail-untested fails it"
        };
        let _ = writeln!(
            line,
            "untested: {} (higher beyond the threshold on too few runs for the significance test; {effect}; repeat the runs to let the test decide)",
            untested.join("; ")
        );
    }
    line
}

/// The candidates' statistics and load cases that rose beyond the threshold on too few runs
/// for the significance test (failing or not).
fn untested_rises(c: &Comparison) -> Vec<String> {
    let mut out = Vec::new();
    for (i, g) in c.groups.iter().enumerate().skip(1) {
        let stats: Vec<&str> = c
            .stats
            .iter()
            .filter(|r| r.changes[i - 1].untested_rise())
            .map(|r| c.stat_name(r.stat))
            .collect();
        if !stats.is_empty() {
            out.push(format!("{} on {}", g.name, stats.join(", ")));
        }
    }
    if let Some(m) = &c.matrix {
        for (g, cases) in c.cases_where(Change::untested_rise) {
            out.push(format!(
                "{g} on {} in {}",
                c.stat_name(m.stat),
                cases.join(", ")
            ));
        }
    }
    let (tail, names) = c.tail_where(Change::untested_rise);
    out.extend(names.iter().map(|g| format!("{g} on {tail}")));
    out
}

/// The tail block of the text report.
fn tail(groups: &[Group], row: &TailRow) -> String {
    let mut s = format!(
        "tail level: the latency exceeded with probability {:e} per wake-up ({:.0} % interval; the runs merged{}):\n",
        row.probability,
        row.confidence * 100.0,
        if row.assumed_stationary {
            "; UNTESTED: stationarity assumed, not tested"
        } else {
            ""
        }
    );
    for (i, (g, side)) in groups.iter().zip(&row.sides).enumerate() {
        let value = match side {
            Side::Level(l) => format!(
                "{} [{} .. {}]",
                us(l.estimate_ns),
                us(l.lower_ns),
                l.upper_ns.map_or("unbounded".into(), us)
            ),
            Side::Envelope { level: l, from, .. } => format!(
                "{} [{} .. {}]  worst-segment envelope ({from}; one stationary tail refused)",
                us(l.estimate_ns),
                us(l.lower_ns),
                l.upper_ns.map_or("unbounded".into(), us)
            ),
            Side::Refused(why) => {
                let why: Vec<String> = why.iter().map(|r| r.to_string()).collect();
                format!("REFUSED: {}", why.join("; "))
            }
            Side::Within => "within the measured data (read the percentiles)".into(),
        };
        let _ = write!(s, "  {:<3} {value}", g.name);
        if let Some(ch) = i.checked_sub(1).map(|k| &row.changes[k]) {
            let _ = write!(
                s,
                "  {}",
                verdict(ch, &row.sides[0], side, row.assumed_stationary)
            );
        }
        s.push('\n');
    }
    s
}

/// A candidate's verdict in words: the change, the verdict and what it rests on.
fn verdict(ch: &Change, base: &Side, cand: &Side, assumed: bool) -> String {
    let why = match (base, cand) {
        (Side::Refused(_), _) | (_, Side::Refused(_)) => {
            return "n/a: no verdict on a refused estimate".into()
        }
        (Side::Within, _) | (_, Side::Within) => return "n/a: nothing to extrapolate".into(),
        (Side::Envelope { .. }, _) | (_, Side::Envelope { .. }) if ch.untested() => {
            "untested: a worst-segment envelope, not one stationary tail"
        }
        _ if ch.untested() && assumed => "untested: stationarity assumed, not tested",
        _ if ch.untested() => "untested: an interval unbounded above, measure longer",
        _ if ch.verdict == Verdict::NotSignificant => "the intervals overlap: not distinguishable",
        (Side::Level(b), Side::Level(c)) if disjoint(b, c) => "the intervals are apart",
        _ => "within the threshold",
    };
    let pct = ch
        .delta_pct
        .map_or(String::new(), |p| format!("{p:+.1}%  "));
    format!("{pct}{} ({why})", ch.verdict.word())
}
