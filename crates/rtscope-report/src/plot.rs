//! A small figure model (panels of line series on linear or log axes) and its rendering to SVG
//! and PNG with plotters. Every chart of the report is a [`Figure`]; the functions that build
//! them live in the `figures` module.
//!
//! Log axes are drawn as linear axes over `log10(value)` with ticks labelled at whole decades,
//! so values of zero (an empty histogram bin) are clamped to the bottom of the axis instead of
//! disappearing.

use crate::ReportError;
use plotters::prelude::*;

/// The font family named in plots: the embedded DejaVu Sans renders PNG text; SVG text names
/// the same family with fallbacks for the browser.
pub const FONT_FAMILY: &str = "DejaVu Sans, Verdana, Arial, sans-serif";

/// The Okabe–Ito palette (Okabe & Ito 2008, "Color Universal Design"): eight colours that stay
/// apart for the common forms of colour blindness; its yellow is darkened to read on white and
/// its black is a dark grey. Series 8–15 use the same hues darker, 16–23 lighter.
pub const PALETTE: [(u8, u8, u8); 8] = [
    (0, 114, 178),   // blue
    (213, 94, 0),    // vermillion
    (0, 158, 115),   // bluish green
    (204, 121, 167), // reddish purple
    (230, 159, 0),   // orange
    (86, 180, 233),  // sky blue
    (80, 80, 80),    // dark grey
    (181, 165, 0),   // yellow, darkened
];

/// The palette index of marks that belong to no CPU or group (events): black.
pub const NEUTRAL: usize = usize::MAX;

/// A sequential ramp for the cells of a heat map, from few (light) to many (dark): viridis,
/// reversed, whose steps stay apart in lightness for every form of colour blindness.
pub const HEAT: [(u8, u8, u8); 6] = [
    (253, 231, 37),
    (122, 209, 81),
    (34, 168, 132),
    (42, 120, 142),
    (65, 68, 135),
    (68, 1, 84),
];

/// The palette index of step `k` of [`HEAT`] (the last step for any larger `k`).
pub fn heat(k: usize) -> usize {
    HEAT_BASE + k.min(HEAT.len() - 1)
}

const HEAT_BASE: usize = NEUTRAL - 16;

/// The colour of series number `i` (a group keeps its number in every figure of a report).
pub fn colour(i: usize) -> RGBColor {
    if i == NEUTRAL {
        return RGBColor(0, 0, 0);
    }
    if (HEAT_BASE..NEUTRAL).contains(&i) {
        let (r, g, b) = HEAT[(i - HEAT_BASE).min(HEAT.len() - 1)];
        return RGBColor(r, g, b);
    }
    let (r, g, b) = PALETTE[i % PALETTE.len()];
    match (i / PALETTE.len()) % 3 {
        1 => RGBColor(r / 2, g / 2, b / 2),
        2 => RGBColor(r / 2 + 128, g / 2 + 128, b / 2 + 128),
        _ => RGBColor(r, g, b),
    }
}

/// How an axis maps values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    /// Linear.
    Linear,
    /// Base-10 logarithmic; values <= 0 are drawn at the bottom of the axis.
    Log,
    /// Linear over "nines" (`x = −log10(1 − q)`), labelled as percentiles (p50, p90, p99, …).
    Nines,
    /// Time since the start, in s: labelled in seconds up to [`LONG_RUN_S`], in h:mm beyond.
    Time,
    /// Wall-clock time, Unix s: drawn in days and labelled with UTC dates over more than
    /// [`DATE_DAYS_S`], else in hours, or minutes under [`DATE_MINUTES_S`], labelled
    /// `MM-DD HH:MM` (so ticks fall on whole units).
    Date,
    /// Categories (runs, CPUs): category `i` at `x = i`, each labelled by its name from
    /// [`Axis::categories`], no numbers.
    Category,
}

/// Date axes longer than this (s) are drawn in days.
pub const DATE_DAYS_S: f64 = 3.0 * 86_400.0;
/// Date axes shorter than this (s) are drawn in minutes.
pub const DATE_MINUTES_S: f64 = 3.0 * 3600.0;

/// Time axes longer than this (s) are drawn in hours and labelled h:mm.
pub const LONG_RUN_S: f64 = 3600.0;

