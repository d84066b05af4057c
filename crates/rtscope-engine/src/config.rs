//! The typed configuration of one measurement run. Front ends (native `measure`, the
//! cyclictest-compatible parser) validate their flags and lower them into a [`RunConfig`].

use crate::cpuset::CpuSet;
use rtscope_core::Nanos;

/// The longest interval of a measuring thread: 1 hour. Longer ones are refused (a run that
/// wakes up less than once an hour measures almost nothing; cyclictest's `-i` is a C `int` of
/// µs, at most about 36 minutes). Front ends check it first and name their option.
pub const MAX_INTERVAL: Nanos = Nanos::from_secs(3600);

/// Scheduling policy of a measuring thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// SCHED_OTHER (normal), with a nice value.
    Other,
    /// SCHED_BATCH.
    Batch,
    /// SCHED_IDLE.
    Idle,
    /// SCHED_FIFO (the default).
    Fifo,
    /// SCHED_RR.
    Rr,
    /// SCHED_DEADLINE with runtime <= deadline <= period.
    Deadline {
        /// CPU time reserved per period.
        runtime: Nanos,
        /// Relative deadline.
        deadline: Nanos,
        /// Reservation period.
        period: Nanos,
    },
}

impl Policy {
    /// Whether the policy takes a real-time priority (1..=99).
    pub fn is_realtime_priority(&self) -> bool {
        matches!(self, Policy::Fifo | Policy::Rr)
    }

    /// The lowercase name cyclictest prints (`fifo`, `rr`, `other`, `batch`, `idle`, `deadline`).
    pub fn name(&self) -> &'static str {
        match self {
            Policy::Other => "other",
            Policy::Batch => "batch",
            Policy::Idle => "idle",
            Policy::Fifo => "fifo",
            Policy::Rr => "rr",
            Policy::Deadline { .. } => "deadline",
        }
    }
}

/// Clock the deadlines are programmed on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ClockKind {
    /// CLOCK_MONOTONIC (default).
    #[default]
    Monotonic,
    /// CLOCK_REALTIME.
    Realtime,
}

/// How each sleep is programmed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SleepMode {
    /// `clock_nanosleep(TIMER_ABSTIME)` to a fixed grid of deadlines (default).
    #[default]
    Absolute,
    /// A relative `clock_nanosleep` of one interval after each wake-up (drifts by the latency).
    Relative,
}

/// Where the first deadline lies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Alignment {
    /// The threads' deadline grids are spread evenly over one interval (thread `i` of `n` is
    /// offset by `i × interval / n`), so threads sharing a CPU do not wake together.
    #[default]
    None,
    /// Wake-ups aligned to the common start time: thread `i` is offset by `i ×` this step
    /// (cyclictest `-A`; a step of 0 makes all threads wake together).
    Aligned(Nanos),
    /// The first wake-up is the next full second of the clock plus this offset (`--secaligned`).
    Second(Nanos),
}

/// One measuring thread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadSpec {
    /// CPUs the thread may run on; `None` leaves the inherited affinity.
    pub affinity: Option<CpuSet>,
    /// Scheduling policy.
    pub policy: Policy,
    /// Real-time priority (1..=99) for FIFO/RR; the nice value for OTHER/BATCH; ignored otherwise.
    pub priority: i32,
    /// Period between deadlines.
    pub interval: Nanos,
}

/// An optional cyclictest-style linear histogram kept beside the lossless one (exact `-h` output).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinearSpec {
    /// Bucket width (1 µs, or 1 ns with `-N`).
    pub unit: Nanos,
    /// Number of buckets; samples at or beyond `unit × buckets` count as overflows.
    pub buckets: usize,
    /// How many overflow cycle numbers to keep per thread.
    pub overflow_cycles: usize,
}

/// Everything that defines a run.
#[derive(Debug, Clone, PartialEq)]
pub struct RunConfig {
    /// One entry per measuring thread.
    pub threads: Vec<ThreadSpec>,
    /// Clock of the deadlines.
    pub clock: ClockKind,
    /// Absolute or relative sleeps.
    pub sleep: SleepMode,
    /// Wake-ups (samples) per thread (`None`: until the duration ends or the run is stopped).
    pub loops: Option<u64>,
    /// Length of the run (`None`: until the loops are done or the run is stopped).
    pub duration: Option<Nanos>,
    /// Lock all current and future memory (`mlockall`).
    pub mlock: bool,
    /// Stack bytes each measuring thread touches before its loop, so no page fault hits it.
    pub prefault_stack: usize,
    /// Stop the whole run when a sample exceeds this (cyclictest `-b`).
    pub break_threshold: Option<Nanos>,
    /// Write a marker to ftrace's `trace_marker` when the break fires.
    pub tracemark: bool,
    /// First-deadline alignment.
    pub alignment: Alignment,
    /// cyclictest-style linear histogram, when its exact bucket output is wanted.
    pub linear: Option<LinearSpec>,
    /// Capacity (samples per thread) of the lock-free sample ring drained by a non-RT reader;
    /// `None` keeps no per-sample record.
    pub sample_ring: Option<usize>,
    /// Record every sample above this threshold as an event (`--spike`, `--event-above`).
    pub event_threshold: Option<Nanos>,
    /// How many events to keep per thread (later ones are counted, not kept).
    pub event_capacity: usize,
}

impl RunConfig {
    /// A run of `threads` with the defaults: monotonic clock, absolute sleeps, no mlock.
    pub fn new(threads: Vec<ThreadSpec>) -> Self {
        RunConfig {
            threads,
            clock: ClockKind::Monotonic,
            sleep: SleepMode::Absolute,
            loops: None,
            duration: None,
            mlock: false,
            prefault_stack: 16 * 1024,
            break_threshold: None,
            tracemark: false,
            alignment: Alignment::None,
            linear: None,
            sample_ring: None,
            event_threshold: None,
            event_capacity: 0,
        }
    }

    /// The CPUs the threads are pinned to (empty when none is pinned).
    pub fn pinned_cpus(&self) -> CpuSet {
        CpuSet::from_cpus(
            self.threads
                .iter()
                .filter_map(|t| t.affinity.as_ref())
                .flat_map(|a| a.iter().collect::<Vec<_>>()),
        )
    }
}
