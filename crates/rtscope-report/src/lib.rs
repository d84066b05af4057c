//! rtscope-report: plots, tables and the HTML report, made from what rtscope recorded.
//!
//! * [`model`]: [`RunData`], everything the report needs about one run, read from the store;
//! * [`figures`]: the charts (OSADL-style histogram, tail latency, CDF and exceedance, latency
//!   over time, monitors) as [`plot::Figure`]s;
//! * [`encoding`]: a grouping of two keys as colour and dash in the shared plots;
//! * [`plot`]: rendering of a figure to SVG text and to PNG bytes with an embedded font;
//! * [`table`]: per-CPU statistics and `summary.csv` / `summary.md`;
//! * [`noise`]: runs of kind `noise` (busy-loop gaps, never drawn as latency): % available,
//!   the gap histogram, noise per cause, the gaps over time and `rtla osnoise top`'s table;
//! * [`warnings`]: findings worth acting on (no PREEMPT_RT, missed periods, failed loads, …);
//! * [`worst`]: the worst case beyond the measured time (`--tail`), from rtscope-evt;
//! * [`html`]: the self-contained `report.html` (inline SVG and CSS, no script, no network;
//!   over [`INLINE_FIGURES_MAX_RUNS`] runs it links the figures' SVG files next to it).
//!
//! [`build`] puts it all together and returns the files of a report; nothing here prints or
//! touches the terminal. Latencies are stored in ns and shown in µs.
//!
//! Re-exports (its facade): `to_png` and `to_svg` are named at the root for the CLI and compare;
//! their module (`draw`) is crate-private, so the root is their one path.

#![warn(missing_docs)]

pub(crate) mod draw;
pub use draw::{to_png, to_svg};
pub mod encoding;
mod escape;
pub mod explain;
pub mod figures;
pub mod group;
pub mod headline;
pub mod histogram;
pub mod html;
mod markup;
pub mod matrix;
pub mod model;
pub mod monitors;
pub mod noise;
pub mod plot;
pub mod raw;
pub mod repeats;
pub mod request;
pub mod samples;
pub mod scale;
mod stacks;
pub mod table;
pub mod units;
pub mod warnings;
pub mod watch;
pub mod worst;

use model::RunData;

/// Why a report could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// Drawing a plot failed.
    #[error("drawing a plot failed: {0}")]
    Render(String),
    /// Writing a report file failed.
    #[error("cannot write {path}: {source}")]
    Write {
        /// The file.
        path: std::path::PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// Nothing to report.
    #[error("no run to report")]
    NoRuns,
    /// A latency run after a noise run ([`noise::order`] puts them in order).
    #[error("the runs are not in order: noise runs go after the latency runs")]
    NoiseFirst,
}

/// Options of a report.
#[derive(Debug, Clone, Default)]
pub struct ReportOptions {
    /// Title of the page; `None` makes one from the runs.
    pub title: Option<String>,
    /// Whether the CDF was asked to use raw samples (they are used where [`RunData::raw`] holds
    /// them).
    pub raw: bool,
    /// Keys to group runs by (`kernel`, `case`, `scenario`, any tag); `None` groups by the keys
    /// that differ among the runs.
    pub group_by: Option<Vec<String>>,
    /// The key whose values make the rows of the grids and of the per-case table (`--rows`);
    /// `None`: the load case, else the scenario.
    pub rows: Option<String>,
    /// The keys whose values make the columns (`--cols`); `None`: the other keys that differ.
    pub cols: Option<Vec<String>>,
    /// Upper end of the histograms' latency axis, µs (`--xmax`); later samples are counted
    /// in the last bin. `None`: the largest latency.
    pub xmax_us: Option<u64>,
    /// Whether the tail beyond the measured maximum was asked for (`--tail`): the section of
    /// [`worst`], drawn from [`RunData::tails`].
    pub tail: bool,
}

/// One file of a report.
#[derive(Debug, Clone)]
pub struct ReportFile {
    /// File name inside the report directory, e.g. `tail.png`.
    pub name: String,
    /// Its content.
    pub bytes: Vec<u8>,
}

/// Above this many runs, `report.html` links the figures' SVG files instead of holding them:
/// every run is a line in every figure, so inline figures made the page of 1,000 runs 53 MB
/// (issue 28).
pub const INLINE_FIGURES_MAX_RUNS: usize = 50;

