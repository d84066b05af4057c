//! rtscope-check: the preflight audit behind `rtscope check`.
//!
//! [`audit`] runs every check of [`CheckId::ALL`] against a [`System`] (the files under a root
//! directory, `/` in production, a fixture tree in tests, plus a [`Probe`] for `uname` and
//! `getrlimit`) for a set of measured CPUs, and returns an [`Audit`]: one [`Finding`] per check
//! with a [`Verdict`], the evidence read, why the setting matters for latency, the fix (a
//! command or boot parameter, printed, never applied) and a short comparable `setting`.
//!
//! Nothing here writes to the system, and nothing fails: a file that cannot be read makes its
//! check [`Verdict::Unavailable`] with the reason. Strings from the system (process names,
//! IRQ names) are kept verbatim; [`render::table`] escapes them for a terminal.
//!
//! The checks, what each reads and the source of each recommendation: docs/check.md.
//!
//! Re-exports (its facade): the settings comparison (`differing_settings`, `RunSettings`, …)
//! and the system seam (`Probe`, `LiveProbe`, `FixedProbe`, `System`, …) are named at the root for
//! the front ends and the session; their modules (`diff`, `sys`) are private, so the root is their
//! one path.

#![warn(missing_docs)]

mod checks;
mod diff;
pub mod render;
mod sys;

pub use diff::{differing_settings, RunSettings, SettingDifference, SettingsGroup, NOT_RECORDED};
pub use sys::{
    cmdline_value, isolcpus_list, FixedProbe, KernelConfig, LiveProbe, Probe, Resource, Rlimit,
    System, Uname,
};

use serde::Serialize;

/// A check's verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Set up as a real-time measurement wants it.
    Ok,
    /// Could not be read here (no such file on this kernel or platform, or no permission).
    Unavailable,
    /// Can add latency or make results differ from a tuned system; worth knowing.
    Warn,
    /// Will add latency far above what the system can do, or stops the measurement from
    /// running as configured; `rtscope check` exits 1.
    Bad,
}

impl Verdict {
    /// `ok`, `warn`, `bad` or `unavailable`.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Ok => "ok",
            Verdict::Warn => "warn",
            Verdict::Bad => "bad",
            Verdict::Unavailable => "unavailable",
        }
    }
}

impl std::str::FromStr for Verdict {
    type Err = UnknownVerdict;

    /// Parses `ok`, `warn`, `bad` or `unavailable` (as stored with runs).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "ok" => Ok(Verdict::Ok),
            "warn" => Ok(Verdict::Warn),
            "bad" => Ok(Verdict::Bad),
            "unavailable" => Ok(Verdict::Unavailable),
            _ => Err(UnknownVerdict(s.to_owned())),
        }
    }
}

/// A verdict name that is not `ok`, `warn`, `bad` or `unavailable`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown verdict '{0}' (expected ok, warn, bad or unavailable)")]
pub struct UnknownVerdict(pub String);

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

macro_rules! check_ids {
    ($($variant:ident => $id:literal, $title:literal, $why:literal;)*) => {
        /// One check. Its `id` is stable (stored with runs, used in JSON).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum CheckId {
            $(
                #[doc = $title]
                $variant,
            )*
        }

        impl CheckId {
            /// Every check, in the order `rtscope check` runs and prints them.
            pub const ALL: &'static [CheckId] = &[$(CheckId::$variant),*];

            /// The stable id (`preempt_rt`, `governor`, …).
            pub fn id(self) -> &'static str {
                match self { $(CheckId::$variant => $id),* }
            }

            /// A short title for people.
            pub fn title(self) -> &'static str {
                match self { $(CheckId::$variant => $title),* }
            }

            /// Why the setting matters for wake-up latency.
            pub fn why(self) -> &'static str {
                match self { $(CheckId::$variant => $why),* }
            }

            /// The check with this id.
            pub fn from_id(id: &str) -> Option<CheckId> {
                Self::ALL.iter().copied().find(|c| c.id() == id)
            }
        }
    };
}

