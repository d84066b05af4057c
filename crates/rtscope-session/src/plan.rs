//! The typed run plan: what one measurement is to do, built the same way by every front end.
//!
//! `rtscope measure` lowers its command line into a [`PlanSpec`], campaigns build one from
//! their TOML settings, and the cyclictest layer from its options. [`RunPlan::build`] checks
//! the spec against the online CPUs and lowers it into the engine's [`RunConfig`]. Its errors
//! name the [`Field`] at fault; each front end spells the field its own way (`--interval` on
//! the command line, `interval` in a campaign file), so no message is ever rewritten.
//!
//! Re-exports (a facade): the config document, the noise and respond workloads'
//! specs and plans are named here; their modules are private, so `plan::X` is their one path.

use crate::field::{Field, Naming};
use rtscope_common::limits::Limit;
use rtscope_core::Nanos;
use rtscope_engine::{ClockKind, CpuSet, Policy, RunConfig, SleepMode, ThreadSpec};
use rtscope_trace::explain::RecorderChoice;
use rtscope_trace::tracefs::StackChoice;
use std::fmt;

mod config_doc;
mod limits;
mod noise;
mod workload;
pub use config_doc::{clock_name, ConfigDoc};
pub use noise::{NoisePlan, NoiseProblem, NoiseSpec, HWLAT_WIDTH, HWLAT_WINDOW};
pub use workload::{RespondPlan, RespondProblem, RespondSpec, Workload, WorkloadSpec};

/// Default run length when neither a duration nor a loop count is given: 60 s.
pub const DEFAULT_DURATION: Nanos = Nanos::from_secs(60);

/// The scheduling policy asked for (SCHED_DEADLINE's parameters are separate fields).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PolicyChoice {
    /// SCHED_FIFO.
    #[default]
    Fifo,
    /// SCHED_RR.
    Rr,
    /// SCHED_OTHER.
    Other,
    /// SCHED_BATCH.
    Batch,
    /// SCHED_IDLE.
    Idle,
    /// SCHED_DEADLINE.
    Deadline,
}

impl PolicyChoice {
    /// Every policy, in the order the command line and the campaign files list them.
    pub const ALL: [PolicyChoice; 6] = [
        PolicyChoice::Fifo,
        PolicyChoice::Rr,
        PolicyChoice::Other,
        PolicyChoice::Batch,
        PolicyChoice::Idle,
        PolicyChoice::Deadline,
    ];

    /// Its name on the command line and in campaign files (`fifo`, `rr`, `other`, `batch`,
    /// `idle`, `deadline`).
    pub fn name(self) -> &'static str {
        match self {
            PolicyChoice::Fifo => "fifo",
            PolicyChoice::Rr => "rr",
            PolicyChoice::Other => "other",
            PolicyChoice::Batch => "batch",
            PolicyChoice::Idle => "idle",
            PolicyChoice::Deadline => "deadline",
        }
    }

    /// Whether the priority is a real-time priority (1..99) rather than a nice value.
    pub fn is_realtime(self) -> bool {
        matches!(self, PolicyChoice::Fifo | PolicyChoice::Rr)
    }
}

