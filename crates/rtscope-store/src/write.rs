//! Writing runs: begin, checkpoint, finish; tags and deletion.

use crate::{codec, Result, RunId, RunKind, RunStatus, Store, StoreError};
use rtscope_core::{Histogram, Stats};
use rusqlite::{params, OptionalExtension};

/// A measuring thread as configured.
#[derive(Debug, Clone)]
pub struct ThreadInfo {
    /// Thread index.
    pub thread: u32,
    /// Pinned CPU, if pinned to one.
    pub cpu: Option<u32>,
    /// Policy name.
    pub policy: String,
    /// Priority.
    pub priority: i32,
    /// Interval, ns.
    pub interval_ns: u64,
}

/// Everything known when a run starts.
#[derive(Debug, Clone)]
pub struct NewRun {
    /// What records it.
    pub kind: RunKind,
    /// `--label`.
    pub label: Option<String>,
    /// `--tag key=value`.
    pub tags: Vec<(String, String)>,
    /// RFC 3339 UTC start.
    pub started: String,
    /// Start, ns since the Unix epoch.
    pub started_unix_ns: i64,
    /// The process writing the run.
    pub pid: u32,
    /// rtscope's version.
    pub tool_version: String,
    /// The command line, as a JSON array of strings.
    pub command_line_json: String,
    /// The full configuration, as a JSON object.
    pub config_json: String,
    /// Environment facts (uname, kernel command line, CPU model …).
    pub environment: Vec<(String, String)>,
    /// The threads.
    pub threads: Vec<ThreadInfo>,
}

/// A thread's (or all threads') samples and their extremes: one type for what a checkpoint
/// writes ([`ThreadStats`]), what a stored thread reads back ([`crate::ThreadRow`]) and what
/// measure's JSON shows (rtscope-present flattens it into its series).
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct SampleFigures {
    /// Samples.
    pub samples: u64,
    /// Minimum, ns.
    pub min_ns: Option<u64>,
    /// Mean, ns.
    pub mean_ns: Option<f64>,
    /// Maximum, ns (exact).
    pub max_ns: Option<u64>,
    /// Cycle (0-based) of the maximum.
    pub max_cycle: Option<u64>,
    /// Offset of the maximum from the start of the run, ns.
    pub max_offset_ns: Option<u64>,
}

impl SampleFigures {
    /// The figures of a thread's statistics, `max_offset_ns` where the maximum's time is known
    /// (all `None` but the count without samples).
    pub fn of(s: &Stats, max_offset_ns: Option<u64>) -> SampleFigures {
        let has = s.count > 0;
        SampleFigures {
            samples: s.count,
            min_ns: has.then_some(s.min.0),
            mean_ns: s.mean_ns(),
            max_ns: has.then_some(s.max.0),
            max_cycle: has.then_some(s.max_cycle),
            max_offset_ns: max_offset_ns.filter(|_| has),
        }
    }
}

/// Statistics of one thread so far.
#[derive(Debug, Clone)]
pub struct ThreadStats<'a> {
    /// Thread index.
    pub thread: u32,
    /// Kernel thread id.
    pub tid: i32,
    /// Samples and extremes.
    pub figures: SampleFigures,
    /// Missed periods.
    pub missed: u64,
    /// Raw samples the writer could not keep (`--raw`).
    pub raw_dropped: u64,
    /// The lossless histogram.
    pub histogram: &'a Histogram,
}

/// One point of a thread's time series: one interval (default 1 s).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SeriesPoint {
    /// Thread index.
    pub thread: u32,
    /// End of the interval, from the run's start, ns.
    pub offset_ns: u64,
    /// Length of the interval, ns.
    pub length_ns: u64,
    /// Samples in the interval.
    pub samples: u64,
    /// Minimum, ns.
    pub min_ns: Option<u64>,
    /// Maximum, ns.
    pub max_ns: Option<u64>,
    /// Mean, ns.
    pub mean_ns: Option<f64>,
    /// p99, ns.
    pub p99_ns: Option<u64>,
    /// Missed periods in the interval.
    pub missed: u64,
}

/// One sample above the event threshold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventRow {
    /// Thread index.
    pub thread: u32,
    /// Cycle.
    pub cycle: u64,
    /// Latency, ns.
    pub latency_ns: u64,
    /// Wake-up time from the run's start, ns.
    pub offset_ns: u64,
    /// Wake-up time since the Unix epoch, ns.
    pub unix_ns: i64,
}

/// A chunk of raw samples of one thread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawChunk {
    /// Thread index.
    pub thread: u32,
    /// Cycle of the first sample.
    pub first_cycle: u64,
    /// Samples in the chunk.
    pub count: u64,
    /// [`codec::encode_samples`] bytes.
    pub data: Vec<u8>,
}

