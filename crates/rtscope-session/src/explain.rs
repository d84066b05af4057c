//! `--explain`: the session's side of spike attribution (crate rtscope-trace, docs/explain.md).
//! The explainer starts before the measuring threads (its reaper is forked while the process
//! is still small and not real-time). With a housekeeping CPU ([`crate::placement`]) every
//! control tick hands it the new events of the engine's event log (the wake-ups at or above the
//! threshold) and lets it attribute those whose trace has arrived. Without one the control
//! thread would analyse on a measured CPU, so the analysis waits for the end of the run: the
//! ticks still hand the spikes over, which keeps their trace past the recorder's rolling
//! window (`rtscope_trace::keep`, the worst spikes first when memory is short), and the spikes
//! are attributed once the measuring threads have stopped. At the end it returns the summary,
//! which is stored with the run.

use crate::placement::Placement;
use crate::smi_sampler::SmiState;
use rtscope_core::Nanos;
use rtscope_engine::RunConfig;
use rtscope_engine::{sys, CpuSet, Run, RunResult};
use rtscope_explain::book::{ExplainSummary, Explained};
use rtscope_explain::coarse::{CoarseSample, CoarseThread};
use rtscope_explain::model::Softirq;
use rtscope_explain::model::Spike;
use rtscope_store::{Recorder, SpikeRow, SpikeSummaryRow};
/// Where the flight recorder takes the spikes' events from (`--explain-recorder`), for the
/// front ends that name it without depending on the trace crate.
pub use rtscope_trace::explain::RecorderChoice;
use rtscope_trace::explain::{ExplainConfig, Explainer};
use std::path::Path;
use std::time::{Duration, Instant};

/// The threshold campaigns explain from when their file does not say (`explain`).
pub const DEFAULT_THRESHOLD: Nanos = Nanos(100_000);

/// [`DEFAULT_THRESHOLD`] when tracefs is usable here (root, tracefs mounted or mountable, no
/// lockdown), else `None`: campaigns explain by default only where the flight recorder works.
pub fn default_threshold() -> Option<Nanos> {
    default_choice().ok()
}

/// [`DEFAULT_THRESHOLD`], or why explaining cannot be on by default here, with the fix
/// (`tracefs unavailable: …: mount -t tracefs nodev /sys/kernel/tracing`), for the run's start
/// line, its record and its report.
pub fn default_choice() -> Result<Nanos, ExplainOff> {
    match rtscope_trace::tracefs::Tracefs::discover() {
        Ok(_) => Ok(DEFAULT_THRESHOLD),
        Err(e) => Err(ExplainOff {
            why: e.to_string(),
            root: is_root(),
        }),
    }
}

/// Why explaining cannot be on by default here: tracefs's error, and the fix for people
/// (`Display`: `WHY; fix: FIX`, the run's start line's, record's and report's words).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{why}; fix: {}", self.fix())]
pub struct ExplainOff {
    /// Why tracefs is not usable (its error's text).
    pub why: String,
    /// Whether this process runs as root (the fix differs).
    pub root: bool,
}

impl ExplainOff {
    /// What makes explaining possible here.
    pub fn fix(&self) -> &'static str {
        if !self.root {
            "run rtscope as root (tracefs instances need it)"
        } else if self.why.contains("lockdown") || self.why.contains("not writable") {
            "the kernel's lockdown forbids tracing: boot without lockdown=confidentiality, or \
             explain from the monitors only"
        } else {
            "mount -t tracefs nodev /sys/kernel/tracing (a kernel with CONFIG_TRACING)"
        }
    }
}

/// Whether this process runs as root (the fix differs).
fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// How long the end of a run waits for the trace of its last spikes.
const FINISH_PATIENCE: Duration = Duration::from_millis(1500);

/// The most time a control tick spends attributing spikes (live analysis); the spikes not
/// looked at wait for the next tick, so the checkpoints and the signals keep their cadence
/// however many spikes there are (docs/explain.md "Analysing").
pub const TICK_BUDGET: Duration = Duration::from_millis(200);

/// The longest the analysis at the end of a run takes; the spikes not attributed by then are
/// counted as not traced (timed out), as a second stop signal does (docs/explain.md).
pub const END_BOUND: Duration = Duration::from_secs(30);

/// [`END_BOUND`] of a run stopped by a signal (SIGINT, SIGTERM, SIGHUP): its user wants it
/// to end.
pub const STOPPED_BOUND: Duration = Duration::from_secs(3);

