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
/// A gap counts once for each distinct culprit in it (two different IRQs: IRQ 2; the same IRQ
/// twice in one gap: 1, where osnoise, which counts every entry, says 2); RT throttling counts as
/// a thread (osnoise sees the task the throttle let run). **HW** is a gap in which the trace shows
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
            match c.category {
                Category::Nmi => self.nmi += 1,
                Category::TimerIrqLate { .. }
                | Category::TimerIrqHandler
                | Category::Irq { .. } => self.irq += 1,
                Category::Softirq { .. } => self.softirq += 1,
                Category::Thread { .. } | Category::Blocking { .. } | Category::RtThrottling => {
                    self.thread += 1
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
