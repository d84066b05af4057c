//! The settings of a run as JSON and the database record them.

use super::RunPlan;
use rtscope_engine::{ClockKind, SleepMode};
use serde::Serialize;

/// The settings of a run as JSON and the database record them (`config` in
/// docs/json-schema.md).
#[derive(Debug, Clone, Serialize)]
pub struct ConfigDoc {
    /// Policy name.
    pub policy: String,
    /// Priority of the first thread.
    pub priority: i32,
    /// Interval of the first thread, ns.
    pub interval_ns: u64,
    /// `monotonic` or `realtime`.
    pub clock: String,
    /// `absolute` or `relative`.
    pub sleep: String,
    /// Wake-ups per thread, if bounded by loops.
    pub loops: Option<u64>,
    /// Run length, ns, if bounded by time.
    pub duration_ns: Option<u64>,
    /// mlockall on.
    pub mlock: bool,
    /// `/dev/cpu_dma_latency` request, µs.
    pub cpu_dma_latency_us: Option<i32>,
}

impl ConfigDoc {
    /// The settings of `plan`.
    pub fn of(plan: &RunPlan) -> ConfigDoc {
        let c = &plan.config;
        let t0 = &c.threads[0];
        ConfigDoc {
            policy: t0.policy.name().to_string(),
            priority: t0.priority,
            interval_ns: t0.interval.0,
            clock: clock_name(c.clock).into(),
            sleep: if c.sleep == SleepMode::Absolute {
                "absolute"
            } else {
                "relative"
            }
            .into(),
            loops: c.loops,
            duration_ns: c.duration.map(|d| d.0),
            mlock: c.mlock,
            cpu_dma_latency_us: plan.latency,
        }
    }
}

/// `monotonic` or `realtime`.
pub fn clock_name(c: ClockKind) -> &'static str {
    if c == ClockKind::Monotonic {
        "monotonic"
    } else {
        "realtime"
    }
}
