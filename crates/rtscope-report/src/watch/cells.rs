//! The stored rows of a watch series shown at one resolution. The daemon keeps measured windows
//! for `--keep-windows`, then merges them into hours, and hours into days after `--keep-hours`,
//! so a series is days, then hours, then windows, oldest first. At resolution `hour`, windows
//! are merged into their hours and days stay days: every cell covers the time it says.

use rtscope_core::text::csv_text;
use rtscope_core::Nanos;
use rtscope_explain::unexplained::Unexplained;
use rtscope_store::watch::{merge_into, Level, WatchWindow};

/// One cell: a stored row, or the rows finer than the resolution merged into its span (its
/// `level` is then the finest merged into it), with its worst wake-up read from `explain`.
#[derive(Debug, Clone)]
pub struct Cell {
    /// The row (merged).
    pub window: WatchWindow,
    /// Its worst wake-up, when its time is known.
    pub worst: Option<Worst>,
    /// Why its worst wake-up has no explanation, as `watch --explain` stored it (`None`:
    /// explained, below the spike threshold, or not recorded).
    pub unexplained: Option<Unexplained>,
}

impl std::ops::Deref for Cell {
    type Target = WatchWindow;
    fn deref(&self) -> &WatchWindow {
        &self.window
    }
}

/// The worst wake-up of a cell and what it was charged to (`watch --explain`).
#[derive(Debug, Clone, PartialEq)]
pub struct Worst {
    /// Its latency.
    pub latency: Nanos,
    /// When it woke, Unix ns.
    pub at_ns: i64,
    /// The largest cause of the explained wake-up; `None`: not explained.
    pub culprit: Option<String>,
    /// The time charged to that cause.
    pub culprit_ns: Option<u64>,
    /// The PIDs of that cause's threads (a thread cause is its command; older rows name one
    /// thread with its PID in `culprit` and have none).
    pub culprit_pids: Vec<i64>,
    /// The cause as the one rule states it (`watch --explain` since issue 65: a culprit only
    /// with half of the wake-up, else the group or the spread, every share printed); `None`
    /// in rows stored before.
    pub cause: Option<String>,
}

impl Worst {
    /// Reads a row's `explain` object (`{"worst":{…},"culprit":…,"culprit_ns":…}`).
    pub fn parse(json: &str) -> Option<Worst> {
        let v: serde_json::Value = serde_json::from_str(json).ok()?;
        let w = v.get("worst")?;
        Some(Worst {
            latency: Nanos(w.get("latency_ns")?.as_u64()?),
            at_ns: w.get("at_unix_ns")?.as_i64()?,
            culprit: v.get("culprit").and_then(|c| c.as_str()).map(String::from),
            culprit_ns: v.get("culprit_ns").and_then(serde_json::Value::as_u64),
            culprit_pids: v
                .get("culprit_pids")
                .and_then(|p| p.as_array())
                .map(|p| p.iter().filter_map(serde_json::Value::as_i64).collect())
                .unwrap_or_default(),
            cause: v.get("cause").and_then(|c| c.as_str()).map(String::from),
        })
    }

    /// The cause for a table: the rule's line when stored, else (older rows) the largest cause
    /// with its PIDs; `None`: not explained.
    pub fn cause_text(&self) -> Option<String> {
        self.cause.clone().or_else(|| self.culprit_text())
    }

    /// The largest cause with its PIDs, for a table: `thread culprit (PID 4711)`,
    /// `thread stress-ng (2 PIDs: 811, 812)`; `None`: not explained.
    pub fn culprit_text(&self) -> Option<String> {
        let name = self.culprit.as_deref()?;
        let pids: Vec<String> = self.culprit_pids.iter().map(i64::to_string).collect();
        Some(match pids.len() {
            0 => name.to_string(),
            1 => format!("{name} (PID {})", pids[0]),
            n => format!("{name} ({n} PIDs: {})", pids.join(", ")),
        })
    }
}

impl Cell {
    /// Why the cell's worst wake-up has no largest cause, in the reasons' words (one
    /// vocabulary with the stored JSON and the terminal): `None` when it has one.
    pub fn why_not_explained(&self) -> Option<&'static str> {
        if self.worst.as_ref().is_some_and(|w| w.culprit.is_some()) {
            return None;
        }
        Some(match self.unexplained {
            Some(u) => u.describe(),
            None if self.spikes == 0 => "below --spike",
            None => "reason not recorded (no --explain, or stored before reasons were)",
        })
    }

    /// The middle of the cell, Unix s (where its points are drawn).
    pub fn mid_s(&self) -> f64 {
        (self.start_ns as f64 + self.end_ns as f64) / 2e9
    }
}

