//! A noise run in the run database, written as `measure` writes its runs: the run's row at the
//! start (status `running`, which reads back as `incomplete` once its process is gone), a
//! checkpoint about once a second while the loops spin (each CPU's totals and gap histogram,
//! the gaps drained since the last one), and the end (`complete` or `interrupted`, the exit
//! code). A SIGKILL or a power cut leaves everything up to the last checkpoint.
//!
//! A run keeps the longest `--keep-gaps` gaps of each CPU, known only at its end: the
//! checkpoints write the gaps as they come, at most that many per CPU, and the end replaces
//! them with the longest ones (`Store::restate_run`, with the settings that learnt the run's
//! steal time and SMIs).

use crate::lock_wait::wait_out_lock;
use rtscope_common::error::UsageError;
use rtscope_core::civil::unix_ns;
use rtscope_core::Nanos;
use rtscope_engine::noise::{Gap, NoiseShared, NoiseThread};
use rtscope_engine::Sample;
use rtscope_store::{
    Checkpoint, EventRow, NewRun, RunId, RunKind, RunStatus, SampleFigures, SeriesPoint, Store,
    StoreError, ThreadInfo, ThreadStats,
};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

/// Checkpoints no closer together than this (and so at least this often while the control
/// thread drains the rings every 100 ms): the run reads as live, never as stale, while it runs.
pub const CHECKPOINT_EVERY: Duration = Duration::from_secs(1);

/// How long a checkpoint waits for the database lock before it is retried at the next one
/// (the control thread must keep draining the loops' rings).
const CHECKPOINT_WAIT: Duration = Duration::from_millis(200);

/// What a noise run's record says besides its threads.
#[derive(Debug, Clone)]
pub struct NoiseMeta {
    /// `--label`.
    pub label: Option<String>,
    /// `--tag` pairs.
    pub tags: Vec<(String, String)>,
    /// The command line.
    pub command_line: Vec<String>,
    /// The configuration as JSON.
    pub config_json: String,
    /// Wall-clock start.
    pub started: SystemTime,
    /// Wall-clock end: when the loops stopped (the analysis of `--explain` comes after).
    pub ended: SystemTime,
    /// CLOCK_MONOTONIC at the start.
    pub clock_start: Nanos,
    /// Policy name and priority of the loops.
    pub policy: &'static str,
    /// Priority.
    pub priority: i32,
    /// The duty-cycle period (stored as the threads' interval).
    pub period: Nanos,
    /// What `--explain` observed with, recorded beside its summary (`None`: not explaining).
    pub recorder: Option<rtscope_store::Recorder>,
}

/// A noise run being recorded.
pub struct NoiseRecorder {
    store: Store,
    id: RunId,
    clock_start: Nanos,
    started_unix_ns: i64,
    keep: usize,
    /// Events each CPU's checkpoints have written.
    written: Vec<usize>,
    /// Gaps drained since the last checkpoint written, per CPU (at most `keep - written`).
    fresh: Vec<Vec<Gap>>,
    last: Instant,
    /// Checkpoints that found the database locked since the last one written.
    busy: u32,
    /// Why recording stopped (a failure other than a lock): kept for the end.
    error: Option<StoreError>,
}

impl NoiseRecorder {
    /// Writes the run's row (status `running`) for loops on `cpus`, keeping at most `keep`
    /// gaps per CPU.
    pub fn begin(
        mut store: Store,
        meta: &NoiseMeta,
        cpus: &[usize],
        keep: usize,
    ) -> Result<NoiseRecorder, UsageError> {
        let new = new_run(meta, cpus);
        let id = wait_out_lock(&mut store, CHECKPOINT_WAIT, |s| s.begin_run(&new))
            .map_err(UsageError::from_error)?;
        store
            .set_busy_timeout(CHECKPOINT_WAIT)
            .map_err(UsageError::from_error)?;
        Ok(NoiseRecorder {
            store,
            id,
            clock_start: meta.clock_start,
            started_unix_ns: unix_ns(meta.started),
            keep: keep.max(1),
            written: vec![0; cpus.len()],
            fresh: vec![Vec::new(); cpus.len()],
            last: Instant::now(),
            busy: 0,
            error: None,
        })
    }

