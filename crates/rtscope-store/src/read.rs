//! Reading runs back, also while a run is being written.

use crate::{codec, Result, RunId, RunKind, RunStatus, Store};
use rtscope_core::{Histogram, Nanos, Overflow, Percentile};
use rusqlite::{params, Row};
use std::time::{SystemTime, UNIX_EPOCH};

/// A run with no checkpoint for this long, or whose process is gone, reads as `incomplete`.
pub const STALE_NS: i64 = 10_000_000_000;

/// One line of `rtscope runs`.
#[derive(Debug, Clone)]
pub struct RunSummary {
    /// Id (in this database; never given twice).
    pub id: RunId,
    /// The run's UUID: its identity across databases and outside the machine (KCIDB, JUnit).
    pub uuid: Option<String>,
    /// What recorded it.
    pub kind: RunKind,
    /// Label.
    pub label: Option<String>,
    /// Where it is (`incomplete`: its writer died).
    pub status: RunStatus,
    /// RFC 3339 start.
    pub started: String,
    /// RFC 3339 end, when finished.
    pub ended: Option<String>,
    /// Time measured (as of the last checkpoint), ns.
    pub progress_ns: u64,
    /// Exit code, when finished.
    pub exit_code: Option<i32>,
    /// Tags, by key.
    pub tags: Vec<(String, String)>,
    /// Number of threads.
    pub threads: u32,
    /// Samples over all threads.
    pub samples: u64,
    /// Largest latency over all threads, ns.
    pub max_ns: Option<u64>,
    /// Missed periods over all threads.
    pub missed: u64,
    /// All threads' histograms merged.
    pub histogram: Histogram,
    /// The limit of an imported histogram (cyclictest's `-h`, `config.source.histogram_size_us`),
    /// when the source says: every sample it could not place is at least this.
    pub histogram_limit: Option<Nanos>,
}

impl RunSummary {
    /// The samples of the whole run its merged histogram does not hold (an import's overflows).
    pub fn overflow(&self) -> Overflow {
        Overflow::of(&self.histogram, self.samples, self.histogram_limit)
    }

    /// Missed periods over all threads, `None` when unknown: an import's source never says how
    /// many deadlines were missed (cyclictest's text, histogram and JSON output do not), so its
    /// stored 0 is not a count.
    pub fn missed_periods(&self) -> Option<u64> {
        (self.kind != RunKind::Import).then_some(self.missed)
    }

    /// The run's percentiles ranked over all its samples: those among an import's overflows
    /// are lower bounds.
    pub fn percentiles(&self) -> Vec<Percentile> {
        self.histogram.percentiles_over_all(self.overflow())
    }
}

/// A thread of a run as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct ThreadRow {
    /// Index.
    pub thread: u32,
    /// Kernel thread id.
    pub tid: Option<i32>,
    /// CPU.
    pub cpu: Option<u32>,
    /// Policy.
    pub policy: String,
    /// Priority.
    pub priority: i32,
    /// Interval, ns.
    pub interval_ns: u64,
    /// Samples and extremes.
    pub figures: crate::SampleFigures,
    /// Missed periods.
    pub missed: u64,
    /// Raw samples the writer could not keep (`--raw`).
    pub raw_dropped: u64,
    /// Histogram (empty before the first checkpoint).
    pub histogram: Histogram,
}

impl ThreadRow {
    /// A thread with nothing known but its index (an importer fills in what its source says).
    pub fn new(thread: u32) -> ThreadRow {
        ThreadRow {
            thread,
            tid: None,
            cpu: None,
            policy: "unknown".into(),
            priority: 0,
            interval_ns: 0,
            figures: crate::SampleFigures::default(),
            missed: 0,
            raw_dropped: 0,
            histogram: Histogram::new(),
        }
    }

    /// How it runs, as a new run declares it.
    pub fn info(&self) -> crate::ThreadInfo {
        crate::ThreadInfo {
            thread: self.thread,
            cpu: self.cpu,
            policy: self.policy.clone(),
            priority: self.priority,
            interval_ns: self.interval_ns,
        }
    }

    /// Its statistics as a checkpoint writes them.
    pub fn stats(&self) -> crate::ThreadStats<'_> {
        crate::ThreadStats {
            thread: self.thread,
            tid: self.tid.unwrap_or(0),
            figures: self.figures,
            missed: self.missed,
            raw_dropped: self.raw_dropped,
            histogram: &self.histogram,
        }
    }
}