/// Builds every file of a report over `runs` (in the order given, the latency runs before the
/// noise runs: [`noise::order`]): `report.html`, `summary.csv`, `summary.md`, and each figure
/// as `NAME.svg` and `NAME.png`.
pub fn build(runs: &[RunData], opts: &ReportOptions) -> Result<Vec<ReportFile>, ReportError> {
    let mut files = Vec::new();
    build_each(runs, opts, &mut |f| {
        files.push(f);
        Ok(())
    })?;
    Ok(files)
}

/// The files of [`build`], in its order, each handed to `sink` once made. Over
/// [`INLINE_FIGURES_MAX_RUNS`] runs the figures are rendered two at a time and handed on
/// before the next two, so the report's memory holds two rendered figures, not all of them.
pub fn build_each(
    runs: &[RunData],
    opts: &ReportOptions,
    sink: &mut dyn FnMut(ReportFile) -> Result<(), ReportError>,
) -> Result<(), ReportError> {
    if runs.is_empty() {
        return Err(ReportError::NoRuns);
    }
    let (latency, noisy) = runs.split_at(runs.partition_point(|r| !noise::is_noise(r)));
    if !noisy.iter().all(noise::is_noise) {
        return Err(ReportError::NoiseFirst);
    }
    let grouping = grouping(latency, opts);
    let mut figs = Vec::new();
    if !latency.is_empty() {
        figs = figures::all_with(latency, &grouping, opts.xmax_us);
        // The tails' figures (`--tail`), drawn in their own part of the latency section.
        figs.extend(worst::figures(latency));
    }
    figs.extend(noise::figures::all(noisy));
    let inline = runs.len() <= INLINE_FIGURES_MAX_RUNS;
    let rendered = if inline {
        render_all(&figs)?
    } else {
        Vec::new()
    };
    let linked: Vec<String> = figs
        .iter()
        .map(|f| {
            let n = escape::escape(&f.name);
            format!("<img src=\"{n}.svg\" alt=\"{n}\">")
        })
        .collect();
    let rows = table::summary_rows(latency);
    let warns = warnings::collect(runs);
    let svgs: Vec<(&figures::NamedFigure, &str)> = figs
        .iter()
        .enumerate()
        .map(|(i, f)| match rendered.get(i) {
            Some((svg, _)) => (f, svg.as_str()),
            None => (f, linked[i].as_str()),
        })
        .collect();
    let selection = html::Selection {
        all: runs,
        latency,
        noise: noisy,
    };
    let page = html::page(&selection, &grouping, &rows, &warns, &svgs, opts);
    drop(svgs);
    sink(file("report.html", page.into_bytes()))?;
    sink(file("summary.csv", table::csv(&rows).into_bytes()))?;
    let mut md = String::new();
    if !latency.is_empty() {
        md = summary_md(latency, &grouping, &rows);
    }
    if !noisy.is_empty() {
        md.push_str(&noise::html::markdown(noisy));
    }
    sink(file("summary.md", md.into_bytes()))?;
    figure_files(&figs, inline.then_some(rendered), sink)
}

/// The latency runs' grouping: `--group-by`, `--rows` and `--cols` as keys.
fn grouping(latency: &[RunData], opts: &ReportOptions) -> group::Grouping {
    let parse =
        |v: &Vec<String>| -> Vec<group::Key> { v.iter().map(|n| group::Key::parse(n)).collect() };
    let keys = opts.group_by.as_ref().map(parse);
    let cols = opts.cols.as_ref().map(parse);
    let rows = opts.rows.as_deref().map(group::Key::parse);
    group::Grouping::arranged(latency, keys.as_deref(), rows.as_ref(), cols.as_deref())
}

/// Each figure's SVG and PNG files: the ones already `rendered` (inline figures), or rendered
/// two at a time and handed on before the next two.
fn figure_files(
    figs: &[figures::NamedFigure],
    rendered: Option<Vec<Rendered>>,
    sink: &mut dyn FnMut(ReportFile) -> Result<(), ReportError>,
) -> Result<(), ReportError> {
    let mut emit = |f: &figures::NamedFigure, (svg, png): Rendered| {
        sink(file(&format!("{}.svg", f.name), svg.into_bytes()))?;
        sink(file(&format!("{}.png", f.name), png))
    };
    match rendered {
        Some(rendered) => {
            for (f, r) in figs.iter().zip(rendered) {
                emit(f, r)?;
            }
        }
        None => {
            for pair in figs.chunks(2) {
                for (f, r) in pair.iter().zip(render_all(pair)?) {
                    emit(f, r)?;
                }
            }
        }
    }
    Ok(())
}