/// One axis of a panel.
#[derive(Debug, Clone)]
pub struct Axis {
    /// Label with unit, e.g. `latency (µs)`.
    pub label: String,
    /// Scale.
    pub scale: Scale,
    /// Range in data units; `None` fits the data.
    pub range: Option<(f64, f64)>,
    /// The names of a [`Scale::Category`] axis, in order (empty for other scales).
    pub categories: Vec<String>,
    /// Its values are latencies in µs: on a log scale each decade is labelled with its unit
    /// (`10 µs`, `100 µs`, `1 ms`, `10 ms`), never `10k` µs ([`latency_decade`]).
    pub latency_us: bool,
}

impl Axis {
    /// A linear axis fitted to the data.
    pub fn linear(label: impl Into<String>) -> Axis {
        Axis {
            label: label.into(),
            scale: Scale::Linear,
            range: None,
            categories: Vec::new(),
            latency_us: false,
        }
    }
    /// A log axis of latencies in µs, fitted to the data, its decades labelled with their
    /// unit (`100 µs`, `1 ms`).
    pub fn latency_log(label: impl Into<String>) -> Axis {
        Axis {
            latency_us: true,
            ..Axis::log(label)
        }
    }
    /// A categorical axis: one slot per name, from −0.5 to `names.len()` − 0.5, labelled by
    /// the names (bars of runs or CPUs, never a numeric −0.5…0.5 axis).
    pub fn categories(label: impl Into<String>, names: Vec<String>) -> Axis {
        Axis {
            scale: Scale::Category,
            range: Some((-0.5, names.len().max(1) as f64 - 0.5)),
            categories: names,
            ..Axis::linear(label)
        }
    }
    /// A log axis fitted to the data.
    pub fn log(label: impl Into<String>) -> Axis {
        Axis {
            scale: Scale::Log,
            ..Axis::linear(label)
        }
    }
    /// A wall-clock axis (values in Unix s) fitted to the data, labelled in UTC.
    pub fn date(label: impl Into<String>) -> Axis {
        Axis {
            scale: Scale::Date,
            ..Axis::linear(label)
        }
    }
    /// A time axis (values in s) fitted to the data, labelled `label (s)` or `label (h:mm)`.
    pub fn time(label: impl Into<String>) -> Axis {
        Axis {
            scale: Scale::Time,
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
    /// The line's dash pattern (a second key of the grouping: the `encoding` module).
    pub dash: Dash,
}

/// The dash pattern of a line: with colour, the second channel that carries a grouping
/// (kernel by dash, load case by colour).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Dash {
    /// Unbroken.
    #[default]
    Solid,
    /// Dashes of 8 px, 5 px apart.
    Dashed,
    /// Dots: 2 px, 4 px apart.
    Dotted,
    /// Long dashes of 16 px, 6 px apart.
    Long,
}

impl Dash {
    /// The patterns in the order they are handed out.
    pub const ALL: [Dash; 4] = [Dash::Solid, Dash::Dashed, Dash::Dotted, Dash::Long];

    /// (dash, gap) in px; `None` for a solid line.
    pub fn pattern(self) -> Option<(i32, i32)> {
        match self {
            Dash::Solid => None,
            Dash::Dashed => Some((8, 5)),
            Dash::Dotted => Some((2, 4)),
            Dash::Long => Some((16, 6)),
        }
    }
}

/// How a series is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// A line (with dots when `markers`).
    Line,
    /// Each point as a large × without a line: the exact maximum of a distribution.
    MaxMarker,
    /// A translucent filled polygon through the points (a spread band: the upper edge left to
    /// right, then the lower edge right to left); never in the legend.
    Band,
    /// Each point as a small dot without a line (a scatter of samples).
    Dots,
    /// Filled rectangles, the cells of a heat map: the points in pairs, the lower-left and the
    /// upper-right corner of each cell.
    Cells,
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
            dash: Dash::Solid,
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
    /// Bottom left.
    LowerLeft,
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
    /// This figure with every text it draws (panel titles, axis labels, legend names) safe for
    /// SVG and terminals: control characters, which XML 1.0 cannot hold and plotters writes as
    /// they are, shown as `\x1b` ([`rtscope_core::text::escape`]). Labels and tags from a
    /// database (a merged board's, an older rtscope's, any SQLite writer's) reach titles and
    /// legends; borrowed when nothing needs escaping.
    pub fn printable(&self) -> std::borrow::Cow<'_, Figure> {
        use rtscope_core::text::escape;
        let control = |s: &str| s.chars().any(char::is_control);
        let axis_bad = |a: &Axis| control(&a.label);
        let bad = self.panels.iter().any(|p| {
            control(&p.title)
                || axis_bad(&p.x)
                || axis_bad(&p.y)
                || p.y2.as_ref().is_some_and(axis_bad)
                || p.series.iter().any(|s| control(&s.name))
        });
        if !bad {
            return std::borrow::Cow::Borrowed(self);
        }
        let mut fig = self.clone();
        let fix = |s: &mut String| *s = escape(s).into_owned();
        for p in &mut fig.panels {
            fix(&mut p.title);
            fix(&mut p.x.label);
            fix(&mut p.y.label);
            if let Some(a) = p.y2.as_mut() {
                fix(&mut a.label);
            }
            for s in &mut p.series {
                fix(&mut s.name);
            }
        }
        std::borrow::Cow::Owned(fig)
    }

    /// Total size in pixels.
    pub fn size(&self) -> (u32, u32) {
        let rows = (self.panels.len() as u32)
            .div_ceil(self.columns.max(1))
            .max(1);
        (self.width, rows * self.panel_height)
    }
}

