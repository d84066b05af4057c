//! The native command line (clap derive). Help, man page and completions are generated from it.

use clap::{Args, Parser, Subcommand, ValueEnum};
use rtscope_load::{LoadSpec, MsgMode, MsgTransport};
use std::path::PathBuf;

mod check;
mod fleet;
mod import_export;
mod noise;
pub mod record;
mod report;
mod respond;
mod tail;
mod watch;
pub use check::CheckArgs;
pub use fleet::FleetArgs;
pub use import_export::{ExportArgs, ExportFormat, ImportArgs, ImportFormat};
pub use noise::{CounterArg, NoiseArgs, NoisePolicyArg};
pub use report::{ReportArgs, WatchLevel};
pub use respond::{BiasArg, EdgesArg, EventClockArg, PacingArg, RespondArgs, RespondPolicyArg};
pub use tail::TailArgs;
pub use watch::WatchArgs;

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
    /// Import old results of cyclictest, jitterdebugger, stress-ng, oslat and rtla as runs.
    ///
    /// Reads cyclictest histograms (`-h`/`-H`), `-v` verbose output and `--json` files,
    /// jitterdebugger output directories, stress-ng `--cyclic` logs, oslat `--json` files and
    /// `rtla osnoise top`/`hist` text (as runs of kind `noise`); each becomes one run.
    Import(ImportArgs),
    /// Export a run's statistics, histograms, series and events as CSV, JSON or Parquet.
    Export(ExportArgs),
    /// Measure event response latency of IPC events and GPIO edges.
    ///
    /// How fast a real-time thread reacts to an IPC event (eventfd, pipe, futex, POSIX mq,
    /// signal, SysV semaphore, UNIX datagram) or to an edge on a GPIO input (docs/respond.md).
    Respond(Box<RespondArgs>),
    /// Measure OS noise: the time a busy-looping CPU loses to everything else.
    ///
    /// One pinned busy loop per CPU reads the clock; every gap between two readings goes into
    /// a histogram, every gap over --threshold is kept with its start (docs/noise.md).
    Noise(Box<NoiseArgs>),
    /// Run a campaign: scenarios × load cases × repeats, with loads and system monitors.
    Run(Box<RunArgs>),
    /// Watch latency in the field: measure for months in rolling windows, serve /metrics.
    ///
    /// Each window (default 1 min) keeps its histogram, percentiles, max, missed deadlines and
    /// worst wake-up in the database, merged into hours and days as it ages, within a disk
    /// budget; alerts go to syslog and a command (docs/watch.md).
    Watch(Box<WatchArgs>),
    /// Run a load standalone: messaging, memory, cpu, io, network or an external program.
    ///
    /// For example to load a board while another tool measures; Ctrl-C stops it cleanly.
    Load(Box<LoadArgs>),
    /// Compare groups of runs: statistics side by side and a verdict per statistic.
    ///
    /// Groups are run ids, labels, campaigns or tags; the load-case matrix shows one statistic
    /// per group and load case; exit 1 on a regression.
    Compare(Box<CompareArgs>),
    /// Make plots, tables and a self-contained report.html from recorded runs.
    Report(ReportArgs),
    /// Estimate the latency a run did not see: exceeded with probability 1e-9 per wake-up, say.
    ///
    /// Extreme value theory (peaks over threshold, a generalized Pareto fit) with confidence
    /// intervals and the tests that justify it, or a refusal naming the failed tests
    /// (docs/worst-case.md). A statement about this workload and configuration, not a proof.
    Tail(Box<TailArgs>),
    /// Audit the system before a run: 32 checks, each with its evidence and fix.
    ///
    /// PREEMPT_RT, isolation, governor, SMT, IRQs, idle states, RT tasks, limits, thermal,
    /// VM and container; fixes are printed, never applied; exit 1 when a check is bad.
    Check(CheckArgs),
    /// Print a shell completion script (bash, zsh or fish).
    Completions {
        /// The shell.
        shell: CompletionShell,
    },
    /// Print a man page (roff): rtscope(1), or a subcommand's, e.g. `rtscope man runs show`.
    Man(ManArgs),
}

/// The shells `rtscope completions` writes for: those of the Linux systems rtscope runs on (the
/// .debs install these three). Not clap_complete's whole `Shell`: its Elvish and PowerShell
/// generators would cost the x86-64 binary's size budget for shells no board runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CompletionShell {
    /// bash (bash-completion).
    Bash,
    /// zsh.
    Zsh,
    /// fish.
    Fish,
}

