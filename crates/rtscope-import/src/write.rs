//! Writing one imported source as a complete run of the store (kind `import`, or the kind the
//! parser names: `noise` for oslat).

use super::model::Imported;
use rtscope_core::civil::rfc3339;
use rtscope_store::{Checkpoint, NewRun, RunId, Store, StoreError, ThreadRow};
use rtscope_store::{RunKind, RunStatus};
use serde_json::{json, Map, Value};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// What the importer adds to a parsed source.
pub struct RunMeta<'a> {
    /// The `--format` name.
    pub format: &'static str,
    /// The source's path (absolute when it resolves).
    pub path: String,
    /// `--label`, else the file name.
    pub label: Option<String>,
    /// `--tag` pairs.
    pub tags: &'a [(String, String)],
    /// The `rtscope import` command line as a JSON array.
    pub command_line_json: &'a str,
    /// Start, ns since the Unix epoch.
    pub started_ns: i64,
    /// End, ns since the Unix epoch.
    pub ended_ns: i64,
    /// Where the start time came from.
    pub start_from: &'static str,
}

/// A time in ns since the Unix epoch (before it: the epoch).
pub fn system_time(ns: i64) -> SystemTime {
    UNIX_EPOCH + Duration::from_nanos(u64::try_from(ns).unwrap_or(0))
}

/// `config`: `{"source": {"format", "path", "start_time_from", …the parser's facts}}`.
fn config(imp: &Imported, m: &RunMeta) -> String {
    let mut source = Map::new();
    source.insert("format".into(), json!(m.format));
    source.insert("path".into(), json!(m.path));
    source.insert("start_time_from".into(), json!(m.start_from));
    for (k, v) in &imp.source {
        source.insert(k.clone(), v.clone());
    }
    if !imp.notes.is_empty() {
        source.insert("notes".into(), json!(imp.notes));
    }
    json!({ "source": Value::Object(source) }).to_string()
}

/// Records `imp` as a complete run and returns its id.
pub fn write(store: &mut Store, imp: &Imported, m: &RunMeta) -> Result<RunId, StoreError> {
    let threads = imp.threads.iter().map(ThreadRow::info).collect();
    let new = NewRun {
        kind: imp.kind.unwrap_or(RunKind::Import),
        label: m.label.clone(),
        tags: m.tags.to_vec(),
        started: rfc3339(system_time(m.started_ns)),
        started_unix_ns: m.started_ns,
        pid: std::process::id(),
        tool_version: env!("CARGO_PKG_VERSION").into(),
        command_line_json: m.command_line_json.to_string(),
        config_json: config(imp, m),
        environment: imp.environment.clone(),
        threads,
    };
    let id = store.begin_run(&new)?;
    let cp = Checkpoint {
        progress_ns: imp.progress_ns,
        at_unix_ns: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as i64),
        threads: imp.threads.iter().map(ThreadRow::stats).collect(),
        series: imp.series.clone(),
        ..Checkpoint::default()
    };
    let ended = rfc3339(system_time(m.ended_ns));
    if let Err(e) = store.finish_run(id, &cp, RunStatus::Complete, &ended, 0) {
        // A half-written import is worth nothing: leave no run behind.
        let _ = store.delete_run(id);
        return Err(e);
    }
    Ok(id)
}
