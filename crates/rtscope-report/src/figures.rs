//! The report's charts as [`Figure`]s, computed from stored histograms, series and monitor data
//! (raw samples only for the CDF, when asked for and stored). Latencies are shown in µs.

use crate::encoding::{line_groups, Encoding};
use crate::group::Grouping;
use crate::model::RunData;
use crate::monitors::{campaign_monitor_panels, monitor_panels};
use crate::plot::{Axis, Corner, Figure, Panel, Scale, Series, Shape};
use crate::scale::{nines, LOG_X_RATIO, MAX_CDF_POINTS};
use rtscope_core::{Histogram, Overflow};

use crate::histogram::share_counts;
use crate::histogram::{histogram_with, HistScale};

/// Most runs drawn as lines of their own on the shared plots; beyond, or when runs repeat, one
/// line per group (runs equal in every key that differs, see [`crate::group`]).
pub const MAX_RUN_LINES: usize = 12;

/// One line of the shared plots (tail, CDF, exceedance): a run, CPU or group.
#[derive(Debug, Clone, Default)]
pub struct Line {
    /// Legend text.
    pub name: String,
    /// The samples with a value.
    pub hist: Histogram,
    /// The exact CDF points of raw samples, when streamed ([`crate::raw`]), drawn instead of
    /// the histogram's.
    pub raw: Option<Vec<(f64, f64)>>,
    /// Samples counted but not in the histogram (an import's overflows): percentiles ranked
    /// among them are lower bounds, drawn hollow at their floor.
    pub over: Overflow,
}

impl Line {
    /// A line of a histogram that holds every sample.
    pub fn new(name: impl Into<String>, hist: Histogram) -> Line {
        Line {
            name: name.into(),
            hist,
            ..Line::default()
        }
    }

    /// The legend text, saying how many samples lie beyond the histogram.
    fn legend(&self) -> String {
        match self.over.count {
            0 => self.name.clone(),
            n => format!(
                "{} ({n} overflows ≥{})",
                self.name,
                crate::units::latency(self.over.floor.0)
            ),
        }
    }
}

/// Where a figure goes in the report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Section {
    /// Latency plots.
    Latency,
    /// System monitors.
    Monitors,
    /// OS noise (runs of kind `noise`).
    Noise,
    /// The tail beyond the measured maximum (the `worst` module).
    WorstCase,
}

/// A figure with its file name (without extension), section and caption.
#[derive(Debug, Clone)]
pub struct NamedFigure {
    /// File stem, e.g. `histogram`, `tail`, `monitor-temperature`.
    pub name: String,
    /// Where it goes.
    pub section: Section,
    /// One sentence on how to read it.
    pub caption: String,
    /// The chart.
    pub figure: Figure,
}

pub(crate) fn named(name: &str, section: Section, caption: &str, figure: Figure) -> NamedFigure {
    NamedFigure {
        name: name.to_string(),
        section,
        caption: caption.to_string(),
        figure,
    }
}

/// Every figure of a report over `runs`: one set for a single run; for several runs, shared
/// tail/CDF/exceedance plots (one line per run, or per group when runs repeat) and small
/// multiples of the per-run plots laid out as a grid (rows: load case or scenario; columns:
/// the other keys that differ), sharing their axes.
pub fn all(runs: &[RunData], grouping: &Grouping) -> Vec<NamedFigure> {
    all_with(runs, grouping, None)
}

