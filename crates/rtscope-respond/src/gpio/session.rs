//! One GPIO measurement: a stimulus thread (drives O), rtscope's responder (waits on I, drives
//! R) and a watcher (timestamps J, and K when the stimulus is watched for another responder).
//! Send times and input timestamps travel in preallocated slot rings indexed by the kernel's
//! per-line sequence numbers.

use super::{Edge, EdgeEvent, Gpio, InputOptions, LineId};
use crate::gate::Gate;
use crate::RespondError;
use rtscope_core::{Histogram, Nanos, Stats};
use rtscope_engine::{sys, CpuSet, Policy, RunConfig, ThreadShared, ThreadSpec};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::*};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime};
mod loops;

use loops::{respond, stimulate, watch_loop};

const SLOTS: usize = 1 << 12;
const POLL: Duration = Duration::from_millis(50);
/// After the stimulus ends, edges still arriving within this time are taken.
const DRAIN: Duration = Duration::from_millis(300);

/// Who answers the edges on I.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Responder {
    /// rtscope's own real-time responder thread.
    Own,
    /// Another program (started by the caller); its output R is wired to J. `stimulus_watch`
    /// is an extra input wired to O for ts(I) (else the response is timed from the write to O).
    External {
        /// Optional input K wired to O, on J's chip.
        stimulus_watch: Option<LineId>,
    },
}

/// The measurement's wiring.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// O → I.
    Loopback,
    /// O → I, R → J.
    ScopeEquivalent,
    /// A generator on I (optionally R → J).
    External,
}

impl Mode {
    /// `loopback`, `scope` or `external`.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Loopback => "loopback",
            Mode::ScopeEquivalent => "scope",
            Mode::External => "external",
        }
    }
}

/// A reported interval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Interval {
    /// rtscope's clock before driving O → kernel timestamp on I.
    StimulusToTimestamp,
    /// Kernel timestamp on I → the responder's clock after its wait returned.
    TimestampToWake,
    /// The responder's wake-up → its clock after the write to R returned.
    WakeToResponse,
    /// ts(J) − ts(I): both kernel timestamps.
    Response,
    /// ts(J) − rtscope's clock before driving O (an external responder without a watched I).
    StimulusToResponse,
}

impl Interval {
    /// The name tables and JSON use.
    pub fn name(self) -> &'static str {
        match self {
            Interval::StimulusToTimestamp => "stimulus-to-timestamp",
            Interval::TimestampToWake => "timestamp-to-wakeup",
            Interval::WakeToResponse => "wakeup-to-response",
            Interval::Response => "response",
            Interval::StimulusToResponse => "stimulus-to-response",
        }
    }

    const ALL: [Interval; 5] = [
        Interval::StimulusToTimestamp,
        Interval::TimestampToWake,
        Interval::WakeToResponse,
        Interval::Response,
        Interval::StimulusToResponse,
    ];
}

/// Everything that defines one GPIO measurement.
#[derive(Debug, Clone, PartialEq)]
pub struct GpioConfig {
    /// O: the output rtscope drives (`None`: external stimulus).
    pub stimulus: Option<LineId>,
    /// I: the input the responder waits on.
    pub input: LineId,
    /// R: the responder's output (own responder only).
    pub response: Option<LineId>,
    /// J: the input wired to R.
    pub watch: Option<LineId>,
    /// Who responds.
    pub responder: Responder,
    /// Options of the inputs.
    pub options: InputOptions,
    /// Stimulus period: a rising edge, half a period later a falling one.
    pub interval: Nanos,
    /// Stimulus periods (or, externally stimulated, edges on I) before the end.
    pub count: Option<u64>,
    /// Length of the measurement.
    pub duration: Option<Nanos>,
    /// Policy of the responder and the watcher (the stimulus runs one priority lower).
    pub policy: Policy,
    /// Priority of the responder.
    pub priority: i32,
    /// The responder's CPU.
    pub responder_cpu: Option<usize>,
    /// The stimulus thread's CPU.
    pub stimulus_cpu: Option<usize>,
}