/// The histogram limit of an imported run (`source.histogram_size_us` of its config, µs): the
/// samples beyond it are the overflows. `None` for a config without it or not JSON.
pub(crate) fn histogram_limit(config: &str) -> Option<Nanos> {
    let v: serde_json::Value = serde_json::from_str(config).ok()?;
    let us = v.pointer("/source/histogram_size_us")?.as_u64()?;
    Some(Nanos(us.saturating_mul(1000)))
}

/// One stored series point.
pub type SeriesRow = crate::SeriesPoint;

/// Everything about one run.
#[derive(Debug, Clone)]
pub struct RunDetail {
    /// The summary.
    pub summary: RunSummary,
    /// rtscope version that wrote it.
    pub tool_version: String,
    /// The command line (JSON array).
    pub command_line_json: String,
    /// The configuration (JSON object).
    pub config_json: String,
    /// Environment facts.
    pub environment: Vec<(String, String)>,
    /// Threads.
    pub threads: Vec<ThreadRow>,
    /// Number of series points.
    pub series_points: u64,
    /// Number of events.
    pub events: u64,
    /// Number of raw samples stored (`--raw`).
    pub raw_samples: u64,
    /// Their encoded size, bytes.
    pub raw_bytes: u64,
}

impl RunDetail {
    /// How this run's samples were counted.
    pub fn sample_rule(&self) -> crate::SampleRule {
        crate::SampleRule::of(self.summary.kind, &self.environment)
    }

    /// The samples of thread `t` its histogram does not hold (an import's overflows).
    pub fn overflow(&self, t: &ThreadRow) -> Overflow {
        Overflow::of(
            &t.histogram,
            t.figures.samples,
            self.summary.histogram_limit,
        )
    }

    /// Thread `t`'s percentiles ranked over all its samples (see [`RunSummary::percentiles`]).
    pub fn percentiles(&self, t: &ThreadRow) -> Vec<Percentile> {
        t.histogram.percentiles_over_all(self.overflow(t))
    }

    /// The samples of the whole run its merged histogram does not hold.
    pub fn overflow_all(&self) -> Overflow {
        self.summary.overflow()
    }

    /// Samples counted but not in any histogram, over all threads.
    pub fn overflows(&self) -> u64 {
        self.threads.iter().map(|t| self.overflow(t).count).sum()
    }
}

pub(crate) fn u(v: Option<i64>) -> Option<u64> {
    v.map(|x| x.max(0) as u64)
}

fn now_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64)
}

fn process_alive(pid: i64) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

pub(crate) fn effective_status(
    status: &str,
    pid: i64,
    checkpoint: Option<i64>,
    started: i64,
) -> RunStatus {
    let status = RunStatus::parse(status);
    if status != RunStatus::Running {
        return status;
    }
    let last = checkpoint.unwrap_or(started);
    if !process_alive(pid) || now_ns() - last > STALE_NS {
        RunStatus::Incomplete
    } else {
        status
    }
}

pub(crate) fn thread_row(r: &Row) -> rusqlite::Result<ThreadRow> {
    let blob: Option<Vec<u8>> = r.get(13)?;
    Ok(ThreadRow {
        thread: r.get(0)?,
        tid: r.get(1)?,
        cpu: r.get(2)?,
        policy: r.get(3)?,
        priority: r.get(4)?,
        interval_ns: r.get::<_, i64>(5)?.max(0) as u64,
        figures: crate::SampleFigures {
            samples: r.get::<_, i64>(6)?.max(0) as u64,
            min_ns: u(r.get(7)?),
            mean_ns: r.get(8)?,
            max_ns: u(r.get(9)?),
            max_cycle: u(r.get(10)?),
            max_offset_ns: u(r.get(11)?),
        },
        missed: r.get::<_, i64>(12)?.max(0) as u64,
        raw_dropped: r.get::<_, i64>(14)?.max(0) as u64,
        histogram: blob.as_deref().and_then(codec::decode).unwrap_or_default(),
    })
}

impl Store {
    /// All runs, newest first.
    pub fn list_runs(&self) -> Result<Vec<RunSummary>> {
        let ids: Vec<i64> = {
            let mut q = self
                .sql()
                .prepare("SELECT id FROM runs ORDER BY started_unix_ns DESC, id DESC")
                .map_err(self.err())?;
            let rows = q.query_map([], |r| r.get(0)).map_err(self.err())?;
            rows.collect::<rusqlite::Result<_>>().map_err(self.err())?
        };
        self.summaries(&ids)
    }

