//! The session of a noise workload ([`Workload::Noise`]): the same steps as a timer
//! [`crate::Session`] and a [`crate::RespondSession`], around the engine's busy loops.
//!
//! The front end builds the plan ([`RunPlan::build`]), runs the [`crate::preflight`] audit and
//! applies the [`SystemSettings`] first, as for any run; then
//!
//! 1. [`NoiseSession::start`]: rtscope's own thread on the housekeeping CPUs
//!    ([`crate::placement`]), the flight recorder started when the plan explains gaps, the
//!    loops started (their pre-heat gives the threshold), the run's row recorded with the
//!    audit's verdicts;
//! 2. [`NoiseSession::drive`]: the gap rings drained until the loops end or a stop signal
//!    (SIGINT, SIGTERM, SIGHUP, held by [`crate::drive::hold_signals`]), a checkpoint a second,
//!    the plan's limits checked on every CPU;
//! 3. [`NoiseSession::finish`]: the end recorded with the front end's exit code; the settings
//!    and the thread's affinity restored when the session is dropped.
//!
//! The hardware-only mode (`irqs_off`, the kernel's hwlat tracer) has no loops of rtscope's:
//! [`crate::noise::hwlat::run`] measures it.

use crate::noise::record::{NoiseMeta, NoiseRecorder};
use crate::noise::run::{self as noise_run, Outcome};
use crate::noise::{CpuNoise, NoiseCheck, NoiseExplainer};
use crate::placement::{Pinned, Placement};
use crate::plan::{RunPlan, Workload};
use crate::record::{end_status, RecordSpec};
use crate::session::{pin_current, RecordOutcome, SessionError, SystemSettings};
use rtscope_engine::noise::NoiseRun;
use rtscope_engine::sys;
use rtscope_store::{RunId, Store};
use std::path::Path;

/// A measured noise run, before its end is recorded.
pub struct NoiseMeasured {
    /// The loops' results, kept gaps, stop signal and explanation.
    pub outcome: Outcome,
    /// Each CPU's summary, with its steal time and SMIs.
    pub rows: Vec<CpuNoise>,
    /// The plan's limits checked on every CPU.
    pub checks: Vec<NoiseCheck>,
    /// The run's configuration as its JSON document gives it (the threshold the loops ran
    /// with, their counter and resolution).
    pub config: serde_json::Value,
    /// What the record says besides the threads (the end, the settings with the run's steal
    /// time and SMIs).
    pub meta: NoiseMeta,
}

impl NoiseMeasured {
    /// Whether a stop signal ended the loops early (the run is then recorded as interrupted).
    pub fn interrupted(&self) -> bool {
        self.outcome.signal.is_some()
    }

    /// Whether a CPU exceeded a limit.
    pub fn limits_failed(&self) -> bool {
        self.checks.iter().any(|c| !c.passed)
    }
}

/// One noise measurement in progress.
pub struct NoiseSession {
    plan: RunPlan,
    run: Option<NoiseRun>,
    explainer: Option<NoiseExplainer>,
    recorder: Option<NoiseRecorder>,
    run_id: Option<RunId>,
    meta: NoiseMeta,
    config: serde_json::Value,
    placement: Placement,
    /// Whether the analysis of the gaps after the loops says on stderr that it starts.
    announce_analysis: bool,
    _pinned: Option<Pinned>,
    _settings: SystemSettings,
}

