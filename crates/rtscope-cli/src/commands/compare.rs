//! `rtscope compare A B [C…]`: groups of recorded runs side by side, a load-case matrix, and a
//! verdict per statistic against the first group (the baseline), with exit code 1 on a
//! regression for CI. See docs/compare.md.
//!
//! The analysis is rtscope-analysis's; this file reads the options and prints.

#[cfg(test)]
#[path = "compare_tests.rs"]
mod tests;

use crate::cli::CompareArgs;
use crate::exit::{ExitStatus, UsageError};
use rtscope_analysis::compare::analysis::{Comparison, Group};
use rtscope_analysis::compare::group::{same_kind, GroupKind};
use rtscope_analysis::compare::model::{RunData, Stat, DEFAULT_STATS, NOISE_STATS};
use rtscope_analysis::compare::verdict::Thresholds;
use rtscope_analysis::compare::{json, plot, text};
use rtscope_analysis::select;
use rtscope_core::text::escape;
use rtscope_session::record;
use rtscope_store::{RunFacts, RunStatus, Store};
use std::io::Write;

/// Runs `rtscope compare …`: exit 0, or 1 when a candidate regresses against the baseline.
pub fn run(a: &CompareArgs, out: &mut dyn Write) -> anyhow::Result<ExitStatus> {
    let stats = a
        .stats
        .iter()
        .map(|s| Stat::parse(s, "--stat"))
        .collect::<Result<Vec<_>, _>>()?;
    let mut thresholds = Thresholds::parse(&a.thresholds, &a.min_delta)?;
    thresholds.threshold_only = a.threshold_only;
    thresholds.fail_untested = a.fail_untested;
    let matrix_stat = Stat::parse(&a.matrix, "--matrix")?;
    let store = record::open_existing(a.db.as_deref())?;
    let groups = a
        .selectors
        .iter()
        .enumerate()
        .map(|(i, text)| Ok(Group::new(i, text, load_group(&store, text)?)))
        .collect::<Result<Vec<_>, UsageError>>()?;
    let stats = match same_kind(&groups)? {
        GroupKind::Noise if a.stats.join(",") == DEFAULT_STATS => NOISE_STATS.to_vec(),
        _ => stats,
    };
    let mut c = Comparison::new(groups, &stats, thresholds, matrix_stat, a.rows.as_deref());
    if let Some(p) = a.tail_level {
        c = c.with_tail_level(p, a.assume_stationary);
    }
    if let (Some(key), None) = (&a.rows, &c.matrix) {
        rtscope_session::output::warn(&format!("note: --rows {key}: no load-case matrix, as no run has a `case` tag or a campaign load case"));
    }
    let status = if c.regressions() > 0 && !a.no_fail {
        ExitStatus::LimitExceeded
    } else {
        ExitStatus::Success
    };
    if let Some(dir) = &a.plot {
        for path in plot::write(&c, dir)? {
            rtscope_session::output::warn(&format!("wrote {}", path.display()));
        }
    }
    crate::commands::fleet::compare_ci(&a.ci_output, &c, out)?;
    if a.json {
        let doc = json::document(&c, status.code());
        writeln!(out, "{}", serde_json::to_string_pretty(&doc)?)?;
    } else {
        out.write_all(text::render(&c).as_bytes())?;
    }
    Ok(status)
}

/// The runs one selector names, read from the store in one pass: a fixed number of statements
/// for the whole group, however many runs it has (issue 28: run by run, 1,000 runs took minutes).
fn load_group(store: &Store, text: &str) -> Result<Vec<RunData>, UsageError> {
    if let Some(spec) = text.strip_prefix("watch:") {
        return watch_group(store, spec);
    }
    let sel = select::Selector::parse(text)?;
    let ids = select::resolve(store, &sel, text)?;
    let facts = store.run_facts(&ids).map_err(UsageError::from_error)?;
    let runs: Vec<RunData> = facts.into_iter().flat_map(operands).collect();
    for r in runs.iter().filter(|r| r.status != RunStatus::Complete) {
        rtscope_session::output::warn(&format!(
            "note: run {} ('{text}') is {}: its statistics cover what was recorded",
            r.id, r.status
        ));
    }
    Ok(runs)
}

/// `watch:SERIES[@FROM..TO]`: the hours of a watch series' period as operands.
fn watch_group(store: &Store, spec: &str) -> Result<Vec<RunData>, UsageError> {
    use super::report_watch;
    let (name, period) = match spec.rsplit_once('@') {
        Some((name, p)) => {
            let (from, to) = p.split_once("..").ok_or_else(|| {
                UsageError::new(format!("watch:{}: expected SERIES@FROM..TO", escape(spec)))
                    .hint("e.g. watch:board-7@2026-11-01..2026-11-15 (either end may be left out)")
            })?;
            let opt = |t: &str| (!t.is_empty()).then(|| t.to_string());
            (
                name,
                report_watch::period(opt(from).as_deref(), opt(to).as_deref())?,
            )
        }
        None => (spec, None),
    };
    let series = report_watch::series(store, name)?;
    let rows = report_watch::rows(store, &series, period)?;
    let runs = rtscope_analysis::compare::watch::operands(&series.name, &rows);
    if runs.is_empty() {
        return Err(
            UsageError::new(format!("watch:{}: no window in the period", escape(spec)))
                .hint("widen the period; `rtscope report --watch` shows what the series holds"),
        );
    }
    let days = rtscope_analysis::compare::watch::days(&runs);
    if days > 0 {
        rtscope_session::output::warn(&format!(
            "note: watch:{}: {days} of {} operands are days (older than the series' --keep-hours): compared with days only",
            escape(spec),
            runs.len()
        ));
    }
    Ok(runs)
}

/// One run as compare reads it: a respond run of several mechanisms is one operand per
/// mechanism (eventfd compared with eventfd, never the mechanisms merged).
fn operands(f: RunFacts) -> Vec<RunData> {
    let campaign = f.campaign.map(|(c, r)| (c.name, r));
    let settings: Vec<_> = f
        .checks
        .into_iter()
        .filter_map(|c| Some((c.check, c.setting?)))
        .collect();
    let mut runs = RunData::per_mechanism(&f.detail, campaign);
    for r in &mut runs {
        r.settings = settings.clone();
    }
    runs
}