/// [`all`], with the histograms' x axis ending at `xmax_us` when given (later samples are
/// counted in the last bin, drawn at the limit).
pub fn all_with(runs: &[RunData], grouping: &Grouping, xmax_us: Option<u64>) -> Vec<NamedFigure> {
    use Section::*;
    let mut out = Vec::new();
    let order = grid_order(grouping, runs.len());
    let columns = grid_columns(grouping);
    let shared = HistScale::fit(runs, xmax_us);
    // A summary-only run (an import of `-q` output) has no histogram: it gets no empty panel,
    // only its rows in the tables and a note here.
    let (with, without): (Vec<usize>, Vec<usize>) =
        order.iter().partition(|&&i| runs[i].has_histogram());
    let mut hist: Vec<Panel> = with
        .iter()
        .map(|&i| histogram_with(&runs[i], &grouping.run_name(runs, i), shared))
        .collect();
    share_counts(&mut hist);
    if !hist.is_empty() {
        let caption = format!(
            "{HIST_CAPTION}{}",
            summary_only_note(runs, grouping, &without)
        );
        out.push(named("histogram", Latency, &caption, grid(hist, columns)));
    }
    shared_plots(runs, grouping, &mut out);
    let mut time: Vec<Panel> = order
        .iter()
        .filter_map(|&i| over_time_named(&runs[i], &grouping.run_name(runs, i)))
        .collect();
    share_y(&mut time);
    if !time.is_empty() {
        out.push(named(
            "over-time",
            Latency,
            TIME_CAPTION,
            grid(time, columns),
        ));
    }
    let mut scatter = crate::samples::scatter_panels(runs, grouping, &order);
    if !scatter.is_empty() {
        share_log_range(&mut scatter);
        let cols = groups_per_row(grouping);
        out.push(named(
            "samples",
            Latency,
            SAMPLES_CAPTION,
            grid(scatter, cols),
        ));
    }
    if let Some(p) = crate::samples::spike_panel(runs, grouping) {
        out.push(named("spikes", Latency, SPIKES_CAPTION, Figure::single(p)));
    }
    let monitors = if runs.len() == 1 {
        monitor_panels(&runs[0])
    } else {
        campaign_monitor_panels(runs, grouping)
    };
    for (name, caption, p) in monitors {
        out.push(named(&name, Monitors, caption, Figure::single(p)));
    }
    out
}

const HIST_CAPTION: &str = "Latency histogram (OSADL style): samples per latency bin, one line per CPU, counts on a log axis (linear below 2,000 samples per CPU); the legend gives each CPU's maximum. Panels share their bin width (Freedman–Diaconis, at least 1 µs) and axes.";
/// The tail caption's sentence on an [`Encoding`]: which key is colour and which is dash.
fn encoding_note(enc: &Encoding, g: &Grouping) -> String {
    let names: Vec<&str> = enc.dash_keys.iter().map(|&k| g.keys[k].name()).collect();
    format!(
        " Colour is the {} and the line's dash the {} (the legend names each once; a dashed line's maximum is a + instead of a ×); the CDF and exceedance plots use the same.",
        g.keys[enc.colour_key].name(),
        names.join(" and ")
    )
}

const TAIL_CAPTION: &str = "Tail latency: the latency below which 90 %, 99 %, … 99.9999 % of the wake-ups fell. Lines further right rest on fewer samples; a percentile is drawn only when at least one sample lies beyond it, hollow when fewer than 10 do. × marks the exact maximum (at log10 of the sample count; maxima that would fall on one spot are set side by side). Runs that repeat (equal in every tag and load case that differs) are merged into one line per group; the shaded band spans the repeats' own percentiles (lowest to highest run).";
const SAMPLES_CAPTION: &str = "Every sample over time (runs recorded with --raw; the first run of each group): each thread's samples cut into columns that keep their largest and smallest, so no maximum is lost.";
const SPIKES_CAPTION: &str = "The --spike lines of imported cyclictest summaries: each wake-up above cyclictest's spike threshold, at its time stamp from the run's first spike (all of them are also listed under Events).";
const CDF_CAPTION: &str =
    "Cumulative distribution: the fraction of wake-ups with at most this latency; a shaded band spans a group's repeats (lowest to highest run at each fraction).";
