//! rtscope-session: one measurement (timer wake-ups, event response or OS noise), end to end,
//! for every front end.
//!
//! * [`plan`]: the typed [`plan::RunPlan`] (built from a [`plan::PlanSpec`]; errors name the
//!   [`field::Field`]);
//! * [`field`]: the settings as errors name them, each front end its own way ([`field::Naming`]);
//! * `session`: [`Session`] — system settings, the engine, monitors, recording, limits;
//! * `respond`: [`RespondSession`] — the same for a respond workload (rtscope-respond's
//!   IPC pairs and GPIO edges);
//! * [`noise`]: [`noise_session::NoiseSession`] — the same for a noise workload (the engine's busy
//!   loops), its summary, limits, record and `--explain` of gaps; the hwlat mode;
//! * [`record`]: checkpoints of a running run into the store, from the control thread;
//! * `monitoring`: the monitor thread on a housekeeping CPU;
//! * [`housekeeping`]: the control and monitor threads' priority and cadence;
//! * [`placement`]: the CPUs of rtscope's own threads (never a measured one);
//! * [`preflight`]: the system audit (rtscope-check) run before a measurement and stored with it;
//! * `environment`, [`sysinfo`]: what is recorded about the machine.
//!
//! The exit codes, the usage error and the `--limit` gates are rtscope-common's.
//!
//! Depends on core, engine, respond, store, monitor, check and export (its error type); never on
//! clap, a front end or the report.
//!
//! Re-exports (its facade): the sessions and their errors (`Session`, `SystemSettings`, `Observer`,
//! `RunError`, …, `RespondSession`, `RespondMeasured`) and `Event` are named at the root for the
//! front ends; their modules (`session`, `respond`, `drive`) are private, so the root is their one
//! path. [`plan`] names its private modules' types (`plan::RunPlan`, `plan::Workload`, …) the same
//! way. Everything else is reached through its public module only.

#![warn(missing_docs)]

pub mod cpus;
mod drive;
mod environment;
pub mod explain;
pub mod field;
pub mod housekeeping;
pub mod lock_wait;
mod monitoring;
pub mod noise;
pub mod noise_session;
pub mod output;
pub mod placement;
pub mod plan;
pub mod preflight;
pub mod record;
mod respond;
mod session;
pub mod smi_sampler;
pub mod sysinfo;
#[cfg(test)]
mod test_plans;

pub use drive::Event;
pub use respond::{RespondMeasured, RespondSession};
pub use session::{
    Measured, Observer, RecordOutcome, Recorded, RunError, Session, SessionError, SystemSettings,
};
