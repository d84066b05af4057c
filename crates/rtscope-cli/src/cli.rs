//! The native command line (clap derive). Help, man page and completions are generated from it.

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

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
#[command(name = "rtscope", version = VERSION, about, long_about = None, propagate_version = true)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// rtscope's subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Measure timer wake-up latency per CPU, with percentiles, missed periods and CI limits.
    Measure(Box<MeasureArgs>),
    /// Run with cyclictest's options and output formats (drop-in replacement).
    ///
    /// Everything after `cyclictest` is parsed as cyclictest 2.x parses it; see
    /// `rtscope cyclictest --help`. Invoking rtscope through a symlink named `cyclictest` does
    /// the same.
    #[command(disable_help_flag = true)]
    Cyclictest {
        /// cyclictest options.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
        args: Vec<String>,
    },
    /// List, show, tag and delete the runs recorded in the database.
    Runs(RunsArgs),
    /// Import old results (cyclictest histogram, -v or --json output, jitterdebugger
    /// directories, stress-ng --cyclic logs) as runs of the database.
    Import(ImportArgs),
    /// Export a run's statistics, histograms, series and events as CSV, JSON or Parquet.
    Export(ExportArgs),
    /// Measure event response latency: how fast a real-time thread reacts to an IPC event
    /// (eventfd, pipe, futex, POSIX mq, signal, SysV semaphore, UNIX datagram) or a GPIO edge.
    Respond(Box<crate::respond::RespondArgs>),
    /// Run a campaign: scenarios × load cases × repeats, with loads and system monitors.
    Run(Box<crate::campaign::RunArgs>),
    /// Run a load (messaging, memory, cpu, io, network or an external program) standalone,
    /// e.g. to load a board while another tool measures; Ctrl-C stops it cleanly.
    Load(Box<crate::load::LoadArgs>),
    /// Compare groups of runs (ids, labels, campaigns, tags): side-by-side statistics, the
    /// load-case matrix and a verdict per statistic; exit 1 on a regression.
    Compare(Box<crate::compare::CompareArgs>),
    /// Make plots, tables and a self-contained report.html from recorded runs.
    Report(crate::report::ReportArgs),
    /// Print a shell completion script.
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Print a man page (roff): rtscope(1), or a subcommand's, e.g. `rtscope man runs show`.
    Man(crate::manual::ManArgs),
}

/// Options of `rtscope runs`.
#[derive(Debug, Clone, Args)]
pub struct RunsArgs {
    /// The run database [default: $RTSCOPE_DB, else ./rtscope.db]
    #[arg(long, value_name = "PATH", global = true)]
    pub db: Option<PathBuf>,
    /// Print JSON instead of text
    #[arg(long, global = true)]
    pub json: bool,
    /// What to do [default: list]
    #[command(subcommand)]
    pub action: Option<RunsAction>,
}

/// Formats `rtscope import` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ImportFormat {
    /// cyclictest `-h`/`-H` histogram text (with or without empty buckets and `# Total:`).
    CyclictestHist,
    /// cyclictest `-v` verbose output (`thread:cycle:latency` lines).
    CyclictestVerbose,
    /// cyclictest `--json` output.
    CyclictestJson,
    /// A jitterdebugger output directory (results.json and samples.raw).
    Jitterdebugger,
    /// A stress-ng `--cyclic` log.
    StressNg,
}

/// Options of `rtscope import`.
#[derive(Debug, Clone, Args)]
pub struct ImportArgs {
    /// Files (or jitterdebugger directories) to import, one run each
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// The format [default: detected from the content]
    #[arg(long, value_enum)]
    pub format: Option<ImportFormat>,
    /// The run database [default: $RTSCOPE_DB, else ./rtscope.db]
    #[arg(long, value_name = "PATH")]
    pub db: Option<PathBuf>,
    /// A label for the imported runs [default: the file name]
    #[arg(long, value_name = "NAME")]
    pub label: Option<String>,
    /// A tag for the imported runs (repeatable)
    #[arg(long = "tag", value_name = "KEY=VALUE")]
    pub tags: Vec<String>,
    /// Print JSON (the new run ids) instead of text
    #[arg(long)]
    pub json: bool,
}

/// Formats `rtscope export` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ExportFormat {
    /// CSV files, one per table.
    Csv,
    /// One JSON document.
    Json,
    /// Parquet files, one per table.
    Parquet,
}

