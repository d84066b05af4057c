//! The classes of noise time (`rtscope noise --explain`): what each nanosecond of the traced
//! gaps was charged to, summed over a run. One definition for the noise command's line and
//! JSON, the report's stacked bars and anything else that speaks of noise by cause.

use crate::model::Category;
use serde::{Deserialize, Serialize};

/// A class of noise time, in the order the noise command prints them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// Other threads (higher priority, or holding the CPU).
    Thread,
    /// Hard interrupts (the timer's included).
    Irq,
    /// Softirqs.
    Softirq,
    /// NMIs.
    Nmi,
    /// The switch back to the loop (scheduler, return to user space).
    Switch,
    /// RT throttling: the real-time loop taken off the CPU for normal tasks or idle.
    Throttling,
    /// Time the guest could not see (the vCPU was not running).
    Hypervisor,
    /// Firmware: time below the kernel across which the SMI counter advanced.
    Firmware,
    /// Time no trace event covers: never folded into a class.
    Unexplained,
}

impl Class {
    /// Every class, in the order printed.
    pub const ALL: [Class; 9] = [
        Class::Thread,
        Class::Irq,
        Class::Softirq,
        Class::Nmi,
        Class::Switch,
        Class::Throttling,
        Class::Hypervisor,
        Class::Firmware,
        Class::Unexplained,
    ];

    /// Its name as printed (`switch back`).
    pub fn name(self) -> &'static str {
        match self {
            Class::Thread => "thread",
            Class::Irq => "irq",
            Class::Softirq => "softirq",
            Class::Nmi => "nmi",
            Class::Switch => "switch back",
            Class::Throttling => "RT throttling",
            Class::Hypervisor => "hypervisor",
            Class::Firmware => "firmware (SMI)",
            Class::Unexplained => "unexplained",
        }
    }

    /// Its key in JSON and the store (`switch`, `throttling`, `firmware`; the others as
    /// [`Class::name`]): the names of [`ClassTotals`]' fields without `_ns`.
    pub fn key(self) -> &'static str {
        match self {
            Class::Switch => "switch",
            Class::Throttling => "throttling",
            Class::Firmware => "firmware",
            c => c.name(),
        }
    }

    /// Its place in [`Class::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }

    /// The class of a [`Class::key`].
    pub fn of_key(key: &str) -> Option<Class> {
        Class::ALL.into_iter().find(|c| c.key() == key)
    }

    /// The class a category's time goes to.
    pub fn of(c: &Category) -> Class {
        match c {
            Category::TimerIrqLate { .. } | Category::TimerIrqHandler | Category::Irq { .. } => {
                Class::Irq
            }
            Category::Softirq { .. } => Class::Softirq,
            Category::Thread { .. } | Category::Blocking { .. } => Class::Thread,
            Category::Nmi => Class::Nmi,
            // The loop's own kernel time: switching back to it, or blocked in it (a page
            // fault, a lock).
            Category::ReturnToUser | Category::MeasuringThreadBlocked => Class::Switch,
            Category::RtThrottling => Class::Throttling,
            Category::Hypervisor => Class::Hypervisor,
            Category::Firmware => Class::Firmware,
            Category::Unexplained => Class::Unexplained,
        }
    }
}

/// Time per [`Class`] over a run, ns.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ClassTotals {
    /// Hard interrupts (the timer's included).
    pub irq_ns: u64,
    /// Softirqs.
    pub softirq_ns: u64,
    /// Other threads (higher priority, or holding the CPU).
    pub thread_ns: u64,
    /// NMIs.
    pub nmi_ns: u64,
    /// The switch back to the loop (scheduler, return to user space).
    pub switch_ns: u64,
    /// RT throttling: the real-time loop taken off the CPU for normal tasks or idle.
    pub throttling_ns: u64,
    /// Time the guest could not see (the vCPU was not running).
    pub hypervisor_ns: u64,
    /// Firmware: time below the kernel across which the SMI counter advanced.
    pub firmware_ns: u64,
    /// Time no trace event covers: never folded into a class.
    pub unexplained_ns: u64,
}

impl ClassTotals {
    /// Sums `(category, ns)` parts by class (an explanation's culprit totals:
    /// `ExplainSummary::class_totals`).
    pub fn sum<'a>(parts: impl IntoIterator<Item = (&'a Category, u64)>) -> ClassTotals {
        let mut t = ClassTotals::default();
        for (category, ns) in parts {
            *t.slot(Class::of(category)) += ns;
        }
        t
    }

    /// Adds `ns` to class `c`.
    pub fn add(&mut self, c: Class, ns: u64) {
        *self.slot(c) += ns;
    }

    fn slot(&mut self, c: Class) -> &mut u64 {
        match c {
            Class::Thread => &mut self.thread_ns,
            Class::Irq => &mut self.irq_ns,
            Class::Softirq => &mut self.softirq_ns,
            Class::Nmi => &mut self.nmi_ns,
            Class::Switch => &mut self.switch_ns,
            Class::Throttling => &mut self.throttling_ns,
            Class::Hypervisor => &mut self.hypervisor_ns,
            Class::Firmware => &mut self.firmware_ns,
            Class::Unexplained => &mut self.unexplained_ns,
        }
    }

    /// The time of one class, ns.
    pub fn get(&self, c: Class) -> u64 {
        let mut t = *self;
        *t.slot(c)
    }

    /// Each class with its time, in the order printed.
    pub fn parts(&self) -> [(Class, u64); 9] {
        Class::ALL.map(|c| (c, self.get(c)))
    }

    /// The sum of the classes.
    pub fn total_ns(&self) -> u64 {
        self.parts().iter().map(|&(_, v)| v).sum()
    }
}
