//! `rtscope runs merge OTHER.db`: the runs of another database (a board's, a colleague's)
//! imported into this one by UUID (rtscope-store's `merge_from`).

use rtscope_common::error::{ExitStatus, UsageError};
use rtscope_common::names::parse_user_tag;
use rtscope_session::record;
use rtscope_store::{RunId, Store, StoreError};
use serde_json::{json, Value};
use std::io::Write;
use std::path::Path;

/// Runs `rtscope runs merge`. The database merged into is created if needed.
pub fn run(
    db: Option<&Path>,
    other: &Path,
    tags: &[String],
    out: &mut dyn Write,
) -> anyhow::Result<ExitStatus> {
    let tags = tags
        .iter()
        .map(|t| parse_user_tag(t))
        .collect::<Result<Vec<_>, _>>()?;
    let mut store = record::open_given(db)?;
    let report = store.merge_from(other, &tags).map_err(|e| {
        let hint = match &e {
            StoreError::UuidConflict { .. } => {
                "the two databases hold different runs under one UUID (a copied and edited database?); merge into a new database, or delete one of the runs"
            }
            _ => "pass the path of an rtscope database written by `rtscope measure`, `run` or `runs merge`",
        };
        UsageError::from_error(e).hint(hint)
    })?;
    for (here, there, uuid) in &report.added {
        writeln!(out, "run {there} → run {here} ({uuid})")?;
    }
    writeln!(
        out,
        "merged {}: {} run(s) added, {} already here, {} campaign(s) added",
        other.display(),
        report.added.len(),
        report.skipped,
        report.campaigns_added
    )?;
    Ok(ExitStatus::Success)
}

/// Adds `uuid`, `host`, `machine_id` and `board_model` to `runs show --json`.
pub fn add_identity(store: &Store, id: RunId, v: &mut Value) -> Result<(), StoreError> {
    let i = store.identity(id)?;
    if let Value::Object(m) = v {
        m.insert("uuid".into(), json!(i.uuid));
        m.insert("host".into(), json!(i.host));
        m.insert("machine_id".into(), json!(i.machine_id));
        m.insert("board_model".into(), json!(i.board_model));
    }
    Ok(())
}
