//! Recording a run into the store while it goes: a checkpoint at every tick of the control
//! thread (at least once a second), never from a measuring thread.

use crate::environment;
use crate::housekeeping::Housekeeping;
use crate::lock_wait::wait_out_lock;
use crate::monitoring::{MonitorRows, MonitorThread, TimeAxis};
use rtscope_common::clock::SharedClock;
use rtscope_common::error::UsageError;
use rtscope_core::civil::unix_ns;
use rtscope_core::{Histogram, Nanos, Stats};
use rtscope_engine::{CpuSet, Run, RunConfig, RunResult, Sample, ThreadShared};
use rtscope_store::codec::{self, RawSample};
use rtscope_store::{
    Checkpoint, EventRow, NewRun, RawChunk, RunId, RunKind, RunStatus, SampleFigures, SeriesPoint,
    Store, StoreError, ThreadInfo, ThreadStats,
};
use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

/// Opens the store, turning its errors into usage errors that name the file (exit 2), with the
/// store's hint (a full disk: free space).
pub fn open(path: &Path) -> Result<Store, UsageError> {
    Store::open(path).map_err(|e| {
        let hint = e.hint();
        UsageError::from_error(e).hint(hint)
    })
}

/// [`open`] of `db`, else of [`Store::default_path`] (`$RTSCOPE_DB`, else ./rtscope.db).
pub fn open_given(db: Option<&Path>) -> Result<Store, UsageError> {
    open(&db.map_or_else(Store::default_path, Path::to_path_buf))
}

struct Previous {
    hist: Histogram,
    stats: Stats,
    events: usize,
}

/// One thread as a checkpoint sees it.
struct View {
    stats: Stats,
    hist: Histogram,
    events: Vec<Sample>,
    tid: i32,
    raw: Vec<RawSample>,
    raw_dropped: u64,
}

/// A run being recorded.
pub struct Recorder {
    store: Store,
    id: RunId,
    prev: Vec<Previous>,
    last_offset: u64,
    clock_start: Nanos,
    started_unix_ns: i64,
    intervals: Vec<u64>,
    /// Monitor rows waiting for the next checkpoint.
    pending: rtscope_store::MonitorBatch,
    /// Raw sample chunks a failed checkpoint could not write, retried with the next one.
    unsent: Vec<RawChunk>,
    /// Bytes in `unsent`.
    unsent_bytes: usize,
    /// Raw samples dropped because `unsent` was over [`MAX_UNSENT_BYTES`].
    lost_samples: u64,
    /// Raw samples per thread waiting for the next checkpoint (`None`: raw samples are not
    /// kept).
    raw: Option<Vec<Vec<RawSample>>>,
}

/// Raw sample data kept in memory while the database cannot be written (another process
/// holds its lock): 64 MiB, about a minute of a 2-thread 10 kHz run; older chunks are dropped
/// beyond that and counted.
pub const MAX_UNSENT_BYTES: usize = 64 << 20;

/// How long a checkpoint waits for the database lock before it is retried at the next tick
/// (the control thread must keep draining the threads' sample rings).
const CHECKPOINT_WAIT: Duration = Duration::from_millis(200);

impl Recorder {
    /// Records the start of `run`; `new` holds everything known up front.
    pub fn begin(
        mut store: Store,
        mut new: NewRun,
        run: &Run,
        raw: bool,
    ) -> Result<Recorder, UsageError> {
        new.started = rtscope_core::civil::rfc3339(run.started());
        new.started_unix_ns = unix_ns(run.started());
        // Waited out like every write outside the checkpoints: a lock another process holds
        // for seconds must not lose the run (it failed after SQLite's 5 s before issue 67).
        let id = wait_out_lock(&mut store, CHECKPOINT_WAIT, |s| s.begin_run(&new))
            .map_err(UsageError::from_error)?;
        let prev = run
            .threads()
            .iter()
            .map(|_| Previous {
                hist: Histogram::new(),
                stats: Stats::default(),
                events: 0,
            })
            .collect();
        let intervals = run.config().threads.iter().map(|t| t.interval.0).collect();
        Ok(Recorder {
            store,
            id,
            prev,
            last_offset: 0,
            clock_start: run.clock_start(),
            started_unix_ns: new.started_unix_ns,
            intervals,
            pending: rtscope_store::MonitorBatch::default(),
            unsent: Vec::new(),
            unsent_bytes: 0,
            lost_samples: 0,
            raw: raw.then(|| vec![Vec::new(); run.threads().len()]),
        })
    }