pub(crate) fn plot_err(e: impl std::fmt::Display) -> ReportError {
    ReportError::Render(e.to_string())
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
pub(crate) fn drawn_range(axis: &Axis, values: impl Iterator<Item = f64>) -> (f64, f64) {
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
        Scale::Date => {
            let pad = ((hi - lo) * 0.02).max(30.0);
            (lo - pad, hi + pad)
        }
        Scale::Category => (-0.5, hi.max(0.0).round() + 0.5),
        Scale::Linear | Scale::Time => {
            let pad = ((hi - lo) * 0.05).max(hi.abs() * 0.05).max(1e-9);
            (if lo >= 0.0 { 0.0 } else { lo - pad }, hi + pad)
        }
    }
}

/// A tick label: plain numbers, whole decades, or percentiles for "nines".
pub fn tick_label(scale: Scale, v: f64) -> String {
    match scale {
        Scale::Linear | Scale::Time => crate::fmt_num(v),
        // Named by the axis (draw.rs), never by a number.
        Scale::Category => String::new(),
        Scale::Date => date_label(v, 86_400.0),
        Scale::Log => {
            if (v - v.round()).abs() > 1e-6 {
                return String::new();
            }
            crate::fmt_num(10f64.powi(v.round() as i32))
        }
        Scale::Nines => {
            if (v - NINES_P50).abs() < 1e-6 {
                return "p50".into();
            }
            if (v - v.round()).abs() > 1e-6 || v < 0.5 {
                return String::new();
            }
            let nines = v.round() as usize;
            format!("p{}", nines_label(nines))
        }
    }
}

/// The label of decade `v` (log10 of µs) of a latency axis: `100 ns`, `1 µs`, `10 µs`, `1 ms`,
/// `10 s`; empty between decades.
pub fn latency_decade(v: f64) -> String {
    if (v - v.round()).abs() > 1e-6 {
        return String::new();
    }
    let ns_exp = v.round() as i32 + 3;
    let (unit, base) = match ns_exp {
        i32::MIN..=2 => ("ns", 0),
        3..=5 => ("µs", 3),
        6..=8 => ("ms", 6),
        _ => ("s", 9),
    };
    let mantissa = 10f64.powi(ns_exp - base);
    format!("{} {unit}", crate::fmt_num(mantissa))
}

/// An axis label as drawn when its ticks carry the unit: `latency (µs)` → `latency`,
/// `latency (µs, log axis)` → `latency (log axis)`.
pub fn without_us(label: &str) -> String {
    label.replace("(µs, ", "(").replace(" (µs)", "")
}

/// Where p50 sits on a "nines" axis: `−log10(0.5)`.
pub const NINES_P50: f64 = std::f64::consts::LOG10_2;

/// A tick label of a time axis drawn in hours: `h:mm`.
pub fn hours_label(h: f64) -> String {
    let minutes = (h * 60.0).round().max(0.0) as u64;
    format!("{}:{:02}", minutes / 60, minutes % 60)
}

/// A tick label of a date axis: `v` in units of `unit_s` seconds since the Unix epoch, as a UTC
/// date when it is a midnight on an axis drawn in days, else as `MM-DD HH:MM` (with `:SS` when
/// not a whole minute).
pub fn date_label(v: f64, unit_s: f64) -> String {
    let text = rtscope_core::civil::utc_text((v * unit_s).round() as i64);
    if unit_s >= 86_400.0 && text.ends_with("00:00:00") {
        text[..10].to_string()
    } else if text.ends_with(":00") {
        text[5..16].to_string()
    } else {
        text[5..].to_string()
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
