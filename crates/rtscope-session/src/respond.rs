//! The session of a respond workload ([`Workload::Respond`]): the same steps as a timer
//! [`crate::Session`], around rtscope-respond's measuring threads instead of the engine's.
//!
//! The front end builds the plan ([`RunPlan::build`]), runs the [`crate::preflight`] audit and
//! applies the [`SystemSettings`] first, as for a timer run; then
//!
//! 1. [`RespondSession::start`]: memory locked (the plan's `mlock`); the run's row written
//!    (status `running`, so a killed process leaves it, read back as `incomplete`);
//! 2. [`RespondSession::drive`]: the measurements, one after another, until they end or a stop
//!    signal (SIGINT, SIGTERM, SIGHUP, held by [`rtscope_common::signals::hold_signals`]); the plan's
//!    limits checked on every row;
//! 3. [`RespondSession::finish`]: the run's figures and end recorded (kind `respond`, one
//!    "thread" per row, the audit's verdicts with it) with the front end's exit code; the
//!    settings restored when the session is dropped. A measurement that fails is not recorded
//!    (its row is deleted), as before the row was written at the start.

use crate::lock_wait::wait_out_lock;
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
use std::time::{Duration, SystemTime};

/// The store's busy timeout after a write waited out another process's lock (as measure's).
const AFTER_WAIT: Duration = Duration::from_millis(200);

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
    /// The threads the row written at the start holds (one per planned IPC measurement; none
    /// for GPIO, whose rows are known only at its end).
    begun: Vec<ThreadInfo>,
    _settings: SystemSettings,
}

impl RespondSession {
    /// Locks memory as the plan asks; `store` (`None`: not recorded) records the run as `spec`
    /// says: its row now (status `running`, the audit's verdicts, `spec.config_json`), its
    /// figures and end at [`RespondSession::finish`] (with the front end's `config_json`).
    pub fn start(
        plan: RunPlan,
        settings: SystemSettings,
        store: Option<Store>,
        spec: RecordSpec,
    ) -> Result<RespondSession, SessionError> {
        if plan.workload.respond().is_none() {
            return Err(SessionError::Workload("a respond"));
        }
        let mut store = store;
        let begun = planned_threads(&plan);
        let run_id = match store.as_mut() {
            Some(s) => Some(begin(s, &spec, &begun).map_err(UsageError::from_error)?),
            None => None,
        };
        let mlocked = plan.config.mlock;
        let mut session = RespondSession {
            plan,
            store,
            spec,
            mlocked: false,
            run_id,
            begun,
            _settings: settings,
        };
        if mlocked {
            if let Err(e) = sys::mlockall() {
                session.forget_run();
                return Err(EngineError::Mlock(e).into());
            }
            session.mlocked = true;
        }
        Ok(session)
    }

    /// Deletes the row written at the start (the measurement did not run); a failure to delete
    /// leaves it, read back as `incomplete` once this process has ended.
    fn forget_run(&mut self) {
        if let (Some(store), Some(id)) = (self.store.as_mut(), self.run_id.take()) {
            let _ = wait_out_lock(store, AFTER_WAIT, |s| s.delete_run(id));
        }
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
        let mut beat = Beat {
            store: self.store.as_mut().zip(self.run_id),
            threads: self.begun.len(),
            clock_start,
            last: None,
        };
        let measured = match &self.plan.workload {
            Workload::Respond(RespondPlan::Ipc(configs)) => measuring::measure_ipc(
                configs.clone(),
                &mut |c| {
                    announce(&format!(
                        "{} {} ({}, {} pacing)",
                        c.kind,
                        c.placement.path(),
                        c.placement.kind(),
                        c.pacing.name()
                    ))
                },
                &mut |i, live| beat.tick(Some((i, live))),
            ),
            Workload::Respond(RespondPlan::Gpio {
                config,
                responder_cmd,
            }) => measuring::measure_gpio(
                (**config).clone(),
                responder_cmd.as_deref(),
                &mut |c| announce(&format!("gpio {}", c.mode().name())),
                &mut || beat.tick(None),
            ),
            Workload::Timer | Workload::Noise(_) => {
                unreachable!("checked by RespondSession::start")
            }
        };
        self.unlock();
        let outcome = match measured {
            Ok(o) => o,
            Err(e) => {
                self.forget_run();
                return Err(e);
            }
        };
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

    /// Records the run's figures and end with the front end's exit code and `config_json` (a
    /// JSON object whose `rows` say what each thread index is): the line to show, or what went
    /// wrong. The row written at the start is finished when its threads are the rows measured;
    /// otherwise (a GPIO run, or an interrupted run that measured fewer rows than planned) the
    /// run is written whole under a new id and the row of the start deleted.
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
        let threads = row_threads(&m.outcome.rows);
        let begun = self.run_id.take();
        let written = match begun {
            Some(id) if same_threads(&self.begun, &threads) => {
                finish_begun(store, id, config_json, m, status, exit_code).map(|()| id)
            }
            _ => {
                let r = record(
                    store,
                    &self.spec,
                    config_json,
                    m,
                    threads,
                    status,
                    exit_code,
                );
                if let (Ok(_), Some(old)) = (&r, begun) {
                    let _ = wait_out_lock(store, AFTER_WAIT, |s| s.delete_run(old));
                }
                r
            }
        };
        self.run_id = written.as_ref().ok().copied();
        let written = written.map_err(|e| format!("the run could not be recorded: {e}"));
        RecordOutcome::written(written, store.path())
    }
}