    /// Raw samples dropped while the database could not be written.
    pub fn lost_samples(&self) -> u64 {
        self.lost_samples
    }

    /// Keeps what a failed checkpoint could not write, for the next one (bounded).
    fn keep_unsent(&mut self, cp: Checkpoint) {
        let mut monitor = cp.monitor;
        monitor.append(std::mem::take(&mut self.pending));
        self.pending = monitor;
        self.unsent_bytes = cp.samples.iter().map(|c| c.data.len()).sum();
        self.unsent = cp.samples;
        while self.unsent_bytes > MAX_UNSENT_BYTES && !self.unsent.is_empty() {
            let c = self.unsent.remove(0);
            self.unsent_bytes -= c.data.len();
            self.lost_samples += c.count;
        }
    }

    /// The run's id in the store.
    pub fn id(&self) -> RunId {
        self.id
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        self.store.path()
    }

    /// Keeps the samples the session drained from the threads' rings (`samples[i]`: thread
    /// `i`), when raw samples are recorded.
    pub fn add_samples(&mut self, samples: &[Vec<Sample>]) {
        let start = self.clock_start.0;
        let Some(raw) = &mut self.raw else { return };
        for (keep, got) in raw.iter_mut().zip(samples) {
            keep.extend(
                got.iter()
                    .map(|s| (s.cycle, s.latency.0, s.time.0.saturating_sub(start))),
            );
        }
    }

    fn take_raw(&mut self, thread: usize) -> Vec<RawSample> {
        self.raw
            .as_mut()
            .and_then(|r| r.get_mut(thread))
            .map(std::mem::take)
            .unwrap_or_default()
    }

    fn view(&mut self, thread: usize, t: &ThreadShared) -> View {
        let raw = self.take_raw(thread);
        let raw_dropped = t.ring().map_or(0, |r| r.dropped());
        View {
            stats: t.stats(),
            hist: t.histogram(),
            events: t.events().snapshot(),
            tid: t.tid(),
            raw,
            raw_dropped,
        }
    }

    /// Commits a checkpoint from the live state of the threads and the raw samples added since
    /// the last one.
    pub fn checkpoint(&mut self, run: &Run) -> Result<(), StoreError> {
        let now = rtscope_engine::sys::now(rtscope_engine::sys::clock_id(run.config().clock));
        let views: Vec<View> = run
            .threads()
            .iter()
            .enumerate()
            .map(|(i, t)| self.view(i, t))
            .collect();
        self.commit(now, &views, None)
    }

    /// Writes the final state: statistics, the last series point, events, and the end status.
    pub fn finish(
        &mut self,
        r: &RunResult,
        status: RunStatus,
        exit_code: i32,
    ) -> Result<(), StoreError> {
        let elapsed = r.ended.duration_since(r.started).unwrap_or_default();
        let end = self.clock_start + Nanos(elapsed.as_nanos() as u64);
        let views: Vec<View> = r
            .threads
            .iter()
            .enumerate()
            .map(|(i, t)| View {
                stats: t.stats,
                hist: t.histogram.clone(),
                events: t.events.clone(),
                tid: t.tid,
                raw: self.take_raw(i),
                raw_dropped: t.samples_dropped,
            })
            .collect();
        self.commit(
            end,
            &views,
            Some((status, rtscope_core::civil::rfc3339(r.ended), exit_code)),
        )
    }

