//! Where a panel's legend goes so that it covers no data: the first corner (the panel's
//! preferred one, then upper right, upper left, lower right, lower left) whose legend box no
//! line, dot or marker crosses; when every corner holds data, the y axis is extended upwards
//! by the legend's height so the box sits above the data, or, for a legend taller than
//! [`MAX_HEADROOM`] of the plot, the legend is drawn beside the plot.
//!
//! Positions are tested in the panel's drawn (projected) coordinates, with the legend box
//! sized from its text (a generous estimate of DejaVu Sans at 12 px) and the plotting area
//! estimated from the panel's fixed margins.

use super::{Layout, MARGIN, TITLE, X_LABELS, Y_LABELS};
use crate::plot::{project, Corner, Panel, Series, Shape, MAX_LEGEND};
use plotters::style::RGBColor;

/// The legend's background colour (also how tests find the box in an SVG).
pub const FILL: RGBColor = RGBColor(253, 253, 253);
/// Gap between the legend box and the plotting area's edge, px.
pub const PAD: u32 = 8;
/// Height of one legend row, px.
pub const ROW: u32 = 17;
/// Width of one character of legend text, px (DejaVu Sans digits at 12 px are 7.6 px).
const CHAR_W: f64 = 7.6;

/// The series named in the legend, in order.
pub fn entries(p: &Panel) -> Vec<&Series> {
    p.series
        .iter()
        .filter(|s| !s.name.is_empty() && s.shape != Shape::Band)
        .collect()
}

/// The legend box of `entries`, (width, height) in px.
pub fn size(entries: &[&Series]) -> (u32, u32) {
    let chars = entries
        .iter()
        .map(|s| s.name.chars().count())
        .max()
        .unwrap_or(0);
    let w = 40.0 + CHAR_W * chars as f64;
    (w.ceil() as u32, ROW * entries.len() as u32 + 8)
}

/// Chooses the legend's corner in `l` (and adds headroom when none is free), for panel `p`
/// drawn in a cell of `cell` pixels.
pub fn place(p: &Panel, l: &mut Layout, cell: (u32, u32)) {
    let entries = entries(p);
    if entries.is_empty() || entries.len() > MAX_LEGEND {
        return;
    }
    let (w, h) = size(&entries);
    if p.series.iter().any(|s| s.shape == Shape::Cells) {
        // A heat map fills its plot: its legend (the colour key) goes beside it.
        l.outside = Some(w + PAD);
        l.legend = Some(Corner::UpperRight);
        return;
    }
    let right = if p.y2.is_some() {
        2 * Y_LABELS
    } else {
        Y_LABELS
    };
    let pw = cell.0.saturating_sub(2 * MARGIN + right).max(1) as f64;
    let ph = cell.1.saturating_sub(2 * MARGIN + X_LABELS + TITLE).max(1) as f64;
    // The box with a few px to spare, as a share of the plotting area.
    let (bw, bh) = ((w + PAD + 6) as f64 / pw, (h + PAD + 6) as f64 / ph);
    let lines = normalised(p, l);
    let mut order = vec![p.legend];
    order.extend([
        Corner::UpperRight,
        Corner::UpperLeft,
        Corner::LowerRight,
        Corner::LowerLeft,
    ]);
    for c in order {
        let b = corner_box(c, bw, bh);
        if !lines.iter().any(|line| crosses(line, b)) {
            l.legend = Some(c);
            return;
        }
    }
    if bh > MAX_HEADROOM && f64::from(w + PAD) <= MAX_STRIP * f64::from(cell.0) {
        // A tall legend over busy data: beside the plot instead of stretching the axis.
        l.outside = Some(w + PAD);
        l.legend = Some(Corner::UpperRight);
        return;
    }
    l.legend = Some(match p.legend {
        Corner::UpperLeft | Corner::LowerLeft => Corner::UpperLeft,
        _ => Corner::UpperRight,
    });
    // A legend too wide for a strip beside a small panel goes above the data, whatever its
    // height: the plot keeps its width.
    add_headroom(l, bh.min(MAX_TALL_HEADROOM));
}

