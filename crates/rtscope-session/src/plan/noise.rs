//! A noise workload of the plan (`rtscope noise`, a campaign's `workload = "noise"`): busy
//! loops on the plan's CPUs that measure the time each loses to everything else, or, with
//! `irqs_off`, the kernel's hwlat tracer spinning with interrupts off.
//!
//! The front end says it as a [`NoiseSpec`] beside the shared settings of the
//! [`PlanSpec`](super::PlanSpec) (CPUs, policy, priority, duration, memory lock, explain,
//! housekeeping CPUs); [`lower`] checks what is the workload's own and builds the engine's
//! [`NoiseConfig`] from the plan. Every error names a [`Field`] and is worded by the front end
//! ([`NoiseProblem::message`]): no option of one front end is named here.

use super::{Field, Naming, PlanError, Problem, RunPlan, WorkloadSpec};
use crate::noise::{self as noise, NoiseLimit, MAX_GAPS};
use rtscope_core::text::short;
use rtscope_core::Nanos;
use rtscope_engine::noise::{CounterChoice, NoiseConfig, Threshold};
use rtscope_engine::{CpuSet, Policy};
use rtscope_trace::hwlat::HwlatConfig;

/// hwlat's own default width and window: half of every second with interrupts off.
pub const HWLAT_WIDTH: Nanos = Nanos::from_ms(500);
/// See [`HWLAT_WIDTH`].
pub const HWLAT_WINDOW: Nanos = Nanos::from_secs(1);

/// A noise measurement as a front end says it (typed, unchecked). The plan's CPUs (one loop
/// each), policy, priority, duration, memory lock, explain threshold and housekeeping CPUs
/// apply to it.
#[derive(Debug, Clone, PartialEq)]
pub struct NoiseSpec {
    /// A gap longer than this is noise (`None`: [`noise::DEFAULT_THRESHOLD`], raised to the
    /// loops' resolution).
    pub threshold: Option<Nanos>,
    /// Unmeasured spinning before the run.
    pub preheat: Nanos,
    /// Time spun in every period (`None`: [`noise::DEFAULT_RUNTIME`], hwlat's
    /// [`HWLAT_WIDTH`] with `irqs_off`).
    pub runtime: Option<Nanos>,
    /// The duty-cycle period (`None`: [`noise::DEFAULT_PERIOD`], [`HWLAT_WINDOW`]).
    pub period: Option<Nanos>,
    /// The counter the loops read.
    pub counter: CounterChoice,
    /// Gaps each CPU's ring holds between two reads.
    pub gap_capacity: usize,
    /// Gaps kept per CPU for the record (the longest).
    pub keep_gaps: usize,
    /// Limits checked on every CPU after the run.
    pub limits: Vec<NoiseLimit>,
    /// The kernel's hwlat tracer instead of the busy loops in user space.
    pub irqs_off: bool,
    /// Explain by default: when the plan's `explain` is not set, every gap from the gap
    /// threshold (at least [`noise::EXPLAIN_FLOOR`]) where tracefs is usable, else the
    /// reason and the fix in the plan's `explain_off` ([`noise::default_explain`]). Never
    /// with `irqs_off`.
    pub explain_by_default: bool,
}

impl Default for NoiseSpec {
    /// `rtscope noise` without options.
    fn default() -> Self {
        NoiseSpec {
            threshold: None,
            preheat: Nanos::from_ms(100),
            runtime: None,
            period: None,
            counter: CounterChoice::Auto,
            gap_capacity: 65_536,
            keep_gaps: noise::kept::DEFAULT_KEEP_GAPS,
            limits: Vec::new(),
            irqs_off: false,
            explain_by_default: true,
        }
    }
}

/// A checked noise measurement.
#[derive(Debug, Clone)]
pub struct NoisePlan {
    /// The loops' configuration (its SMI counter files are found when the session starts).
    pub config: NoiseConfig,
    /// Gaps kept per CPU for the record.
    pub keep_gaps: usize,
    /// Limits checked on every CPU.
    pub limits: Vec<NoiseLimit>,
    /// With `irqs_off`: what the kernel's hwlat tracer is asked for (no loops of rtscope's).
    pub hwlat: Option<HwlatConfig>,
}