/// At the end of a run, how often the analysis looks at the stop signals (after the spike
/// being attributed).
const LOOK_EVERY: Duration = Duration::from_millis(50);

/// The explainer of one session.
pub struct Explaining {
    ex: Explainer,
    /// Events already handed over, per thread.
    taken: Vec<usize>,
    /// The CPU of each thread when pinned to one.
    cpus: Vec<Option<usize>>,
    /// The measured CPUs.
    measured: Vec<usize>,
    /// The most trace events kept around waiting spikes at once, seen at the ticks.
    kept_peak: usize,
    /// Spikes are attributed during the run (else at its end).
    live: bool,
    /// The SMIs placed in time for the spikes ([`crate::smi_sampler`]).
    smi: SmiState,
}

/// Spikes handed over between two attribution passes at the end of a run whose analysis was
/// deferred (the explainer queues at most `MAX_PENDING`).
const DEFERRED_BATCH: usize = 1024;

/// What a run asks of `--explain` (the plan's `explain`, `explain_keep`, `explain_stacks`,
/// `explain_recorder`).
#[derive(Debug, Clone, Copy)]
pub struct ExplainAsk {
    /// Explain every wake-up at or above this latency (`None`: no explaining).
    pub threshold: Option<Nanos>,
    /// Spikes kept fully explained per minute.
    pub keep: usize,
    /// Which kernel stacks.
    pub stacks: rtscope_trace::tracefs::StackChoice,
    /// Where the flight recorder takes its events from.
    pub recorder: RecorderChoice,
}

impl Explaining {
    /// Starts explaining the run of `config` when `ask` says so, rtscope's threads placed as
    /// `placed`, the trace reader scheduled as the other housekeeping threads (`sched`).
    pub fn start(
        ask: &ExplainAsk,
        config: &RunConfig,
        placed: &Placement,
        sched: crate::housekeeping::Housekeeping,
    ) -> Option<Explaining> {
        let threshold = ask.threshold?;
        let online = sys::online_cpus();
        let pinned = config.pinned_cpus();
        let measured: Vec<usize> = if pinned.is_empty() {
            online.iter().collect()
        } else {
            pinned.iter().collect()
        };
        let mut cfg = ExplainConfig::new(threshold.0, measured.clone(), ask.stacks);
        cfg.per_window = ask.keep;
        cfg.recorder = ask.recorder;
        cfg.monotonic = config.clock == rtscope_engine::ClockKind::Monotonic;
        if ask.stacks != rtscope_trace::tracefs::StackChoice::Off {
            let probe = rtscope_check::LiveProbe;
            let sys = rtscope_check::System::new(std::path::Path::new("/"), &probe);
            cfg.preemption = rtscope_trace::tracefs::late::Preemption::of_model(
                rtscope_check::preemption_model(&sys).as_deref(),
            );
        }
        cfg.reader_fifo = match sched {
            crate::housekeeping::Housekeeping::Fifo(p) => Some(p),
            crate::housekeeping::Housekeeping::Normal(_) => None,
        };
        if !placed.live_analysis() {
            cfg.trace_window_ns = rtscope_trace::explain::DEFERRED_TRACE_WINDOW_NS;
        }
        cfg.housekeeping = placed
            .cpus()
            .map(|c| c.iter().collect())
            .unwrap_or_default();
        let cpus = config
            .threads
            .iter()
            .map(|t| {
                t.affinity
                    .as_ref()
                    .filter(|a| a.len() == 1)
                    .map(|a: &CpuSet| a.nth_cyclic(0))
            })
            .collect();
        let smi = SmiState::start(Path::new("/"), placed.cpus(), &measured, sched);
        Some(Explaining {
            ex: Explainer::start(cfg),
            taken: vec![0; config.threads.len()],
            cpus,
            measured,
            kept_peak: 0,
            live: placed.live_analysis(),
            smi,
        })
    }

    /// The tier chosen, with the reason it is not better.
    pub fn tier_line(&self) -> String {
        self.smi.with_line(self.ex.tier_line("spikes"))
    }

    /// What the run observes with (the tier line's recorder clause), as the store keeps it.
    pub fn recorder_row(&self) -> Recorder {
        recorder_row(&self.ex)
    }

    fn push(
        &mut self,
        i: usize,
        tid: i32,
        cpu_now: Option<usize>,
        events: &[rtscope_engine::Sample],
    ) {
        let from = self.taken[i].min(events.len());
        self.push_new(i, tid, cpu_now, &events[from..]);
    }

