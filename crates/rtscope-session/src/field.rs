//! The settings of a plan as errors name them: each front end spells a [`Field`] its own
//! way ([`Naming`]: `--dl-runtime` on the command line, `dl_runtime` in a campaign file).

/// A setting of the plan, for error messages: each front end names it its own way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    /// The CPUs to measure.
    Cpus,
    /// The number of measuring threads.
    Threads,
    /// The scheduling policy.
    Policy,
    /// The priority.
    Priority,
    /// SCHED_DEADLINE runtime.
    DlRuntime,
    /// SCHED_DEADLINE deadline.
    DlDeadline,
    /// SCHED_DEADLINE period.
    DlPeriod,
    /// The interval between wake-ups.
    Interval,
    /// The extra interval per further thread.
    Distance,
    /// The run length.
    Duration,
    /// The wake-ups per thread.
    Loops,
    /// The events kept per thread.
    EventCapacity,
    /// The CPUs of rtscope's own threads (`--housekeeping`).
    Housekeeping,
    /// What a respond workload measures (`--ipc`, a campaign's `respond`).
    Mechanism,
    /// Where a respond workload's threads run.
    Placement,
    /// Events per interval of a respond workload.
    Burst,
    /// How a respond workload's sender is paced.
    Pacing,
    /// A noise workload's gap threshold.
    Threshold,
    /// A noise workload's time spun per period.
    Runtime,
    /// A noise workload's duty-cycle period.
    Period,
    /// A noise workload's gap ring per CPU.
    GapCapacity,
    /// A noise workload's gaps kept per CPU.
    KeepGaps,
    /// A noise workload's limits (`max_single=`, `available=`).
    Limit,
    /// A noise workload measured by the kernel's hwlat tracer.
    IrqsOff,
    /// The explain threshold.
    Explain,
    /// The counter a noise workload's loops read.
    Counter,
}

impl Field {
    /// The setting's name without decoration, as in a campaign file (`dl_runtime`).
    pub fn key(self) -> &'static str {
        match self {
            Field::Cpus => "cpus",
            Field::Threads => "threads",
            Field::Policy => "policy",
            Field::Priority => "priority",
            Field::DlRuntime => "dl_runtime",
            Field::DlDeadline => "dl_deadline",
            Field::DlPeriod => "dl_period",
            Field::Interval => "interval",
            Field::Distance => "distance",
            Field::Duration => "duration",
            Field::Loops => "loops",
            Field::EventCapacity => "event_capacity",
            Field::Housekeeping => "housekeeping",
            Field::Mechanism => "respond",
            Field::Placement => "placement",
            Field::Burst => "burst",
            Field::Pacing => "pacing",
            Field::Threshold => "threshold",
            Field::Runtime => "runtime",
            Field::Period => "period",
            Field::GapCapacity => "gap_capacity",
            Field::KeepGaps => "keep_gaps",
            Field::Limit => "limits",
            Field::IrqsOff => "irqs_off",
            Field::Explain => "explain",
            Field::Counter => "counter",
        }
    }

    /// The option of `rtscope measure` or `rtscope respond` (`--dl-runtime`, `--ipc`).
    pub fn flag(self) -> String {
        match self {
            Field::Mechanism => return "--ipc".into(),
            Field::Limit => return "--limit".into(),
            _ => {}
        }
        format!("--{}", self.key().replace('_', "-"))
    }
}

/// How a front end spells the fields in its messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Naming {
    /// Command-line options: `--dl-runtime`.
    Flags,
    /// Campaign file keys: `dl_runtime`.
    Keys,
}

impl Naming {
    /// The name of `f`.
    pub fn name(self, f: Field) -> String {
        match self {
            Naming::Flags => f.flag(),
            Naming::Keys => f.key().to_string(),
        }
    }

    /// `f` set to `value`, as the front end writes it: `--threshold 1us`, `threshold = "1us"`
    /// (a limit: `limits = ["max_single=20us"]`).
    pub fn setting(self, f: Field, value: &str) -> String {
        match (self, f) {
            (Naming::Flags, _) => format!("{} {value}", f.flag()),
            (Naming::Keys, Field::Limit) => format!("{} = [\"{value}\"]", f.key()),
            (Naming::Keys, _) => format!("{} = \"{value}\"", f.key()),
        }
    }
}
