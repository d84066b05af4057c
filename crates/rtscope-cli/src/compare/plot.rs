//! `compare --plot FILE.svg`: the groups' latency distributions overlaid, as exceedance curves
//! (the fraction of samples above each latency, on a log scale), in a self-contained SVG.
//!
//! An exceedance curve shows the whole tail at once: where the curves of two kernels part, and
//! how many samples lie beyond any latency. Rendering is a pure function of the comparison.

use super::analysis::{Comparison, Group};
use std::fmt::Write;

const W: f64 = 800.0;
const H: f64 = 480.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 50.0;
const COLORS: [&str; 6] = [
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf",
];

/// The exceedance points of a group: (latency ns, fraction of samples above it). Samples an
/// import could not place in its histogram count as above every bucket; the curve ends at the
/// exact max.
pub fn exceedance(g: &Group) -> Vec<(u64, f64)> {
    let total = g.merged.samples.max(g.merged.hist.count());
    if total == 0 {
        return Vec::new();
    }
    let mut above = total;
    let mut points = Vec::new();
    for (lo, width, count) in g.merged.hist.buckets() {
        above -= count.min(above);
        let x = lo.0 + width.0.saturating_sub(1);
        if above == 0 {
            break;
        }
        points.push((x, above as f64 / total as f64));
    }
    if let Some(max) = g.merged.max_ns {
        points.push((max, 1.0 / total as f64));
    }
    points
}

/// Renders the SVG document.
pub fn svg(c: &Comparison) -> String {
    let curves: Vec<Vec<(u64, f64)>> = c.groups.iter().map(exceedance).collect();
    let x_max = curves
        .iter()
        .flatten()
        .map(|p| p.0)
        .max()
        .unwrap_or(1)
        .max(1) as f64;
    let y_min = curves.iter().flatten().map(|p| p.1).fold(1.0_f64, f64::min);
    let decades = (-y_min.log10()).ceil().max(1.0);
    let px = |ns: f64| LEFT + ns / x_max * (W - LEFT - RIGHT);
    let py = |f: f64| TOP + (-f.log10() / decades) * (H - TOP - BOTTOM);
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{W}\" height=\"{H}\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"{W}\" height=\"{H}\" fill=\"white\"/>\n<text x=\"{LEFT}\" y=\"22\" font-size=\"14\">Fraction of wake-ups later than a latency (log scale)</text>\n"
    );
    axes(&mut s, x_max, decades, &px, &py);
    for (i, (g, curve)) in c.groups.iter().zip(&curves).enumerate() {
        let color = COLORS[i % COLORS.len()];
        let mut d = format!("M{:.1},{:.1}", px(0.0), py(1.0));
        for &(x, f) in curve {
            let _ = write!(d, " H{:.1} V{:.1}", px(x as f64), py(f));
        }
        let _ = writeln!(
            s,
            "<path d=\"{d}\" fill=\"none\" stroke=\"{color}\" stroke-width=\"1.5\"/>"
        );
        let y = TOP + 16.0 * (i as f64 + 1.0);
        let _ = writeln!(
            s,
            "<text x=\"{:.1}\" y=\"{y:.1}\" fill=\"{color}\" text-anchor=\"end\">{} {} ({} run{})</text>",
            W - RIGHT - 5.0,
            g.name,
            escape(&g.selector),
            g.runs.len(),
            if g.runs.len() == 1 { "" } else { "s" }
        );
    }
    s.push_str("</svg>\n");
    s
}

fn axes(
    s: &mut String,
    x_max: f64,
    decades: f64,
    px: &dyn Fn(f64) -> f64,
    py: &dyn Fn(f64) -> f64,
) {
    let (x0, x1, y0, y1) = (px(0.0), px(x_max), py(1.0), py(10f64.powf(-decades)));
    let _ = writeln!(
        s,
        "<path d=\"M{x0:.1},{y0:.1} V{y1:.1} H{x1:.1}\" fill=\"none\" stroke=\"black\"/>"
    );
    for k in 0..=decades as i32 {
        let y = py(10f64.powi(-k));
        let _ = writeln!(
            s,
            "<line x1=\"{x0:.1}\" y1=\"{y:.1}\" x2=\"{x1:.1}\" y2=\"{y:.1}\" stroke=\"#ddd\"/><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">1e-{k}</text>",
            x0 - 6.0,
            y + 4.0
        );
    }
    let step = tick_step(x_max / 1e3);
    for k in 0.. {
        let us = k as f64 * step;
        if us * 1e3 > x_max {
            break;
        }
        let x = px(us * 1e3);
        let label = (us * 1e3).round() / 1e3;
        let _ = writeln!(
            s,
            "<line x1=\"{x:.1}\" y1=\"{y1:.1}\" x2=\"{x:.1}\" y2=\"{:.1}\" stroke=\"black\"/><text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{label}</text>",
            y1 + 5.0,
            y1 + 20.0,
        );
    }
    let _ = writeln!(
        s,
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">latency (us)</text>",
        (x0 + x1) / 2.0,
        H - 8.0
    );
}

/// A round step (1, 2 or 5 × 10^k) giving at most about 5 ticks up to `max`.
fn tick_step(max: f64) -> f64 {
    let raw = (max / 5.0).max(1e-3);
    let mag = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * mag)
        .find(|&s| s >= raw)
        .unwrap_or(10.0 * mag)
}

fn escape(t: &str) -> String {
    t.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::model::Merged;
    use rtscope_core::{Histogram, Nanos};

    #[test]
    fn exceedance_falls_to_the_last_sample_and_ends_at_the_max() {
        let mut hist = Histogram::new();
        hist.record_n(Nanos(1_000), 90);
        hist.record_n(Nanos(2_000), 10);
        let g = Group {
            name: "A".into(),
            selector: "a&b".into(),
            runs: vec![],
            merged: Merged {
                hist,
                samples: 100,
                max_ns: Some(2_000),
                ..Merged::default()
            },
        };
        assert_eq!(exceedance(&g), vec![(1_000, 0.1), (2_000, 0.01)]);
        assert_eq!(tick_step(528.0), 200.0);
        assert_eq!(tick_step(40.0), 10.0);
    }
}
