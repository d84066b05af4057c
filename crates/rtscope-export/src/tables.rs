//! The exported tables, built from what the store holds about one run. Columns and units:
//! docs/export.md.

use super::table::{int, Table};
use rtscope_core::{Histogram, PERCENTILES};
use rtscope_store::codec::RawSample;
use rtscope_store::{EventRow, LoadRow, MonitorSeries, RunDetail, RunId, SeriesRow, TopThread};
use std::collections::BTreeMap;

/// The `thread` value of the histogram rows that hold all threads merged.
pub const ALL_THREADS: i64 = -1;

/// Everything exported about one run, as read from the store.
#[derive(Debug, Clone)]
pub struct RunData {
    /// The run, its threads (statistics and histograms) and environment.
    pub detail: RunDetail,
    /// The time series.
    pub series: Vec<SeriesRow>,
    /// The events (samples above `--event-above`).
    pub events: Vec<EventRow>,
    /// The raw samples (`--raw`) as `(thread, cycle, latency_ns, offset_ns)`.
    pub samples: Vec<(u32, RawSample)>,
    /// The system-monitor series.
    pub monitor: Vec<MonitorSeries>,
    /// The busiest threads of every monitor sample.
    pub top: Vec<TopThread>,
    /// The loads the run was measured under.
    pub loads: Vec<LoadRow>,
}

impl RunData {
    fn id(&self) -> RunId {
        self.detail.summary.id
    }

    /// `run_id` for each of `n` rows.
    fn ids(&self, n: usize) -> impl Iterator<Item = i64> {
        std::iter::repeat_n(self.id(), n)
    }
}

/// All tables, in output order. The `samples` table is empty unless the run was recorded with
/// `--raw`.
pub fn all(d: &RunData) -> Vec<Table> {
    vec![
        run(d),
        threads(d),
        histogram(d),
        series(d),
        events(d),
        samples(d),
        environment(d),
        monitor(d),
        top_threads(d),
        loads(d),
    ]
}

/// One row: the run itself.
fn run(d: &RunData) -> Table {
    let s = &d.detail.summary;
    let tags: BTreeMap<&str, &str> = s
        .tags
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let tags = serde_json::to_string(&tags).unwrap_or_else(|_| "{}".into());
    Table::new("run")
        .int("run_id", [s.id])
        .text("kind", [s.kind.to_string()])
        .opt_text("label", [s.label.clone()])
        .text("status", [s.status.to_string()])
        .text("started", [s.started.clone()])
        .opt_text("ended", [s.ended.clone()])
        .int("measured_ns", [int(s.progress_ns)])
        .opt_int("exit_code", [s.exit_code.map(i64::from)])
        .text("tags", [tags])
        .text("command_line", [d.detail.command_line_json.clone()])
        .text("config", [d.detail.config_json.clone()])
        .text("tool_version", [d.detail.tool_version.clone()])
}

/// `p99.9` → `p99_9_ns`: a column name pandas can use as an attribute.
pub fn percentile_column(label: &str) -> String {
    format!("{}_ns", label.replace('.', "_"))
}

