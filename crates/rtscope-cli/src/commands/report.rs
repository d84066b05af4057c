//! `rtscope report [RUN…|--campaign NAME|--last] -o DIR`: plots, tables and one self-contained
//! `report.html` from recorded runs. The rendering lives in rtscope-report; this module only
//! chooses the runs, reads them and writes the files. See docs/report.md.

use crate::cli::report::ReportArgs;
use rtscope_analysis::select;
use rtscope_common::error::{ExitStatus, UsageError};
use rtscope_report::request::{self, Request, RequestError};
use rtscope_report::{ReportError, ReportOptions};
use std::io::Write;

/// Runs `rtscope report`.
pub fn run(a: &ReportArgs, out: &mut dyn Write) -> anyhow::Result<ExitStatus> {
    let store = super::open_db(a.db.as_deref())?;
    if let Some(series) = &a.watch {
        return super::report_watch::run(&store, series, a, out);
    }
    let ids = select::chosen(&store, a.campaign.as_deref(), &a.runs, a.last)?;
    let options = ReportOptions {
        title: a.title.clone(),
        raw: a.raw,
        group_by: a.group_by.clone(),
        rows: a.rows.clone(),
        cols: a.cols.clone(),
        xmax_us: xmax_us(a.xmax.as_deref())?,
        tail: a.tail,
    };
    let r = Request {
        runs: &ids,
        options,
        dir: &a.output,
    };
    let o = request::run(&store, &r).map_err(|e| match e {
        RequestError::Report(e @ ReportError::Write { .. }) => {
            UsageError::from_error(e).hint("choose a writable directory with -o DIR")
        }
        e => UsageError::from_error(e),
    })?;
    let what = match o.runs.as_slice() {
        [one] => format!("run {one}"),
        all => format!("{} runs", all.len()),
    };
    writeln!(out, "report of {what} written to {}:", a.output.display())?;
    for p in o.written {
        writeln!(out, "  {}", p.display())?;
    }
    Ok(ExitStatus::Success)
}

/// `--xmax`: a latency with its unit through the shared duration parser (a bare number is
/// µs), as whole microseconds rounded up; at least 1 µs.
fn xmax_us(text: Option<&str>) -> Result<Option<u64>, UsageError> {
    let Some(n) = crate::commands::opt_dur(text, "--xmax", "us")? else {
        return Ok(None);
    };
    match n.as_ns().div_ceil(1000) {
        0 => Err(
            UsageError::new("invalid value for '--xmax': 0 (the axis needs at least 1us)")
                .hint("write e.g. `--xmax 400us`"),
        ),
        us => Ok(Some(us)),
    }
}
