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
    spike_table(h, runs, g);
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
        y: Axis::latency_log("latency (µs)"),
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

/// The `--spike` lines of imported cyclictest summaries, as a table in the order printed (at
/// most [`MAX_EVENT_ROWS`] per run, with how many there were).
fn spike_table(h: &mut String, runs: &[RunData], g: &Grouping) {
    let spikes: Vec<(usize, Vec<crate::model::Spike>)> = runs
        .iter()
        .enumerate()
        .map(|(i, r)| (i, r.imported_spikes()))
        .filter(|(_, s)| !s.is_empty())
        .collect();
    if spikes.is_empty() {
        return;
    }
    h.push_str("<h3 id=\"spikes\">Imported <code>--spike</code> lines</h3>\n<table><tr><th>run</th><th class=\"t\">group</th><th class=\"t\">thread</th><th>latency (µs)</th><th>time stamp (µs, cyclictest's clock)</th></tr>\n");
    for (i, list) in &spikes {
        let r = &runs[*i];
        for &(t, lat, ts) in list.iter().take(MAX_EVENT_ROWS) {
            let _ = writeln!(
                h,
                "<tr><td>{}</td><td class=\"t\">{}</td><td class=\"t\">{}</td><td>{}</td><td>{ts}</td></tr>",
                r.id(),
                escape(&g.run_name(runs, *i)),
                escape(&r.cpu_name(t)),
                crate::us(lat)
            );
        }
    }
    h.push_str("</table>\n");
}

/// The spikes of imported cyclictest summaries over time (one colour per run; time from each
/// run's first spike); `None` when no run has any.
pub fn spike_panel(runs: &[RunData], g: &Grouping) -> Option<Panel> {
    let mut series = Vec::new();
    for (i, r) in runs.iter().enumerate() {
        let spikes = r.imported_spikes();
        let Some(first) = spikes.iter().map(|s| s.2).min() else {
            continue;
        };
        let pts = spikes
            .iter()
            .map(|&(_, lat, ts)| ((ts - first) as f64 / 1e6, lat as f64 / 1e3))
            .collect();
        let name = format!("{} ({} spikes)", g.run_name(runs, i), spikes.len());
        series.push(Series {
            shape: Shape::Dots,
            ..Series::new(name, i, pts)
        });
    }
    if series.is_empty() {
        return None;
    }
    Some(Panel {
        title: "Imported --spike lines".into(),
        x: Axis::time("time since the first spike"),
        y: Axis::linear("latency (µs)"),
        y2: None,
        legend: Corner::UpperRight,
        series,
    })
}
