//! The OSADL-style latency histogram: bins shared by the panels of a figure (Freedman–Diaconis
//! width, or log bins for long tails), counts on a log axis (linear for small runs).

use crate::model::RunData;
use crate::plot::{Axis, Corner, Panel, Scale, Series, Shape};
use crate::scale::LOG_X_RATIO;
use rtscope_core::Histogram;

/// Most bins an OSADL-style histogram is drawn with; wider latency ranges get wider bins.
pub const MAX_BINS: u64 = 1000;

/// Fewer samples than this in every thread of every panel draw the counts on a linear axis
/// (a log axis over a few hundred samples exaggerates single samples).
pub const SMALL_N: u64 = 2_000;

/// One count axis for all histogram panels: linear from 0 when every thread holds fewer than
/// [`SMALL_N`] samples, else log from below 1 (empty bins) to the decade above the largest
/// count of any panel.
pub(crate) fn share_counts(panels: &mut [Panel]) {
    let top = panels
        .iter()
        .flat_map(|p| p.series.iter())
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .fold(1.0f64, f64::max);
    let small = panels
        .iter()
        .flat_map(|p| p.series.iter())
        .all(|s| s.points.iter().map(|p| p.1).sum::<f64>() < SMALL_N as f64);
    let many = panels.len() > 1;
    for p in panels.iter_mut() {
        if small {
            p.y.scale = Scale::Linear;
            p.y.range = Some((0.0, top * 1.05));
        } else if many {
            p.y.range = Some((10f64.powf(-0.3), 10f64.powf(top.log10().ceil().max(1.0))));
        }
    }
}

/// The bins shared by the histograms of one figure.
#[derive(Debug, Clone, Copy)]
pub struct HistScale {
    /// Width of the linear bins, ns: a whole number of [`HistScale::resolution_ns`].
    pub width_ns: u64,
    /// Upper end of the x axis, µs.
    pub max_us: u64,
    /// With a long tail: the lower end (µs, a power of ten) of a log latency axis binned
    /// [`LOG_BINS_PER_DECADE`] bins per decade; `None`: linear bins of `width_ns`.
    pub log_from_us: Option<f64>,
    /// The coarsest resolution of the runs' samples, ns ([`resolution_ns`]): 1,000 when they
    /// hold whole microseconds (an imported cyclictest histogram), else 1. No bin is narrower.
    pub resolution_ns: u64,
}

/// Bins per decade of a histogram on a log latency axis.
pub const LOG_BINS_PER_DECADE: u32 = 50;

/// The narrowest linear bin of samples measured to the nanosecond, ns: a respond run's body of
/// 3–6 µs gets a few dozen bins, not one or two.
pub const MIN_BIN_NS: u64 = 100;

impl HistScale {
    /// The scale that holds every thread of every run in at most [`MAX_BINS`] bins.
    pub fn of(runs: &[RunData]) -> HistScale {
        HistScale::fit(runs, None)
    }