/// What is wrong with a plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// The thread count is outside 1..=max.
    ThreadCount {
        /// The count asked for.
        asked: usize,
        /// The largest allowed.
        max: usize,
    },
    /// An interval of zero.
    ZeroInterval,
    /// SCHED_DEADLINE without a runtime.
    DeadlineNeedsRuntime,
    /// SCHED_DEADLINE parameters out of order.
    DeadlineOrder {
        /// Runtime.
        runtime: Nanos,
        /// Relative deadline.
        deadline: Nanos,
        /// Period.
        period: Nanos,
    },
    /// A real-time priority outside 1..99.
    Priority {
        /// The priority asked for.
        asked: i32,
        /// The policy's name.
        policy: &'static str,
    },
    /// A nice value outside -20..19 for SCHED_OTHER/SCHED_BATCH (the kernel would clamp it,
    /// and the run would record a priority it did not have).
    Nice {
        /// The value asked for.
        asked: i32,
        /// The policy's name.
        policy: &'static str,
    },
    /// A CPU list with SCHED_DEADLINE, which cannot be pinned.
    DeadlinePinned,
    /// An interval below [`MIN_INTERVAL`].
    IntervalTooShort {
        /// The interval asked for.
        asked: Nanos,
    },
    /// A thread's interval (interval + distance × its index) above [`MAX_INTERVAL`].
    IntervalTooLong {
        /// The value of the field at fault (the interval or the distance).
        asked: Nanos,
        /// The longest thread interval it gives.
        longest: Nanos,
    },
    /// A length of zero (a run without a single sample).
    ZeroLength,
    /// More events per thread than [`MAX_EVENT_CAPACITY`].
    EventCapacity {
        /// The capacity asked for.
        asked: usize,
    },
    /// A housekeeping CPU that is not online.
    HousekeepingOffline {
        /// The CPU.
        cpu: usize,
        /// The online CPUs.
        online: CpuSet,
    },
    /// Housekeeping CPUs the run measures.
    HousekeepingMeasured {
        /// Those CPUs.
        overlap: CpuSet,
    },
    /// A duration shorter than the interval (no thread would wake up once).
    RunShorterThanInterval {
        /// The duration.
        duration: Nanos,
        /// The longest interval of the run's threads.
        interval: Nanos,
    },
    /// A respond workload's own settings ([`RespondProblem`]).
    Respond(RespondProblem),
    /// A noise workload's own settings ([`NoiseProblem`]).
    Noise(NoiseProblem),
}

/// The most events (wake-ups above `--event-above`) kept per thread: 24 bytes each, 24 MB.
pub const MAX_EVENT_CAPACITY: usize = 1_000_000;

/// The shortest interval a run accepts: 1 µs, as cyclictest. A shorter one only measures
/// missed periods while the measuring threads hold every CPU at a real-time priority.
pub const MIN_INTERVAL: Nanos = Nanos(1_000);

/// The longest interval of a measuring thread: 1 hour (the engine's limit).
pub const MAX_INTERVAL: Nanos = rtscope_engine::MAX_INTERVAL;

/// A plan that cannot run: the field at fault and the problem.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.message(Naming::Flags))]
pub struct PlanError {
    /// The setting at fault.
    pub field: Field,
    /// What is wrong with it.
    pub problem: Problem,
}

impl PlanError {
    fn new(field: Field, problem: Problem) -> Self {
        PlanError { field, problem }
    }

