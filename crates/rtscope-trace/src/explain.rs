//! The explainer a measurement session drives: picks the tier, runs the flight recorder when it
//! can, takes spikes and monitor samples, and hands back an [`ExplainSummary`].
//!
//! The session calls [`Explainer::push_spike`] for each wake-up above the threshold (from the
//! engine's event log), [`Explainer::push_coarse`] with each monitor interval, and
//! [`Explainer::poll`] now and then from a non-measuring thread; [`Explainer::finish`] at the end.

use crate::book::{ExplainSummary, Explained, SpikeBook};
use crate::coarse::{CoarseContext, CoarseExplanation, CoarseSample};
use crate::machine::Machine;
use crate::model::{NotTraced, Spike, Tier};
use crate::recorder::{FlightRecorder, Outcome};
use crate::tracefs::observed::Observed;
use std::collections::VecDeque;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Spikes waiting for their trace at most. A run whose analysis is deferred to its end
/// queues all its spikes (or a noise run all its gaps: 10,717 in one 2-CPU guest run); the
/// memory for their trace is bounded apart ([`crate::keep`]).
pub const MAX_PENDING: usize = 16384;
/// How long a spike waits for the trace of its CPU to pass its wake-up.
pub const PATIENCE: Duration = Duration::from_secs(2);

/// The recorder's window where the analysis is deferred to the end of the run
/// ([`ExplainConfig::trace_window_ns`]): in the 1 GB QEMU guests, beside a load, the largest
/// spikes of a campaign run (up to 217 ms) were handed over after a 3 s window had passed them.
pub const DEFERRED_TRACE_WINDOW_NS: u64 = 10_000_000_000;

/// How long [`Explainer::start`] waits for the timerlat tracer to be live on every measured
/// CPU. The tier knows what ran only from the tracer's own events, which begin once its
/// per-CPU thread has run; under QEMU TCG a third of `rtscope noise`'s gaps (3,326 of 9,009
/// on rt-arm64) and a tenth of the measured spikes came before that when the run did not wait.
pub const LIVE_WAIT: Duration = Duration::from_secs(5);

/// How long the run waited for the trace to be live, and the CPUs it never was live on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveWait {
    /// How long creating the instance and starting the tracer took (allocating the per-CPU
    /// ring buffers: seconds under QEMU beside a load), before the wait.
    pub setup: Duration,
    /// From the tracer's start to its first event on every measured CPU (or to giving up):
    /// at most [`LIVE_WAIT`].
    pub waited: Duration,
    /// Measured CPUs the tracer was still not live on after [`LIVE_WAIT`].
    pub not_live: Vec<usize>,
}

impl LiveWait {
    /// The wait in words, for the tier line; the set-up before it when it took 100 ms or
    /// more (under load in the RT guest, 16 s of "trace live after" were the set-up's).
    pub fn describe(&self) -> String {
        let setup = if self.setup >= Duration::from_millis(100) {
            format!(", set up in {} ms before", self.setup.as_millis())
        } else {
            String::new()
        };
        if self.not_live.is_empty() {
            return format!("trace live after {} ms{setup}", self.waited.as_millis());
        }
        let cpus: Vec<String> = self.not_live.iter().map(usize::to_string).collect();
        format!(
            "trace not live on CPU {} after {} s{setup}: spikes there are not traced until it is",
            cpus.join(","),
            self.waited.as_secs()
        )
    }
}