    /// The end, retried while another process holds the lock ([`wait_out_lock`]).
    fn write_end(
        &mut self,
        cp: &Checkpoint,
        status: RunStatus,
        ended: &str,
        code: i32,
    ) -> Result<(), StoreError> {
        let id = self.id;
        wait_out_lock(&mut self.store, CHECKPOINT_WAIT, |s| {
            s.finish_run(id, cp, status, ended, code)
        })
    }

    fn commit(
        &mut self,
        now: Nanos,
        views: &[View],
        end: Option<(RunStatus, String, i32)>,
    ) -> Result<(), StoreError> {
        let offset = now.0.saturating_sub(self.clock_start.0);
        let length = offset.saturating_sub(self.last_offset);
        let mut cp = Checkpoint {
            progress_ns: offset,
            at_unix_ns: unix_ns(SystemTime::now()),
            monitor: std::mem::take(&mut self.pending),
            samples: std::mem::take(&mut self.unsent),
            ..Checkpoint::default()
        };
        self.unsent_bytes = 0;
        for (i, v) in views.iter().enumerate() {
            let (thread, p) = (i as u32, &self.prev[i]);
            cp.threads.push(thread_stats(thread, v, self.clock_start));
            if length > 0 && (v.stats.count > p.stats.count || end.is_none()) {
                cp.series
                    .push(series_point(thread, offset, length, &v.stats, &v.hist, p));
            }
            cp.events
                .extend(v.events[p.events.min(v.events.len())..].iter().map(|e| {
                    let off = e.time.0.saturating_sub(self.clock_start.0);
                    EventRow {
                        thread,
                        cycle: e.cycle,
                        latency_ns: e.latency.0,
                        offset_ns: off,
                        unix_ns: self.started_unix_ns + off as i64,
                    }
                }));
            if let Some(&(first_cycle, _, _)) = v.raw.first() {
                let data = codec::encode_samples(&v.raw, self.intervals[i]);
                cp.samples.push(RawChunk {
                    thread,
                    first_cycle,
                    count: v.raw.len() as u64,
                    data,
                });
            }
        }
        let written = match &end {
            None => self.store.checkpoint(self.id, &cp),
            Some((status, ended, code)) => self.write_end(&cp, *status, ended, *code),
        };
        if let Err(e) = written {
            self.keep_unsent(cp);
            return Err(e);
        }
        self.prev = views
            .iter()
            .map(|v| Previous {
                hist: v.hist.clone(),
                stats: v.stats,
                events: v.events.len(),
            })
            .collect();
        self.last_offset = offset;
        Ok(())
    }
}

/// The environment plus the sample rule of every run this version measures (one sample per
/// wake-up), so that runs of older versions can be told apart.
fn with_sample_rule(mut env: Vec<(String, String)>) -> Vec<(String, String)> {
    let rule = rtscope_store::SampleRule::WakeUp;
    env.push((rtscope_store::SAMPLE_RULE_KEY.into(), rule.as_str().into()));
    env.sort();
    env
}

/// Starts the monitor thread on the run's time axis; a monitor that cannot start is reported
/// and the run goes on without it.
fn start_monitor(
    run: &Run,
    interval: Duration,
    (sched, cpus): (Housekeeping, Option<&CpuSet>),
) -> Option<MonitorThread> {
    let axis = TimeAxis {
        clock: rtscope_engine::sys::clock_id(run.config().clock),
        start: run.clock_start(),
    };
    let measured = run.config().pinned_cpus();
    match MonitorThread::start(Path::new("/"), interval, axis, (&measured, cpus), sched) {
        Ok(m) => Some(m),
        Err(e) => {
            {
                use std::io::Write as _;
                let _ = writeln!(
                    std::io::stderr(),
                    "rtscope: warning: system monitors not sampled: {e}"
                );
            };
            None
        }
    }
}

fn thread_stats(thread: u32, v: &View, clock_start: Nanos) -> ThreadStats<'_> {
    let offset = v.stats.max_time.0.saturating_sub(clock_start.0);
    ThreadStats {
        thread,
        tid: v.tid,
        figures: SampleFigures::of(&v.stats, Some(offset)),
        missed: v.stats.missed,
        raw_dropped: v.raw_dropped,
        histogram: &v.hist,
    }
}