    /// Moves the run's start to when the loops started (`meta.started`, `meta.clock_start`),
    /// with the settings they run with (`meta.config_json`): the row is written before the
    /// trace's set-up and the loops' pre-heat, and learns these after them. Waits out another
    /// process's lock as [`NoiseRecorder::begin`] does.
    pub fn restart(&mut self, meta: &NoiseMeta) -> Result<(), UsageError> {
        let (id, started, unix) = (
            self.id,
            rtscope_core::civil::rfc3339(meta.started),
            unix_ns(meta.started),
        );
        wait_out_lock(&mut self.store, CHECKPOINT_WAIT, |s| {
            s.restate_start(id, &started, unix, &meta.config_json)
        })
        .map_err(UsageError::from_error)?;
        self.clock_start = meta.clock_start;
        self.started_unix_ns = unix;
        self.last = Instant::now();
        Ok(())
    }

    /// Deletes the run's row: the run was refused in its set-up (the loops never ran), so
    /// nothing of it is kept. Best effort: a row left behind reads as `incomplete`.
    pub fn abandon(mut self) {
        let id = self.id;
        let _ = wait_out_lock(&mut self.store, CHECKPOINT_WAIT, |s| s.delete_run(id));
    }

    /// Stores the preflight audit's verdicts with the run.
    pub fn set_checks(&mut self, checks: &[rtscope_store::CheckRow]) -> Result<(), UsageError> {
        let id = self.id;
        wait_out_lock(&mut self.store, CHECKPOINT_WAIT, |s| {
            s.set_checks(id, checks)
        })
        .map_err(UsageError::from_error)
    }

    /// The run's id.
    pub fn id(&self) -> RunId {
        self.id
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        self.store.path()
    }

    /// Keeps gaps of CPU number `i` (in the order of the run's CPUs) drained from its ring
    /// for the next checkpoint, as long as the CPU's events stay within `--keep-gaps`.
    pub fn add_gaps(&mut self, i: usize, gaps: &[Gap]) {
        let (Some(fresh), Some(&written)) = (self.fresh.get_mut(i), self.written.get(i)) else {
            return;
        };
        let room = self.keep.saturating_sub(written + fresh.len());
        fresh.extend_from_slice(&gaps[..gaps.len().min(room)]);
    }

    /// A checkpoint from the live loops, when one is due ([`CHECKPOINT_EVERY`]). While another
    /// process holds the lock, the gaps wait for the next one; any other failure stops the
    /// recording (said once; the end reports it).
    pub fn tick(&mut self, threads: &[Arc<NoiseShared>], cpus: &[usize]) {
        if self.error.is_some() || self.last.elapsed() < CHECKPOINT_EVERY {
            return;
        }
        self.last = Instant::now();
        let live: Vec<NoiseThread> = threads
            .iter()
            .zip(cpus)
            .map(|(sh, &cpu)| NoiseThread {
                cpu,
                tid: sh.tid(),
                totals: sh.totals(),
                gaps_dropped: sh.ring().dropped(),
            })
            .collect();
        let now = rtscope_engine::sys::now(libc::CLOCK_MONOTONIC);
        let mut cp = Checkpoint {
            progress_ns: now.0.saturating_sub(self.clock_start.0),
            at_unix_ns: unix_ns(SystemTime::now()),
            ..Checkpoint::default()
        };
        for (i, t) in live.iter().enumerate() {
            cp.threads.push(thread_stats(i, t, self.clock_start));
            let from = self.written[i];
            add_gaps(&mut cp, self.at(), i, from, &self.fresh[i]);
        }
        match self.store.checkpoint(self.id, &cp) {
            Ok(()) => {
                self.busy = 0;
                for (w, f) in self.written.iter_mut().zip(&mut self.fresh) {
                    *w += f.len();
                    f.clear();
                }
            }
            Err(e) if e.is_busy() => {
                if self.busy == 0 {
                    rtscope_common::error::warn(&format!(
                        "rtscope: warning: {} is locked by another process: checkpoints wait in memory and are retried",
                        self.path().display()
                    ));
                }
                self.busy += 1;
            }
            Err(e) => {
                rtscope_common::error::warn(&format!("rtscope: error: recording stopped: {e}"));
                self.error = Some(e);
            }
        }
    }