    /// The message, with fields named the front end's way.
    pub fn message(&self, naming: Naming) -> String {
        let n = |f: Field| naming.name(f);
        match &self.problem {
            Problem::ThreadCount { asked, max } => format!(
                "invalid value '{asked}' for '{}': use 1..{max}",
                n(Field::Threads)
            ),
            Problem::ZeroInterval => format!(
                "invalid value for '{}': the interval must be greater than 0",
                n(Field::Interval)
            ),
            Problem::DeadlineNeedsRuntime => format!(
                "'{} deadline' needs '{}' (e.g. {} 100us)",
                n(Field::Policy),
                n(Field::DlRuntime),
                n(Field::DlRuntime)
            ),
            Problem::DeadlineOrder { runtime, deadline, period } => format!(
                "invalid SCHED_DEADLINE parameters: need 1024ns <= runtime ({runtime}) <= deadline ({deadline}) <= period ({period})"
            ),
            Problem::Priority { asked, policy } => format!(
                "invalid value '{asked}' for '{}': {policy} needs 1..99",
                n(Field::Priority)
            ),
            Problem::Nice { asked, policy } => format!(
                "invalid value '{asked}' for '{}': {policy} takes a nice value, -20..19",
                n(Field::Priority)
            ),
            Problem::DeadlinePinned => format!(
                "'{}' cannot be combined with '{} deadline': the kernel does not allow pinning SCHED_DEADLINE threads",
                n(Field::Cpus),
                n(Field::Policy)
            ),
            Problem::IntervalTooShort { asked } => format!(
                "invalid value '{asked}' for '{}': use at least {}",
                n(Field::Interval),
                rtscope_core::text::short(MIN_INTERVAL)
            ),
            Problem::IntervalTooLong { asked, longest } => {
                let short = rtscope_core::text::short;
                let by_distance = if self.field == Field::Distance {
                    format!(" (the last thread's would be {})", short(*longest))
                } else {
                    String::new()
                };
                format!(
                    "invalid value '{}' for '{}': a thread's interval must be {}..{} (1 hour){by_distance}",
                    short(*asked),
                    n(self.field),
                    short(MIN_INTERVAL),
                    short(MAX_INTERVAL),
                )
            }
            Problem::EventCapacity { asked } => format!(
                "invalid value '{asked}' for '{}': use 0..{MAX_EVENT_CAPACITY} events per thread",
                n(self.field)
            ),
            Problem::ZeroLength => format!(
                "invalid value 0 for '{}': a run of length 0 has no samples (leave it out for the default length)",
                n(self.field)
            ),
            Problem::HousekeepingOffline { cpu, online } => format!(
                "invalid value for '{}': CPU {cpu} is not online (online CPUs: {online})",
                n(Field::Housekeeping)
            ),
            Problem::HousekeepingMeasured { overlap } => format!(
                "invalid value for '{}': CPU{} {overlap} {} measured; rtscope's own threads must not run where a measuring thread does",
                n(Field::Housekeeping),
                if overlap.len() == 1 { "" } else { "s" },
                if overlap.len() == 1 { "is" } else { "are" }
            ),
            Problem::RunShorterThanInterval { duration, interval } => format!(
                "invalid value '{duration}' for '{}': shorter than the interval ({interval}), no thread would wake up once",
                n(Field::Duration)
            ),
            Problem::Respond(p) => p.message(naming),
            Problem::Noise(p) => p.message(self.field, naming),
        }
    }

    /// How to fix it, where there is more to say than the message.
    pub fn hint(&self, naming: Naming) -> Option<String> {
        match &self.problem {
            Problem::Noise(p) => p.hint(self.field, naming),
            Problem::DeadlinePinned => Some(format!(
                "use {} N to choose how many deadline threads run; isolate CPUs with cpusets for deadline tasks",
                naming.name(Field::Threads)
            )),
            Problem::HousekeepingMeasured { .. } => Some(format!(
                "name CPUs outside {}, or leave {} out: by default rtscope's threads run on the CPUs not measured",
                naming.name(Field::Cpus),
                naming.name(Field::Housekeeping)
            )),
            _ => None,
        }
    }

    /// The usage error (message and hint) in the words of `naming`.
    pub fn usage(&self, naming: Naming) -> rtscope_common::error::UsageError {
        let u = rtscope_common::error::UsageError::new(self.message(naming));
        match self.hint(naming) {
            Some(h) => u.hint(h),
            None => u,
        }
    }
}

