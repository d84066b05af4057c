//! `rtscope runs`: list, show, tag and delete recorded runs.

use crate::cli::runs::{RunsAction, RunsArgs};
use crate::commands::runs_explain;
use rtscope_common::error::{ExitStatus, UsageError};
use rtscope_present::runs::{
    detail_json, detail_text, list_text, summary_json, watch_text, Extras,
};
use rtscope_store::{RunId, Store};
use serde_json::Value;
use std::io::Write;

/// Runs `rtscope runs …`.
pub fn run(a: &RunsArgs, out: &mut dyn Write) -> anyhow::Result<ExitStatus> {
    if let Some(RunsAction::Merge { other, tags }) = &a.action {
        return crate::commands::merge::run(a.db.as_deref(), other, tags, out);
    }
    let mut store = super::open_db(a.db.as_deref())?;
    match a.action.clone().unwrap_or(RunsAction::List) {
        RunsAction::List => list(&store, a.json, out)?,
        RunsAction::Show { run } => show(&store, &run, a.json, out)?,
        RunsAction::Explain { run, folded } => {
            let id = resolve(&store, &run)?;
            match folded {
                true => runs_explain::folded(&store, id, out)?,
                false => runs_explain::run(&store, id, a.json, out)?,
            }
        }
        RunsAction::Tag { run, tags, remove } => {
            tag(&mut store, &run, &tags, &remove, a.json, out)?
        }
        RunsAction::Delete { runs } => {
            let ids = runs
                .iter()
                .map(|r| resolve(&store, r))
                .collect::<Result<Vec<_>, _>>()?;
            for id in ids {
                store.delete_run(id).map_err(store_err)?;
                writeln!(out, "deleted run {id}")?;
            }
        }
        // Handled before the database is opened (it may not exist yet).
        RunsAction::Merge { .. } => {}
    }
    Ok(ExitStatus::Success)
}

/// The store's error with its hint (a read-only database refused by `runs tag` said how to go
/// on no more than that it was read-only).
fn store_err(e: rtscope_store::StoreError) -> UsageError {
    let hint = e.hint();
    UsageError::from_error(e).hint(hint)
}

/// `runs` / `runs list`: the runs, then the watch series (text), or one JSON array.
fn list(store: &Store, json: bool, out: &mut dyn Write) -> anyhow::Result<()> {
    let runs = store.list_runs().map_err(store_err)?;
    if json {
        let all = Value::Array(runs.iter().map(summary_json).collect());
        writeln!(out, "{}", serde_json::to_string_pretty(&all)?)?;
        return Ok(());
    }
    out.write_all(list_text(&runs).as_bytes())?;
    let series = store.watch_series().map_err(store_err)?;
    if !series.is_empty() {
        out.write_all(watch_text(&series).as_bytes())?;
    }
    Ok(())
}

/// `runs show RUN`: the run's detail, its extras and its explanation.
fn show(store: &Store, run: &str, json: bool, out: &mut dyn Write) -> anyhow::Result<()> {
    let id = resolve(store, run)?;
    let d = store.run(id).map_err(store_err)?;
    let x = Extras::read(store, id).map_err(store_err)?;
    if json {
        let mut v = detail_json(&d);
        x.add_json(&mut v);
        crate::commands::merge::add_identity(store, id, &mut v).map_err(store_err)?;
        if let (Some(obj), Some((s, _))) = (v.as_object_mut(), runs_explain::load(store, id)?) {
            obj.insert("explain".into(), serde_json::to_value(&s)?);
        }
        writeln!(out, "{}", serde_json::to_string_pretty(&v)?)?;
        return Ok(());
    }
    out.write_all(detail_text(&d).as_bytes())?;
    out.write_all(rtscope_core::text::escape_lines(&x.text()).as_bytes())?;
    let explained = runs_explain::section(store, id)?;
    out.write_all(rtscope_core::text::escape_lines(&explained).as_bytes())?;
    Ok(())
}

/// `runs tag RUN KEY=VALUE… [--remove KEY…]`: every tag checked before any is set, so a bad
/// one changes nothing.
fn tag(
    store: &mut Store,
    run: &str,
    tags: &[String],
    remove: &[String],
    json: bool,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let id = resolve(store, run)?;
    let set = tags
        .iter()
        .map(|t| rtscope_common::names::parse_user_tag(t))
        .collect::<Result<Vec<_>, _>>()?;
    for (k, v) in &set {
        store.set_tag(id, k, Some(v)).map_err(store_err)?;
    }
    for k in remove {
        store.set_tag(id, k, None).map_err(store_err)?;
    }
    let now = store.summary(id).map_err(store_err)?.tags;
    tagged(out, id, &set, remove, &now, json)
}

/// What `runs tag` did: the tags set and removed, and the run's tags now (text escaped for
/// the terminal; `--json`: one object).
fn tagged(
    out: &mut dyn Write,
    id: RunId,
    set: &[(String, String)],
    removed: &[String],
    now: &[(String, String)],
    json: bool,
) -> anyhow::Result<()> {
    if json {
        let pairs = |t: &[(String, String)]| {
            Value::Object(
                t.iter()
                    .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                    .collect(),
            )
        };
        let v = serde_json::json!({
            "run": id,
            "set": pairs(set),
            "removed": removed,
            "tags": pairs(now),
        });
        writeln!(out, "{}", serde_json::to_string_pretty(&v)?)?;
        return Ok(());
    }
    let esc = |s: &str| rtscope_core::text::escape(s).into_owned();
    let list = |t: &[(String, String)]| {
        t.iter()
            .map(|(k, v)| format!("{}={}", esc(k), esc(v)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut did = Vec::new();
    if !set.is_empty() {
        did.push(format!("set {}", list(set)));
    }
    if !removed.is_empty() {
        let keys: Vec<String> = removed.iter().map(|k| esc(k)).collect();
        did.push(format!("removed {}", keys.join(", ")));
    }
    if did.is_empty() {
        did.push("nothing to change".into());
    }
    let tags = match now.is_empty() {
        true => "none".to_string(),
        false => list(now),
    };
    writeln!(out, "run {id}: {}; its tags now: {tags}", did.join("; "))?;
    Ok(())
}

/// A run given as an id or `last`.
pub fn resolve(store: &Store, text: &str) -> Result<RunId, UsageError> {
    let id = if text == "last" {
        store
            .last_run()
            .map_err(UsageError::from_error)?
            .ok_or_else(|| UsageError::new("the database holds no run yet"))?
    } else {
        text.parse().map_err(|_| {
            UsageError::new(format!(
                "'{text}' is not a run: give a run id (see `rtscope runs`) or 'last'"
            ))
        })?
    };
    store
        .summary(id)
        .map(|_| id)
        .map_err(|e| UsageError::from_error(e).hint("`rtscope runs` lists the runs"))
}