impl GpioConfig {
    /// The wiring this configuration describes.
    pub fn mode(&self) -> Mode {
        match (&self.stimulus, &self.watch) {
            (None, _) => Mode::External,
            (Some(_), None) => Mode::Loopback,
            (Some(_), Some(_)) => Mode::ScopeEquivalent,
        }
    }

    /// Checks the wiring and settings (the front ends call it before anything starts, an
    /// external responder included; [`GpioRun::start`] checks again).
    pub fn validate(&self) -> Result<(), RespondError> {
        let bad = |m: &str| Err(RespondError::Invalid(m.to_string()));
        if self.interval.0 < 2 {
            return bad("the stimulus interval is too short");
        }
        if let Responder::External { stimulus_watch } = &self.responder {
            if self.watch.is_none() {
                return bad(
                    "another program's response is measured on J: give the watched input (--watch)",
                );
            }
            if self.response.is_some() {
                return bad(
                    "--response is rtscope's own responder's output: drop it with --responder-cmd",
                );
            }
            if self.stimulus.is_none() && stimulus_watch.is_none() {
                return bad("with an external stimulus and an external responder, wire the stimulus to a watched input too (--stimulus-watch)");
            }
        }
        if self.watch.is_some() && self.response.is_none() && self.responder == Responder::Own {
            return bad("a watched input (--watch) needs rtscope's response output (--response) wired to it");
        }
        if self.stimulus.is_none() && self.count.is_none() && self.duration.is_none() {
            return bad("an externally stimulated run needs --count or a duration");
        }
        Ok(())
    }

    fn intervals(&self) -> Vec<Interval> {
        let hte = self.options.clock.clock_id().is_none();
        let own = self.responder == Responder::Own;
        let external_ts = matches!(
            &self.responder,
            Responder::External {
                stimulus_watch: Some(_)
            }
        );
        Interval::ALL
            .into_iter()
            .filter(|i| match i {
                Interval::StimulusToTimestamp => own && self.stimulus.is_some() && !hte,
                Interval::TimestampToWake => own && !hte,
                Interval::WakeToResponse => own && self.response.is_some(),
                Interval::Response => self.watch.is_some() && (own || external_ts),
                Interval::StimulusToResponse => {
                    self.watch.is_some() && !own && !external_ts && !hte
                }
            })
            .collect()
    }
}

/// One interval for one edge direction.
#[derive(Debug, Clone)]
pub struct IntervalResult {
    /// The interval.
    pub interval: Interval,
    /// The edge (of I; of J for the response).
    pub edge: Edge,
    /// Statistics (ns).
    pub stats: Stats,
    /// The lossless histogram.
    pub histogram: Histogram,
}

/// Edge counts of one watched input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LineCount {
    /// Rising edges received.
    pub rising: u64,
    /// Falling edges received.
    pub falling: u64,
    /// Edges the kernel dropped (gaps in the line's sequence numbers).
    pub lost: u64,
    /// The level after the last edge (true: high).
    pub last_level: Option<bool>,
}

/// The outcome of one GPIO measurement.
#[derive(Debug, Clone)]
pub struct GpioResult {
    /// The wiring.
    pub mode: Mode,
    /// Edges rtscope drove on O.
    pub stimulus_edges: u64,
    /// Edges received on I (rtscope's responder).
    pub input: LineCount,
    /// Edges received on J.
    pub watch: LineCount,
    /// Per interval and edge.
    pub intervals: Vec<IntervalResult>,
    /// Wall-clock start.
    pub started: SystemTime,
    /// Wall-clock end.
    pub ended: SystemTime,
    /// Stopped before its length.
    pub stopped_early: bool,
    /// A GPIO call that failed during the run.
    pub error: Option<String>,
}

#[derive(Default)]
struct Counts {
    rising: AtomicU64,
    falling: AtomicU64,
    lost: AtomicU64,
    level: AtomicU64,
}

impl Counts {
    fn load(&self) -> LineCount {
        let level = self.level.load(Acquire);
        LineCount {
            rising: self.rising.load(Acquire),
            falling: self.falling.load(Acquire),
            lost: self.lost.load(Acquire),
            last_level: (level != 0).then_some(level == 2),
        }
    }

