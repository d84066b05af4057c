//! `rtscope report [RUN…|--campaign NAME|--last] -o DIR`: plots, tables and one self-contained
//! `report.html` from recorded runs. The rendering lives in rtscope-report; this module only
//! chooses the runs, reads them and writes the files. See docs/report.md.

use crate::cli::report::ReportArgs;
use rtscope_analysis::select::{self, Selector};
use rtscope_common::error::{ExitStatus, UsageError};
use rtscope_report::model::RunData;
use rtscope_report::ReportOptions;
use rtscope_store::{RunId, Store};
use std::io::Write;

/// Runs `rtscope report`.
pub fn run(a: &ReportArgs, out: &mut dyn Write) -> anyhow::Result<ExitStatus> {
    let store = super::open_db(a.db.as_deref())?;
    if let Some(series) = &a.watch {
        return super::report_watch::run(&store, series, a, out);
    }
    let ids = chosen(&store, a)?;
    let mut runs: Vec<RunData> = store
        .bundles(&ids, false)
        .map_err(UsageError::from_error)?
        .into_iter()
        .map(RunData::from)
        .collect();
    if a.raw {
        // Streamed from the store a chunk at a time: bounded memory (rtscope_report::raw).
        for r in runs.iter_mut().filter(|r| r.detail.raw_samples > 0) {
            let (id, threads): (_, Vec<u32>) =
                (r.id(), r.detail.threads.iter().map(|t| t.thread).collect());
            let views = rtscope_report::raw::views(&threads, |t, sink| {
                store.for_each_raw_chunk(id, t, &mut |c| {
                    sink(&c);
                    Ok(())
                })
            });
            (r.raw, r.scatter) = views
                .map(|(c, s)| (Some(c), Some(s)))
                .map_err(UsageError::from_error)?;
        }
    }
    // Latency runs first, then the noise runs (busy-loop gaps, drawn in their own section).
    rtscope_report::noise::order(&mut runs);
    if a.tail {
        add_tails(&store, &mut runs)?;
    }
    let opts = ReportOptions {
        title: a.title.clone(),
        raw: a.raw,
        group_by: a.group_by.clone(),
        rows: a.rows.clone(),
        cols: a.cols.clone(),
        xmax_us: xmax_us(a.xmax.as_deref())?,
        tail: a.tail,
    };
    // Each file written as soon as it is made: the rendered figures are never all in memory.
    let mut written = Vec::new();
    let built = rtscope_report::build_each(&runs, &opts, &mut |f| {
        written.extend(rtscope_report::write(&a.output, std::slice::from_ref(&f))?);
        Ok(())
    });
    match built {
        Err(e @ rtscope_report::ReportError::Write { .. }) => {
            let hint = "choose a writable directory with -o DIR";
            return Err(UsageError::from_error(e).hint(hint).into());
        }
        other => other?,
    }
    let what = match runs.len() {
        1 => format!("run {}", runs[0].id()),
        n => format!("{n} runs"),
    };
    writeln!(out, "report of {what} written to {}:", a.output.display())?;
    for p in written {
        writeln!(out, "  {}", p.display())?;
    }
    Ok(ExitStatus::Success)
}

/// The tail analysis of each thread (`--tail`), in the report's order, of the first
/// [`rtscope_report::worst::MAX_TAILS`] threads.
fn add_tails(store: &Store, runs: &mut [RunData]) -> anyhow::Result<()> {
    let o = rtscope_evt::Options {
        regimes: true,
        ..rtscope_evt::Options::default()
    };
    let mut left = rtscope_report::worst::MAX_TAILS;
    // Noise runs (ordered last) have gaps, not wake-ups: no tail of theirs is estimated.
    for r in runs
        .iter_mut()
        .filter(|r| !rtscope_report::noise::is_noise(r))
    {
        if r.detail.threads.len() > left {
            break;
        }
        left -= r.detail.threads.len();
        for t in &r.detail.threads {
            let (analysis, tail) =
                rtscope_evt::input::read_and_analyse(store, &r.detail, t, &o, false)
                    .map_err(UsageError::from_error)?;
            let figures = tail.map_or_else(Default::default, |tail| {
                rtscope_evt::figure::figures(&tail, &analysis)
            });
            r.tails.push(rtscope_report::model::ThreadTail {
                thread: t.thread,
                cpu: t.cpu,
                analysis,
                figures,
            });
        }
    }
    Ok(())
}

/// The runs the arguments name, in order, each once.
/// The newest run; when it belongs to a campaign, every run of that campaign.
pub(crate) fn last_with_campaign(store: &Store) -> Result<Vec<RunId>, UsageError> {
    let err = |e: rtscope_store::StoreError| UsageError::from_error(e);
    let Some(last) = store.last_run().map_err(err)? else {
        return Ok(Vec::new());
    };
    match store.campaign_of(last).map_err(err)? {
        Some((c, _)) => select::campaign_runs(store, &c),
        None => Ok(vec![last]),
    }
}

fn chosen(store: &Store, a: &ReportArgs) -> Result<Vec<RunId>, UsageError> {
    let mut ids: Vec<RunId> = Vec::new();
    if let Some(name) = &a.campaign {
        let c = store
            .campaign_by_name(name)
            .map_err(UsageError::from_error)?
            .ok_or_else(|| {
                UsageError::new(format!(
                    "no campaign named '{name}' in {}",
                    store.path().display()
                ))
                .hint("`rtscope run` records campaigns; `rtscope runs` lists the runs")
            })?;
        ids.extend(select::campaign_runs(store, &c)?);
    }
    let texts: Vec<&str> = a.runs.iter().map(String::as_str).collect();
    if a.last || (texts.is_empty() && a.campaign.is_none()) {
        ids.extend(last_with_campaign(store)?);
    }
    for t in texts {
        let sel = Selector::parse(t)?;
        ids.extend(select::resolve(store, &sel, t)?);
    }
    let mut seen = std::collections::HashSet::new();
    ids.retain(|id| seen.insert(*id));
    if ids.is_empty() {
        return Err(
            UsageError::new(format!("no run to report in {}", store.path().display()))
                .hint("record a run with `rtscope measure` first"),
        );
    }
    Ok(ids)
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
