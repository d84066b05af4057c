//! `rtscope noise` below the command line (its plan is the `plan` module's `NoiseSpec`, its
//! session: the `noise_session` module): the per-CPU summary (`rtla osnoise top`'s columns), its limits
//! (`max_single`, `available`) and its record in the run database ([`record`]: `kind =
//! noise`, one "thread" per CPU, whose samples are the loop's gaps and whose events are the
//! gaps over the threshold, with their start).

use rtscope_core::Nanos;
use rtscope_engine::noise::{Gap, NoiseConfig, NoiseThread};
use rtscope_engine::CpuSet;
use serde::Serialize;
use std::path::Path;

/// The default duty cycle: 950 ms of every second, the kernel's default RT throttling budget
/// (`sched_rt_runtime_us` 950000 of `sched_rt_period_us` 1000000). A SCHED_FIFO loop at this
/// duty never reaches the throttle, and the 50 ms it leaves let the CPU's own kernel threads
/// (RCU, kworkers, ksoftirqd) run outside the measured time instead of starving.
pub const DEFAULT_RUNTIME: Nanos = Nanos::from_ms(950);
/// See [`DEFAULT_RUNTIME`].
pub const DEFAULT_PERIOD: Nanos = Nanos::from_secs(1);
/// The default threshold: 1 µs, the kernel osnoise tracer's since 2024.
pub const DEFAULT_THRESHOLD: Nanos = Nanos::from_us(1);

/// The most gaps a CPU's ring or its kept set may hold: 16,777,216, 24 bytes each (384 MiB
/// per CPU). Within that, all the rings together must fit in half of the memory available
/// (the `NoiseSpec` checks of the `plan` module).
pub const MAX_GAPS: usize = 1 << 24;

/// Bytes one gap takes in a ring or in the kept set (its start, length and SMI count).
pub const GAP_BYTES: u64 = 24;

/// `MemAvailable` of `root`/proc/meminfo in bytes (`None` where unknown: kernels before 3.14).
pub fn mem_available(root: &Path) -> Option<u64> {
    let text = std::fs::read_to_string(root.join("proc/meminfo")).ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb.saturating_mul(1024))
}

/// One CPU's summary, `rtla osnoise top`'s columns.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CpuNoise {
    /// The CPU.
    pub cpu: usize,
    /// Time in the loop, ns.
    pub runtime_ns: u64,
    /// Sum of the gaps over the threshold, ns.
    pub noise_ns: u64,
    /// `100 × (runtime − noise) / runtime`; `None` before any runtime.
    pub available_percent: Option<f64>,
    /// The longest gap, ns.
    pub max_single_ns: Option<u64>,
    /// Gaps over the threshold.
    pub gaps_over_threshold: u64,
    /// Gaps over the threshold the ring dropped before they were read (counted in the totals).
    pub gaps_dropped: u64,
    /// Gaps over the threshold read but not kept, shorter than the `--keep-gaps` longest
    /// (counted in the totals).
    pub gaps_not_kept: u64,
    /// Iterations.
    pub iterations: u64,
    /// Iterations per second of runtime.
    pub iterations_per_s: Option<f64>,
    /// The loop's shortest gap: its resolution.
    pub resolution_ns: Option<u64>,
    /// Steal time and SMIs on the CPU during the run (unknown until the run's counters are
    /// read: [`run::Outcome::rows`]).
    #[serde(flatten)]
    pub platform: platform::CpuPlatform,
}

impl CpuNoise {
    /// The summary of one thread's result.
    pub fn of(t: &NoiseThread) -> CpuNoise {
        let tot = &t.totals;
        let runtime = tot.runtime.0;
        CpuNoise {
            cpu: t.cpu,
            runtime_ns: runtime,
            noise_ns: tot.noise.0,
            available_percent: tot.available_percent(),
            max_single_ns: tot.max.map(|g| g.duration.0),
            gaps_over_threshold: tot.over,
            gaps_dropped: t.gaps_dropped,
            gaps_not_kept: 0,
            iterations: tot.iterations(),
            iterations_per_s: (runtime > 0).then(|| tot.iterations() as f64 * 1e9 / runtime as f64),
            resolution_ns: tot.histogram.min().map(|m| m.0),
            platform: platform::CpuPlatform::default(),
        }
    }
}

