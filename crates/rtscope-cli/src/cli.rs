//! The native command line (clap derive). Help, man page and completions are generated from it.
//!
//! This file holds the top level ([`Cli`], [`Command`]); each subcommand's options are in
//! `cli/<subcommand>.rs`, the groups several share in `cli/record.rs` (where a run is
//! recorded), `cli/sched.rs` (scheduling) and `cli/fleet.rs` (boards over ssh).

use clap::{Parser, Subcommand};

pub mod check;
pub mod compare;
pub mod cyclictest;
pub mod fleet;
pub mod import_export;
pub mod load;
pub mod man;
pub mod measure;
pub mod noise;
pub mod record;
pub mod report;
pub mod respond;
pub mod run;
pub mod runs;
pub mod sched;
pub mod tail;
mod values;
pub mod watch;

/// `rtscope --version`: the version, the target triple and the git commit (`unknown` when built
/// outside a git checkout), e.g. `0.1.0 (aarch64-unknown-linux-musl, commit 1a2b3c4d5e6f)`.
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (",
    env!("RTSCOPE_TARGET"),
    ", commit ",
    env!("RTSCOPE_GIT_COMMIT"),
    ")"
);

/// Timer wake-up latency for real-time Linux.
///
/// Exit codes: 0 success, 1 a limit was exceeded (or `compare` found a regression), 2 usage or
/// setup error, 3 interrupted.
#[derive(Debug, Parser)]
// `about` from the first line of this doc comment (the crate's description is rtscope-cli's).
#[command(name = "rtscope", version = VERSION, long_about = None, propagate_version = true)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
    /// Write output files where a symlink points (by default an output path that is a
    /// symlink is refused: rtscope runs as root)
    #[arg(long, global = true)]
    pub follow_symlinks: bool,
}

/// rtscope's subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Measure timer wake-up latency per CPU, with percentiles, missed periods and CI limits.
    Measure(Box<measure::MeasureArgs>),
    /// Run with cyclictest's options and output formats (drop-in replacement).
    ///
    /// Everything after `cyclictest` is parsed as cyclictest 2.x parses it; see
    /// `rtscope cyclictest --help`. Invoking rtscope through a symlink named `cyclictest` does
    /// the same.
    #[command(disable_help_flag = true)]
    Cyclictest(cyclictest::CyclictestArgs),
    /// List, show, tag and delete the runs recorded in the database.
    Runs(runs::RunsArgs),
    /// Import old results of cyclictest, jitterdebugger, stress-ng, oslat and rtla as runs.
    ///
    /// Reads cyclictest histograms (`-h`/`-H`), `-v` verbose output and `--json` files,
    /// jitterdebugger output directories, stress-ng `--cyclic` logs, oslat `--json` files and
    /// `rtla osnoise top`/`hist` text (as runs of kind `noise`); each becomes one run.
    Import(import_export::ImportArgs),
    /// Export a run's statistics, histograms, series and events as CSV, JSON or Parquet.
    Export(import_export::ExportArgs),
    /// Measure event response latency of IPC events and GPIO edges.
    ///
    /// How fast a real-time thread reacts to an IPC event (eventfd, pipe, futex, POSIX mq,
    /// signal, SysV semaphore, UNIX datagram) or to an edge on a GPIO input (docs/respond.md).
    Respond(Box<respond::RespondArgs>),
    /// Measure OS noise: the time a busy-looping CPU loses to everything else.
    ///
    /// One pinned busy loop per CPU reads the clock; every gap between two readings goes into
    /// a histogram, every gap over --threshold is kept with its start (docs/noise.md).
    Noise(Box<noise::NoiseArgs>),
    /// Run a campaign: scenarios × load cases × repeats, with loads and system monitors.
    Run(Box<run::RunArgs>),
    /// Watch latency in the field: measure for months in rolling windows, serve /metrics.
    ///
    /// Each window (default 1 min) keeps its histogram, percentiles, max, missed deadlines and
    /// worst wake-up in the database, merged into hours and days as it ages, within a disk
    /// budget; alerts go to syslog and a command (docs/watch.md).
    Watch(Box<watch::WatchArgs>),
    /// Run a load standalone: messaging, memory, cpu, io, network or an external program.
    ///
    /// For example to load a board while another tool measures; Ctrl-C stops it cleanly.
    Load(Box<load::LoadArgs>),
    /// Compare groups of runs: statistics side by side and a verdict per statistic.
    ///
    /// Groups are run ids, labels, campaigns or tags; the load-case matrix shows one statistic
    /// per group and load case; exit 1 on a regression.
    Compare(Box<compare::CompareArgs>),
    /// Make plots, tables and a self-contained report.html from recorded runs.
    Report(report::ReportArgs),
    /// Estimate the latency a run did not see: exceeded with probability 1e-9 per wake-up, say.
    ///
    /// Extreme value theory (peaks over threshold, a generalized Pareto fit) with confidence
    /// intervals and the tests that justify it, or a refusal naming the failed tests
    /// (docs/worst-case.md). A statement about this workload and configuration, not a proof.
    Tail(Box<tail::TailArgs>),
    /// Audit the system before a run: 32 checks, each with its evidence and fix.
    ///
    /// PREEMPT_RT, isolation, governor, SMT, IRQs, idle states, RT tasks, limits, thermal,
    /// VM and container; fixes are printed, never applied; exit 1 when a check is bad.
    Check(check::CheckArgs),
    /// Print a shell completion script (bash, zsh or fish).
    Completions {
        /// The shell.
        shell: man::CompletionShell,
    },
    /// Print a man page (roff): rtscope(1), or a subcommand's, e.g. `rtscope man runs show`.
    Man(man::ManArgs),
}

/// The clap command, for man page and completion generation.
pub fn command() -> clap::Command {
    <Cli as clap::CommandFactory>::command()
}

#[cfg(test)]
mod tests;
