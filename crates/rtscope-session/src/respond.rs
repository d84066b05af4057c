//! The session of a respond workload ([`Workload::Respond`]): the same steps as a timer
//! [`crate::Session`], around rtscope-respond's measuring threads instead of the engine's.
//!
//! The front end builds the plan ([`RunPlan::build`]), runs the [`crate::preflight`] audit and
//! applies the [`SystemSettings`] first, as for a timer run; then
//!
//! 1. [`RespondSession::start`]: memory locked (the plan's `mlock`);
//! 2. [`RespondSession::drive`]: the measurements, one after another, until they end or a stop
//!    signal (SIGINT, SIGTERM, SIGHUP, held by [`rtscope_common::signals::hold_signals`]); the plan's
//!    limits checked on every row;
//! 3. [`RespondSession::finish`]: the run recorded (kind `respond`, one "thread" per row, the
//!    audit's verdicts with it) with the front end's exit code; the settings restored when the
//!    session is dropped.

use crate::plan::{RespondPlan, RunPlan, Workload};
use crate::record::{end_status, RecordSpec};
use crate::session::{RecordOutcome, SessionError, SystemSettings};
use rtscope_common::error::UsageError;
use rtscope_common::limits::{self, Check};
use rtscope_core::civil::unix_ns;
use rtscope_core::Nanos;
use rtscope_engine::{sys, EngineError};
use rtscope_respond::record::Row;
use rtscope_respond::run::{self as measuring, Outcome};
use rtscope_respond::RespondError;
use rtscope_store::{
    Checkpoint, EventRow, NewRun, RunId, RunStatus, SampleFigures, SeriesPoint, Store, StoreError,
    ThreadInfo, ThreadStats,
};
use std::io;
use std::path::Path;
use std::time::SystemTime;

/// A measured respond run, before its end is recorded.
#[derive(Debug)]
pub struct RespondMeasured {
    /// The rows, the stop signal and a failure during the run.
    pub outcome: Outcome,
    /// The plan's limits, checked on every row (`SOURCE PATH`).
    pub checks: Vec<Check>,
    /// Wall-clock start and end.
    pub started: SystemTime,
    /// Wall-clock end.
    pub ended: SystemTime,
    /// CLOCK_MONOTONIC at the start (for the events' offsets).
    pub clock_start: Nanos,
}

impl RespondMeasured {
    /// Whether a stop signal ended the measurements early (the run is then recorded as
    /// interrupted; a failure during the run is the outcome's `error`).
    pub fn interrupted(&self) -> bool {
        self.outcome.signal.is_some()
    }

    /// Whether a row exceeded a limit.
    pub fn limits_failed(&self) -> bool {
        self.checks.iter().any(|c| !c.passed)
    }
}

/// One respond measurement in progress.
pub struct RespondSession {
    plan: RunPlan,
    store: Option<Store>,
    spec: RecordSpec,
    mlocked: bool,
    run_id: Option<RunId>,
    _settings: SystemSettings,
}

impl RespondSession {
    /// Locks memory as the plan asks; `store` (`None`: not recorded) records the run at its
    /// end as `spec` says (its `config_json` is the front end's, given to
    /// [`RespondSession::finish`]).
    pub fn start(
        plan: RunPlan,
        settings: SystemSettings,
        store: Option<Store>,
        spec: RecordSpec,
    ) -> Result<RespondSession, SessionError> {
        if plan.workload.respond().is_none() {
            return Err(SessionError::Workload("a respond"));
        }
        let mlocked = plan.config.mlock;
        if mlocked {
            sys::mlockall().map_err(EngineError::Mlock)?;
        }
        Ok(RespondSession {
            plan,
            store,
            spec,
            mlocked,
            run_id: None,
            _settings: settings,
        })
    }

    /// The plan.
    pub fn plan(&self) -> &RunPlan {
        &self.plan
    }

    /// The run's id in the store, once recorded.
    pub fn run_id(&self) -> Option<RunId> {
        self.run_id
    }

    /// Runs the measurements; `announce` is told of each before it starts (`eventfd 1→1
    /// (same, timer pacing)`, `gpio loopback`); its error (a closed output) ends the run.
    pub fn drive(
        &mut self,
        announce: &mut dyn FnMut(&str) -> io::Result<()>,
    ) -> Result<RespondMeasured, RespondError> {
        let (started, clock_start) = (SystemTime::now(), sys::now(libc::CLOCK_MONOTONIC));
        let measured = match &self.plan.workload {
            Workload::Respond(RespondPlan::Ipc(configs)) => {
                measuring::measure_ipc(configs.clone(), &mut |c| {
                    announce(&format!(
                        "{} {} ({}, {} pacing)",
                        c.kind,
                        c.placement.path(),
                        c.placement.kind(),
                        c.pacing.name()
                    ))
                })
            }
            Workload::Respond(RespondPlan::Gpio {
                config,
                responder_cmd,
            }) => measuring::measure_gpio((**config).clone(), responder_cmd.as_deref(), &mut |c| {
                announce(&format!("gpio {}", c.mode().name()))
            }),
            Workload::Timer | Workload::Noise(_) => {
                unreachable!("checked by RespondSession::start")
            }
        };
        self.unlock();
        let outcome = measured?;
        let checks = outcome
            .rows
            .iter()
            .flat_map(|r| {
                let scope = format!("{} {}", r.source, r.path);
                limits::check(&self.plan.limits, &scope, &r.stats, &r.histogram)
            })
            .collect();
        Ok(RespondMeasured {
            outcome,
            checks,
            started,
            ended: SystemTime::now(),
            clock_start,
        })
    }

