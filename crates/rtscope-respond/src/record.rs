//! Recording a respond run in the run database (`kind = respond`). Each reported row — an IPC
//! mechanism on a placement, or a GPIO interval for one edge direction — is stored as one
//! "thread" of the run, so `rtscope runs`, `report`, `export` and `compare` read it like a
//! measure run; the run's `config_json` names what each thread index is (`rows`).
//!
//! The run is written when the measurement ends (also when it was interrupted by a signal);
//! one checkpoint carries the final statistics, one series point per row and the kept events.

use rtscope_core::{Histogram, Nanos, Stats};
use rtscope_engine::Sample;
use rtscope_store::{
    Checkpoint, EventRow, NewRun, RunId, RunKind, RunStatus, SeriesPoint, Store, StoreError,
    ThreadInfo, ThreadStats,
};
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

/// One reported row.
#[derive(Debug, Clone)]
pub struct Row {
    /// `eventfd`, `timestamp-to-wakeup` …
    pub source: String,
    /// `0→1 cross`, `rising` …
    pub path: String,
    /// The receiver's / responder's CPU, when pinned.
    pub cpu: Option<usize>,
    /// Its policy name (`fifo`, `other` …).
    pub policy: &'static str,
    /// Its priority.
    pub priority: i32,
    /// Time between events or stimulus periods (ns; 0 for an external stimulus).
    pub interval_ns: u64,
    /// Statistics; `missed` holds the lost events.
    pub stats: Stats,
    /// The lossless histogram.
    pub histogram: Histogram,
    /// Kept slow events (`cycle` is the sequence number, `time` on CLOCK_MONOTONIC).
    pub events: Vec<Sample>,
    /// What the JSON shows besides the statistics (counts, placement, lines).
    pub extra: serde_json::Value,
}

/// Everything about the run besides its rows.
#[derive(Debug, Clone)]
pub struct RecordMeta {
    /// `--label`.
    pub label: Option<String>,
    /// `--tag` pairs.
    pub tags: Vec<(String, String)>,
    /// The command line.
    pub command_line: Vec<String>,
    /// The configuration as a JSON object (with `rows`: what each thread index is).
    pub config_json: String,
    /// Wall-clock start and end.
    pub started: SystemTime,
    /// Wall-clock end.
    pub ended: SystemTime,
    /// CLOCK_MONOTONIC at the start (for the events' offsets).
    pub clock_start: Nanos,
}

fn unix_ns(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

fn thread_stats(i: u32, r: &Row) -> ThreadStats<'_> {
    let has = r.stats.count > 0;
    ThreadStats {
        thread: i,
        tid: 0,
        samples: r.stats.count,
        min_ns: has.then_some(r.stats.min.0),
        mean_ns: r.stats.mean_ns(),
        max_ns: has.then_some(r.stats.max.0),
        max_cycle: has.then_some(r.stats.max_cycle),
        max_offset_ns: None,
        missed: r.stats.missed,
        raw_dropped: 0,
        histogram: &r.histogram,
    }
}

/// Writes the run; returns its id.
pub fn record(
    store: &mut Store,
    meta: &RecordMeta,
    rows: &[Row],
    status: RunStatus,
    exit_code: i32,
) -> Result<RunId, StoreError> {
    let threads = rows
        .iter()
        .enumerate()
        .map(|(i, r)| ThreadInfo {
            thread: i as u32,
            cpu: r.cpu.map(|c| c as u32),
            policy: r.policy.to_string(),
            priority: r.priority,
            interval_ns: r.interval_ns,
        })
        .collect();
    let new = NewRun {
        kind: RunKind::Respond,
        label: meta.label.clone(),
        tags: meta.tags.clone(),
        started: rtscope_session::sysinfo::rfc3339(meta.started),
        started_unix_ns: unix_ns(meta.started),
        pid: std::process::id(),
        tool_version: env!("CARGO_PKG_VERSION").into(),
        command_line_json: serde_json::to_string(&meta.command_line)
            .unwrap_or_else(|_| "[]".into()),
        config_json: meta.config_json.clone(),
        environment: rtscope_session::environment::capture(Path::new("/")),
        threads,
    };
    let id = store.begin_run(&new)?;
    let length = meta
        .ended
        .duration_since(meta.started)
        .map_or(0, |d| d.as_nanos() as u64);
    let start_unix = unix_ns(meta.started);
    let mut cp = Checkpoint {
        progress_ns: length,
        at_unix_ns: unix_ns(SystemTime::now()),
        ..Checkpoint::default()
    };
    for (i, r) in rows.iter().enumerate() {
        let t = i as u32;
        cp.threads.push(thread_stats(t, r));
        cp.series.push(SeriesPoint {
            thread: t,
            offset_ns: length,
            length_ns: length,
            samples: r.stats.count,
            min_ns: (r.stats.count > 0).then_some(r.stats.min.0),
            max_ns: (r.stats.count > 0).then_some(r.stats.max.0),
            mean_ns: r.stats.mean_ns(),
            p99_ns: r.histogram.value_at_quantile(0.99).map(|v| v.0),
            missed: r.stats.missed,
        });
        for e in &r.events {
            let offset = e.time.0.saturating_sub(meta.clock_start.0);
            cp.events.push(EventRow {
                thread: t,
                cycle: e.cycle,
                latency_ns: e.latency.0,
                offset_ns: offset,
                unix_ns: start_unix.saturating_add(i64::try_from(offset).unwrap_or(0)),
            });
        }
    }
    let ended = rtscope_session::sysinfo::rfc3339(meta.ended);
    store.finish_run(id, &cp, status, &ended, exit_code)?;
    Ok(id)
}
