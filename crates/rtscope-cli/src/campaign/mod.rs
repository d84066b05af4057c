//! `rtscope run`: campaigns — scenarios × load cases × repeats, with loads and monitors.
//!
//! * `file`: the TOML format as written (docs/campaigns.md), every key checked;
//! * [`expand`]: the file plus command-line overrides become a [`Campaign`] of
//!   [`PlannedRun`]s, each with a [`rtscope_engine::RunConfig`] built by `measure::plan`;
//! * [`presets`]: `quick`, `scenarios`, `loadcases`, `osadl` (the files in examples/);
//! * [`dryrun`]: `--dry-run`'s matrix; `runner`: the execution.

pub mod dryrun;
pub mod expand;
mod file;
pub mod loads;
mod one_run;
mod pos;
pub mod presets;
mod progress;
mod runner;
#[cfg(test)]
mod tests;

pub use expand::{estimate, load, Campaign, PlannedRun};

use crate::exit::ExitStatus;
use clap::Args;
use std::io::Write;
use std::path::PathBuf;

/// Options of `rtscope run`.
#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// The campaign file (TOML); see examples/ and docs/campaigns.md
    #[arg(value_name = "CAMPAIGN.toml", conflicts_with = "preset")]
    pub file: Option<PathBuf>,
    /// A built-in campaign instead of a file: quick, scenarios, loadcases or osadl
    #[arg(long, value_name = "NAME")]
    pub preset: Option<String>,
    /// Print the run matrix, the total time and what each run starts, then exit
    #[arg(long)]
    pub dry_run: bool,
    /// Continue the last interrupted run of this campaign with the runs not yet done
    #[arg(long)]
    pub resume: bool,
    /// Measure each run for this long instead of the campaign's length (e.g. 5s, 10m)
    #[arg(long, value_name = "DURATION", conflicts_with = "loops")]
    pub duration: Option<String>,
    /// Measure each run for this many loops instead of the campaign's length
    #[arg(long, value_name = "N")]
    pub loops: Option<u64>,
    /// Repeat each scenario × load case this many times instead of the campaign's repeats
    #[arg(long, value_name = "N")]
    pub repeats: Option<u32>,
    /// Name the campaign (default: the file's `name`, or the preset's)
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// Tag every run KEY=VALUE (repeatable), on top of the campaign's tags
    #[arg(long = "tag", value_name = "KEY=VALUE")]
    pub tags: Vec<String>,
    /// Sample the system monitors this often (0 turns them off)
    #[arg(long, value_name = "DURATION", default_value = "1s")]
    pub monitor_interval: String,
    /// The run database [default: $RTSCOPE_DB, else ./rtscope.db]
    #[arg(long, value_name = "PATH")]
    pub db: Option<PathBuf>,
    /// No progress display
    #[arg(long, short)]
    pub quiet: bool,
}

/// Runs `rtscope run`.
pub fn run(a: &RunArgs, argv: &[String], out: &mut dyn Write) -> anyhow::Result<ExitStatus> {
    let c = load(a, &rtscope_engine::sys::online_cpus())?;
    if a.dry_run {
        write!(out, "{}", dryrun::render(&c))?;
        return Ok(ExitStatus::Success);
    }
    runner::execute(c, a, argv, out)
}