const EXC_CAPTION: &str = "Exceedance (1 − CDF, log axis): the fraction of wake-ups later than this latency; the tail's shape shows how rare the worst cases are.";
const TIME_CAPTION: &str = "Latency over the run: the maximum (solid) and p99 (faint) of each interval, per CPU; black dots mark the largest events (samples above the run's event threshold); temperature or frequency on the right-hand axis when recorded.";

/// The plots every line of which is a run or a group (tail, CDF, exceedance), with the
/// repeats' bands and, for two keys or more, colour per load case and dash per kernel.
fn shared_plots(runs: &[RunData], grouping: &Grouping, out: &mut Vec<NamedFigure>) {
    use Section::Latency;
    let lines = lines(runs, grouping);
    let merged = runs.len() > 1 && merges(runs, grouping);
    // Two keys or more: colour per load case (or scenario), dash per kernel (the others).
    let encoding = Encoding::of(grouping).filter(|_| runs.len() > 1);
    let line_group = line_groups(grouping, runs.len(), merged);
    let mut tail = tail_of(&lines);
    if merged {
        crate::repeats::add_tail_bands(&mut tail, runs, grouping);
    }
    let mut tail_caption = TAIL_CAPTION.to_string();
    if let Some(enc) = &encoding {
        enc.apply(&mut tail, &line_group);
        tail_caption.push_str(&encoding_note(enc, grouping));
    }
    out.push(named("tail", Latency, &tail_caption, Figure::single(tail)));
    let (mut c, mut e) = cdf_of(lines);
    if merged {
        crate::repeats::add_cdf_bands(&mut c, &mut e, runs, grouping);
    }
    if let Some(enc) = &encoding {
        enc.apply(&mut c, &line_group);
        enc.apply(&mut e, &line_group);
    }
    let source = if runs.iter().any(|r| r.raw.is_some()) && runs.len() <= MAX_RUN_LINES {
        " Drawn from raw samples (exact) where the run stored them, else from the histogram."
    } else {
        " Drawn from the histogram (exact below 2,048 ns, within 0.1 % above)."
    };
    let cdf_caption = format!("{CDF_CAPTION}{source}");
    let exc_caption = format!("{EXC_CAPTION}{source}");
    out.push(named("cdf", Latency, &cdf_caption, Figure::single(c)));
    out.push(named(
        "exceedance",
        Latency,
        &exc_caption,
        Figure::single(e),
    ));
}

/// The caption's note naming the runs drawn in no histogram panel (summary-only imports).
fn summary_only_note(runs: &[RunData], g: &Grouping, without: &[usize]) -> String {
    if without.is_empty() {
        return String::new();
    }
    let names: Vec<String> = without
        .iter()
        .map(|&i| format!("{} (run {})", g.run_name(runs, i), runs[i].id()))
        .collect();
    format!(
        " Not drawn: {} — imported from a summary without a histogram; their statistics are in the tables.",
        names.join(", ")
    )
}

/// Panels in a grid: one full-size panel, or `columns` columns of smaller ones.
pub(crate) fn grid(panels: Vec<Panel>, columns: usize) -> Figure {
    if panels.len() == 1 {
        return Figure::single(panels.into_iter().next().unwrap_or_else(empty_panel));
    }
    let columns = columns.clamp(1, 4) as u32;
    Figure {
        width: if columns > 2 { 400 * columns } else { 1200 },
        panel_height: 320,
        columns,
        panels,
    }
}

/// Run indices in grid order: by the row key's value (first-seen order), then by group, then
/// by repeat.
fn grid_order(g: &Grouping, n: usize) -> Vec<usize> {
    let Some(row) = g.row_key() else {
        return g
            .groups
            .iter()
            .flat_map(|x| x.runs.clone())
            .chain((0..n).filter(|i| !g.groups.iter().any(|x| x.runs.contains(i))))
            .collect();
    };
    let mut out = Vec::new();
    for r in g.row_values(row) {
        for x in g.groups.iter().filter(|x| x.values[row] == r) {
            out.extend(&x.runs);
        }
    }
    out
}

