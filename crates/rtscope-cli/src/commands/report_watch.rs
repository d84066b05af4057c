//! `rtscope report --watch SERIES [--from T] [--to T] [--per LEVEL] -o DIR`: the long-term
//! report of an `rtscope watch` series. The drawing lives in rtscope-report's `watch`; this
//! module finds the series, reads its rows in the period and writes the files.

use crate::cli::{ReportArgs, WatchLevel};
use crate::exit::{ExitStatus, UsageError};
use rtscope_report::watch::{WatchData, WatchOptions};
use rtscope_store::watch::{Level, SeriesSummary};
use rtscope_store::Store;
use std::io::Write;

/// A time of `--from`/`--to`, Unix ns.
pub fn parse_time(flag: &str, text: &str) -> Result<i64, UsageError> {
    rtscope_core::civil::parse_utc(text)
        .and_then(|s| s.checked_mul(1_000_000_000))
        .ok_or_else(|| {
            UsageError::new(format!("{flag} '{}': not a time", rtscope_core::text::escape(text)))
                .hint("write a UTC time as 2026-11-24, 2026-11-24 13:00, 2026-11-24T13:00:00+01:00 or @1795305600 (Unix seconds)")
        })
}

/// The period `[from, to)` of the flags, Unix ns; `None` when neither is given.
pub fn period(from: Option<&str>, to: Option<&str>) -> Result<Option<(i64, i64)>, UsageError> {
    if from.is_none() && to.is_none() {
        return Ok(None);
    }
    let a = from.map_or(Ok(i64::MIN), |t| parse_time("--from", t))?;
    let b = to.map_or(Ok(i64::MAX), |t| parse_time("--to", t))?;
    if a >= b {
        return Err(UsageError::new("--from is not before --to")
            .hint("give a period that ends after it starts"));
    }
    Ok(Some((a, b)))
}

/// The series named `name` in `store`.
pub fn series(store: &Store, name: &str) -> Result<SeriesSummary, UsageError> {
    let all = store.watch_series().map_err(UsageError::from_error)?;
    let names: Vec<String> = all
        .iter()
        .map(|s| rtscope_core::text::escape(&s.name).into_owned())
        .collect();
    all.into_iter().find(|s| s.name == name).ok_or_else(|| {
        let known = match names.len() {
            0 => "it holds none: `rtscope watch` records them".to_string(),
            _ => format!("it holds {}", names.join(", ")),
        };
        UsageError::new(format!(
            "no watch series named '{}' in {}",
            rtscope_core::text::escape(name),
            store.path().display()
        ))
        .hint(format!("{known}; `rtscope runs` lists them"))
    })
}

/// Every stored row of `series` that starts in `period`, at every level.
pub fn rows(
    store: &Store,
    series: &SeriesSummary,
    period: Option<(i64, i64)>,
) -> Result<Vec<rtscope_store::watch::WatchWindow>, UsageError> {
    let (from, to) = period.unwrap_or((i64::MIN, i64::MAX));
    let mut out = Vec::new();
    for level in [Level::Day, Level::Hour, Level::Window] {
        let got = store.windows(series.id, level, from, to);
        out.extend(got.map_err(UsageError::from_error)?);
    }
    Ok(out)
}

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
