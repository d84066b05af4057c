//! System-monitor data of a run: numeric series, text states, top threads and which sources
//! were available. Written with the run's checkpoints; read back for reports.

use crate::{Result, RunId, Store};
use rusqlite::{params, Transaction};

/// One numeric monitor reading.
#[derive(Debug, Clone, PartialEq)]
pub struct MonitorValue {
    /// Metric name, e.g. `temp.cpu-thermal`, `irq_rate.LOC.cpu0` (see rtscope-monitor).
    pub metric: String,
    /// Its unit, e.g. `degC`, `kHz`, `1/s`, `%`, `bytes`.
    pub unit: String,
    /// Sample time from the run's start, ns.
    pub offset_ns: u64,
    /// The value, in `unit`.
    pub value: f64,
}

/// A text state (e.g. a cpufreq governor) from the sample where it first had this value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MonitorState {
    /// Metric name, e.g. `governor.cpu0`.
    pub metric: String,
    /// Sample time from the run's start, ns.
    pub offset_ns: u64,
    /// The value, e.g. `performance`.
    pub value: String,
}

/// One of the busiest threads of a sample.
#[derive(Debug, Clone, PartialEq)]
pub struct TopThread {
    /// Sample time from the run's start, ns.
    pub offset_ns: u64,
    /// 0 for the busiest thread of the sample.
    pub rank: u32,
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// Thread name, e.g. `irq/39-dwc_otg`.
    pub comm: String,
    /// CPU time in the interval before the sample, % of one CPU.
    pub cpu_percent: f64,
    /// The CPU it last ran on.
    pub last_cpu: u32,
    /// Whether it is a kernel thread.
    pub kernel: bool,
    /// Whether its process is the recording rtscope or one it started (loads); `None` when
    /// not recorded (runs of schema version 6 and older).
    pub own: Option<bool>,
}

/// Whether a monitor source could be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MonitorSource {
    /// `thermal`, `hwmon`, `cpufreq`, `interrupts`, ...
    pub source: String,
    /// Whether it yielded readings.
    pub available: bool,
    /// What was found, or why it is unavailable.
    pub why: String,
}

/// The monitor data a checkpoint adds.
#[derive(Debug, Clone, Default)]
pub struct MonitorBatch {
    /// New numeric readings.
    pub values: Vec<MonitorValue>,
    /// New text states (only the changes).
    pub states: Vec<MonitorState>,
    /// New top-thread rows.
    pub top: Vec<TopThread>,
    /// Source availability (replaces what was stored).
    pub sources: Vec<MonitorSource>,
}

impl MonitorBatch {
    /// Moves the rows of `later` after these (`sources`: the later ones win).
    pub fn append(&mut self, mut later: MonitorBatch) {
        self.values.append(&mut later.values);
        self.states.append(&mut later.states);
        self.top.append(&mut later.top);
        if !later.sources.is_empty() {
            self.sources = later.sources;
        }
    }

    /// Whether there is nothing to write.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
            && self.states.is_empty()
            && self.top.is_empty()
            && self.sources.is_empty()
    }
}

/// All values of one metric, in time order.
#[derive(Debug, Clone, PartialEq)]
pub struct MonitorSeries {
    /// Metric name.
    pub metric: String,
    /// Unit.
    pub unit: String,
    /// (offset from the run's start in ns, value).
    pub points: Vec<(u64, f64)>,
}