/// Columns of the per-run grids: the runs of one row (load case or scenario) side by side when
/// every row holds as many (a full case × kernel grid), else two.
fn grid_columns(g: &Grouping) -> usize {
    let Some(row) = g.row_key() else {
        return 2;
    };
    let mut per_row: Vec<(&str, usize)> = Vec::new();
    for x in &g.groups {
        match per_row.iter_mut().find(|(v, _)| *v == x.values[row]) {
            Some(e) => e.1 += x.runs.len(),
            None => per_row.push((&x.values[row], x.runs.len())),
        }
    }
    match per_row.first() {
        Some(&(_, n)) if n <= 4 && per_row.iter().all(|&(_, m)| m == n) => n,
        _ => 2,
    }
}

/// One log y range for all panels (from the smallest to the largest value drawn).
fn share_log_range(panels: &mut [Panel]) {
    let ys = || {
        panels
            .iter()
            .flat_map(|p| p.series.iter())
            .flat_map(|s| s.points.iter().map(|p| p.1))
    };
    let lo = ys().filter(|&y| y > 0.0).fold(f64::INFINITY, f64::min);
    let hi = ys().fold(0.0f64, f64::max);
    if lo.is_finite() && hi > 0.0 {
        for p in panels.iter_mut() {
            p.y.range = Some((lo * 0.8, hi * 1.25));
        }
    }
}

/// How many groups one row of a grid holds (the columns of a one-run-per-group grid).
fn groups_per_row(g: &Grouping) -> usize {
    let Some(row) = g.row_key() else {
        return 2;
    };
    let first = g.groups.first().map(|x| x.values[row].clone());
    g.groups
        .iter()
        .filter(|x| Some(&x.values[row]) == first.as_ref())
        .count()
        .max(1)
}

/// One y range for all over-time panels (from 0 to the highest value drawn), so "this one does
/// not jitter" is seen without reading numbers.
fn share_y(panels: &mut [Panel]) {
    if panels.len() < 2 {
        return;
    }
    let top = panels
        .iter()
        .flat_map(|p| p.series.iter().filter(|s| !s.secondary))
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .fold(0.0f64, f64::max);
    let x_end = panels
        .iter()
        .flat_map(|p| p.series.iter())
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .fold(0.0f64, f64::max);
    for p in panels {
        p.y.range = Some((0.0, top.max(1.0) * 1.05));
        p.x.range = Some((0.0, x_end.max(1.0)));
    }
}

fn empty_panel() -> Panel {
    Panel {
        title: String::new(),
        x: Axis::linear(""),
        y: Axis::linear(""),
        y2: None,
        legend: Corner::UpperRight,
        series: Vec::new(),
    }
}

fn ns_to_us(ns: u64) -> f64 {
    ns as f64 / 1000.0
}

/// Tail-latency points of a histogram and its overflows: (nines, µs, weak) for each
/// percentile with at least one sample beyond it, ranked over all samples; weak when it rests
/// on fewer than 10 samples beyond it or is only a lower bound (ranked among the overflows).
pub fn tail_points(h: &Histogram, over: Overflow) -> Vec<(f64, f64, bool)> {
    h.percentiles_over_all(over)
        .into_iter()
        .filter(|p| p.tail_samples >= 1.0)
        .filter_map(|p| {
            let weak = !p.is_supported() || p.lower_bound;
            p.value.map(|v| (nines(p.quantile), ns_to_us(v.0), weak))
        })
        .collect()
}