    fn at(&self) -> (Nanos, i64) {
        (self.clock_start, self.started_unix_ns)
    }

    /// Writes the end: the settings (`config_json` with what the run learnt), each CPU's
    /// totals and its one series point, the kept gaps in place of the checkpoints' ones, the
    /// status and exit code, then the `--explain` summary. A failed checkpoint before is an
    /// error here too: the run is only partly recorded.
    pub fn finish(
        mut self,
        meta: &NoiseMeta,
        threads: &[NoiseThread],
        gaps: &[Vec<Gap>],
        explained: Option<&rtscope_explain::book::ExplainSummary>,
        (status, exit_code): (RunStatus, i32),
    ) -> Result<RunId, NoiseRecordError> {
        if let Some(e) = self.error.take() {
            return Err(NoiseRecordError::Partly(e));
        }
        let length = meta
            .ended
            .duration_since(meta.started)
            .map_or(0, |d| d.as_nanos() as u64);
        let mut cp = Checkpoint {
            progress_ns: length,
            at_unix_ns: unix_ns(SystemTime::now()),
            ..Checkpoint::default()
        };
        for (i, t) in threads.iter().enumerate() {
            cp.threads.push(thread_stats(i, t, meta.clock_start));
            cp.series.push(series_point(i, t, length));
            let kept = gaps.get(i).map_or(&[][..], Vec::as_slice);
            add_gaps(&mut cp, self.at(), i, 0, kept);
        }
        let ended = rtscope_core::civil::rfc3339(meta.ended);
        let id = self.id;
        let write = |store: &mut Store| -> Result<(), StoreError> {
            store.restate_run(id, &meta.config_json)?;
            store.finish_run(id, &cp, status, &ended, exit_code)?;
            if let Some(x) = explained {
                let (summary, rows) = crate::explain::store_rows(x, meta.clock_start);
                store.write_spikes(id, &summary, &rows)?;
                if let Some(r) = &meta.recorder {
                    store.write_recorder(id, r)?;
                }
            }
            Ok(())
        };
        wait_out_lock(&mut self.store, CHECKPOINT_WAIT, write)
            .map(|()| id)
            .map_err(NoiseRecordError::NotRecorded)
    }
}