/// Options of `rtscope run`.
#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// The campaign file (TOML); see examples/ and docs/campaigns.md
    #[arg(value_name = "CAMPAIGN.toml", conflicts_with = "preset")]
    pub file: Option<PathBuf>,
    /// A built-in campaign instead of a file: quick, scenarios, loadcases, osadl or respond-ipc
    #[arg(long, value_name = "NAME",
          value_parser = clap::builder::PossibleValuesParser::new(rtscope_campaign::presets::NAMES))]
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
    /// Explain every wake-up at or above this latency, or `off` [default: the campaign's
    /// `explain`, else 100us where tracefs is usable] (docs/explain.md)
    #[arg(long, value_name = "DUR|off")]
    pub explain: Option<String>,
    /// Measure each timer run until its tail estimate is precise enough, instead of the
    /// campaign's `until_tail`: `probability=1e-9,precision=10%,max_duration=2h`, or `off`
    /// (docs/campaigns.md)
    #[arg(long, value_name = "RULE|off")]
    pub until_tail: Option<String>,
    /// The run database [default: $RTSCOPE_DB, else ./rtscope.db]
    #[arg(long, value_name = "PATH")]
    pub db: Option<PathBuf>,
    /// No progress display
    #[arg(long, short)]
    pub quiet: bool,
    /// Runs on boards over ssh
    #[command(flatten)]
    pub fleet: FleetArgs,
    /// Also write the runs recorded as lava, kcidb or junit to FILE (`-`: stdout), repeatable
    #[arg(long, value_name = "FORMAT=FILE", help_heading = "Fleet")]
    pub ci_output: Vec<String>,
}

/// Options of `rtscope compare`.
#[derive(Debug, Clone, Args)]
pub struct CompareArgs {
    /// Groups of runs, the first is the baseline: run id, `last`, label, campaign:NAME (or a
    /// campaign's name), tags such as kernel=rt,case=idle, or the hours of a watch series'
    /// period, watch:SERIES@FROM..TO
    #[arg(required = true, num_args = 2.., value_name = "SELECTOR")]
    pub selectors: Vec<String>,
    /// The run database [default: $RTSCOPE_DB, else ./rtscope.db]
    #[arg(long, value_name = "PATH")]
    pub db: Option<PathBuf>,
    /// Statistics to compare (repeatable or comma-separated): min, mean, p50, p90, p99, p99.9,
    /// p99.99, p99.999, p99.9999, max, missed; for noise runs also available and noise/s
    /// (noise groups default to max, available, noise/s, p50, p99, p99.99)
    #[arg(
        long = "stat",
        value_name = "STAT",
        value_delimiter = ',',
        default_value = rtscope_analysis::compare::model::DEFAULT_STATS
    )]
    pub stats: Vec<String>,
    /// A candidate statistic higher than the baseline's by more than this % (and by more than
    /// --min-delta) is a regression; STAT=PCT sets one statistic's threshold (repeatable)
    /// [default: 10%]
    #[arg(long = "threshold", value_name = "[STAT=]PCT", value_delimiter = ',')]
    pub thresholds: Vec<String>,
    /// Latency changes up to this are noise, whatever their % (a bare number is µs)
    #[arg(long, value_name = "DUR", default_value = "1us")]
    pub min_delta: String,
    /// Judge by --threshold and --min-delta alone, without the significance test; a rise beyond
    /// them fails (by default runs with repeats are tested, and a rise on too few runs to test
    /// is `worse (untested)` and does not fail)
    #[arg(long)]
    pub threshold_only: bool,
    /// Fail also on a rise beyond the threshold that rests on too few runs for the significance
    /// test (a cell marked untested): `REGRESSION (untested)` instead of `worse (untested)`
    #[arg(long)]
    pub fail_untested: bool,
    /// Also compare the latency exceeded with this probability per wake-up (e.g. 1e-9), as
    /// `rtscope tail` estimates it; a refused estimate gets no verdict
    #[arg(long, value_name = "P", value_parser = crate::cli::tail::probability)]
    pub tail_level: Option<f64>,
    /// With --tail-level: show the levels of the merged histograms, whose stationarity cannot
    /// be tested (no time order), labelled UNTESTED; their verdicts are untested (a rise is
    /// `worse`, failing only with --fail-untested)
    #[arg(long, requires = "tail_level")]
    pub assume_stationary: bool,
    /// The statistic in the cells of the load-case matrix
    #[arg(long, value_name = "STAT", default_value = "max")]
    pub matrix: String,
    /// Rows of the load-case matrix: the values of this tag (e.g. kernel) [default: one row per
    /// group]
    #[arg(long, value_name = "TAGKEY")]
    pub rows: Option<String>,
    /// Also write the groups' distributions overlaid (tail latency and exceedance, SVG and
    /// PNG) into this directory
    #[arg(long, value_name = "DIR")]
    pub plot: Option<PathBuf>,
    /// Print JSON (schema rtscope.compare/2) instead of text
    #[arg(long)]
    pub json: bool,
    /// Exit 0 even when a candidate regresses (report only)
    #[arg(long)]
    pub no_fail: bool,
    /// Also write the verdicts as lava, kcidb or junit to FILE (`-`: stdout), repeatable
    #[arg(long, value_name = "FORMAT=FILE")]
    pub ci_output: Vec<String>,
}

