//! The text report of `compare`: groups, side-by-side statistics, load-case matrix, verdict.

use super::analysis::{Change, Comparison, Group, Matrix};
use super::model::Stat;
use super::verdict::Verdict;
use rtscope_core::text as table;
use rtscope_core::Nanos;
use std::fmt::Write;

/// Renders the whole report.
pub fn render(c: &Comparison) -> String {
    let mut s = groups(&c.groups);
    s.push('\n');
    s.push_str(&side_by_side(c));
    if let Some(m) = &c.matrix {
        s.push('\n');
        s.push_str(&matrix(m));
    }
    if !c.differences.is_empty() {
        s.push('\n');
        s.push_str(&differences(c));
    }
    s.push('\n');
    s.push_str(&verdict_line(c));
    s
}

/// The settings besides the compared one that differ between the groups.
fn differences(c: &Comparison) -> String {
    let mut s = String::from(
        "warning: the groups differ in more than what is compared; a latency difference may come from these:\n",
    );
    for d in &c.differences {
        let what = match d.kind {
            super::differences::DifferenceKind::Check => "checked setting",
            super::differences::DifferenceKind::Run => "run setting",
        };
        let _ = writeln!(s, "  {what} {}", super::differences::describe(d));
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

fn groups(groups: &[Group]) -> String {
    let mut s = String::from("groups (A is the baseline):\n");
    for g in groups {
        let ids: Vec<String> = g.runs.iter().map(|r| r.id.to_string()).collect();
        let n = g.runs.len();
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
        let mut line = format!("     samples:  {}", g.merged.samples);
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
        (None, Some(d)) if stat.is_count() => format!("{d:+}"),
        (None, Some(d)) => format!("+{}", Nanos(d.unsigned_abs() as u64)),
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
        let mut row = vec![r.stat.name().to_string()];
        row.extend(r.values.iter().map(|v| r.stat.show(*v)));
        for ch in &r.changes {
            row.push(change_text(r.stat, ch));
            row.push(ch.verdict.word().to_string());
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
    if c.stats
        .iter()
        .flat_map(|r| &r.changes)
        .any(|ch| ch.verdict == Verdict::Worse)
    {
        s.push_str("; worse = beyond the threshold on too few samples to fail");
    }
    if c.stats
        .iter()
        .flat_map(|r| &r.changes)
        .any(|ch| ch.test.is_some())
    {
        s.push_str(
            "; groups of 2+ runs: a change is significant when the per-run values differ (Mann-Whitney U, p < 0.05)",
        );
    }
    s.push('\n');
    s
}

fn matrix(m: &Matrix) -> String {
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
        row.extend(verdicts.iter().map(|v| short_word(*v).to_string()));
        rows.push(row);
    }
    format!(
        "load cases ({} of each {} and load case):\n{}",
        m.stat.name(),
        m.rows_by,
        table::columns(&rows, 1)
    )
}

/// A verdict in a matrix cell (`n.s.`: no significant difference).
fn short_word(v: Verdict) -> &'static str {
    match v {
        Verdict::NotSignificant => "n.s.",
        Verdict::Unknown => "-",
        other => other.word(),
    }
}

/// The last line: the overall verdict.
pub fn verdict_line(c: &Comparison) -> String {
    let mut bad: Vec<String> = Vec::new();
    for (i, g) in c.groups.iter().enumerate().skip(1) {
        let stats: Vec<&str> = c
            .stats
            .iter()
            .filter(|r| r.changes[i - 1].verdict == Verdict::Regression)
            .map(|r| r.stat.name())
            .collect();
        if !stats.is_empty() {
            bad.push(format!("{} on {}", g.name, stats.join(", ")));
        }
    }
    if let Some(m) = &c.matrix {
        for (g, cases) in c.case_regressions() {
            bad.push(format!("{g} on {} in {}", m.stat.name(), cases.join(", ")));
        }
    }
    if bad.is_empty() {
        "verdict: no regression against A\n".into()
    } else {
        format!("verdict: REGRESSION against A: {}\n", bad.join("; "))
    }
}
