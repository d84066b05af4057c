//! Drawing a [`Figure`] with plotters: each panel's ranges and legend place are decided first
//! ([`Layout`], see [`legend`]), then the mesh, the series and the legend are drawn.
//! Every point is clamped into its panel.

pub(crate) mod legend;

use crate::plot::{
    colour, date_label, drawn_range, hours_label, latency_decade, plot_err, project, tick_label,
    without_us, Corner, Dash, Figure, Panel, Scale, Series, Shape, DATE_DAYS_S, DATE_MINUTES_S,
    FONT_FAMILY, LONG_RUN_S, NEUTRAL, NINES_P50,
};
use crate::ReportError;
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters::style::FontStyle;
use std::sync::Once;

/// An upright cross (+) of half-size `r` px centred on `at`, drawn with `style`.
macro_rules! plus {
    ($at:expr, $r:expr, $style:expr) => {
        EmptyElement::at($at)
            + PathElement::new([(-$r, 0), (($r), 0)], $style)
            + PathElement::new([(0, -$r), (0, ($r))], $style)
    };
}

/// Outer margin of a panel, px.
pub(crate) const MARGIN: u32 = 12;
/// Height of the x tick labels and axis label, px.
pub(crate) const X_LABELS: u32 = 44;
/// Width of the y tick labels and axis label (each side), px.
pub(crate) const Y_LABELS: u32 = 70;
/// Height of a panel's title, px.
pub(crate) const TITLE: u32 = 28;

/// A panel's drawn ranges (in projected units: log10 for log axes, hours for long time axes)
/// and its legend's corner, decided before anything is drawn.
#[derive(Debug, Clone)]
pub struct Layout {
    /// The x range drawn.
    pub x: (f64, f64),
    /// The y range drawn (with headroom for the legend when no corner is free).
    pub y: (f64, f64),
    /// The y range the data asks for, before headroom.
    pub y_fit: (f64, f64),
    /// The secondary y range.
    pub y2: Option<(f64, f64)>,
    /// The unit a time or date axis is drawn in.
    pub x_unit: XUnit,
    /// The legend's corner; `None`: no legend.
    pub legend: Option<Corner>,
    /// The share of the y axis added on top so the legend covers no data (0: none needed).
    pub headroom: f64,
    /// Width (px) of a strip right of the plot that holds the legend instead of a corner.
    pub outside: Option<u32>,
}

/// The unit a time or date axis is drawn in (its values are in s).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum XUnit {
    /// Seconds (or no time at all).
    Plain,
    /// Minutes: a date axis of a few hours.
    Minutes,
    /// Hours: a long run's h:mm, or a date axis of a few days.
    Hours,
    /// Days: a long date axis.
    Days,
}

impl XUnit {
    /// The unit of an axis of `scale` spanning `x0..x1` (s).
    fn of(scale: Scale, x0: f64, x1: f64) -> XUnit {
        match scale {
            Scale::Time if x1 > LONG_RUN_S => XUnit::Hours,
            Scale::Date if x1 - x0 > DATE_DAYS_S => XUnit::Days,
            Scale::Date if x1 - x0 > DATE_MINUTES_S => XUnit::Hours,
            Scale::Date => XUnit::Minutes,
            _ => XUnit::Plain,
        }
    }

    /// Seconds per unit.
    fn seconds(self) -> f64 {
        match self {
            XUnit::Plain => 1.0,
            XUnit::Minutes => 60.0,
            XUnit::Hours => 3600.0,
            XUnit::Days => 86_400.0,
        }
    }
}

impl Layout {
    /// Where `v` goes on the drawn x axis.
    pub fn x_of(&self, scale: Scale, v: f64) -> f64 {
        project(scale, v / self.x_unit.seconds(), self.x.0)
    }
}

