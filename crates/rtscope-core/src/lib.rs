//! rtscope-core: the units and statistics every other rtscope crate shares.
//!
//! * [`Nanos`]: a duration or latency in integer nanoseconds. Every latency in rtscope is a
//!   `Nanos`; conversion to microseconds happens only when text is printed.
//! * [`layout`]: the log-linear bucket layout of rtscope's lossless histogram (HDR-style):
//!   exact below 2,048 ns, then 1,024 sub-buckets per power of two, so the width of any bucket
//!   is at most 1/1024 (0.098 %) of its lowest value, from 1 ns up to 2^36 ns (about 68.7 s).
//! * [`Histogram`]: an owned histogram in that layout, with merge and percentile queries.
//! * [`Stats`]: count, min, mean, max, time and cycle of the max, missed periods.
//!
//! This crate does no I/O and has no dependencies.
//!
//! Re-exports (its facade): `Histogram`, `Overflow`, `Percentile`, `PERCENTILES`, `LoadStatus`,
//! `Nanos`, `ParseDurationError` and `Stats` are named at the root, where every crate reaches them;
//! their modules (`histogram`, `load_status`, `nanos`, `stats`) are private, so the root is their one
//! path.

#![warn(missing_docs)]

pub mod civil;
pub mod cpulist;
mod histogram;
pub mod layout;
mod load_status;
mod nanos;
pub mod recorder;
pub mod rng;
mod stats;
pub mod text;
pub mod virt;

pub use histogram::{Histogram, Overflow, Percentile, PERCENTILES};
pub use load_status::LoadStatus;
pub use nanos::{Nanos, ParseDurationError};
pub use stats::Stats;
