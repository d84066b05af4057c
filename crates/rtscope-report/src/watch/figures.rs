//! The figures of a watch report: what the OSADL QA farm's long-term plots show (the maximum of
//! each period over months), with the distribution and the causes behind it.

use super::cells::{all_cpus, cpus, Cell};
use crate::figures::{NamedFigure, Section};
use crate::histogram::LOG_BINS_PER_DECADE;
use crate::plot::{heat, Axis, Corner, Figure, Panel, Series, Shape, HEAT, NEUTRAL};

const LATENCY: &str = "latency (µs)";
const TIME: &str = "time";

fn us(ns: u64) -> f64 {
    ns as f64 / 1e3
}

fn named(name: &str, caption: &str, panel: Panel) -> NamedFigure {
    NamedFigure {
        name: name.to_string(),
        section: Section::Latency,
        caption: caption.to_string(),
        figure: Figure::single(panel),
    }
}

/// Every figure of a watch report over `cells`.
pub fn all(cells: &[Cell]) -> Vec<NamedFigure> {
    let mut out = vec![named(
        "watch-max",
        "The worst wake-up, p99.99 and p99 of all measured CPUs per period, over the series (a gap: nothing was measured); a percentile is drawn only where at least 10 wake-ups lie beyond it; × marks a period with an alert.",
        long_term(cells),
    )];
    if cpus(cells).len() > 1 {
        out.push(named(
            "watch-cpus",
            "The worst wake-up of each measured CPU per period.",
            per_cpu(cells),
        ));
    }
    out.push(named(
        "watch-heatmap",
        "The latency distribution over time: each cell is the share of a period's wake-ups in a latency bin (all CPUs); the tail is the top of each column.",
        heat_map(cells),
    ));
    if let Some(p) = spikes(cells) {
        out.push(named(
            "watch-spikes",
            "Each period's worst wake-up on each CPU, coloured by the largest cause it was charged to (watch --explain); grey: not explained, with the reason (below --spike, or why the trace did not explain it: docs/watch.md).",
            p,
        ));
    }
    out
}

/// The points of one statistic per cell, with a zero (a break in the line) in each gap.
fn line(cells: &[&Cell], stat: impl Fn(&Cell) -> Option<f64>) -> Vec<(f64, f64)> {
    let mut pts = Vec::new();
    let mut last_end: Option<i64> = None;
    for c in cells {
        if let Some(end) = last_end.filter(|&e| c.start_ns > e + 1_000_000_000) {
            pts.push(((end + c.start_ns) as f64 / 2e9, 0.0));
        }
        if let Some(v) = stat(c) {
            pts.push((c.mid_s(), v));
        }
        last_end = Some(c.end_ns);
    }
    pts
}

/// Percentile `q` of a cell, when at least 10 wake-ups are
/// expected beyond it (a p99.99 of a 1-minute window at 5 ms is its maximum, not a tail).
fn quantile(c: &Cell, q: f64) -> Option<f64> {
    let p = c
        .histogram
        .percentile_over_all("", q, rtscope_core::Overflow::default());
    p.is_supported()
        .then_some(p.value)
        .flatten()
        .map(|v| us(v.0))
}

fn with_gaps(mut s: Series, few: bool) -> Series {
    s.gaps_at_zero = true;
    s.markers = few;
    s
}

