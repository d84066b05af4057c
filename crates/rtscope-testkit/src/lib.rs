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
//! * [`noise_config`]: the one-second noise loop of the injection tests;
//! * [`image`]: the facts of a PNG (size, colours, ink) for the report tests;
//! * [`gpio`]: an in-memory GPIO chip (`MockGpio`) behind rtscope-respond's `Gpio` trait, for
//!   the GPIO measurement's tests;
//! * [`grafana`]: the shipped Grafana dashboards against Grafana's schema and its linter's rules;
//! * [`now_ns`]: CLOCK_MONOTONIC, the clock of spike and gap times.
//!
//! Re-exports (its facade): `rt_lock`/`RtLock` and the `require` helpers (`have`, `strict`,
//! `skip_or_fail`, …) are named at the root for every test; their modules are private.

#![warn(missing_docs)]

pub mod gpio;
pub mod grafana;
pub mod image;
mod lock;
pub mod noise_config;
mod require;
pub mod synthetic;
pub mod synthetic_noise;

pub use lock::{rt_lock, RtLock};
pub use require::{
    bpf_events_here, have, is_root, python3_imports, skip_or_fail, strict, STRICT_VAR,
};

/// CLOCK_MONOTONIC now, in ns: the clock of rtscope's spike and gap times, read by tests that
/// set their own events beside a run.
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}
