//! A small figure model (panels of line series on linear or log axes) and its rendering to SVG
//! and PNG with plotters. Every chart of the report is a [`Figure`]; the functions that build
//! them live in the `figures` module.
//!
//! Log axes are drawn as linear axes over `log10(value)` with ticks labelled at whole decades,
//! so values of zero (an empty histogram bin) are clamped to the bottom of the axis instead of
//! disappearing.

use crate::ReportError;
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::FontStyle;
use std::sync::Once;

/// The font family named in plots: the embedded DejaVu Sans renders PNG text; SVG text names
/// the same family with fallbacks for the browser.
pub const FONT_FAMILY: &str = "DejaVu Sans, Verdana, Arial, sans-serif";

static FONT: &[u8] = include_bytes!("../fonts/DejaVuSans-subset.ttf");

/// Ten distinct colours (Tableau 10), then the same hues darker, so twenty series stay apart.
const PALETTE: [(u8, u8, u8); 10] = [
    (31, 119, 180),
    (255, 127, 14),
    (44, 160, 44),
    (214, 39, 40),
    (148, 103, 189),
    (140, 86, 75),
    (227, 119, 194),
    (127, 127, 127),
    (188, 189, 34),
    (23, 190, 207),
];

/// The colour of series number `i`.
pub fn colour(i: usize) -> RGBColor {
    let (r, g, b) = PALETTE[i % PALETTE.len()];
    if (i / PALETTE.len()) % 2 == 1 {
        RGBColor(r / 2, g / 2, b / 2)
    } else {
        RGBColor(r, g, b)
    }
}

/// How an axis maps values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    /// Linear.
    Linear,
    /// Base-10 logarithmic; values <= 0 are drawn at the bottom of the axis.
    Log,
    /// Linear over "nines" (`x = −log10(1 − q)`), labelled as percentiles (p90, p99, …).
    Nines,
}

/// One axis of a panel.
#[derive(Debug, Clone)]
pub struct Axis {
    /// Label with unit, e.g. `latency (µs)`.
    pub label: String,
    /// Scale.
    pub scale: Scale,
    /// Range in data units; `None` fits the data.
    pub range: Option<(f64, f64)>,
}

impl Axis {
    /// A linear axis fitted to the data.
    pub fn linear(label: impl Into<String>) -> Axis {
        Axis {
            label: label.into(),
            scale: Scale::Linear,
            range: None,
        }
    }
    /// A log axis fitted to the data.
    pub fn log(label: impl Into<String>) -> Axis {
        Axis {
            scale: Scale::Log,
            ..Axis::linear(label)
        }
    }
}

/// One line of a panel.
#[derive(Debug, Clone)]
pub struct Series {
    /// Legend text (empty: not in the legend).
    pub name: String,
    /// Points in data units.
    pub points: Vec<(f64, f64)>,
    /// Palette index (see [`colour`]).
    pub colour: usize,
    /// Drawn thin and translucent (e.g. a p99 line under a max line).
    pub faint: bool,
    /// Plotted against the panel's secondary y axis.
    pub secondary: bool,
    /// A dot on every point (for few, meaningful points such as percentiles).
    pub markers: bool,
    /// With `markers`: points whose entry here is true are drawn hollow (resting on too few
    /// samples); missing entries are solid.
    pub weak: Vec<bool>,
    /// How the points are drawn.
    pub shape: Shape,
    /// Points of value 0 are left out and break the line (rates: "nothing happened" is a gap,
    /// not a saw-tooth down to the floor of a log axis).
    pub gaps_at_zero: bool,
}

/// How a series is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// A line (with dots when `markers`).
    Line,
    /// Each point as a large × without a line: the exact maximum of a distribution.
    MaxMarker,
}

impl Series {
    /// A solid line on the primary axis.
    pub fn new(name: impl Into<String>, colour: usize, points: Vec<(f64, f64)>) -> Series {
        Series {
            name: name.into(),
            points,
            colour,
            faint: false,
            secondary: false,
            markers: false,
            weak: Vec::new(),
            shape: Shape::Line,
            gaps_at_zero: false,
        }
    }
}

/// One chart: title, axes and lines.
#[derive(Debug, Clone)]
pub struct Panel {
    /// Title drawn above the chart.
    pub title: String,
    /// Horizontal axis.
    pub x: Axis,
    /// Vertical axis.
    pub y: Axis,
    /// Optional right-hand axis (always linear) for series marked `secondary`.
    pub y2: Option<Axis>,
    /// The lines.
    pub series: Vec<Series>,
    /// Where the legend goes (pick the corner the data leaves empty).
    pub legend: Corner,
}