fn series_point(
    thread: u32,
    offset: u64,
    length: u64,
    stats: &Stats,
    hist: &Histogram,
    p: &Previous,
) -> SeriesPoint {
    let d = hist.since(&p.hist);
    let samples = stats.count.saturating_sub(p.stats.count);
    let sum = stats.sum_ns.saturating_sub(p.stats.sum_ns);
    // The exact maximum when the interval holds the run's new maximum.
    let max = if stats.max > p.stats.max && samples > 0 {
        Some(stats.max.0)
    } else {
        d.max().map(|n| n.0)
    };
    SeriesPoint {
        thread,
        offset_ns: offset,
        length_ns: length,
        samples,
        min_ns: d.min().map(|n| n.0),
        max_ns: max,
        mean_ns: (samples > 0).then(|| sum as f64 / samples as f64),
        p99_ns: d.value_at_quantile(0.99).map(|n| n.0),
        missed: stats.missed.saturating_sub(p.stats.missed),
    }
}

/// The recording of one run (or none without a database). A failing database (a full disk,
/// say) stops the recording, not the measurement: the front end still prints its results and
/// exits 2.
pub struct Recording {
    recorder: Option<Recorder>,
    error: Option<String>,
    pace: Pace,
    monitor: Option<MonitorThread>,
    rows: MonitorRows,
    /// Monitor samples since [`Recording::take_samples`] (for `--explain`'s coarse tier).
    fresh: Vec<rtscope_monitor::Sample>,
    /// Checkpoints failed since the last one written, because the database was locked.
    busy: u32,
}

/// Checkpoints no closer together than `min_period`, timed by a clock (a fake one in tests).
struct Pace {
    clock: SharedClock,
    min_period: Duration,
    last: Instant,
}

impl Pace {
    fn new(clock: SharedClock, min_period: Duration) -> Pace {
        let last = clock.now();
        Pace {
            clock,
            min_period,
            last,
        }
    }

    /// Whether a checkpoint is due now (then the next is due `min_period` from now).
    fn due(&mut self) -> bool {
        let now = self.clock.now();
        if now.saturating_duration_since(self.last) < self.min_period {
            return false;
        }
        self.last = now;
        true
    }
}

/// What a front end tells the recording about a run.
pub struct RecordSpec {
    /// What records the run.
    pub kind: RunKind,
    /// `--label`.
    pub label: Option<String>,
    /// `--tag` values as typed (`KEY=VALUE`).
    pub tags: Vec<String>,
    /// The command line.
    pub command_line: Vec<String>,
    /// The configuration as a JSON object.
    pub config_json: String,
    /// Sample the system monitors this often while recording (`None`: not at all).
    pub monitor_interval: Option<Duration>,
    /// The preflight audit run before the measurement ([`crate::preflight`]); empty: none.
    pub checks: Vec<rtscope_store::CheckRow>,
    /// Keep every sample in the store (`--raw`; the run's config must have a sample ring).
    pub raw: bool,
}

