//! rtscope-engine: the timer wake-up latency engine.
//!
//! One measuring thread per [`ThreadSpec`] sleeps to a grid of deadlines with
//! `clock_nanosleep(TIMER_ABSTIME)` (or relative sleeps), and records the wake-up latency —
//! wake-up time minus the programmed deadline — into memory allocated before it turned
//! real-time. See [`thread`](crate::thread) for what the timing loop does and the exact rule for
//! missed periods. Depends on `libc`, `thiserror` and `rtscope-core` only.
//!
//! Re-exports (its facade): the run configuration (`RunConfig`, `Policy`, …), `CpuSet`, the run
//! (`Run`, `RunResult`, …) and the per-thread state (`ThreadShared`, `Recorder`, …) are named at
//! the root for the session and the respond crate; their modules (`config`, `cpuset`, `run`,
//! `state`) are private, so the root is their one path. [`noise`] does the same for its private
//! `counter`, `state` and `threshold` modules.

#![warn(missing_docs)]

mod config;
mod cpuset;
pub mod knobs;
pub mod noise;
mod run;
mod state;
pub mod sys;
pub mod thread;

pub use config::{
    Alignment, ClockKind, LinearSpec, Policy, RunConfig, SleepMode, ThreadSpec, MAX_INTERVAL,
};
pub use cpuset::{CpuSet, CpuSetError};
pub use run::{prepare_current_thread, BreakInfo, Run, RunResult, ThreadResult, Wake};
pub use state::{
    resident_counters, EventLog, LinearResult, Phase, Recorder, Sample, SampleRing, ThreadShared,
};

/// Why a run could not start.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The process may not use the requested real-time policy or priority.
    #[error("no permission to run measuring threads with policy {policy} at priority {priority} (RLIMIT_RTPRIO is {rtprio_limit})\n\nhint: run as root, raise RLIMIT_RTPRIO (e.g. `ulimit -r 99`, or `@realtime - rtprio 99` in /etc/security/limits.conf), or join the realtime group")]
    NoRtPrivilege {
        /// Policy name.
        policy: &'static str,
        /// Requested priority.
        priority: i32,
        /// The soft RLIMIT_RTPRIO in force.
        rtprio_limit: u64,
    },
    /// `sched_setaffinity` failed.
    #[error("cannot pin thread {thread} to CPUs {cpus}: {source}")]
    Affinity {
        /// Thread index.
        thread: usize,
        /// The CPU list.
        cpus: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// Setting the policy failed for another reason.
    #[error("cannot set policy {policy} priority {priority} on thread {thread}: {source}")]
    Policy {
        /// Thread index.
        thread: usize,
        /// Policy name.
        policy: &'static str,
        /// Priority.
        priority: i32,
        /// The OS error.
        source: std::io::Error,
    },
    /// A thread could not be created.
    #[error("cannot start {threads} measuring threads: {source}")]
    Spawn {
        /// Threads requested.
        threads: usize,
        /// The OS error.
        source: std::io::Error,
    },
    /// The handler of the signal that wakes the measuring threads could not be installed.
    #[error("cannot install the handler of the measuring threads' wake-up signal: {0}")]
    WakeSignal(std::io::Error),
    /// `mlockall` failed.
    #[error("cannot lock memory (mlockall): {0}\n\nhint: run as root or raise RLIMIT_MEMLOCK (`ulimit -l unlimited`)")]
    Mlock(std::io::Error),
    /// A setting the engine cannot run with.
    #[error("{0}")]
    InvalidConfig(String),
    /// A noise threshold the loop cannot resolve: its own cost per iteration is not below it,
    /// so every iteration would count as noise.
    #[error("invalid value for '--threshold': {threshold} is not above the loop's resolution on CPU {cpu} ({resolution} ns, its shortest gap in the pre-heat): every iteration would count as noise\n\nhint: use --threshold {suggested} or more (twice the resolution), or leave --threshold out: the default is raised to the loop's resolution", threshold = rtscope_core::text::short(*.threshold), resolution = .resolution.0, suggested = rtscope_core::text::short(*.suggested))]
    ThresholdBelowResolution {
        /// The slowest loop's CPU.
        cpu: usize,
        /// Its shortest gap.
        resolution: rtscope_core::Nanos,
        /// The threshold given.
        threshold: rtscope_core::Nanos,
        /// Twice the resolution, in whole microseconds.
        suggested: rtscope_core::Nanos,
    },
    /// A system setting could not be changed.
    #[error("cannot write {path}: {source}")]
    Knob {
        /// The file.
        path: String,
        /// The OS error.
        source: std::io::Error,
    },
}