/// All CPUs' maximum, p99.99 and p99 per cell, and the cells with an alert.
pub fn long_term(cells: &[Cell]) -> Panel {
    let all: Vec<&Cell> = all_cpus(cells).collect();
    let few = all.len() <= 60;
    let max = with_gaps(
        Series::new("max", 0, line(&all, |c| c.histogram.max().map(|v| us(v.0)))),
        few,
    );
    let p9999 = with_gaps(
        Series::new("p99.99", 1, line(&all, |c| quantile(c, 0.9999))),
        few,
    );
    let mut p99 = with_gaps(
        Series::new("p99", 2, line(&all, |c| quantile(c, 0.99))),
        false,
    );
    p99.faint = true;
    let alerts: Vec<(f64, f64)> = all
        .iter()
        .filter(|c| c.alert.is_some())
        .filter_map(|c| Some((c.mid_s(), us(c.histogram.max()?.0))))
        .collect();
    let mut series: Vec<Series> = [max, p9999, p99]
        .into_iter()
        .filter(|s| s.points.iter().any(|q| q.1 > 0.0))
        .collect();
    if !alerts.is_empty() {
        let mut a = Series::new("alert", NEUTRAL, alerts);
        a.shape = Shape::MaxMarker;
        series.push(a);
    }
    Panel {
        title: "Worst wake-up and tail per period".into(),
        x: Axis::date(TIME),
        y: Axis::latency_log(LATENCY),
        y2: None,
        series,
        legend: Corner::UpperRight,
    }
}

/// Each CPU's maximum per cell.
pub fn per_cpu(cells: &[Cell]) -> Panel {
    let series = cpus(cells)
        .into_iter()
        .enumerate()
        .map(|(i, cpu)| {
            let mine: Vec<&Cell> = cells.iter().filter(|c| c.cpu == Some(cpu)).collect();
            let pts = line(&mine, |c| c.histogram.max().map(|v| us(v.0)));
            with_gaps(Series::new(format!("CPU {cpu}"), i, pts), mine.len() <= 60)
        })
        .collect();
    Panel {
        title: "Worst wake-up per CPU and period".into(),
        x: Axis::date(TIME),
        y: Axis::latency_log(LATENCY),
        y2: None,
        series,
        legend: Corner::UpperRight,
    }
}

/// The legend of heat step `k` (a share of a period's wake-ups).
fn share_name(k: usize) -> String {
    match k {
        0 => "< 0.001 %".into(),
        5 => "≥ 10 %".into(),
        k => {
            let lo = 10f64.powi(k as i32 - 6) * 100.0;
            format!("{} – {} %", crate::fmt_num(lo), crate::fmt_num(lo * 10.0))
        }
    }
}

/// The heat step of a share of wake-ups: decades from < 1e-5 to ≥ 0.1.
fn step(share: f64) -> usize {
    ((share.log10() + 6.0).floor().max(0.0) as usize).min(HEAT.len() - 1)
}

/// The latency distribution over time: columns are the all-CPU cells, rows log bins of
/// latency, each cell's colour the decade of its share of the column's wake-ups. Vertically
/// adjacent bins of one step are drawn as one rectangle.
pub fn heat_map(cells: &[Cell]) -> Panel {
    let per = f64::from(LOG_BINS_PER_DECADE);
    let mut by_step: Vec<Vec<(f64, f64)>> = vec![Vec::new(); HEAT.len()];
    // The lower edge of log bin `b` of ns, in µs.
    let y = |b: i64| 10f64.powf(b as f64 / per) / 1e3;
    for c in all_cpus(cells) {
        let total = c.histogram.count();
        // Log bins of 1 ns and up: 0 is 1 ns, 120 is 1 s (at 10 per decade).
        let mut bins = vec![0u64; 12 * LOG_BINS_PER_DECADE as usize];
        for (lo, w, n) in c.histogram.buckets() {
            let ns = (lo.0 + w.0).saturating_sub(1).max(1) as f64;
            let b = (ns.log10() * per).floor() as usize;
            let last = bins.len() - 1;
            bins[b.min(last)] += n;
        }
        let (x0, x1) = (c.start_ns as f64 / 1e9, c.end_ns as f64 / 1e9);
        // Runs of adjacent bins of one step: (first bin, last bin, step).
        let mut run: Option<(i64, i64, usize)> = None;
        let mut flush = |r: Option<(i64, i64, usize)>| {
            if let Some((lo, hi, k)) = r {
                by_step[k].push((x0, y(lo)));
                by_step[k].push((x1, y(hi + 1)));
            }
        };
        for (b, &n) in bins.iter().enumerate().filter(|(_, &n)| n > 0) {
            let (b, k) = (b as i64, step(n as f64 / total as f64));
            run = match run {
                Some((lo, hi, rk)) if hi + 1 == b && rk == k => Some((lo, b, k)),
                r => {
                    flush(r);
                    Some((b, b, k))
                }
            };
        }
        flush(run);
    }
    let series = by_step
        .into_iter()
        .enumerate()
        .rev()
        .filter(|(_, pts)| !pts.is_empty())
        .map(|(k, pts)| {
            let mut s = Series::new(share_name(k), heat(k), pts);
            s.shape = Shape::Cells;
            s
        })
        .collect();
    Panel {
        title: "Share of each period's wake-ups per latency bin".into(),
        x: Axis::date(TIME),
        y: Axis::latency_log(LATENCY),
        y2: None,
        series,
        legend: Corner::UpperRight,
    }
}