/// What the explainer is set up with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExplainConfig {
    /// Spikes at or above this are explained (ns).
    pub threshold_ns: u64,
    /// Measured CPUs (traced).
    pub cpus: Vec<usize>,
    /// CPUs the trace reader may use (not measured); empty keeps its affinity.
    pub housekeeping: Vec<usize>,
    /// SCHED_FIFO priority of the trace reader (rtscope's housekeeping priority), so that a
    /// load cannot starve it; `None` keeps it SCHED_OTHER.
    pub reader_fifo: Option<i32>,
    /// Also trace hrtimer expiry events.
    pub hrtimer_events: bool,
    /// Ring-buffer size per measured CPU (KiB).
    pub buffer_kb: usize,
    /// How much of each CPU's trace the recorder keeps behind its newest event (ns), beside
    /// what waiting spikes pin ([`crate::keep`]): a spike handed over later than this after
    /// its wake-up finds its trace gone. 3 s; longer where the analysis is deferred to the end
    /// of the run (the hand-off then waits for a control thread that shares the measured,
    /// possibly stalled, CPUs).
    pub trace_window_ns: u64,
    /// Book: window length (ns), spikes kept per window, windows kept at most.
    pub window_ns: u64,
    /// Spikes kept per window.
    pub per_window: usize,
    /// Windows kept at most (the window length doubles beyond).
    pub max_windows: usize,
    /// tracefs roots to try instead of the standard mount points (tests).
    pub tracefs_root: Option<PathBuf>,
    /// Use only the coarse tier.
    pub force_coarse: bool,
    /// Which kernel stacks spikes get where the kernel can ([`crate::stacks`]): each caller's
    /// choice, given to [`ExplainConfig::new`] (`noise` at every wake-up, `measure`
    /// `--explain-stacks`'s, `watch` none).
    pub stacks: crate::tracefs::StackChoice,
    /// The idle facts (`None`: read from `/sys` and `/proc` at start).
    pub machine: Option<Machine>,
    /// Each measured CPU's SMT siblings, traced beside it (`None`: from the kernel's topology
    /// at start, [`crate::sibling::smt_siblings`]).
    pub siblings: Option<Vec<(usize, Vec<usize>)>>,
    /// Whether the measured threads sleep on `CLOCK_MONOTONIC` (the trace's clock): the
    /// late-only switch chain is then measured from their timers' expiry
    /// ([`crate::tracefs::late`]).
    pub monotonic: bool,
    /// The kernel's preemption model, for the late-only stacks' held chain
    /// ([`crate::tracefs::late::Preemption`]; the caller reads it, as `rtscope check` does).
    pub preemption: crate::tracefs::late::Preemption,
    /// Where the flight recorder's events come from (`--explain-recorder`): the tracefs
    /// instance's trace events (the default) or the eBPF rings.
    pub recorder: RecorderChoice,
    /// Records per CPU in the eBPF rings (a power of two;
    /// [`crate::recorder::rings::BPF_RECORDS`]).
    pub bpf_records: u32,
}

impl ExplainConfig {
    /// Defaults: the 5 worst spikes of each minute, at most 1440 windows; the kernel stacks
    /// are the caller's choice (`stacks`), never a default.
    pub fn new(
        threshold_ns: u64,
        cpus: Vec<usize>,
        stacks: crate::tracefs::StackChoice,
    ) -> ExplainConfig {
        ExplainConfig {
            threshold_ns,
            cpus,
            housekeeping: Vec::new(),
            reader_fifo: None,
            hrtimer_events: false,
            buffer_kb: 2048,
            trace_window_ns: 3_000_000_000,
            window_ns: 60_000_000_000,
            per_window: 5,
            max_windows: 1440,
            tracefs_root: None,
            force_coarse: false,
            stacks,
            machine: None,
            siblings: None,
            monotonic: true,
            preemption: crate::tracefs::late::Preemption::Later,
            recorder: RecorderChoice::Tracefs,
            bpf_records: crate::recorder::rings::BPF_RECORDS,
        }
    }
}

/// The explainer of one run.
pub struct Explainer {
    cfg: ExplainConfig,
    tier: Tier,
    tier_reason: Option<String>,
    recorder: Option<FlightRecorder>,
    coarse: CoarseContext,
    pending: VecDeque<(Spike, Instant)>,
    book: SpikeBook,
    /// Each spike as it is explained, for [`Explainer::take_explained`] (`None`: the book only).
    done: Option<Vec<Explained>>,
    /// Each spike that got no explanation at all, with the trace's reason (`None`: no trace
    /// is recorded), for [`Explainer::take_unexplained`] (with [`Explainer::keep_explained`]).
    unexplained: Option<Vec<(Spike, Option<NotTraced>)>>,
    /// The wait for the timerlat tracer ([`LIVE_WAIT`]); `None` in the other tiers.
    live: Option<LiveWait>,
    /// The recorder, its events and its stacks, read from the instance at start.
    observed: Observed,
}

