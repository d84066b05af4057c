//! Executes a campaign: each planned run with its loads, monitors, progress and recording.

use super::{Campaign, RunArgs};
use crate::exit::ExitStatus;
use std::io::Write;

/// Runs every planned run of the campaign `c` (read from what `a` names).
pub fn execute(
    _c: Campaign,
    _a: &RunArgs,
    _argv: &[String],
    _out: &mut dyn Write,
) -> anyhow::Result<ExitStatus> {
    Err(crate::usage("rtscope run is not implemented yet"))
}