/// The layout of panel `p` drawn in a cell of `cell` pixels.
pub fn layout(p: &Panel, cell: (u32, u32)) -> Layout {
    let all_x = p.series.iter().flat_map(|s| s.points.iter().map(|q| q.0));
    let (mut x0, mut x1) = drawn_range(&p.x, all_x);
    let x_unit = XUnit::of(p.x.scale, x0, x1);
    (x0, x1) = (x0 / x_unit.seconds(), x1 / x_unit.seconds());
    let prim = p.series.iter().filter(|s| !s.secondary);
    let y = drawn_range(&p.y, prim.flat_map(|s| s.points.iter().map(|q| q.1)));
    let sec = p.series.iter().filter(|s| s.secondary);
    let y2 =
        p.y2.as_ref()
            .map(|a| drawn_range(a, sec.flat_map(|s| s.points.iter().map(|q| q.1))));
    let mut l = Layout {
        x: (x0, x1),
        y,
        y_fit: y,
        y2,
        x_unit,
        legend: None,
        headroom: 0.0,
        outside: None,
    };
    legend::place(p, &mut l, cell);
    l
}

/// Size of a panel title's font, px.
pub(crate) const TITLE_FONT: u32 = 17;
/// A generous width of one title character at [`TITLE_FONT`] when the font cannot measure
/// (DejaVu Sans averages 0.58 em; 0.62 em leaves room for wide letters).
const TITLE_CHAR_W: f64 = 0.62 * TITLE_FONT as f64;

/// A title's width, px, as the embedded font draws it in a PNG (an SVG draws it smaller, at
/// 17/1.24 px); estimated generously if the font cannot measure it.
pub(crate) fn title_width(text: &str) -> f64 {
    ensure_font();
    match font(TITLE_FONT).box_size(text) {
        Ok((w, _)) => f64::from(w),
        Err(_) => text.chars().count() as f64 * TITLE_CHAR_W,
    }
}

/// `title` as drawn in `width` px: whole when it fits; else without what comes before ` — `
/// (the figure's caption says what the panels are); else its middle replaced by `…`, keeping
/// its start and its end (where `(run N)` is). The full title goes into a tooltip.
pub fn fit_title(title: &str, width: u32) -> String {
    let max = f64::from(width);
    if title_width(title) <= max {
        return title.to_string();
    }
    let short = title.split_once(" — ").map_or(title, |(_, rest)| rest);
    if title_width(short) <= max {
        return short.to_string();
    }
    let chars: Vec<char> = short.chars().collect();
    let tail = (chars.len() / 3).min(12);
    let end: String = chars[chars.len() - tail..].iter().collect();
    for keep in (0..chars.len() - tail).rev() {
        let head: String = chars[..keep].iter().collect();
        let t = format!("{}…{end}", head.trim_end());
        if title_width(&t) <= max {
            return t;
        }
    }
    "…".into()
}

/// The width a panel's title may take in a cell `cell_w` px wide (less a legend strip).
fn title_room(cell_w: u32, l: &Layout) -> u32 {
    cell_w.saturating_sub(2 * MARGIN + l.outside.map_or(0, |w| w + MARGIN))
}

/// Draws every panel of `fig` into `root`. Panels whose y range is shared (set by the figure)
/// get the same legend headroom, so they keep one scale. Returns the titles shortened to fit
/// their cell: (as drawn, in full).
pub fn figure<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    fig: &Figure,
) -> Result<Vec<(String, String)>, ReportError> {
    let fig = fig.printable();
    draw_cells(root, &fig, &fig.panels, &layouts(&fig))
}

/// The layout of every panel of `fig`, with one legend headroom for the panels whose y range
/// the figure shares.
fn layouts(fig: &Figure) -> Vec<Layout> {
    let cols = fig.columns.max(1);
    let cell = (fig.width / cols, fig.panel_height);
    let mut layouts: Vec<Layout> = fig.panels.iter().map(|p| layout(p, cell)).collect();
    let shared = layouts.iter().map(|l| l.headroom).fold(0.0, f64::max);
    for (l, p) in layouts.iter_mut().zip(&fig.panels) {
        if p.y.range.is_some() && l.headroom < shared {
            legend::add_headroom(l, shared);
        }
    }
    layouts
}

