//! rtscope-load: the loads a run is measured under, and the supervision that keeps any of them
//! from outliving the run.
//!
//! * [`LoadSpec`]: what to start — a built-in load (messaging like hackbench, memory like
//!   stressapptest, CPU, file I/O, TCP over loopback) or an external tool (`hackbench`,
//!   `stress-ng`, `stressapptest`, …) with its arguments;
//! * [`LoadReport`]: what a load did (messages, bytes, operations, miscompares), recorded with
//!   the run so a run "under load" can prove the load ran;
//! * [`start`] / [`RunningLoads`]: run loads under a shepherd process, so none survives
//!   rtscope, however it ends (the shepherd module's documentation gives the design);
//! * [`worker_main`] and [`shepherd_main`]: the hidden `rtscope __load` and
//!   `rtscope __shepherd` entry points;
//! * [`builtin`]: the built-in loads themselves, usable in-process too;
//! * [`working`]: whether a started load works yet (the CPU time of its processes), so a run
//!   can wait for a load that is slow to start.
//! * [`validate`] and [`find_program`]: an external tool checked and found before a run.
//!
//! These are the crate's one door: its modules behind them are private.
//!
//! Units: durations in nanoseconds (`ran_ns`), sizes in bytes or MiB as named, rates per second.
//!
//! Re-exports (its facade): the load specs, the supervisor (`start`, `RunningLoads`, …), the
//! hidden entry points (`worker_main`, `shepherd_main`), `LoadError` and the external-program
//! checks are named at the root for the campaign and the CLI; their modules are private, so the
//! root is their one path.

#![warn(missing_docs)]

pub mod builtin;
pub mod cgroup;
mod error;
mod external;
mod shepherd;
mod spec;
mod supervise;
pub mod sys;
mod worker;
pub mod working;

pub use error::LoadError;
pub use external::{find_program, validate};
pub use shepherd::shepherd_main;
pub use spec::{LoadReport, LoadSpec, Metric, MsgMode, MsgTransport};
pub use supervise::{start, EarlyExit, RunningLoads};
pub use worker::worker_main;
