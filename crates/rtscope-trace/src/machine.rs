//! What the machine allows idle to cost: the longest exit latency of its idle states and
//! whether it runs under a hypervisor. An "exit from idle" longer than any idle state allows is
//! not an idle exit: on a guest it is the hypervisor not running the vCPU, elsewhere it is
//! unexplained.

use serde::{Deserialize, Serialize};
use std::path::Path;

/// The idle facts the attribution needs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Machine {
    /// The longest exit latency of the idle states of the measured CPUs (ns); `Some(0)` when
    /// there are none (halt only, or a guest without a cpuidle driver); `None`: unknown.
    pub idle_exit_max_ns: Option<u64>,
    /// The kernel runs under a hypervisor.
    pub guest: bool,
    /// The measured thread never sleeps (`rtscope noise`'s loop): a gap in which the trace
    /// shows only that thread running was taken below the kernel — the hypervisor on a guest,
    /// firmware (an SMI) or the hardware elsewhere — as the osnoise tracer's "HW" noise.
    #[serde(default)]
    pub busy_loop: bool,
}

impl Machine {
    /// Reads `/sys/devices/system/cpu/cpuN/cpuidle/state*/latency` (µs) of `cpus` and whether
    /// this is a guest ([`rtscope_core::virt::evidence`], the audit's own list: the CPU flag,
    /// DMI, QEMU's arm64 virt machine …) below `root` (`/` on a live system). `/sys` missing:
    /// idle unknown.
    pub fn read(root: &Path, cpus: &[usize]) -> Machine {
        let sys_cpu = root.join("sys/devices/system/cpu");
        let read = |p: &str| {
            let text = std::fs::read_to_string(root.join(p.trim_start_matches('/'))).ok()?;
            let t = text.trim();
            (!t.is_empty()).then(|| t.to_owned())
        };
        let guest = !rtscope_core::virt::evidence(&read).is_empty();
        if !sys_cpu.is_dir() {
            return Machine {
                idle_exit_max_ns: None,
                guest,
                busy_loop: false,
            };
        }
        let mut max_us = 0u64;
        for cpu in cpus {
            let Ok(dir) = std::fs::read_dir(sys_cpu.join(format!("cpu{cpu}/cpuidle"))) else {
                continue;
            };
            for state in dir.flatten() {
                let lat = std::fs::read_to_string(state.path().join("latency"));
                if let Some(us) = lat.ok().and_then(|s| s.trim().parse::<u64>().ok()) {
                    max_us = max_us.max(us);
                }
            }
        }
        Machine {
            idle_exit_max_ns: Some(max_us.saturating_mul(1000)),
            guest,
            busy_loop: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_latencies_and_the_hypervisor_flag_are_read() {
        let root = std::env::temp_dir().join(format!("rtscope-machine-{}", std::process::id()));
        let st = root.join("sys/devices/system/cpu/cpu1/cpuidle");
        for (s, lat) in [("state0", "0"), ("state1", "2"), ("state2", "133")] {
            std::fs::create_dir_all(st.join(s)).unwrap();
            std::fs::write(st.join(s).join("latency"), format!("{lat}\n")).unwrap();
        }
        std::fs::create_dir_all(root.join("sys/devices/system/cpu/cpu0")).unwrap();
        std::fs::create_dir_all(root.join("proc")).unwrap();
        std::fs::write(root.join("proc/cpuinfo"), "flags\t: fpu hypervisor sse\n").unwrap();
        assert_eq!(
            Machine::read(&root, &[1]),
            Machine {
                idle_exit_max_ns: Some(133_000),
                guest: true,
                busy_loop: false,
            }
        );
        // No cpuidle directory: no idle states at all.
        assert_eq!(Machine::read(&root, &[0]).idle_exit_max_ns, Some(0));
        // QEMU's arm64 virt machine (the rt-arm64 guest): no CPU flag, its device tree says.
        std::fs::write(root.join("proc/cpuinfo"), "Features\t: fp asimd\n").unwrap();
        assert!(!Machine::read(&root, &[1]).guest);
        std::fs::create_dir_all(root.join("proc/device-tree")).unwrap();
        std::fs::write(
            root.join("proc/device-tree/compatible"),
            "linux,dummy-virt\0",
        )
        .unwrap();
        assert!(Machine::read(&root, &[1]).guest);
        let nowhere = root.join("nothing");
        assert_eq!(Machine::read(&nowhere, &[0]), Machine::default());
        std::fs::remove_dir_all(root).unwrap();
    }
}