/// Draws `panels` (whole rows of `fig`'s grid, laid out as `layouts`) into `root`, which is as
/// high as their rows.
fn draw_cells<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    fig: &Figure,
    panels: &[Panel],
    layouts: &[Layout],
) -> Result<Vec<(String, String)>, ReportError> {
    root.fill(&WHITE).map_err(plot_err)?;
    let cols = fig.columns.max(1);
    let cell = (fig.width / cols, fig.panel_height);
    let rows = panels.len().div_ceil(cols as usize).max(1);
    let areas = root.split_evenly((rows, cols as usize));
    let mut shortened = Vec::new();
    for ((area, panel), l) in areas.iter().zip(panels).zip(layouts) {
        let title = fit_title(&panel.title, title_room(cell.0, l));
        if title != panel.title {
            shortened.push((title.clone(), panel.title.clone()));
        }
        match l.outside {
            Some(w) => {
                let (aw, _) = area.dim_in_pixel();
                let (plot, side) = area.split_horizontally(aw.saturating_sub(w + MARGIN));
                draw_panel(&plot, panel, l, &title)?;
                let top = (MARGIN + TITLE) as i32;
                legend_box(&side, panel, (0, top))?;
            }
            None => draw_panel(area, panel, l, &title)?,
        }
    }
    Ok(shortened)
}

/// Gives each shortened title of an SVG its full text as a tooltip (an SVG `<title>`).
fn add_title_tooltips(svg: String, shortened: &[(String, String)]) -> String {
    let mut svg = svg;
    for (shown, full) in shortened {
        // plotters writes a text's content on a line of its own.
        let shown = crate::escape::escape(shown);
        let Some(at) = [format!(">\n{shown}\n</text>"), format!(">{shown}</text>")]
            .iter()
            .find_map(|t| svg.find(t.as_str()))
        else {
            continue;
        };
        let tip = format!("<title>{}</title>", crate::escape::escape(full));
        svg.insert_str(at + 1, &tip);
    }
    svg
}

fn draw_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    p: &Panel,
    l: &Layout,
    title: &str,
) -> Result<(), ReportError> {
    let ((x0, x1), (y0, y1)) = (l.x, l.y);
    let mut builder = ChartBuilder::on(area);
    builder
        .caption(title, font(TITLE_FONT))
        .margin(MARGIN)
        .x_label_area_size(X_LABELS)
        .y_label_area_size(Y_LABELS);
    if p.y2.is_some() {
        builder.right_y_label_area_size(Y_LABELS);
    }
    let mut chart = builder
        .build_cartesian_2d(x0..x1, y0..y1)
        .map_err(plot_err)?;
    let (Some(y2), Some((s0, s1))) = (&p.y2, l.y2) else {
        mesh(&mut chart, area, p, l)?;
        for s in p.series.iter().filter(|s| !s.secondary) {
            draw_series(&mut chart, s, projected(p, s, l))?;
        }
        return draw_legend(&chart, area, p, l);
    };
    let mut dual = chart.set_secondary_coord(x0..x1, s0..s1);
    mesh(&mut dual, area, p, l)?;
    dual.configure_secondary_axes()
        .y_desc(y2.label.as_str())
        .label_style(font(12))
        .axis_desc_style(font(13))
        .y_label_formatter(&|v| crate::fmt_num(*v))
        .draw()
        .map_err(plot_err)?;
    for s in p.series.iter().filter(|s| !s.secondary) {
        draw_series(&mut dual, s, projected(p, s, l))?;
    }
    for s in p.series.iter().filter(|s| s.secondary) {
        let pts: Vec<(f64, f64)> = s
            .points
            .iter()
            .map(|&(x, y)| (l.x_of(p.x.scale, x), y))
            .filter(|q| q.0 >= x0.min(x1) && q.0 <= x0.max(x1))
            .map(|(x, y)| (x, y.clamp(s0.min(s1), s0.max(s1))))
            .collect();
        dual.draw_secondary_series(LineSeries::new(pts, style_of(s)))
            .map_err(plot_err)?;
    }
    draw_legend(&dual, area, p, l)
}

pub(crate) fn font(size: u32) -> FontDesc<'static> {
    (FONT_FAMILY, size).into_font()
}

