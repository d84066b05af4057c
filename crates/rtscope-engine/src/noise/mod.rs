//! OS noise: one pinned busy-loop thread per CPU that measures the time the CPU was taken away.
//!
//! Each thread spins on CLOCK_MONOTONIC (the vDSO: no system call) for `runtime` of every
//! `period` (the duty cycle: the rest of the period it sleeps, so the CPU is never starved and
//! SCHED_FIFO loops stay under the kernel's RT throttling), recording every iteration's gap
//! into its lossless histogram and every gap over the threshold into its gap ring (see
//! [`state`] for the loop). [`NoiseRun`] starts the threads with the same set-up as the latency
//! engine's (affinity, policy, priority, prefaulted stack, mlock), releases them together, and
//! stops them through the run's stop flag and the wake signal that cuts a sleep short.
//!
//! Re-exports (a facade): the counter, gap-state and threshold types are named here; their
//! modules are private, so `noise::X` is their one path.

mod counter;
mod state;
mod threshold;

pub use counter::{
    Anchor, Calibration, CounterChoice, CounterKind, CounterProbe, RawRefused, MIN_CALIBRATION,
};
pub use state::{Gap, GapRing, NoiseShared, NoiseTotals, STRETCH};
pub use threshold::{Threshold, PREHEAT_MIN_ITERATIONS};