    /// The newest run's id.
    pub fn last_run(&self) -> Result<Option<RunId>> {
        use rusqlite::OptionalExtension;
        self.sql()
            .query_row(
                "SELECT id FROM runs ORDER BY started_unix_ns DESC, id DESC LIMIT 1",
                [],
                |r| r.get(0),
            )
            .optional()
            .map_err(self.err())
    }

    /// One run's summary.
    pub fn summary(&self, id: RunId) -> Result<RunSummary> {
        self.require(id)?;
        let threads = self.threads(id)?;
        let mut histogram = Histogram::new();
        for t in &threads {
            histogram.merge(&t.histogram);
        }
        let tags = self.pairs(
            "SELECT key, value FROM tags WHERE run_id=?1 ORDER BY key",
            id,
        )?;
        // The config is parsed here, not with SQLite's JSON functions: the bundled SQLite is
        // built without them (.cargo/config.toml).
        let q = "SELECT kind, label, status, started, ended, progress_ns, exit_code, pid, checkpoint_unix_ns, started_unix_ns, config, uuid FROM runs WHERE id=?1";
        self.sql()
            .query_row(q, params![id], |r| {
                let stored: String = r.get(2)?;
                let status = effective_status(&stored, r.get(7)?, r.get(8)?, r.get(9)?);
                Ok(RunSummary {
                    id,
                    uuid: r.get(11)?,
                    kind: RunKind::parse(&r.get::<_, String>(0)?),
                    label: r.get(1)?,
                    status,
                    started: r.get(3)?,
                    ended: r.get(4)?,
                    progress_ns: r.get::<_, i64>(5)?.max(0) as u64,
                    exit_code: r.get(6)?,
                    tags: tags.clone(),
                    threads: threads.len() as u32,
                    samples: threads.iter().map(|t| t.figures.samples).sum(),
                    max_ns: threads.iter().filter_map(|t| t.figures.max_ns).max(),
                    missed: threads.iter().map(|t| t.missed).sum(),
                    histogram: histogram.clone(),
                    histogram_limit: histogram_limit(&r.get::<_, String>(10)?),
                })
            })
            .map_err(self.err())
    }