/// Options of `rtscope export`.
#[derive(Debug, Clone, Args)]
pub struct ExportArgs {
    /// Run id, or `last`
    pub run: String,
    /// Directory to write into (created if needed)
    #[arg(long, short = 'o', value_name = "DIR", default_value = ".")]
    pub output: PathBuf,
    /// Formats to write (repeatable or comma-separated)
    #[arg(
        long,
        short = 'f',
        value_enum,
        value_delimiter = ',',
        default_value = "csv,json,parquet"
    )]
    pub format: Vec<ExportFormat>,
    /// The run database [default: $RTSCOPE_DB, else ./rtscope.db]
    #[arg(long, value_name = "PATH")]
    pub db: Option<PathBuf>,
}

/// `rtscope runs` actions.
#[derive(Debug, Clone, Subcommand)]
pub enum RunsAction {
    /// List the runs, newest first
    List,
    /// Show one run in full: settings, per-thread statistics, environment
    Show {
        /// Run id, or `last`
        run: String,
    },
    /// Set or remove tags of a run
    Tag {
        /// Run id, or `last`
        run: String,
        /// KEY=VALUE tags to set
        tags: Vec<String>,
        /// Tag keys to remove
        #[arg(long, value_name = "KEY")]
        remove: Vec<String>,
    },
    /// Delete runs and everything recorded with them
    Delete {
        /// Run ids, or `last`
        #[arg(required = true)]
        runs: Vec<String>,
    },
}

/// Scheduling policy of the measuring threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PolicyArg {
    /// SCHED_FIFO.
    Fifo,
    /// SCHED_RR.
    Rr,
    /// SCHED_OTHER.
    Other,
    /// SCHED_BATCH.
    Batch,
    /// SCHED_IDLE.
    Idle,
    /// SCHED_DEADLINE (set --dl-runtime, --dl-deadline, --dl-period).
    Deadline,
}

/// Clock of the deadlines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ClockArg {
    /// CLOCK_MONOTONIC.
    Monotonic,
    /// CLOCK_REALTIME.
    Realtime,
}