fn i(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

pub(crate) fn write(tx: &Transaction, run: RunId, b: &MonitorBatch) -> rusqlite::Result<()> {
    if b.is_empty() {
        return Ok(());
    }
    let mut metric = tx.prepare_cached(
        "INSERT INTO monitor_metrics (run_id, name, unit) VALUES (?1, ?2, ?3) \
         ON CONFLICT (run_id, name) DO UPDATE SET unit=excluded.unit RETURNING id",
    )?;
    let mut value = tx.prepare_cached(
        "INSERT OR REPLACE INTO monitor_values (metric_id, offset_ns, value) VALUES (?1, ?2, ?3)",
    )?;
    for v in &b.values {
        let id: i64 = metric.query_row(params![run, v.metric, v.unit], |r| r.get(0))?;
        value.execute(params![id, i(v.offset_ns), v.value])?;
    }
    let mut state = tx.prepare_cached(
        "INSERT OR REPLACE INTO monitor_states (run_id, metric, offset_ns, value) VALUES (?1, ?2, ?3, ?4)",
    )?;
    for s in &b.states {
        state.execute(params![run, s.metric, i(s.offset_ns), s.value])?;
    }
    let mut top = tx.prepare_cached(
        "INSERT OR REPLACE INTO monitor_top (run_id, offset_ns, rank, pid, tid, comm, cpu_percent, last_cpu, kernel, own) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
    )?;
    for t in &b.top {
        top.execute(params![
            run,
            i(t.offset_ns),
            t.rank,
            t.pid,
            t.tid,
            t.comm,
            t.cpu_percent,
            t.last_cpu,
            t.kernel,
            t.own
        ])?;
    }
    let mut src = tx.prepare_cached(
        "INSERT OR REPLACE INTO monitor_sources (run_id, source, available, why) VALUES (?1, ?2, ?3, ?4)",
    )?;
    for s in &b.sources {
        src.execute(params![run, s.source, s.available, s.why])?;
    }
    Ok(())
}

impl Store {
    /// Every monitor metric of a run with its values, by metric name.
    pub fn monitor_series(&self, run: RunId) -> Result<Vec<MonitorSeries>> {
        let mut st = self
            .sql()
            .prepare(
                "SELECT m.name, m.unit, v.offset_ns, v.value FROM monitor_metrics m \
                 JOIN monitor_values v ON v.metric_id = m.id WHERE m.run_id=?1 \
                 ORDER BY m.name, v.offset_ns",
            )
            .map_err(self.err())?;
        let rows = st
            .query_map(params![run], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, i64>(2)?.max(0) as u64,
                    r.get::<_, f64>(3)?,
                ))
            })
            .map_err(self.err())?;
        let mut out: Vec<MonitorSeries> = Vec::new();
        for row in rows {
            let (metric, unit, off, v) = row.map_err(self.err())?;
            match out.last_mut() {
                Some(s) if s.metric == metric => s.points.push((off, v)),
                _ => out.push(MonitorSeries {
                    metric,
                    unit,
                    points: vec![(off, v)],
                }),
            }
        }
        Ok(out)
    }

    /// The text states of a run (changes only), by metric and time.
    pub fn monitor_states(&self, run: RunId) -> Result<Vec<MonitorState>> {
        let mut st = self
            .sql()
            .prepare("SELECT metric, offset_ns, value FROM monitor_states WHERE run_id=?1 ORDER BY metric, offset_ns")
            .map_err(self.err())?;
        let rows = st
            .query_map(params![run], |r| {
                Ok(MonitorState {
                    metric: r.get(0)?,
                    offset_ns: r.get::<_, i64>(1)?.max(0) as u64,
                    value: r.get(2)?,
                })
            })
            .map_err(self.err())?;
        rows.collect::<rusqlite::Result<_>>().map_err(self.err())
    }

    /// The top threads of every sample of a run, by time and rank.
    pub fn monitor_top(&self, run: RunId) -> Result<Vec<TopThread>> {
        let mut st = self
            .sql()
            .prepare("SELECT offset_ns, rank, pid, tid, comm, cpu_percent, last_cpu, kernel, own FROM monitor_top WHERE run_id=?1 ORDER BY offset_ns, rank")
            .map_err(self.err())?;
        let rows = st
            .query_map(params![run], |r| {
                Ok(TopThread {
                    offset_ns: r.get::<_, i64>(0)?.max(0) as u64,
                    rank: r.get(1)?,
                    pid: r.get(2)?,
                    tid: r.get(3)?,
                    comm: r.get(4)?,
                    cpu_percent: r.get(5)?,
                    last_cpu: r.get(6)?,
                    kernel: r.get(7)?,
                    own: r.get(8)?,
                })
            })
            .map_err(self.err())?;
        rows.collect::<rusqlite::Result<_>>().map_err(self.err())
    }

    /// Which monitor sources a run could read.
    pub fn monitor_sources(&self, run: RunId) -> Result<Vec<MonitorSource>> {
        let mut st = self
            .sql()
            .prepare("SELECT source, available, why FROM monitor_sources WHERE run_id=?1 ORDER BY source")
            .map_err(self.err())?;
        let rows = st
            .query_map(params![run], |r| {
                Ok(MonitorSource {
                    source: r.get(0)?,
                    available: r.get(1)?,
                    why: r.get(2)?,
                })
            })
            .map_err(self.err())?;
        rows.collect::<rusqlite::Result<_>>().map_err(self.err())
    }
}