impl Explainer {
    /// Starts with the best tier available; never fails (the coarse tier always works).
    /// In the timerlat tier it returns once the tracer is live on every measured CPU (at
    /// most [`LIVE_WAIT`]), so that the run it explains starts traced.
    pub fn start(cfg: ExplainConfig) -> Explainer {
        let t0 = Instant::now();
        let (tier, reason, recorder) = choose(&cfg);
        let setup = t0.elapsed();
        let live = recorder
            .as_ref()
            .filter(|_| tier == Tier::Timerlat)
            .map(|r| {
                let t1 = Instant::now();
                let not_live = r.wait_live(&cfg.cpus, LIVE_WAIT);
                let waited = t1.elapsed();
                // Then whether interrupt exits reach the trace (a tracer period more), so
                // the run's first spikes are not charged to the hypervisor for a lost exit.
                r.wait_checked(&cfg.cpus, LIVE_WAIT.saturating_sub(waited));
                LiveWait {
                    setup,
                    waited,
                    not_live,
                }
            });
        let observed = match &recorder {
            Some(r) => match r.rings() {
                Some(rings) => crate::tracefs::observed::of_rings(
                    r.instance_dir(),
                    crate::tracefs::observed::Followed {
                        tracepoints: rings.attached().len(),
                        typed: rings.typed(),
                    },
                    rings.records(),
                    r.stacks(),
                ),
                None => crate::tracefs::observed::of_instance(
                    r.instance_dir(),
                    tier == Tier::Timerlat,
                    r.stacks(),
                ),
            },
            None => Observed::none(),
        };
        Explainer {
            live,
            observed,
            tier,
            tier_reason: reason,
            recorder,
            coarse: CoarseContext::new(600 * cfg.cpus.len().max(1)),
            pending: VecDeque::new(),
            book: SpikeBook::new(cfg.window_ns, cfg.per_window, cfg.max_windows),
            done: None,
            unexplained: None,
            cfg,
        }
    }

    /// Keeps every spike explained from now on for [`Explainer::take_explained`] too (a watch
    /// stores each window's worst spike with its window).
    pub fn keep_explained(&mut self) {
        self.done.get_or_insert_with(Vec::new);
        self.unexplained.get_or_insert_with(Vec::new);
    }