/// Everything a front end says about one measurement, typed and unchecked.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanSpec {
    /// CPUs to measure (`None`: every online CPU, threads not restricted to a list).
    pub cpus: Option<CpuSet>,
    /// Measuring threads, spread round-robin over the CPUs (`None`: one per CPU).
    pub threads: Option<usize>,
    /// Scheduling policy.
    pub policy: PolicyChoice,
    /// Real-time priority (1..99) for FIFO/RR; nice value for OTHER/BATCH.
    pub priority: i32,
    /// Lower the priority by one for each further thread.
    pub priospread: bool,
    /// SCHED_DEADLINE runtime.
    pub dl_runtime: Option<Nanos>,
    /// SCHED_DEADLINE relative deadline (default: the period).
    pub dl_deadline: Option<Nanos>,
    /// SCHED_DEADLINE period (default: the interval).
    pub dl_period: Option<Nanos>,
    /// Period between wake-ups.
    pub interval: Nanos,
    /// Extra interval per further thread.
    pub distance: Nanos,
    /// Length of the run (`Some(0)`: until stopped; `None`: [`DEFAULT_DURATION`] unless
    /// `loops` is set).
    pub duration: Option<Nanos>,
    /// Wake-ups per thread.
    pub loops: Option<u64>,
    /// Clock of the deadlines.
    pub clock: ClockKind,
    /// Relative sleeps instead of absolute deadlines.
    pub relative: bool,
    /// mlockall the process.
    pub mlock: bool,
    /// `/dev/cpu_dma_latency` request for the run, µs.
    pub latency: Option<i32>,
    /// Keep every sample above this latency as an event.
    pub event_above: Option<Nanos>,
    /// Events kept per thread.
    pub event_capacity: usize,
    /// Explain every wake-up at or above this latency (`--explain`, docs/explain.md).
    pub explain: Option<Nanos>,
    /// Spikes kept fully explained per minute (`--explain-keep`).
    pub explain_keep: usize,
    /// Which kernel stacks spikes get where the kernel can (`--explain-stacks`: `off` by
    /// default — with hist triggers the late-only stacks cost the measured wake-ups 1.26–1.31×
    /// at p50 in the guests; with eBPF on raw tracepoints 1.025× at p50 and 1.040×
    /// (0.997–1.079) at p99 on this host, BENCHMARKS.md; `auto`: late-only where the kernel
    /// can).
    pub explain_stacks: StackChoice,
    /// Where the flight recorder takes the spikes' events from (`--explain-recorder`: the
    /// tracefs instance's trace events by default; `ebpf`/`auto`: the eBPF rings, tracefs
    /// where they cannot, the reason in the tier line).
    pub explain_recorder: RecorderChoice,
    /// Why explaining, on by default, is off for this run: the reason and the fix (tracefs
    /// unusable here); `None` when it is on or was turned off on purpose.
    pub explain_off: Option<String>,
    /// Keep every sample (a sample ring per thread).
    pub raw: bool,
    /// Limits checked after the run.
    pub limits: Vec<Limit>,
    /// SCHED_FIFO priority of rtscope's control and monitor threads (`None`: SCHED_OTHER);
    /// see [`crate::housekeeping`].
    pub housekeeping_prio: Option<i32>,
    /// CPUs of rtscope's own threads (`None`: the online CPUs not measured); see
    /// [`crate::placement`].
    pub housekeeping_cpus: Option<CpuSet>,
    /// What the run measures (timer wake-ups unless a respond workload).
    pub workload: WorkloadSpec,
}

impl Default for PlanSpec {
    /// A bare `rtscope measure`: every CPU, SCHED_FIFO 90, 1 ms, 60 s, mlock on.
    fn default() -> Self {
        PlanSpec {
            cpus: None,
            threads: None,
            policy: PolicyChoice::Fifo,
            priority: 90,
            priospread: false,
            dl_runtime: None,
            dl_deadline: None,
            dl_period: None,
            interval: Nanos::from_ms(1),
            distance: Nanos::ZERO,
            duration: None,
            loops: None,
            clock: ClockKind::Monotonic,
            relative: false,
            mlock: true,
            latency: None,
            event_above: None,
            event_capacity: 10_000,
            explain: None,
            explain_keep: 5,
            explain_stacks: StackChoice::Off,
            explain_recorder: RecorderChoice::Tracefs,
            explain_off: None,
            raw: false,
            limits: Vec::new(),
            housekeeping_prio: Some(crate::housekeeping::DEFAULT_PRIORITY),
            housekeeping_cpus: None,
            workload: WorkloadSpec::Timer,
        }
    }
}

/// A checked plan: the engine configuration and what the session does around it.
#[derive(Debug, Clone)]
pub struct RunPlan {
    /// The engine configuration.
    pub config: RunConfig,
    /// Limits checked after the run.
    pub limits: Vec<Limit>,
    /// `/dev/cpu_dma_latency` request for the run, µs.
    pub latency: Option<i32>,
    /// One thread per measured CPU (limits are then named `cpu N`, else `thread I (cpu N)`).
    pub per_cpu: bool,
    /// Explain every wake-up at or above this latency (the event log then keeps those too).
    pub explain: Option<Nanos>,
    /// Spikes kept fully explained per minute.
    pub explain_keep: usize,
    /// Which kernel stacks spikes get ([`PlanSpec::explain_stacks`]).
    pub explain_stacks: StackChoice,
    /// Where the flight recorder takes its events from ([`PlanSpec::explain_recorder`]).
    pub explain_recorder: RecorderChoice,
    /// Why explaining, on by default, is off ([`PlanSpec::explain_off`]).
    pub explain_off: Option<String>,
    /// SCHED_FIFO priority asked for rtscope's control and monitor threads (`None`: off).
    pub housekeeping: Option<i32>,
    /// CPUs asked for rtscope's own threads (`None`: the online CPUs not measured); see
    /// [`crate::placement`].
    pub housekeeping_cpus: Option<CpuSet>,
    /// What the threads measure.
    pub workload: Workload,
}

