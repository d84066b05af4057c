//! The options of `rtscope measure`.

use crate::cli::fleet::FleetArgs;
use crate::cli::sched::SchedArgs;
use crate::cli::values::{one_of, reworded, Named};
use clap::Args;
use rtscope_engine::ClockKind;
use rtscope_trace::explain::RecorderChoice;
use rtscope_trace::tracefs::StackChoice;
use std::path::PathBuf;

/// Clocks of the deadlines.
const CLOCKS: [Named<ClockKind>; 2] = [
    (ClockKind::Monotonic, "monotonic", "CLOCK_MONOTONIC"),
    (ClockKind::Realtime, "realtime", "CLOCK_REALTIME"),
];

/// Which kernel stacks `--explain-stacks` asks for (`every` is `noise`'s alone: not offered).
pub const EXPLAIN_STACKS: [Named<StackChoice>; 3] = [
    (
        StackChoice::Auto,
        "auto",
        "only for late wake-ups (eBPF programs, or hist triggers), else none",
    ),
    (
        StackChoice::On,
        "on",
        "only for late wake-ups where the kernel can, else at every wake-up",
    ),
    (StackChoice::Off, "off", "none"),
];

/// Where `--explain-recorder` takes the flight recorder's events from.
pub const EXPLAIN_RECORDER: [Named<RecorderChoice>; 3] = [
    (
        RecorderChoice::Tracefs,
        "tracefs",
        "the trace events of a tracefs instance",
    ),
    (
        RecorderChoice::Bpf,
        "ebpf",
        "eBPF rings on the raw tracepoints behind them (no trace event enabled); tracefs where they cannot",
    ),
    (
        RecorderChoice::Auto,
        "auto",
        "eBPF where it follows every tracepoint, else tracefs",
    ),
];

/// Options of `rtscope measure`.
#[derive(Debug, Clone, Args)]
#[command(mut_args(reworded(&[
    ("json", "Write the results as JSON (schema rtscope.measure/1, docs/json-schema.md)"),
    ("quiet", "No progress line"),
])))]
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

    /// `--policy` and `--priority`.
    #[command(flatten)]
    pub sched: SchedArgs,
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
    #[arg(
        long,
        value_parser = one_of(CLOCKS),
        default_value = "monotonic",
        help_heading = "Timing"
    )]
    pub clock: ClockKind,
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

    /// `--json`, `--quiet` and where the run is recorded.
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
    /// off; their cost: BENCHMARKS.md; docs/explain.md]
    #[arg(
        long,
        requires = "explain",
        value_parser = one_of(EXPLAIN_STACKS),
        help_heading = "Recording"
    )]
    pub explain_stacks: Option<StackChoice>,
    /// Where the flight recorder takes the spikes' events from [default: tracefs;
    /// docs/explain.md, "The eBPF flight recorder"]
    #[arg(
        long,
        requires = "explain",
        value_parser = one_of(EXPLAIN_RECORDER),
        help_heading = "Recording"
    )]
    pub explain_recorder: Option<RecorderChoice>,
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