    /// The spikes that got no explanation at all since the last call, with the trace's reason
    /// (`None`: no trace is recorded and no monitor sample covers them; with
    /// [`Explainer::keep_explained`]).
    pub fn take_unexplained(&mut self) -> Vec<(Spike, Option<NotTraced>)> {
        self.unexplained
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    /// The spikes explained since the last call (with [`Explainer::keep_explained`]).
    pub fn take_explained(&mut self) -> Vec<Explained> {
        self.done.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// Spikes waiting for their trace.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// Gives up on the waiting spikes: each gets the monitors' explanation or none.
    pub fn give_up(&mut self) {
        for (spike, _) in std::mem::take(&mut self.pending) {
            self.unpin(&spike);
            self.fallback(&spike);
        }
    }

    fn add(&mut self, e: Explained) {
        if let Some(d) = self.done.as_mut() {
            d.push(e.clone());
        }
        self.book.add(e);
    }

    /// The tier in use.
    pub fn tier(&self) -> Tier {
        self.tier
    }

    /// Why the tier is not better.
    pub fn tier_reason(&self) -> Option<&str> {
        self.tier_reason.as_deref()
    }

    /// The wait for the timerlat tracer to be live (`None`: another tier).
    pub fn live_wait(&self) -> Option<&LiveWait> {
        self.live.as_ref()
    }

    /// What the run observes with: the recorder, the trace events it enabled, the kernel
    /// stacks it takes (the tier line's last clause; the run's record keeps them).
    pub fn observed(&self) -> &Observed {
        &self.observed
    }

    /// "explaining WHAT: tier T (why not better; how long the trace took to be live; …;
    /// recorder: R, N trace events (groups), stacks: S)": the line each command prints on
    /// stderr when it starts explaining.
    pub fn tier_line(&self, what: &str) -> String {
        let notes: Vec<String> = self
            .tier_reason()
            .map(str::to_owned)
            .into_iter()
            .chain(self.live.as_ref().map(LiveWait::describe))
            .chain(self.recorder.as_ref().and_then(|r| r.stacks().note()))
            .chain(self.recorder.as_ref().map(|r| r.handlers().note()))
            .chain(std::iter::once(self.observed.describe()))
            .collect();
        let tier = self.tier.name();
        format!("explaining {what}: tier {tier} ({})", notes.join("; "))
    }

    /// Why spikes get no kernel stack although they were asked for (`None`: they do, or they
    /// were not asked for, or no trace is recorded).
    pub fn stacks_off(&self) -> Option<&str> {
        match self.recorder.as_ref().map(FlightRecorder::stacks) {
            Some(crate::tracefs::Stacks::Unavailable(why)) => Some(why),
            _ => None,
        }
    }

    /// Whether spikes get kernel stacks.
    pub fn stacks_on(&self) -> bool {
        self.recorder.as_ref().is_some_and(|r| r.stacks().taking())
    }

    /// The instance directory, when recording.
    pub fn instance_dir(&self) -> Option<&std::path::Path> {
        self.recorder.as_ref().map(|r| r.instance_dir())
    }

    /// Queues a spike (ignored below the threshold).
    pub fn push_spike(&mut self, spike: Spike) {
        if spike.latency_ns() < self.cfg.threshold_ns {
            return;
        }
        if self.pending.len() >= MAX_PENDING {
            // Full: the smallest waiting spike makes room for a worse one.
            let smallest = self
                .pending
                .iter()
                .enumerate()
                .min_by_key(|(_, (s, _))| s.latency_ns())
                .map(|(i, (s, _))| (i, s.latency_ns()));
            match smallest {
                Some((i, lat)) if lat < spike.latency_ns() => {
                    if let Some((old, _)) = self.pending.remove(i) {
                        self.unpin(&old);
                        self.not_traced(&old, NotTraced::QueueFull);
                    }
                }
                _ => return self.not_traced(&spike, NotTraced::QueueFull),
            }
        }
        // Its trace is kept past the recorder's window until it is attributed.
        if let Some(r) = &self.recorder {
            r.pin(&spike);
        }
        self.pending.push_back((spike, Instant::now()));
    }

    /// Adds a monitor interval for the coarse tier.
    pub fn push_coarse(&mut self, s: CoarseSample) {
        self.coarse.push(s);
    }

    /// Explains the queued spikes whose context has arrived; gives up on those older than
    /// [`PATIENCE`].
    pub fn poll(&mut self) {
        let n = self.pending.len();
        self.poll_front(n, None);
    }

    /// [`Explainer::poll`] over the `n` oldest waiting spikes only; those still waiting go
    /// behind the others. A caller that must answer a stop signal or keep a bound between two
    /// slices (`rtscope noise` analysing a run's gaps after its loops) polls in slices.
    pub fn poll_some(&mut self, n: usize) {
        self.poll_front(n, None);
    }

    /// One pass of [`Explainer::poll`] over the waiting spikes, stopped before the first spike
    /// looked at once `until` has come: the spikes not looked at wait, first, for the next
    /// call. A control loop that must keep its cadence (the checkpoints and the signals of
    /// `rtscope measure`/`run`) polls this way; one spike's attribution is the most it runs
    /// past `until`. Returns whether the pass was whole.
    pub fn poll_until(&mut self, until: Instant) -> bool {
        let n = self.pending.len();
        self.poll_front(n, Some(until))
    }

    /// Looks at the `n` oldest waiting spikes, or fewer when `until` comes first; those still
    /// waiting go behind the others. Returns whether all `n` were looked at.
    fn poll_front(&mut self, n: usize, until: Option<Instant>) -> bool {
        let now = Instant::now();
        let mut keep = VecDeque::new();
        let mut whole = true;
        for _ in 0..n.min(self.pending.len()) {
            if until.is_some_and(|u| Instant::now() >= u) {
                whole = false;
                break;
            }
            let Some((spike, since)) = self.pending.pop_front() else {
                break;
            };
            if self.look(spike, now.duration_since(since) >= PATIENCE) {
                keep.push_back((spike, since));
            }
        }
        self.pending.extend(keep);
        whole
    }

    /// Attributes one spike if its context has arrived (`waited`: it waited past
    /// [`PATIENCE`], so it gets the monitors' explanation instead); true when it still waits.
    fn look(&mut self, spike: Spike, waited: bool) -> bool {
        let outcome = match &self.recorder {
            Some(r) => r.attribute(&spike),
            // The coarse tier explains a spike once a monitor sample covers it.
            None if self.coarse.covers(&spike) => {
                self.explain_by_monitors(&spike, None);
                return false;
            }
            None => Outcome::Pending,
        };
        if outcome != Outcome::Pending || waited {
            self.unpin(&spike);
        }
        match outcome {
            Outcome::Done(a) => self.add(Explained::Traced(a)),
            Outcome::NotTraced(why) => self.not_traced(&spike, why),
            Outcome::Pending if waited => self.fallback(&spike),
            Outcome::Pending => return true,
        }
        false
    }

    fn unpin(&self, spike: &Spike) {
        if let Some(r) = &self.recorder {
            r.unpin(spike);
        }
    }

    /// Events kept around waiting spikes now (0 without a flight recorder).
    pub fn kept_events(&self) -> usize {
        self.recorder
            .as_ref()
            .map_or(0, FlightRecorder::kept_events)
    }

    /// The monitors' explanation, or none, for a spike no trace explains.
    fn fallback(&mut self, spike: &Spike) {
        match &self.recorder {
            Some(r) if !r.is_live(spike.cpu) => self.not_traced(spike, NotTraced::TracerNotLive),
            Some(_) => self.not_traced(spike, NotTraced::TimedOut),
            None => self.explain_by_monitors(spike, None),
        }
    }

    fn not_traced(&mut self, spike: &Spike, why: NotTraced) {
        self.book.not_traced(why);
        self.explain_by_monitors(spike, Some(why));
    }

    fn explain_by_monitors(&mut self, spike: &Spike, why: Option<NotTraced>) {
        match self.coarse.explain(spike) {
            Some(c) => self.add(Explained::Coarse(CoarseExplanation {
                not_traced: why,
                ..c
            })),
            None => {
                if let Some(u) = self.unexplained.as_mut() {
                    u.push((*spike, why));
                }
                self.book.no_context(spike.latency_ns());
            }
        }
    }

    /// Waits up to `patience` for the last spikes' context, stops recording (the instance is
    /// removed) and returns the summary.
    pub fn finish(mut self, patience: Duration) -> ExplainSummary {
        let until = Instant::now() + patience;
        while !self.pending.is_empty() && Instant::now() < until {
            self.poll();
            std::thread::sleep(Duration::from_millis(20));
        }
        self.give_up();
        let missing_exits = self
            .recorder
            .take()
            .map(|r| r.missing_exits())
            .unwrap_or_default();
        ExplainSummary {
            missing_exits,
            ..self
                .book
                .summary(self.tier, self.tier_reason.clone(), self.cfg.threshold_ns)
        }
    }
}

mod choose;
use choose::choose;
pub use choose::RecorderChoice;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::book::Explained;
    use crate::tracefs::StackChoice;

    #[test]
    fn the_wait_for_the_tracer_is_said_in_words() {
        let live = LiveWait {
            setup: Duration::from_millis(20),
            waited: Duration::from_millis(1234),
            not_live: vec![],
        };
        assert_eq!(live.describe(), "trace live after 1234 ms");
        let slow = LiveWait {
            setup: Duration::from_millis(14_900),
            ..live
        };
        assert_eq!(
            slow.describe(),
            "trace live after 1234 ms, set up in 14900 ms before"
        );
        let not = LiveWait {
            setup: Duration::ZERO,
            waited: LIVE_WAIT,
            not_live: vec![1, 3],
        };
        assert_eq!(
            not.describe(),
            "trace not live on CPU 1,3 after 5 s: spikes there are not traced until it is"
        );
    }

    #[test]
    fn without_tracefs_the_coarse_tier_is_chosen_and_says_why() {
        let dir = std::env::temp_dir().join(format!("rtscope-no-tracefs-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut cfg = ExplainConfig::new(1000, vec![0], StackChoice::Every);
        cfg.tracefs_root = Some(dir.clone());
        let mut ex = Explainer::start(cfg);
        assert_eq!(ex.tier(), Tier::Coarse);
        assert!(
            ex.tier_reason().unwrap().contains("instances"),
            "{:?}",
            ex.tier_reason()
        );
        assert!(
            ex.live_wait().is_none(),
            "no wait outside the timerlat tier"
        );
        let line = ex.tier_line("spikes");
        assert!(
            line.starts_with("explaining spikes: tier coarse ("),
            "{line}"
        );
        assert!(
            line.contains("instances") && !line.contains("trace live"),
            "{line}"
        );
        let spike = Spike {
            cpu: 0,
            tid: 5,
            deadline_ns: 1_000_000,
            wakeup_ns: 1_500_000,
            smis: None,
        };
        ex.push_coarse(CoarseSample {
            cpu: 0,
            start_ns: 0,
            end_ns: 2_000_000,
            irqs: vec![("eth0".into(), 40), ("timer".into(), 1000)],
            softirqs: vec![],
            steal_ns: 7,
            threads: vec![],
        });
        ex.push_spike(spike);
        ex.push_spike(Spike {
            wakeup_ns: 1_000_100,
            ..spike
        }); // below the threshold
        ex.push_spike(Spike { cpu: 1, ..spike }); // no sample for CPU 1
        let s = ex.finish(Duration::ZERO);
        assert_eq!(
            (s.counts.spikes, s.counts.coarse, s.counts.no_context),
            (2, 1, 1)
        );
        let crate::book::Explained::Coarse(c) = &s.worst[0] else {
            panic!("not coarse")
        };
        assert_eq!(c.top_irqs[0], ("timer".to_string(), 1000));
        assert_eq!(c.steal_ns, 7);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_poll_until_a_past_time_looks_at_nothing_and_one_in_time_at_all() {
        let mut cfg = ExplainConfig::new(1000, vec![0], StackChoice::Every);
        cfg.force_coarse = true;
        let mut ex = Explainer::start(cfg);
        for i in 0..3u64 {
            ex.push_spike(Spike {
                cpu: 0,
                tid: 5,
                deadline_ns: 1_000_000 * (i + 1),
                wakeup_ns: 1_000_000 * (i + 1) + 50_000,
                smis: None,
            });
        }
        assert!(!ex.poll_until(Instant::now()), "cut before the first spike");
        assert_eq!(ex.pending(), 3);
        // Covered by a monitor sample: the coarse tier explains them once looked at.
        ex.push_coarse(CoarseSample {
            cpu: 0,
            start_ns: 0,
            end_ns: 10_000_000,
            irqs: vec![],
            softirqs: vec![],
            steal_ns: 0,
            threads: vec![],
        });
        assert!(ex.poll_until(Instant::now() + Duration::from_secs(3600)));
        assert_eq!(ex.pending(), 0);
        assert_eq!(ex.finish(Duration::ZERO).counts.spikes, 3);
    }

    #[test]
    fn a_full_queue_drops_its_smallest_spike_for_a_worse_one_and_counts_it() {
        let mut cfg = ExplainConfig::new(1000, vec![0], StackChoice::Every);
        cfg.force_coarse = true;
        let mut ex = Explainer::start(cfg);
        let spike = |lat: u64| Spike {
            cpu: 0,
            tid: 5,
            deadline_ns: 1_000_000,
            wakeup_ns: 1_000_000 + lat,
            smis: None,
        };
        for i in 0..MAX_PENDING as u64 {
            ex.push_spike(spike(2_000 + i));
        }
        ex.push_spike(spike(1_500)); // smaller than all waiting: not kept
        ex.push_spike(spike(900_000)); // worse: the 2 µs one makes room
        ex.push_coarse(CoarseSample {
            cpu: 0,
            start_ns: 0,
            end_ns: 5_000_000,
            irqs: vec![],
            softirqs: vec![],
            steal_ns: 0,
            threads: vec![],
        });
        let s = ex.finish(Duration::ZERO);
        assert_eq!(s.counts.spikes, MAX_PENDING as u64 + 2);
        assert_eq!(s.counts.not_traced.queue_full, 2);
        assert_eq!(s.counts.traced, 0);
        let worst = s.worst.iter().map(Explained::latency_ns).max();
        assert_eq!(worst, Some(900_000));
        let not_traced = |lat| {
            s.worst.iter().any(|e| {
                matches!(e, Explained::Coarse(c) if c.spike.latency_ns() == lat
                    && c.not_traced == Some(NotTraced::QueueFull))
            })
        };
        assert!(!not_traced(900_000));
    }
}