impl RunPlan {
    /// A plan around a configuration the front end built itself (the cyclictest layer).
    pub fn from_config(config: RunConfig, latency: Option<i32>) -> RunPlan {
        RunPlan {
            config,
            limits: Vec::new(),
            latency,
            per_cpu: false,
            explain: None,
            explain_keep: 5,
            explain_stacks: StackChoice::Off,
            explain_recorder: RecorderChoice::Tracefs,
            explain_off: None,
            housekeeping: Some(crate::housekeeping::DEFAULT_PRIORITY),
            housekeeping_cpus: None,
            workload: Workload::Timer,
        }
    }

    /// Where rtscope's own threads run during this run on `online` CPUs.
    pub fn placement(&self, online: &CpuSet) -> crate::placement::Placement {
        crate::placement::Placement::resolve(self.housekeeping_cpus.as_ref(), &self.config, online)
    }

    /// Checks `s` against the online CPUs and lowers it, with its workload.
    pub fn build(s: &PlanSpec, online: &CpuSet) -> Result<RunPlan, PlanError> {
        let mut plan = RunPlan::build_timer(s, online)?;
        workload::lower(&s.workload, &mut plan, online)?;
        noise::lower(&s.workload, &mut plan, online)?;
        Ok(plan)
    }

    /// The shared settings, lowered for timer threads (a respond workload then replaces them).
    fn build_timer(s: &PlanSpec, online: &CpuSet) -> Result<RunPlan, PlanError> {
        let cpus = s.cpus.clone().unwrap_or_else(|| online.clone());
        let n = s.threads.unwrap_or(cpus.len());
        let max = crate::cpus::max_threads();
        if n == 0 || n > max {
            let p = Problem::ThreadCount { asked: n, max };
            return Err(PlanError::new(Field::Threads, p));
        }
        check_interval(s.interval)?;
        check_longest_interval(s, n)?;
        check_length(s, n)?;
        if s.event_capacity > MAX_EVENT_CAPACITY {
            let p = Problem::EventCapacity {
                asked: s.event_capacity,
            };
            return Err(PlanError::new(Field::EventCapacity, p));
        }
        let pol = policy(s)?;
        check_priority(pol, s.priority)?;
        // The kernel refuses SCHED_DEADLINE for a thread whose affinity is narrower than its
        // root domain, so deadline threads are not pinned.
        let deadline = matches!(pol, Policy::Deadline { .. });
        if deadline && s.cpus.is_some() {
            return Err(PlanError::new(Field::Cpus, Problem::DeadlinePinned));
        }
        let threads = timer_threads(s, &cpus, n, pol);
        let mut c = RunConfig::new(threads);
        c.clock = s.clock;
        c.sleep = if s.relative {
            SleepMode::Relative
        } else {
            SleepMode::Absolute
        };
        c.loops = s.loops;
        c.duration = match (s.duration, s.loops) {
            (Some(d), _) => Some(d).filter(|d| d.0 > 0),
            (None, Some(_)) => None,
            (None, None) => Some(DEFAULT_DURATION),
        };
        c.mlock = s.mlock;
        // The explainer takes its spikes from the event log: it keeps the lower threshold.
        c.event_threshold = match (s.event_above, s.explain) {
            (Some(a), Some(e)) => Some(a.min(e)),
            (a, e) => a.or(e),
        };
        c.event_capacity = s.event_capacity;
        if s.raw {
            c.sample_ring = Some(raw_ring(&c));
        }
        if let Some(hk) = &s.housekeeping_cpus {
            check_housekeeping(hk, &c, online)?;
        }
        Ok(RunPlan {
            config: c,
            limits: s.limits.clone(),
            latency: s.latency,
            per_cpu: s.threads.is_none(),
            explain: s.explain,
            explain_keep: s.explain_keep,
            explain_stacks: s.explain_stacks,
            explain_recorder: s.explain_recorder,
            explain_off: s.explain_off.clone(),
            housekeeping: s.housekeeping_prio,
            housekeeping_cpus: s.housekeeping_cpus.clone(),
            workload: Workload::Timer,
        })
    }
}