impl NoiseSession {
    /// Starts the loops of `plan` (a noise workload of busy loops), rtscope's own thread on
    /// the housekeeping CPUs; `store` (`None`: not recorded) records the run from its start
    /// as `spec` says (its kind is `noise` whatever `spec` says; its `config_json` is the
    /// run's own).
    pub fn start(
        mut plan: RunPlan,
        settings: SystemSettings,
        store: Option<Store>,
        spec: RecordSpec,
    ) -> Result<NoiseSession, SessionError> {
        let Some(n) = plan.workload.noise().filter(|n| n.hwlat.is_none()) else {
            return Err(SessionError::Workload("a noise (busy loop)"));
        };
        let (mut config, keep) = (n.config.clone(), n.keep_gaps);
        let online = sys::online_cpus();
        let allowed = sys::current_affinity().unwrap_or_else(|_| online.clone());
        let placement = plan.placement(&online).within(&allowed);
        // Before the trace reader and the loops: what it starts is created there.
        let pinned = placement.cpus().map(pin_current).transpose()?;
        config.smi_files = crate::noise::smi_files(Path::new("/"), &config.cpus);
        // The run's row first, before the trace's set-up (seconds under load) and the loops'
        // pre-heat: a kill there leaves an `incomplete` run, and a lock held by another
        // process is waited out before anything is measured.
        let mut meta = NoiseMeta {
            label: spec.label.clone(),
            tags: tag_pairs(&spec.tags)?,
            command_line: spec.command_line.clone(),
            config_json: noise_run::setup_json(&config, keep).to_string(),
            started: std::time::SystemTime::now(),
            ended: std::time::SystemTime::now(),
            clock_start: sys::now(libc::CLOCK_MONOTONIC),
            policy: config.policy.name(),
            priority: config.priority,
            period: config.period,
            recorder: None,
        };
        let mut recorder = match store {
            Some(s) => {
                let mut r = NoiseRecorder::begin(s, &meta, &config.cpus, keep)?;
                if !spec.checks.is_empty() {
                    r.set_checks(&spec.checks)?;
                }
                Some(r)
            }
            None => None,
        };
        let explainer = plan
            .explain
            .map(|t| NoiseExplainer::start(t, &config.cpus, placement.cpus(), plan.explain_keep));
        let run = match NoiseRun::start(config.clone()) {
            Ok(run) => run,
            // Refused before the loops ran: nothing measured, nothing kept.
            Err(e) => {
                if let Some(r) = recorder {
                    r.abandon();
                }
                return Err(e.into());
            }
        };
        let json = noise_run::config_json(&run, keep);
        meta.config_json = json.to_string();
        (meta.started, meta.ended) = (run.started(), run.started());
        meta.clock_start = run.clock_start();
        if let Some(r) = recorder.as_mut() {
            r.restart(&meta)?;
        }
        if let Workload::Noise(n) = &mut plan.workload {
            n.config = config;
        }
        Ok(NoiseSession {
            plan,
            run: Some(run),
            explainer,
            run_id: recorder.as_ref().map(NoiseRecorder::id),
            recorder,
            meta,
            config: json,
            placement,
            announce_analysis: false,
            _pinned: pinned,
            _settings: settings,
        })
    }

    /// Has the analysis of the gaps after the loops (`--explain`) say on stderr that it
    /// starts, how many gaps it attributes and how to stop it (a front end for people; the
    /// lines after every 2 s of it come whatever this says).
    pub fn announce_analysis(&mut self, on: bool) {
        self.announce_analysis = on;
    }

    /// The plan (its noise configuration with the SMI counters the loops read).
    pub fn plan(&self) -> &RunPlan {
        &self.plan
    }

    /// The loops, until the session is driven.
    pub fn run(&self) -> Option<&NoiseRun> {
        self.run.as_ref()
    }

    /// Where rtscope's own thread runs.
    pub fn placement(&self) -> &Placement {
        &self.placement
    }

    /// The run's id in the store (recorded from the start).
    pub fn run_id(&self) -> Option<RunId> {
        self.run_id
    }

    /// The explain tier in use, with the reason it is not better (`None`: not explaining).
    pub fn explain_line(&self) -> Option<String> {
        self.explainer.as_ref().map(NoiseExplainer::tier_line)
    }

    /// What a reader of the results must know of the run's settings: the default threshold
    /// raised to the loops' resolution, a duty cycle over the kernel's RT throttling budget
    /// (settings named the front end's way).
    pub fn notes(&self, naming: crate::field::Naming) -> Vec<String> {
        let (Some(n), Some(run)) = (self.plan.workload.noise(), &self.run) else {
            return Vec::new();
        };
        let c = &n.config;
        let raised =
            noise_run::raised_threshold_note(c, run.threshold(), run.resolutions(), naming);
        let throttle = crate::noise::rt_throttle_note(c, Path::new("/"));
        throttle.into_iter().chain(raised).collect()
    }