/// Options of `rtscope load`.
#[derive(Debug, Clone, Args)]
pub struct LoadArgs {
    /// Stop after this long (e.g. 30s, 10m) [default: until Ctrl-C or the load ends]
    #[arg(long = "for", value_name = "DURATION", global = true)]
    pub duration: Option<String>,
    /// Time the load gets to end after SIGTERM before it is SIGKILLed
    #[arg(long, value_name = "DURATION", default_value = "2s", global = true)]
    pub grace: String,
    /// Print the report as JSON instead of a table
    #[arg(long, global = true)]
    pub json: bool,
    /// The load to run
    #[command(subcommand)]
    pub kind: LoadKind,
}

/// Tasks of the messaging load.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ModeArg {
    /// Processes (hackbench's default)
    Processes,
    /// Threads of one process (hackbench --threads)
    Threads,
}

/// The kinds of load `rtscope load` runs.
#[derive(Debug, Clone, Subcommand)]
pub enum LoadKind {
    /// Senders and receivers passing messages, like hackbench
    Messaging {
        /// Groups of senders and receivers
        #[arg(long, short = 'g', default_value_t = 10)]
        groups: u32,
        /// Senders (and receivers) per group
        #[arg(long, short = 'f', default_value_t = 20)]
        fds: u32,
        /// Message size in bytes
        #[arg(long, short = 's', default_value_t = 100)]
        size: u32,
        /// Pipes instead of socket pairs
        #[arg(long, short = 'p')]
        pipe: bool,
        /// Processes or threads
        #[arg(long, value_enum, default_value_t = ModeArg::Processes)]
        mode: ModeArg,
    },
    /// Buffer copies with verification, like stressapptest
    Memory {
        /// Copy threads [default: one per CPU]
        #[arg(long, short = 't')]
        threads: Option<u32>,
        /// Memory in MiB, shared between the threads
        #[arg(long, short = 'm', default_value_t = 256)]
        megabytes: u64,
    },
    /// Threads spinning on arithmetic
    Cpu {
        /// Threads [default: one per CPU]
        #[arg(long, short = 't')]
        threads: Option<u32>,
    },
    /// Writes and fsyncs files in a scratch directory
    Io {
        /// Writer threads
        #[arg(long, short = 't', default_value_t = 1)]
        threads: u32,
        /// Where the scratch directory is made [default: the temp directory]
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
        /// File size in MiB per write-fsync cycle
        #[arg(long, default_value_t = 64)]
        file_mb: u64,
    },
    /// TCP round trips over loopback
    Network {
        /// Connections
        #[arg(long, short = 't', default_value_t = 1)]
        threads: u32,
        /// Message size in bytes
        #[arg(long, short = 's', default_value_t = 1024)]
        size: u32,
    },
    /// Any program, e.g. `rtscope load external -- hackbench -l 100000`
    External {
        /// The program and its arguments (after `--`)
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, required = true)]
        command: Vec<String>,
    },
}

impl LoadKind {
    /// The spec these options describe.
    pub fn to_spec(&self) -> LoadSpec {
        let cpus = || std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
        match self.clone() {
            LoadKind::Messaging {
                groups,
                fds,
                size,
                pipe,
                mode,
            } => LoadSpec::Messaging {
                groups,
                fds,
                size,
                transport: if pipe {
                    MsgTransport::Pipe
                } else {
                    MsgTransport::Socket
                },
                mode: match mode {
                    ModeArg::Processes => MsgMode::Processes,
                    ModeArg::Threads => MsgMode::Threads,
                },
            },
            LoadKind::Memory { threads, megabytes } => LoadSpec::Memory {
                threads: threads.unwrap_or_else(cpus),
                megabytes,
            },
            LoadKind::Cpu { threads } => LoadSpec::Cpu {
                threads: threads.unwrap_or_else(cpus),
            },
            LoadKind::Io {
                threads,
                dir,
                file_mb,
            } => LoadSpec::Io {
                threads,
                dir,
                file_mb,
            },
            LoadKind::Network { threads, size } => LoadSpec::Network { threads, size },
            LoadKind::External { mut command } => LoadSpec::External {
                program: command.remove(0),
                args: command,
            },
        }
    }
}

