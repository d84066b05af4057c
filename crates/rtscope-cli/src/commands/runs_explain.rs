//! `rtscope runs explain RUN` and the explanation section of `rtscope runs show`: why the worst
//! wake-ups of a run recorded with `--explain` were late (docs/explain.md).

use rtscope_common::error::UsageError;
use rtscope_explain::book::ExplainSummary;
use rtscope_explain::render::{summary_of, Subject};
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

/// `rtscope runs explain RUN [--json]`.
pub fn run(store: &Store, id: RunId, json: bool, out: &mut dyn Write) -> anyhow::Result<()> {
    match load(store, id)? {
        Some((s, _)) if json => writeln!(out, "{}", serde_json::to_string_pretty(&s)?)?,
        Some((s, start)) => {
            let what = subject(store, id);
            out.write_all(summary_of(&s, start, 50, what).as_bytes())?
        }
        None => {
            return Err(UsageError::new(format!(
            "run {id} was not recorded with --explain\n\nhint: rtscope measure --explain 100us …"
        ))
            .into())
        }
    }
    Ok(())
}