    /// The scale of a histogram figure: from 0 to the largest latency of any thread (or to
    /// `xmax_us`), in bins as wide as the narrowest Freedman–Diaconis width of the runs
    /// ([`fd_width_ns`]: the run with the tightest body keeps it readable), at least the
    /// data's resolution and wide enough for [`MAX_BINS`] bins.
    pub fn fit(runs: &[RunData], xmax_us: Option<u64>) -> HistScale {
        let max_us = xmax_us.unwrap_or_else(|| {
            runs.iter()
                .flat_map(|r| r.detail.threads.iter().filter_map(|t| t.figures.max_ns))
                .max()
                .map_or(1, |m| m / 1000 + 1)
        });
        let max_us = max_us.max(1);
        let resolution = runs
            .iter()
            .map(|r| resolution_ns(r.merged()))
            .max()
            .unwrap_or(1);
        let fd = runs
            .iter()
            .filter_map(|r| fd_width_ns(r.merged(), resolution))
            .min()
            .unwrap_or(1000);
        let fewest = nice_up((max_us * 1000).div_ceil(MAX_BINS) as f64);
        // A long tail (max over the lowest median beyond LOG_X_RATIO) and no --xmax: log bins,
        // so a µs body and ms outliers both read.
        let p50 = runs
            .iter()
            .filter_map(|r| r.merged().value_at_quantile(0.5))
            .map(|v| v.0.max(1))
            .min();
        let long = p50.is_some_and(|m| (max_us * 1000) as f64 / m as f64 > LOG_X_RATIO);
        let log_from_us = (xmax_us.is_none() && long).then(|| {
            let min = runs
                .iter()
                .filter_map(|r| r.merged().min())
                .map(|m| m.0)
                .min();
            let min_us = (min.unwrap_or(1000) as f64 / 1000.0).max(0.1);
            10f64.powf(min_us.log10().floor())
        });
        HistScale {
            width_ns: round_up(fd.max(fewest).max(MIN_BIN_NS), resolution),
            max_us,
            log_from_us,
            resolution_ns: resolution,
        }
    }

    /// The width of the linear bins for people: `1 µs`, `0.5 µs`, `20 µs`.
    pub fn width_text(&self) -> String {
        format!("{} µs", crate::fmt_num(self.width_ns as f64 / 1000.0))
    }
}

/// `v` rounded up to a multiple of `step` (at least one step).
fn round_up(v: u64, step: u64) -> u64 {
    let step = step.max(1);
    v.div_ceil(step).max(1) * step
}

/// The resolution of a histogram's samples, ns: 1,000 when every sample can be a whole number
/// of microseconds (each non-empty bucket holds a multiple of 1,000 ns: an imported cyclictest
/// `-h` histogram, or `-v` samples), else 1. Bins narrower than the resolution would leave
/// every other bin empty (a picket fence), so none is drawn.
pub fn resolution_ns(h: &Histogram) -> u64 {
    let mut any = false;
    for (lo, w, _) in h.buckets() {
        any = true;
        let hi = lo.0 + w.0.max(1) - 1;
        if (hi / 1000) * 1000 < lo.0 {
            return 1;
        }
    }
    if any {
        1000
    } else {
        1
    }
}

/// The Freedman–Diaconis bin width of a distribution, `2 · IQR / n^(1/3)`, rounded up to 1, 2
/// or 5 × 10^k µs (at least 1 µs: cyclictest's resolution and OSADL's bin). A million samples
/// get 1 µs bins; 500 samples spread over 20 µs get 5 µs bins instead of a picket fence.
pub fn fd_width_us(h: &Histogram) -> u64 {
    let (Some(q1), Some(q3)) = (h.value_at_quantile(0.25), h.value_at_quantile(0.75)) else {
        return 1;
    };
    let n = h.count().max(1) as f64;
    let w = 2.0 * (q3.0.saturating_sub(q1.0)) as f64 / 1000.0 / n.cbrt();
    nice_up(w)
}

/// The Freedman–Diaconis width of a distribution in ns, rounded up to 1, 2 or 5 × 10^k ns and
/// to a multiple of `resolution_ns` (no narrower than [`MIN_BIN_NS`]); `None` without a
/// spread (no samples, or an interquartile range of 0).
pub fn fd_width_ns(h: &Histogram, resolution_ns: u64) -> Option<u64> {
    let (q1, q3) = (h.value_at_quantile(0.25)?, h.value_at_quantile(0.75)?);
    let iqr = q3.0.saturating_sub(q1.0);
    if iqr == 0 {
        return None;
    }
    let n = h.count().max(1) as f64;
    let w = nice_up(2.0 * iqr as f64 / n.cbrt()).max(MIN_BIN_NS);
    Some(round_up(w, resolution_ns))
}

/// The smallest 1, 2 or 5 × 10^k (k ≥ 0) at or above `v`.
fn nice_up(v: f64) -> u64 {
    let mut base = 1u64;
    loop {
        for m in [1, 2, 5] {
            if (m * base) as f64 >= v {
                return m * base;
            }
        }
        base = base.saturating_mul(10);
        if base > 1_000_000_000 {
            return base;
        }
    }
}