/// A corner of a panel for its legend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Corner {
    /// Top left.
    UpperLeft,
    /// Top right.
    UpperRight,
    /// Bottom right.
    LowerRight,
}

/// Most legend entries drawn; a panel with more named lines is drawn without a legend.
pub const MAX_LEGEND: usize = 24;

/// A picture: one or more panels in a grid.
#[derive(Debug, Clone)]
pub struct Figure {
    /// Width in pixels.
    pub width: u32,
    /// Height of one panel in pixels.
    pub panel_height: u32,
    /// Panels per row.
    pub columns: u32,
    /// The panels, row by row.
    pub panels: Vec<Panel>,
}

impl Figure {
    /// A one-panel figure of 960 × 540 pixels.
    pub fn single(panel: Panel) -> Figure {
        Figure {
            width: 960,
            panel_height: 540,
            columns: 1,
            panels: vec![panel],
        }
    }
    /// Total size in pixels.
    pub fn size(&self) -> (u32, u32) {
        let rows = (self.panels.len() as u32)
            .div_ceil(self.columns.max(1))
            .max(1);
        (self.width, rows * self.panel_height)
    }
}

fn ensure_font() {
    static REGISTER: Once = Once::new();
    REGISTER.call_once(|| {
        // The subset is compiled in and known to parse (a unit test checks it).
        let _ = plotters::style::register_font(FONT_FAMILY, FontStyle::Normal, FONT);
    });
}

/// Renders a figure as an SVG document.
pub fn to_svg(fig: &Figure) -> Result<String, ReportError> {
    ensure_font();
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, fig.size()).into_drawing_area();
        draw_figure(&root, fig)?;
        root.present().map_err(plot_err)?;
    }
    Ok(out)
}

/// Renders a figure as PNG bytes (RGB, 8 bit).
pub fn to_png(fig: &Figure) -> Result<Vec<u8>, ReportError> {
    ensure_font();
    let (w, h) = fig.size();
    let mut rgb = vec![255u8; (w as usize) * (h as usize) * 3];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, (w, h)).into_drawing_area();
        draw_figure(&root, fig)?;
        root.present().map_err(plot_err)?;
    }
    let mut png_bytes = Vec::new();
    let mut enc = png::Encoder::new(&mut png_bytes, w, h);
    enc.set_color(png::ColorType::Rgb);
    enc.set_depth(png::BitDepth::Eight);
    enc.set_compression(png::Compression::Default);
    let mut writer = enc.write_header().map_err(png_err)?;
    writer.write_image_data(&rgb).map_err(png_err)?;
    writer.finish().map_err(png_err)?;
    Ok(png_bytes)
}

fn png_err(e: png::EncodingError) -> ReportError {
    ReportError::Render(format!("PNG encoding: {e}"))
}

fn plot_err(e: impl std::fmt::Display) -> ReportError {
    ReportError::Render(e.to_string())
}

fn draw_figure<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    fig: &Figure,
) -> Result<(), ReportError> {
    root.fill(&WHITE).map_err(plot_err)?;
    let (_, h) = fig.size();
    let rows = (h / fig.panel_height.max(1)).max(1) as usize;
    let areas = root.split_evenly((rows, fig.columns.max(1) as usize));
    for (area, panel) in areas.iter().zip(&fig.panels) {
        draw_panel(area, panel)?;
    }
    Ok(())
}

/// Maps a value onto the drawn (linear) coordinate of an axis.
pub fn project(scale: Scale, v: f64, floor: f64) -> f64 {
    match scale {
        Scale::Log if v > 0.0 => v.log10().max(floor),
        Scale::Log => floor,
        _ => v,
    }
}