/// One row per thread: settings, statistics and percentiles.
fn threads(d: &RunData) -> Table {
    let t = &d.detail.threads;
    let opt = |f: fn(&rtscope_store::ThreadRow) -> Option<u64>| {
        t.iter().map(move |r| f(r).map(int)).collect::<Vec<_>>()
    };
    let mut table = Table::new("threads")
        .int("run_id", d.ids(t.len()))
        .int("thread", t.iter().map(|r| i64::from(r.thread)))
        .opt_int("tid", t.iter().map(|r| r.tid.map(i64::from)))
        .opt_int("cpu", t.iter().map(|r| r.cpu.map(i64::from)))
        .text("policy", t.iter().map(|r| r.policy.clone()))
        .int("priority", t.iter().map(|r| i64::from(r.priority)))
        .int("interval_ns", t.iter().map(|r| int(r.interval_ns)))
        .int("samples", t.iter().map(|r| int(r.figures.samples)))
        .opt_int("min_ns", opt(|r| r.figures.min_ns))
        .opt_float("mean_ns", t.iter().map(|r| r.figures.mean_ns))
        .opt_int("max_ns", opt(|r| r.figures.max_ns))
        .opt_int("max_cycle", opt(|r| r.figures.max_cycle))
        .opt_int("max_offset_ns", opt(|r| r.figures.max_offset_ns));
    // Ranked over all samples; null where the rank falls among an import's histogram
    // overflows (only a lower bound is known: `overflow_floor_ns`).
    let percentiles: Vec<Vec<Option<i64>>> = t
        .iter()
        .map(|r| {
            d.detail
                .percentiles(r)
                .iter()
                .map(|p| p.value.filter(|_| !p.lower_bound).map(|n| int(n.0)))
                .collect()
        })
        .collect();
    let over: Vec<_> = t.iter().map(|r| d.detail.overflow(r)).collect();
    table = table
        .int("histogram_overflows", over.iter().map(|o| int(o.count)))
        .int(
            "overflow_floor_ns",
            over.iter()
                .map(|o| if o.count > 0 { int(o.floor.0) } else { 0 }),
        );
    for (i, (label, _)) in PERCENTILES.iter().enumerate() {
        table = table.opt_int(
            percentile_column(label),
            percentiles.iter().map(|row| row[i]),
        );
    }
    table
        .int("missed_periods", t.iter().map(|r| int(r.missed)))
        .opt_float(
            "miss_ratio",
            t.iter().map(|r| miss_ratio(r.figures.samples, r.missed)),
        )
}

/// Missed deadlines over all deadlines (wake-ups + missed), 0 … 1; `None` without any.
fn miss_ratio(samples: u64, missed: u64) -> Option<f64> {
    let deadlines = samples.saturating_add(missed);
    (deadlines > 0).then(|| missed as f64 / deadlines as f64)
}

/// The non-empty buckets of every thread's histogram, then of all threads merged
/// (`thread` = [`ALL_THREADS`]).
fn histogram(d: &RunData) -> Table {
    let mut rows: Vec<(i64, u64, u64, u64)> = Vec::new();
    let mut add = |thread: i64, h: &Histogram| {
        rows.extend(h.buckets().map(|(lo, w, n)| (thread, lo.0, w.0, n)));
    };
    for t in &d.detail.threads {
        add(i64::from(t.thread), &t.histogram);
    }
    add(ALL_THREADS, &d.detail.summary.histogram);
    Table::new("histogram")
        .int("run_id", d.ids(rows.len()))
        .int("thread", rows.iter().map(|r| r.0))
        .int("lowest_ns", rows.iter().map(|r| int(r.1)))
        .int("width_ns", rows.iter().map(|r| int(r.2)))
        .int("count", rows.iter().map(|r| int(r.3)))
}

/// The time series: per thread, one row per interval (about a second).
fn series(d: &RunData) -> Table {
    let s = &d.series;
    let opt = |f: fn(&SeriesRow) -> Option<u64>| s.iter().map(move |r| f(r).map(int));
    Table::new("series")
        .int("run_id", d.ids(s.len()))
        .int("thread", s.iter().map(|r| i64::from(r.thread)))
        .int("offset_ns", s.iter().map(|r| int(r.offset_ns)))
        .int("length_ns", s.iter().map(|r| int(r.length_ns)))
        .int("samples", s.iter().map(|r| int(r.samples)))
        .opt_int("min_ns", opt(|r| r.min_ns))
        .opt_int("max_ns", opt(|r| r.max_ns))
        .opt_float("mean_ns", s.iter().map(|r| r.mean_ns))
        .opt_int("p99_ns", opt(|r| r.p99_ns))
        .int("missed_periods", s.iter().map(|r| int(r.missed)))
}

/// The samples above the event threshold.
fn events(d: &RunData) -> Table {
    let e = &d.events;
    Table::new("events")
        .int("run_id", d.ids(e.len()))
        .int("thread", e.iter().map(|r| i64::from(r.thread)))
        .int("cycle", e.iter().map(|r| int(r.cycle)))
        .int("latency_ns", e.iter().map(|r| int(r.latency_ns)))
        .int("offset_ns", e.iter().map(|r| int(r.offset_ns)))
        .int("unix_ns", e.iter().map(|r| r.unix_ns))
}