/// A series' points in drawn coordinates, clamped into the panel (nothing is drawn outside
/// its axes, whatever range a shared axis imposes).
fn projected(p: &Panel, s: &Series, l: &Layout) -> Vec<(f64, f64)> {
    let ((x0, x1), (y0, y1)) = (l.x, l.y);
    s.points
        .iter()
        .map(|&(x, y)| {
            (
                l.x_of(p.x.scale, x).clamp(x0, x1),
                project(p.y.scale, y, y0).clamp(y0, y1),
            )
        })
        .collect()
}

type Chart<'a, DB> = ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

fn mesh<'a, DB: DrawingBackend + 'a>(
    chart: &mut Chart<'a, DB>,
    area: &DrawingArea<DB, Shift>,
    p: &Panel,
    l: &Layout,
) -> Result<(), ReportError> {
    let (xs, ys) = (p.x.scale, p.y.scale);
    let unit = l.x_unit;
    // A log latency axis labels its decades with their unit (`1 ms`, not `1000`).
    let (x_us, y_us) = (
        xs == Scale::Log && p.x.latency_us,
        ys == Scale::Log && p.y.latency_us,
    );
    let xf = move |v: &f64| match (xs, unit) {
        (Scale::Time, XUnit::Hours) => hours_label(*v),
        (Scale::Date, _) => date_label(*v, unit.seconds()),
        _ if x_us => latency_decade(*v),
        _ => tick_label(xs, *v),
    };
    let yf = move |v: &f64| {
        if y_us {
            latency_decade(*v)
        } else {
            tick_label(ys, *v)
        }
    };
    let x_desc = match (xs, unit) {
        (Scale::Time, XUnit::Hours) => format!("{} (h:mm)", p.x.label),
        (Scale::Time, _) => format!("{} (s)", p.x.label),
        (Scale::Date, _) => format!("{} (UTC)", p.x.label),
        _ if x_us => without_us(&p.x.label),
        _ => p.x.label.clone(),
    };
    let y_desc = if y_us {
        without_us(&p.y.label)
    } else {
        p.y.label.clone()
    };
    let (y0, y1) = l.y;
    let mut mesh = chart.configure_mesh();
    mesh.x_desc(x_desc)
        .y_desc(y_desc)
        .label_style(font(12))
        .axis_desc_style(font(13))
        .x_label_formatter(&xf)
        .y_label_formatter(&yf)
        .light_line_style(WHITE)
        .bold_line_style(RGBColor(225, 225, 225));
    if matches!(xs, Scale::Nines | Scale::Category) {
        // Ticks at p50 and every whole "nine", or at each category, each labelled, drawn below.
        mesh.x_labels(0).disable_x_mesh();
    }
    if ys == Scale::Log {
        mesh.y_labels(((y1 - y0).ceil() as usize + 1).max(2));
    }
    if xs == Scale::Log {
        mesh.x_labels(((l.x.1 - l.x.0).ceil() as usize + 1).max(2));
    }
    mesh.draw().map_err(plot_err)?;
    hand_ticks(chart, area, p, l)
}

/// The x ticks plotters does not draw: a "nines" axis's p50, p90, p99, …; a categorical
/// axis's names, each cut to its slot.
fn hand_ticks<DB: DrawingBackend>(
    chart: &mut Chart<'_, DB>,
    area: &DrawingArea<DB, Shift>,
    p: &Panel,
    l: &Layout,
) -> Result<(), ReportError> {
    match p.x.scale {
        Scale::Nines => {
            let (x0, x1) = l.x;
            let ticks = std::iter::once(NINES_P50)
                .chain((1..=x1.floor() as i32).map(f64::from))
                .filter(|&v| v >= x0 && v <= x1)
                .map(|v| (v, tick_label(Scale::Nines, v)))
                .collect();
            labelled_ticks(chart, area, l, ticks, true)?;
        }
        Scale::Category => {
            // Each name cut to its slot's width (≈ 7 px a character at 12 px).
            let n = p.x.categories.len().max(1) as i32;
            let (left, _) = chart.backend_coord(&(l.x.0, l.y.0));
            let (right, _) = chart.backend_coord(&(l.x.1, l.y.0));
            let room = (((right - left) / n) / 7).max(3) as usize;
            let ticks =
                p.x.categories
                    .iter()
                    .enumerate()
                    .map(|(i, name)| (i as f64, rtscope_core::text::clip(name, room).into_owned()))
                    .collect();
            labelled_ticks(chart, area, l, ticks, false)?;
        }
        _ => {}
    }
    Ok(())
}