/// How often the run's row is checkpointed while it measures.
const BEAT: Duration = Duration::from_secs(1);

/// The checkpoints while a respond run measures: its progress (so a live run is not read as
/// stale, nor a killed one as having measured nothing) and, for IPC, the running
/// measurement's live statistics. A checkpoint refused (a lock) is skipped: the next one, or
/// the end, writes the figures again whole.
struct Beat<'a> {
    store: Option<(&'a mut Store, RunId)>,
    threads: usize,
    clock_start: Nanos,
    last: Option<std::time::Instant>,
}

impl Beat<'_> {
    fn tick(&mut self, live: Option<(usize, &rtscope_engine::ThreadShared)>) {
        let Some((store, id)) = self.store.as_mut() else {
            return;
        };
        if self.last.is_some_and(|t| t.elapsed() < BEAT) {
            return;
        }
        self.last = Some(std::time::Instant::now());
        let now = sys::now(libc::CLOCK_MONOTONIC);
        let (stats, histogram) = match live {
            Some((i, l)) if i < self.threads => (Some((i, l.stats(), l.tid())), l.histogram()),
            _ => (None, rtscope_core::Histogram::new()),
        };
        let mut cp = Checkpoint {
            progress_ns: now.0.saturating_sub(self.clock_start.0),
            at_unix_ns: unix_ns(SystemTime::now()),
            ..Checkpoint::default()
        };
        if let Some((i, s, tid)) = &stats {
            // The measuring thread goes on while the two are read: the histogram, read after
            // the counters, may hold a wake-up more. The checkpoint's count is the histogram's,
            // so that `runs show` and the report (which reads the histogram) agree on it
            // (seen beside CI's hog: 1,015 against 1,016 after a SIGKILL).
            let mut figures = SampleFigures::of(s, None);
            figures.samples = histogram.count();
            cp.threads.push(ThreadStats {
                thread: *i as u32,
                tid: *tid,
                figures,
                missed: s.missed,
                raw_dropped: 0,
                histogram: &histogram,
            });
        }
        let _ = store.checkpoint(*id, &cp);
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

/// The threads of the rows measured, as the store keeps them.
fn row_threads(rows: &[Row]) -> Vec<ThreadInfo> {
    rows.iter()
        .enumerate()
        .map(|(i, r)| ThreadInfo {
            thread: i as u32,
            cpu: r.cpu.map(|c| c as u32),
            policy: r.policy.to_string(),
            priority: r.priority,
            interval_ns: r.interval_ns,
        })
        .collect()
}

/// The threads of the rows the plan will measure, as [`rtscope_respond::run::ipc_row`] makes
/// them: one per IPC measurement; none for GPIO (its rows are the intervals that saw edges).
fn planned_threads(plan: &RunPlan) -> Vec<ThreadInfo> {
    match &plan.workload {
        Workload::Respond(RespondPlan::Ipc(configs)) => configs
            .iter()
            .enumerate()
            .map(|(i, c)| ThreadInfo {
                thread: i as u32,
                cpu: c.placement.receiver.map(|c| c as u32),
                policy: c.policy.name().to_string(),
                priority: c.priority,
                interval_ns: c.interval.0,
            })
            .collect(),
        _ => Vec::new(),
    }
}

fn same_threads(a: &[ThreadInfo], b: &[ThreadInfo]) -> bool {
    let key = |t: &ThreadInfo| (t.thread, t.cpu, t.policy.clone(), t.priority, t.interval_ns);
    !a.is_empty() && a.len() == b.len() && a.iter().zip(b).all(|(x, y)| key(x) == key(y))
}

/// What the store keeps of a run when it starts (`started`: the row's start, restated at the
/// end with the measurement's).
fn new_run(
    spec: &RecordSpec,
    config_json: String,
    started: SystemTime,
    threads: Vec<ThreadInfo>,
) -> Result<NewRun, RecordError> {
    let tags = spec
        .tags
        .iter()
        .map(|t| rtscope_common::names::parse_tag(t))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(NewRun {
        kind: spec.kind,
        label: spec.label.clone(),
        tags,
        started: rtscope_core::civil::rfc3339(started),
        started_unix_ns: unix_ns(started),
        pid: std::process::id(),
        tool_version: env!("CARGO_PKG_VERSION").into(),
        command_line_json: serde_json::to_string(&spec.command_line)
            .unwrap_or_else(|_| "[]".into()),
        config_json,
        environment: crate::environment::capture(Path::new("/")),
        threads,
    })
}

/// Writes the run's row at the start (status `running`, the planned threads, the audit's
/// verdicts), waiting out another process's lock; returns its id.
fn begin(
    store: &mut Store,
    spec: &RecordSpec,
    threads: &[ThreadInfo],
) -> Result<RunId, RecordError> {
    let new = new_run(
        spec,
        spec.config_json.clone(),
        SystemTime::now(),
        threads.to_vec(),
    )?;
    let id = wait_out_lock(store, AFTER_WAIT, |s| s.begin_run(&new))?;
    if !spec.checks.is_empty() {
        wait_out_lock(store, AFTER_WAIT, |s| s.set_checks(id, &spec.checks))?;
    }
    Ok(id)
}

/// Finishes the row written at the start: the measurement's start and the front end's
/// settings, one checkpoint with the final statistics, the end.
fn finish_begun(
    store: &mut Store,
    id: RunId,
    config_json: String,
    m: &RespondMeasured,
    status: RunStatus,
    exit_code: i32,
) -> Result<(), RecordError> {
    let started = rtscope_core::civil::rfc3339(m.started);
    wait_out_lock(store, AFTER_WAIT, |s| {
        s.restate_start(id, &started, unix_ns(m.started), &config_json)
    })?;
    let cp = checkpoint(m);
    let ended = rtscope_core::civil::rfc3339(m.ended);
    wait_out_lock(store, AFTER_WAIT, |s| {
        s.finish_run(id, &cp, status, &ended, exit_code)
    })?;
    Ok(())
}

/// Writes the run whole (one checkpoint with the final statistics, one series point per row
/// and the kept events) and the audit's verdicts; returns its id.
fn record(
    store: &mut Store,
    spec: &RecordSpec,
    config_json: String,
    m: &RespondMeasured,
    threads: Vec<ThreadInfo>,
    status: RunStatus,
    exit_code: i32,
) -> Result<RunId, RecordError> {
    let new = new_run(spec, config_json, m.started, threads)?;
    let id = wait_out_lock(store, AFTER_WAIT, |s| s.begin_run(&new))?;
    if !spec.checks.is_empty() {
        wait_out_lock(store, AFTER_WAIT, |s| s.set_checks(id, &spec.checks))?;
    }
    let cp = checkpoint(m);
    let ended = rtscope_core::civil::rfc3339(m.ended);
    wait_out_lock(store, AFTER_WAIT, |s| {
        s.finish_run(id, &cp, status, &ended, exit_code)
    })?;
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