/// A noise limit: `max_single=20us` or `available=99.99%`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum NoiseLimit {
    /// No single gap longer than this.
    MaxSingle(Nanos),
    /// At least this share of the runtime available, percent.
    Available(f64),
}

/// A noise limit that cannot be read: the text and why (the front end names its setting).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{text:?}: {why}")]
pub struct NoiseLimitError {
    /// The text given.
    pub text: String,
    /// What is wrong with it.
    pub why: String,
}

impl NoiseLimitError {
    /// How a limit is written.
    pub const HINT: &'static str = "use max_single=DURATION (e.g. max_single=20us) or available=PERCENT (e.g. available=99.99%)";
}

/// Parses a limit: `max_single=20us` or `available=99.99%`.
pub fn parse_limit(text: &str) -> Result<NoiseLimit, NoiseLimitError> {
    let bad = |why: String| NoiseLimitError {
        text: text.to_string(),
        why,
    };
    let (key, value) = text
        .split_once('=')
        .ok_or_else(|| bad("expected STAT=VALUE".into()))?;
    match key.trim() {
        "max_single" => Nanos::parse_with_default_unit(value.trim(), "us")
            .map(NoiseLimit::MaxSingle)
            .map_err(|e| bad(e.to_string())),
        "available" => {
            let v = value.trim().trim_end_matches('%');
            match v.parse::<f64>() {
                Ok(p) if (0.0..=100.0).contains(&p) => Ok(NoiseLimit::Available(p)),
                _ => Err(bad("the share must be a percentage from 0 to 100".into())),
            }
        }
        other => Err(bad(format!("unknown statistic {other:?}"))),
    }
}

/// One limit checked on one CPU.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NoiseCheck {
    /// The CPU.
    pub cpu: usize,
    /// `max_single` or `available`.
    pub stat: &'static str,
    /// The limit as given (`20us`, `99.99%`).
    pub limit: String,
    /// The value measured (`unknown` without any runtime).
    pub value: String,
    /// Whether it held; a value that is unknown fails.
    pub passed: bool,
}

/// Checks every limit on every CPU.
pub fn check_limits(limits: &[NoiseLimit], cpus: &[CpuNoise]) -> Vec<NoiseCheck> {
    use rtscope_core::text::short;
    let mut out = Vec::new();
    for c in cpus {
        for l in limits {
            let (stat, limit, value, passed) = match *l {
                NoiseLimit::MaxSingle(max) => (
                    "max_single",
                    short(max),
                    c.max_single_ns
                        .map_or("unknown".into(), |v| short(Nanos(v))),
                    c.max_single_ns.is_some_and(|v| v <= max.0),
                ),
                NoiseLimit::Available(min) => (
                    "available",
                    format!("{min}%"),
                    c.available_percent
                        .map_or("unknown".into(), |v| format!("{v:.5}%")),
                    c.available_percent.is_some_and(|v| v >= min),
                ),
            };
            out.push(NoiseCheck {
                cpu: c.cpu,
                stat,
                limit,
                value,
                passed,
            });
        }
    }
    out
}

pub mod analysis;
pub mod hwlat;
pub mod kept;
pub mod platform;
pub mod record;
pub mod run;

/// The least gap explained by default: rtla osnoise's default noise threshold.
pub const EXPLAIN_FLOOR: Nanos = Nanos(5_000);

/// What `rtscope noise` explains without `--explain`, as `osnoise top` counts its causes by
/// default: every gap from the run's gap threshold, at least [`EXPLAIN_FLOOR`], where tracefs
/// is usable; else why not, with the fix ([`crate::explain::default_choice`]).
/// `gap_threshold` is the one given (`None`: [`DEFAULT_THRESHOLD`]).
pub fn default_explain(gap_threshold: Option<Nanos>) -> Result<Nanos, crate::explain::ExplainOff> {
    crate::explain::default_choice()?;
    Ok(gap_threshold
        .unwrap_or(DEFAULT_THRESHOLD)
        .max(EXPLAIN_FLOOR))
}

