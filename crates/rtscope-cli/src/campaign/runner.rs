//! Executes a campaign: each planned run with its loads, monitors, progress and recording.

use super::RunArgs;
use crate::exit::ExitStatus;
use std::io::Write;

/// Runs every planned run of the campaign `a` names.
pub fn execute(_a: &RunArgs, _argv: &[String], _out: &mut dyn Write) -> anyhow::Result<ExitStatus> {
    Err(crate::usage("rtscope run is not implemented yet"))
}