/// The lines of the shared plots: per CPU plus all CPUs for one run; per run (all CPUs) for
/// several, named by their group; one per group when runs repeat or are too many.
fn lines(runs: &[RunData], grouping: &Grouping) -> Vec<Line> {
    if let [run] = runs {
        let mut out: Vec<_> = run
            .detail
            .threads
            .iter()
            .map(|t| Line {
                raw: run
                    .raw
                    .as_ref()
                    .and_then(|r| r.threads.get(t.thread as usize).cloned()),
                over: run.detail.overflow(t),
                ..Line::new(run.cpu_name(t.thread), t.histogram.clone())
            })
            .collect();
        if out.len() > 1 {
            out.push(Line {
                raw: run.raw.as_ref().map(|r| r.all.clone()),
                over: run.detail.overflow_all(),
                ..Line::new("all CPUs", run.merged().clone())
            });
        }
        return out;
    }
    if !merges(runs, grouping) {
        return runs
            .iter()
            .enumerate()
            .map(|(i, r)| Line {
                raw: r.raw.as_ref().map(|x| x.all.clone()),
                over: r.detail.overflow_all(),
                ..Line::new(grouping.run_name(runs, i), r.merged().clone())
            })
            .collect();
    }
    by_group(runs, grouping)
}

/// Whether the shared plots draw one line per group (runs repeat, or are too many for a line
/// each, and the groups are few enough).
fn merges(runs: &[RunData], grouping: &Grouping) -> bool {
    (grouping.has_repeats() || runs.len() > MAX_RUN_LINES)
        && grouping.groups.len() <= MAX_RUN_LINES * 2
}

/// One line per group (repeats merged); raw samples are not used then.
fn by_group(runs: &[RunData], grouping: &Grouping) -> Vec<Line> {
    grouping
        .groups
        .iter()
        .map(|g| {
            let (mut h, mut over) = (Histogram::new(), Overflow::default());
            for &i in &g.runs {
                h.merge(runs[i].merged());
                over = over.merge(runs[i].detail.overflow_all());
            }
            let base = if g.name.is_empty() {
                "all runs"
            } else {
                &g.name
            };
            let name = match g.runs.len() {
                1 => base.to_string(),
                n => format!("{base} ({n} runs)"),
            };
            Line {
                over,
                ..Line::new(name, h)
            }
        })
        .collect()
}

/// The tail-latency plot: latency at p50 … p99.9999 on an axis of "nines".
pub fn tail(runs: &[RunData]) -> Panel {
    let g = Grouping::new(runs, None);
    tail_of(&lines(runs, &g))
}

/// The tail-latency plot of any named histograms (one line each): runs, CPUs, or the groups
/// `rtscope compare` compares.
pub fn tail_of(lines: &[Line]) -> Panel {
    let mut series: Vec<Series> = Vec::new();
    let mut right = 1.0f64;
    for (i, l) in lines.iter().enumerate() {
        let h = &l.hist;
        let marked = tail_points(h, l.over);
        // Points resting on fewer than 10 samples beyond them, and lower bounds, are hollow.
        let weak = marked.iter().map(|p| p.2).collect();
        let pts: Vec<(f64, f64)> = marked.iter().map(|p| (p.0, p.1)).collect();
        series.push(Series {
            markers: true,
            weak,
            ..Series::new(l.legend(), i, pts.clone())
        });
        // With overflows the exact max is not in the histogram: no marker.
        if let (Some(max), 0) = (h.max(), l.over.count) {
            // The exact max sits where the last sample would: log10(count) nines.
            let at = (h.count().max(1) as f64).log10();
            right = right.max(at);
            series.push(Series {
                shape: Shape::MaxMarker,
                ..Series::new("", i, vec![(at, ns_to_us(max.0))])
            });
        }
        if let Some(&(x, _)) = pts.last() {
            right = right.max(x);
        }
    }
    crate::encoding::dodge_max_markers(&mut series);
    let right = series
        .iter()
        .filter(|s| s.shape == Shape::MaxMarker)
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .fold(right, f64::max);
    Panel {
        title: "Tail latency".into(),
        x: Axis {
            scale: Scale::Nines,
            range: Some((0.0, right.ceil().min(8.0) + 0.25)),
            ..Axis::linear("percentile (\"nines\"); × = exact max")
        },
        y: Axis::latency_log("latency (µs)"),
        y2: None,
        legend: Corner::UpperLeft,
        series,
    }
}