/// The drawn range of an axis over some values, padded a little.
fn drawn_range(axis: &Axis, values: impl Iterator<Item = f64>) -> (f64, f64) {
    if let Some((lo, hi)) = axis.range {
        let f = |v: f64| project(axis.scale, v, f64::MIN);
        return (f(lo), f(hi).max(f(lo) + 1e-9));
    }
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    let mut zeros = false;
    for v in values.filter(|v| v.is_finite()) {
        if axis.scale == Scale::Log && v <= 0.0 {
            zeros = true;
            continue;
        }
        let p = project(axis.scale, v, f64::MIN);
        lo = lo.min(p);
        hi = hi.max(p);
    }
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    match axis.scale {
        Scale::Log => {
            let bottom = if zeros { lo.floor() - 0.3 } else { lo.floor() };
            (bottom, hi.ceil().max(lo.floor() + 1.0))
        }
        Scale::Nines => (0.0, hi.ceil().max(1.0)),
        Scale::Linear => {
            let pad = ((hi - lo) * 0.05).max(hi.abs() * 0.05).max(1e-9);
            (if lo >= 0.0 { 0.0 } else { lo - pad }, hi + pad)
        }
    }
}

/// A tick label: plain numbers, whole decades, or percentiles for "nines".
pub fn tick_label(scale: Scale, v: f64) -> String {
    match scale {
        Scale::Linear => crate::fmt_num(v),
        Scale::Log => {
            if (v - v.round()).abs() > 1e-6 {
                return String::new();
            }
            crate::fmt_num(10f64.powi(v.round() as i32))
        }
        Scale::Nines => {
            if (v - v.round()).abs() > 1e-6 || v < 0.5 {
                return String::new();
            }
            let nines = v.round() as usize;
            format!("p{}", nines_label(nines))
        }
    }
}

fn nines_label(nines: usize) -> String {
    match nines {
        1 => "90".into(),
        n => format!("99.{}", "9".repeat(n - 2))
            .trim_end_matches('.')
            .to_string(),
    }
}

fn draw_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    p: &Panel,
) -> Result<(), ReportError> {
    let all_x = p.series.iter().flat_map(|s| s.points.iter().map(|q| q.0));
    let (x0, x1) = drawn_range(&p.x, all_x);
    let prim = || p.series.iter().filter(|s| !s.secondary);
    let (y0, y1) = drawn_range(&p.y, prim().flat_map(|s| s.points.iter().map(|q| q.1)));
    let mut builder = ChartBuilder::on(area);
    builder
        .caption(&p.title, font(17))
        .margin(12)
        .x_label_area_size(44)
        .y_label_area_size(70);
    if p.y2.is_some() {
        builder.right_y_label_area_size(70);
    }
    let mut chart = builder
        .build_cartesian_2d(x0..x1, y0..y1)
        .map_err(plot_err)?;
    let Some(y2) = &p.y2 else {
        mesh(&mut chart, p)?;
        for s in prim() {
            draw_line(&mut chart, s, projected(p, s, (x0, x1, y0, y1)))?;
        }
        return legend(&mut chart, p);
    };
    let sec: Vec<&Series> = p.series.iter().filter(|s| s.secondary).collect();
    let (s0, s1) = drawn_range(y2, sec.iter().flat_map(|s| s.points.iter().map(|q| q.1)));
    let mut dual = chart.set_secondary_coord(x0..x1, s0..s1);
    mesh(&mut dual, p)?;
    dual.configure_secondary_axes()
        .y_desc(y2.label.as_str())
        .label_style(font(12))
        .axis_desc_style(font(13))
        .y_label_formatter(&|v| crate::fmt_num(*v))
        .draw()
        .map_err(plot_err)?;
    for s in prim() {
        draw_line(&mut dual, s, projected(p, s, (x0, x1, y0, y1)))?;
    }
    for s in sec {
        let style = style_of(s);
        let (lo, hi) = (x0.min(x1), x0.max(x1));
        let inside = s.points.iter().copied().filter(|p| p.0 >= lo && p.0 <= hi);
        let anno = dual
            .draw_secondary_series(LineSeries::new(inside, style))
            .map_err(plot_err)?;
        if !s.name.is_empty() {
            anno.label(s.name.as_str())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], style));
        }
    }
    legend(&mut dual, p)
}

fn font(size: u32) -> FontDesc<'static> {
    (FONT_FAMILY, size).into_font()
}

/// A series' points in drawn coordinates, clamped into the panel (nothing is drawn outside
/// its axes, whatever range a shared axis imposes).
fn projected(p: &Panel, s: &Series, (x0, x1, y0, y1): (f64, f64, f64, f64)) -> Vec<(f64, f64)> {
    let (xs, ys) = (p.x.scale, p.y.scale);
    s.points
        .iter()
        .map(|&(x, y)| {
            (
                project(xs, x, x0).clamp(x0, x1),
                project(ys, y, y0).clamp(y0, y1),
            )
        })
        .collect()
}

