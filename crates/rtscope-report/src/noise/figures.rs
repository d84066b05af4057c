//! The noise section's plots: % available per CPU (bars), the gap histogram (log-log), noise
//! time per cause (stacked bars: `--explain`'s classes, else one "not explained" bar), the
//! per-cause histograms of explained runs and the recorded gaps over time (one panel per run).

use super::{causes, pct, slot, CpuNoise, NOT_EXPLAINED};
use crate::figures::{grid, named, NamedFigure, Section};
use crate::model::RunData;
use crate::plot::{Axis, Corner, Figure, Panel, Series, Shape};
use rtscope_core::layout;
use std::collections::BTreeMap;

/// Half the width of a bar, in x units (one unit per bar).
const HALF_BAR: f64 = 0.35;

/// Every figure of the noise section over `runs` (noise runs only; none when empty).
pub fn all(runs: &[RunData]) -> Vec<NamedFigure> {
    if runs.is_empty() {
        return Vec::new();
    }
    let cpus: Vec<Vec<CpuNoise>> = runs.iter().map(CpuNoise::of_run).collect();
    let one = |name, caption, p| named(name, Section::Noise, caption, Figure::single(p));
    let mut out = vec![
        one(
            "noise-available",
            AVAILABLE_CAPTION,
            available_panel(runs, &cpus),
        ),
        one("noise-histogram", HIST_CAPTION, histogram_panel(runs)),
        one("noise-causes", CAUSES_CAPTION, causes_panel(runs, &cpus)),
    ];
    let per_cause: Vec<Panel> = runs
        .iter()
        .filter_map(|r| cause_histogram_panel(r, runs.len()))
        .collect();
    if !per_cause.is_empty() {
        let columns = if per_cause.len() > 1 { 2 } else { 1 };
        out.push(named(
            "noise-cause-histograms",
            Section::Noise,
            CAUSE_HIST_CAPTION,
            grid(per_cause, columns),
        ));
    }
    let gaps: Vec<Panel> = runs.iter().map(|r| gaps_panel(r, runs.len())).collect();
    let columns = if gaps.len() > 1 { 2 } else { 1 };
    out.push(named(
        "noise-gaps",
        Section::Noise,
        GAPS_CAPTION,
        grid(gaps, columns),
    ));
    out
}

const AVAILABLE_CAPTION: &str = "% of each CPU available to the busy loop (100 × (runtime − noise) / runtime), one bar per CPU, its value in the legend; the axis starts at the decade below the lowest bar.";
const HIST_CAPTION: &str = "Gap histogram: every gap of the loop, one point per bucket of the lossless histogram, one line per CPU, both axes log: the loop's own cost at the left, interruptions to the right (an rtla osnoise hist import: only its noises over the threshold, at their buckets' lower bounds; an rtla osnoise top import has no histogram).";
const CAUSES_CAPTION: &str = "Noise time per cause, one bar per run: the --explain classes, or for a run without --explain its whole noise, grey, not explained.";
const CAUSE_HIST_CAPTION: &str = "Per-cause histograms (runs with --explain): for each class, how long one traced gap's time in it was, one point per power-of-two bucket at its lower bound, the class's CPUs summed, both axes log; one panel per explained run.";
const GAPS_CAPTION: &str = "The recorded gaps over the threshold: when in the run (s) and how long (log), one colour per CPU; gaps in step across CPUs point at the system, gaps on one CPU at something pinned there (oslat and rtla imports record no gap with its time).";

/// A run's name in legends: its name, with `(run N)` when the report has several runs.
fn run_name(r: &RunData, several: bool) -> String {
    if several {
        format!("{} (run {})", r.name(), r.id())
    } else {
        r.name()
    }
}

/// A bar from `bottom` to `top` at position `x`, as a [`Shape::Cells`] series.
fn bar(name: String, colour: usize, x: f64, bottom: f64, top: f64) -> Series {
    Series {
        shape: Shape::Cells,
        ..Series::new(
            name,
            colour,
            vec![(x - HALF_BAR, bottom), (x + HALF_BAR, top)],
        )
    }
}

fn panel(title: String, x: Axis, y: Axis, series: Vec<Series>) -> Panel {
    Panel {
        title,
        x,
        y,
        y2: None,
        series,
        legend: Corner::LowerRight,
    }
}

/// The bottom of the % available axis: the decade below the lowest share (`99.9` for
/// 99.987 %, `90` for 95 %, `0` below 90 %).
pub fn available_floor(lowest: f64) -> f64 {
    let missing = (100.0 - lowest).max(1e-4);
    let decade = 10f64.powf(missing.log10().ceil());
    (100.0 - decade).max(0.0)
}

/// % available per CPU: one bar each, in the table's order (runs, then CPUs).
pub fn available_panel(runs: &[RunData], cpus: &[Vec<CpuNoise>]) -> Panel {
    let several = runs.len() > 1;
    let shares: Vec<(usize, &CpuNoise, f64)> = cpus
        .iter()
        .enumerate()
        .flat_map(|(k, c)| c.iter().map(move |c| (k, c)))
        .filter_map(|(k, c)| Some((k, c, c.available_percent()?)))
        .collect();
    let floor = available_floor(shares.iter().map(|s| s.2).fold(100.0, f64::min));
    let who = |k: usize, c: &CpuNoise| {
        if several {
            format!("{} {}", run_name(&runs[k], true), c.cpu_name())
        } else {
            c.cpu_name()
        }
    };
    let series = shares
        .iter()
        .enumerate()
        .map(|(i, &(k, c, p))| {
            let colour = if several { k } else { i };
            bar(
                format!("{}: {} %", who(k, c), pct(p)),
                colour,
                i as f64,
                floor,
                p,
            )
        })
        .collect();
    let mut y = Axis::linear("available (%)");
    y.range = Some((floor, 100.0));
    let names = shares.iter().map(|&(k, c, _)| who(k, c)).collect();
    let x = Axis::categories("CPU (as in the table)", names);
    panel("% CPU available to the loop".into(), x, y, series)
}

