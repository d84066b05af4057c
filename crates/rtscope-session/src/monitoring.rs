//! The system monitors during a run: a housekeeping thread (SCHED_FIFO 1 below the measuring
//! threads by default, see [`crate::housekeeping`]), pinned to one of rtscope's housekeeping
//! CPUs ([`crate::placement`]; never a measured one, where one exists), samples every source once per interval
//! on the run's time axis and hands the samples to the control thread, which stores them with
//! its checkpoints. Nothing here touches the measuring threads.

use rtscope_core::Nanos;
use rtscope_engine::{sys, CpuSet};
use rtscope_monitor::{Monitor, Sample, SourceStatus};
use rtscope_store::{MonitorBatch, MonitorSource, MonitorState, MonitorValue, TopThread};
use std::collections::HashMap;
use std::path::Path;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::Duration;

/// What the monitor thread sends: a sample, and the sources' availability when it changed.
type Message = (Sample, Option<Vec<SourceStatus>>);

/// The running monitor thread.
pub struct MonitorThread {
    stop: Sender<()>,
    rx: Receiver<Message>,
    handle: Option<JoinHandle<()>>,
    cpu: Option<u32>,
}

/// Where the run's time axis starts: the run's clock and its value at the run's start.
#[derive(Clone, Copy)]
pub struct TimeAxis {
    /// The clock (`CLOCK_MONOTONIC` or `CLOCK_REALTIME`).
    pub clock: libc::clockid_t,
    /// Its reading at the run's start.
    pub start: Nanos,
}

impl TimeAxis {
    fn now(&self) -> Duration {
        Duration::from_nanos(sys::now(self.clock).0.saturating_sub(self.start.0))
    }
}

/// The CPU the monitor thread runs on. With rtscope's housekeeping CPUs (`ours`,
/// [`crate::placement`]): the first of them the kernel does not isolate, else the first of
/// them. Without: the first CPU the kernel does not isolate that the run does not measure,
/// else the first CPU the kernel does not isolate, else none (unpinned).
pub fn monitor_cpu(root: &Path, measured: &CpuSet, ours: Option<&CpuSet>) -> Option<u32> {
    let hk = rtscope_monitor::housekeeping_cpus(root);
    if let Some(ours) = ours.filter(|o| !o.is_empty()) {
        let first = hk.iter().copied().find(|&c| ours.contains(c as usize));
        return first.or(Some(ours.nth_cyclic(0) as u32));
    }
    hk.iter()
        .copied()
        .find(|&c| !measured.contains(c as usize))
        .or_else(|| hk.first().copied())
}

impl MonitorThread {
    /// Starts sampling `root`'s sources every `interval` on `axis`. `cpus`: the CPUs the run
    /// measures (kept free of the monitor where possible) and rtscope's housekeeping CPUs
    /// (`None`: there are none); see [`monitor_cpu`].
    pub fn start(
        root: &Path,
        interval: Duration,
        axis: TimeAxis,
        cpus: (&CpuSet, Option<&CpuSet>),
        sched: crate::housekeeping::Housekeeping,
    ) -> std::io::Result<MonitorThread> {
        let monitor = Monitor::new(root).map_err(std::io::Error::other)?;
        let cpu = monitor_cpu(root, cpus.0, cpus.1);
        let (stop, stop_rx) = mpsc::channel::<()>();
        let (tx, rx) = mpsc::channel::<Message>();
        let handle = std::thread::Builder::new()
            .name("rtscope-monitor".into())
            .spawn(move || {
                // Its CPU first, before any work (it was created on the housekeeping CPUs).
                if let Some(c) = cpu {
                    // Best effort: an unpinned monitor still works.
                    let _ = sys::set_affinity_current(&CpuSet::from_cpus([c as usize]));
                }
                sched.apply_current();
                sample_loop(monitor, interval, axis, &stop_rx, &tx)
            })?;
        Ok(MonitorThread {
            stop,
            rx,
            handle: Some(handle),
            cpu,
        })
    }

    /// The CPU the thread is pinned to, if any.
    pub fn cpu(&self) -> Option<u32> {
        self.cpu
    }

    /// The samples taken since the last call.
    pub fn drain(&self) -> Vec<Message> {
        self.rx.try_iter().collect()
    }

    /// Takes one last sample, stops the thread, and returns what it had not handed over yet.
    pub fn finish(mut self) -> Vec<Message> {
        let _ = self.stop.send(());
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
        self.rx.try_iter().collect()
    }
}

