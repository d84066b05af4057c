//! `rtscope report --watch SERIES`: the long-term view of an `rtscope watch` series, as the
//! OSADL QA farm draws its racks' months of cyclictest maxima, from the windows the daemon
//! stored (docs/watch.md, docs/report.md):
//!
//! * [`cells`]: the stored rows (measured windows, hours, days) shown at one resolution, rows
//!   finer than it merged into it, coarser ones kept as they are;
//! * [`figures`]: the maximum and p99.99 over time, each CPU's maximum, a heat map of the
//!   latency distribution over time, and each window's worst wake-up by its largest cause;
//! * [`html`]: the page, with the series, per-CPU statistics, the worst windows with their
//!   explanations and the alerts.

pub mod cells;
pub mod figures;
pub mod html;

use crate::{file, render_all, ReportError, ReportFile};
use rtscope_store::watch::{Level, SeriesSummary, WatchWindow};

/// Most columns drawn when the resolution is chosen for the data: the finest level whose
/// cells over the period are at most this many.
pub const MAX_COLUMNS: usize = 400;

/// What a watch report is made of.
#[derive(Debug, Clone)]
pub struct WatchData {
    /// The series.
    pub series: SeriesSummary,
    /// Its stored rows in the period, at every level, in any order.
    pub windows: Vec<WatchWindow>,
    /// The period asked for (Unix ns, `[from, to)`); `None`: all of it.
    pub period: Option<(i64, i64)>,
}

/// Options of a watch report.
#[derive(Debug, Clone, Default)]
pub struct WatchOptions {
    /// Title of the page; `None` names the series.
    pub title: Option<String>,
    /// The resolution; `None`: the finest with at most [`MAX_COLUMNS`] columns.
    pub level: Option<Level>,
}

/// Every file of a watch report: `report.html`, `watch.csv` (one line per cell) and each
/// figure as SVG and PNG.
pub fn build(data: &WatchData, opts: &WatchOptions) -> Result<Vec<ReportFile>, ReportError> {
    if data.windows.is_empty() {
        return Err(ReportError::NoRuns);
    }
    let level = opts
        .level
        .unwrap_or_else(|| cells::resolution(&data.windows, MAX_COLUMNS));
    let shown = cells::at(&data.windows, level);
    let figs = figures::all(&shown);
    let rendered = render_all(&figs)?;
    let svgs: Vec<(&crate::figures::NamedFigure, &str)> = figs
        .iter()
        .zip(&rendered)
        .map(|(f, (svg, _))| (f, svg.as_str()))
        .collect();
    let page = html::page(data, level, &shown, &svgs, opts);
    let mut files = vec![
        file("report.html", page.into_bytes()),
        file("watch.csv", cells::csv(&shown).into_bytes()),
    ];
    for (f, (svg, png)) in figs.iter().zip(rendered) {
        files.push(file(&format!("{}.svg", f.name), svg.into_bytes()));
        files.push(file(&format!("{}.png", f.name), png));
    }
    Ok(files)
}

#[cfg(test)]
mod tests;