#[cfg(test)]
mod tests;

/// `rtscope noise --explain`: the gaps handed to the same flight recorder and charging step as
/// `measure --explain`. A gap is a spike whose interval is `[gap start, gap end]`: the "deadline"
/// is the loop's last reading before the gap and the "wake-up" the first after it, so every
/// nanosecond between them is charged to what ran on the CPU (IRQ, softirq, thread, NMI) or
/// stated as unexplained.
pub struct NoiseExplainer {
    ex: rtscope_trace::explain::Explainer,
    live: bool,
    /// The SCHED_FIFO priority of the trace reader, and of the control thread while it
    /// attributes gaps during the run: set when the housekeeping CPUs are apart from every
    /// measured one.
    fifo: Option<i32>,
}

impl NoiseExplainer {
    /// Starts recording `cpus` (before the loops start: the reaper forks while the process is
    /// small). With housekeeping CPUs the gaps are attributed during the run, else at its end.
    /// `keep` gaps a minute are kept with their charges, the worst first (`--explain-keep`).
    pub fn start(
        threshold: Nanos,
        cpus: &[usize],
        housekeeping: Option<&CpuSet>,
        keep: usize,
    ) -> Self {
        Self::start_with_siblings(threshold, cpus, housekeeping, None, keep)
    }

    /// [`NoiseExplainer::start`] with each measured CPU's SMT siblings given (`None`: the
    /// kernel's topology), traced beside it.
    pub fn start_with_siblings(
        threshold: Nanos,
        cpus: &[usize],
        housekeeping: Option<&CpuSet>,
        siblings: Option<Vec<(usize, Vec<usize>)>>,
        keep: usize,
    ) -> Self {
        // Stacks at every switch into and waking of the loop: it is switched in only after a
        // gap.
        let every = rtscope_trace::tracefs::StackChoice::Every;
        let mut cfg = rtscope_trace::explain::ExplainConfig::new(threshold.0, cpus.to_vec(), every);
        cfg.siblings = siblings;
        cfg.per_window = keep;
        cfg.housekeeping = housekeeping.map(|h| h.iter().collect()).unwrap_or_default();
        if housekeeping.is_none() {
            cfg.trace_window_ns = rtscope_trace::explain::DEFERRED_TRACE_WINDOW_NS;
        }
        // The trace reader at SCHED_FIFO (the housekeeping priority) when it runs apart from
        // every measured CPU, where it cannot take time from a loop: at SCHED_OTHER beside a
        // network load on the housekeeping CPU of a 2-CPU rt-arm64 guest it fell seconds
        // behind, and 7,962 of 10,717 gaps waited for their trace in vain ("trace late").
        let apart =
            !cfg.housekeeping.is_empty() && cfg.housekeeping.iter().all(|c| !cpus.contains(c));
        let fifo = apart.then_some(crate::housekeeping::DEFAULT_PRIORITY);
        cfg.reader_fifo = fifo;
        // The loop never sleeps: a gap the trace fills with the loop alone was taken below the
        // kernel (hypervisor, firmware), not a return to user space.
        cfg.machine = Some(rtscope_trace::machine::Machine {
            busy_loop: true,
            ..rtscope_trace::machine::Machine::read(std::path::Path::new("/"), cpus)
        });
        NoiseExplainer {
            live: housekeeping.is_some(),
            fifo,
            ex: rtscope_trace::explain::Explainer::start(cfg),
        }
    }

    /// The tier in use, with the reason it is not better and the wait for the trace.
    pub fn tier_line(&self) -> String {
        self.ex.tier_line("gaps")
    }

    /// What the run observes with (the tier line's recorder clause), as the store keeps it.
    pub fn recorder_row(&self) -> rtscope_store::Recorder {
        crate::explain::recorder_row(&self.ex)
    }

    /// Whether gaps are attributed during the run (a housekeeping CPU runs the analysis);
    /// else hand them over only after the loops have stopped.
    pub fn is_live(&self) -> bool {
        self.live
    }

