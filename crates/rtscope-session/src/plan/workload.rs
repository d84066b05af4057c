//! What a plan's threads measure: timer wake-ups (the engine's measuring threads), the
//! response to events (`rtscope respond`, a campaign's `respond = "..."` scenario: IPC
//! sender/receiver pairs or GPIO wiring, measured by rtscope-respond) or OS noise (the
//! [`super::noise`] module).
//!
//! Every front end lowers its own words into a [`WorkloadSpec`] beside the rest of the
//! [`PlanSpec`](super::PlanSpec); [`RunPlan::build`](super::RunPlan::build) checks the shared
//! settings (priority for the policy, interval, length, latency, limits) as for any run, then
//! [`lower`] checks what is the workload's own and builds its measurement from the plan's
//! settings. Errors name a [`Field`], spelled by each front end (`--burst`, `burst`).

use super::noise::{NoisePlan, NoiseSpec};
use super::{Field, Naming, PlanError, Problem, RunPlan};
use rtscope_engine::{CpuSet, Policy, ThreadSpec};
use rtscope_respond::gpio::GpioConfig;
use rtscope_respond::ipc::{IpcConfig, IpcKind, Pacing, Placement, MAX_BURST};

/// What a run measures, as a front end says it (typed, unchecked).
#[derive(Debug, Clone, PartialEq, Default)]
pub enum WorkloadSpec {
    /// Timer wake-ups (`rtscope measure`, cyclictest, timer scenarios).
    #[default]
    Timer,
    /// Event response latency.
    Respond(RespondSpec),
    /// OS noise on busy-looping CPUs (`rtscope noise`, a campaign's `workload = "noise"`).
    Noise(NoiseSpec),
}

/// An event response measurement as a front end says it. The plan's policy, priority,
/// interval, length, event threshold and capacity apply to it.
#[derive(Debug, Clone, PartialEq)]
pub enum RespondSpec {
    /// IPC sender/receiver pairs: every mechanism on every placement, one after another.
    Ipc {
        /// The mechanisms.
        kinds: Vec<IpcKind>,
        /// Where each pair's sender and receiver run.
        placements: Vec<Placement>,
        /// Events sent back to back per interval.
        burst: u32,
        /// How the sender is paced.
        pacing: Pacing,
    },
    /// GPIO edges: the lines, their options and the responder; its timing and scheduling
    /// fields are replaced by the plan's.
    Gpio {
        /// The wiring.
        wiring: Box<GpioConfig>,
        /// Another program that answers the edges (`--responder-cmd`, run by `sh -c`).
        responder_cmd: Option<String>,
    },
}

/// What a checked run measures.
#[derive(Debug, Clone, Default)]
pub enum Workload {
    /// Timer wake-ups: the engine's measuring threads of [`RunPlan::config`].
    #[default]
    Timer,
    /// Event response latency; the plan's `config.threads` are then its receivers or
    /// responder (what the pre-run audit checks), never started by the engine.
    Respond(RespondPlan),
    /// OS noise; the plan's `config.threads` are one per measured CPU (what the pre-run
    /// audit checks), never started by the engine: the `noise_session` module's `NoiseSession` runs the
    /// loops.
    Noise(Box<NoisePlan>),
}

/// A checked event response measurement.
#[derive(Debug, Clone)]
pub enum RespondPlan {
    /// IPC pairs, measured one after another.
    Ipc(Vec<IpcConfig>),
    /// GPIO edges.
    Gpio {
        /// The measurement.
        config: Box<GpioConfig>,
        /// Another program that answers the edges.
        responder_cmd: Option<String>,
    },
}

/// What is wrong with a respond workload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RespondProblem {
    /// A burst outside 1..=[`MAX_BURST`].
    Burst {
        /// The burst asked for.
        asked: u32,
    },
    /// A burst with the handshake pacing (one event per ready token).
    BurstWithHandshake,
    /// A CPU of a placement that is not online.
    CpuOffline {
        /// The CPU.
        cpu: usize,
        /// The online CPUs.
        online: CpuSet,
    },
    /// A policy the responders cannot run with (batch, idle, deadline).
    Policy {
        /// The policy's name.
        policy: &'static str,
    },
    /// GPIO wiring that cannot be measured (the reason says which lines).
    Wiring(String),
}