/// What is wrong with a noise workload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoiseProblem {
    /// A CPU that is not online.
    CpuOffline {
        /// The CPU.
        cpu: usize,
        /// The online CPUs.
        online: CpuSet,
    },
    /// A policy the loops cannot run with (batch, idle, deadline).
    Policy {
        /// The policy's name.
        policy: &'static str,
    },
    /// A run that ends by a count of loops: the loops run for a duration.
    Loops,
    /// A threshold of zero.
    ZeroThreshold,
    /// A period of zero.
    ZeroPeriod,
    /// A threshold not below the period.
    ThresholdNotBelowPeriod {
        /// The threshold.
        threshold: Nanos,
        /// The period.
        period: Nanos,
    },
    /// A runtime of zero or over the period.
    Runtime {
        /// The runtime.
        runtime: Nanos,
        /// The period.
        period: Nanos,
    },
    /// More gaps per CPU than [`MAX_GAPS`] (the field says which size).
    TooManyGaps {
        /// The size asked for.
        asked: usize,
    },
    /// Rings of all CPUs over half the memory available.
    RingsTooLarge {
        /// The capacity asked for.
        asked: usize,
        /// The most that fits here.
        most: u64,
        /// The CPUs measured.
        cpus: u64,
        /// `MemAvailable`, bytes.
        available: u64,
    },
    /// A setting of the loops in user space given with `irqs_off` (the field says which).
    NotWithIrqsOff,
    /// `available=` limit with `irqs_off`: hwlat reports each window's longest gap only.
    AvailableWithIrqsOff,
}

impl NoiseProblem {
    /// The message, with fields named the front end's way.
    pub fn message(&self, field: Field, naming: Naming) -> String {
        let n = |f: Field| naming.name(f);
        match self {
            NoiseProblem::CpuOffline { cpu, online } => format!(
                "invalid value for '{}': CPU {cpu} is not online (online: {online})",
                n(Field::Cpus)
            ),
            NoiseProblem::Policy { policy } => format!(
                "invalid value '{policy}' for '{}': the noise loops run with other, fifo or rr",
                n(Field::Policy)
            ),
            NoiseProblem::Loops => format!(
                "'{}' cannot be used for a noise run: the loops run for a '{}'",
                n(Field::Loops),
                n(Field::Duration)
            ),
            NoiseProblem::ZeroThreshold => format!(
                "invalid value for '{}': it must be above 0",
                n(Field::Threshold)
            ),
            NoiseProblem::ZeroPeriod => {
                format!("invalid value for '{}': it must be above 0", n(Field::Period))
            }
            NoiseProblem::ThresholdNotBelowPeriod { threshold, period } => format!(
                "invalid value for '{}': {} is not below the period ({})",
                n(Field::Threshold),
                short(*threshold),
                short(*period)
            ),
            NoiseProblem::Runtime { runtime, period } => format!(
                "invalid value for '{}': {} must be above 0 and at most the period ({})",
                n(Field::Runtime),
                short(*runtime),
                short(*period)
            ),
            NoiseProblem::TooManyGaps { asked } => format!(
                "invalid value '{asked}' for '{}': at most {MAX_GAPS} gaps per CPU ({} bytes each, {} MiB)",
                n(field),
                noise::GAP_BYTES,
                (MAX_GAPS as u64 * noise::GAP_BYTES) >> 20
            ),
            NoiseProblem::RingsTooLarge { asked, most, cpus, available } => format!(
                "invalid value '{asked}' for '{}': at most {most} gaps per CPU here ({} bytes \
                 each, on {cpus} CPU(s), within half of the {} MiB available: MemAvailable of \
                 /proc/meminfo)",
                n(Field::GapCapacity),
                noise::GAP_BYTES,
                available >> 20
            ),
            NoiseProblem::NotWithIrqsOff => format!(
                "{} cannot be used with {}: there the kernel's hwlat thread spins with \
                 interrupts off (its own policy and counter, no trace to explain: a gap there is \
                 the hardware, firmware, the hypervisor or an NMI)",
                n(field),
                n(Field::IrqsOff)
            ),
            NoiseProblem::AvailableWithIrqsOff => format!(
                "{} available=... cannot be checked with {}: the hwlat tracer reports each \
                 window's longest gap, not the time lost in all of them",
                n(Field::Limit),
                n(Field::IrqsOff)
            ),
        }
    }

