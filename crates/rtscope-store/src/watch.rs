//! `rtscope watch` series: rolling windows of a measurement that runs for months, their
//! downsampling (windows → hours → days) and retention (by age and by a disk budget), so a
//! database on a product never grows without bound. docs/watch.md and docs/store-schema.md.

use crate::{codec, Result, Store};
use rtscope_core::{Histogram, Nanos};
use rusqlite::{params, OptionalExtension};

/// The largest cause of a window's worst wake-up, as [`Store::explain_window`] stores it.
#[derive(Debug, Clone, Copy)]
pub struct Culprit<'a> {
    /// Its name (a thread named by its command: the threads of one command are one cause).
    pub name: &'a str,
    /// The time charged to it (ns).
    pub ns: u64,
    /// The PIDs of its threads (empty for a cause that is no thread).
    pub pids: &'a [i32],
    /// The wake-up's cause as the one rule states it (a culprit only with half of the
    /// wake-up, else the group or the spread, every share printed).
    pub line: Option<&'a str>,
}

/// A watch series' id.
pub type SeriesId = i64;

/// The resolution a window is kept at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    /// As measured (`--window`, default 1 min).
    Window = 0,
    /// Merged into hours.
    Hour = 1,
    /// Merged into days.
    Day = 2,
}

impl Level {
    /// The span of a merged window of this level (none for measured windows).
    pub fn span(self) -> Option<Nanos> {
        match self {
            Level::Window => None,
            Level::Hour => Some(Nanos::from_secs(3600)),
            Level::Day => Some(Nanos::from_secs(86_400)),
        }
    }

    fn from_i64(v: i64) -> Level {
        match v {
            0 => Level::Window,
            1 => Level::Hour,
            _ => Level::Day,
        }
    }

    /// Its name in tables and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Level::Window => "window",
            Level::Hour => "hour",
            Level::Day => "day",
        }
    }
}

/// One window of one CPU (or of all, `cpu` = None).
#[derive(Debug, Clone, PartialEq)]
pub struct WatchWindow {
    /// Its resolution.
    pub level: Level,
    /// Unix ns.
    pub start_ns: i64,
    /// Unix ns.
    pub end_ns: i64,
    /// The measured CPU; `None` for all of them.
    pub cpu: Option<u32>,
    /// The wake-ups' latencies.
    pub histogram: Histogram,
    /// Missed deadlines.
    pub missed: u64,
    /// Samples at or above the spike threshold.
    pub spikes: u64,
    /// The thresholds it breached (`max 212.0us > 200us`), if any.
    pub alert: Option<String>,
    /// The worst wake-up's explanation (JSON), if any.
    pub explain: Option<String>,
}

/// A series as `rtscope runs` lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct SeriesSummary {
    /// Id.
    pub id: SeriesId,
    /// Name.
    pub name: String,
    /// Host.
    pub host: Option<String>,
    /// Unix ns of its first start.
    pub created_ns: i64,
    /// Times resumed.
    pub resumed: i64,
    /// Windows kept, per level.
    pub windows: [u64; 3],
    /// The first and last instants covered, Unix ns.
    pub span_ns: Option<(i64, i64)>,
    /// The largest latency of any window kept (bucket bound).
    pub max_ns: Option<u64>,
    /// Windows that raised an alert.
    pub alerts: u64,
}

/// What a rollup or retention pass did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Housekept {
    /// Windows merged into coarser ones.
    pub merged: u64,
    /// Windows deleted for their age.
    pub expired: u64,
    /// Windows deleted to stay within the disk budget.
    pub over_budget: u64,
}

fn opt_i64(v: Option<Nanos>) -> Option<i64> {
    v.map(|n| n.0 as i64)
}

impl Store {
    /// The series named `name`, created with `config` if new; else resumed (its config
    /// replaced, `resumed` counted). Returns its id and whether it was resumed.
    pub fn open_series(
        &self,
        name: &str,
        host: Option<&str>,
        now_ns: i64,
        config: &str,
    ) -> Result<(SeriesId, bool)> {
        let c = &self.conn;
        let found: Option<SeriesId> = c
            .query_row("SELECT id FROM watch_series WHERE name = ?1", [name], |r| {
                r.get(0)
            })
            .optional()
            .map_err(self.err())?;
        if let Some(id) = found {
            c.execute(
                "UPDATE watch_series SET resumed = resumed + 1, config = ?2 WHERE id = ?1",
                params![id, config],
            )
            .map_err(self.err())?;
            return Ok((id, true));
        }
        c.execute(
            &format!(
                "INSERT INTO watch_series (name, uuid, host, created_ns, config) VALUES (?1, {}, ?2, ?3, ?4)",
                crate::schema::UUID_SQL
            ),
            params![name, host, now_ns, config],
        )
        .map_err(self.err())?;
        Ok((c.last_insert_rowid(), false))
    }

