//! `rtscope tail` as one call: a typed [`Request`] (the run, the CPU, the options and the
//! limits, already parsed) against a store gives an [`Outcome`] — each thread's analysis with
//! its limits' verdicts, the fixes of its refusals, and whether every limit passed — as data.
//! The command line lowers its flags, calls [`run`] and prints (the text by [`crate::render`],
//! the versioned document by rtscope-present).

use crate::gate::{TailLimit, Verdict};
use crate::input::{self, InputError};
use crate::words::{Fix, Who};
use crate::{render, Analysis, Options};
use rtscope_store::{RunId, Store, StoreError};

/// What to estimate for which run.
#[derive(Debug, Clone)]
pub struct Request {
    /// The run.
    pub run: RunId,
    /// Only its thread(s) on this CPU (`None`: every thread).
    pub cpu: Option<u32>,
    /// The analysis' options; [`Request::new`] adds each limit's probability once.
    pub options: Options,
    /// The gates (`--limit tail@…`).
    pub limits: Vec<TailLimit>,
    /// Print the levels of refused fits too, marked (`--unreliable`; no gate passes on them).
    pub unreliable: bool,
}

impl Request {
    /// A request whose probabilities include every limit's (once each: a limit at a
    /// probability also asked for adds no second row).
    pub fn new(
        run: RunId,
        cpu: Option<u32>,
        mut options: Options,
        limits: Vec<TailLimit>,
        unreliable: bool,
    ) -> Request {
        for p in limits.iter().filter_map(|l| l.probability()) {
            if !options
                .probabilities
                .iter()
                .any(|q| (q / p - 1.0).abs() < 1e-9)
            {
                options.probabilities.push(p);
            }
        }
        Request {
            run,
            cpu,
            options,
            limits,
            unreliable,
        }
    }
}

/// One thread's answer.
#[derive(Debug, Clone)]
pub struct ThreadTail {
    /// How the thread is named (run, thread, CPU).
    pub who: Who,
    /// Its analysis.
    pub analysis: Analysis,
    /// Each limit with its verdict, in the request's order.
    pub verdicts: Vec<(TailLimit, Verdict)>,
}

/// Every selected thread's answer.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The run.
    pub run: RunId,
    /// The threads, in the run's order.
    pub threads: Vec<ThreadTail>,
    /// The fixes of every thread's refusals (each once per thread it concerns).
    pub fixes: Vec<Fix>,
}

impl Outcome {
    /// Whether every limit of every thread passed (else a gate's exit 1).
    pub fn passed(&self) -> bool {
        self.threads
            .iter()
            .flat_map(|t| &t.verdicts)
            .all(|(_, v)| matches!(v, Verdict::Pass { .. }))
    }
}

/// Why no answer was made (a refusal is an answer, not an error).
#[derive(Debug, thiserror::Error)]
pub enum TailError {
    /// `--cpu N` for a run that did not measure CPU N.
    #[error("run {run} has no thread on CPU {cpu}")]
    NoSuchCpu {
        /// The run.
        run: RunId,
        /// The CPU asked for.
        cpu: u32,
        /// The CPUs it measured (empty: not recorded).
        cpus: Vec<u32>,
    },
    /// The run's data could not be read.
    #[error("run {run}: {source}")]
    Input {
        /// The run.
        run: RunId,
        /// What failed.
        source: InputError,
    },
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl TailError {
    /// What to do about it.
    pub fn hint(&self) -> Option<String> {
        match self {
            TailError::NoSuchCpu { cpus, .. } if cpus.is_empty() => {
                Some("its CPUs are not recorded".into())
            }
            TailError::NoSuchCpu { cpus, .. } => {
                let cpus: Vec<String> = cpus.iter().map(u32::to_string).collect();
                Some(format!("its CPUs are {}", cpus.join(", ")))
            }
            TailError::Input { .. } => None,
            TailError::Store(e) => Some(e.hint().to_string()),
        }
    }
}

/// Analyses the threads `r` selects and checks its limits on each.
pub fn run(store: &Store, r: &Request) -> Result<Outcome, TailError> {
    let detail = store.run(r.run)?;
    let threads: Vec<_> = (detail.threads.iter())
        .filter(|t| r.cpu.is_none() || t.cpu == r.cpu)
        .collect();
    if let (Some(cpu), true) = (r.cpu, threads.is_empty()) {
        let cpus = detail.threads.iter().filter_map(|t| t.cpu).collect();
        return Err(TailError::NoSuchCpu {
            run: r.run,
            cpu,
            cpus,
        });
    }
    let mut out = Outcome {
        run: r.run,
        threads: Vec::new(),
        fixes: Vec::new(),
    };
    for t in threads {
        let analysis = input::analyse_thread(store, &detail, t, &r.options, r.unreliable)
            .map_err(|source| TailError::Input { run: r.run, source })?;
        // M:N: threads sharing a CPU are named by thread.
        let shared_cpu =
            t.cpu.is_some() && detail.threads.iter().filter(|u| u.cpu == t.cpu).count() > 1;
        let who = Who {
            run: r.run.to_string(),
            thread: t.thread,
            cpu: t.cpu,
            shared_cpu,
        };
        out.fixes.extend(render::fixes(&who, &analysis));
        let verdicts = r.limits.iter().map(|l| (*l, l.check(&analysis))).collect();
        out.threads.push(ThreadTail {
            who,
            analysis,
            verdicts,
        });
    }
    Ok(out)
}
