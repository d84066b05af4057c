//! Starting, supervising and finishing a run.
//!
//! [`Run::start`] blocks SIGINT, SIGTERM, SIGUSR1 and SIGUSR2 in the calling (control) thread —
//! so the measuring threads it spawns inherit the block and never take them; the one signal
//! they take is [`sys::wake_signal`], sent by [`Run::stop`] to end their sleep — allocates all
//! per-thread memory, starts the threads, waits until every one has applied its affinity and
//! scheduling policy, and releases them together. The control thread then calls [`Run::wait`] in a
//! loop (for display, checkpoints, signals) and finally [`Run::finish`].

use crate::config::{Alignment, Policy, RunConfig, SleepMode, MAX_INTERVAL};
use crate::state::{LinearResult, Phase, Sample, ThreadShared};
use crate::thread::{timing_loop, Control, LoopParams};
use crate::{sys, EngineError};
use rtscope_core::{Histogram, Nanos, Stats};
use std::os::unix::thread::JoinHandleExt;
use std::sync::atomic::Ordering::*;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::SystemTime;

/// Stack size of a measuring thread; all of it is touched before the loop when prefaulting.
const THREAD_STACK: usize = 64 * 1024;

/// How often a stopping run sends its wake signal again to the threads still sleeping.
const WAKE_AGAIN: Nanos = Nanos::from_ms(5);

/// What [`Run::wait`] saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wake {
    /// Every measuring thread has finished.
    Finished,
    /// A signal arrived (SIGINT, SIGTERM, SIGUSR1 or SIGUSR2).
    Signal(i32),
    /// The timeout passed.
    Tick,
}

/// The sample that ended a run through the break threshold (cyclictest `-b`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BreakInfo {
    /// Index of the thread that saw it.
    pub thread: usize,
    /// Its latency.
    pub latency: Nanos,
}

/// The final result of one measuring thread.
#[derive(Debug, Clone)]
pub struct ThreadResult {
    /// Thread index (0-based).
    pub index: usize,
    /// Kernel thread id.
    pub tid: i32,
    /// The CPU it was pinned to, when pinned to exactly one.
    pub cpu: Option<usize>,
    /// Interval of the thread.
    pub interval: Nanos,
    /// Policy.
    pub policy: Policy,
    /// Priority.
    pub priority: i32,
    /// Statistics.
    pub stats: Stats,
    /// The lossless histogram.
    pub histogram: Histogram,
    /// The cyclictest-style linear histogram, when configured.
    pub linear: Option<LinearResult>,
    /// Samples above the event threshold (the first `event_capacity`).
    pub events: Vec<Sample>,
    /// Events beyond the capacity.
    pub events_dropped: u64,
    /// Samples the ring reader was too slow for.
    pub samples_dropped: u64,
    /// Latest sample.
    pub last: Nanos,
}

/// The result of a whole run.
#[derive(Debug, Clone)]
pub struct RunResult {
    /// Per thread.
    pub threads: Vec<ThreadResult>,
    /// Wall-clock time at the release of the threads.
    pub started: SystemTime,
    /// Wall-clock time at the end.
    pub ended: SystemTime,
    /// The run's clock at the release of the threads (to turn sample times into offsets).
    pub clock_start: Nanos,
    /// Whether [`Run::stop`] ended it before its loops or duration were done.
    pub stopped_early: bool,
    /// The break, if one fired.
    pub break_fired: Option<BreakInfo>,
}

impl RunResult {
    /// Statistics over all threads.
    pub fn total_stats(&self) -> Stats {
        self.threads
            .iter()
            .fold(Stats::default(), |acc, t| acc.merge(&t.stats))
    }
    /// Histogram over all threads.
    pub fn total_histogram(&self) -> Histogram {
        let mut h = Histogram::new();
        for t in &self.threads {
            h.merge(&t.histogram);
        }
        h
    }
}