use crate::config::{Policy, ThreadSpec};
use crate::cpuset::CpuSet;
use crate::run::Wake;
use crate::{sys, EngineError};
use rtscope_core::Nanos;
use std::os::unix::thread::JoinHandleExt;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::*};
use std::sync::{mpsc, Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::SystemTime;

const THREAD_STACK: usize = 64 * 1024;

/// What a noise run is to do.
#[derive(Debug, Clone, PartialEq)]
pub struct NoiseConfig {
    /// One loop per CPU.
    pub cpus: Vec<usize>,
    /// Policy of the loops.
    pub policy: Policy,
    /// Priority (1..=99 for FIFO/RR, nice for OTHER).
    pub priority: i32,
    /// A gap longer than this is recorded with its start (resolved against the loops'
    /// resolution after their pre-heat: [`NoiseRun::threshold`]).
    pub threshold: Threshold,
    /// The loop spins this long before the run, unmeasured (and at least
    /// [`PREHEAT_MIN_ITERATIONS`] times): caches, TLB and clock frequency settle, and its
    /// shortest gap there is the loop's resolution.
    pub preheat: Nanos,
    /// The time spun in every period.
    pub runtime: Nanos,
    /// The duty-cycle period.
    pub period: Nanos,
    /// The run length.
    pub duration: Nanos,
    /// Gaps each thread's ring holds between two drains.
    pub gap_capacity: usize,
    /// `mlockall` for the run.
    pub mlock: bool,
    /// Stack bytes touched before the loop.
    pub prefault_stack: usize,
    /// The counter the loops read.
    pub counter: CounterChoice,
    /// Each CPU's SMI counter (`/dev/cpu/<N>/msr`, in the order of `cpus`), read after every
    /// gap over the threshold; empty: none is read.
    pub smi_files: Vec<std::path::PathBuf>,
}

impl NoiseConfig {
    fn check(&self) -> Result<(), EngineError> {
        let bad = |m: &str| Err(EngineError::InvalidConfig(m.into()));
        if self.cpus.is_empty() {
            return bad("a noise run needs at least one CPU");
        }
        let threshold = self.threshold.requested();
        if threshold.0 == 0 || threshold >= self.period {
            return bad("the threshold must be above 0 and below the period");
        }
        if self.runtime.0 == 0 || self.runtime > self.period {
            return bad("the runtime must be above 0 and at most the period");
        }
        if self.duration.0 == 0 {
            return bad("the duration must be above 0");
        }
        Ok(())
    }
}

struct Control {
    stop: AtomicBool,
    done: AtomicUsize,
}

/// One thread's final result.
#[derive(Debug, Clone)]
pub struct NoiseThread {
    /// The CPU.
    pub cpu: usize,
    /// Kernel thread id.
    pub tid: i32,
    /// Totals.
    pub totals: NoiseTotals,
    /// Gaps the ring had to drop (counted in the totals, missing from the drained gaps).
    pub gaps_dropped: u64,
}

/// A noise run in progress.
pub struct NoiseRun {
    config: NoiseConfig,
    shared: Vec<Arc<NoiseShared>>,
    control: Arc<Control>,
    handles: Vec<JoinHandle<()>>,
    old_mask: libc::sigset_t,
    started: SystemTime,
    clock_start: Nanos,
    threshold: Nanos,
    resolutions: Vec<Nanos>,
    counter: CounterKind,
    calibrations: Vec<Calibration>,
}

/// The release of the threads: `Some((start, threshold))` to run, `None` to end unmeasured.
type Go = Arc<(Mutex<Option<Option<(Nanos, u64)>>>, Condvar)>;

impl NoiseRun {
    /// Checks the config, starts one thread per CPU and releases them together.
    pub fn start(config: NoiseConfig) -> Result<NoiseRun, EngineError> {
        config.check()?;
        let counter = CounterProbe::read(std::path::Path::new("/"))
            .choose(config.counter)
            .map_err(|why| {
                EngineError::InvalidConfig(format!(
                    "invalid value for '--counter': raw: {why}\n\nhint: use --counter clock (the vDSO clock) or auto"
                ))
            })?;
        sys::single_malloc_arena();
        sys::install_wake_handler().map_err(EngineError::WakeSignal)?;
        if config.mlock {
            sys::mlockall().map_err(EngineError::Mlock)?;
        }
        let old_mask = sys::block_run_signals();
        let shared = open_shared(&config)?;
        let mut run = NoiseRun {
            config,
            shared,
            control: Arc::new(Control {
                stop: AtomicBool::new(false),
                done: AtomicUsize::new(0),
            }),
            handles: Vec::new(),
            old_mask,
            started: SystemTime::now(),
            clock_start: Nanos::ZERO,
            threshold: Nanos::ZERO,
            resolutions: Vec::new(),
            counter,
            calibrations: Vec::new(),
        };
        let go: Go = Arc::new((Mutex::new(None), Condvar::new()));
        let (tx, rx) = mpsc::channel();
        for i in 0..run.config.cpus.len() {
            match run.spawn(i, &go, tx.clone()) {
                Ok(h) => run.handles.push(h),
                Err(e) => {
                    release(&go, None);
                    return Err(e);
                }
            }
        }
        drop(tx);
        match run.resolve_threshold(rx) {
            Ok(()) => {}
            Err(e) => {
                release(&go, None);
                return Err(e);
            }
        }
        run.clock_start = sys::now(libc::CLOCK_MONOTONIC);
        run.started = SystemTime::now();
        release(&go, Some((run.clock_start, run.threshold.0)));
        Ok(run)
    }

    /// Collects every thread's set-up result and pre-heat resolution, and the threshold the
    /// loops will run with.
    fn resolve_threshold(&mut self, rx: mpsc::Receiver<Ready>) -> Result<(), EngineError> {
        let mut resolutions = vec![Nanos::ZERO; self.handles.len()];
        let mut calibrations = vec![Calibration::IDENTITY; self.handles.len()];
        for (i, r) in rx.iter().take(self.handles.len()) {
            let p = r?;
            (resolutions[i], calibrations[i]) = (p.resolution, p.cal);
        }
        self.calibrations = calibrations;
        let by_cpu: Vec<(usize, Nanos)> = self
            .config
            .cpus
            .iter()
            .copied()
            .zip(resolutions.iter().copied())
            .collect();
        self.threshold = self.config.threshold.resolve(&by_cpu)?;
        self.resolutions = resolutions;
        Ok(())
    }

    fn spawn(
        &self,
        i: usize,
        go: &Go,
        ready: mpsc::Sender<Ready>,
    ) -> Result<JoinHandle<()>, EngineError> {
        let spec = ThreadSpec {
            affinity: Some(CpuSet::from_cpus([self.config.cpus[i]])),
            policy: self.config.policy,
            priority: self.config.priority,
            interval: self.config.period,
        };
        let (sh, ctl, go) = (
            Arc::clone(&self.shared[i]),
            Arc::clone(&self.control),
            Arc::clone(go),
        );
        let cfg = self.config.clone();
        let prefault = cfg.prefault_stack.min(THREAD_STACK / 2);
        let control_tid = sys::gettid();
        let threads = self.config.cpus.len();
        let kind = self.counter;
        std::thread::Builder::new()
            .name(format!("rtscope-n{}", cfg.cpus[i]))
            .stack_size(THREAD_STACK)
            .spawn(move || {
                sh.tid.store(sys::gettid(), Relaxed);
                sys::unblock_wake_signal();
                let setup = crate::run::prepare_current_thread(i, &spec, prefault)
                    .map(|_| threshold::preheat(&sh, cfg.preheat, kind));
                let origin = setup.as_ref().ok().map(|p| (p.cal, p.origin));
                let _ = ready.send((i, setup));
                let start = {
                    let (lock, cv) = &*go;
                    let mut g = lock.lock().unwrap_or_else(|p| p.into_inner());
                    while g.is_none() {
                        g = cv.wait(g).unwrap_or_else(|p| p.into_inner());
                    }
                    g.flatten()
                };
                if let (Some((start, threshold)), Some(origin)) = (start, origin) {
                    sh.phase.store(1, Release);
                    let loop_ = Loop {
                        sh: &sh,
                        stop: &ctl.stop,
                        cfg: &cfg,
                        start,
                        threshold,
                        origin,
                    };
                    loop_.run(kind);
                }
                sh.phase.store(2, Release);
                if ctl.done.fetch_add(1, AcqRel) + 1 == threads {
                    sys::signal_thread(control_tid, sys::done_signal());
                }
            })
            .map_err(|source| EngineError::Spawn { threads, source })
    }

    /// The live state of every thread (in the order of the config's CPUs).
    pub fn threads(&self) -> &[Arc<NoiseShared>] {
        &self.shared
    }

    /// The configuration.
    pub fn config(&self) -> &NoiseConfig {
        &self.config
    }

    /// The threshold the loops run with: the config's, or the default raised to the loops'
    /// resolution ([`Threshold::resolve`]).
    pub fn threshold(&self) -> Nanos {
        self.threshold
    }

    /// Each loop's resolution (its shortest gap in the pre-heat), in the order of the CPUs.
    pub fn resolutions(&self) -> &[Nanos] {
        &self.resolutions
    }

    /// The counter the loops read.
    pub fn counter(&self) -> CounterKind {
        self.counter
    }

    /// Each loop's counter frequency as its pre-heat calibrated it (Hz, in the order of the
    /// CPUs); `None` for the vDSO clock.
    pub fn counter_hz(&self) -> Vec<Option<f64>> {
        self.calibrations
            .iter()
            .map(|c| (self.counter != CounterKind::Clock).then(|| c.hz()))
            .collect()
    }

    /// CLOCK_MONOTONIC at the release of the threads.
    pub fn clock_start(&self) -> Nanos {
        self.clock_start
    }

    /// Wall-clock time at the release.
    pub fn started(&self) -> SystemTime {
        self.started
    }

    /// Whether every thread has finished.
    pub fn is_finished(&self) -> bool {
        self.control.done.load(Acquire) == self.shared.len()
    }

    /// Waits up to `timeout` for a signal, or returns at once when the run has finished.
    pub fn wait(&self, timeout: Nanos) -> Wake {
        if self.is_finished() {
            return Wake::Finished;
        }
        match sys::wait_run_signal(timeout) {
            _ if self.is_finished() => Wake::Finished,
            Some(sig) if sig == sys::done_signal() => Wake::Tick,
            Some(sig) => Wake::Signal(sig),
            None => Wake::Tick,
        }
    }

    /// Asks every thread to stop: a spinning thread ends within one [`STRETCH`], a sleeping
    /// one is woken at once.
    pub fn stop(&self) {
        self.control.stop.store(true, Release);
        self.wake_sleepers();
    }

    fn wake_sleepers(&self) -> usize {
        let mut n = 0;
        for (h, sh) in self.handles.iter().zip(&self.shared) {
            if sh.phase.load(Acquire) != 2 {
                sys::wake_thread(h.as_pthread_t());
                n += 1;
            }
        }
        n
    }

    /// Waits for the threads and returns their results (drain the rings before).
    pub fn finish(mut self) -> Vec<NoiseThread> {
        if self.control.stop.load(Acquire) {
            while self.wake_sleepers() > 0 {
                sys::sleep_for(libc::CLOCK_MONOTONIC, Nanos::from_ms(5));
            }
        }
        for h in self.handles.drain(..) {
            let _ = h.join();
        }
        self.shared
            .iter()
            .zip(&self.config.cpus)
            .map(|(sh, &cpu)| NoiseThread {
                cpu,
                tid: sh.tid(),
                totals: sh.totals(),
                gaps_dropped: sh.ring.dropped(),
            })
            .collect()
    }
}

impl Drop for NoiseRun {
    fn drop(&mut self) {
        self.control.stop.store(true, Release);
        while !self.handles.is_empty() && self.wake_sleepers() > 0 {
            sys::sleep_for(libc::CLOCK_MONOTONIC, Nanos::from_ms(5));
        }
        for h in self.handles.drain(..) {
            let _ = h.join();
        }
        if self.config.mlock {
            sys::munlockall();
        }
        sys::drain_done_signal();
        sys::restore_signal_mask(&self.old_mask);
    }
}

/// Every thread's memory, with its SMI counter open when the config names one.
fn open_shared(config: &NoiseConfig) -> Result<Vec<Arc<NoiseShared>>, EngineError> {
    if !config.smi_files.is_empty() && config.smi_files.len() != config.cpus.len() {
        return Err(EngineError::InvalidConfig(
            "one SMI counter file per CPU, or none".into(),
        ));
    }
    (0..config.cpus.len())
        .map(|i| {
            let smi = match config.smi_files.get(i) {
                Some(path) => Some(std::fs::File::open(path).map_err(|e| {
                    EngineError::InvalidConfig(format!(
                        "cannot open the SMI counter {}: {e}",
                        path.display()
                    ))
                })?),
                None => None,
            };
            let shared = NoiseShared::with_smi(config.gap_capacity, smi)
                .map_err(|e| ring_error(config, i, &e))?;
            Ok(Arc::new(shared))
        })
        .collect()
}

/// The gap ring of the loop on CPU number `i` could not be allocated: the error names the
/// setting that sized it and the way out.
fn ring_error(
    config: &NoiseConfig,
    i: usize,
    e: &std::collections::TryReserveError,
) -> EngineError {
    let bytes = config.gap_capacity as u64 * 24;
    let cpus = match config.cpus.len() {
        1 => "1 CPU".to_string(),
        n => format!("{n} CPUs"),
    };
    EngineError::InvalidConfig(format!(
        "cannot allocate the gap ring of CPU {}: --gap-capacity {} is {} MiB per CPU (on {cpus}), more memory than this process may have: {e}\n\nhint: lower --gap-capacity (default 65536), or raise the process's memory limit (ulimit -v, the cgroup's memory.max)",
        config.cpus.get(i).copied().unwrap_or(i),
        config.gap_capacity,
        bytes >> 20,
    ))
}

/// A thread's set-up result and what its pre-heat found, by its index.
type Ready = (usize, Result<threshold::Preheated, EngineError>);

fn release(go: &Go, start: Option<(Nanos, u64)>) {
    let (lock, cv) = &**go;
    *lock.lock().unwrap_or_else(|p| p.into_inner()) = Some(start);
    cv.notify_all();
}

/// One thread's loop: what it spins for and where it writes.
struct Loop<'a> {
    sh: &'a NoiseShared,
    stop: &'a AtomicBool,
    cfg: &'a NoiseConfig,
    /// CLOCK_MONOTONIC at the release.
    start: Nanos,
    /// ns.
    threshold: u64,
    /// The pre-heat's rate and first anchor.
    origin: (Calibration, Anchor),
}