/// Ticks of an axis drawn by hand (a "nines" axis: p50, p90, p99, …; a categorical axis: one
/// per name), each with its label below and, with `grid`, a grid line.
fn labelled_ticks<DB: DrawingBackend>(
    chart: &mut Chart<'_, DB>,
    area: &DrawingArea<DB, Shift>,
    l: &Layout,
    ticks: Vec<(f64, String)>,
    grid: bool,
) -> Result<(), ReportError> {
    let (y0, y1) = l.y;
    if grid {
        let line = RGBColor(225, 225, 225).stroke_width(1);
        for (v, _) in &ticks {
            chart
                .draw_series(LineSeries::new([(*v, y0), (*v, y1)], line))
                .map_err(plot_err)?;
        }
    }
    let base = area.get_base_pixel();
    let style = font(12)
        .color(&BLACK)
        .pos(Pos::new(HPos::Center, VPos::Top));
    for (v, label) in ticks {
        let (px, py) = chart.backend_coord(&(v, y0));
        let (x, y) = (px - base.0, py - base.1);
        area.draw(&PathElement::new([(x, y), (x, y + 5)], BLACK))
            .map_err(plot_err)?;
        area.draw(&Text::new(label, (x, y + 7), style.clone()))
            .map_err(plot_err)?;
    }
    Ok(())
}

fn style_of(s: &Series) -> ShapeStyle {
    let c = colour(s.colour);
    if s.faint {
        c.mix(0.45).stroke_width(1)
    } else {
        c.stroke_width(2)
    }
}

