//! rtscope-load: the loads a run is measured under.
//!
//! * [`LoadSpec`]: what to start — a built-in load (messaging like hackbench, memory like
//!   stressapptest, CPU, file I/O, TCP over loopback) or an external tool (`hackbench`,
//!   `stress-ng`, `stressapptest`, …) with its arguments;
//! * [`LoadReport`]: what a load did (messages, bytes, operations, miscompares), recorded with
//!   the run so a run "under load" can prove the load ran.

#![warn(missing_docs)]

pub mod spec;

pub use spec::{LoadReport, LoadSpec, Metric, MsgMode, MsgTransport};