#[derive(Default)]
struct Gate {
    ready: usize,
    failure: Option<EngineError>,
    go: Option<Option<Nanos>>,
}

type GateRef = Arc<(Mutex<Gate>, Condvar)>;

/// A run in progress.
pub struct Run {
    config: RunConfig,
    shared: Vec<Arc<ThreadShared>>,
    control: Arc<Control>,
    handles: Vec<JoinHandle<()>>,
    old_mask: libc::sigset_t,
    control_tid: i32,
    started: SystemTime,
    clock_start: Nanos,
    mlocked: bool,
}

impl Run {
    /// Validates the config, starts the measuring threads and releases them together.
    pub fn start(config: RunConfig) -> Result<Run, EngineError> {
        validate(&config)?;
        let trace_marker = if config.tracemark {
            open_trace_marker()
        } else {
            None
        };
        sys::single_malloc_arena();
        sys::install_wake_handler().map_err(EngineError::WakeSignal)?;
        if config.mlock {
            sys::mlockall().map_err(EngineError::Mlock)?;
        }
        let old_mask = sys::block_run_signals();
        let shared: Vec<Arc<ThreadShared>> = config
            .threads
            .iter()
            .map(|_| Arc::new(ThreadShared::new(&config)))
            .collect();
        let control = Arc::new(Control::new(trace_marker, config.threads.len()));
        let gate: GateRef = Arc::new((Mutex::new(Gate::default()), Condvar::new()));
        let mut run = Run {
            config,
            shared,
            control,
            handles: Vec::new(),
            old_mask,
            control_tid: sys::gettid(),
            started: SystemTime::now(),
            clock_start: Nanos::ZERO,
            mlocked: false,
        };
        run.mlocked = run.config.mlock;
        for i in 0..run.config.threads.len() {
            match run.spawn(i, &gate) {
                Ok(h) => run.handles.push(h),
                Err(e) => {
                    run.release(&gate, None);
                    return Err(e);
                }
            }
        }
        let failure = {
            let (lock, cv) = &*gate;
            let mut g = lock.lock().unwrap_or_else(|p| p.into_inner());
            while g.ready < run.handles.len() && g.failure.is_none() {
                g = cv.wait(g).unwrap_or_else(|p| p.into_inner());
            }
            g.failure.take()
        };
        if let Some(e) = failure {
            run.release(&gate, None);
            return Err(e);
        }
        let clock = sys::clock_id(run.config.clock);
        run.clock_start = sys::now(clock);
        run.started = SystemTime::now();
        run.release(&gate, Some(run.clock_start));
        Ok(run)
    }

