//! One measurement end to end: plan → system settings → engine → monitors and recording →
//! outcome. `rtscope measure`, `rtscope cyclictest` and every run of a campaign go through
//! [`Session`]; what they show while it runs is theirs, through an [`Observer`].
//!
//! The steps are separate calls because the front ends interleave their own output and work
//! with them (a campaign files the run into its campaign once it has an id and stops its loads
//! before the end is written):
//!
//! 1. [`SystemSettings::apply`]: the `/dev/cpu_dma_latency` request, restored when dropped;
//! 2. [`Session::start`]: the measuring threads start, the run is recorded and monitored;
//! 3. [`Session::drive`]: the control loop until the run ends (signals, ticks, observer);
//! 4. [`Session::finish`]: the end is written with the front end's exit code.

use crate::drive::{self, Event};
use crate::explain::{self, Explaining};
use crate::housekeeping::{Cadence, Housekeeping};
use crate::placement::{Pinned, Placement};
use crate::plan::RunPlan;
use crate::record::{RecordSpec, Recording};
use rtscope_common::error::UsageError;
use rtscope_common::limits::Check;
use rtscope_core::Nanos;
use rtscope_engine::{knobs::DmaLatencyGuard, sys, CpuSet, Run, RunResult, Sample};
use rtscope_store::{RunId, Store};
use std::io;
use std::path::Path;
use std::time::Duration;