    /// How to fix it, where there is more to say than the message.
    pub fn hint(&self, field: Field, naming: Naming) -> Option<String> {
        let n = |f: Field| naming.name(f);
        Some(match self {
            NoiseProblem::CpuOffline { .. } => {
                "pick online CPUs (see /sys/devices/system/cpu/online)".into()
            }
            NoiseProblem::ZeroThreshold => format!(
                "use e.g. {} (every gap is in the histogram anyway)",
                naming.setting(Field::Threshold, "1us")
            ),
            NoiseProblem::ThresholdNotBelowPeriod { .. } => {
                "a gap can never be longer than the period the loop spins in".into()
            }
            NoiseProblem::Runtime { .. } => format!(
                "the duty cycle is {} of every {}; it cannot exceed 100 %",
                n(Field::Runtime),
                n(Field::Period)
            ),
            NoiseProblem::TooManyGaps { .. } => format!(
                "the defaults are {} (the ring is read every 100 ms) and {}",
                naming.setting(Field::GapCapacity, "65536"),
                naming.setting(Field::KeepGaps, "100000")
            ),
            NoiseProblem::RingsTooLarge { .. } => format!(
                "give a smaller {}, or fewer {}",
                n(Field::GapCapacity),
                n(Field::Cpus)
            ),
            NoiseProblem::NotWithIrqsOff => format!(
                "leave out {}, or {} for the busy loop in user space",
                n(field),
                n(Field::IrqsOff)
            ),
            NoiseProblem::AvailableWithIrqsOff => format!(
                "use {}, or leave out {}",
                naming.setting(Field::Limit, "max_single=DUR"),
                n(Field::IrqsOff)
            ),
            _ => return None,
        })
    }
}

fn problem(field: Field, p: NoiseProblem) -> PlanError {
    PlanError::new(field, Problem::Noise(p))
}

/// Lowers a noise workload into `plan` (built from the shared settings): one loop on each
/// CPU the plan's threads are pinned to, at their policy and priority, for the plan's
/// duration. The plan's threads stay what the pre-run audit checks; the engine never starts
/// them.
pub(super) fn lower(
    w: &WorkloadSpec,
    plan: &mut RunPlan,
    online: &CpuSet,
) -> Result<(), PlanError> {
    let WorkloadSpec::Noise(s) = w else {
        return Ok(());
    };
    let t0 = plan.config.threads[0].clone();
    if !matches!(t0.policy, Policy::Fifo | Policy::Rr | Policy::Other) {
        let policy = t0.policy.name();
        return Err(problem(Field::Policy, NoiseProblem::Policy { policy }));
    }
    let cpus: Vec<usize> = plan.config.pinned_cpus().iter().collect();
    if let Some(&cpu) = cpus.iter().find(|&&c| !online.contains(c)) {
        let online = online.clone();
        return Err(problem(
            Field::Cpus,
            NoiseProblem::CpuOffline { cpu, online },
        ));
    }
    let Some(duration) = plan.config.duration else {
        return Err(problem(Field::Loops, NoiseProblem::Loops));
    };
    check_sizes(
        s,
        cpus.len(),
        noise::mem_available(std::path::Path::new("/")),
    )?;
    let config = NoiseConfig {
        cpus,
        policy: t0.policy,
        priority: t0.priority,
        threshold: match s.threshold {
            Some(t) => Threshold::Given(t),
            None => Threshold::Default(noise::DEFAULT_THRESHOLD),
        },
        preheat: s.preheat,
        runtime: s.runtime.unwrap_or(noise::DEFAULT_RUNTIME),
        period: s.period.unwrap_or(noise::DEFAULT_PERIOD),
        duration,
        gap_capacity: s.gap_capacity.max(1),
        mlock: plan.config.mlock,
        prefault_stack: 32 * 1024,
        counter: s.counter,
        smi_files: Vec::new(),
    };
    check(&config)?;
    let hwlat = s.irqs_off.then(|| hwlat(s, plan, &config)).transpose()?;
    if s.explain_by_default && !s.irqs_off && plan.explain.is_none() {
        match noise::default_explain(s.threshold) {
            Ok(t) => plan.explain = Some(t),
            Err(why) => plan.explain_off = Some(why.to_string()),
        }
    }
    plan.config.sample_ring = None;
    plan.config.event_threshold = None;
    plan.workload = super::Workload::Noise(Box::new(NoisePlan {
        config,
        keep_gaps: s.keep_gaps,
        limits: s.limits.clone(),
        hwlat,
    }));
    Ok(())
}

