//! `rtscope run`: campaigns — scenarios × load cases × repeats, with loads and monitors.
//!
//! * `file`: the TOML format as written (docs/campaigns.md), every key checked;
//! * [`expand`]: the file plus command-line overrides become an [`expand::Campaign`] of
//!   [`expand::PlannedRun`]s, each with a [`rtscope_session::plan::RunPlan`] checked as `rtscope measure` checks its options;
//! * [`presets`]: `quick`, `scenarios`, `loadcases`, `osadl` (the files in examples/);
//! * [`dryrun`]: `--dry-run`'s matrix; `runner` and `one_run`: the execution, each run a
//!   [`rtscope_session::Session`] with its loads around it.
//!
//! Depends on session, load, store and engine; never on clap or the CLI.

#![warn(missing_docs)]

pub mod dryrun;
pub mod expand;
mod file;
mod load_wait;
pub mod loads;
mod one_run;
mod pos;
pub mod presets;
mod progress;
mod runner;
#[cfg(test)]
mod tests;
pub mod until_tail;
#[cfg(test)]
mod until_tail_tests;

use expand::load;

use rtscope_common::error::{ExitStatus, UsageError};
use rtscope_session::{record, RunError};
use rtscope_store::RunStatus;
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

/// What `rtscope run` is asked to do (the command line, parsed; no clap here).
#[derive(Debug, Clone, Default)]
pub struct CampaignOptions {
    /// The campaign file (TOML).
    pub file: Option<PathBuf>,
    /// A built-in campaign instead of a file: quick, scenarios, loadcases or osadl.
    pub preset: Option<String>,
    /// Print the matrix, the total time and what each run starts, then stop.
    pub dry_run: bool,
    /// Continue the last interrupted run of this campaign with the runs not yet done.
    pub resume: bool,
    /// Measure each run for this long instead of the campaign's length (text as given).
    pub duration: Option<String>,
    /// Measure each run for this many loops instead of the campaign's length.
    pub loops: Option<u64>,
    /// Repeats of each scenario × load case instead of the campaign's.
    pub repeats: Option<u32>,
    /// The campaign's name instead of the file's or preset's.
    pub name: Option<String>,
    /// `KEY=VALUE` tags for every run, on top of the campaign's.
    pub tags: Vec<String>,
    /// Sample the system monitors this often (`None`: not at all).
    pub monitor_interval: Option<Duration>,
    /// The run database (`None`: `$RTSCOPE_DB`, else `./rtscope.db`).
    pub db: Option<PathBuf>,
    /// No progress display.
    pub quiet: bool,
    /// `--explain`: a threshold or `off`, instead of the campaign's (text as given).
    pub explain: Option<String>,
    /// `--explain-recorder`: where every run's flight recorder takes its events from
    /// (`None`: the tracefs instance's trace events).
    pub explain_recorder: Option<rtscope_session::explain::RecorderChoice>,
    /// `--until-tail`: `probability=P,precision=PCT%,max_duration=DUR` or `off`, instead of
    /// the campaign's `until_tail` (text as given).
    pub until_tail: Option<String>,
}

/// The command line the interrupted campaign `a --resume` would continue was started with:
/// `None` when there is none to resume (the resume itself then says why).
pub fn started_command_line(a: &CampaignOptions) -> Result<Option<Vec<String>>, RunError> {
    let c = load(a, &rtscope_engine::sys::online_cpus())?;
    let db =
        a.db.clone()
            .unwrap_or_else(rtscope_store::Store::default_path);
    if !db.exists() {
        return Ok(None);
    }
    let store = record::open(&db)?;
    let prev = store
        .campaign_by_name(&c.name)
        .map_err(UsageError::from_error)?;
    Ok(prev
        .filter(|p| p.status != RunStatus::Complete && p.status != RunStatus::Running)
        .map(|p| p.command_line))
}

/// Runs `rtscope run`.
pub fn run(
    a: &CampaignOptions,
    argv: &[String],
    out: &mut dyn Write,
) -> Result<ExitStatus, RunError> {
    let c = load(a, &rtscope_engine::sys::online_cpus())?;
    if a.dry_run {
        write!(out, "{}", dryrun::render(&c))?;
        return Ok(ExitStatus::Success);
    }
    runner::execute(c, a, argv, out)
}