    /// Writes windows in one transaction (a power loss keeps all or none of them). A window
    /// with the key of one already kept (same level, CPU and start) is merged into it.
    pub fn add_windows(&mut self, series: SeriesId, windows: &[WatchWindow]) -> Result<()> {
        let path = self.path.clone();
        let err = move |source| crate::StoreError::Sqlite {
            path: path.clone(),
            source,
        };
        let tx = self.conn.transaction().map_err(&err)?;
        for w in windows {
            put_window(&tx, series, w).map_err(&err)?;
        }
        tx.commit().map_err(&err)
    }

    /// The windows of `series` at `level` that start in `[from_ns, to_ns)`, oldest first.
    pub fn windows(
        &self,
        series: SeriesId,
        level: Level,
        from_ns: i64,
        to_ns: i64,
    ) -> Result<Vec<WatchWindow>> {
        let mut st = self
            .sql()
            .prepare(
                "SELECT level, start_ns, end_ns, cpu, missed, spikes, histogram, alert, explain
                 FROM watch_windows WHERE series_id = ?1 AND level = ?2 AND start_ns >= ?3 AND start_ns < ?4
                 ORDER BY start_ns, cpu",
            )
            .map_err(self.err())?;
        let rows = st
            .query_map(params![series, level as i64, from_ns, to_ns], read_window)
            .map_err(self.err())?;
        rows.collect::<std::result::Result<_, _>>()
            .map_err(self.err())
    }

    /// The series of this database.
    pub fn watch_series(&self) -> Result<Vec<SeriesSummary>> {
        let mut st = self
            .sql()
            .prepare(
                "SELECT s.id, s.name, s.host, s.created_ns, s.resumed,
                    (SELECT count(*) FROM watch_windows w WHERE w.series_id = s.id AND level = 0),
                    (SELECT count(*) FROM watch_windows w WHERE w.series_id = s.id AND level = 1),
                    (SELECT count(*) FROM watch_windows w WHERE w.series_id = s.id AND level = 2),
                    (SELECT min(start_ns) FROM watch_windows w WHERE w.series_id = s.id),
                    (SELECT max(end_ns) FROM watch_windows w WHERE w.series_id = s.id),
                    (SELECT max(max_ns) FROM watch_windows w WHERE w.series_id = s.id),
                    (SELECT count(*) FROM watch_windows w WHERE w.series_id = s.id AND alert IS NOT NULL AND level = 0)
                 FROM watch_series s ORDER BY s.id",
            )
            .map_err(self.err())?;
        let rows = st
            .query_map([], |r| {
                let (a, b): (Option<i64>, Option<i64>) = (r.get(8)?, r.get(9)?);
                Ok(SeriesSummary {
                    id: r.get(0)?,
                    name: r.get(1)?,
                    host: r.get(2)?,
                    created_ns: r.get(3)?,
                    resumed: r.get(4)?,
                    windows: [
                        r.get::<_, i64>(5)? as u64,
                        r.get::<_, i64>(6)? as u64,
                        r.get::<_, i64>(7)? as u64,
                    ],
                    span_ns: a.zip(b),
                    max_ns: r.get::<_, Option<i64>>(10)?.map(|v| v as u64),
                    alerts: r.get::<_, i64>(11)? as u64,
                })
            })
            .map_err(self.err())?;
        rows.collect::<std::result::Result<_, _>>()
            .map_err(self.err())
    }

    /// Merges the windows of `from` that end before `before_ns` into windows of `to` (aligned
    /// to its span; merged into one already kept), in one transaction. Returns how many were
    /// merged.
    pub fn roll_up(
        &mut self,
        series: SeriesId,
        from: Level,
        to: Level,
        before_ns: i64,
    ) -> Result<u64> {
        let span = to.span().expect("a rollup goes to hours or days").0 as i64;
        let before_ns = before_ns.div_euclid(span) * span;
        let old = self.windows(series, from, i64::MIN, before_ns)?;
        let old: Vec<WatchWindow> = old.into_iter().filter(|w| w.end_ns <= before_ns).collect();
        if old.is_empty() {
            return Ok(0);
        }
        let mut merged: std::collections::BTreeMap<(i64, Option<u32>), WatchWindow> =
            Default::default();
        for w in &old {
            let start = w.start_ns.div_euclid(span) * span;
            let acc = merged.entry((start, w.cpu)).or_insert_with(|| WatchWindow {
                level: to,
                start_ns: start,
                end_ns: w.end_ns,
                cpu: w.cpu,
                histogram: Histogram::new(),
                missed: 0,
                spikes: 0,
                alert: None,
                explain: None,
            });
            merge_into(acc, w);
        }
        let path = self.path.clone();
        let err = move |source| crate::StoreError::Sqlite {
            path: path.clone(),
            source,
        };
        let tx = self.conn.transaction().map_err(&err)?;
        tx.execute(
            "DELETE FROM watch_windows WHERE series_id = ?1 AND level = ?2 AND start_ns < ?3 AND end_ns <= ?3",
            params![series, from as i64, before_ns],
        )
        .map_err(&err)?;
        for w in merged.values() {
            put_window(&tx, series, w).map_err(&err)?;
        }
        tx.commit().map_err(&err)?;
        Ok(old.len() as u64)
    }

