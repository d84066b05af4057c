//! The options of `rtscope noise`.

use crate::cli::sched::{self, ThreadArgs};
use crate::cli::values::{one_of, reworded, Named};
use clap::Args;
use rtscope_engine::noise::CounterChoice;
use rtscope_session::plan::PolicyChoice::{Fifo, Other, Rr};

/// `--policy`'s help.
const POLICY_HELP: &str = "Scheduling policy of the loops (SCHED_OTHER by default, like oslat)";

/// Options of `rtscope noise`.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  rtscope noise -D 10s\n  rtscope noise --cpus 1 --policy fifo -p 95 -D 1m --limit max_single=20us --limit available=99.99%\n  rtscope noise --cpus 2-3 --threshold 500ns --json noise.json\n\nExit status: 0 ok, 1 a --limit failed, 2 bad input or set-up, 3 interrupted (the results cover the part that ran).\nSee docs/noise.md for what is measured and the loop's resolution.",
    mut_args(sched::narrowed(&[Other, Fifo, Rr], POLICY_HELP)),
    mut_args(reworded(&[(
        "json",
        "Write the results as JSON (schema rtscope.noise/1), with every gap over the threshold"
    )]))
)]
pub struct NoiseArgs {
    /// CPUs to measure, one busy loop each, e.g. 1,3 or 2-5 [default: every CPU this process may use]
    #[arg(long, short = 'c', value_name = "LIST", help_heading = "Measurement")]
    pub cpus: Option<String>,
    /// CPUs for rtscope's own (control) thread [default: the online CPUs not measured, if any]
    #[arg(long, value_name = "LIST", help_heading = "Measurement")]
    pub housekeeping: Option<String>,
    /// A gap longer than this is noise, recorded with its start time; a bare number is us
    /// [default: 1us, raised to twice the loop's resolution when that is more (said at the
    /// start); a value given that the loop cannot resolve is refused]
    #[arg(long, value_name = "DUR", help_heading = "Measurement")]
    pub threshold: Option<String>,
    /// How long each loop spins before the run, unmeasured: caches and clock frequency settle,
    /// and its shortest gap there is the loop's resolution; a bare number is ms
    #[arg(
        long,
        value_name = "DUR",
        default_value = "100ms",
        help_heading = "Measurement"
    )]
    pub preheat: String,
    /// Time the loop spins in every period (the duty cycle); a bare number is us
    /// [default: 950ms, the kernel's RT throttling budget]
    #[arg(long, value_name = "DUR", help_heading = "Measurement")]
    pub runtime: Option<String>,
    /// The duty-cycle period; a bare number is us [default: 1s]
    #[arg(long, value_name = "DUR", help_heading = "Measurement")]
    pub period: Option<String>,
    /// The counter each loop reads: auto (the raw counter where the kernel keeps time with
    /// it, else the vDSO clock), raw (the TSC with lfence; CNTVCT_EL0 with isb; calibrated
    /// against CLOCK_MONOTONIC in the pre-heat), clock (clock_gettime through the vDSO)
    #[arg(
        long,
        value_parser = one_of(COUNTERS),
        default_value = "auto",
        help_heading = "Measurement"
    )]
    pub counter: CounterChoice,
    /// Length of the run: 30 (seconds), 500ms, 10m
    #[arg(
        long,
        short = 'D',
        value_name = "DUR",
        default_value = "10s",
        help_heading = "Measurement"
    )]
    pub duration: String,
    /// `--policy`, `--priority` and `--no-mlock`.
    #[command(flatten)]
    pub threads: ThreadArgs,
    /// Gaps over the threshold each CPU's ring holds between two reads (every 100 ms); more are counted as dropped
    #[arg(
        long,
        value_name = "N",
        default_value_t = 65536,
        help_heading = "Measurement"
    )]
    pub gap_capacity: usize,
    /// Gaps over the threshold kept per CPU for the JSON and the database: the longest; the
    /// others are counted (and are in the totals and the histogram)
    #[arg(
        long,
        value_name = "N",
        default_value_t = rtscope_session::noise::kept::DEFAULT_KEEP_GAPS,
        help_heading = "Output"
    )]
    pub keep_gaps: usize,
    /// Charge every gap at or above this length to its causes (IRQ, softirq, thread, NMI,
    /// hypervisor, unexplained) from a private tracefs instance, as `measure --explain`, or
    /// `off` [default: the gap threshold, at least 5us, where tracefs is usable; where it is
    /// not, the run says why and how to fix it] (docs/noise.md)
    #[arg(long, value_name = "DUR|off", help_heading = "Output")]
    pub explain: Option<String>,
    /// Gaps kept fully explained (with their charges, in the JSON and the database) per minute
    /// of the clock, the worst first (1-1000; the rest are counted and in the totals) [default: 5]
    #[arg(long, value_name = "N", help_heading = "Output")]
    pub explain_keep: Option<usize>,
    /// Hardware-only mode: the kernel's hwlat tracer (per-CPU mode) spins --runtime of every
    /// --period with interrupts off on each CPU [default 500ms of 1s, hwlat's own], so a gap
    /// can only be the hardware, firmware (SMI), the hypervisor or an NMI (root; refused,
    /// naming the kernel option, where the kernel lacks it)
    #[arg(long, help_heading = "Measurement")]
    pub irqs_off: bool,
    /// Fail (exit 1) when a CPU exceeds a limit: max_single=20us, available=99.99% (repeatable)
    #[arg(long = "limit", value_name = "STAT=VALUE", help_heading = "Output")]
    pub limits: Vec<String>,
    /// `--json`, `--quiet` and where the run is recorded.
    #[command(flatten)]
    pub rec: crate::cli::record::RecordArgs,
    /// Runs on boards over ssh.
    #[command(flatten)]
    pub fleet: crate::cli::fleet::FleetArgs,
}

/// The counters the noise loops read.
const COUNTERS: [Named<CounterChoice>; 3] = [
    (
        CounterChoice::Auto,
        "auto",
        "The raw counter where the kernel keeps time with it, else the vDSO clock",
    ),
    (
        CounterChoice::Raw,
        "raw",
        "The TSC (x86-64) or CNTVCT_EL0 (arm64), calibrated",
    ),
    (
        CounterChoice::Clock,
        "clock",
        "clock_gettime(CLOCK_MONOTONIC) through the vDSO",
    ),
];
