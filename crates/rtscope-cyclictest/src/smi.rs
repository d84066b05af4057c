//! `--smi`: System Management Interrupts per thread, as cyclictest counts them on x86.
//!
//! cyclictest reads `MSR_SMI_COUNT` in its measuring thread after every wake-up. rtscope keeps
//! the measuring threads to the clock read, the sleep and a store, and does not read a
//! measured CPU's counter from elsewhere during the run either: the msr driver reads another
//! CPU's register by interrupting it (an IPI), and the status line is redrawn every 100 ms.
//! So the live count is the one of the CPU the status is drawn on, read there and shown for
//! every thread (an SMI stops every CPU at once: Intel broadcasts them), and each thread's own
//! CPU is read at the start and again at the end, once the measuring threads have stopped, for
//! the counts of the final lines. A CPU whose counter is not open (the status drawn on a CPU
//! whose `msr` would not open) keeps the last live count.

use rtscope_common::error::UsageError;
use rtscope_engine::sys;
use rtscope_monitor::smi::{smis_between, SmiCounter};
use std::cell::RefCell;
use std::path::Path;

/// The open counters of the threads' CPUs and of the other online CPUs, with their readings
/// at the start.
pub struct Smi {
    own: SmiCounter,
    others: Option<SmiCounter>,
    base: Vec<(usize, Option<u64>)>,
    threads: Vec<usize>,
    last: RefCell<Vec<u64>>,
}

impl Smi {
    /// Opens the counter of each thread's CPU (`cpus[i]` for thread `i`) below `root`, and
    /// those of the other `online` CPUs that open (the live count's).
    pub fn open(root: &Path, cpus: &[usize], online: &[usize]) -> Result<Smi, UsageError> {
        let mut own = cpus.to_vec();
        own.sort_unstable();
        own.dedup();
        let own = SmiCounter::open(root, &own).map_err(|e| {
            UsageError::new(format!("option '--smi': {e}"))
                .hint("drop --smi: no SMI count can be taken on this machine")
        })?;
        let rest: Vec<usize> = online
            .iter()
            .copied()
            .filter(|c| !cpus.contains(c))
            .collect();
        let others = SmiCounter::open_available(root, &rest).ok();
        let base = [Some(&own), others.as_ref()]
            .into_iter()
            .flatten()
            .flat_map(|c| c.cpus().zip(c.read()).collect::<Vec<_>>())
            .collect();
        Ok(Smi {
            own,
            others,
            base,
            threads: cpus.to_vec(),
            last: RefCell::new(vec![0; cpus.len()]),
        })
    }

    /// During the run: the SMIs since the start counted by the CPU this thread runs on, for
    /// every thread, never below a count shown before.
    pub fn live_counts(&self) -> Vec<u64> {
        self.live_counts_on(sys::current_cpu())
    }

    fn live_counts_on(&self, cpu: Option<usize>) -> Vec<u64> {
        let mut last = self.last.borrow_mut();
        if let Some(n) = cpu.and_then(|c| self.since_start(c)) {
            last.iter_mut().for_each(|l| *l = (*l).max(n));
        }
        last.clone()
    }

    /// After the measuring threads stopped: each thread's SMIs since the start, from its own
    /// CPU's counter. A read that fails keeps the thread's last count.
    pub fn final_counts(&self) -> Vec<u64> {
        let mut last = self.last.borrow_mut();
        for (l, &cpu) in last.iter_mut().zip(&self.threads) {
            if let Some(n) = self.since_start(cpu) {
                *l = n;
            }
        }
        last.clone()
    }

    fn since_start(&self, cpu: usize) -> Option<u64> {
        let (_, base) = self.base.iter().find(|(c, _)| *c == cpu)?;
        let now = self
            .own
            .read_cpu(cpu)
            .or_else(|| self.others.as_ref()?.read_cpu(cpu))?;
        Some(smis_between((*base)?, now))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_per_thread_since_the_start_and_survive_a_failed_read() {
        let root = std::env::temp_dir().join(format!("rtscope-ct-smi-{}", std::process::id()));
        let msr = |cpu: usize, v: u64| {
            let dir = root.join(format!("dev/cpu/{cpu}"));
            std::fs::create_dir_all(&dir).unwrap();
            let mut b = vec![0u8; 0x34];
            b.extend_from_slice(&v.to_le_bytes());
            std::fs::write(dir.join("msr"), b).unwrap();
        };
        std::fs::create_dir_all(root.join("proc")).unwrap();
        std::fs::write(
            root.join("proc/cpuinfo"),
            "vendor_id : GenuineIntel\ncpu family : 6\n",
        )
        .unwrap();
        msr(0, 100);
        msr(1, 7);
        msr(2, 50);
        // Threads on CPUs 0, 1 and 1; CPU 2 online without a thread, CPU 3 without an msr.
        let s = Smi::open(&root, &[0, 1, 1], &[0, 1, 2, 3]).unwrap();
        assert_eq!(s.final_counts(), [0, 0, 0]);
        msr(0, 103);
        msr(1, 8);
        msr(2, 52);
        // Live, drawn on CPU 2: its 2 SMIs for every thread; no measured CPU is read.
        assert_eq!(s.live_counts_on(Some(2)), [2, 2, 2]);
        assert_eq!(
            s.live_counts_on(Some(3)),
            [2, 2, 2],
            "no counter there: the last count"
        );
        assert_eq!(s.live_counts_on(None), [2, 2, 2]);
        // At the end each thread's own CPU.
        assert_eq!(s.final_counts(), [3, 1, 1]);
        std::fs::write(root.join("dev/cpu/0/msr"), b"short").unwrap();
        assert_eq!(
            s.final_counts(),
            [3, 1, 1],
            "a failed read keeps the last count"
        );
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn no_counter_is_a_usage_error_naming_the_reason() {
        let root = std::env::temp_dir().join(format!("rtscope-ct-nosmi-{}", std::process::id()));
        std::fs::create_dir_all(root.join("proc")).unwrap();
        std::fs::write(
            root.join("proc/cpuinfo"),
            "vendor_id : AuthenticAMD\ncpu family : 25\n",
        )
        .unwrap();
        let e = Smi::open(&root, &[0], &[0]).err().unwrap().to_string();
        assert!(e.contains("'--smi'") && e.contains("AuthenticAMD"), "{e}");
        std::fs::remove_dir_all(&root).unwrap();
    }
}