    fn spawn(&self, i: usize, gate: &GateRef) -> Result<JoinHandle<()>, EngineError> {
        let spec = self.config.threads[i].clone();
        let sh = Arc::clone(&self.shared[i]);
        let ctl = Arc::clone(&self.control);
        let gate = Arc::clone(gate);
        let cfg = &self.config;
        let (clock, sleep, loops, duration) =
            (sys::clock_id(cfg.clock), cfg.sleep, cfg.loops, cfg.duration);
        let (align, prefault) = (cfg.alignment, cfg.prefault_stack.min(THREAD_STACK / 2));
        let control_tid = self.control_tid;
        let threads = self.config.threads.len();
        let (brk, evt) = (
            cfg.break_threshold.map_or(u64::MAX, |b| b.0),
            cfg.event_threshold.map_or(u64::MAX, |e| e.0),
        );
        std::thread::Builder::new()
            .name(format!("rtscope-m{i}"))
            .stack_size(THREAD_STACK)
            .spawn(move || {
                sh.tid.store(sys::gettid(), Relaxed);
                sys::unblock_wake_signal();
                let setup = setup_thread(i, &spec, &sh, prefault);
                let start = {
                    let (lock, cv) = &*gate;
                    let mut g = lock.lock().unwrap_or_else(|p| p.into_inner());
                    match setup {
                        Ok(()) => g.ready += 1,
                        Err(e) => {
                            g.failure.get_or_insert(e);
                        }
                    }
                    cv.notify_all();
                    while g.go.is_none() {
                        g = cv.wait(g).unwrap_or_else(|p| p.into_inner());
                    }
                    g.go.flatten()
                };
                if let Some(start) = start {
                    let first_deadline = first_deadline(align, i, threads, start, spec.interval);
                    let params = LoopParams {
                        index: i,
                        clock,
                        sleep,
                        interval: spec.interval,
                        first_deadline,
                        loops: loops.unwrap_or(u64::MAX),
                        end: duration
                            .map_or(Nanos::MAX, |d| thread_end(first_deadline, spec.interval, d)),
                        break_threshold: brk,
                        event_threshold: evt,
                    };
                    sh.phase.store(Phase::Running as u8, Release);
                    timing_loop(&sh, &ctl, &params);
                }
                sh.phase.store(Phase::Done as u8, Release);
                if ctl.done.fetch_add(1, AcqRel) + 1 == ctl.threads {
                    let now = SystemTime::now().duration_since(std::time::UNIX_EPOCH);
                    let ns = now.map_or(0, |d| d.as_nanos() as u64);
                    ctl.ended_unix_ns.store(ns, Release);
                    sys::signal_thread(control_tid, sys::done_signal());
                }
            })
            .map_err(|e| EngineError::Spawn {
                threads: self.config.threads.len(),
                source: e,
            })
    }

    fn release(&self, gate: &GateRef, start: Option<Nanos>) {
        if start.is_none() {
            self.control.stop.store(true, Release);
        }
        let (lock, cv) = &**gate;
        lock.lock().unwrap_or_else(|p| p.into_inner()).go = Some(start);
        cv.notify_all();
    }

    /// The live state of every thread.
    pub fn threads(&self) -> &[Arc<ThreadShared>] {
        &self.shared
    }

    /// The configuration.
    pub fn config(&self) -> &RunConfig {
        &self.config
    }

    /// Wall-clock time the threads were released.
    pub fn started(&self) -> SystemTime {
        self.started
    }

    /// Clock reading at the release.
    pub fn clock_start(&self) -> Nanos {
        self.clock_start
    }

    /// Whether every thread has finished.
    pub fn is_finished(&self) -> bool {
        self.control.done.load(Acquire) == self.shared.len()
    }

    /// Waits up to `timeout` for a signal, or returns at once when the run has finished.
    /// Once the run is stopping (a stop or a break), the measuring threads still sleeping are
    /// woken again every [`WAKE_AGAIN`] while it waits.
    pub fn wait(&self, timeout: Nanos) -> Wake {
        let clock = libc::CLOCK_MONOTONIC;
        let end = sys::now(clock) + timeout;
        loop {
            if self.is_finished() {
                return Wake::Finished;
            }
            let stopping = self.control.stop.load(Acquire);
            if stopping {
                let _ = self.wake_sleepers();
            }
            let left = Nanos(end.0.saturating_sub(sys::now(clock).0));
            let step = if stopping { left.min(WAKE_AGAIN) } else { left };
            match sys::wait_run_signal(step) {
                Some(sig) if sig == sys::done_signal() => continue,
                Some(sig) => return Wake::Signal(sig),
                None if self.is_finished() => return Wake::Finished,
                None if step == left => return Wake::Tick,
                None => {}
            }
        }
    }

    /// Asks every thread to stop: a thread measuring ends after its current cycle, a
    /// sleeping one is woken at once (its cut-short sleep is no sample).
    pub fn stop(&self) {
        self.control.stop.store(true, Release);
        let _ = self.wake_sleepers();
    }