    /// Counts `ev`; `last` is the previous line sequence number.
    fn count(&self, ev: &EdgeEvent, last: &mut u32) {
        let c = match ev.edge {
            Edge::Rising => &self.rising,
            Edge::Falling => &self.falling,
        };
        c.store(c.load(Relaxed) + 1, Release);
        let gap = ev.line_seqno.wrapping_sub(*last).saturating_sub(1);
        if gap > 0 && gap < u32::MAX / 2 {
            self.lost
                .store(self.lost.load(Relaxed) + u64::from(gap), Release);
        }
        *last = ev.line_seqno;
        self.level
            .store(if ev.edge.level() { 2 } else { 1 }, Release);
    }
}

struct Shared {
    stop: AtomicBool,
    stimulus_done: AtomicBool,
    /// Clock reading before each write to O, by the line sequence number it will get on I.
    stim_time: Box<[AtomicU64]>,
    /// Kernel timestamps on I (or K), by line sequence number.
    input_ts: Box<[AtomicU64]>,
    stimulus_edges: AtomicU64,
    input: Counts,
    watch: Counts,
    error: Mutex<Option<String>>,
    failed: AtomicBool,
    /// Set by [`GpioRun::stop`].
    user_stop: AtomicBool,
    /// CLOCK_MONOTONIC end of an externally stimulated run (`u64::MAX`: none).
    end_ns: u64,
    setup_error: Mutex<Option<RespondError>>,
    recorders: Vec<(Interval, Edge, ThreadShared)>,
}

impl Shared {
    fn fail(&self, e: impl std::fmt::Display) {
        let mut g = self.error.lock().unwrap_or_else(|p| p.into_inner());
        g.get_or_insert(e.to_string());
        self.stop.store(true, Release);
    }

    fn slot(ring: &[AtomicU64], seqno: u32) -> &AtomicU64 {
        &ring[seqno as usize % SLOTS]
    }

    fn recorder(&self, interval: Interval, edge: Edge) -> Option<&ThreadShared> {
        self.recorders
            .iter()
            .find(|(i, e, _)| *i == interval && *e == edge)
            .map(|(_, _, t)| t)
    }
}

/// The requested lines of one measurement.
struct Lines<G: Gpio> {
    input: Option<G::Input>,
    response: Option<G::Output>,
    watch: Option<G::Input>,
    stimulus: Option<G::Output>,
}

impl<G: Gpio> Lines<G> {
    /// Requests every line first, so a missing or busy line fails before anything is driven.
    fn request(gpio: &mut G, c: &GpioConfig) -> Result<Self, RespondError> {
        let opts = c.options;
        let input = match c.responder {
            Responder::Own => Some(gpio.request_input(std::slice::from_ref(&c.input), &opts)?),
            Responder::External { .. } => None,
        };
        let response = match &c.response {
            Some(r) => Some(gpio.request_output(r, false)?),
            None => None,
        };
        let watch = match (&c.watch, &c.responder) {
            (
                Some(j),
                Responder::External {
                    stimulus_watch: Some(k),
                },
            ) => Some(gpio.request_input(&[k.clone(), j.clone()], &opts)?),
            (Some(j), _) => Some(gpio.request_input(std::slice::from_ref(j), &opts)?),
            (None, _) => None,
        };
        let stimulus = match &c.stimulus {
            Some(o) => Some(gpio.request_output(o, false)?),
            None => None,
        };
        Ok(Lines {
            input,
            response,
            watch,
            stimulus,
        })
    }
}

impl Shared {
    /// Allocates everything the threads write (slot rings, one histogram per interval and edge).
    fn new(config: &GpioConfig) -> Self {
        let rc = RunConfig::new(Vec::new());
        let recorders = config
            .intervals()
            .into_iter()
            .flat_map(|i| [(i, Edge::Rising), (i, Edge::Falling)])
            .map(|(i, e)| (i, e, ThreadShared::new(&rc)))
            .collect();
        Shared {
            stop: AtomicBool::new(false),
            stimulus_done: AtomicBool::new(config.stimulus.is_none()),
            stim_time: ring(SLOTS),
            input_ts: ring(SLOTS),
            stimulus_edges: AtomicU64::new(0),
            input: Counts::default(),
            watch: Counts::default(),
            error: Mutex::new(None),
            failed: AtomicBool::new(false),
            user_stop: AtomicBool::new(false),
            end_ns: config
                .duration
                .map_or(u64::MAX, |d| (sys::now(libc::CLOCK_MONOTONIC) + d).0),
            setup_error: Mutex::new(None),
            recorders,
        }
    }
}