/// The gap histogram: per CPU, each non-empty bucket at its lowest value (µs) with its count.
pub fn histogram_panel(runs: &[RunData]) -> Panel {
    let several = runs.len() > 1;
    let mut series = Vec::new();
    for r in runs {
        for t in &r.detail.threads {
            let points = t
                .histogram
                .nonzero()
                .map(|(i, n)| (layout::lowest_of(i).max(1) as f64 / 1000.0, n as f64))
                .collect();
            let name = match (several, t.cpu) {
                (true, Some(c)) => format!("{} CPU {c}", run_name(r, true)),
                (false, Some(c)) => format!("CPU {c}"),
                (_, None) => format!("{} thread {}", run_name(r, several), t.thread),
            };
            let colour = series.len();
            series.push(Series {
                markers: series.len() < 4,
                ..Series::new(name, colour, points)
            });
        }
    }
    let x = Axis::log("gap (µs, log)");
    let y = Axis::log("gaps (log)");
    panel("Gap histogram".into(), x, y, series)
}

/// Noise time per cause, stacked, one bar per run on a categorical axis of the runs, in the
/// unit of the tallest bar (µs, ms or s); a single run's legend gives each cause's time
/// (`softirq: 47.6 s`).
pub fn causes_panel(runs: &[RunData], cpus: &[Vec<CpuNoise>]) -> Panel {
    let mut series: Vec<Series> = Vec::new();
    let single = runs.len() == 1;
    let per_run: Vec<_> = runs
        .iter()
        .enumerate()
        .map(|(k, r)| causes(r, &cpus[k]))
        .collect();
    let tallest = per_run
        .iter()
        .map(|c| c.iter().map(|x| x.2).sum::<u64>())
        .max()
        .unwrap_or(0);
    let (unit, per) = crate::units::unit_of(tallest as f64);
    for (k, list) in per_run.into_iter().enumerate() {
        let x = k as f64;
        let mut bottom = 0.0;
        // A class without time draws nothing and takes no legend row (a run's "not explained"
        // bar is drawn even at 0: its noise is known to be none).
        for (name, colour, ns) in list.into_iter().filter(|c| c.2 > 0 || c.0 == NOT_EXPLAINED) {
            let top = bottom + ns as f64 / per;
            let cells = [(x - HALF_BAR, bottom), (x + HALF_BAR, top)];
            match series.iter_mut().find(|s| s.colour == colour) {
                Some(s) => s.points.extend(cells),
                None if single => series.push(bar(
                    format!("{name}: {}", crate::units::latency(ns)),
                    colour,
                    x,
                    bottom,
                    top,
                )),
                None => series.push(bar(name.into(), colour, x, bottom, top)),
            }
            bottom = top;
        }
    }
    let names = runs.iter().map(|r| run_name(r, !single)).collect();
    panel(
        "Noise time per cause".into(),
        Axis::categories("run", names),
        Axis::linear(format!("noise time ({unit})")),
        series,
    )
}

/// A run's per-cause histograms (`--explain`): one series per class, its CPUs' buckets summed,
/// each bucket at its lower bound (µs) with its count, in the class's colour; `None` for a run
/// without them.
pub fn cause_histogram_panel(r: &RunData, runs: usize) -> Option<Panel> {
    use rtscope_explain::classes::Class;
    let (s, _) = r.explain.as_ref()?;
    let mut per: BTreeMap<usize, BTreeMap<u64, u64>> = BTreeMap::new();
    for h in &s.class_histograms {
        let Some(c) = Class::of_key(&h.class) else {
            continue;
        };
        for &(lo, n) in &h.buckets {
            *per.entry(c.index()).or_default().entry(lo).or_default() += n;
        }
    }
    if per.is_empty() {
        return None;
    }
    let series = per
        .into_iter()
        .map(|(i, b)| {
            let c = Class::ALL[i];
            let points = b
                .into_iter()
                .map(|(lo, n)| (lo as f64 / 1000.0, n as f64))
                .collect();
            Series {
                markers: true,
                ..Series::new(c.name(), slot(c), points)
            }
        })
        .collect();
    let title = format!("Time per traced gap by cause — {}", run_name(r, runs > 1));
    let x = Axis::log("time in the gap (µs, log)");
    Some(panel(title, x, Axis::log("gaps (log)"), series))
}

/// A run's recorded gaps: time into the run (s) against length (µs, log), per CPU.
pub fn gaps_panel(r: &RunData, runs: usize) -> Panel {
    let series = r
        .detail
        .threads
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let points = r
                .events
                .iter()
                .filter(|e| e.thread == t.thread)
                .map(|e| (e.offset_ns as f64 / 1e9, e.latency_ns as f64 / 1000.0))
                .collect();
            let name = t
                .cpu
                .map_or(format!("thread {}", t.thread), |c| format!("CPU {c}"));
            Series {
                shape: Shape::Dots,
                ..Series::new(name, i, points)
            }
        })
        .collect();
    let title = format!("Gaps over the threshold — {}", run_name(r, runs > 1));
    let x = Axis::time("time into the run");
    panel(title, x, Axis::log("gap (µs, log)"), series)
}