/// Most causes named in the spikes figure; the others are drawn as "other".
pub const MAX_CAUSES: usize = 6;

/// Each CPU cell's worst wake-up at its time, one series per largest cause (the most frequent
/// [`MAX_CAUSES`], then "other"), the unexplained in grey, one series per reason ("not
/// explained: out of the trace window …", in the reasons' words). `None` when no worst is
/// known.
pub fn spikes(cells: &[Cell]) -> Option<Panel> {
    let worst: Vec<(&Cell, &super::cells::Worst)> = cells
        .iter()
        .filter(|c| c.cpu.is_some())
        .filter_map(|c| Some((c, c.worst.as_ref()?)))
        .collect();
    if worst.is_empty() {
        return None;
    }
    // Causes by how many periods they were the largest in, most first (then first seen).
    let mut counts: Vec<(&str, usize, usize)> = Vec::new();
    for (i, c) in worst
        .iter()
        .filter_map(|(_, w)| w.culprit.as_deref())
        .enumerate()
    {
        match counts.iter_mut().find(|e| e.0 == c) {
            Some(e) => e.1 += 1,
            None => counts.push((c, 1, i)),
        }
    }
    let mut keys: Vec<(i64, i64, usize)> = counts
        .iter()
        .enumerate()
        .map(|(j, e)| (-(e.1 as i64), e.2 as i64, j))
        .collect();
    keys.sort();
    let named: Vec<&str> = keys
        .iter()
        .take(MAX_CAUSES)
        .map(|k| counts[k.2].0)
        .collect();
    // The causes, "other", then each reason a worst wake-up was not explained for.
    let mut reasons: Vec<&str> = Vec::new();
    let mut groups: Vec<Vec<(f64, f64)>> = vec![Vec::new(); MAX_CAUSES + 1];
    for (c, w) in &worst {
        let g = match (w.culprit.as_deref(), c.why_not_explained()) {
            (Some(c), _) => named.iter().position(|n| *n == c).unwrap_or(MAX_CAUSES),
            (None, why) => {
                let why = why.unwrap_or_default();
                let i = reasons.iter().position(|r| *r == why).unwrap_or_else(|| {
                    reasons.push(why);
                    groups.push(Vec::new());
                    reasons.len() - 1
                });
                MAX_CAUSES + 1 + i
            }
        };
        groups[g].push((w.at_ns as f64 / 1e9, us(w.latency.0)));
    }
    let series = groups
        .into_iter()
        .enumerate()
        .filter(|(_, pts)| !pts.is_empty())
        .map(|(g, pts)| {
            let (name, colour) = match g {
                g if g < named.len() => (named[g].to_string(), g),
                g if g == MAX_CAUSES => ("other".to_string(), 7),
                g => (format!("not explained: {}", reasons[g - MAX_CAUSES - 1]), 6),
            };
            let mut s = Series::new(name, colour, pts);
            s.shape = Shape::MaxMarker;
            s
        })
        .collect();
    Some(Panel {
        title: "Each period's worst wake-up and its largest cause".into(),
        x: Axis::date(TIME),
        y: Axis::latency_log(LATENCY),
        y2: None,
        series,
        legend: Corner::UpperRight,
    })
}