    /// Hands thread `i`'s events after those already taken to the explainer.
    fn push_new(
        &mut self,
        i: usize,
        tid: i32,
        cpu_now: Option<usize>,
        new: &[rtscope_engine::Sample],
    ) {
        for s in new {
            let Some(cpu) = self.cpus[i].or(cpu_now) else {
                continue;
            };
            let deadline_ns = s.time.0.saturating_sub(s.latency.0);
            let spike = Spike {
                cpu,
                tid,
                deadline_ns,
                wakeup_ns: s.time.0,
                smis: self.smi.smis_over(deadline_ns, s.time.0),
            };
            self.ex.push_spike(spike);
        }
        self.taken[i] += new.len();
    }

    /// Hands a monitor sample to the coarse tier: per measured CPU, its interrupt and softirq
    /// counts, its steal time and the threads that last ran there over the sample's interval.
    pub fn push_monitor(&mut self, s: &rtscope_monitor::Sample, clock_start: Nanos) {
        for c in coarse_samples(s, clock_start, &self.measured) {
            self.ex.push_coarse(c);
        }
    }

    /// Hands over the new events; attributes what can be when the analysis is live. When it
    /// is deferred to the end of the run, the spikes still go to the explainer now: that pins
    /// their trace (docs/explain.md "Analysing"), which the recorder's rolling window would
    /// otherwise have dropped by the end.
    pub fn tick(&mut self, run: &Run) {
        for (i, t) in run.threads().iter().enumerate() {
            let new = t.events().since(self.taken[i]);
            self.push_new(i, t.tid(), t.cpu(), &new);
        }
        if self.live {
            self.ex.poll_until(Instant::now() + TICK_BUDGET);
        }
        self.kept_peak = self.kept_peak.max(self.ex.kept_events());
    }

    /// The most trace events kept around waiting spikes at once, seen at the ticks.
    pub fn kept_peak(&self) -> usize {
        self.kept_peak
    }