/// A GPIO measurement in progress.
pub struct GpioRun {
    config: GpioConfig,
    shared: Arc<Shared>,
    handles: Vec<JoinHandle<()>>,
    started: SystemTime,
}

fn ring(n: usize) -> Box<[AtomicU64]> {
    rtscope_engine::resident_counters(n, 0)
}

fn spec(policy: Policy, priority: i32, cpu: Option<usize>) -> ThreadSpec {
    ThreadSpec {
        affinity: cpu.map(|c| CpuSet::from_cpus([c])),
        policy,
        priority,
        interval: Nanos::from_ms(1),
    }
}

impl GpioRun {
    /// Requests the lines, starts the threads and returns at once. Line errors (no such chip
    /// or line, busy) come back before anything is driven.
    pub fn start<G: Gpio>(gpio: &mut G, config: GpioConfig) -> Result<GpioRun, RespondError> {
        config.validate()?;
        let lines = Lines::request(gpio, &config)?;
        let (input, response, watch, stimulus) =
            (lines.input, lines.response, lines.watch, lines.stimulus);
        let shared = Arc::new(Shared::new(&config));
        let gate = Arc::new(Gate::default());
        let mut run = GpioRun {
            config: config.clone(),
            shared,
            handles: Vec::new(),
            started: SystemTime::now(),
        };
        let rt = spec(config.policy, config.priority, config.responder_cpu);
        let prio = if config.policy.is_realtime_priority() {
            (config.priority - 1).max(1)
        } else {
            config.priority
        };
        let st = spec(config.policy, prio, config.stimulus_cpu);
        let mut spawned = Vec::new();
        if let Some(i) = input {
            spawned.push(
                run.spawn(&gate, "rtscope-gpio-r", rt.clone(), move |sh, c| {
                    respond(sh, i, response, c)
                }),
            );
        }
        if let Some(w) = watch {
            spawned.push(run.spawn(&gate, "rtscope-gpio-w", rt, move |sh, c| {
                watch_loop(sh, w, c)
            }));
        }
        if let Some(o) = stimulus {
            spawned.push(run.spawn(&gate, "rtscope-gpio-s", st, move |sh, c| {
                stimulate(sh, o, c)
            }));
        }
        let mut failure = None;
        for h in spawned {
            match h {
                Ok(h) => run.handles.push(h),
                Err(e) => failure = failure.or(Some(e)),
            }
        }
        if let Some(e) = failure {
            // The threads that did start must not wait for the one that did not.
            run.shared.failed.store(true, Release);
            gate.open_now();
            run.finish_threads();
            return Err(e);
        }
        gate.open_when_ready(run.handles.len());
        run.started = SystemTime::now();
        if run.shared.failed.load(Acquire) {
            let e = run
                .shared
                .setup_error
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .take();
            run.finish_threads();
            return Err(
                e.unwrap_or_else(|| RespondError::Invalid("a thread failed to start".into()))
            );
        }
        Ok(run)
    }

    fn spawn<F>(
        &self,
        gate: &Arc<Gate>,
        name: &str,
        spec: ThreadSpec,
        body: F,
    ) -> Result<JoinHandle<()>, RespondError>
    where
        F: FnOnce(&Shared, &GpioConfig) + Send + 'static,
    {
        let (sh, gate, config) = (self.shared.clone(), gate.clone(), self.config.clone());
        std::thread::Builder::new()
            .name(name.into())
            .stack_size(256 * 1024)
            .spawn(move || {
                if let Err(e) = rtscope_engine::prepare_current_thread(0, &spec, 64 * 1024) {
                    sh.failed.store(true, Release);
                    let mut g = sh.setup_error.lock().unwrap_or_else(|p| p.into_inner());
                    g.get_or_insert(e.into());
                }
                gate.arrive();
                if !sh.failed.load(Acquire) {
                    body(&sh, &config);
                }
            })
            .map_err(RespondError::Spawn)
    }

