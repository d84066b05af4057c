//! Single samples in the report: the events (samples above a run's `--event-above`
//! threshold) as a table and as marks on the latency-over-time plot, and the per-sample
//! scatter of latency over time of runs recorded with `--raw` (the 1:1/N:N/M:N study's
//! "flowchart"), decimated without losing a maximum.

use crate::escape::escape;
use crate::group::Grouping;
use crate::model::RunData;
use crate::plot::{Axis, Corner, Panel, Series, Shape};
use std::fmt::Write;

/// Most events listed in the report's table (the largest of all runs).
pub const MAX_EVENT_ROWS: usize = 50;
/// Most events marked on one run's latency-over-time panel (the largest).
pub const MAX_EVENT_MARKS: usize = 100;
/// Columns a raw scatter is cut into per panel; each keeps its largest and smallest sample.
pub const SCATTER_COLUMNS: usize = 300;

/// The events of a run as marks for its over-time panel: its largest [`MAX_EVENT_MARKS`] at
/// (s from the start, µs); `None` when it has none.
pub fn event_marks(run: &RunData) -> Option<Series> {
    if run.events.is_empty() {
        return None;
    }
    let mut ev: Vec<&rtscope_store::EventRow> = run.events.iter().collect();
    ev.sort_by_key(|e| std::cmp::Reverse(e.latency_ns));
    ev.truncate(MAX_EVENT_MARKS);
    let pts = ev
        .iter()
        .map(|e| (e.offset_ns as f64 / 1e9, e.latency_ns as f64 / 1e3))
        .collect();
    let name = format!("events ({})", run.events.len());
    Some(Series {
        shape: Shape::Dots,
        ..Series::new(name, crate::plot::NEUTRAL, pts)
    })
}

/// The events section of the page: how many each run recorded, and the largest
/// [`MAX_EVENT_ROWS`] of all with their run, time, CPU and latency.
pub fn section(h: &mut String, runs: &[RunData], g: &Grouping) {
    h.push_str("<h2 id=\"events\">Events above the threshold</h2>\n");
    let total: usize = runs.iter().map(|r| r.events.len()).sum();
    if total == 0 {
        h.push_str("<p class=\"muted\">No run recorded events (<code>--event-above</code>).</p>\n");
        return;
    }
    let mut all: Vec<(usize, &rtscope_store::EventRow)> = runs
        .iter()
        .enumerate()
        .flat_map(|(i, r)| r.events.iter().map(move |e| (i, e)))
        .collect();
    all.sort_by_key(|(_, e)| std::cmp::Reverse(e.latency_ns));
    let shown = all.len().min(MAX_EVENT_ROWS);
    let _ = writeln!(
        h,
        "<p>{total} samples above their run's event threshold; the {shown} largest:</p>"
    );
    h.push_str("<table><tr><th>run</th><th class=\"t\">group</th><th>time (s)</th><th class=\"t\">CPU</th><th>latency (µs)</th></tr>\n");
    for (i, e) in all.into_iter().take(MAX_EVENT_ROWS) {
        let r = &runs[i];
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td class=\"t\">{}</td><td>{:.3}</td><td class=\"t\">{}</td><td>{}</td></tr>",
            r.id(),
            escape(&g.run_name(runs, i)),
            e.offset_ns as f64 / 1e9,
            escape(&r.cpu_name(e.thread)),
            crate::us(e.latency_ns)
        );
    }
    h.push_str("</table>\n");
}

/// Columns each thread's scatter keeps when `threads` threads share a panel.
pub fn columns_per_thread(threads: usize) -> usize {
    (SCATTER_COLUMNS / threads.max(1)).max(20)
}

/// Decimates a stream of samples for the scatter: consecutive samples are cut into columns
/// that keep their smallest and largest sample (so every maximum is drawn); when the columns
/// reach `columns`, neighbours merge and the width doubles. Memory: at most 2 × `columns`
/// points, whatever the run's length.
#[derive(Debug)]
pub struct Decimator {
    target: usize,
    per: u64,
    in_current: u64,
    current: Option<[(u64, u64); 2]>,
    done: Vec<[(u64, u64); 2]>,
}