impl RespondProblem {
    /// The message, with fields named the front end's way.
    pub fn message(&self, naming: Naming) -> String {
        let n = |f: Field| naming.name(f);
        match self {
            RespondProblem::Burst { asked } => format!(
                "invalid value '{asked}' for '{}': use 1..={MAX_BURST} events per interval",
                n(Field::Burst)
            ),
            RespondProblem::BurstWithHandshake => format!(
                "'{}' cannot be used with '{} handshake': it sends one event per ready token",
                n(Field::Burst),
                n(Field::Pacing)
            ),
            RespondProblem::CpuOffline { cpu, online } => format!(
                "invalid value for '{}': CPU {cpu} is not online (online CPUs: {online})",
                n(Field::Placement)
            ),
            RespondProblem::Policy { policy } => format!(
                "invalid value '{policy}' for '{}': event response is measured with fifo, rr or other",
                n(Field::Policy)
            ),
            RespondProblem::Wiring(reason) => reason.clone(),
        }
    }
}

fn problem(field: Field, p: RespondProblem) -> PlanError {
    PlanError::new(field, Problem::Respond(p))
}

/// Lowers `w` into `plan` (built from the shared settings): a respond workload takes the
/// plan's scheduling, interval, length and events, and the plan's threads become its
/// receivers (one per IPC pair) or its responder; no tracer, no sample ring.
pub(super) fn lower(
    w: &WorkloadSpec,
    plan: &mut RunPlan,
    online: &CpuSet,
) -> Result<(), PlanError> {
    let WorkloadSpec::Respond(r) = w else {
        return Ok(());
    };
    let c = &plan.config;
    let t0 = c.threads[0].clone();
    if !matches!(t0.policy, Policy::Fifo | Policy::Rr | Policy::Other) {
        let policy = t0.policy.name();
        return Err(problem(Field::Policy, RespondProblem::Policy { policy }));
    }
    let respond = match r {
        RespondSpec::Ipc {
            kinds,
            placements,
            burst,
            pacing,
        } => {
            check_ipc(placements, *burst, *pacing, online)?;
            let mut configs = Vec::new();
            for &kind in kinds {
                for &p in placements {
                    let mut i = IpcConfig::new(kind);
                    (i.placement, i.policy, i.priority) = (p, t0.policy, t0.priority);
                    (i.interval, i.burst, i.pacing) = (t0.interval, *burst, *pacing);
                    (i.loops, i.duration) = (c.loops, c.duration);
                    (i.event_threshold, i.event_capacity) = (c.event_threshold, c.event_capacity);
                    configs.push(i);
                }
            }
            RespondPlan::Ipc(configs)
        }
        RespondSpec::Gpio {
            wiring,
            responder_cmd,
        } => {
            let mut g = (**wiring).clone();
            (g.policy, g.priority, g.interval) = (t0.policy, t0.priority, t0.interval);
            (g.count, g.duration) = (c.loops, c.duration);
            g.validate()
                .map_err(|e| problem(Field::Mechanism, RespondProblem::Wiring(e.to_string())))?;
            RespondPlan::Gpio {
                config: Box::new(g),
                responder_cmd: responder_cmd.clone(),
            }
        }
    };
    let receivers: Vec<Option<usize>> = match &respond {
        RespondPlan::Ipc(configs) => configs.iter().map(|i| i.placement.receiver).collect(),
        RespondPlan::Gpio { config, .. } => vec![config.responder_cpu],
    };
    plan.config.threads = receivers
        .into_iter()
        .map(|cpu| ThreadSpec {
            affinity: cpu.map(|c| CpuSet::from_cpus([c])),
            ..t0.clone()
        })
        .collect();
    plan.config.sample_ring = None;
    (plan.per_cpu, plan.explain) = (false, None);
    plan.workload = Workload::Respond(respond);
    Ok(())
}

fn check_ipc(
    placements: &[Placement],
    burst: u32,
    pacing: Pacing,
    online: &CpuSet,
) -> Result<(), PlanError> {
    if burst == 0 || burst > MAX_BURST {
        let p = RespondProblem::Burst { asked: burst };
        return Err(problem(Field::Burst, p));
    }
    if pacing == Pacing::Handshake && burst != 1 {
        return Err(problem(Field::Burst, RespondProblem::BurstWithHandshake));
    }
    let cpus = placements.iter().flat_map(|p| [p.sender, p.receiver]);
    if let Some(cpu) = cpus.flatten().find(|&cpu| !online.contains(cpu)) {
        let p = RespondProblem::CpuOffline {
            cpu,
            online: online.clone(),
        };
        return Err(problem(Field::Placement, p));
    }
    Ok(())
}

impl Workload {
    /// The respond measurement, if this is one.
    pub fn respond(&self) -> Option<&RespondPlan> {
        match self {
            Workload::Respond(r) => Some(r),
            Workload::Timer | Workload::Noise(_) => None,
        }
    }

    /// The noise measurement, if this is one.
    pub fn noise(&self) -> Option<&NoisePlan> {
        match self {
            Workload::Noise(n) => Some(n),
            Workload::Timer | Workload::Respond(_) => None,
        }
    }
}