fn draw_series<DB: DrawingBackend>(
    chart: &mut Chart<'_, DB>,
    s: &Series,
    pts: Vec<(f64, f64)>,
) -> Result<(), ReportError> {
    let style = style_of(s);
    match s.shape {
        Shape::MaxMarker => {
            let thick = style.stroke_width(3);
            if s.dash == Dash::Solid {
                let marks = pts.iter().map(|&p| Cross::new(p, 6, thick));
                chart.draw_series(marks).map_err(plot_err)?;
            } else {
                // The max of a dashed line: an upright cross, so each kernel's maxima read apart.
                let marks = pts.iter().map(|&p| plus!(p, 7, thick));
                chart.draw_series(marks).map_err(plot_err)?;
            }
            return Ok(());
        }
        Shape::Band => {
            let fill = colour(s.colour).mix(0.18).filled();
            chart
                .draw_series(std::iter::once(Polygon::new(pts, fill)))
                .map_err(plot_err)?;
            return Ok(());
        }
        Shape::Dots => {
            let fill = colour(s.colour).mix(0.7).filled();
            // One dot per pixel: dots that would land on one already drawn add nothing.
            let mut seen = std::collections::HashSet::new();
            let dots = pts
                .iter()
                .filter(|&p| seen.insert(chart.backend_coord(p)))
                .map(|&p| Circle::new(p, 2, fill))
                .collect::<Vec<_>>();
            chart.draw_series(dots).map_err(plot_err)?;
            return Ok(());
        }
        Shape::Cells => {
            let fill = colour(s.colour).filled();
            let cells = pts
                .chunks_exact(2)
                .map(|c| Rectangle::new([c[0], c[1]], fill));
            chart.draw_series(cells).map_err(plot_err)?;
            return Ok(());
        }
        Shape::Line => {}
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
    for seg in segments(s, pts) {
        match s.dash.pattern() {
            Some((dash, gap)) => chart
                .draw_series(DashedLineSeries::new(seg, dash, gap, style))
                .map_err(plot_err)?,
            None => chart
                .draw_series(LineSeries::new(seg, style))
                .map_err(plot_err)?,
        };
    }
    Ok(())
}

/// The pieces of a line: the whole line, or with `gaps_at_zero` the runs of non-zero points.
fn segments(s: &Series, pts: Vec<(f64, f64)>) -> Vec<Vec<(f64, f64)>> {
    if !s.gaps_at_zero {
        return vec![pts];
    }
    let mut out: Vec<Vec<(f64, f64)>> = vec![Vec::new()];
    for (p, orig) in pts.iter().zip(&s.points) {
        match (orig.1 > 0.0, out.last_mut()) {
            (true, Some(seg)) => seg.push(*p),
            (false, Some(seg)) if !seg.is_empty() => out.push(Vec::new()),
            _ => {}
        }
    }
    out.retain(|g| !g.is_empty());
    out
}

/// Draws the legend box in the corner the layout chose, inside the plotting area.
/// Draws the legend in its corner of the plotting area. A legend wider than the plot (long
/// names in a small panel of a grid) is moved left into the panel's margin as far as needed,
/// so its colour keys are never cut off.
fn draw_legend<DB: DrawingBackend>(
    chart: &Chart<'_, DB>,
    panel: &DrawingArea<DB, Shift>,
    p: &Panel,
    l: &Layout,
) -> Result<(), ReportError> {
    let Some(corner) = l.legend.filter(|_| l.outside.is_none()) else {
        return Ok(());
    };
    let (w, h) = legend::size(&legend::entries(p));
    let plot = chart.plotting_area().strip_coord_spec();
    let (pw, ph) = plot.dim_in_pixel();
    let (w, h) = (w as i32, h as i32);
    let pad = legend::PAD as i32;
    let x = match corner {
        Corner::UpperLeft | Corner::LowerLeft => pad,
        _ => pw as i32 - w - pad,
    };
    let y = match corner {
        Corner::UpperLeft | Corner::UpperRight => pad,
        _ => ph as i32 - h - pad,
    };
    if x >= 0 && x + w <= pw as i32 {
        return legend_box(&plot, p, (x, y));
    }
    // In the panel's pixels: the plot's offset, then kept inside the panel.
    let (px, py) = plot.get_base_pixel();
    let (ax, ay) = panel.get_base_pixel();
    let (aw, _) = panel.dim_in_pixel();
    let left = (px - ax + pw as i32 - w - pad).clamp(0, (aw as i32 - w).max(0));
    legend_box(panel, p, (left, py - ay + y))
}

/// Draws the legend of `p` with its upper left corner at `at` (px) in `area`.
fn legend_box<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    p: &Panel,
    (x, y): (i32, i32),
) -> Result<(), ReportError> {
    let entries = legend::entries(p);
    let has_max = p.series.iter().any(|s| s.shape == Shape::MaxMarker);
    let (w, h) = legend::size(&entries);
    let (w, h) = (w as i32, h as i32);
    let frame = [(x, y), (x + w, y + h)];
    area.draw(&Rectangle::new(frame, legend::FILL.filled()))
        .map_err(plot_err)?;
    area.draw(&Rectangle::new(
        frame,
        RGBColor(160, 160, 160).stroke_width(1),
    ))
    .map_err(plot_err)?;
    let text = font(12)
        .color(&BLACK)
        .pos(Pos::new(HPos::Left, VPos::Center));
    for (k, s) in entries.iter().enumerate() {
        let yy = y + legend::ROW as i32 * k as i32 + legend::ROW as i32 / 2 + 4;
        let c = colour(s.colour);
        let c = if s.faint { c.mix(0.45) } else { c.mix(1.0) };
        // A dash key of a plot with maxima keeps the swatch's right end for its marker.
        let key_mark = s.points.is_empty() && s.colour == NEUTRAL && has_max;
        let end = if key_mark { x + 18 } else { x + 28 };
        let swatch = if s.shape == Shape::Dots {
            area.draw(&Circle::new((x + 16, yy), 3, c.filled()))
        } else if s.shape == Shape::Cells {
            area.draw(&Rectangle::new(
                [(x + 10, yy - 6), (x + 22, yy + 6)],
                c.filled(),
            ))
        } else if let Some((dash, gap)) = s.dash.pattern() {
            // The line's own pattern, at its width.
            area.draw(&plotters::element::DashedPathElement::new(
                [(x + 2, yy), (end, yy)],
                dash,
                gap,
                c.stroke_width(2),
            ))
        } else if s.shape == Shape::MaxMarker {
            area.draw(&Cross::new((x + 16, yy), 5, c.stroke_width(2)))
        } else {
            area.draw(&Rectangle::new(
                [(x + 6, yy - 2), (end.min(x + 26), yy + 2)],
                c.filled(),
            ))
        };
        swatch.map_err(plot_err)?;
        if key_mark {
            // Its marker after the swatch (× solid, + dashed).
            let mark = c.stroke_width(2);
            let r = if s.dash == Dash::Solid {
                area.draw(&Cross::new((x + 24, yy), 4, mark))
            } else {
                area.draw(&plus!((x + 24, yy), 4, mark))
            };
            r.map_err(plot_err)?;
        }
        area.draw(&Text::new(s.name.clone(), (x + 32, yy), text.clone()))
            .map_err(plot_err)?;
    }
    Ok(())
}

