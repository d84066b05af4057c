//! `measure --ci-output`: the run reported to CI even without a database.

use crate::commands::fleet;
use rtscope_common::error::{ExitStatus, UsageError};
use std::io::Write;

/// `measure --ci-output` (with [`fleet::with_ci`]). With `--no-db` the run is still reported: it is
/// recorded in a private temporary database that only the CI outputs read, removed after.
pub fn measure_with_ci(
    a: &crate::cli::measure::MeasureArgs,
    argv: &[String],
    out: &mut dyn Write,
) -> anyhow::Result<ExitStatus> {
    if !a.rec.no_db || a.ci_output.is_empty() {
        return fleet::with_ci(&a.ci_output, a.rec.db.as_deref(), out, |o, missing| {
            super::run(a, argv.to_vec(), o, missing)
        });
    }
    fleet::check_ci_outputs(&a.ci_output)?;
    let dir = scratch_dir().map_err(|e| {
        UsageError::from_error(e).hint("--no-db with --ci-output needs a writable $TMPDIR")
    })?;
    let db = dir.join("ci.db");
    let mut recorded = a.clone();
    recorded.rec.no_db = false;
    recorded.rec.db = Some(db.clone());
    let status = fleet::with_ci(&a.ci_output, Some(&db), out, |o, missing| {
        super::run(&recorded, argv.to_vec(), o, missing)
    });
    let _ = std::fs::remove_dir_all(&dir);
    rtscope_common::error::warn("rtscope: --no-db: the run was kept only for --ci-output, in a temporary database now removed");
    status
}

/// A new private directory (mode 0700, never an existing one) in the temp directory.
fn scratch_dir() -> std::io::Result<std::path::PathBuf> {
    use std::os::unix::fs::DirBuilderExt;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let dir = std::env::temp_dir().join(format!("rtscope-ci-{}-{nanos}", std::process::id()));
    std::fs::DirBuilder::new().mode(0o700).create(&dir)?;
    Ok(dir)
}