    /// Everything about one run.
    pub fn run(&self, id: RunId) -> Result<RunDetail> {
        let summary = self.summary(id)?;
        let (tool_version, command_line_json, config_json) = self
            .sql()
            .query_row(
                "SELECT tool_version, command_line, config FROM runs WHERE id=?1",
                params![id],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .map_err(self.err())?;
        let count = |sql: &str| -> Result<u64> {
            self.sql()
                .query_row(sql, params![id], |r| r.get::<_, i64>(0))
                .map(|n| n as u64)
                .map_err(self.err())
        };
        let (raw_samples, raw_bytes) = self.raw_sample_size(id)?;
        Ok(RunDetail {
            raw_samples,
            raw_bytes,
            tool_version,
            command_line_json,
            config_json,
            environment: self.pairs(
                "SELECT key, value FROM environment WHERE run_id=?1 ORDER BY key",
                id,
            )?,
            threads: self.threads(id)?,
            series_points: count("SELECT count(*) FROM series WHERE run_id=?1")?,
            events: count("SELECT count(*) FROM events WHERE run_id=?1")?,
            summary,
        })
    }

    /// The threads of a run.
    pub fn threads(&self, id: RunId) -> Result<Vec<ThreadRow>> {
        let mut q = self
            .sql()
            .prepare("SELECT thread, tid, cpu, policy, priority, interval_ns, samples, min_ns, mean_ns, max_ns, max_cycle, max_offset_ns, missed, histogram, raw_dropped FROM threads WHERE run_id=?1 ORDER BY thread")
            .map_err(self.err())?;
        let rows = q.query_map(params![id], thread_row).map_err(self.err())?;
        rows.collect::<rusqlite::Result<_>>().map_err(self.err())
    }

    /// The time series of a run, by thread and time.
    pub fn series(&self, id: RunId) -> Result<Vec<SeriesRow>> {
        let mut q = self
            .sql()
            .prepare("SELECT thread, offset_ns, length_ns, samples, min_ns, max_ns, mean_ns, p99_ns, missed FROM series WHERE run_id=?1 ORDER BY thread, offset_ns")
            .map_err(self.err())?;
        let rows = q
            .query_map(params![id], |r| {
                Ok(SeriesRow {
                    thread: r.get(0)?,
                    offset_ns: r.get::<_, i64>(1)?.max(0) as u64,
                    length_ns: r.get::<_, i64>(2)?.max(0) as u64,
                    samples: r.get::<_, i64>(3)?.max(0) as u64,
                    min_ns: u(r.get(4)?),
                    max_ns: u(r.get(5)?),
                    mean_ns: r.get(6)?,
                    p99_ns: u(r.get(7)?),
                    missed: r.get::<_, i64>(8)?.max(0) as u64,
                })
            })
            .map_err(self.err())?;
        rows.collect::<rusqlite::Result<_>>().map_err(self.err())
    }

    /// The raw samples of one thread of a run (`--raw`), by cycle, as `(cycle, latency_ns,
    /// offset_ns)`. A chunk that does not decode is an error naming the run and thread.
    pub fn raw_samples(&self, id: RunId, thread: u32) -> Result<Vec<codec::RawSample>> {
        let mut q = self
            .sql()
            .prepare("SELECT data FROM samples WHERE run_id=?1 AND thread=?2 ORDER BY first_cycle")
            .map_err(self.err())?;
        let rows = q
            .query_map(params![id, thread], |r| r.get::<_, Vec<u8>>(0))
            .map_err(self.err())?;
        let mut out = Vec::new();
        for blob in rows {
            let blob = blob.map_err(self.err())?;
            let chunk =
                codec::decode_samples(&blob).ok_or_else(|| crate::StoreError::NotADatabase {
                    path: self.path.clone(),
                    why: format!("a raw-sample chunk of run {id} thread {thread} is corrupt"),
                })?;
            out.extend(chunk);
        }
        Ok(out)
    }

    /// Calls `f` with each raw-sample chunk of one thread of a run, in cycle order, one chunk
    /// (about a second of samples) in memory at a time: for exports of any size.
    pub fn for_each_raw_chunk(
        &self,
        id: RunId,
        thread: u32,
        f: &mut dyn FnMut(Vec<codec::RawSample>) -> std::io::Result<()>,
    ) -> Result<()> {
        let mut q = self
            .sql()
            .prepare("SELECT data FROM samples WHERE run_id=?1 AND thread=?2 ORDER BY first_cycle")
            .map_err(self.err())?;
        let mut rows = q.query(params![id, thread]).map_err(self.err())?;
        while let Some(row) = rows.next().map_err(self.err())? {
            let blob: Vec<u8> = row.get(0).map_err(self.err())?;
            let chunk =
                codec::decode_samples(&blob).ok_or_else(|| crate::StoreError::NotADatabase {
                    path: self.path.clone(),
                    why: format!("a raw-sample chunk of run {id} thread {thread} is corrupt"),
                })?;
            f(chunk).map_err(|e| crate::StoreError::NotADatabase {
                path: self.path.clone(),
                why: format!("writing the raw samples of run {id}: {e}"),
            })?;
        }
        Ok(())
    }

    /// The number of raw samples stored for a run, and their encoded size in bytes.
    pub fn raw_sample_size(&self, id: RunId) -> Result<(u64, u64)> {
        self.sql()
            .query_row("SELECT coalesce(sum(count), 0), coalesce(sum(length(data)), 0) FROM samples WHERE run_id=?1", params![id], |r| Ok((r.get::<_, i64>(0)? as u64, r.get::<_, i64>(1)? as u64)))
            .map_err(self.err())
    }

    /// The events of a run, by thread and cycle.
    pub fn events(&self, id: RunId) -> Result<Vec<crate::EventRow>> {
        let mut q = self.sql().prepare("SELECT thread, cycle, latency_ns, offset_ns, unix_ns FROM events WHERE run_id=?1 ORDER BY thread, cycle").map_err(self.err())?;
        let rows = q
            .query_map(params![id], |r| {
                Ok(crate::EventRow {
                    thread: r.get(0)?,
                    cycle: r.get::<_, i64>(1)?.max(0) as u64,
                    latency_ns: r.get::<_, i64>(2)?.max(0) as u64,
                    offset_ns: r.get::<_, i64>(3)?.max(0) as u64,
                    unix_ns: r.get(4)?,
                })
            })
            .map_err(self.err())?;
        rows.collect::<rusqlite::Result<_>>().map_err(self.err())
    }

    fn pairs(&self, sql: &str, id: RunId) -> Result<Vec<(String, String)>> {
        let mut q = self.sql().prepare(sql).map_err(self.err())?;
        let rows = q
            .query_map(params![id], |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(self.err())?;
        rows.collect::<rusqlite::Result<_>>().map_err(self.err())
    }
}