fn mesh<'a, DB: DrawingBackend + 'a>(
    chart: &mut Chart<'a, DB>,
    p: &Panel,
) -> Result<(), ReportError> {
    let (xs, ys) = (p.x.scale, p.y.scale);
    let xf = move |v: &f64| tick_label(xs, *v);
    let yf = move |v: &f64| tick_label(ys, *v);
    let (x0, x1) = (chart.x_range().start, chart.x_range().end);
    let (y0, y1) = (chart.y_range().start, chart.y_range().end);
    let mut mesh = chart.configure_mesh();
    mesh.x_desc(p.x.label.as_str())
        .y_desc(p.y.label.as_str())
        .label_style(font(12))
        .axis_desc_style(font(13))
        .x_label_formatter(&xf)
        .y_label_formatter(&yf)
        .light_line_style(WHITE)
        .bold_line_style(RGBColor(225, 225, 225));
    if xs == Scale::Nines {
        mesh.x_labels(((x1 - x0) * 2.0) as usize + 1);
    }
    if ys == Scale::Log {
        mesh.y_labels(((y1 - y0).ceil() as usize + 1).max(2));
    }
    mesh.draw().map_err(plot_err)
}

type Chart<'a, DB> = ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

fn style_of(s: &Series) -> ShapeStyle {
    let c = colour(s.colour);
    if s.faint {
        c.mix(0.45).stroke_width(1)
    } else {
        c.stroke_width(2)
    }
}

fn draw_line<DB: DrawingBackend>(
    chart: &mut Chart<'_, DB>,
    s: &Series,
    pts: Vec<(f64, f64)>,
) -> Result<(), ReportError> {
    let style = style_of(s);
    if s.shape == Shape::MaxMarker {
        let marks = pts.iter().map(|&p| Cross::new(p, 6, style.stroke_width(3)));
        let anno = chart.draw_series(marks).map_err(plot_err)?;
        if !s.name.is_empty() {
            anno.label(s.name.as_str())
                .legend(move |(x, y)| Cross::new((x + 10, y), 4, style.stroke_width(2)));
        }
        return Ok(());
    }
    if s.markers {
        let dots = pts.iter().enumerate().map(|(i, &p)| {
            let hollow = s.weak.get(i).copied().unwrap_or(false);
            let fill = if hollow {
                WHITE.filled()
            } else {
                style.filled()
            };
            EmptyElement::at(p)
                + Circle::new((0, 0), 4, fill)
                + Circle::new((0, 0), 4, style.stroke_width(1))
        });
        chart.draw_series(dots).map_err(plot_err)?;
    }
    let anno = if s.gaps_at_zero {
        let mut segments: Vec<Vec<(f64, f64)>> = vec![Vec::new()];
        for (p, orig) in pts.iter().zip(&s.points) {
            match (orig.1 > 0.0, segments.last_mut()) {
                (true, Some(seg)) => seg.push(*p),
                (false, Some(seg)) if !seg.is_empty() => segments.push(Vec::new()),
                _ => {}
            }
        }
        segments.retain(|g| !g.is_empty());
        if segments.is_empty() {
            return Ok(());
        }
        let first = segments.remove(0);
        for seg in segments {
            chart
                .draw_series(LineSeries::new(seg, style))
                .map_err(plot_err)?;
        }
        chart
            .draw_series(LineSeries::new(first, style))
            .map_err(plot_err)?
    } else {
        chart
            .draw_series(LineSeries::new(pts, style))
            .map_err(plot_err)?
    };
    if !s.name.is_empty() {
        anno.label(s.name.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], style));
    }
    Ok(())
}

fn legend<'a, DB: DrawingBackend + 'a>(
    chart: &mut Chart<'a, DB>,
    p: &Panel,
) -> Result<(), ReportError> {
    let named = p.series.iter().filter(|s| !s.name.is_empty()).count();
    if named == 0 || named > MAX_LEGEND {
        return Ok(());
    }
    let position = match p.legend {
        Corner::UpperLeft => SeriesLabelPosition::UpperLeft,
        Corner::UpperRight => SeriesLabelPosition::UpperRight,
        Corner::LowerRight => SeriesLabelPosition::LowerRight,
    };
    chart
        .configure_series_labels()
        .position(position)
        .background_style(WHITE.mix(0.85))
        .border_style(RGBColor(160, 160, 160))
        .label_font((FONT_FAMILY, 12).into_font())
        .draw()
        .map_err(plot_err)
}