/// CDF points (µs, fraction ≤ µs) from a histogram's bucket edges, over all samples: with
/// overflows the curve ends below 1 at the histogram's top (their values are unknown).
pub fn cdf_points(h: &Histogram, over: Overflow) -> Vec<(f64, f64)> {
    let total = h.count().saturating_add(over.count).max(1) as f64;
    let mut seen = 0u64;
    let mut pts = Vec::new();
    if let Some(min) = h.min() {
        pts.push((ns_to_us(min.0), 0.0));
    }
    for (lo, width, c) in h.buckets() {
        seen += c;
        let hi = (lo.0 + width.0).min(h.max().map_or(u64::MAX, |m| m.0));
        pts.push((ns_to_us(hi), seen as f64 / total));
    }
    thin(pts)
}

fn thin(pts: Vec<(f64, f64)>) -> Vec<(f64, f64)> {
    if pts.len() <= MAX_CDF_POINTS {
        return pts;
    }
    let step = pts.len().div_ceil(MAX_CDF_POINTS);
    let last = pts.last().copied();
    let mut out: Vec<_> = pts.into_iter().step_by(step).collect();
    out.extend(last);
    out
}

/// The CDF plot and the exceedance (1 − CDF on a log axis) plot.
pub fn cdf(runs: &[RunData]) -> (Panel, Panel) {
    cdf_of(lines(runs, &Grouping::new(runs, None)))
}

/// The CDF and exceedance plots of any named histograms (with the exact points of raw samples,
/// when given: [`crate::raw`]): runs, CPUs, or the groups `rtscope compare` compares.
pub fn cdf_of(lines: Vec<Line>) -> (Panel, Panel) {
    let x = latency_axis(lines.iter().map(|l| &l.hist));
    let mut c = Vec::new();
    let mut e = Vec::new();
    for (i, l) in lines.into_iter().enumerate() {
        let name = l.legend();
        let h = l.hist;
        let pts = match l.raw {
            Some(r) if !r.is_empty() => r,
            _ => cdf_points(&h, l.over),
        };
        let floor = 0.5 / h.count().saturating_add(l.over.count).max(1) as f64;
        let exc = pts
            .iter()
            .map(|&(x, y)| (x, (1.0 - y).max(floor)))
            .collect();
        e.push(Series::new(name.clone(), i, exc));
        c.push(Series::new(name, i, pts));
    }
    let cdf = Panel {
        title: "Cumulative distribution (CDF)".into(),
        x: x.clone(),
        y: Axis {
            range: Some((0.0, 1.0)),
            ..Axis::linear("fraction of samples ≤ latency")
        },
        y2: None,
        legend: Corner::LowerRight,
        series: c,
    };
    let exc = Panel {
        title: "Exceedance (1 − CDF)".into(),
        x,
        y: Axis::log("fraction of samples > latency"),
        y2: None,
        legend: Corner::UpperRight,
        series: e,
    };
    (cdf, exc)
}

/// The latency axis of the CDF and exceedance plots: logarithmic when the longest tail is more
/// than [`LOG_X_RATIO`] times the lowest median (ms outliers over a µs body), so the body is
/// not squashed into a vertical line at 0; else linear.
pub fn latency_axis<'a>(hists: impl Iterator<Item = &'a Histogram>) -> Axis {
    let (mut max, mut p50) = (0u64, u64::MAX);
    for h in hists {
        max = max.max(h.max().map_or(0, |m| m.0));
        if let Some(m) = h.value_at_quantile(0.5) {
            p50 = p50.min(m.0.max(1));
        }
    }
    if p50 != u64::MAX && max as f64 / p50 as f64 > LOG_X_RATIO {
        Axis::latency_log("latency (µs, log axis)")
    } else {
        Axis::linear("latency (µs)")
    }
}

