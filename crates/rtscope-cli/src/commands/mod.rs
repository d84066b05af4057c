//! One file per subcommand: each turns its clap arguments into a library call and prints.

pub mod check;
pub mod compare;
pub mod cyclictest;
pub mod export;
pub mod fleet;
pub mod import;
pub mod load;
pub mod measure;
pub mod merge;
pub mod noise;
pub mod noise_hwlat;
pub mod report;
pub mod report_watch;
pub mod respond;
pub mod run;
pub mod runs;
pub mod runs_explain;
pub mod tail;
pub mod watch;

use rtscope_common::error::UsageError;
use rtscope_core::Nanos;

/// A duration option's value (a bare number is in `unit`), its error naming the `flag`.
pub(crate) fn dur(text: &str, flag: &str, unit: &str) -> Result<Nanos, UsageError> {
    Nanos::parse_with_default_unit(text, unit)
        .map_err(|e| UsageError::new(format!("invalid value for '{flag}': {e}")))
}

/// [`dur`] of an option that may be absent.
pub(crate) fn opt_dur(
    text: Option<&str>,
    flag: &str,
    unit: &str,
) -> Result<Option<Nanos>, UsageError> {
    text.map(|t| dur(t, flag, unit)).transpose()
}

/// The exit status of a run once its end is recorded: the record's line printed, or warned
/// with exit 2 when the record failed (`noise`, `respond`).
pub(crate) fn recorded(
    rec: rtscope_session::RecordOutcome,
    status: rtscope_common::error::ExitStatus,
    out: &mut dyn std::io::Write,
) -> rtscope_common::error::ExitStatus {
    match rec.line {
        Some(line) if rec.failed => {
            rtscope_common::error::warn(&line);
            rtscope_common::error::ExitStatus::Usage
        }
        Some(line) => {
            let _ = writeln!(out, "{line}");
            let _ = out.flush();
            status
        }
        None => status,
    }
}

/// Prints a run's text on stdout, or as a warning on stderr where its JSON document
/// (`--json -`) takes stdout (`noise`, `respond`).
pub(crate) fn print_text(
    text: &str,
    json: Option<&rtscope_session::output::OutputFile>,
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    if json.is_some_and(|f| f.is_stdout()) {
        rtscope_common::error::warn(text.trim_end());
        return Ok(());
    }
    out.write_all(text.as_bytes())?;
    out.flush()
}

/// Opens the run database of a command that only reads it (`--db PATH`, else the default):
/// rtscope-store's `Store::open_existing`, its error a usage error with the store's hint.
pub(crate) fn open_db(
    db: Option<&std::path::Path>,
) -> Result<rtscope_store::Store, rtscope_common::error::UsageError> {
    rtscope_store::Store::open_existing(db).map_err(|e| {
        let hint = e.hint();
        rtscope_common::error::UsageError::from_error(e).hint(hint)
    })
}