    /// Sends the wake signal to every measuring thread not yet done; returns how many it
    /// signalled. A thread that was between its stop check and its next sleep when the signal
    /// came sleeps on: callers repeat this (every [`WAKE_AGAIN`]) until none is left.
    fn wake_sleepers(&self) -> usize {
        let mut signalled = 0;
        for (h, sh) in self.handles.iter().zip(&self.shared) {
            if sh.phase() != Phase::Done {
                sys::wake_thread(h.as_pthread_t());
                signalled += 1;
            }
        }
        signalled
    }

    /// Wakes the started threads of a stopped run until every one is done (also after a start
    /// that failed part-way, when fewer threads run than the config has).
    fn wake_until_done(&self) {
        while self.wake_sleepers() > 0 {
            sys::sleep_for(libc::CLOCK_MONOTONIC, WAKE_AGAIN);
        }
    }

    /// Waits for the threads and collects the results.
    pub fn finish(mut self) -> RunResult {
        let stopped_early =
            self.control.stop.load(Acquire) && self.control.break_thread.load(Acquire) < 0;
        if self.control.stop.load(Acquire) {
            self.wake_until_done();
        }
        for h in self.handles.drain(..) {
            let _ = h.join();
        }
        // The last thread's end; a control thread that was held up (a slow checkpoint) does
        // not lengthen the run.
        let ended = match self.control.ended_unix_ns.load(Acquire) {
            0 => SystemTime::now(),
            ns => std::time::UNIX_EPOCH + std::time::Duration::from_nanos(ns),
        };
        let bt = self.control.break_thread.load(Acquire);
        let break_fired = (bt >= 0).then(|| BreakInfo {
            thread: bt as usize,
            latency: Nanos(self.control.break_value.load(Acquire)),
        });
        let threads = self
            .shared
            .iter()
            .zip(&self.config.threads)
            .enumerate()
            .map(|(i, (sh, spec))| collect(i, sh, spec))
            .collect();
        RunResult {
            threads,
            started: self.started,
            ended,
            clock_start: self.clock_start,
            stopped_early,
            break_fired,
        }
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        self.control.stop.store(true, Release);
        self.wake_until_done();
        for h in self.handles.drain(..) {
            let _ = h.join();
        }
        if self.mlocked {
            sys::munlockall();
        }
        sys::drain_done_signal();
        sys::restore_signal_mask(&self.old_mask);
    }
}

fn collect(i: usize, sh: &ThreadShared, spec: &crate::ThreadSpec) -> ThreadResult {
    ThreadResult {
        index: i,
        tid: sh.tid(),
        cpu: sh.cpu(),
        interval: spec.interval,
        policy: spec.policy,
        priority: spec.priority,
        stats: sh.stats(),
        histogram: sh.histogram(),
        linear: sh.linear(),
        events: sh.events().snapshot(),
        events_dropped: sh.events().dropped(),
        samples_dropped: sh.ring().map_or(0, |r| r.dropped()),
        last: sh.last(),
    }
}

fn setup_thread(
    i: usize,
    spec: &crate::ThreadSpec,
    sh: &ThreadShared,
    prefault: usize,
) -> Result<(), EngineError> {
    if let Some(cpu) = prepare_current_thread(i, spec, prefault)? {
        sh.cpu.store(cpu as i32, Relaxed);
    }
    Ok(())
}