/// The `n` timer threads of `s` on `cpus` (cyclically) under `pol`: deadline threads unpinned
/// (the kernel refuses SCHED_DEADLINE for a thread whose affinity is narrower than its root
/// domain), each interval `distance` longer than the one before.
fn timer_threads(s: &PlanSpec, cpus: &CpuSet, n: usize, pol: Policy) -> Vec<ThreadSpec> {
    let deadline = matches!(pol, Policy::Deadline { .. });
    (0..n)
        .map(|i| ThreadSpec {
            affinity: (!deadline).then(|| CpuSet::from_cpus([cpus.nth_cyclic(i)])),
            policy: pol,
            // What is applied, and so recorded: idle and deadline threads have no priority.
            priority: match pol {
                _ if s.priospread && pol.is_realtime_priority() => (s.priority - i as i32).max(1),
                Policy::Idle | Policy::Deadline { .. } => 0,
                _ => s.priority,
            },
            interval: s.interval + Nanos(s.distance.0.saturating_mul(i as u64)),
        })
        .collect()
}

/// Housekeeping CPUs must be online and not measured (an unpinned measuring thread measures
/// every CPU).
fn check_housekeeping(hk: &CpuSet, c: &RunConfig, online: &CpuSet) -> Result<(), PlanError> {
    if let Some(cpu) = hk.iter().find(|&cpu| !online.contains(cpu)) {
        let p = Problem::HousekeepingOffline {
            cpu,
            online: online.clone(),
        };
        return Err(PlanError::new(Field::Housekeeping, p));
    }
    let measured = crate::placement::measured_cpus(c, online);
    let overlap = CpuSet::from_cpus(hk.iter().filter(|&cpu| measured.contains(cpu)));
    if !overlap.is_empty() {
        let p = Problem::HousekeepingMeasured { overlap };
        return Err(PlanError::new(Field::Housekeeping, p));
    }
    Ok(())
}

/// Every thread's interval (interval + distance × index) is at most [`MAX_INTERVAL`]: a
/// longer one is a typo more often than a plan, and measures almost nothing.
fn check_longest_interval(s: &PlanSpec, threads: usize) -> Result<(), PlanError> {
    let steps = threads.saturating_sub(1) as u64;
    let last = Nanos(
        s.interval
            .0
            .saturating_add(s.distance.0.saturating_mul(steps)),
    );
    if last > MAX_INTERVAL {
        let p = Problem::IntervalTooLong {
            asked: s.distance,
            longest: last,
        };
        return Err(PlanError::new(Field::Distance, p));
    }
    Ok(())
}

/// A run of zero length, or shorter than its slowest thread's interval, has no samples.
/// Checks a priority for `policy`: 1..99 for the real-time policies, a nice value (-20..19) for
/// SCHED_OTHER and SCHED_BATCH (the kernel would clamp it, and the run would record a priority
/// it did not have). Every front end's one check (`measure`, campaigns, `respond`).
pub fn check_priority(policy: Policy, priority: i32) -> Result<(), PlanError> {
    if policy.is_realtime_priority() && !(1..=99).contains(&priority) {
        let p = Problem::Priority {
            asked: priority,
            policy: policy.name(),
        };
        return Err(PlanError::new(Field::Priority, p));
    }
    let nice = matches!(policy, Policy::Other | Policy::Batch);
    if nice && !(-20..=19).contains(&priority) {
        let p = Problem::Nice {
            asked: priority,
            policy: policy.name(),
        };
        return Err(PlanError::new(Field::Priority, p));
    }
    Ok(())
}

