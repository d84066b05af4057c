//! `--smi`: System Management Interrupts per thread, as cyclictest counts them on x86.
//!
//! cyclictest reads `MSR_SMI_COUNT` in its measuring thread after every wake-up. rtscope keeps
//! the measuring threads to the clock read, the sleep and a store, so the thread that draws the
//! status reads the counter of each thread's CPU instead: the count over the run is the same
//! (an SMI stops every CPU), only a count per sample (`-v`'s column) cannot be given.

use rtscope_monitor::smi::{smis_between, SmiCounter};
use rtscope_session::UsageError;
use std::path::Path;

/// The open counters of the threads' CPUs and their readings at the start.
pub struct Smi {
    counter: SmiCounter,
    base: Vec<Option<u64>>,
    last: std::cell::RefCell<Vec<u64>>,
}

impl Smi {
    /// Opens the counter of each thread's CPU (`cpus[i]` for thread `i`) below `root`.
    pub fn open(root: &Path, cpus: &[usize]) -> Result<Smi, UsageError> {
        let counter = SmiCounter::open(root, cpus).map_err(|e| {
            UsageError::new(format!("option '--smi': {e}"))
                .hint("drop --smi: no SMI count can be taken on this machine")
        })?;
        let base = counter.read();
        Ok(Smi {
            last: std::cell::RefCell::new(vec![0; base.len()]),
            counter,
            base,
        })
    }

    /// Each thread's SMIs since the start. A read that fails keeps the thread's last count.
    pub fn counts(&self) -> Vec<u64> {
        let now = self.counter.read();
        let mut last = self.last.borrow_mut();
        for (i, (b, n)) in self.base.iter().zip(now).enumerate() {
            if let (Some(b), Some(n)) = (b, n) {
                last[i] = smis_between(*b, n);
            }
        }
        last.clone()
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
        let s = Smi::open(&root, &[0, 1, 1]).unwrap();
        assert_eq!(s.counts(), [0, 0, 0]);
        msr(0, 103);
        msr(1, 8);
        assert_eq!(s.counts(), [3, 1, 1]);
        std::fs::write(root.join("dev/cpu/0/msr"), b"short").unwrap();
        assert_eq!(s.counts(), [3, 1, 1], "a failed read keeps the last count");
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
        let e = Smi::open(&root, &[0]).err().unwrap().to_string();
        assert!(e.contains("'--smi'") && e.contains("AuthenticAMD"), "{e}");
        std::fs::remove_dir_all(&root).unwrap();
    }
}