    /// Adds the explanation of a measured window's worst wake-up (`latency_ns` on `cpu`) to its
    /// row, and to the all-CPUs row when that wake-up is its maximum: `explained` (JSON), the
    /// largest cause (`culprit`), its time (`culprit_ns`) and its threads' PIDs
    /// (`culprit_pids`, absent for a cause that is no thread) and the cause as the one rule
    /// states it (`cause`, [`Culprit::line`]) are set in the row's `explain` object, its
    /// `worst` kept.
    /// (The bundled SQLite has no JSON functions: the object is edited here.)
    pub fn explain_window(
        &self,
        series: SeriesId,
        start_ns: i64,
        cpu: u32,
        latency_ns: u64,
        explained: &str,
        culprit: Option<Culprit<'_>>,
    ) -> Result<()> {
        let attribution: serde_json::Value =
            serde_json::from_str(explained).unwrap_or(serde_json::Value::Null);
        self.edit_explain(series, start_ns, cpu, latency_ns, |v| {
            v["explained"] = attribution.clone();
            v["culprit"] = culprit.map(|c| c.name).into();
            v["culprit_ns"] = culprit.map(|c| c.ns).into();
            v["cause"] = culprit.and_then(|c| c.line).into();
            match culprit.filter(|c| !c.pids.is_empty()) {
                Some(c) => v["culprit_pids"] = c.pids.into(),
                None => {
                    v.as_object_mut().map(|o| o.remove("culprit_pids"));
                }
            }
            v.as_object_mut().map(|o| o.remove("unexplained"));
        })
    }

    /// Says why a measured window's worst wake-up (its maximum `latency_ns` on `cpu`) has no
    /// explanation: `unexplained` (a reason's JSON name, rtscope-explain's `Unexplained`) is
    /// set in its row's `explain` object, and in the all-CPUs row's when that wake-up is its
    /// maximum; the rest of the object is kept. Rows stored before the reason was recorded
    /// have none: read back, their reason is unknown.
    pub fn unexplained_window(
        &self,
        series: SeriesId,
        start_ns: i64,
        cpu: u32,
        latency_ns: u64,
        why: &str,
    ) -> Result<()> {
        self.edit_explain(series, start_ns, cpu, latency_ns, |v| {
            v["unexplained"] = why.into();
        })
    }

