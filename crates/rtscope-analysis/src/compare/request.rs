//! `rtscope compare` as one call: a typed [`Request`] (what the flags say, already parsed)
//! against a store gives an [`Outcome`] — the [`Comparison`], the notes for people (groups
//! read, explanation summaries left out, a `--rows` with no matrix) and the exit status as
//! data. The command line only lowers its flags into the request and prints the outcome.

use super::analysis::Comparison;
use super::functions::RunStacks;
use super::load;
use super::model::Stat;
use super::verdict::Thresholds;
use rtscope_common::error::{ExitStatus, UsageError};
use rtscope_store::Store;

/// What to compare and how.
#[derive(Debug, Clone)]
pub struct Request {
    /// The groups' selectors, the baseline first (`RUN`, `A-B`, `tag:k=v`, …).
    pub selectors: Vec<String>,
    /// The statistics; `None`: the groups' defaults (noise's own for noise runs).
    pub stats: Option<Vec<Stat>>,
    /// The verdict thresholds.
    pub thresholds: Thresholds,
    /// The statistic the load-case matrix shows.
    pub matrix_stat: Stat,
    /// The tag key of the matrix's rows (`None`: one row per group).
    pub rows: Option<String>,
    /// `--tail-level P`: the tail row at P, with the stationarity assumption or not.
    pub tail: Option<(f64, bool)>,
    /// `--no-fail`: a regression does not make the exit status 1.
    pub no_fail: bool,
}

/// The comparison, what to tell people about how it was made, and the exit status.
#[derive(Debug)]
pub struct Outcome {
    /// The comparison.
    pub comparison: Comparison,
    /// Notes for standard error, in order.
    pub notes: Vec<String>,
    /// 1 (`LimitExceeded`) when a candidate regressed and `no_fail` was not asked, else 0.
    pub status: ExitStatus,
}

/// Compares the groups `r` selects in `store`.
pub fn run(store: &Store, r: &Request) -> Result<Outcome, UsageError> {
    let loaded = load::groups(store, &r.selectors)?;
    let mut notes = loaded.notes;
    let stats = load::stats_for(&loaded.groups, r.stats.clone())?;
    let mut c = Comparison::new(
        loaded.groups,
        &stats,
        r.thresholds.clone(),
        r.matrix_stat,
        r.rows.as_deref(),
    );
    if let Some((p, stationary)) = r.tail {
        c = c
            .with_tail_level(p, stationary)
            .with_tail_envelopes(store)
            .map_err(|e| {
                let hint = e.hint();
                UsageError::from_error(e).hint(hint)
            })?;
    }
    let stacks = load::stacks(store, &c.groups)?;
    let mut unreadable: Vec<_> = stacks
        .iter()
        .filter_map(|(id, s)| match s {
            RunStacks::Unreadable(why) => Some((id, why)),
            _ => None,
        })
        .collect();
    unreadable.sort();
    notes.extend(unreadable.into_iter().map(|(id, why)| {
        format!(
            "note: run {id}: its explanation summary is unreadable ({}): left out of the kernel functions",
            rtscope_core::text::escape(why)
        )
    }));
    c = c.with_functions(&stacks);
    if let (Some(key), None) = (&r.rows, &c.matrix) {
        notes.push(format!("note: --rows {key}: no load-case matrix, as no run has a `case` tag or a campaign load case"));
    }
    let status = if c.regressions() > 0 && !r.no_fail {
        ExitStatus::LimitExceeded
    } else {
        ExitStatus::Success
    };
    Ok(Outcome {
        comparison: c,
        notes,
        status,
    })
}