/// The loops' timing: a threshold below the period, a runtime within it.
fn check(c: &NoiseConfig) -> Result<(), PlanError> {
    let threshold = c.threshold.requested();
    if threshold.0 == 0 {
        return Err(problem(Field::Threshold, NoiseProblem::ZeroThreshold));
    }
    if c.period.0 == 0 {
        return Err(problem(Field::Period, NoiseProblem::ZeroPeriod));
    }
    if threshold >= c.period {
        let p = NoiseProblem::ThresholdNotBelowPeriod {
            threshold,
            period: c.period,
        };
        return Err(problem(Field::Threshold, p));
    }
    if c.runtime.0 == 0 || c.runtime > c.period {
        let p = NoiseProblem::Runtime {
            runtime: c.runtime,
            period: c.period,
        };
        return Err(problem(Field::Runtime, p));
    }
    Ok(())
}

/// The ring and kept sizes before anything is allocated: each at most [`MAX_GAPS`], and the
/// rings of all `cpus` (allocated and touched before the loops start) within half of
/// `available` bytes (`MemAvailable`, when known). A larger size would abort the process on a
/// failed allocation or wake the out-of-memory killer.
pub fn check_sizes(s: &NoiseSpec, cpus: usize, available: Option<u64>) -> Result<(), PlanError> {
    for (field, asked) in [
        (Field::GapCapacity, s.gap_capacity),
        (Field::KeepGaps, s.keep_gaps),
    ] {
        if asked > MAX_GAPS {
            return Err(problem(field, NoiseProblem::TooManyGaps { asked }));
        }
    }
    let Some(available) = available else {
        return Ok(());
    };
    let cpus = cpus.max(1) as u64;
    let most = (available / 2 / (noise::GAP_BYTES * cpus)).min(MAX_GAPS as u64);
    if s.gap_capacity as u64 > most {
        let p = NoiseProblem::RingsTooLarge {
            asked: s.gap_capacity,
            most,
            cpus,
            available,
        };
        return Err(problem(Field::GapCapacity, p));
    }
    Ok(())
}

/// The hwlat tracer's settings, refusing what only the loops in user space have.
fn hwlat(s: &NoiseSpec, plan: &RunPlan, c: &NoiseConfig) -> Result<HwlatConfig, PlanError> {
    let given = [
        (plan.explain.is_some(), Field::Explain),
        (s.counter != CounterChoice::Auto, Field::Counter),
        (c.policy != Policy::Other, Field::Policy),
        (c.priority != 0, Field::Priority),
        (plan.housekeeping_cpus.is_some(), Field::Housekeeping),
    ];
    if let Some(&(_, field)) = given.iter().find(|(g, _)| *g) {
        return Err(problem(field, NoiseProblem::NotWithIrqsOff));
    }
    if s.limits
        .iter()
        .any(|l| matches!(l, NoiseLimit::Available(_)))
    {
        return Err(problem(Field::Limit, NoiseProblem::AvailableWithIrqsOff));
    }
    let us = |n: Nanos| n.0.div_ceil(1000).max(1);
    Ok(HwlatConfig {
        cpus: c.cpus.clone(),
        width_us: us(s.runtime.unwrap_or(HWLAT_WIDTH)),
        window_us: us(s.period.unwrap_or(HWLAT_WINDOW)),
        threshold_us: us(c.threshold.requested()),
    })
}

#[cfg(test)]
mod tests {
    //! The noise workload's checks, each error worded as each front end spells the setting.
    use crate::noise::{NoiseLimit, DEFAULT_PERIOD, DEFAULT_RUNTIME, DEFAULT_THRESHOLD, MAX_GAPS};
    use crate::test_plans::noise_plan as plan;
    use rtscope_core::Nanos;
    use rtscope_engine::noise::Threshold;