    /// The SCHED_FIFO priority the thread attributing gaps during the run takes (`None`:
    /// it stays SCHED_OTHER): the trace reader's, when the housekeeping CPUs are apart from
    /// the measured ones, so a load there delays neither.
    pub fn live_fifo(&self) -> Option<i32> {
        self.fifo.filter(|_| self.live)
    }

    /// Hands over gaps of the loop on `cpu` (thread `tid`); gaps below the threshold are
    /// ignored. Live, it attributes what it can until `until`, in batches (the explainer
    /// queues a bounded number), and returns by then (one spike's attribution past it at
    /// most): the control thread keeps its cadence, its checkpoints and the stop signals it
    /// takes between two drains, however far the attribution is behind; the gaps not looked
    /// at wait for the next call or the end of the run. Deferred, the gaps wait for
    /// [`NoiseExplainer::finish`], their trace kept (the worst first when the queue or the
    /// memory for their trace is full).
    pub fn push(&mut self, cpu: usize, tid: i32, gaps: &[Gap], until: std::time::Instant) {
        let spike = |g: &Gap| rtscope_explain::model::Spike {
            cpu,
            tid,
            deadline_ns: g.start.0,
            wakeup_ns: g.end().0,
            smis: g.smis,
        };
        if !self.live {
            gaps.iter().for_each(|g| self.ex.push_spike(spike(g)));
            return;
        }
        for batch in gaps.chunks(1024) {
            batch.iter().for_each(|g| self.ex.push_spike(spike(g)));
            if std::time::Instant::now() < until {
                self.ex.poll_until(until);
            }
        }
    }

    /// Attributes what is left, within [`analysis::ANALYSIS_BOUND`] and until a stop signal
    /// (`stop`, looked at between slices of gaps; [`analysis::analyse`]), and returns the
    /// summary (the trace instance is removed) with the cut when the analysis ended early.
    /// `announce` says on stderr that the analysis starts.
    pub fn finish(
        mut self,
        announce: bool,
        stop: &mut dyn FnMut() -> Option<i32>,
    ) -> (
        rtscope_explain::book::ExplainSummary,
        Option<analysis::AnalysisCut>,
    ) {
        let cut = analysis::analyse(&mut self.ex, announce, analysis::ANALYSIS_BOUND, stop);
        (self.ex.finish(std::time::Duration::ZERO), cut)
    }
}

use rtscope_explain::classes::ClassTotals;
use rtscope_explain::interference::Interference;

/// One line: each class's share of the traced gap time.
pub fn class_line(t: &ClassTotals) -> String {
    let total = t.total_ns();
    if total == 0 {
        return "time per class: no traced gap time\n".into();
    }
    let pct = |v: u64| format!("{:.1} %", 100.0 * v as f64 / total as f64);
    let parts: Vec<String> = t
        .parts()
        .iter()
        .map(|&(c, v)| format!("{} {}", c.name(), pct(v)))
        .collect();
    format!(
        "time per class ({} traced): {}\n",
        rtscope_core::text::short(Nanos(total)),
        parts.join(", ")
    )
}

/// Each CPU's SMI counter device (`root`/dev/cpu/<N>/msr, in the order of `cpus`) when all
/// of them can be read, for the loops to read after every gap; else none (the run's SMI column
/// says why).
pub fn smi_files(root: &Path, cpus: &[usize]) -> Vec<std::path::PathBuf> {
    match rtscope_monitor::smi::SmiCounter::open(root, cpus) {
        Ok(_) => cpus
            .iter()
            .map(|c| root.join(format!("dev/cpu/{c}/msr")))
            .collect(),
        Err(_) => Vec::new(),
    }
}

/// The interference counts of the traced gaps per CPU, in `rtla osnoise top`'s columns (HW,
/// NMI, IRQ, SIRQ, THREAD; how a gap is counted: [`Interference`]); empty when no gap was traced.
pub fn interference_table(rows: &[Interference]) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let mut s = format!(
        "interference in the traced gaps (as rtla osnoise top counts; HW: no kernel context):\n{:>4} {:>8} {:>8} {:>8} {:>8} {:>8}\n",
        "CPU", "HW", "NMI", "IRQ", "SIRQ", "THREAD"
    );
    for r in rows {
        s.push_str(&format!(
            "{:>4} {:>8} {:>8} {:>8} {:>8} {:>8}\n",
            r.cpu, r.hw, r.nmi, r.irq, r.softirq, r.thread
        ));
    }
    s
}