/// Every sample of a `--raw` run: thread, cycle, latency and wake-up time from the start.
fn samples(d: &RunData) -> Table {
    let s = &d.samples;
    Table::new("samples")
        .int("run_id", d.ids(s.len()))
        .int("thread", s.iter().map(|(t, _)| i64::from(*t)))
        .int("cycle", s.iter().map(|(_, r)| int(r.0)))
        .int("latency_ns", s.iter().map(|(_, r)| int(r.1)))
        .int("offset_ns", s.iter().map(|(_, r)| int(r.2)))
}

/// One part of the `samples` table: a chunk of raw samples of one thread, streamed from the
/// store (a run's samples are never all in memory for CSV and JSON).
pub fn samples_part(run_id: RunId, thread: u32, chunk: &[RawSample]) -> Table {
    Table::new("samples")
        .int("run_id", std::iter::repeat_n(run_id, chunk.len()))
        .int("thread", chunk.iter().map(|_| i64::from(thread)))
        .int("cycle", chunk.iter().map(|r| int(r.0)))
        .int("latency_ns", chunk.iter().map(|r| int(r.1)))
        .int("offset_ns", chunk.iter().map(|r| int(r.2)))
}

/// The environment facts recorded with the run, as key/value text.
fn environment(d: &RunData) -> Table {
    let e = &d.detail.environment;
    Table::new("environment")
        .int("run_id", d.ids(e.len()))
        .text("key", e.iter().map(|(k, _)| k.clone()))
        .text("value", e.iter().map(|(_, v)| v.clone()))
}

/// The system-monitor series, one row per metric and sample (long format).
fn monitor(d: &RunData) -> Table {
    let rows: Vec<(&MonitorSeries, u64, f64)> = d
        .monitor
        .iter()
        .flat_map(|m| m.points.iter().map(move |&(o, v)| (m, o, v)))
        .collect();
    Table::new("monitor")
        .int("run_id", d.ids(rows.len()))
        .text("metric", rows.iter().map(|r| r.0.metric.clone()))
        .text("unit", rows.iter().map(|r| r.0.unit.clone()))
        .int("offset_ns", rows.iter().map(|r| int(r.1)))
        .opt_float("value", rows.iter().map(|r| Some(r.2)))
}

/// The busiest threads of every monitor sample.
fn top_threads(d: &RunData) -> Table {
    let t = &d.top;
    Table::new("top_threads")
        .int("run_id", d.ids(t.len()))
        .int("offset_ns", t.iter().map(|r| int(r.offset_ns)))
        .int("rank", t.iter().map(|r| i64::from(r.rank)))
        .int("pid", t.iter().map(|r| i64::from(r.pid)))
        .int("tid", t.iter().map(|r| i64::from(r.tid)))
        .text("comm", t.iter().map(|r| r.comm.clone()))
        .opt_float("cpu_percent", t.iter().map(|r| Some(r.cpu_percent)))
        .int("last_cpu", t.iter().map(|r| i64::from(r.last_cpu)))
        .int("kernel_thread", t.iter().map(|r| i64::from(r.kernel)))
        // Unknown (empty) for runs recorded before the store kept it (schema 7 and older).
        .opt_int("own", t.iter().map(|r| r.own.map(i64::from)))
}

/// The loads the run was measured under and what each did (metrics as a JSON array).
fn loads(d: &RunData) -> Table {
    let l = &d.loads;
    let json = |v: &dyn Fn(&LoadRow) -> String| l.iter().map(v).collect::<Vec<_>>();
    Table::new("loads")
        .int("run_id", d.ids(l.len()))
        .text("name", l.iter().map(|r| r.name.clone()))
        .text("status", l.iter().map(|r| r.status.as_str().to_string()))
        .opt_text("error", l.iter().map(|r| r.error.clone()))
        .int("ran_ns", l.iter().map(|r| int(r.ran_ns)))
        .text(
            "command_line",
            json(&|r| serde_json::to_string(&r.command_line).unwrap_or_default()),
        )
        .text(
            "metrics",
            json(&|r| serde_json::to_string(&r.metrics).unwrap_or_default()),
        )
        .text("spec", l.iter().map(|r| r.spec_json.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentile_columns_have_no_dots() {
        let names: Vec<_> = PERCENTILES
            .iter()
            .map(|(l, _)| percentile_column(l))
            .collect();
        assert_eq!(names[0], "p50_ns");
        assert_eq!(names[6], "p99_9999_ns");
        assert!(names.iter().all(|n| !n.contains('.')));
    }
}