impl Decimator {
    /// A decimator keeping `columns` / 2 to `columns` columns (at least one).
    pub fn new(columns: usize) -> Decimator {
        Decimator {
            target: (columns / 2).max(1),
            per: 1,
            in_current: 0,
            current: None,
            done: Vec::new(),
        }
    }

    /// Adds the sample at `at` ns from the start with latency `lat` ns.
    pub fn push(&mut self, at: u64, lat: u64) {
        let c = self.current.get_or_insert([(at, lat), (at, lat)]);
        if lat < c[0].1 {
            c[0] = (at, lat);
        }
        if lat > c[1].1 {
            c[1] = (at, lat);
        }
        self.in_current += 1;
        if self.in_current < self.per {
            return;
        }
        self.done.extend(self.current.take());
        self.in_current = 0;
        if self.done.len() >= 2 * self.target {
            self.done = self.done.chunks(2).map(merge).collect();
            self.per *= 2;
        }
    }

    /// The kept samples in time order, as (ns from the start, latency ns).
    pub fn points(mut self) -> Vec<(u64, u64)> {
        self.done.extend(self.current.take());
        let mut out = Vec::with_capacity(2 * self.done.len());
        for [lo, hi] in self.done {
            let pair = if lo.0 <= hi.0 { [lo, hi] } else { [hi, lo] };
            out.push(pair[0]);
            if pair[1] != pair[0] {
                out.push(pair[1]);
            }
        }
        out
    }
}

fn merge(pair: &[[(u64, u64); 2]]) -> [(u64, u64); 2] {
    let lo = pair.iter().map(|c| c[0]).min_by_key(|p| p.1);
    let hi = pair.iter().map(|c| c[1]).max_by_key(|p| p.1);
    [lo.unwrap_or_default(), hi.unwrap_or_default()]
}

/// The per-sample scatter of one run (latency over time, one colour per thread), when it
/// has raw samples (decimated by [`Decimator`], so every maximum is drawn).
pub fn scatter(run: &RunData, name: &str) -> Option<Panel> {
    let mut series = Vec::new();
    for (t, pts) in run.scatter.as_ref()?.iter().enumerate() {
        if pts.is_empty() {
            continue;
        }
        let pts = pts
            .iter()
            .map(|&(at, lat)| (at as f64 / 1e9, lat as f64 / 1e3))
            .collect();
        let s = Series::new(run.cpu_name(t as u32), t, pts);
        series.push(Series {
            shape: Shape::Dots,
            ..s
        });
    }
    if series.is_empty() {
        return None;
    }
    Some(Panel {
        title: format!("Every sample — {name} (run {})", run.id()),
        x: Axis::time("time since start"),
        y: Axis::log("latency (µs)"),
        y2: None,
        legend: Corner::UpperRight,
        series,
    })
}

/// The scatter panels of a report: the first run of each group that has raw samples (the
/// study drew one run per scenario), in grid order.
pub fn scatter_panels(runs: &[RunData], g: &Grouping, order: &[usize]) -> Vec<Panel> {
    order
        .iter()
        .filter(|&&i| {
            g.groups
                .iter()
                .find(|x| x.runs.contains(&i))
                .is_none_or(|x| x.runs.iter().find(|&&j| runs[j].scatter.is_some()) == Some(&i))
        })
        .filter_map(|&i| scatter(&runs[i], &g.run_name(runs, i)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::Decimator;

    #[test]
    fn the_decimator_keeps_every_extreme_in_bounded_memory() {
        let mut d = Decimator::new(50);
        let n = 1_000_000u64;
        for i in 0..n {
            let lat = match i {
                777_777 => 9_000_000,
                12_345 => 1,
                _ => 5_000 + (i * 7919) % 3_000,
            };
            d.push(i * 1_000, lat);
        }
        let pts = d.points();
        assert!(pts.len() <= 2 * 50 && pts.len() >= 25, "{}", pts.len());
        assert!(
            pts.contains(&(777_777_000, 9_000_000)),
            "the maximum is kept"
        );
        assert!(pts.contains(&(12_345_000, 1)), "the minimum is kept");
        assert!(pts.windows(2).all(|w| w[0].0 <= w[1].0), "in time order");
    }
}