    fn unlock(&mut self) {
        if std::mem::take(&mut self.mlocked) {
            sys::munlockall();
        }
    }

    /// Records the run with the front end's exit code and `config_json` (a JSON object whose
    /// `rows` say what each thread index is): the line to show, or what went wrong.
    pub fn finish(
        &mut self,
        m: &RespondMeasured,
        exit_code: i32,
        config_json: String,
    ) -> RecordOutcome {
        let Some(store) = self.store.as_mut() else {
            return RecordOutcome::not_recorded();
        };
        let status = end_status(m.interrupted());
        let written = record(store, &self.spec, config_json, m, status, exit_code);
        self.run_id = written.as_ref().ok().copied();
        let written = written.map_err(|e| format!("the run could not be recorded: {e}"));
        RecordOutcome::written(written, store.path())
    }
}

impl Drop for RespondSession {
    fn drop(&mut self) {
        self.unlock();
    }
}

/// Why a respond run could not be recorded.
#[derive(Debug, thiserror::Error)]
enum RecordError {
    #[error(transparent)]
    Tag(#[from] UsageError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

fn thread_stats(i: u32, r: &Row) -> ThreadStats<'_> {
    ThreadStats {
        thread: i,
        tid: 0,
        figures: SampleFigures::of(&r.stats, None),
        missed: r.stats.missed,
        raw_dropped: 0,
        histogram: &r.histogram,
    }
}

/// Writes the run whole (one checkpoint with the final statistics, one series point per row
/// and the kept events) and the audit's verdicts; returns its id.
fn record(
    store: &mut Store,
    spec: &RecordSpec,
    config_json: String,
    m: &RespondMeasured,
    status: RunStatus,
    exit_code: i32,
) -> Result<RunId, RecordError> {
    let rows = &m.outcome.rows;
    let threads = rows
        .iter()
        .enumerate()
        .map(|(i, r)| ThreadInfo {
            thread: i as u32,
            cpu: r.cpu.map(|c| c as u32),
            policy: r.policy.to_string(),
            priority: r.priority,
            interval_ns: r.interval_ns,
        })
        .collect();
    let tags = spec
        .tags
        .iter()
        .map(|t| rtscope_common::names::parse_tag(t))
        .collect::<Result<Vec<_>, _>>()?;
    let new = NewRun {
        kind: spec.kind,
        label: spec.label.clone(),
        tags,
        started: rtscope_core::civil::rfc3339(m.started),
        started_unix_ns: unix_ns(m.started),
        pid: std::process::id(),
        tool_version: env!("CARGO_PKG_VERSION").into(),
        command_line_json: serde_json::to_string(&spec.command_line)
            .unwrap_or_else(|_| "[]".into()),
        config_json,
        environment: crate::environment::capture(Path::new("/")),
        threads,
    };
    let id = store.begin_run(&new)?;
    if !spec.checks.is_empty() {
        store.set_checks(id, &spec.checks)?;
    }
    let cp = checkpoint(m);
    let ended = rtscope_core::civil::rfc3339(m.ended);
    store.finish_run(id, &cp, status, &ended, exit_code)?;
    Ok(id)
}

fn checkpoint(m: &RespondMeasured) -> Checkpoint<'_> {
    let length = m
        .ended
        .duration_since(m.started)
        .map_or(0, |d| d.as_nanos() as u64);
    let start_unix = unix_ns(m.started);
    let mut cp = Checkpoint {
        progress_ns: length,
        at_unix_ns: unix_ns(SystemTime::now()),
        ..Checkpoint::default()
    };
    for (i, r) in m.outcome.rows.iter().enumerate() {
        let t = i as u32;
        cp.threads.push(thread_stats(t, r));
        cp.series.push(SeriesPoint {
            thread: t,
            offset_ns: length,
            length_ns: length,
            samples: r.stats.count,
            min_ns: (r.stats.count > 0).then_some(r.stats.min.0),
            max_ns: (r.stats.count > 0).then_some(r.stats.max.0),
            mean_ns: r.stats.mean_ns(),
            p99_ns: r.histogram.value_at_quantile(0.99).map(|v| v.0),
            missed: r.stats.missed,
        });
        for e in &r.events {
            let offset = e.time.0.saturating_sub(m.clock_start.0);
            cp.events.push(EventRow {
                thread: t,
                cycle: e.cycle,
                latency_ns: e.latency.0,
                offset_ns: offset,
                unix_ns: start_unix.saturating_add(i64::try_from(offset).unwrap_or(0)),
            });
        }
    }
    cp
}