/// The start of the cell a row goes into at `level`.
fn cell_start(w: &WatchWindow, level: Level) -> i64 {
    match level.span() {
        Some(span) if w.level < level => w.start_ns.div_euclid(span.0 as i64) * span.0 as i64,
        _ => w.start_ns,
    }
}

/// The rows shown at `level`: per CPU (and for all CPUs), oldest first, the all-CPUs row of a
/// period before its CPUs'.
pub fn at(rows: &[WatchWindow], level: Level) -> Vec<Cell> {
    let cpu = |w: &WatchWindow| w.cpu.map_or(-1, i64::from);
    let mut keys: Vec<(i64, i64, usize)> = rows
        .iter()
        .enumerate()
        .map(|(i, w)| (cell_start(w, level), cpu(w), i))
        .collect();
    keys.sort();
    let mut out: Vec<Cell> = Vec::new();
    for (start, c, i) in keys {
        let w = &rows[i];
        match out.last_mut() {
            Some(acc) if acc.start_ns == start && cpu(acc) == c => {
                merge_into(&mut acc.window, w);
                acc.window.level = acc.window.level.min(w.level);
            }
            _ => {
                let mut window = w.clone();
                window.start_ns = start;
                out.push(Cell {
                    window,
                    worst: None,
                    unexplained: None,
                });
            }
        }
    }
    for c in &mut out {
        c.worst = c.explain.as_deref().and_then(Worst::parse);
        c.unexplained = c.explain.as_deref().and_then(unexplained_of);
    }
    out
}

/// The stored reason of an `explain` object (`"unexplained":"out_of_window"`); `None` without
/// one, or with a name this rtscope does not know.
fn unexplained_of(json: &str) -> Option<Unexplained> {
    let v: serde_json::Value = serde_json::from_str(json).ok()?;
    Unexplained::from_name(v.get("unexplained")?.as_str()?)
}

/// The finest level at which the rows make at most `max_columns` cells per CPU.
pub fn resolution(rows: &[WatchWindow], max_columns: usize) -> Level {
    for level in [Level::Window, Level::Hour] {
        let mut keys: Vec<(i64, i64, usize)> =
            rows.iter().map(|w| (cell_start(w, level), 0, 0)).collect();
        keys.sort();
        keys.dedup();
        if keys.len() <= max_columns {
            return level;
        }
    }
    Level::Day
}

/// The cells of all measured CPUs, oldest first: the all-CPUs rows, or with one CPU measured
/// (the daemon then writes no all-CPUs row) that CPU's.
pub fn all_cpus(cells: &[Cell]) -> impl Iterator<Item = &Cell> {
    let merged = cells.iter().any(|c| c.cpu.is_none());
    cells.iter().filter(move |c| c.cpu.is_none() || !merged)
}

/// The measured CPUs, in order.
pub fn cpus(cells: &[Cell]) -> Vec<u32> {
    let mut keys: Vec<(i64, i64, usize)> = cells
        .iter()
        .filter_map(|c| Some((i64::from(c.cpu?), 0, 0)))
        .collect();
    keys.sort();
    keys.dedup();
    keys.into_iter().map(|k| k.0 as u32).collect()
}

fn us(v: Option<Nanos>) -> String {
    v.map_or(String::new(), |n| format!("{:.3}", n.0 as f64 / 1e3))
}

/// `watch.csv`: one line per cell, latencies in µs, times in Unix ns; names quoted and
/// disarmed as spreadsheet formulas.
pub fn csv(cells: &[Cell]) -> String {
    let mut out = String::from(
        "start_unix_ns,end_unix_ns,level,cpu,wakeups,p99_us,p99.99_us,max_us,missed,spikes,worst_at_unix_ns,culprit,culprit_us,alert,not_explained\n",
    );
    for c in cells {
        let h = &c.histogram;
        let w = c.worst.as_ref();
        out.push_str(&format!(
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n",
            c.start_ns,
            c.end_ns,
            c.level.name(),
            c.cpu.map_or("all".to_string(), |n| n.to_string()),
            h.count(),
            us(h.value_at_quantile(0.99)),
            us(h.value_at_quantile(0.9999)),
            us(h.max()),
            c.missed,
            c.spikes,
            w.map_or(String::new(), |w| w.at_ns.to_string()),
            csv_text(&w.and_then(Worst::culprit_text).unwrap_or_default()),
            us(w.and_then(|w| w.culprit_ns).map(Nanos)),
            csv_text(c.alert.as_deref().unwrap_or("")),
            c.unexplained.map_or("", Unexplained::name),
        ));
    }
    out
}