/// The OSADL-style latency histogram of one run: one line per CPU over µs bins.
pub fn histogram(run: &RunData) -> Panel {
    let title = run.name();
    histogram_with(run, &title, HistScale::of(std::slice::from_ref(run)))
}

/// The OSADL-style histogram of one run named `name`, on a scale shared with other panels.
pub fn histogram_with(run: &RunData, name: &str, scale: HistScale) -> Panel {
    let threads = &run.detail.threads;
    let HistScale {
        width_ns, max_us, ..
    } = scale;
    let mut series = Vec::new();
    for (i, t) in threads.iter().enumerate() {
        let max = t.figures.max_ns.map_or("-".into(), crate::units::latency);
        let name = format!("{} (max {max})", run.cpu_name(t.thread));
        let pts = match scale.log_from_us {
            Some(lo) => histogram_points_log_res(&t.histogram, lo, max_us, scale.resolution_ns),
            None => histogram_points_ns(&t.histogram, width_ns, max_us),
        };
        series.push(Series::new(name, i, pts));
        series.extend(overflow_bar(
            run,
            t,
            i,
            width_ns,
            scale.log_from_us.is_some(),
        ));
    }
    let title = format!("Latency histogram — {name} (run {})", run.id());
    if let Some(lo) = scale.log_from_us {
        let whole = if scale.resolution_ns >= 1000 {
            ", at least 1 µs: the data's resolution"
        } else {
            ""
        };
        return Panel {
            title,
            x: Axis {
                range: Some((lo, max_us as f64 * 1.05)),
                ..Axis::latency_log("latency (µs, log axis)")
            },
            y: Axis::log(format!(
                "samples per bin ({LOG_BINS_PER_DECADE} per decade{whole})"
            )),
            y2: None,
            legend: Corner::UpperRight,
            series,
        };
    }
    let unit = if width_ns == 1000 {
        "samples per µs".to_string()
    } else {
        format!("samples per {}", scale.width_text())
    };
    let beyond = threads
        .iter()
        .any(|t| t.figures.max_ns.is_some_and(|m| m / 1000 >= max_us));
    let x_label = if beyond {
        format!("latency (µs); later samples counted at {max_us} µs")
    } else {
        "latency (µs)".into()
    };
    let end_ns = round_up(max_us * 1000, width_ns);
    Panel {
        title,
        x: Axis {
            range: Some((0.0, end_ns as f64 / 1000.0)),
            ..Axis::linear(x_label)
        },
        y: Axis::log(unit),
        y2: None,
        legend: Corner::UpperRight,
        series,
    }
}

/// Histogram counts in [`LOG_BINS_PER_DECADE`] bins per decade from `lo_us` to `max_us`, as
/// (bin start µs, count), each bucket counted in the bin of its highest value; runs of empty
/// bins are reduced to their first and last bin.
pub fn histogram_points_log(h: &Histogram, lo_us: f64, max_us: u64) -> Vec<(f64, f64)> {
    histogram_points_log_res(h, lo_us, max_us, 1)
}

/// The edges (ns) of log bins from `lo_us` to `max_us`, [`LOG_BINS_PER_DECADE`] per decade,
/// each rounded up to a multiple of `resolution_ns`; edges that fall together are one, so where
/// the log spacing is finer than the resolution (below about 21 µs for whole-µs data) the bins
/// are one resolution wide instead of alternately full and empty.
pub fn log_edges_ns(lo_us: f64, max_us: u64, resolution_ns: u64) -> Vec<u64> {
    let per = f64::from(LOG_BINS_PER_DECADE);
    let bins = ((max_us as f64 / lo_us).max(1.0).log10() * per).ceil() as usize + 2;
    let res = resolution_ns.max(1);
    let mut edges: Vec<u64> = Vec::with_capacity(bins + 1);
    for i in 0..=bins {
        let ns = (lo_us * 1000.0 * 10f64.powf(i as f64 / per)).round() as u64;
        let e = ns.div_ceil(res) * res;
        if edges.last().is_none_or(|&l| e > l) {
            edges.push(e);
        }
    }
    edges
}