/// `summary.md`: the per-CPU table, then for several runs the maximum per load case.
fn summary_md(runs: &[RunData], g: &group::Grouping, rows: &[table::SummaryRow]) -> String {
    let mut md = table::markdown(rows);
    if runs.len() > 1 {
        if table::has_cases(runs) {
            md.push_str("\n## Maximum latency per load case (µs)\n\n");
            md.push_str(&table::case_markdown(&table::case_rows(runs)));
        } else {
            md.push_str("\n## Maximum latency per group (µs)\n\n");
            md.push_str(&table::case_markdown(&table::group_rows(runs, g)));
        }
        if let Some(m) = matrix::MaxMatrix::of(runs, g) {
            md.push_str(&format!(
                "\n## Maximum latency per {} and group (µs)\n\n",
                m.rows_by
            ));
            md.push_str(&m.markdown());
        }
    }
    md
}

pub(crate) fn file(name: &str, bytes: Vec<u8>) -> ReportFile {
    ReportFile {
        name: name.to_string(),
        bytes,
    }
}

type Rendered = (String, Vec<u8>);

/// Renders every figure to SVG and PNG, on two threads (the report is built on the board, where
/// a second core is usually idle after the run).
pub(crate) fn render_all(figs: &[figures::NamedFigure]) -> Result<Vec<Rendered>, ReportError> {
    let one = |f: &figures::NamedFigure| -> Result<Rendered, ReportError> {
        Ok((to_svg(&f.figure)?, to_png(&f.figure)?))
    };
    let half = figs.len() / 2;
    let (a, b) = figs.split_at(half);
    let (ra, rb) = std::thread::scope(|s| {
        let h = s.spawn(|| a.iter().map(one).collect::<Result<Vec<_>, _>>());
        let rb = b.iter().map(one).collect::<Result<Vec<_>, _>>();
        (h.join(), rb)
    });
    let mut out = ra.map_err(|_| ReportError::Render("a drawing thread panicked".into()))??;
    out.extend(rb?);
    Ok(out)
}

/// Writes report files into `dir` (created if needed) and returns their paths.
pub fn write(
    dir: &std::path::Path,
    files: &[ReportFile],
) -> Result<Vec<std::path::PathBuf>, ReportError> {
    let err = |path: &std::path::Path| {
        let path = path.to_path_buf();
        move |source| ReportError::Write { path, source }
    };
    std::fs::create_dir_all(dir).map_err(err(dir))?;
    let mut out = Vec::new();
    for f in files {
        let p = dir.join(&f.name);
        replace_file(&p, &f.bytes).map_err(err(&p))?;
        out.push(p);
    }
    Ok(out)
}

/// Writes `path` by rtscope-common's one rule: a regular file replaced whole, a device
/// written through, a symlink planted in a shared report directory refused.
fn replace_file(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    rtscope_common::outfile::write(path, &mut std::io::stdout(), |w| w.write_all(bytes))
        .map_err(std::io::Error::other)
}

/// A number for axis ticks and tables: integers without decimals, large ones as `10k`/`1M`,
/// small ones with two significant digits or as `1e-6`.
pub fn fmt_num(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        return "0".into();
    }
    if a >= 1e6 && (v / 1e6).fract() == 0.0 {
        return format!("{}M", v / 1e6);
    }
    if a >= 1e4 && (v / 1e3).fract() == 0.0 {
        return format!("{}k", v / 1e3);
    }
    if v.fract() == 0.0 {
        return format!("{v:.0}");
    }
    if a >= 100.0 {
        return format!("{v:.0}");
    }
    if a >= 0.01 {
        let s = if a >= 10.0 {
            format!("{v:.1}")
        } else {
            format!("{v:.2}")
        };
        return s.trim_end_matches('0').trim_end_matches('.').to_string();
    }
    let exp = a.log10().round();
    if (a / 10f64.powf(exp) - 1.0).abs() < 1e-9 {
        return format!("{}1e{exp}", if v < 0.0 { "-" } else { "" });
    }
    format!("{v:.1e}")
}

/// Microseconds with one decimal from nanoseconds, for tables (`12.3`).
pub fn us(ns: u64) -> String {
    rtscope_core::text::us(rtscope_core::Nanos(ns))
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod layout_tests;

#[cfg(test)]
mod naming_tests;

#[cfg(test)]
mod plots_tests;
