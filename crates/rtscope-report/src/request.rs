//! `rtscope report` as one call: the chosen runs read from a store the way the report needs
//! them ([`read`]: their bundles; `--raw`'s samples streamed into the CDF and the scatter a
//! chunk at a time, so memory stays bounded; latency runs before noise runs; `--tail`'s
//! analyses, rtscope-evt's own) and the files built and written one at a time ([`run`]: the
//! rendered figures are never all in memory). The command line chooses the runs, lowers its
//! flags into a [`Request`] and prints what was written.

use crate::model::{RunData, ThreadTail};
use crate::{build_each, write, ReportError, ReportOptions};
use rtscope_store::{RunId, Store, StoreError};
use std::path::{Path, PathBuf};

/// What to report, how, and where.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    /// The runs, in order, each once.
    pub runs: &'a [RunId],
    /// The report's options (`raw` and `tail` also say what [`read`] reads).
    pub options: ReportOptions,
    /// The directory the files go to.
    pub dir: &'a Path,
}

/// What was reported.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The runs reported, in the report's order (latency runs first).
    pub runs: Vec<RunId>,
    /// The files written, in order.
    pub written: Vec<PathBuf>,
}

/// Why no report was made.
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A thread's tail could not be read (`--tail`).
    #[error(transparent)]
    Tail(#[from] rtscope_evt::input::InputError),
    /// Building or writing the report failed.
    #[error(transparent)]
    Report(#[from] ReportError),
}

/// Reports the runs `r` names into `r.dir`.
pub fn run(store: &Store, r: &Request) -> Result<Outcome, RequestError> {
    let runs = read(store, r.runs, r.options.raw, r.options.tail)?;
    let mut written = Vec::new();
    build_each(&runs, &r.options, &mut |f| {
        written.extend(write(r.dir, std::slice::from_ref(&f))?);
        Ok(())
    })?;
    Ok(Outcome {
        runs: runs.iter().map(RunData::id).collect(),
        written,
    })
}

/// The runs `ids` as the report reads them: `raw` streams their raw samples into the CDF and
/// scatter, `tail` adds each thread's tail analysis; latency runs first, then noise runs.
pub fn read(
    store: &Store,
    ids: &[RunId],
    raw: bool,
    tail: bool,
) -> Result<Vec<RunData>, RequestError> {
    let mut runs: Vec<RunData> = (store.bundles(ids, false)?.into_iter())
        .map(RunData::from)
        .collect();
    if raw {
        for r in runs.iter_mut().filter(|r| r.detail.raw_samples > 0) {
            let (id, threads): (_, Vec<u32>) =
                (r.id(), r.detail.threads.iter().map(|t| t.thread).collect());
            let views = crate::raw::views(&threads, |t, sink| {
                store.for_each_raw_chunk(id, t, &mut |c| {
                    sink(&c);
                    Ok(())
                })
            })?;
            (r.raw, r.scatter) = (Some(views.0), Some(views.1));
        }
    }
    crate::noise::order(&mut runs);
    if tail {
        add_tails(store, &mut runs)?;
    }
    Ok(runs)
}

/// The tail analysis of each thread (`--tail`), in the report's order, of the first
/// [`crate::worst::MAX_TAILS`] threads; noise runs (ordered last) have gaps, not wake-ups, and
/// get none.
fn add_tails(store: &Store, runs: &mut [RunData]) -> Result<(), RequestError> {
    let o = rtscope_evt::Options {
        regimes: true,
        ..rtscope_evt::Options::default()
    };
    let mut left = crate::worst::MAX_TAILS;
    for r in runs.iter_mut().filter(|r| !crate::noise::is_noise(r)) {
        if r.detail.threads.len() > left {
            break;
        }
        left -= r.detail.threads.len();
        for t in &r.detail.threads {
            let (analysis, tail) =
                rtscope_evt::input::read_and_analyse(store, &r.detail, t, &o, false)?;
            let figures = tail.map_or_else(Default::default, |tail| {
                rtscope_evt::figure::figures(&tail, &analysis)
            });
            r.tails.push(ThreadTail {
                thread: t.thread,
                cpu: t.cpu,
                analysis,
                figures,
            });
        }
    }
    Ok(())
}