impl Recording {
    /// Starts recording `run` (nothing without a store). Checkpoints are at least
    /// `min_period` apart. `housekeeping`: the scheduling of the monitor thread and its CPUs
    /// (`None`: no housekeeping CPU).
    pub fn begin(
        store: Option<Store>,
        spec: RecordSpec,
        config: &RunConfig,
        run: &Run,
        min_period: Duration,
        housekeeping: (Housekeeping, Option<&CpuSet>),
    ) -> Result<Recording, UsageError> {
        let pace = Pace::new(rtscope_common::clock::system(), min_period);
        let Some(store) = store else {
            return Ok(Recording {
                recorder: None,
                error: None,
                pace,
                monitor: None,
                rows: MonitorRows::default(),
                fresh: Vec::new(),
                busy: 0,
            });
        };
        let tags = spec
            .tags
            .iter()
            .map(|t| rtscope_common::names::parse_tag(t))
            .collect::<Result<Vec<_>, _>>()?;
        let threads = config
            .threads
            .iter()
            .enumerate()
            .map(|(i, t)| ThreadInfo {
                thread: i as u32,
                cpu: t
                    .affinity
                    .as_ref()
                    .filter(|c| c.len() == 1)
                    .map(|c| c.nth_cyclic(0) as u32),
                policy: t.policy.name().to_string(),
                priority: t.priority,
                interval_ns: t.interval.0,
            })
            .collect();
        let new = NewRun {
            kind: spec.kind,
            label: spec.label,
            tags,
            started: String::new(),
            started_unix_ns: 0,
            pid: std::process::id(),
            tool_version: env!("CARGO_PKG_VERSION").into(),
            command_line_json: serde_json::to_string(&spec.command_line)
                .unwrap_or_else(|_| "[]".into()),
            config_json: spec.config_json,
            environment: with_sample_rule(environment::capture(Path::new("/"))),
            threads,
        };
        let monitor_interval = spec.monitor_interval;
        let raw = spec.raw && config.sample_ring.is_some();
        let mut recorder = Recorder::begin(store, new, run, raw)?;
        if !spec.checks.is_empty() {
            let id = recorder.id;
            wait_out_lock(&mut recorder.store, CHECKPOINT_WAIT, |s| {
                s.set_checks(id, &spec.checks)
            })
            .map_err(UsageError::from_error)?;
        }
        let recorder = Some(recorder);
        Ok(Recording {
            recorder,
            error: None,
            pace,
            monitor: monitor_interval.and_then(|i| start_monitor(run, i, housekeeping)),
            rows: MonitorRows::with_cadence(monitor_interval),
            fresh: Vec::new(),
            busy: 0,
        })
    }

    /// The run's id in the store (none without a store or after a failure).
    pub fn run_id(&self) -> Option<RunId> {
        self.recorder.as_ref().map(|r| r.id())
    }

    /// The CPU the monitor thread runs on, when monitors run and are pinned.
    pub fn monitor_cpu(&self) -> Option<u32> {
        self.monitor.as_ref().and_then(|m| m.cpu())
    }

    fn collect_monitor(&mut self, last: bool) {
        let messages = match (last, &self.monitor) {
            (false, Some(m)) => m.drain(),
            (true, Some(_)) => self.monitor.take().map(|m| m.finish()).unwrap_or_default(),
            (_, None) => return,
        };
        // Kept for a minute at most when nobody takes them.
        self.fresh.extend(messages.iter().map(|m| m.0.clone()));
        let excess = self.fresh.len().saturating_sub(64);
        self.fresh.drain(..excess);
        if let Some(r) = &mut self.recorder {
            self.rows.add(messages, &mut r.pending);
        }
    }

    /// The monitor samples taken since the last call.
    pub fn take_samples(&mut self) -> Vec<rtscope_monitor::Sample> {
        std::mem::take(&mut self.fresh)
    }

    /// Stores the explanation of the run's spikes (`--explain`); on failure the recording stops
    /// and the error is kept for the end.
    pub fn write_spikes(
        &mut self,
        summary: &rtscope_store::SpikeSummaryRow,
        rows: &[rtscope_store::SpikeRow],
    ) {
        if let Some(r) = &mut self.recorder {
            if let Err(e) = r.store.write_spikes(r.id, summary, rows) {
                rtscope_common::error::warn(&format!("rtscope: error: recording stopped: {e}"));
                self.error = Some(e.to_string());
                self.recorder = None;
            }
        }
    }

    /// Stores what the run's explanation observed with (after [`Self::write_spikes`]); on
    /// failure the recording stops and the error is kept for the end.
    pub fn write_recorder(&mut self, row: &rtscope_store::Recorder) {
        if let Some(r) = &mut self.recorder {
            if let Err(e) = r.store.write_recorder(r.id, row) {
                rtscope_common::error::warn(&format!("rtscope: error: recording stopped: {e}"));
                self.error = Some(e.to_string());
                self.recorder = None;
            }
        }
    }