/// The widest legend strip beside a plot, as a share of its cell: a wider legend (long names
/// in a small panel of a grid) would squash the plot, so it goes above the data instead.
pub const MAX_STRIP: f64 = 0.3;
/// The most headroom a legend that cannot go beside the plot takes.
pub const MAX_TALL_HEADROOM: f64 = 0.7;

/// The largest share of the y axis added as headroom for a legend; a taller legend is drawn
/// beside the plot.
pub const MAX_HEADROOM: f64 = 0.3;

/// Extends the y axis so its top `share` holds no data.
pub fn add_headroom(l: &mut Layout, share: f64) {
    let (y0, y1) = l.y_fit;
    l.y = (y0, y0 + (y1 - y0) / (1.0 - share));
    if let Some((s0, s1)) = l.y2 {
        let fit = s0 + (s1 - s0) * (1.0 - l.headroom);
        l.y2 = Some((s0, s0 + (fit - s0) / (1.0 - share)));
    }
    l.headroom = share;
}

/// Each series as a polyline in [0, 1]² of the plotting area (x right, y up); a series drawn
/// as single points becomes one-point lines.
fn normalised(p: &Panel, l: &Layout) -> Vec<Vec<(f64, f64)>> {
    let ((x0, x1), (y0, y1)) = (l.x, l.y);
    let mut out = Vec::new();
    for s in &p.series {
        let (lo, hi) = match (s.secondary, l.y2) {
            (true, Some(r)) => r,
            _ => (y0, y1),
        };
        let pts = s.points.iter().map(|&(x, y)| {
            let y = if s.secondary {
                y
            } else {
                project(p.y.scale, y, lo)
            };
            (
                ((l.x_of(p.x.scale, x) - x0) / (x1 - x0)).clamp(0.0, 1.0),
                ((y - lo) / (hi - lo)).clamp(0.0, 1.0),
            )
        });
        match s.shape {
            Shape::Line | Shape::Band => out.push(pts.collect()),
            Shape::MaxMarker | Shape::Dots | Shape::Cells => out.extend(pts.map(|q| vec![q])),
        }
    }
    out
}

type Rect = (f64, f64, f64, f64);

fn corner_box(c: Corner, bw: f64, bh: f64) -> Rect {
    let (x0, x1) = match c {
        Corner::UpperLeft | Corner::LowerLeft => (0.0, bw),
        _ => (1.0 - bw, 1.0),
    };
    let (y0, y1) = match c {
        Corner::UpperLeft | Corner::UpperRight => (1.0 - bh, 1.0),
        _ => (0.0, bh),
    };
    (x0, y0, x1, y1)
}

/// Whether a polyline touches a rectangle (x0, y0, x1, y1).
pub fn crosses(line: &[(f64, f64)], r: Rect) -> bool {
    let inside = |&(x, y): &(f64, f64)| x >= r.0 && x <= r.2 && y >= r.1 && y <= r.3;
    if line.iter().any(inside) {
        return true;
    }
    line.windows(2).any(|w| segment_hits(w[0], w[1], r))
}

/// Liang–Barsky: whether the segment a–b passes through the rectangle.
fn segment_hits(a: (f64, f64), b: (f64, f64), r: Rect) -> bool {
    let (dx, dy) = (b.0 - a.0, b.1 - a.1);
    let (mut t0, mut t1) = (0.0f64, 1.0f64);
    for (p, q) in [
        (-dx, a.0 - r.0),
        (dx, r.2 - a.0),
        (-dy, a.1 - r.1),
        (dy, r.3 - a.1),
    ] {
        if p == 0.0 {
            if q < 0.0 {
                return false;
            }
            continue;
        }
        let t = q / p;
        if p < 0.0 {
            t0 = t0.max(t);
        } else {
            t1 = t1.min(t);
        }
        if t0 > t1 {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_that_cross_a_box_are_caught() {
        let r = (0.4, 0.4, 0.6, 0.6);
        assert!(crosses(&[(0.0, 0.5), (1.0, 0.5)], r));
        assert!(crosses(&[(0.5, 0.5)], r));
        assert!(!crosses(&[(0.0, 0.0), (1.0, 0.1)], r));
        assert!(!crosses(&[(0.0, 0.9), (0.3, 0.3)], r));
    }
}
