//! `compare --plot DIR`: the groups' latency distributions overlaid — tail latency by "nines"
//! and exceedance (the fraction of samples above each latency, log scale) — as SVG and PNG,
//! drawn by rtscope-report exactly like `rtscope report`'s plots, one line per group.

use super::analysis::Comparison;
use super::group::Group;
use rtscope_common::error::UsageError;
use rtscope_report::figures::{self, Line};
use rtscope_report::plot::Figure;
use rtscope_report::ReportFile;
use std::path::{Path, PathBuf};

/// A group's legend entry: `A kernel=stock (3 runs)`, marked when its histogram lacks samples
/// (imports with overflows, or runs without a histogram), so the curve is a lower bound.
pub fn legend(g: &Group) -> String {
    let runs = g.runs.len();
    let mut s = format!(
        "{} {} ({runs} run{})",
        g.name,
        g.selector,
        if runs == 1 { "" } else { "s" }
    );
    if g.merged.missing_hist || g.merged.overflow_floor.is_some() {
        s.push_str(", histogram incomplete");
    }
    s
}

/// The overlaid figures as files: `compare-tail` and `compare-exceedance`, SVG and PNG.
pub fn files(c: &Comparison) -> Result<Vec<ReportFile>, rtscope_report::ReportError> {
    let lines: Vec<Line> = c
        .groups
        .iter()
        .map(|g| Line::new(legend(g), g.merged.totals.hist.clone()))
        .collect();
    let tail = figures::tail_of(&lines);
    let (_, exceedance) = figures::cdf_of(lines);
    let mut out = Vec::new();
    for (name, mut panel) in [("compare-tail", tail), ("compare-exceedance", exceedance)] {
        panel.title = format!("{} by group", panel.title);
        let fig = Figure::single(panel);
        out.push(ReportFile {
            name: format!("{name}.svg"),
            bytes: rtscope_report::to_svg(&fig)?.into_bytes(),
        });
        out.push(ReportFile {
            name: format!("{name}.png"),
            bytes: rtscope_report::to_png(&fig)?,
        });
    }
    Ok(out)
}

/// Writes the overlaid figures into `dir` (created if needed); returns the paths.
pub fn write(c: &Comparison, dir: &Path) -> Result<Vec<PathBuf>, UsageError> {
    let files = files(c).map_err(UsageError::from_error)?;
    rtscope_report::write(dir, &files)
        .map_err(|e| UsageError::from_error(e).hint("give --plot a writable directory"))
}