    /// The live statistics of each interval and edge.
    pub fn live(&self) -> impl Iterator<Item = (Interval, Edge, &ThreadShared)> {
        self.shared.recorders.iter().map(|(i, e, t)| (*i, *e, t))
    }

    /// Asks every thread to stop.
    pub fn stop(&self) {
        self.shared.user_stop.store(true, Release);
        self.shared.stop.store(true, Release);
    }

    /// Whether every thread has finished.
    pub fn is_finished(&self) -> bool {
        self.handles.iter().all(|h| h.is_finished())
    }

    fn finish_threads(&mut self) {
        self.shared.stop.store(true, Release);
        for h in self.handles.drain(..) {
            let _ = h.join();
        }
    }

    /// Waits for the end (stops at once a run without count or duration), collects the result.
    pub fn finish(mut self) -> GpioResult {
        if self.config.count.is_none() && self.config.duration.is_none() {
            self.stop();
        }
        for h in self.handles.drain(..) {
            let _ = h.join();
        }
        let sh = &self.shared;
        let intervals = sh
            .recorders
            .iter()
            .filter(|(_, _, t)| t.stats().count > 0)
            .map(|(i, e, t)| IntervalResult {
                interval: *i,
                edge: *e,
                stats: t.stats(),
                histogram: t.histogram(),
            })
            .collect();
        GpioResult {
            mode: self.config.mode(),
            stimulus_edges: sh.stimulus_edges.load(Acquire),
            input: sh.input.load(),
            watch: sh.watch.load(),
            intervals,
            started: self.started,
            ended: SystemTime::now(),
            stopped_early: sh.user_stop.load(Acquire)
                && sh.stimulus_edges.load(Acquire) < 2 * self.config.count.unwrap_or(u64::MAX / 2),
            error: sh.error.lock().unwrap_or_else(|p| p.into_inner()).take(),
        }
    }
}

impl Drop for GpioRun {
    fn drop(&mut self) {
        self.finish_threads();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(edge: Edge, line_seqno: u32) -> EdgeEvent {
        EdgeEvent {
            offset: 0,
            edge,
            timestamp: Nanos(0),
            seqno: line_seqno,
            line_seqno,
        }
    }

    #[test]
    fn gaps_in_line_sequence_numbers_count_as_lost_edges() {
        let c = Counts::default();
        let mut last = 0;
        c.count(&ev(Edge::Rising, 1), &mut last);
        c.count(&ev(Edge::Falling, 2), &mut last);
        c.count(&ev(Edge::Rising, 7), &mut last); // 3..=6 dropped by the kernel
        c.count(&ev(Edge::Falling, 8), &mut last);
        let n = c.load();
        assert_eq!((n.rising, n.falling, n.lost), (2, 2, 4));
        assert_eq!(n.last_level, Some(false));
        // The counter wraps at 2^32 without a false gap.
        let mut last = u32::MAX;
        c.count(&ev(Edge::Rising, 0), &mut last);
        assert_eq!(c.load().lost, 4);
    }

    #[test]
    fn each_wiring_reports_its_intervals() {
        let line = |n| LineId {
            chip: None,
            line: super::super::LineSel::Offset(n),
        };
        let mut c = GpioConfig {
            stimulus: Some(line(0)),
            input: line(1),
            response: Some(line(2)),
            watch: Some(line(3)),
            responder: Responder::Own,
            options: InputOptions::default(),
            interval: Nanos::from_ms(1),
            count: Some(1),
            duration: None,
            policy: Policy::Other,
            priority: 0,
            responder_cpu: None,
            stimulus_cpu: None,
        };
        assert_eq!(c.mode(), Mode::ScopeEquivalent);
        assert_eq!(c.intervals().len(), 4);
        c.options.clock = super::super::EventClock::Hte;
        assert_eq!(
            c.intervals(),
            vec![Interval::WakeToResponse, Interval::Response],
            "HTE timestamps compare only with each other"
        );
        c.responder = Responder::External {
            stimulus_watch: None,
        };
        c.response = None;
        c.options.clock = super::super::EventClock::Monotonic;
        assert_eq!(c.intervals(), vec![Interval::StimulusToResponse]);
    }
}