/// Checks an interval: more than 0 and at least [`MIN_INTERVAL`]. Every front end's one check.
pub fn check_interval(interval: Nanos) -> Result<(), PlanError> {
    if interval.0 == 0 {
        return Err(PlanError::new(Field::Interval, Problem::ZeroInterval));
    }
    if interval < MIN_INTERVAL {
        let p = Problem::IntervalTooShort { asked: interval };
        return Err(PlanError::new(Field::Interval, p));
    }
    if interval > MAX_INTERVAL {
        let p = Problem::IntervalTooLong {
            asked: interval,
            longest: interval,
        };
        return Err(PlanError::new(Field::Interval, p));
    }
    Ok(())
}

/// Refuses a run of length zero: `loops` of 0 or a `duration` of 0 (a run without a sample,
/// which would be recorded as complete). Every front end's one check.
pub fn check_nonzero_length(loops: Option<u64>, duration: Option<Nanos>) -> Result<(), PlanError> {
    if loops == Some(0) {
        return Err(PlanError::new(Field::Loops, Problem::ZeroLength));
    }
    if duration.is_some_and(|d| d.0 == 0) {
        return Err(PlanError::new(Field::Duration, Problem::ZeroLength));
    }
    Ok(())
}

fn check_length(s: &PlanSpec, threads: usize) -> Result<(), PlanError> {
    check_nonzero_length(s.loops, s.duration)?;
    let effective = match (s.duration, s.loops) {
        (None, None) => Some(DEFAULT_DURATION),
        (d, _) => d,
    };
    if let Some(d) = effective {
        let slowest = s
            .distance
            .0
            .saturating_mul(threads.saturating_sub(1) as u64);
        let interval = Nanos(s.interval.0.saturating_add(slowest));
        if d < interval {
            let p = Problem::RunShorterThanInterval {
                duration: d,
                interval,
            };
            return Err(PlanError::new(Field::Duration, p));
        }
    }
    Ok(())
}

/// Room for four checkpoint periods (at most 1 s each) of samples, at least 64 Ki.
fn raw_ring(c: &RunConfig) -> usize {
    let fastest = c
        .threads
        .iter()
        .map(|t| t.interval.0)
        .min()
        .unwrap_or(1)
        .max(1);
    ((4_000_000_000 / fastest) as usize).max(1 << 16)
}

fn policy(s: &PlanSpec) -> Result<Policy, PlanError> {
    Ok(match s.policy {
        PolicyChoice::Fifo => Policy::Fifo,
        PolicyChoice::Rr => Policy::Rr,
        PolicyChoice::Other => Policy::Other,
        PolicyChoice::Batch => Policy::Batch,
        PolicyChoice::Idle => Policy::Idle,
        PolicyChoice::Deadline => {
            let period = s.dl_period.unwrap_or(s.interval);
            let deadline = s.dl_deadline.unwrap_or(period);
            let runtime = s
                .dl_runtime
                .ok_or_else(|| PlanError::new(Field::Policy, Problem::DeadlineNeedsRuntime))?;
            if runtime.0 < 1024 || runtime > deadline || deadline > period {
                let p = Problem::DeadlineOrder {
                    runtime,
                    deadline,
                    period,
                };
                return Err(PlanError::new(Field::DlRuntime, p));
            }
            Policy::Deadline {
                runtime,
                deadline,
                period,
            }
        }
    })
}

impl fmt::Display for PolicyChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// `--explain-keep` of `measure` and `noise`: spikes (gaps) kept fully explained per minute,
/// 1-1000 [default: the plan's, 5].
pub fn explain_keep(given: Option<usize>) -> Result<usize, rtscope_common::error::UsageError> {
    match given {
        None => Ok(PlanSpec::default().explain_keep),
        Some(n @ 1..=1000) => Ok(n),
        Some(n) => Err(rtscope_common::error::UsageError::new(format!(
            "--explain-keep: {n} is not 1-1000 (spikes kept per minute)"
        ))),
    }
}

#[cfg(test)]
mod tests;