/// What one checkpoint adds.
#[derive(Debug, Clone, Default)]
pub struct Checkpoint<'a> {
    /// Time measured so far, ns.
    pub progress_ns: u64,
    /// Now, ns since the Unix epoch.
    pub at_unix_ns: i64,
    /// Every thread's statistics so far.
    pub threads: Vec<ThreadStats<'a>>,
    /// New series points.
    pub series: Vec<SeriesPoint>,
    /// New events.
    pub events: Vec<EventRow>,
    /// New raw-sample chunks (`--raw`).
    pub samples: Vec<RawChunk>,
    /// New system-monitor data.
    pub monitor: crate::MonitorBatch,
}

fn i(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

fn oi(v: Option<u64>) -> Option<i64> {
    v.map(i)
}

impl Store {
    /// Records the start of a run (status `running`) and returns its id.
    pub fn begin_run(&mut self, r: &NewRun) -> Result<RunId> {
        let path = self.path.clone();
        let err = move |source| StoreError::Sqlite {
            path: path.clone(),
            source,
        };
        let tx = self.conn.transaction().map_err(&err)?;
        tx.execute(
            &format!("INSERT INTO runs (id, kind, label, status, started, started_unix_ns, pid, tool_version, command_line, config) VALUES ({}, ?1, ?2, 'running', ?3, ?4, ?5, ?6, ?7, ?8)", crate::schema::NEXT_RUN_ID),
            params![r.kind.as_str(), r.label, r.started, r.started_unix_ns, r.pid, r.tool_version, r.command_line_json, r.config_json],
        )
        .map_err(&err)?;
        let id = tx.last_insert_rowid();
        crate::merge::identify(&tx, id, &r.environment).map_err(&err)?;
        for (k, v) in &r.tags {
            tx.execute(
                "INSERT OR REPLACE INTO tags (run_id, key, value) VALUES (?1, ?2, ?3)",
                params![id, k, v],
            )
            .map_err(&err)?;
        }
        for (k, v) in &r.environment {
            tx.execute(
                "INSERT OR REPLACE INTO environment (run_id, key, value) VALUES (?1, ?2, ?3)",
                params![id, k, v],
            )
            .map_err(&err)?;
        }
        for t in &r.threads {
            tx.execute(
                "INSERT INTO threads (run_id, thread, cpu, policy, priority, interval_ns) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![id, t.thread, t.cpu, t.policy, t.priority, i(t.interval_ns)],
            )
            .map_err(&err)?;
        }
        tx.commit().map_err(&err)?;
        Ok(id)
    }

    /// Commits a checkpoint: statistics so far, new series points and events, progress.
    pub fn checkpoint(&mut self, run: RunId, c: &Checkpoint) -> Result<()> {
        let path = self.path.clone();
        let err = move |source| StoreError::Sqlite {
            path: path.clone(),
            source,
        };
        let tx = self.conn.transaction().map_err(&err)?;
        for t in &c.threads {
            tx.execute(
                "UPDATE threads SET tid=?3, samples=?4, min_ns=?5, mean_ns=?6, max_ns=?7, max_cycle=?8, max_offset_ns=?9, missed=?10, histogram=?11, raw_dropped=?12 WHERE run_id=?1 AND thread=?2",
                params![run, t.thread, t.tid, i(t.figures.samples), oi(t.figures.min_ns), t.figures.mean_ns, oi(t.figures.max_ns), oi(t.figures.max_cycle), oi(t.figures.max_offset_ns), i(t.missed), codec::encode(t.histogram), i(t.raw_dropped)],
            )
            .map_err(&err)?;
        }
        {
            let mut s = tx
                .prepare_cached("INSERT OR REPLACE INTO series (run_id, thread, offset_ns, length_ns, samples, min_ns, max_ns, mean_ns, p99_ns, missed) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)")
                .map_err(&err)?;
            for p in &c.series {
                s.execute(params![
                    run,
                    p.thread,
                    i(p.offset_ns),
                    i(p.length_ns),
                    i(p.samples),
                    oi(p.min_ns),
                    oi(p.max_ns),
                    p.mean_ns,
                    oi(p.p99_ns),
                    i(p.missed)
                ])
                .map_err(&err)?;
            }
            let mut e = tx
                .prepare_cached("INSERT INTO events (run_id, thread, cycle, latency_ns, offset_ns, unix_ns) VALUES (?1, ?2, ?3, ?4, ?5, ?6)")
                .map_err(&err)?;
            for ev in &c.events {
                e.execute(params![
                    run,
                    ev.thread,
                    i(ev.cycle),
                    i(ev.latency_ns),
                    i(ev.offset_ns),
                    ev.unix_ns
                ])
                .map_err(&err)?;
            }
            let mut r = tx
                .prepare_cached("INSERT OR REPLACE INTO samples (run_id, thread, first_cycle, count, data) VALUES (?1, ?2, ?3, ?4, ?5)")
                .map_err(&err)?;
            for chunk in &c.samples {
                r.execute(params![
                    run,
                    chunk.thread,
                    i(chunk.first_cycle),
                    i(chunk.count),
                    chunk.data
                ])
                .map_err(&err)?;
            }
        }
        crate::monitor::write(&tx, run, &c.monitor).map_err(&err)?;
        tx.execute(
            "UPDATE runs SET progress_ns=?2, checkpoint_unix_ns=?3 WHERE id=?1",
            params![run, i(c.progress_ns), c.at_unix_ns],
        )
        .map_err(&err)?;
        tx.commit().map_err(&err)
    }

    /// Writes the final checkpoint and the end state: `complete`, `interrupted` or `failed`.
    pub fn finish_run(
        &mut self,
        run: RunId,
        last: &Checkpoint,
        status: RunStatus,
        ended: &str,
        exit_code: i32,
    ) -> Result<()> {
        self.checkpoint(run, last)?;
        self.conn
            .execute(
                "UPDATE runs SET status=?2, ended=?3, exit_code=?4 WHERE id=?1",
                params![run, status.as_str(), ended, exit_code],
            )
            .map_err(self.err())?;
        Ok(())
    }

    /// Marks a run still `running` as `incomplete`: its writer is known to be gone (a run
    /// fetched from a board whose rtscope was killed), which the process check of this host
    /// cannot tell for another host's process. Returns whether it was running.
    pub fn mark_writer_gone(&mut self, run: RunId) -> Result<bool> {
        let n = self
            .conn
            .execute(
                "UPDATE runs SET status=?2 WHERE id=?1 AND status=?3",
                params![
                    run,
                    RunStatus::Incomplete.as_str(),
                    RunStatus::Running.as_str()
                ],
            )
            .map_err(self.err())?;
        Ok(n > 0)
    }

    /// Adds (or replaces) facts of a run's environment learnt while it ran, such as how its
    /// housekeeping threads were scheduled and kept their cadence.
    pub fn set_environment(&mut self, run: RunId, pairs: &[(String, String)]) -> Result<()> {
        for (k, v) in pairs {
            self.conn
                .execute(
                    "INSERT OR REPLACE INTO environment (run_id, key, value) VALUES (?1, ?2, ?3)",
                    params![run, k, v],
                )
                .map_err(self.err())?;
        }
        Ok(())
    }

    /// Before the last checkpoint of a run whose record is decided at its end (`rtscope noise`
    /// keeps its longest gaps, and learns its steal time and SMIs as it ends): deletes the
    /// events its checkpoints wrote and replaces its settings, in one transaction. The caller
    /// then writes the final events with [`Store::finish_run`].
    pub fn restate_run(&mut self, run: RunId, config_json: &str) -> Result<()> {
        let path = self.path.clone();
        let err = move |source| StoreError::Sqlite {
            path: path.clone(),
            source,
        };
        let tx = self.conn.transaction().map_err(&err)?;
        tx.execute("DELETE FROM events WHERE run_id=?1", params![run])
            .map_err(&err)?;
        tx.execute(
            "UPDATE runs SET config=?2 WHERE id=?1",
            params![run, config_json],
        )
        .map_err(&err)?;
        tx.commit().map_err(&err)
    }

    /// Moves a run's start to when its measuring began, with its settings: a run whose row is
    /// written before its set-up (`rtscope noise` records itself before the trace is set up, so
    /// a kill there leaves an `incomplete` run) learns its start and its settings after it.
    pub fn restate_start(
        &mut self,
        run: RunId,
        started: &str,
        started_unix_ns: i64,
        config_json: &str,
    ) -> Result<()> {
        self.conn
            .execute(
                "UPDATE runs SET started=?2, started_unix_ns=?3, config=?4 WHERE id=?1",
                params![run, started, started_unix_ns, config_json],
            )
            .map_err(self.err())?;
        Ok(())
    }

    /// Sets (or with `None`, removes) a tag.
    pub fn set_tag(&mut self, run: RunId, key: &str, value: Option<&str>) -> Result<()> {
        self.require(run)?;
        match value {
            Some(v) => self.conn.execute(
                "INSERT OR REPLACE INTO tags (run_id, key, value) VALUES (?1, ?2, ?3)",
                params![run, key, v],
            ),
            None => self.conn.execute(
                "DELETE FROM tags WHERE run_id=?1 AND key=?2",
                params![run, key],
            ),
        }
        .map_err(self.err())?;
        Ok(())
    }

    /// Deletes a run and everything recorded with it.
    pub fn delete_run(&mut self, run: RunId) -> Result<()> {
        self.require(run)?;
        self.conn
            .execute("DELETE FROM runs WHERE id=?1", params![run])
            .map_err(self.err())?;
        Ok(())
    }

    pub(crate) fn require(&self, run: RunId) -> Result<()> {
        let found: Option<i64> = self
            .conn
            .query_row("SELECT id FROM runs WHERE id=?1", params![run], |r| {
                r.get(0)
            })
            .optional()
            .map_err(self.err())?;
        found.map(|_| ()).ok_or(StoreError::NoSuchRun(run))
    }
}
