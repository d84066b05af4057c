//! Glue to rtscope-fleet: `export -f prometheus|lava|kcidb|junit`, `measure --metrics-file`,
//! `--target` of `measure`, `run` and `check`, and `--ci-output` of `measure` and `run`.

use crate::cli::fleet::FleetArgs;
use crate::cli::import_export::{ExportArgs, ExportFormat};
use rtscope_analysis::compare::analysis::Comparison;
use rtscope_common::error::{ExitStatus, UsageError};
use rtscope_fleet::fanout;
use rtscope_fleet::remote::Ssh;
use rtscope_formats::kcidb;
use rtscope_formats::missing::MissingBoard;
use rtscope_formats::output::{self, CiOutput, Format};
use rtscope_session::record;
use rtscope_store::{RunId, Store};
use std::io::Write;
use std::path::Path;

fn usage(e: impl std::fmt::Display) -> UsageError {
    UsageError::new(e.to_string())
}

/// Writes run `id` in the fleet format `f` into `a.output`, printing `wrote PATH`.
pub fn export(
    f: ExportFormat,
    a: &ExportArgs,
    store: &Store,
    id: RunId,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let format = match f {
        ExportFormat::Prometheus => Format::Prometheus,
        ExportFormat::Lava => Format::Lava,
        ExportFormat::Kcidb => Format::Kcidb,
        _ => Format::Junit,
    };
    let sub = kcidb::Submission {
        origin: a.kcidb_origin.clone(),
        build_id: a.kcidb_build_id.clone(),
        ..kcidb::Submission::default()
    };
    let extra = output::parse_limits(&a.limits).map_err(usage)?;
    let path = output::export(format, store, id, &a.output, &extra, &sub)
        .map_err(|e| usage(e).hint("pass -o DIR with a writable directory"))?;
    writeln!(out, "wrote {}", path.display())?;
    Ok(())
}

/// `--target`: the command line `argv` on the boards; `file` (a campaign) is copied there;
/// `record`: their runs are fetched and merged into `db`. The boards that recorded no run are
/// added to `missing` (for `--ci-output`).
pub fn remote(
    f: &FleetArgs,
    argv: &[String],
    file: Option<&Path>,
    db: Option<&Path>,
    out: &mut dyn Write,
    missing: &mut Vec<MissingBoard>,
) -> anyhow::Result<ExitStatus> {
    let (targets, job) = fanout::plan(f.targets_file.as_deref(), &f.targets, argv, file)?;
    let record = job.record;
    let mut store = record.then(|| record::open_given(db)).transpose()?;
    let bare = !record && targets.len() == 1;
    let results = fanout::fan_out(
        &Ssh::from_env(),
        &targets,
        &job,
        fanout::jobs(f.target_jobs, targets.len()),
        bare,
        out,
        &mut std::io::stderr(),
    )?;
    let merged = fanout::merge(store.as_mut(), results, out, &mut std::io::stderr())?;
    missing.extend(merged.missing);
    Ok(merged.status)
}

/// Parses and checks `--ci-output` options before anything runs.
pub fn check_ci_outputs(outs: &[String]) -> Result<(), UsageError> {
    ci_outputs(outs).map(drop)
}

fn ci_outputs(outs: &[String]) -> Result<Vec<CiOutput>, UsageError> {
    output::parse_outputs(outs).map_err(usage)
}

/// `compare --ci-output FORMAT=FILE`: the verdicts of `c`.
pub fn compare_ci(outs: &[String], c: &Comparison, out: &mut dyn Write) -> anyhow::Result<()> {
    let sub = kcidb::Submission::default();
    let cases = rtscope_analysis::compare::ci::cases(c);
    for p in output::write_compare(&cases, &ci_outputs(outs)?, out, &sub).map_err(usage)? {
        rtscope_common::error::warn(&format!("rtscope: wrote {}", p.display()));
    }
    Ok(())
}

/// `--ci-output FORMAT=FILE`: `body` runs, then the runs it recorded into `db` are written,
/// and the boards it ran on that recorded no run (which `body` adds to its second argument)
/// as failed cases. When a CI output goes to standard output (`FORMAT=-`), `body`'s own text
/// (the table, the boards' `[BOARD] …` lines) goes to stderr, so stdout is the document alone.
pub fn with_ci(
    outs: &[String],
    db: Option<&Path>,
    out: &mut dyn Write,
    body: impl FnOnce(&mut dyn Write, &mut Vec<MissingBoard>) -> anyhow::Result<ExitStatus>,
) -> anyhow::Result<ExitStatus> {
    let mut missing = Vec::new();
    if outs.is_empty() {
        return body(out, &mut missing);
    }
    let outs = ci_outputs(outs)?;
    let mark = output::mark(&record::open_given(db)?).map_err(usage)?;
    let status = if outs.iter().any(|o| o.path.is_none()) {
        body(&mut std::io::stderr(), &mut missing)?
    } else {
        body(out, &mut missing)?
    };
    let store = record::open_given(db)?;
    let sub = kcidb::Submission::default();
    for p in output::write_ci(&store, mark, &missing, &outs, out, &sub).map_err(usage)? {
        rtscope_common::error::warn(&format!("rtscope: wrote {}", p.display()));
    }
    Ok(status)
}
