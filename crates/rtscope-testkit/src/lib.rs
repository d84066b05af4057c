//! rtscope-testkit: what rtscope's tests share, never shipped (`publish = false`, a
//! dev-dependency only).
//!
//! * [`synthetic`]: deterministic synthetic runs written through the real store (histograms,
//!   series, monitors, loads), for report, export and compare tests and benchmarks;
//! * [`rt_lock`]: serialises SCHED_FIFO measurements across the test threads and test
//!   binaries of one `cargo test`, so concurrent real-time runs do not disturb each other;
//! * [`require!`], [`require_ok!`] and [`skip_or_fail`]: a test that cannot run here (a tool,
//!   a privilege or a kernel feature missing) fails under `RTSCOPE_TEST_STRICT=1` (CI) and
//!   prints `SKIP: reason` and returns otherwise;
//! * [`image`]: the facts of a PNG (size, colours, ink) for the report tests.

#![warn(missing_docs)]

pub mod image;
mod lock;
mod require;
pub mod synthetic;
pub mod synthetic_noise;

pub use lock::{rt_lock, RtLock};
pub use require::{have, is_root, python3_imports, skip_or_fail, strict, STRICT_VAR};