/// Options of `rtscope man`.
#[derive(Debug, Clone, Args)]
pub struct ManArgs {
    /// The subcommand whose page to print, e.g. `measure` or `runs show` [default: rtscope(1)]
    #[arg(value_name = "SUBCOMMAND", conflicts_with = "dir")]
    pub command: Vec<String>,
    /// Write every page (rtscope.1, rtscope-measure.1 …) into this directory instead
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
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
    /// Why the worst wake-ups of a run recorded with --explain were late
    Explain {
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
    /// Import the runs of another database (by UUID: merging twice adds nothing)
    Merge {
        /// The database to import from (upgraded to this schema version first)
        other: PathBuf,
        /// KEY=VALUE tag set on every imported run, e.g. --tag board=rpi4 (repeatable)
        #[arg(long = "tag", value_name = "KEY=VALUE")]
        tags: Vec<String>,
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
    /// CPUs for every thread of rtscope but the measuring ones (control, monitor, --explain's
    /// trace reader and analysis); none may be measured [default: the online CPUs not
    /// measured; with none left, nothing is pinned and --explain analyses spikes at the end]
    #[arg(
        long,
        alias = "main-cpus",
        value_name = "LIST",
        help_heading = "Threads and CPUs"
    )]
    pub housekeeping: Option<String>,
    /// SCHED_FIFO priority of rtscope's control and monitor threads (used only below every
    /// measuring thread), or `off` for SCHED_OTHER
    #[arg(
        long,
        value_name = "N|off",
        default_value = "1",
        help_heading = "Threads and CPUs"
    )]
    pub housekeeping_prio: String,

    /// Scheduling policy
    #[arg(long, value_enum, default_value = "fifo", help_heading = "Scheduling")]
    pub policy: PolicyArg,
    /// Real-time priority (1-99, default 90) for fifo/rr; nice value (-20..19, default 0) for
    /// other/batch; ignored by idle and deadline
    #[arg(
        long,
        short = 'p',
        allow_negative_numbers = true,
        help_heading = "Scheduling"
    )]
    pub priority: Option<i32>,
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

    /// Where the run is recorded.
    #[command(flatten)]
    pub rec: crate::cli::record::RecordArgs,
    /// Record every sample above this latency as an event with its time, CPU and cycle
    #[arg(long, value_name = "DUR", help_heading = "Recording")]
    pub event_above: Option<String>,
    /// Explain every wake-up at or above this latency: what ran on its CPU, from a private
    /// tracefs instance (root), else from the monitors (docs/explain.md)
    #[arg(long, value_name = "DUR", help_heading = "Recording")]
    pub explain: Option<String>,
    /// Spikes kept fully explained per minute of the clock, the worst first (1-1000; the rest
    /// are counted) [default: 5]
    #[arg(
        long,
        value_name = "N",
        requires = "explain",
        help_heading = "Recording"
    )]
    pub explain_keep: Option<usize>,
    /// Kernel stacks for the spikes explained: where in the kernel the CPU was held [default:
    /// auto: only for late wake-ups, where the kernel has hist triggers, else none; on: the
    /// same, else at every wake-up; docs/explain.md]
    #[arg(
        long,
        value_name = "auto|on|off",
        requires = "explain",
        value_parser = ["auto", "on", "off"],
        help_heading = "Recording"
    )]
    pub explain_stacks: Option<String>,
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
    /// Keep this Prometheus textfile (node_exporter format) current: rewritten atomically at
    /// every series interval and at the end (docs/fleet.md)
    #[arg(long, value_name = "FILE", help_heading = "Recording")]
    pub metrics_file: Option<PathBuf>,
    /// Runs on boards over ssh
    #[command(flatten)]
    pub fleet: FleetArgs,
    /// Also write the runs recorded as lava, kcidb or junit to FILE (`-`: stdout), repeatable
    #[arg(long, value_name = "FORMAT=FILE", help_heading = "Fleet")]
    pub ci_output: Vec<String>,
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
mod tests;