impl Drop for MonitorThread {
    fn drop(&mut self) {
        let _ = self.stop.send(());
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

fn sample_loop(
    mut monitor: Monitor,
    interval: Duration,
    axis: TimeAxis,
    stop: &Receiver<()>,
    tx: &Sender<Message>,
) {
    let mut last_sources: Vec<SourceStatus> = Vec::new();
    let mut next = axis.now();
    loop {
        let sample = monitor.sample(axis.now());
        let sources = monitor.availability();
        let changed = (sources != last_sources).then(|| sources.clone());
        last_sources = sources;
        if tx.send((sample, changed)).is_err() {
            return;
        }
        next = next_tick(next, axis.now(), interval);
        let wait = next.saturating_sub(axis.now());
        match stop.recv_timeout(wait) {
            Err(RecvTimeoutError::Timeout) => {}
            // Stopped (or the owner is gone): one last sample closes the run's series. When
            // the previous one is very recent (under a tenth of the interval), tick-counted
            // thread shares would mostly be rounding, so that sample lists no top threads.
            Ok(()) | Err(RecvTimeoutError::Disconnected) => {
                let mut last = monitor.sample(axis.now());
                if last.interval.is_some_and(|d| d < interval / 10) {
                    last.top.clear();
                }
                let _ = tx.send((last, None));
                return;
            }
        }
    }
}

/// The monitor's next sampling time after the one planned at `planned`, at `now` (both on the
/// run's time axis): the first tick of the grid `planned + k × interval` (k ≥ 1) still ahead.
///
/// Ticks that passed while the thread was held up (a stall, or a sample that took longer than
/// the interval) are skipped, not caught up: samples taken back to back would be rounding noise
/// in every rate (the "7 samples in 0.4 s" after a 6.4 s stall), and a SCHED_FIFO monitor that
/// never sleeps starves everything at or below its priority on its CPU (on PREEMPT_RT that
/// includes `ktimers`, which expires every normal task's timers). The stall itself stays
/// visible: the next sample's measured interval is long, and the cadence counts it as late.
fn next_tick(planned: Duration, now: Duration, interval: Duration) -> Duration {
    let next = planned + interval;
    if next > now || interval.is_zero() {
        return next;
    }
    let behind = (now - next).as_nanos();
    let skip = behind / interval.as_nanos() + 1;
    next + interval * u32::try_from(skip).unwrap_or(u32::MAX)
}

/// Turns monitor samples into the store's rows; text states are kept only when they change.
#[derive(Default)]
pub struct MonitorRows {
    states: HashMap<String, String>,
    /// Samples converted so far.
    pub samples: u64,
    /// The cadence of the samples' times, when the planned interval is known.
    pub cadence: Option<crate::housekeeping::Cadence>,
}

impl MonitorRows {
    /// Rows that count the cadence of samples planned every `interval`.
    pub fn with_cadence(interval: Option<Duration>) -> MonitorRows {
        let period = |i: Duration| Nanos(i.as_nanos() as u64);
        MonitorRows {
            cadence: interval.map(|i| crate::housekeeping::Cadence::new(period(i))),
            ..MonitorRows::default()
        }
    }

    /// Adds `messages` to `batch`.
    pub fn add(&mut self, messages: Vec<Message>, batch: &mut MonitorBatch) {
        for (s, sources) in messages {
            self.samples += 1;
            let off = s.at.as_nanos() as u64;
            if let Some(c) = &mut self.cadence {
                c.tick(Nanos(off));
            }
            batch.values.extend(s.readings.iter().map(|r| MonitorValue {
                metric: r.metric.clone(),
                unit: r.unit.to_string(),
                offset_ns: off,
                value: r.value,
            }));
            for (metric, value) in &s.states {
                if self.states.get(metric) != Some(value) {
                    self.states.insert(metric.clone(), value.clone());
                    batch.states.push(MonitorState {
                        metric: metric.clone(),
                        offset_ns: off,
                        value: value.clone(),
                    });
                }
            }
            batch
                .top
                .extend(s.top.iter().enumerate().map(|(rank, t)| TopThread {
                    offset_ns: off,
                    rank: rank as u32,
                    pid: t.pid,
                    tid: t.tid,
                    comm: t.comm.clone(),
                    cpu_percent: t.cpu_percent,
                    last_cpu: t.last_cpu,
                    kernel: t.kernel_thread,
                    own: Some(t.own),
                }));
            if let Some(src) = sources {
                batch.sources = src
                    .into_iter()
                    .map(|s| MonitorSource {
                        source: s.source.to_string(),
                        available: s.available,
                        why: s.why,
                    })
                    .collect();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::next_tick;
    use std::time::Duration;

    const S: Duration = Duration::from_secs(1);

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn on_time_the_next_tick_is_one_interval_on() {
        assert_eq!(next_tick(ms(3000), ms(3010), S), ms(4000));
        assert_eq!(next_tick(ms(3000), ms(3999), S), ms(4000));
    }

    #[test]
    fn after_a_stall_passed_ticks_are_skipped_and_the_grid_is_kept() {
        // Held up 6.4 s after the tick at 3 s: the next sample is at 10 s, not at 4, 5 … 9 s
        // back to back.
        assert_eq!(next_tick(ms(3000), ms(9400), S), ms(10000));
        // Exactly on a passed tick: that one is gone too, the thread still sleeps.
        assert_eq!(next_tick(ms(3000), ms(4000), S), ms(5000));
    }

    #[test]
    fn a_sample_slower_than_the_interval_still_leaves_a_sleep_before_the_next() {
        // Every sample takes 1.5 s: the thread samples every 2 s and always sleeps.
        let mut planned = Duration::ZERO;
        for _ in 0..10 {
            let done = planned + ms(1500);
            let next = next_tick(planned, done, S);
            assert!(
                next > done,
                "no sleep after a slow sample: {next:?} vs {done:?}"
            );
            assert_eq!(
                (next - planned).as_nanos() % S.as_nanos(),
                0,
                "off the grid"
            );
            planned = next;
        }
    }
}