/// Why a noise run was not recorded whole.
#[derive(Debug, thiserror::Error)]
pub enum NoiseRecordError {
    /// A checkpoint failed during the run (its error as the store said it): the record holds
    /// what was written before.
    #[error("the run was only partly recorded: {0}")]
    Partly(#[source] StoreError),
    /// The run's end could not be written.
    #[error("the run could not be recorded: {0}")]
    NotRecorded(#[source] StoreError),
    /// The run's row could not be started.
    #[error(transparent)]
    Begin(#[from] UsageError),
}

/// Writes a whole noise run at once (its row, then its end): per CPU its gap histogram as the
/// samples and its gaps over the threshold as events (`cycle` is the gap's number, `latency`
/// its length, the offset its start). Returns the run's id.
pub fn record(
    store: Store,
    meta: &NoiseMeta,
    threads: &[NoiseThread],
    gaps: &[Vec<Gap>],
    explained: Option<&rtscope_explain::book::ExplainSummary>,
    end: (RunStatus, i32),
) -> Result<RunId, NoiseRecordError> {
    let cpus: Vec<usize> = threads.iter().map(|t| t.cpu).collect();
    let keep = gaps.iter().map(Vec::len).max().unwrap_or(1);
    NoiseRecorder::begin(store, meta, &cpus, keep)
        .map_err(NoiseRecordError::Begin)?
        .finish(meta, threads, gaps, explained, end)
}

/// The run's row: kind `noise`, one thread per measured CPU (its interval the duty period).
fn new_run(meta: &NoiseMeta, cpus: &[usize]) -> NewRun {
    NewRun {
        kind: RunKind::Noise,
        label: meta.label.clone(),
        tags: meta.tags.clone(),
        started: rtscope_core::civil::rfc3339(meta.started),
        started_unix_ns: unix_ns(meta.started),
        pid: std::process::id(),
        tool_version: env!("CARGO_PKG_VERSION").into(),
        command_line_json: serde_json::to_string(&meta.command_line)
            .unwrap_or_else(|_| "[]".into()),
        config_json: meta.config_json.clone(),
        environment: crate::environment::capture(Path::new("/")),
        threads: cpus
            .iter()
            .enumerate()
            .map(|(i, &cpu)| ThreadInfo {
                thread: i as u32,
                cpu: Some(cpu as u32),
                policy: meta.policy.to_string(),
                priority: meta.priority,
                interval_ns: meta.period.0,
            })
            .collect(),
    }
}

/// Thread `i`'s statistics: its gap histogram as the samples.
fn thread_stats(i: usize, t: &NoiseThread, clock_start: Nanos) -> ThreadStats<'_> {
    let h = &t.totals.histogram;
    let (n, min, max) = (h.count(), h.min().map(|m| m.0), h.max().map(|m| m.0));
    ThreadStats {
        thread: i as u32,
        tid: t.tid,
        figures: SampleFigures {
            samples: n,
            min_ns: min,
            mean_ns: mean(t),
            max_ns: t.totals.max.map(|g| g.duration.0).or(max),
            max_cycle: None,
            max_offset_ns: t
                .totals
                .max
                .map(|g| g.start.0.saturating_sub(clock_start.0)),
        },
        missed: 0,
        raw_dropped: t.gaps_dropped,
        histogram: h,
    }
}

/// Within a window the gaps add up to the time spun: the mean gap is exact.
fn mean(t: &NoiseThread) -> Option<f64> {
    let n = t.totals.histogram.count();
    (n > 0).then(|| t.totals.runtime.0 as f64 / n as f64)
}

/// Thread `i`'s one series point: the whole run.
fn series_point(i: usize, t: &NoiseThread, length: u64) -> SeriesPoint {
    let h = &t.totals.histogram;
    SeriesPoint {
        thread: i as u32,
        offset_ns: length,
        length_ns: length,
        samples: h.count(),
        min_ns: h.min().map(|m| m.0),
        max_ns: h.max().map(|m| m.0),
        mean_ns: mean(t),
        p99_ns: h.value_at_quantile(0.99).map(|v| v.0),
        missed: 0,
    }
}

/// Thread `i`'s gaps as events, numbered from `first`: the latency is the gap's length, the
/// time its start.
fn add_gaps(
    cp: &mut Checkpoint<'_>,
    (clock_start, start_unix): (Nanos, i64),
    i: usize,
    first: usize,
    gaps: &[Gap],
) {
    for (k, g) in gaps.iter().enumerate() {
        let s = Sample {
            cycle: (first + k) as u64,
            latency: g.duration,
            time: g.start,
        };
        let offset = s.time.0.saturating_sub(clock_start.0);
        cp.events.push(EventRow {
            thread: i as u32,
            cycle: s.cycle,
            latency_ns: s.latency.0,
            offset_ns: offset,
            unix_ns: start_unix.saturating_add(i64::try_from(offset).unwrap_or(0)),
        });
    }
}