    /// Runs the loops to their end or a stop signal; `tick` sees them after every drain of
    /// their rings (every 100 ms), for progress.
    pub fn drive(&mut self, tick: &mut dyn FnMut(&NoiseRun)) -> NoiseMeasured {
        let run = self.run.take().expect("a noise session is driven once");
        let keep = self.plan.workload.noise().map_or(1, |n| n.keep_gaps);
        let observed = self.explainer.as_ref().map(NoiseExplainer::recorder_row);
        let o = noise_run::drive(
            run,
            (self.explainer.take(), self.announce_analysis),
            keep,
            self.recorder.as_mut(),
            tick,
        );
        let mut meta = self.meta.clone();
        meta.ended = o.ended;
        meta.recorder = observed;
        // The store keeps the steal time and SMIs of the run with its settings.
        let cpus = self
            .plan
            .workload
            .noise()
            .map_or(&[][..], |n| &n.config.cpus);
        let mut stored = self.config.clone();
        stored["platform"] = o.platform.stored(cpus);
        meta.config_json = stored.to_string();
        let rows = o.rows();
        let limits = self.plan.workload.noise().map_or(&[][..], |n| &n.limits);
        let checks = crate::noise::check_limits(limits, &rows);
        NoiseMeasured {
            outcome: o,
            rows,
            checks,
            config: self.config.clone(),
            meta,
        }
    }

    /// Records the end of the run with the front end's exit code: the line to show, or what
    /// went wrong.
    pub fn finish(&mut self, m: &NoiseMeasured, exit_code: i32) -> RecordOutcome {
        let Some(recorder) = self.recorder.take() else {
            return RecordOutcome::not_recorded();
        };
        let path = recorder.path().to_path_buf();
        let o = &m.outcome;
        let end = (end_status(m.interrupted()), exit_code);
        let written = recorder.finish(&m.meta, &o.threads, &o.gaps, o.explained.as_ref(), end);
        RecordOutcome::written(written.map_err(|e| e.to_string()), &path)
    }
}

/// `KEY=VALUE` tags as pairs, each checked as a user's tag.
fn tag_pairs(tags: &[String]) -> Result<Vec<(String, String)>, rtscope_common::error::UsageError> {
    tags.iter()
        .map(|t| rtscope_common::names::parse_tag(t))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtscope_core::Nanos;
    use rtscope_engine::CpuSet;
    use rtscope_store::RunKind;

    use crate::test_plans::noise_plan as plan;

    #[test]
    fn each_session_refuses_a_plan_of_another_workload() {
        use crate::plan::NoiseSpec;
        use crate::record::RecordSpec;
        use crate::{Session, SessionError, SystemSettings};
        let spec = || RecordSpec {
            kind: RunKind::Noise,
            label: None,
            tags: Vec::new(),
            command_line: Vec::new(),
            config_json: String::new(),
            monitor_interval: None,
            checks: Vec::new(),
            raw: false,
        };
        let noise = plan(&[0], NoiseSpec::default()).unwrap();
        let recorded = crate::Recorded {
            store: None,
            spec: spec(),
            checkpoint_period: std::time::Duration::ZERO,
        };
        let timer = Session::start(noise, SystemSettings::default(), recorded);
        assert!(matches!(timer, Err(SessionError::Workload("a timer"))));
        let timer_plan = crate::plan::RunPlan::build(
            &crate::plan::PlanSpec {
                duration: Some(Nanos::from_secs(1)),
                ..crate::plan::PlanSpec::default()
            },
            &CpuSet::from_cpus([0, 1]),
        )
        .unwrap();
        let hwlat = plan(
            &[0],
            NoiseSpec {
                irqs_off: true,
                ..NoiseSpec::default()
            },
        )
        .unwrap();
        for p in [timer_plan, hwlat] {
            let s = NoiseSession::start(p, SystemSettings::default(), None, spec());
            assert!(matches!(s, Err(SessionError::Workload(w)) if w.contains("noise")));
        }
    }
}
