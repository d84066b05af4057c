//! `rtscope report --watch SERIES [--from T] [--to T] [--per LEVEL] -o DIR`: the long-term
//! report of an `rtscope watch` series. The drawing lives in rtscope-report's `watch`, finding
//! the series and its rows in the period in rtscope-analysis's `series`; this module writes
//! the files.

use crate::cli::report::{ReportArgs, WatchLevel};
use rtscope_analysis::series::{period, rows, series};
use rtscope_common::error::{ExitStatus, UsageError};
use rtscope_report::watch::{WatchData, WatchOptions};
use rtscope_store::watch::Level;
use rtscope_store::Store;
use std::io::Write;

/// Runs `rtscope report --watch`.
pub fn run(
    store: &Store,
    name: &str,
    a: &ReportArgs,
    out: &mut dyn Write,
) -> anyhow::Result<ExitStatus> {
    let series = series(store, name)?;
    let period = period(a.from.as_deref(), a.to.as_deref())?;
    let windows = rows(store, &series, period)?;
    if windows.is_empty() {
        let hint = "widen --from/--to, or let `rtscope watch` close a window first";
        return Err(UsageError::new(format!(
            "watch series '{}' has no window in the period",
            rtscope_core::text::escape(name)
        ))
        .hint(hint)
        .into());
    }
    let level = a.per.map(|p| match p {
        WatchLevel::Window => Level::Window,
        WatchLevel::Hour => Level::Hour,
        WatchLevel::Day => Level::Day,
    });
    let opts = WatchOptions {
        title: a.title.clone(),
        level,
    };
    let data = WatchData {
        series,
        windows,
        period,
    };
    let files = rtscope_report::watch::build(&data, &opts)?;
    let written = rtscope_report::write(&a.output, &files)
        .map_err(|e| UsageError::from_error(e).hint("choose a writable directory with -o DIR"))?;
    writeln!(
        out,
        "report of watch series {} written to {}:",
        rtscope_core::text::escape(name),
        a.output.display()
    )?;
    for p in written {
        writeln!(out, "  {}", p.display())?;
    }
    Ok(ExitStatus::Success)
}