/// Latency over the run: per-interval max and p99 per CPU, with temperature (or else frequency)
/// on a second axis. `None` when the run has no series.
pub fn over_time(run: &RunData) -> Option<Panel> {
    over_time_named(run, &run.name())
}

/// [`over_time`] with the run named `name` in the title.
pub fn over_time_named(run: &RunData, name: &str) -> Option<Panel> {
    if run.series.is_empty() {
        return None;
    }
    let mut series = Vec::new();
    for (i, t) in run.detail.threads.iter().enumerate() {
        let rows: Vec<_> = run.series.iter().filter(|s| s.thread == t.thread).collect();
        let max = steps(&rows, |s| s.max_ns);
        let p99 = steps(&rows, |s| s.p99_ns);
        series.push(Series::new(
            format!("{} max", run.cpu_name(t.thread)),
            i,
            max,
        ));
        let mut faint = Series::new("", i, p99);
        faint.faint = true;
        series.push(faint);
    }
    let colours = series.len() / 2;
    series.extend(crate::samples::event_marks(run));
    let (y2, extra) = second_axis(run, colours);
    series.extend(extra);
    Some(Panel {
        title: format!("Latency over time — {name} (run {})", run.id()),
        x: Axis::time("time since start"),
        y: Axis::linear("latency (µs)"),
        y2,
        legend: Corner::UpperRight,
        series,
    })
}

/// Most intervals drawn per line of the over-time plot; longer runs are decimated.
pub const MAX_TIME_STEPS: usize = 1500;

/// A per-interval value as steps: flat from each interval's start to its end (`offset_ns` is
/// the end of the interval), in (s, µs). Beyond [`MAX_TIME_STEPS`] intervals, consecutive
/// intervals are merged into one step holding the largest of their values, so every interval's
/// max is still seen (a 24-hour run at 1 s intervals stays a small SVG).
fn steps(
    rows: &[&rtscope_store::SeriesRow],
    value: impl Fn(&rtscope_store::SeriesRow) -> Option<u64>,
) -> Vec<(f64, f64)> {
    let per = rows.len().div_ceil(MAX_TIME_STEPS).max(1);
    let mut pts = Vec::with_capacity(rows.len().min(MAX_TIME_STEPS) * 2 + 2);
    for chunk in rows.chunks(per) {
        let Some(v) = chunk.iter().filter_map(|s| value(s)).max() else {
            continue;
        };
        let (first, last) = (chunk[0], chunk[chunk.len() - 1]);
        let start = first.offset_ns.saturating_sub(first.length_ns) as f64 / 1e9;
        let end = last.offset_ns as f64 / 1e9;
        pts.push((start, ns_to_us(v)));
        pts.push((end, ns_to_us(v)));
    }
    pts
}

/// Temperature series (°C), or else frequency (MHz), for the right-hand axis of the over-time
/// plot; colours start at `first_colour`.
fn second_axis(run: &RunData, first_colour: usize) -> (Option<Axis>, Vec<Series>) {
    let temps: Vec<_> = run
        .monitors
        .iter()
        .filter(|m| m.unit == "degC")
        .take(3)
        .collect();
    let (label, picked, scale) = if !temps.is_empty() {
        ("temperature (°C)", temps, 1.0)
    } else {
        let f: Vec<_> = run.monitors_with("freq.").take(3).collect();
        ("frequency (MHz)", f, 1e-3)
    };
    if picked.is_empty() {
        return (None, Vec::new());
    }
    let series = picked
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let pts = m
                .points
                .iter()
                .map(|&(t, v)| (t as f64 / 1e9, v * scale))
                .collect();
            let mut s = Series::new(m.metric.clone(), first_colour + i, pts);
            s.secondary = true;
            s.faint = true;
            s
        })
        .collect();
    (Some(Axis::linear(label)), series)
}