    /// Edits the `explain` object of a measured window's row of `cpu` and of the all-CPUs row
    /// when `latency_ns` is its maximum (an object is made for a row without one).
    fn edit_explain(
        &self,
        series: SeriesId,
        start_ns: i64,
        cpu: u32,
        latency_ns: u64,
        edit: impl Fn(&mut serde_json::Value),
    ) -> Result<()> {
        let mut st = self
            .conn
            .prepare(
                "SELECT id, explain FROM watch_windows WHERE series_id = ?1 AND level = 0 AND start_ns = ?2
                 AND (cpu = ?3 OR (cpu = -1 AND max_ns = ?4))",
            )
            .map_err(self.err())?;
        let rows: Vec<(i64, Option<String>)> = st
            .query_map(
                params![series, start_ns, i64::from(cpu), latency_ns as i64],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .map_err(self.err())?
            .collect::<std::result::Result<_, _>>()
            .map_err(self.err())?;
        for (id, old) in rows {
            let mut v: serde_json::Value = old
                .and_then(|o| serde_json::from_str(&o).ok())
                .filter(serde_json::Value::is_object)
                .unwrap_or_else(|| serde_json::json!({}));
            edit(&mut v);
            self.conn
                .execute(
                    "UPDATE watch_windows SET explain = ?2 WHERE id = ?1",
                    params![id, v.to_string()],
                )
                .map_err(self.err())?;
        }
        Ok(())
    }

    /// Deletes the windows of every series that ended by `before_ns` (wholly older).
    pub fn expire_windows(&self, before_ns: i64) -> Result<u64> {
        let n = self
            .conn
            .execute("DELETE FROM watch_windows WHERE end_ns <= ?1", [before_ns])
            .map_err(self.err())?;
        Ok(n as u64)
    }

    /// Bytes of the database file in use (its free pages are reused before it grows).
    pub fn used_bytes(&self) -> Result<u64> {
        let q = |p: &str| -> Result<i64> {
            self.conn
                .query_row(&format!("PRAGMA {p}"), [], |r| r.get(0))
                .map_err(self.err())
        };
        let used = q("page_count")? - q("freelist_count")?;
        Ok((used.max(0) * q("page_size")?) as u64)
    }

    /// Deletes the oldest windows (of any series and level) until the database uses at most
    /// `budget` bytes, or no window is left. Returns how many were deleted.
    pub fn trim_to_budget(&self, budget: u64) -> Result<u64> {
        let mut deleted = 0;
        while self.used_bytes()? > budget {
            let n = self
                .conn
                .execute(
                    "DELETE FROM watch_windows WHERE id IN (SELECT id FROM watch_windows ORDER BY start_ns, level LIMIT 64)",
                    [],
                )
                .map_err(self.err())?;
            if n == 0 {
                break;
            }
            deleted += n as u64;
        }
        Ok(deleted)
    }
}

/// Adds `w` to `acc`: histograms merged, counts summed, the latest end, the alerts counted
/// and the worst window's explanation kept.
pub fn merge_into(acc: &mut WatchWindow, w: &WatchWindow) {
    let worst_before = acc.histogram.max();
    acc.histogram.merge(&w.histogram);
    acc.missed += w.missed;
    acc.spikes += w.spikes;
    acc.end_ns = acc.end_ns.max(w.end_ns);
    if w.explain.is_some() && (acc.explain.is_none() || w.histogram.max() > worst_before) {
        acc.explain = w.explain.clone();
    }
    acc.alert = match (acc.alert.take(), &w.alert) {
        (Some(a), Some(b)) if a.len() < 512 => Some(format!("{a}; {b}")),
        (a, b) => a.or_else(|| b.clone()),
    };
}

fn put_window(
    tx: &rusqlite::Transaction,
    series: SeriesId,
    w: &WatchWindow,
) -> rusqlite::Result<()> {
    let cpu = w.cpu.map_or(-1, i64::from);
    let old: Option<(i64, WatchWindow)> = tx
        .query_row(
            "SELECT id, level, start_ns, end_ns, cpu, missed, spikes, histogram, alert, explain
             FROM watch_windows WHERE series_id = ?1 AND level = ?2 AND cpu = ?3 AND start_ns = ?4",
            params![series, w.level as i64, cpu, w.start_ns],
            |r| Ok((r.get(0)?, read_window_at(r, 1)?)),
        )
        .optional()?;
    let w = match old {
        Some((id, mut acc)) => {
            tx.execute("DELETE FROM watch_windows WHERE id = ?1", [id])?;
            merge_into(&mut acc, w);
            acc
        }
        None => w.clone(),
    };
    let h = &w.histogram;
    tx.execute(
        "INSERT INTO watch_windows (series_id, level, start_ns, end_ns, cpu, samples, missed, min_ns, max_ns, p99_ns, p9999_ns, spikes, histogram, alert, explain)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
        params![
            series,
            w.level as i64,
            w.start_ns,
            w.end_ns,
            cpu,
            h.count() as i64,
            w.missed as i64,
            opt_i64(h.min()),
            opt_i64(h.max()),
            opt_i64(h.value_at_quantile(0.99)),
            opt_i64(h.value_at_quantile(0.9999)),
            w.spikes as i64,
            codec::encode(h),
            w.alert,
            w.explain,
        ],
    )?;
    Ok(())
}

fn read_window(r: &rusqlite::Row) -> rusqlite::Result<WatchWindow> {
    read_window_at(r, 0)
}

/// Reads `level, start_ns, end_ns, cpu, missed, spikes, histogram, alert, explain` from
/// column `at` on.
fn read_window_at(r: &rusqlite::Row, at: usize) -> rusqlite::Result<WatchWindow> {
    let blob: Vec<u8> = r.get(at + 6)?;
    let histogram = codec::decode(&blob).unwrap_or_default();
    let cpu: i64 = r.get(at + 3)?;
    Ok(WatchWindow {
        level: Level::from_i64(r.get(at)?),
        start_ns: r.get(at + 1)?,
        end_ns: r.get(at + 2)?,
        cpu: u32::try_from(cpu).ok(),
        missed: r.get::<_, i64>(at + 4)? as u64,
        spikes: r.get::<_, i64>(at + 5)? as u64,
        histogram,
        alert: r.get(at + 7)?,
        explain: r.get(at + 8)?,
    })
}
