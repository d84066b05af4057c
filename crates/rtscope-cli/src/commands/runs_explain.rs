//! `rtscope runs explain RUN` and the explanation section of `rtscope runs show`: why the worst
//! wake-ups of a run recorded with `--explain` were late (docs/explain.md); `--folded`: its
//! spikes' kernel stacks for flamegraph.pl and inferno.

use rtscope_common::error::UsageError;
use rtscope_explain::book::{ExplainSummary, Explained};
use rtscope_explain::render::{summary_of, Subject};
use rtscope_explain::tally::folded_weights;
use rtscope_store::{RunId, Store};
use std::io::Write;

/// The stored explanation of a run and the run's clock start (ns), if it was explained.
pub fn load(store: &Store, id: RunId) -> Result<Option<(ExplainSummary, u64)>, UsageError> {
    let Some(row) = store.spike_summary(id).map_err(UsageError::from_error)? else {
        return Ok(None);
    };
    let s: ExplainSummary = serde_json::from_str(&row.summary)
        .map_err(|e| UsageError::new(format!("run {id}: unreadable spike summary: {e}")))?;
    Ok(Some((s, row.clock_start_ns)))
}

/// What the run's explanation is about: a noise run's gaps, else late wake-ups.
fn subject(store: &Store, id: RunId) -> Subject {
    match store.summary(id) {
        Ok(s) if s.kind == rtscope_store::RunKind::Noise => Subject::Gaps,
        _ => Subject::WakeUps,
    }
}

/// The section of `runs show` (empty when the run was not explained).
pub fn section(store: &Store, id: RunId) -> Result<String, UsageError> {
    let what = subject(store, id);
    Ok(load(store, id)?.map_or_else(String::new, |(s, start)| {
        format!("\n{}", summary_of(&s, start, 5, what))
    }))
}

/// `rtscope runs explain RUN --folded`: the folded stacks of every traced spike with a
/// kernel stack (`rtscope_explain::folded`), root first, weighted by charged nanoseconds; a
/// run recorded before they were kept gives its kept spikes', saying so on stderr.
pub fn folded(store: &Store, id: RunId, out: &mut dyn Write) -> anyhow::Result<()> {
    let Some((s, _)) = load(store, id)? else {
        return Err(not_explained(id).into());
    };
    let stacks = match s.stacks.is_empty() {
        false => s.stacks,
        true => {
            let kept: Vec<_> = s
                .worst
                .iter()
                .filter_map(|e| match e {
                    Explained::Traced(a) => Some(a),
                    Explained::Coarse(_) => None,
                })
                .collect();
            let f = folded_weights(kept);
            if !f.is_empty() {
                rtscope_common::error::warn(&format!(
                    "rtscope: run {id} was recorded before every spike's stack was kept: the kept spikes' stacks only"
                ));
            }
            f
        }
    };
    if stacks.is_empty() {
        return Err(UsageError::new(format!(
            "run {id} has no kernel stacks\n\nhint: rtscope measure --explain 100us --explain-stacks auto …"
        ))
        .into());
    }
    out.write_all(rtscope_explain::folded::text(&stacks).as_bytes())?;
    Ok(())
}

fn not_explained(id: RunId) -> UsageError {
    UsageError::new(format!(
        "run {id} was not recorded with --explain\n\nhint: rtscope measure --explain 100us …"
    ))
}

/// `rtscope runs explain RUN [--json]`.
pub fn run(store: &Store, id: RunId, json: bool, out: &mut dyn Write) -> anyhow::Result<()> {
    match load(store, id)? {
        Some((s, _)) if json => writeln!(out, "{}", serde_json::to_string_pretty(&s)?)?,
        Some((s, start)) => {
            let what = subject(store, id);
            out.write_all(summary_of(&s, start, 50, what).as_bytes())?
        }
        None => return Err(not_explained(id).into()),
    }
    Ok(())
}