    fn message(spec: crate::plan::NoiseSpec, naming: crate::field::Naming) -> String {
        plan(&[0], spec).unwrap_err().message(naming)
    }

    #[test]
    fn bad_settings_are_refused_naming_the_setting_as_each_front_end_spells_it() {
        use crate::field::Naming::{Flags, Keys};
        use crate::plan::NoiseSpec;
        let ok = plan(&[0], NoiseSpec::default()).unwrap();
        let n = ok.workload.noise().expect("a noise plan");
        assert_eq!(n.config.cpus, vec![0]);
        assert_eq!(
            (n.config.runtime, n.config.period),
            (DEFAULT_RUNTIME, DEFAULT_PERIOD)
        );
        assert_eq!(n.config.threshold, Threshold::Default(DEFAULT_THRESHOLD));
        assert_eq!(n.config.duration, Nanos::from_secs(1));
        let zero = NoiseSpec {
            threshold: Some(Nanos::ZERO),
            ..NoiseSpec::default()
        };
        assert!(message(zero.clone(), Flags).contains("'--threshold'"));
        assert!(message(zero.clone(), Keys).contains("'threshold'"));
        let hint = plan(&[0], zero).unwrap_err().hint(Keys).unwrap();
        assert!(hint.contains("threshold = \"1us\""), "{hint}");
        assert!(!hint.contains("--"), "{hint}");
        let long = NoiseSpec {
            threshold: Some(Nanos::from_secs(1)),
            ..NoiseSpec::default()
        };
        assert!(message(long, Flags).contains("'--threshold': 1s is not below the period (1s)"));
        let runtime = NoiseSpec {
            runtime: Some(Nanos::from_secs(2)),
            ..NoiseSpec::default()
        };
        assert!(message(runtime.clone(), Flags).contains("'--runtime'"));
        assert!(message(runtime, Keys).contains("'runtime'"));
        let ring = NoiseSpec {
            gap_capacity: MAX_GAPS + 1,
            ..NoiseSpec::default()
        };
        assert!(message(ring.clone(), Flags).contains("'--gap-capacity'"));
        assert!(message(ring, Keys).contains("'gap_capacity'"));
        let offline = plan(&[7], NoiseSpec::default()).unwrap_err();
        assert!(offline
            .message(Flags)
            .contains("'--cpus': CPU 7 is not online"));
        let full = NoiseSpec {
            runtime: Some(DEFAULT_PERIOD),
            ..NoiseSpec::default()
        };
        assert!(plan(&[0], full).is_ok(), "a 100 % duty cycle is allowed");
    }

    #[test]
    fn irqs_off_refuses_the_loops_own_settings_and_the_available_limit() {
        use crate::field::Naming::{Flags, Keys};
        use crate::plan::NoiseSpec;
        let hw = plan(
            &[0],
            NoiseSpec {
                irqs_off: true,
                ..NoiseSpec::default()
            },
        )
        .unwrap();
        let h = hw.workload.noise().unwrap().hwlat.clone().expect("hwlat");
        // hwlat's own width and window unless given.
        assert_eq!(
            (h.width_us, h.window_us, h.threshold_us),
            (500_000, 1_000_000, 1)
        );
        let counter = NoiseSpec {
            irqs_off: true,
            counter: rtscope_engine::noise::CounterChoice::Raw,
            ..NoiseSpec::default()
        };
        let m = message(counter.clone(), Flags);
        assert!(
            m.starts_with("--counter cannot be used with --irqs-off"),
            "{m}"
        );
        assert!(message(counter, Keys).starts_with("counter cannot be used with irqs_off"));
        let available = NoiseSpec {
            irqs_off: true,
            limits: vec![NoiseLimit::Available(99.0)],
            ..NoiseSpec::default()
        };
        let e = plan(&[0], available).unwrap_err();
        assert!(e.message(Flags).contains("--limit available=..."));
        assert!(e.hint(Flags).unwrap().contains("--limit max_single=DUR"));
    }
}