    /// Adds facts learnt while the run ran to its environment (nothing without a store).
    /// With the monitor's cadence (`rtscope.cadence.monitor`); call it after [`Self::finish`].
    pub fn note_environment(&mut self, mut pairs: Vec<(String, String)>) {
        if let Some(c) = &self.rows.cadence {
            pairs.push(("rtscope.cadence.monitor".into(), c.describe()));
        }
        if let Some(r) = &mut self.recorder {
            let _ = r.store.set_environment(r.id, &pairs);
        }
    }

    /// Hands the recorder the samples the session drained from the rings (kept with `--raw`).
    pub fn add_samples(&mut self, samples: &[Vec<Sample>]) {
        if let Some(r) = &mut self.recorder {
            r.add_samples(samples);
        }
    }

    /// A checkpoint. While another process holds the database lock, what could not be
    /// written is kept in memory (raw samples up to [`MAX_UNSENT_BYTES`]) and retried at the
    /// next tick; any other failure stops the recording and is kept for the end.
    pub fn tick(&mut self, run: &Run) {
        if !self.pace.due() {
            return;
        }
        self.collect_monitor(false);
        if let Some(r) = &mut self.recorder {
            match r.checkpoint(run) {
                Ok(()) => self.busy = 0,
                Err(e) if e.is_busy() => {
                    if self.busy == 0 {
                        rtscope_common::error::warn(&format!(
                            "rtscope: warning: {} is locked by another process: checkpoints wait in memory and are retried",
                            r.path().display()
                        ));
                    }
                    self.busy += 1;
                }
                Err(e) => {
                    rtscope_common::error::warn(&format!("rtscope: error: recording stopped: {e}"));
                    self.error = Some(e.to_string());
                    self.recorder = None;
                }
            }
        }
    }

    /// Writes the end of the run. Returns the line to print, and whether recording failed.
    pub fn finish(
        &mut self,
        r: &RunResult,
        interrupted: bool,
        exit_code: i32,
    ) -> (Option<String>, bool) {
        self.collect_monitor(true);
        let status = end_status(interrupted);
        match (self.recorder.as_mut(), &self.error) {
            (Some(rec), None) => match rec.finish(r, status, exit_code) {
                Ok(()) if rec.lost_samples() > 0 => (
                    Some(format!(
                        "recorded as run {} in {}, without {} raw samples: the database was locked by another process for longer than {} MiB of samples could wait",
                        rec.id(),
                        rec.path().display(),
                        rec.lost_samples(),
                        MAX_UNSENT_BYTES >> 20
                    )),
                    false,
                ),
                Ok(()) => (
                    Some(format!(
                        "recorded as run {} in {}",
                        rec.id(),
                        rec.path().display()
                    )),
                    false,
                ),
                Err(e) => (
                    Some(format!("error: the run could not be recorded: {e}")),
                    true,
                ),
            },
            (_, Some(e)) => (
                Some(format!("error: the run was only partly recorded: {e}")),
                true,
            ),
            (None, None) => (None, false),
        }
    }
}

/// How a run that ended is recorded: `Interrupted` when a stop signal (or a failed output)
/// ended it early, else `Complete`.
pub(crate) fn end_status(interrupted: bool) -> RunStatus {
    if interrupted {
        RunStatus::Interrupted
    } else {
        RunStatus::Complete
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtscope_common::clock::FakeClock;
    use std::sync::Arc;

    #[test]
    fn checkpoints_are_no_closer_than_the_minimum_period_whatever_the_ticks() {
        let clock = Arc::new(FakeClock::new());
        let mut pace = Pace::new(clock.clone(), Duration::from_millis(2500));
        // Ticks every second, one of them late (a slow checkpoint held the loop 1.7 s).
        let mut due_at = Vec::new();
        for (i, step) in [1000, 1000, 1000, 1700, 1000, 1000, 1000, 1000]
            .iter()
            .enumerate()
        {
            clock.advance(Duration::from_millis(*step));
            if pace.due() {
                due_at.push((i, clock.elapsed().as_millis()));
            }
        }
        assert_eq!(due_at, [(2, 3000), (4, 5700), (7, 8700)]);
    }
}