/// Options of `rtscope measure`.
#[derive(Debug, Clone, Args)]
pub struct MeasureArgs {
    /// CPUs to measure, e.g. `0-3`, `1,3`, `!0` [default: all online CPUs]
    #[arg(
        long,
        short = 'c',
        value_name = "LIST",
        help_heading = "Threads and CPUs"
    )]
    pub cpus: Option<String>,
    /// Number of measuring threads, spread round-robin over the CPUs [default: one per CPU]
    #[arg(long, short = 't', value_name = "N", help_heading = "Threads and CPUs")]
    pub threads: Option<usize>,
    /// CPUs for rtscope's own non-real-time main thread (housekeeping)
    #[arg(long, value_name = "LIST", help_heading = "Threads and CPUs")]
    pub main_cpus: Option<String>,

    /// Scheduling policy
    #[arg(long, value_enum, default_value = "fifo", help_heading = "Scheduling")]
    pub policy: PolicyArg,
    /// Real-time priority (1-99) for fifo/rr; nice value for other/batch
    #[arg(
        long,
        short = 'p',
        default_value_t = 90,
        allow_negative_numbers = true,
        help_heading = "Scheduling"
    )]
    pub priority: i32,
    /// Lower the priority by one for each further thread
    #[arg(long, help_heading = "Scheduling")]
    pub priospread: bool,
    /// SCHED_DEADLINE runtime, e.g. 100us
    #[arg(long, value_name = "DUR", help_heading = "Scheduling")]
    pub dl_runtime: Option<String>,
    /// SCHED_DEADLINE relative deadline [default: the period]
    #[arg(long, value_name = "DUR", help_heading = "Scheduling")]
    pub dl_deadline: Option<String>,
    /// SCHED_DEADLINE period [default: the interval]
    #[arg(long, value_name = "DUR", help_heading = "Scheduling")]
    pub dl_period: Option<String>,

    /// Period between wake-ups (units ns, us, ms, s; a bare number is us)
    #[arg(
        long,
        short = 'i',
        value_name = "DUR",
        default_value = "1ms",
        help_heading = "Timing"
    )]
    pub interval: String,
    /// Extra interval per further thread (cyclictest's -d)
    #[arg(long, value_name = "DUR", default_value = "0", help_heading = "Timing")]
    pub distance: String,
    /// Length of the run: 30 (seconds), 500ms, 10m, 2h, 1d [default: 60s unless --loops]
    #[arg(long, short = 'D', value_name = "DUR", help_heading = "Timing")]
    pub duration: Option<String>,
    /// Wake-ups per thread (ends the run when every thread has done them)
    #[arg(long, short = 'l', value_name = "N", help_heading = "Timing")]
    pub loops: Option<u64>,
    /// Clock of the deadlines
    #[arg(long, value_enum, default_value = "monotonic", help_heading = "Timing")]
    pub clock: ClockArg,
    /// Relative sleeps instead of absolute deadlines (drifts; no missed periods)
    #[arg(long, help_heading = "Timing")]
    pub relative: bool,

    /// Do not lock memory (mlockall is on by default)
    #[arg(long, help_heading = "System")]
    pub no_mlock: bool,
    /// Request this CPU wake-up latency (us) via /dev/cpu_dma_latency for the run; restored at exit
    #[arg(long, value_name = "US", help_heading = "System")]
    pub latency: Option<i32>,

    /// Fail (exit 1) when a statistic exceeds a limit, per CPU and overall: max=100us,
    /// p99.99=50us, p99=20us, mean=10us, missed=0 (repeatable)
    #[arg(long = "limit", value_name = "STAT=VALUE", help_heading = "Output")]
    pub limits: Vec<String>,
    /// Write the results as JSON (schema rtscope.measure/1, docs/json-schema.md)
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    pub json: Option<PathBuf>,
    /// No progress line
    #[arg(long, short = 'q', help_heading = "Output")]
    pub quiet: bool,

    /// The run database [default: $RTSCOPE_DB, else ./rtscope.db]
    #[arg(long, value_name = "PATH", help_heading = "Recording")]
    pub db: Option<PathBuf>,
    /// Do not record the run in the database
    #[arg(long, conflicts_with = "db", help_heading = "Recording")]
    pub no_db: bool,
    /// A name for the run, e.g. idle or hackbench
    #[arg(long, value_name = "NAME", help_heading = "Recording")]
    pub label: Option<String>,
    /// A free-form tag, e.g. --tag kernel=rt --tag board=rpi4 (repeatable)
    #[arg(long = "tag", value_name = "KEY=VALUE", help_heading = "Recording")]
    pub tags: Vec<String>,
    /// Record every sample above this latency as an event with its time, CPU and cycle
    #[arg(long, value_name = "DUR", help_heading = "Recording")]
    pub event_above: Option<String>,
    /// Keep every sample with its timestamp (compressed in the database; see docs/store-schema.md)
    #[arg(long, conflicts_with = "no_db", help_heading = "Recording")]
    pub raw: bool,
    /// Events kept per thread (more are counted, not kept)
    #[arg(
        long,
        value_name = "N",
        default_value_t = 10_000,
        help_heading = "Recording"
    )]
    pub event_capacity: usize,
    /// Length of one time-series point (and of the checkpoint period, at most 1s)
    #[arg(
        long,
        value_name = "DUR",
        default_value = "1s",
        help_heading = "Recording"
    )]
    pub series_interval: String,
    /// Sample the system monitors (temperatures, frequencies, IRQ rates, top threads) this
    /// often while recording; 0 turns them off
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "1s",
        help_heading = "Recording"
    )]
    pub monitor_interval: String,
}

impl Default for MeasureArgs {
    /// The options of a bare `rtscope measure`: clap's defaults, so front ends that build a
    /// run programmatically (campaigns) start from exactly what the command line would.
    fn default() -> Self {
        use clap::FromArgMatches;
        let cmd = <MeasureArgs as Args>::augment_args(clap::Command::new("measure"));
        let m = cmd
            .try_get_matches_from(["measure"])
            .expect("the defaults of `rtscope measure` parse");
        MeasureArgs::from_arg_matches(&m).expect("the defaults of `rtscope measure` convert")
    }
}

/// The clap command, for man page and completion generation.
pub fn command() -> clap::Command {
    <Cli as clap::CommandFactory>::command()
}

#[cfg(test)]
mod tests {
    #[test]
    fn clap_definition_is_consistent() {
        super::command().debug_assert();
    }

    #[test]
    fn measure_defaults_are_clap_defaults() {
        let d = super::MeasureArgs::default();
        assert_eq!(d.interval, "1ms");
        assert_eq!(d.priority, 90);
        assert_eq!(d.policy, super::PolicyArg::Fifo);
        assert_eq!(d.event_capacity, 10_000);
        assert!(d.duration.is_none() && d.cpus.is_none());
    }
}
