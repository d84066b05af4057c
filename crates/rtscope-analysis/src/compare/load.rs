//! compare's groups read from the store: each selector's runs (or a watch series' period, as
//! `watch:SERIES[@FROM..TO]`) as operands, a fixed number of statements for the whole group
//! however many runs it has (issue 28: run by run, 1,000 runs took minutes), and the notes the
//! front end prints about what it read (incomplete runs, day-long operands).

#[cfg(test)]
#[path = "load_tests.rs"]
mod tests;

use super::functions::RunStacks;
use super::group::{same_kind, Group, GroupKind};
use super::model::{RunData, Stat, DEFAULT_STATS, NOISE_STATS};
use crate::{select, series};
use rtscope_common::error::UsageError;
use rtscope_core::text::escape;
use rtscope_store::{RunFacts, RunId, RunKind, RunStatus, Store};
use std::collections::HashMap;

/// The groups of a comparison, with the notes to print about them.
#[derive(Debug)]
pub struct Loaded {
    /// One group per selector, in order (the first is the baseline).
    pub groups: Vec<Group>,
    /// Notes for the terminal (`note: run 7 ('last') is aborted: …`), in reading order.
    pub notes: Vec<String>,
}

/// The groups that `selectors` name in `store`.
pub fn groups(store: &Store, selectors: &[String]) -> Result<Loaded, UsageError> {
    let mut notes = Vec::new();
    let groups = selectors
        .iter()
        .enumerate()
        .map(|(i, text)| Ok(Group::new(i, text, group(store, text, &mut notes)?)))
        .collect::<Result<Vec<_>, UsageError>>()?;
    Ok(Loaded { groups, notes })
}

/// The statistics compared: `asked` when `--stat` was given (always honoured, whatever it
/// lists), else the groups' defaults — noise's own for noise runs ([`NOISE_STATS`]),
/// [`DEFAULT_STATS`] otherwise. Groups of both kinds are refused.
pub fn stats_for(groups: &[Group], asked: Option<Vec<Stat>>) -> Result<Vec<Stat>, UsageError> {
    let kind = same_kind(groups)?;
    Ok(match (asked, kind) {
        (Some(asked), _) => asked,
        (None, GroupKind::Noise) => NOISE_STATS.to_vec(),
        (None, _) => default_stats(),
    })
}

/// [`DEFAULT_STATS`] parsed: the statistics compared for latency groups without `--stat`.
pub fn default_stats() -> Vec<Stat> {
    DEFAULT_STATS
        .split(',')
        .filter_map(|s| Stat::parse(s, "--stat").ok())
        .collect()
}

/// What each run of `groups` stored about kernel stacks, by run id, read in one statement
/// however many runs there are; a run not explained is absent ([`super::functions`]).
pub fn stacks(store: &Store, groups: &[Group]) -> Result<HashMap<RunId, RunStacks>, UsageError> {
    let mut kinds: HashMap<RunId, RunKind> = HashMap::new();
    for r in groups.iter().flat_map(|g| &g.runs) {
        kinds.insert(r.id, r.kind);
    }
    let mut ids: Vec<RunId> = kinds.keys().copied().collect();
    ids.sort();
    let rows = store
        .spike_summaries(&ids)
        .map_err(UsageError::from_error)?;
    Ok(rows
        .iter()
        .filter_map(|e| Some((e.run, RunStacks::of(e, *kinds.get(&e.run)?))))
        .collect())
}

/// The runs one selector names, read from the store in one pass; `notes` gets a line per run
/// that is not complete.
pub fn group(
    store: &Store,
    text: &str,
    notes: &mut Vec<String>,
) -> Result<Vec<RunData>, UsageError> {
    if let Some(spec) = text.strip_prefix("watch:") {
        return watch_group(store, spec, notes);
    }
    let sel = select::Selector::parse(text)?;
    let ids = select::resolve(store, &sel, text)?;
    let facts = store.run_facts(&ids).map_err(UsageError::from_error)?;
    let runs: Vec<RunData> = facts.into_iter().flat_map(operands).collect();
    for r in runs.iter().filter(|r| r.status != RunStatus::Complete) {
        notes.push(format!(
            "note: run {} ('{text}') is {}: its statistics cover what was recorded",
            r.id, r.status
        ));
    }
    Ok(runs)
}

/// `watch:SERIES[@FROM..TO]`: the hours of a watch series' period as operands.
fn watch_group(
    store: &Store,
    spec: &str,
    notes: &mut Vec<String>,
) -> Result<Vec<RunData>, UsageError> {
    let (name, period) = match spec.rsplit_once('@') {
        Some((name, p)) => {
            let (from, to) = p.split_once("..").ok_or_else(|| {
                UsageError::new(format!("watch:{}: expected SERIES@FROM..TO", escape(spec)))
                    .hint("e.g. watch:board-7@2026-11-01..2026-11-15 (either end may be left out)")
            })?;
            let opt = |t: &str| (!t.is_empty()).then(|| t.to_string());
            (
                name,
                series::period(opt(from).as_deref(), opt(to).as_deref())?,
            )
        }
        None => (spec, None),
    };
    let found = series::series(store, name)?;
    let rows = series::rows(store, &found, period)?;
    let runs = super::watch::operands(&found.name, &rows);
    if runs.is_empty() {
        return Err(
            UsageError::new(format!("watch:{}: no window in the period", escape(spec)))
                .hint("widen the period; `rtscope report --watch` shows what the series holds"),
        );
    }
    let days = super::watch::days(&runs);
    if days > 0 {
        notes.push(format!(
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