/// Gives the calling thread the real-time set-up of a measuring thread: the affinity of `spec`,
/// its policy and priority, and `prefault` bytes of touched stack. Returns the CPU when the
/// thread is pinned to exactly one. `index` only names the thread in errors. Other measuring
/// front ends (`rtscope respond`'s receivers) use it for their own threads.
pub fn prepare_current_thread(
    index: usize,
    spec: &crate::ThreadSpec,
    prefault: usize,
) -> Result<Option<usize>, EngineError> {
    let mut pinned = None;
    if let Some(cpus) = &spec.affinity {
        sys::set_affinity_current(cpus).map_err(|source| EngineError::Affinity {
            thread: index,
            cpus: cpus.to_string(),
            source,
        })?;
        if cpus.len() == 1 {
            pinned = Some(cpus.nth_cyclic(0));
        }
    }
    sys::set_policy_current(spec.policy, spec.priority).map_err(|source| {
        if source.raw_os_error() == Some(libc::EPERM) {
            EngineError::NoRtPrivilege {
                policy: spec.policy.name(),
                priority: spec.priority,
                rtprio_limit: sys::rtprio_limit(),
            }
        } else {
            EngineError::Policy {
                thread: index,
                policy: spec.policy.name(),
                priority: spec.priority,
                source,
            }
        }
    })?;
    sys::prefault_stack(prefault);
    Ok(pinned)
}

/// The last deadline a thread with `duration` sleeps to: its own start (one interval before its
/// first deadline) plus the duration, that deadline included — cyclictest's `-D` (each of its
/// threads stops at the first wake-up at or after its own start + D).
fn thread_end(first_deadline: Nanos, interval: Nanos, duration: Nanos) -> Nanos {
    Nanos(
        first_deadline
            .0
            .saturating_sub(interval.0)
            .saturating_add(duration.0),
    )
}

/// The first deadline of thread `thread` of `threads`. Without alignment the threads' grids are
/// spread evenly over one interval (thread `i` offset by `i × interval / threads`), so threads
/// that share a CPU never wake at the same instant and delay each other.
fn first_deadline(
    align: Alignment,
    thread: usize,
    threads: usize,
    start: Nanos,
    interval: Nanos,
) -> Nanos {
    match align {
        Alignment::None => start + interval + Nanos(interval.0 / threads as u64 * thread as u64),
        Alignment::Aligned(step) => start + interval + Nanos(step.0.saturating_mul(thread as u64)),
        Alignment::Second(offset) => {
            let next_second = (start.0 / 1_000_000_000 + 1) * 1_000_000_000;
            Nanos(next_second) + offset
        }
    }
}

fn open_trace_marker() -> Option<std::fs::File> {
    [
        "/sys/kernel/tracing/trace_marker",
        "/sys/kernel/debug/tracing/trace_marker",
    ]
    .iter()
    .find_map(|p| std::fs::OpenOptions::new().write(true).open(p).ok())
}

fn validate(c: &RunConfig) -> Result<(), EngineError> {
    let bad = |m: String| Err(EngineError::InvalidConfig(m));
    if c.threads.is_empty() {
        return bad("a run needs at least one thread".into());
    }
    for (i, t) in c.threads.iter().enumerate() {
        if t.interval.0 == 0 {
            return bad(format!("thread {i}: the interval must be greater than 0"));
        }
        if t.interval > MAX_INTERVAL {
            return bad(format!(
                "thread {i}: the interval {} is longer than the longest allowed, {} (1 hour)",
                rtscope_core::text::short(t.interval),
                rtscope_core::text::short(MAX_INTERVAL)
            ));
        }
        if t.policy.is_realtime_priority() && !(1..=99).contains(&t.priority) {
            return bad(format!(
                "thread {i}: priority {} is outside 1..=99 for {}",
                t.priority,
                t.policy.name()
            ));
        }
        if let Policy::Deadline {
            runtime,
            deadline,
            period,
        } = t.policy
        {
            if runtime.0 == 0 || runtime > deadline || deadline > period {
                return bad(format!(
                    "thread {i}: SCHED_DEADLINE needs 0 < runtime <= deadline <= period"
                ));
            }
        }
    }
    if let Some(l) = c.linear {
        if l.buckets == 0 || l.unit.0 == 0 {
            return bad("the linear histogram needs at least one bucket".into());
        }
    }
    if c.sleep == SleepMode::Relative && c.alignment != Alignment::None {
        return bad("aligned wake-ups need absolute sleeps".into());
    }
    Ok(())
}