/// Per CPU and class, how long one traced gap's time in that class was: gaps with some,
/// and the power-of-two buckets (at least – below) holding its median, 99th percentile and
/// maximum; empty when no gap was traced.
pub fn class_histogram_table(hists: &[rtscope_explain::class_hist::ClassHistogram]) -> String {
    if hists.is_empty() {
        return String::new();
    }
    let range = |b: Option<(u64, u64)>| {
        b.map_or("-".into(), |(lo, hi)| {
            format!(
                "{}–{}",
                rtscope_core::text::short(Nanos(lo)),
                rtscope_core::text::short(Nanos(hi))
            )
        })
    };
    let mut s = format!(
        "time per traced gap by class (power-of-two buckets, at least – below):\n{:>4} {:<15} {:>8} {:>17} {:>17} {:>17}\n",
        "CPU", "class", "gaps", "median", "p99", "max"
    );
    for h in hists {
        let name = rtscope_explain::classes::Class::of_key(&h.class)
            .map_or(h.class.as_str(), |c| c.name());
        s.push_str(&format!(
            "{:>4} {:<15} {:>8} {:>17} {:>17} {:>17}\n",
            h.cpu,
            name,
            h.count(),
            range(h.quantile_bounds(0.5)),
            range(h.quantile_bounds(0.99)),
            range(h.quantile_bounds(1.0)),
        ));
    }
    s
}

/// Below SCHED_FIFO/RR (`policy` named as the run's configuration names it: `other`, noise's
/// default like oslat, `batch`, `idle`), the hint that every normal thread on the measured CPUs
/// takes turns with the loops and its time counts as noise, and how to count only what can
/// preempt a real-time thread (the settings named the front end's way). `None` at `fifo`,
/// `rr` and `deadline`.
pub fn policy_hint(policy: &str, naming: crate::field::Naming) -> Option<String> {
    use crate::field::Field;
    if !matches!(policy, "other" | "batch" | "idle") {
        return None;
    }
    Some(format!(
        "hint: the loops ran at SCHED_{} ({}): every normal thread on their CPUs takes turns \
         with them, and its time counts as noise; {} {} counts only what can preempt a \
         real-time thread",
        policy.to_uppercase(),
        naming.setting(Field::Policy, policy),
        naming.setting(Field::Policy, "fifo"),
        naming.setting(Field::Priority, "95"),
    ))
}

/// At SCHED_FIFO/RR, the note that the duty cycle exceeds the kernel's RT throttling budget
/// (`sched_rt_runtime_us` of `sched_rt_period_us` below `root`/proc/sys/kernel; -1 is no
/// throttling): the throttle will then take the CPU from the loop every period, and those gaps
/// are RT throttling, not noise from elsewhere. `None` when it cannot happen or is unknown.
pub fn rt_throttle_note(c: &NoiseConfig, root: &Path) -> Option<String> {
    if !c.policy.is_realtime_priority() {
        return None;
    }
    let read = |name: &str| -> Option<i64> {
        std::fs::read_to_string(root.join("proc/sys/kernel").join(name))
            .ok()?
            .trim()
            .parse()
            .ok()
    };
    let (rt_runtime, rt_period) = (read("sched_rt_runtime_us")?, read("sched_rt_period_us")?);
    if rt_runtime < 0 || rt_period <= 0 {
        return None;
    }
    // runtime/period > rt_runtime/rt_period, in integers.
    let over =
        u128::from(c.runtime.0) * rt_period as u128 > u128::from(c.period.0) * rt_runtime as u128;
    over.then(|| {
        format!(
            "note: spinning {} of every {} at {} exceeds the kernel's RT throttling budget \
             ({rt_runtime} us of every {rt_period} us, /proc/sys/kernel/sched_rt_runtime_us): \
             the gaps it causes are RT throttling, not noise from elsewhere",
            rtscope_core::text::short(c.runtime),
            rtscope_core::text::short(c.period),
            c.policy.name()
        )
    })
}