/// [`histogram_points_log`] on bins no narrower than `resolution_ns` ([`log_edges_ns`]).
pub fn histogram_points_log_res(
    h: &Histogram,
    lo_us: f64,
    max_us: u64,
    resolution_ns: u64,
) -> Vec<(f64, f64)> {
    let edges = log_edges_ns(lo_us, max_us, resolution_ns);
    let mut counts = vec![0u64; edges.len()];
    for (lo, w, c) in h.buckets() {
        let hi = lo.0 + w.0.max(1) - 1;
        let b = edges.partition_point(|&e| e <= hi).saturating_sub(1);
        counts[b] += c;
    }
    thin_empty(&counts, |i| edges[i] as f64 / 1000.0)
}

/// Histogram counts in bins of `width` µs from 0 to `max_us`, as (bin start µs, count), each
/// bucket counted in the bin of its highest value; runs of empty bins are reduced to their first
/// and last bin (drawn at the bottom of the log axis).
pub fn histogram_points(h: &Histogram, width: u64, max_us: u64) -> Vec<(f64, f64)> {
    histogram_points_ns(h, width.max(1) * 1000, max_us)
}

/// [`histogram_points`] with bins `width_ns` wide (a 0.5 µs bin is 500).
pub fn histogram_points_ns(h: &Histogram, width_ns: u64, max_us: u64) -> Vec<(f64, f64)> {
    let width_ns = width_ns.max(1);
    let bins = ((max_us * 1000) / width_ns + 2) as usize;
    let mut counts = vec![0u64; bins];
    for (lo, w, c) in h.buckets() {
        // By the bucket's highest value: above 2,048 ns a bucket is wider than 1 ns, and one
        // that straddles a bin edge goes to the upper bin (an error of at most its width, under
        // 0.1 %), so whole-µs samples (cyclictest histograms) land in their own bins.
        let b = ((lo.0 + w.0.max(1) - 1) / width_ns) as usize;
        counts[b.min(bins - 1)] += c;
    }
    thin_empty(&counts, |i| (i as u64 * width_ns) as f64 / 1000.0)
}

/// Bin counts as (bin start, count) with runs of empty bins reduced to their ends.
fn thin_empty(counts: &[u64], start: impl Fn(usize) -> f64) -> Vec<(f64, f64)> {
    let mut pts = Vec::new();
    for (i, &c) in counts.iter().enumerate() {
        let prev = i.checked_sub(1).map(|j| counts[j]);
        let next = counts.get(i + 1).copied();
        let interior_zero = c == 0 && prev == Some(0) && next == Some(0);
        if !interior_zero {
            pts.push((start(i), c as f64));
        }
    }
    pts
}

/// An import's histogram overflows of thread `t` as a mark of their own at the source's limit
/// (their values are unknown, only that each is at least the limit), labelled.
fn overflow_bar(
    run: &RunData,
    t: &rtscope_store::ThreadRow,
    i: usize,
    width_ns: u64,
    log_x: bool,
) -> Option<Series> {
    let over = run.detail.overflow(t);
    if over.count == 0 {
        return None;
    }
    let at = if log_x {
        (over.floor.0 / 1000).max(1) as f64
    } else {
        (over.floor.0 / width_ns.max(1) * width_ns.max(1)) as f64 / 1000.0
    };
    let name = format!(
        "{}: {} overflows ≥{} (values unknown)",
        run.cpu_name(t.thread),
        over.count,
        crate::units::latency(over.floor.0)
    );
    Some(Series {
        markers: true,
        shape: Shape::MaxMarker,
        ..Series::new(name, i, vec![(at, over.count as f64)])
    })
}