check_ids! {
    PreemptRt => "preempt_rt", "PREEMPT_RT kernel",
        "Without PREEMPT_RT, spinlock sections, softirqs and interrupt handlers run non-preemptibly, which bounds worst-case wake-up latency at milliseconds rather than tens of microseconds.";
    Preemption => "preemption", "preemption model",
        "With preempt=none or voluntary, a woken real-time task waits until the running kernel code reaches a preemption point, which can take milliseconds.";
    KernelDebug => "kernel_debug", "kernel debugging options",
        "Lock debugging, KASAN, KCSAN and debug-object tracking make every lock and allocation slower and lengthen non-preemptible sections.";
    Isolcpus => "isolcpus", "isolated CPUs (isolcpus)",
        "On a CPU that is not isolated, the scheduler places ordinary tasks and unbound kernel work next to the measuring thread.";
    NohzFull => "nohz_full", "adaptive ticks (nohz_full)",
        "Without nohz_full the periodic scheduler tick keeps interrupting the measured CPU; with it, the tick stops while one task runs there.";
    RcuNocbs => "rcu_nocbs", "RCU callback offloading (rcu_nocbs)",
        "RCU callbacks that are not offloaded run in softirq context on the CPU that queued them, in bursts, next to the measuring thread.";
    Affinity => "affinity", "CPUs this process may use",
        "A measured CPU outside the process's allowed CPUs (cpuset, taskset, container) cannot be measured at all.";
    Governor => "governor", "cpufreq governor",
        "A governor other than performance changes the clock while the CPU runs; each transition stalls it, and a slow clock after idle stretches every code path.";
    Frequency => "frequency", "CPU frequency range",
        "When the minimum frequency is below the maximum, the CPU may be slow when the timer fires, and latency follows the frequency.";
    Smt => "smt", "simultaneous multithreading (SMT)",
        "A hyperthread sibling shares the core's execution units and caches; whatever runs on it slows the measured thread.";
    RtThrottling => "rt_throttling", "RT throttling (sched_rt_runtime_us)",
        "RT throttling stops real-time tasks for the rest of each period once they used sched_rt_runtime_us of it; a busy RT load is then stalled for up to 50 ms.";
    Irqbalance => "irqbalance", "irqbalance daemon",
        "irqbalance moves device interrupts between CPUs every few seconds, onto the measured CPU as well, unless that CPU is banned.";
    IrqAffinity => "irq_affinity", "device interrupts on the measured CPUs",
        "A device interrupt handled on the measured CPU preempts the measuring thread (hard IRQ) or competes with it (threaded IRQ).";
    IdleStates => "idle_states", "CPU idle states (C-states)",
        "Leaving a deep idle state takes its exit latency (tens to hundreds of microseconds) before the timer interrupt can even run.";
    CpuDmaLatency => "cpu_dma_latency", "/dev/cpu_dma_latency request",
        "A process holding /dev/cpu_dma_latency open with a low value keeps the CPUs out of deep idle states; when nobody holds it, the idle governor decides.";
    TimerMigration => "timer_migration", "timer migration",
        "With timer migration on, timers are moved between CPUs to let idle CPUs sleep, so timer expiry work lands on busy CPUs, the measured one included.";
    Thp => "thp", "transparent huge pages",
        "With THP set to always, page faults may compact memory and khugepaged collapses pages in the background; both add stalls.";
    Swap => "swap", "swap",
        "A page of a task that is swapped out takes milliseconds to come back; rtscope locks its own memory, the rest of the system does not.";
    NumaBalancing => "numa_balancing", "automatic NUMA balancing",
        "Automatic NUMA balancing unmaps pages periodically to sample accesses; the resulting faults and migrations add latency.";
    VmstatInterval => "vmstat_interval", "vmstat update interval",
        "The vmstat worker runs on every CPU once per vm.stat_interval seconds; a longer interval means fewer interruptions.";
    NmiWatchdog => "nmi_watchdog", "NMI (hard lockup) watchdog",
        "The hard lockup detector fires a perf NMI on every CPU every few seconds; an NMI cannot be masked or preempted.";
    SoftWatchdog => "soft_watchdog", "soft lockup watchdog",
        "The soft lockup detector runs an hrtimer and a stopper task on every CPU in watchdog_cpumask; both run above any real-time priority.";
    Clocksource => "clocksource", "clocksource",
        "Every clock read goes through the clocksource; hpet and acpi_pm are slow I/O reads (microseconds), jiffies has tick resolution.";
    RtTasks => "rt_tasks", "real-time tasks on the measured CPUs",
        "A real-time task that may run on the measured CPU at equal or higher priority delays the measuring thread's wake-up by its whole run time.";
    Memlock => "memlock", "locked-memory limit (RLIMIT_MEMLOCK)",
        "Without enough locked memory, mlockall fails or is skipped, and page faults in the measuring path add latency.";
    Rtprio => "rtprio", "real-time priority limit (RLIMIT_RTPRIO)",
        "Without CAP_SYS_NICE or an RLIMIT_RTPRIO at least the requested priority, real-time scheduling is refused and nothing can be measured.";
    RpiThrottled => "rpi_throttled", "Raspberry Pi throttling flags",
        "Under-voltage, frequency capping and thermal throttling slow the CPU by the firmware's decision, outside the kernel's knowledge.";
    Thermal => "thermal", "thermal zones",
        "Near a passive trip point the kernel or firmware lowers the CPU frequency; latency then rises with temperature.";
    Lockdown => "lockdown", "kernel lockdown",
        "In confidentiality lockdown, tracefs and debugfs are closed, so latency spikes cannot be attributed.";
    Tracefs => "tracefs", "tracefs",
        "Spike attribution (--explain) records scheduler and interrupt events through tracefs; without it only coarse per-second context is available.";
    Virtualization => "virtualization", "virtual machine",
        "In a virtual machine the host schedules the vCPUs: steal time and VM exits add latency the guest cannot see or fix.";
    Container => "container", "container",
        "In a container, cgroup CPU limits, a restricted cpuset and a missing CAP_SYS_NICE change what can be measured.";
}

