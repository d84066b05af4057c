//! `rtscope runs explain RUN` and the explanation section of `rtscope runs show`: why the worst
//! wake-ups of a run recorded with `--explain` were late (docs/explain.md).

use rtscope_session::UsageError;
use rtscope_store::{RunId, Store};
use rtscope_trace::book::ExplainSummary;
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

/// The section of `runs show` (empty when the run was not explained).
pub fn section(store: &Store, id: RunId) -> Result<String, UsageError> {
    Ok(load(store, id)?.map_or_else(String::new, |(s, start)| {
        format!("\n{}", rtscope_trace::render::summary(&s, start, 5))
    }))
}

/// `rtscope runs explain RUN [--json]`.
pub fn run(store: &Store, id: RunId, json: bool, out: &mut dyn Write) -> anyhow::Result<()> {
    match load(store, id)? {
        Some((s, _)) if json => writeln!(out, "{}", serde_json::to_string_pretty(&s)?)?,
        Some((s, start)) => {
            out.write_all(rtscope_trace::render::summary(&s, start, 50).as_bytes())?
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
