//! `rtscope import FILE…`: other tools' results as runs (rtscope-import).

use crate::cli::import_export::ImportArgs;
use rtscope_common::error::ExitStatus;
use rtscope_import::ImportOptions;
use std::io::Write;

/// Runs `rtscope import`.
pub fn run(a: &ImportArgs, out: &mut dyn Write) -> anyhow::Result<ExitStatus> {
    rtscope_common::names::check_label_and_tags(a.label.as_deref(), &a.tags)?;
    let opts = ImportOptions {
        files: a.files.clone(),
        format: a.format,
        db: a.db.clone(),
        label: a.label.clone(),
        tags: a.tags.clone(),
        json: a.json,
    };
    rtscope_import::import(&opts)?.report(out, a.json)?;
    Ok(ExitStatus::Success)
}