static FONT: &[u8] = include_bytes!("../fonts/DejaVuSans-subset.ttf");

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
    let shortened = {
        let root = SVGBackend::with_string(&mut out, fig.size()).into_drawing_area();
        let shortened = figure(&root, fig)?;
        root.present().map_err(plot_err)?;
        shortened
    };
    Ok(add_title_tooltips(out, &shortened))
}

/// Rows of panels drawn at a time into a PNG: the image is encoded strip by strip, so a grid
/// of 1,000 panels (160,000 px high) never has its whole bitmap in memory (issue 28: that
/// bitmap, 3 bytes a pixel, was 576 MB of the 718 MB a report of 1,000 runs peaked at).
pub const PNG_STRIP_ROWS: usize = 4;

/// Renders a figure as PNG bytes (RGB, 8 bit), [`PNG_STRIP_ROWS`] rows of panels at a time.
pub fn to_png(fig: &Figure) -> Result<Vec<u8>, ReportError> {
    ensure_font();
    let fig = &*fig.printable();
    let (w, h) = fig.size();
    let layouts = layouts(fig);
    let mut png_bytes = Vec::new();
    let mut enc = png::Encoder::new(&mut png_bytes, w, h);
    enc.set_color(png::ColorType::Rgb);
    enc.set_depth(png::BitDepth::Eight);
    enc.set_compression(png::Compression::Default);
    let mut writer = enc.write_header().map_err(png_err)?;
    let mut stream = writer.stream_writer_with_size(1 << 16).map_err(png_err)?;
    let per_strip = PNG_STRIP_ROWS * fig.columns.max(1) as usize;
    let strips: Vec<(&[Panel], &[Layout])> = if fig.panels.is_empty() {
        vec![(&[], &[])]
    } else {
        fig.panels
            .chunks(per_strip)
            .zip(layouts.chunks(per_strip))
            .collect()
    };
    for (panels, lays) in strips {
        let rows = panels.len().div_ceil(fig.columns.max(1) as usize).max(1);
        let strip_h = rows as u32 * fig.panel_height;
        let mut rgb = vec![255u8; (w as usize) * (strip_h as usize) * 3];
        {
            let root = BitMapBackend::with_buffer(&mut rgb, (w, strip_h)).into_drawing_area();
            draw_cells(&root, fig, panels, lays)?;
            root.present().map_err(plot_err)?;
        }
        std::io::Write::write_all(&mut stream, &rgb)
            .map_err(|e| ReportError::Render(format!("PNG encoding: {e}")))?;
    }
    stream.finish().map_err(png_err)?;
    writer.finish().map_err(png_err)?;
    Ok(png_bytes)
}

fn png_err(e: png::EncodingError) -> ReportError {
    ReportError::Render(format!("PNG encoding: {e}"))
}