impl Serialize for CheckId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.id())
    }
}

/// One check's result.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Finding {
    /// Which check.
    #[serde(rename = "id")]
    pub check: CheckId,
    /// Its title, for people.
    pub title: &'static str,
    /// The verdict.
    pub verdict: Verdict,
    /// What was read, with the file it came from (`/proc/sys/kernel/timer_migration = 1`).
    pub evidence: String,
    /// Why the setting matters for latency.
    pub why: &'static str,
    /// How to change it: a command or a boot parameter. Printed, never applied. `None` when
    /// there is nothing to change.
    pub fix: Option<String>,
    /// The setting in a short comparable form (`performance`, `on`, `6.18.44 PREEMPT_RT`),
    /// for comparing runs; `None` when it could not be read.
    pub setting: Option<String>,
}

impl Finding {
    /// A finding of `check`.
    pub fn new(check: CheckId, verdict: Verdict, evidence: impl Into<String>) -> Self {
        Finding {
            check,
            title: check.title(),
            verdict,
            evidence: evidence.into(),
            why: check.why(),
            fix: None,
            setting: None,
        }
    }

    /// An unavailable finding.
    pub fn unavailable(check: CheckId, why: impl Into<String>) -> Self {
        Finding::new(check, Verdict::Unavailable, why)
    }

    /// Sets the fix.
    pub fn fix(mut self, fix: impl Into<String>) -> Self {
        self.fix = Some(fix.into());
        self
    }

    /// Sets the fix if the verdict is warn or bad.
    pub fn fix_if_needed(self, fix: impl Into<String>) -> Self {
        if matches!(self.verdict, Verdict::Warn | Verdict::Bad) {
            self.fix(fix)
        } else {
            self
        }
    }

    /// Sets the comparable setting.
    pub fn setting(mut self, setting: impl Into<String>) -> Self {
        self.setting = Some(setting.into());
        self
    }
}

/// What to audit for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// The CPUs that will be measured; empty means every online CPU.
    pub cpus: Vec<u32>,
    /// The real-time priority the measurement will use (1–99): real-time tasks at this
    /// priority or above on a measured CPU are bad, below it a warning.
    pub priority: u32,
}

impl Default for Options {
    /// Every online CPU, priority 90 (rtscope measure's default).
    fn default() -> Self {
        Options {
            cpus: Vec::new(),
            priority: 90,
        }
    }
}

/// The result of an audit.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Audit {
    /// The CPUs audited for, ascending.
    pub cpus: Vec<u32>,
    /// One finding per check, in [`CheckId::ALL`] order.
    pub findings: Vec<Finding>,
}

impl Audit {
    /// Whether any finding is [`Verdict::Bad`].
    pub fn has_bad(&self) -> bool {
        self.findings.iter().any(|f| f.verdict == Verdict::Bad)
    }

    /// The finding of `check`.
    pub fn get(&self, check: CheckId) -> Option<&Finding> {
        self.findings.iter().find(|f| f.check == check)
    }

    /// How many findings have `verdict`.
    pub fn count(&self, verdict: Verdict) -> usize {
        self.findings
            .iter()
            .filter(|f| f.verdict == verdict)
            .count()
    }
}

/// The kernel's preemption model as the `preemption` check reads it (its setting: `rt`,
/// `full`, `lazy`, `voluntary`, `none`, …; `None`: not readable here).
pub fn preemption_model(sys: &System<'_>) -> Option<String> {
    checks::Ctx::new(sys, &Options::default())
        .run(CheckId::Preemption)
        .setting
}

/// Runs every check on `sys` for `opts`. CPUs that are not online are audited as given (the
/// caller validates CPU lists); an empty list means every online CPU.
pub fn audit(sys: &System<'_>, opts: &Options) -> Audit {
    let ctx = checks::Ctx::new(sys, opts);
    let findings = CheckId::ALL.iter().map(|&c| ctx.run(c)).collect();
    Audit {
        cpus: ctx.cpus.clone(),
        findings,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts_round_trip_through_their_names() {
        for v in [
            Verdict::Ok,
            Verdict::Warn,
            Verdict::Bad,
            Verdict::Unavailable,
        ] {
            assert_eq!(v.as_str().parse::<Verdict>(), Ok(v));
        }
        assert!("fine".parse::<Verdict>().is_err());
        assert!(Verdict::Bad > Verdict::Warn && Verdict::Warn > Verdict::Ok);
    }
}