/// Why a session could not start.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// A setting the run needs could not be applied (cpu_dma_latency).
    #[error(transparent)]
    Setting(rtscope_engine::EngineError),
    /// The measuring threads could not start.
    #[error(transparent)]
    Engine(#[from] rtscope_engine::EngineError),
    /// The main thread could not be moved to the housekeeping CPUs.
    #[error("cannot pin rtscope's main thread to CPUs {cpus} ({option})")]
    MainAffinity {
        /// The CPUs asked for.
        cpus: CpuSet,
        /// The option that asked for them.
        option: &'static str,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// The run could not be recorded at its start.
    #[error(transparent)]
    Record(#[from] UsageError),
    /// The plan's workload is another session's (a timer [`Session`], or the respond
    /// module's session); names the one this session runs.
    #[error("this session runs {0} workload")]
    Workload(&'static str),
}

/// What a front end that runs a session (cyclictest, campaigns) can fail with. Each variant
/// keeps its cause whole, so the top level still recognises a closed pipe.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The session could not start.
    #[error(transparent)]
    Session(#[from] SessionError),
    /// Bad input or setup (no such run, an unusable file).
    #[error(transparent)]
    Usage(#[from] UsageError),
    /// Writing output failed (a full disk, a closed pipe).
    #[error(transparent)]
    Io(#[from] io::Error),
    /// Encoding JSON failed.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// Reading or writing the database failed.
    #[error(transparent)]
    Store(#[from] rtscope_store::StoreError),
}

/// Settings of the system that a run changes, held for its whole length and restored when
/// dropped, on every exit path (the kernel restores them even after SIGKILL).
#[derive(Debug, Default)]
pub struct SystemSettings {
    dma: Option<DmaLatencyGuard>,
}

impl SystemSettings {
    /// Applies what `plan` asks for.
    pub fn apply(plan: &RunPlan) -> Result<SystemSettings, SessionError> {
        let dma = plan
            .latency
            .map(DmaLatencyGuard::set)
            .transpose()
            .map_err(SessionError::Setting)?;
        Ok(SystemSettings { dma })
    }

    /// The cpu_dma_latency request held, µs.
    pub fn dma_latency_us(&self) -> Option<i32> {
        self.dma.as_ref().map(|d| d.value_us)
    }

    /// The cpu_dma_latency value before the request, µs, when there is a request and the
    /// value could be read.
    pub fn dma_previous_us(&self) -> Option<i32> {
        self.dma.as_ref().and_then(|d| d.previous_us)
    }
}

/// What a front end watches and prints while the run goes on.
pub trait Observer {
    /// Called on every tick of the control thread and on SIGUSR1/SIGUSR2. An error (a closed
    /// stdout, say) stops the run and is returned by [`Session::drive`].
    fn on(&mut self, run: &Run, ev: Event) -> io::Result<()>;

    /// The samples thread `thread` took since the last call (runs with a sample ring only),
    /// oldest first, before the tick's [`Observer::on`]. The session is the one reader of the
    /// rings: every sample reaches both the observer (`-v`) and the store (`--raw`).
    fn samples(&mut self, _thread: usize, _samples: &[Sample]) -> io::Result<()> {
        Ok(())
    }
}

impl<F: FnMut(&Run, Event) -> io::Result<()>> Observer for F {
    fn on(&mut self, run: &Run, ev: Event) -> io::Result<()> {
        self(run, ev)
    }
}

/// Empties every thread's sample ring into `into[i]` (cleared first).
fn drain_rings(run: &Run, into: &mut [Vec<Sample>]) {
    for (t, buf) in run.threads().iter().zip(into.iter_mut()) {
        buf.clear();
        if let Some(ring) = t.ring() {
            ring.drain(|s| buf.push(s));
        }
    }
}

/// How the session records the run.
pub struct Recorded {
    /// The store (`None`: not recorded, no monitors).
    pub store: Option<Store>,
    /// What the run is recorded as.
    pub spec: RecordSpec,
    /// Checkpoints are at least this far apart (zero: at every tick).
    pub checkpoint_period: Duration,
}

/// A measured run, before its end is recorded.
pub struct Measured {
    /// The results.
    pub result: RunResult,
    /// The signal (SIGINT, SIGTERM or SIGHUP) that ended it early.
    pub signal: Option<i32>,
    /// The observer's error (a closed stdout) that ended it early.
    pub output_error: Option<io::Error>,
    /// The plan's limits, checked per thread and over all threads.
    pub checks: Vec<Check>,
    /// Why the spikes were late (`--explain`).
    pub explain: Option<rtscope_explain::book::ExplainSummary>,
}

impl Measured {
    /// Whether the run was ended early, by a signal or a failed output (it is then recorded
    /// as interrupted).
    pub fn interrupted(&self) -> bool {
        self.signal.is_some() || self.output_error.is_some()
    }

    /// Whether a limit was exceeded.
    pub fn limits_failed(&self) -> bool {
        self.checks.iter().any(|c| !c.passed)
    }
}

/// How the end of the run was recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordOutcome {
    /// The line to show (`recorded as run 3 in rtscope.db`, or what went wrong).
    pub line: Option<String>,
    /// Whether recording failed (the front end then exits 2).
    pub failed: bool,
}

/// One measurement in progress.
pub struct Session {
    plan: RunPlan,
    run: Option<Run>,
    recording: Recording,
    explaining: Option<Explaining>,
    /// How the housekeeping threads were scheduled: asked, and what took effect.
    housekeeping: (Housekeeping, String),
    /// The cadence of the control thread's ticks (checkpoints), once driven.
    checkpoints: Option<Cadence>,
    /// The most trace events kept around waiting spikes at once (`--explain`).
    kept_peak: Option<usize>,
    /// What the explanation observed with, recorded beside it (`--explain`).
    observed: Option<rtscope_store::Recorder>,
    /// Where rtscope's own threads run.
    placement: Placement,
    /// Their affinity, restored when the session is dropped.
    _pinned: Option<Pinned>,
    _settings: SystemSettings,
}

/// How errors name the housekeeping CPUs (each front end has its own option for them).
const HOUSEKEEPING: &str = "the housekeeping CPUs";

impl Session {
    /// Starts the measuring threads and the recording, rtscope's own threads on the plan's
    /// housekeeping CPUs ([`crate::placement`]).
    pub fn start(
        plan: RunPlan,
        settings: SystemSettings,
        recorded: Recorded,
    ) -> Result<Session, SessionError> {
        if !matches!(plan.workload, crate::plan::Workload::Timer) {
            return Err(SessionError::Workload("a timer"));
        }
        let online = sys::online_cpus();
        let allowed = sys::current_affinity().unwrap_or_else(|_| online.clone());
        let placement = plan.placement(&online).within(&allowed);
        // Every measuring thread is pinned: the main thread pins itself first, so whatever it
        // starts from here on (the trace reaper and reader, the monitor) is created there.
        let mut pinned = match &placement {
            Placement::Separate { cpus, .. } => {
                let mut p = pin_current(cpus)?;
                p.others(cpus, &[]);
                Some(p)
            }
            _ => None,
        };
        let sched = Housekeeping::for_run(plan.housekeeping, &plan.config);
        // Before `--explain`'s set-up: at SCHED_OTHER beside a campaign's loads (started before
        // the session), reading /proc/kallsyms and writing the trace instance's triggers took
        // 41 s before a 2 s run in an emulated guest (issue 52); at the housekeeping priority
        // the whole command took 10.7 s there (52.1 s before), measured beside other builds.
        let applied = sched.apply_current();
        let ask = explain::ExplainAsk {
            threshold: plan.explain,
            keep: plan.explain_keep,
            stacks: plan.explain_stacks,
            recorder: plan.explain_recorder,
        };
        let explaining = Explaining::start(&ask, &plan.config, &placement, sched);
        let run = Run::start(plan.config.clone())?;
        if let Placement::Shared { cpus, .. } = &placement {
            // After the measuring threads started: an unpinned one must not inherit it.
            let mut p = pin_current(cpus)?;
            let measuring: Vec<i32> = run.threads().iter().map(|t| t.tid()).collect();
            p.others(cpus, &measuring);
            pinned = Some(p);
        }
        let recording = Recording::begin(
            recorded.store,
            recorded.spec,
            &plan.config,
            &run,
            recorded.checkpoint_period,
            (sched, placement.cpus()),
        )?;
        Ok(Session {
            plan,
            run: Some(run),
            recording,
            explaining,
            housekeeping: (sched, applied),
            checkpoints: None,
            kept_peak: None,
            observed: None,
            placement,
            _pinned: pinned,
            _settings: settings,
        })
    }

    /// Moves the threads of process `pid`, a helper rtscope started before the run (a
    /// campaign's load shepherd, not its loads), to the housekeeping CPUs; nothing without a
    /// housekeeping CPU.
    pub fn pin_helper(&mut self, pid: u32) {
        if let Some(cpus) = self.placement.cpus() {
            Pinned::process(pid, cpus);
        }
    }

    /// Where rtscope's own threads run.
    pub fn placement(&self) -> &Placement {
        &self.placement
    }

    /// The line that says where rtscope's own threads run (and when spikes are analysed).
    pub fn placement_line(&self) -> String {
        format!(
            "housekeeping: {}",
            self.placement.describe(self.plan.explain.is_some())
        )
    }

    /// The run's id in the store, once recorded.
    pub fn run_id(&self) -> Option<RunId> {
        self.recording.run_id()
    }

    /// The explainer's tier line (`--explain`), to show at the start.
    pub fn explain_line(&self) -> Option<String> {
        self.explaining.as_ref().map(Explaining::tier_line)
    }

    /// The plan.
    pub fn plan(&self) -> &RunPlan {
        &self.plan
    }

    /// Runs the control loop until the run ends: a checkpoint at every tick, the observer on
    /// every tick and user signal, SIGINT/SIGTERM/SIGHUP stop the threads after their current
    /// cycle, and so does an observer's error (kept in [`Measured::output_error`]). Never
    /// fails: the `Result` is kept for the front ends' `?`.
    pub fn drive(&mut self, tick: Nanos, observer: &mut dyn Observer) -> io::Result<Measured> {
        let run = self.run.take().expect("a session is driven once");
        let rec = &mut self.recording;
        let explaining = &mut self.explaining;
        let mut drained: Vec<Vec<Sample>> = vec![Vec::new(); run.threads().len()];
        let mut cadence = Cadence::new(tick);
        let clock = sys::clock_id(run.config().clock);
        let outcome = drive::drive(run, tick, |run, ev| {
            if ev == Event::Tick {
                cadence.tick(sys::now(clock));
                drain_rings(run, &mut drained);
                rec.add_samples(&drained);
                for (i, s) in drained.iter().enumerate().filter(|(_, s)| !s.is_empty()) {
                    observer.samples(i, s)?;
                }
                rec.tick(run);
                if let Some(x) = explaining.as_mut() {
                    for s in rec.take_samples() {
                        x.push_monitor(&s, run.clock_start());
                    }
                    x.tick(run);
                }
            }
            observer.on(run, ev)
        });
        self.checkpoints = Some(cadence);
        let checks = self.plan.check_limits(&outcome.result);
        // Still at the housekeeping priority: the spikes' analysis must not wait behind the
        // loads, which run until the front end stops them after this returns.
        let mut signal = outcome.signal;
        let explain = self.explaining.take().map(|x| {
            self.kept_peak = Some(x.kept_peak());
            self.observed = Some(x.recorder_row());
            let (summary, cut) = x.finish(&outcome.result, outcome.signal.is_some());
            // A stop signal that cut the analysis of a run that ended by itself interrupts it.
            if let Some(s) = cut.and_then(explain::Cut::signal) {
                signal.get_or_insert(s);
            }
            summary
        });
        if matches!(self.housekeeping.0, Housekeeping::Fifo(_)) {
            crate::housekeeping::reset_current();
        }
        Ok(Measured {
            result: outcome.result,
            signal,
            output_error: outcome.output_error,
            checks,
            explain,
        })
    }

    /// Writes the end of the run with the front end's exit code.
    pub fn finish(&mut self, m: &Measured, exit_code: i32) -> RecordOutcome {
        if let Some(x) = &m.explain {
            let (summary, rows) = explain::store_rows(x, m.result.clock_start);
            self.recording.write_spikes(&summary, &rows);
            if let Some(o) = &self.observed {
                self.recording.write_recorder(o);
            }
        }
        let (line, failed) = self.recording.finish(&m.result, m.interrupted(), exit_code);
        let mut env = vec![
            (
                "rtscope.housekeeping".to_string(),
                self.housekeeping.1.clone(),
            ),
            (
                "rtscope.housekeeping.cpus".to_string(),
                self.placement.env_value(),
            ),
        ];
        if self.plan.explain.is_some() {
            let when = self.placement.analysis().to_string();
            env.push(("rtscope.explain.analysis".into(), when));
        }
        if let Some(off) = &self.plan.explain_off {
            env.push(("rtscope.explain".into(), format!("off: {off}")));
        }
        if let Some(n) = self.kept_peak {
            env.push(("rtscope.explain.kept_events_peak".into(), n.to_string()));
        }
        if let Some(c) = &self.checkpoints {
            env.push(("rtscope.cadence.control".into(), c.describe()));
        }
        self.recording.note_environment(env);
        RecordOutcome { line, failed }
    }
}

impl RecordOutcome {
    /// A run not recorded (`--no-db`): nothing to show.
    pub(crate) fn not_recorded() -> RecordOutcome {
        RecordOutcome {
            line: None,
            failed: false,
        }
    }

    /// A run's end written to the database at `path` (`recorded as run ID in PATH`), or what
    /// kept it out (`error: …`, the error's `Display`).
    pub(crate) fn written<E: std::fmt::Display>(
        id: Result<RunId, E>,
        path: &Path,
    ) -> RecordOutcome {
        match id {
            Ok(id) => RecordOutcome {
                line: Some(format!("recorded as run {id} in {}", path.display())),
                failed: false,
            },
            Err(e) => RecordOutcome {
                line: Some(format!("error: {e}")),
                failed: true,
            },
        }
    }
}

/// Pins the calling thread to the housekeeping CPUs `cpus` (the error names the setting).
pub(crate) fn pin_current(cpus: &CpuSet) -> Result<Pinned, SessionError> {
    Pinned::current(cpus).map_err(|source| SessionError::MainAffinity {
        cpus: cpus.clone(),
        option: HOUSEKEEPING,
        source,
    })
}
