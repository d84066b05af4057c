//! rtscope-testkit: what rtscope's tests share, never shipped (`publish = false`, a
//! dev-dependency only).
//!
//! * [`synthetic`]: deterministic synthetic runs written through the real store (histograms,
//!   series, monitors, loads), for report, export and compare tests and benchmarks;
//! * [`rt_lock`]: serialises SCHED_FIFO measurements across the test threads and test
//!   binaries of one `cargo test`, so concurrent real-time runs do not disturb each other.

#![warn(missing_docs)]

mod lock;
pub mod synthetic;

pub use lock::{rt_lock, RtLock};