impl Loop<'_> {
    /// The duty cycle with `kind`'s read inlined into the loop.
    fn run(&self, kind: CounterKind) {
        match kind {
            CounterKind::Clock => self.duty_cycle(kind, || counter::read(CounterKind::Clock)),
            CounterKind::Tsc => self.duty_cycle(kind, || counter::read(CounterKind::Tsc)),
            CounterKind::Cntvct => self.duty_cycle(kind, || counter::read(CounterKind::Cntvct)),
        }
    }

    /// Spins `runtime` of every `period` from `start` until `start + duration` or the stop,
    /// reading the counter with `read` (monomorphised: one inlined read per iteration).
    ///
    /// Each window starts with an anchor (outside the measured time: between two windows
    /// nothing is measured); a raw counter is recalibrated there from the pre-heat's first
    /// anchor, over a span that grows with the run, so the gaps' starts follow CLOCK_MONOTONIC.
    fn duty_cycle(&self, kind: CounterKind, mut read: impl FnMut() -> u64) {
        let clock = libc::CLOCK_MONOTONIC;
        let (start, sh) = (self.start.0, self.sh);
        let end = start.saturating_add(self.cfg.duration.0);
        let (mut cal, origin) = self.origin;
        let mut window = start;
        while window < end {
            if window > start
                && sys::Deadline::new(Nanos(window), Nanos::ZERO).sleep_unless(clock, self.stop)
                    == sys::Slept::Interrupted
            {
                return;
            }
            let window_end = window.saturating_add(self.cfg.runtime.0).min(end);
            sh.smi_base();
            let anchor = counter::anchor(kind);
            if anchor.ns.saturating_sub(origin.ns) >= MIN_CALIBRATION.0 {
                cal = Calibration::between(origin, anchor).unwrap_or(cal);
            }
            let first = anchor.tick;
            let mut prev = first;
            let (before, excluded) = (sh.runtime.load(Relaxed), sh.excluded());
            loop {
                let now = anchor.at(cal, prev);
                if now >= window_end {
                    break;
                }
                let until = anchor.tick_at(cal, now.saturating_add(STRETCH.0).min(window_end));
                prev = state::spin(sh, &mut read, (cal, anchor), prev, until, self.threshold);
                let spun = cal
                    .ns(prev - first)
                    .saturating_sub(sh.excluded() - excluded);
                sh.runtime.store(before + spun, Relaxed);
                if self.stop.load(Relaxed) {
                    return;
                }
            }
            window = window.saturating_add(self.cfg.period.0);
        }
    }
}
