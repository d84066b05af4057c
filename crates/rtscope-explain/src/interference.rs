//! Interference counts of traced gaps in `rtla osnoise top`'s columns (`rtscope noise
//! --explain`): the same culprits that the charging step gives time, counted. The classes are
//! those of the time per class (IRQ, softirq, thread with RT throttling, NMI); what is
//! below the kernel (the hypervisor, firmware) or no context at all makes a gap HW.

use crate::model::{Attribution, Category};
use serde::{Deserialize, Serialize};

/// Interference counts of one CPU's traced gaps, in `rtla osnoise top`'s columns (HW, NMI, IRQ,
/// SIRQ, THREAD): what the kernel's osnoise tracer counts, from the same attribution that
/// charges the time.
///
/// Every occurrence counts, as osnoise counts them: each interrupt entry, softirq run, NMI and
/// thread run in a gap (the same IRQ twice in one gap: 2). Charges recorded before their
/// occurrences were counted (`Charge::times` 0) count once per gap. Counting each culprit once
/// per gap left rtscope's IRQ at half of osnoise's beside a loaded host, where a gap holds
/// several timer ticks (rt-amd64: 89 against 194/s). RT throttling counts as a thread (osnoise
/// sees the task the throttle let run). **HW** is a gap in which the trace shows
/// no interrupt, softirq, NMI or other thread — only the loop itself (and its switch back), the
/// hypervisor or nothing: osnoise's "hardware noise", which its own documentation says includes
/// the hypervisor's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Interference {
    /// The CPU.
    pub cpu: usize,
    /// Gaps with no kernel context in the trace.
    pub hw: u64,
    /// NMIs.
    pub nmi: u64,
    /// Hard interrupts (the timer's included).
    pub irq: u64,
    /// Softirqs.
    pub softirq: u64,
    /// Other threads (and RT throttling's).
    pub thread: u64,
}

impl Interference {
    /// Counts one traced gap.
    pub fn add(&mut self, a: &Attribution) {
        let before = self.nmi + self.irq + self.softirq + self.thread;
        for c in &a.charges {
            let n = u64::from(c.times.max(1));
            match c.category {
                Category::Nmi => self.nmi += n,
                Category::TimerIrqLate { .. }
                | Category::TimerIrqHandler
                | Category::Irq { .. } => self.irq += n,
                Category::Softirq { .. } => self.softirq += n,
                Category::Thread { .. } | Category::Blocking { .. } | Category::RtThrottling => {
                    self.thread += n
                }
                Category::ReturnToUser
                | Category::MeasuringThreadBlocked
                | Category::Hypervisor
                | Category::Firmware
                | Category::Unexplained => {}
            }
        }
        if self.nmi + self.irq + self.softirq + self.thread == before {
            self.hw += 1;
        }
    }
}