    /// The last events, then the summary; the trace instance is removed. A deferred analysis
    /// hands the events over in batches, attributing between them. The analysis is bounded
    /// ([`END_BOUND`]) and a stop signal (the second SIGINT) ends it between two slices of
    /// spikes: the spikes left are counted as not traced (timed out), the cut is said on
    /// stderr and returned (its signal, when one cut it). A run `stopped` by a signal gets
    /// [`STOPPED_BOUND`].
    pub fn finish(mut self, r: &RunResult, stopped: bool) -> (ExplainSummary, Option<Cut>) {
        // Its last read covers the last wake-ups (the measuring threads have stopped).
        self.smi.stop();
        let start = Instant::now();
        let bound = if stopped { STOPPED_BOUND } else { END_BOUND };
        let mut end = EndAnalysis {
            until: start + bound,
            bound,
            cut: None,
            handed: self.ex.pending(),
            left: 0,
        };
        for t in &r.threads {
            let mut upto = self.taken[t.index];
            while upto < t.events.len() {
                upto = (upto + DEFERRED_BATCH).min(t.events.len());
                let before = self.ex.pending();
                self.push(t.index, t.tid, t.cpu, &t.events[..upto]);
                end.handed += self.ex.pending().saturating_sub(before);
                if !self.live || end.cut.is_some() {
                    self.pass(&mut end);
                }
            }
        }
        // The last spikes' trace may still be on its way.
        let patience = Instant::now() + FINISH_PATIENCE;
        while self.ex.pending() > 0 && self.pass(&mut end) && Instant::now() < patience {
            if self.ex.pending() > 0 {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        if let Some(by) = end.cut {
            rtscope_common::error::warn(&cut_line(by, end.bound, end.handed, end.left));
        }
        self.ex.give_up();
        (self.ex.finish(Duration::ZERO), end.cut)
    }

    /// One pass over the waiting spikes, a stop signal and the bound looked at every
    /// [`LOOK_EVERY`]; once cut, the waiting spikes are given up (not traced, timed out).
    /// Returns whether it was not cut.
    fn pass(&mut self, end: &mut EndAnalysis) -> bool {
        while end.cut.is_none() {
            if let Some(sig) = rtscope_common::signals::pending_stop_signal() {
                end.cut = Some(Cut::Signal(sig));
            } else if Instant::now() >= end.until {
                end.cut = Some(Cut::Bound);
            } else if self
                .ex
                .poll_until(end.until.min(Instant::now() + LOOK_EVERY))
            {
                return true;
            }
        }
        end.left += self.ex.pending();
        self.ex.give_up();
        false
    }
}

/// What ended the analysis at the end of a run early.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cut {
    /// A stop signal (its number).
    Signal(i32),
    /// [`END_BOUND`] ran out.
    Bound,
}

impl Cut {
    /// The stop signal that cut the analysis, if one did.
    pub fn signal(self) -> Option<i32> {
        match self {
            Cut::Signal(s) => Some(s),
            Cut::Bound => None,
        }
    }
}

/// The analysis at the end of a run, as it goes.
struct EndAnalysis {
    /// Its bound.
    bound: Duration,
    /// When it runs out.
    until: Instant,
    /// What cut it, once something has.
    cut: Option<Cut>,
    /// Spikes handed to it (waiting at the stop, then the last events').
    handed: usize,
    /// Spikes given up once it was cut.
    left: usize,
}

/// The line said when the end's analysis was cut: what cut it and what the rest counts as.
fn cut_line(by: Cut, bound: Duration, handed: usize, left: usize) -> String {
    let by = match by {
        Cut::Signal(s) => format!("stopped by {}", rtscope_common::signals::signal_name(s)),
        Cut::Bound => format!("stopped at its bound of {} s", bound.as_secs()),
    };
    format!(
        "explain: the analysis of the spikes at the end of the run was {by}; the spikes not \
         attributed ({left} of the {handed} handed to it) are counted as not traced (timed \
         out)"
    )
}

/// The coarse samples of one monitor sample for `cpus` (none for the first sample, which has
/// no interval). Rates become counts over the interval.
pub fn coarse_samples(
    s: &rtscope_monitor::Sample,
    clock_start: Nanos,
    cpus: &[usize],
) -> Vec<CoarseSample> {
    let Some(interval) = s.interval else {
        return Vec::new();
    };
    let secs = interval.as_secs_f64();
    let end = clock_start.0 + s.at.as_nanos() as u64;
    cpus.iter()
        .map(|&cpu| {
            let suffix = format!(".cpu{cpu}");
            let per_cpu = |prefix: &str| -> Vec<(String, u64)> {
                s.readings
                    .iter()
                    .filter_map(|r| {
                        let name = r.metric.strip_prefix(prefix)?.strip_suffix(&suffix)?;
                        Some((name.to_string(), (r.value * secs).round().max(0.0) as u64))
                    })
                    .collect()
            };
            CoarseSample {
                cpu,
                start_ns: end.saturating_sub(interval.as_nanos() as u64),
                end_ns: end,
                irqs: per_cpu("irq_rate."),
                softirqs: per_cpu("softirq_rate.")
                    .into_iter()
                    .filter_map(|(n, k)| Some((Softirq::from_name(&n)?, k)))
                    .collect(),
                // `steal.cpuN` is the share (%) of the interval the hypervisor took.
                steal_ns: s.value(&format!("steal.cpu{cpu}")).map_or(0, |pct| {
                    (pct / 100.0 * interval.as_nanos() as f64).round() as u64
                }),
                threads: s
                    .top
                    .iter()
                    .filter(|t| t.last_cpu as usize == cpu)
                    .map(|t| {
                        let thread = CoarseThread {
                            comm: t.comm.clone(),
                            tid: t.tid as i32,
                        };
                        (
                            thread,
                            (t.cpu_percent / 100.0 * interval.as_nanos() as f64) as u64,
                        )
                    })
                    .collect(),
            }
        })
        .collect()
}

/// What `ex` observes with (its recorder, trace events and kernel stacks), as the store keeps
/// it beside the run's explanation.
pub fn recorder_row(ex: &Explainer) -> Recorder {
    ex.observed().clone()
}

/// The store rows of a summary; offsets are from `clock_start` (the run's start on its clock).
pub fn store_rows(s: &ExplainSummary, clock_start: Nanos) -> (SpikeSummaryRow, Vec<SpikeRow>) {
    let tier = |e: &Explained| match e {
        Explained::Traced(_) => s.tier,
        Explained::Coarse(_) => rtscope_explain::model::Tier::Coarse,
    };
    let tier_key = |t: rtscope_explain::model::Tier| {
        serde_json::to_value(t)
            .ok()
            .and_then(|v| v.as_str().map(String::from))
            .unwrap_or_default()
    };
    let rows = s
        .worst
        .iter()
        .map(|e| {
            let (cpu, tid, latency, culprit) = match e {
                Explained::Traced(a) => (
                    a.spike.cpu,
                    a.spike.tid,
                    a.spike.latency_ns(),
                    a.charges
                        .first()
                        .map(|c| (rtscope_explain::words::label(&c.category), c.ns)),
                ),
                Explained::Coarse(c) => (c.spike.cpu, c.spike.tid, c.spike.latency_ns(), None),
            };
            SpikeRow {
                cpu: cpu as u32,
                tid,
                offset_ns: e.wakeup_ns().saturating_sub(clock_start.0),
                latency_ns: latency,
                tier: tier_key(tier(e)),
                culprit: culprit.as_ref().map(|c| c.0.clone()),
                culprit_ns: culprit.map(|c| c.1),
                detail: serde_json::to_string(e).unwrap_or_default(),
            }
        })
        .collect();
    let summary = SpikeSummaryRow {
        tier: tier_key(s.tier),
        tier_reason: s.tier_reason.clone(),
        threshold_ns: s.threshold_ns,
        clock_start_ns: clock_start.0,
        summary: serde_json::to_string(s).unwrap_or_default(),
    };
    (summary, rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtscope_monitor::{Reading, Sample, ThreadShare};

    /// The reason as the run's start line says it.
    fn off_reason(why: &str, root: bool) -> String {
        let why = why.to_string();
        ExplainOff { why, root }.to_string()
    }

    #[test]
    fn the_reason_explaining_is_off_names_the_fix() {
        let mounted = off_reason(
            "tracefs unavailable: no tracefs mount with instances/",
            true,
        );
        assert!(mounted.ends_with(
            "; fix: mount -t tracefs nodev /sys/kernel/tracing (a kernel with CONFIG_TRACING)"
        ));
        let locked = off_reason(
            "tracefs unavailable: /x/instances is not writable (not root, or kernel lockdown)",
            true,
        );
        assert!(
            locked.contains("fix: the kernel's lockdown forbids tracing"),
            "{locked}"
        );
        let user = off_reason("tracefs unavailable: /x/instances is not writable", false);
        assert_eq!(
            user,
            "tracefs unavailable: /x/instances is not writable; fix: run rtscope as root \
             (tracefs instances need it)"
        );
    }

    #[test]
    fn a_cut_analysis_says_what_cut_it_and_what_the_rest_counts_as() {
        let by_signal = cut_line(Cut::Signal(libc::SIGINT), STOPPED_BOUND, 40, 7);
        assert!(by_signal.contains("was stopped by SIGINT;"), "{by_signal}");
        assert!(
            by_signal.ends_with("(7 of the 40 handed to it) are counted as not traced (timed out)"),
            "{by_signal}"
        );
        let by_bound = cut_line(Cut::Bound, END_BOUND, 5, 5);
        assert!(
            by_bound.contains("stopped at its bound of 30 s"),
            "{by_bound}"
        );
        assert_eq!(Cut::Signal(libc::SIGTERM).signal(), Some(libc::SIGTERM));
        assert_eq!(Cut::Bound.signal(), None);
    }

    #[test]
    fn monitor_rates_become_counts_of_the_measured_cpus() {
        let reading = |metric: &str, value: f64| Reading {
            metric: metric.into(),
            value,
            unit: "1/s",
        };
        let s = Sample {
            at: Duration::from_secs(3),
            interval: Some(Duration::from_millis(500)),
            readings: vec![
                reading("irq_rate.24 eth0.cpu1", 200.0),
                reading("irq_rate.LOC.cpu0", 1000.0),
                reading("softirq_rate.NET_RX.cpu1", 50.0),
                reading("cpu_busy.cpu1", 40.0),
                reading("steal.cpu1", 10.0),
                reading("steal.cpu0", 90.0),
            ],
            states: vec![],
            top: vec![ThreadShare {
                pid: 7,
                tid: 8,
                comm: "hog".into(),
                cpu_percent: 50.0,
                last_cpu: 1,
                kernel_thread: false,
                own: false,
            }],
        };
        let c = coarse_samples(&s, Nanos(1_000), &[1]);
        assert_eq!(c.len(), 1);
        assert_eq!((c[0].start_ns, c[0].end_ns), (2_500_001_000, 3_000_001_000));
        assert_eq!(c[0].irqs, vec![("24 eth0".to_string(), 100)]);
        assert_eq!(c[0].softirqs, vec![(Softirq::NetRx, 25)]);
        assert_eq!(c[0].steal_ns, 50_000_000, "10 % of 500 ms, CPU 1's own");
        assert_eq!(c[0].threads[0].1, 250_000_000);
        assert!(coarse_samples(
            &Sample {
                interval: None,
                ..s
            },
            Nanos(0),
            &[1]
        )
        .is_empty());
    }
}
