//! What takes a CPU away below the kernel, read over a noise run: the hypervisor's steal time
//! (`/proc/stat`) and firmware's System Management Interrupts (`MSR_SMI_COUNT`). Neither shows
//! in a trace: a gap no kernel event covers is the hypervisor's or the firmware's, and these
//! counters say which was there. Read by the thread that drives the run, at its start and end.

use rtscope_monitor::smi::{smis_between, SmiCounter};
use rtscope_monitor::{steal_ticks, DEFAULT_CLOCK_TICKS};
use serde::Serialize;
use std::path::Path;

/// The counters at the start of a run.
pub struct PlatformCounters {
    cpus: Vec<usize>,
    steal: Option<Vec<(usize, u64)>>,
    smi: Result<(SmiCounter, Vec<Option<u64>>), String>,
}

/// One CPU's share of the run below the kernel.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct CpuPlatform {
    /// Steal time during the run, ns, in whole clock ticks (`USER_HZ`: 10 ms); `None` when
    /// `/proc/stat` could not be read.
    pub steal_ns: Option<u64>,
    /// SMIs counted on this CPU during the run; `None` without a counter (the reason is in
    /// [`PlatformTotals::smi_unavailable`]).
    pub smis: Option<u64>,
}

/// The counters over the run, per CPU in the run's order.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct PlatformTotals {
    /// Per CPU, in the order of the run's CPUs.
    pub cpus: Vec<CpuPlatform>,
    /// Why there is no SMI count (the CPU, the driver, the permission); `None` with a count.
    pub smi_unavailable: Option<String>,
}

impl PlatformCounters {
    /// Reads steal time and opens the SMI counter of `cpus` below `root` (`/` in production).
    pub fn start(root: &Path, cpus: &[usize]) -> PlatformCounters {
        let smi = SmiCounter::open(root, cpus)
            .map(|c| {
                let base = c.read();
                (c, base)
            })
            .map_err(|e| e.to_string());
        PlatformCounters {
            cpus: cpus.to_vec(),
            steal: steal_ticks(root),
            smi,
        }
    }

    /// Reads them again: the differences since [`PlatformCounters::start`].
    pub fn finish(self, root: &Path) -> PlatformTotals {
        let steal_end = steal_ticks(root);
        let tick_ns = 1_000_000_000 / DEFAULT_CLOCK_TICKS;
        let steal_of = |cpu: usize| -> Option<u64> {
            let find = |v: &Option<Vec<(usize, u64)>>| {
                v.as_ref()?.iter().find(|(c, _)| *c == cpu).map(|(_, t)| *t)
            };
            Some(find(&steal_end)?.checked_sub(find(&self.steal)?)? * tick_ns)
        };
        let smi_end = self.smi.as_ref().ok().map(|(c, _)| c.read());
        let cpus = self
            .cpus
            .iter()
            .enumerate()
            .map(|(i, &cpu)| CpuPlatform {
                steal_ns: steal_of(cpu),
                smis: match (&self.smi, &smi_end) {
                    (Ok((_, base)), Some(end)) => {
                        base[i].zip(end[i]).map(|(b, e)| smis_between(b, e))
                    }
                    _ => None,
                },
            })
            .collect();
        PlatformTotals {
            cpus,
            smi_unavailable: self.smi.err(),
        }
    }
}

impl PlatformTotals {
    /// What the store keeps of them, in the run's stored configuration (`platform`): per CPU of
    /// `cpus` (the run's, in its order) `{cpu, steal_ns, smis}`, `null` where unknown, and why
    /// there is no SMI count.
    pub fn stored(&self, cpus: &[usize]) -> serde_json::Value {
        let rows: Vec<serde_json::Value> = cpus
            .iter()
            .zip(&self.cpus)
            .map(|(cpu, p)| serde_json::json!({"cpu": cpu, "steal_ns": p.steal_ns, "smis": p.smis}))
            .collect();
        serde_json::json!({"cpus": rows, "smi_unavailable": self.smi_unavailable})
    }

    /// The lines under the table: steal time seen, SMIs counted or why none could be.
    pub fn notes(&self) -> String {
        let mut s = String::new();
        if self.cpus.iter().any(|c| c.steal_ns.is_some_and(|v| v > 0)) {
            s.push_str(
                "STEAL is time the hypervisor ran something else while the CPU wanted to run \
                 (/proc/stat, 10 ms ticks): a trace inside the guest cannot see it\n",
            );
        }
        if let Some(why) = &self.smi_unavailable {
            s.push_str(&format!("SMI: {why}\n"));
        } else if self.cpus.iter().any(|c| c.smis.is_some_and(|v| v > 0)) {
            s.push_str(
                "SMI counts System Management Interrupts (MSR 0x34): firmware stopped every \
                 CPU, invisible to the kernel; gaps no trace event covers may be these\n",
            );
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    struct Tree(PathBuf);

    impl Drop for Tree {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn tree(name: &str, cpuinfo: &str) -> Tree {
        let d =
            std::env::temp_dir().join(format!("rtscope-platform-{name}-{}", std::process::id()));
        std::fs::create_dir_all(d.join("proc")).unwrap();
        std::fs::write(d.join("proc/cpuinfo"), cpuinfo).unwrap();
        Tree(d)
    }

    fn stat(root: &Path, steal: [u64; 2]) {
        let text = format!(
            "cpu  2 0 2 8 0 0 0 {} 0 0\ncpu0 1 0 1 4 0 0 0 {} 0 0\ncpu1 1 0 1 4 0 0 0 {} 0 0\n",
            steal[0] + steal[1],
            steal[0],
            steal[1]
        );
        std::fs::write(root.join("proc/stat"), text).unwrap();
    }

    fn msr(root: &Path, cpu: usize, count: u64) {
        let dir = root.join(format!("dev/cpu/{cpu}"));
        std::fs::create_dir_all(&dir).unwrap();
        let mut b = vec![0u8; 0x34];
        b.extend_from_slice(&count.to_le_bytes());
        std::fs::write(dir.join("msr"), b).unwrap();
    }

    #[test]
    fn steal_and_smis_are_the_differences_over_the_run() {
        let t = tree("intel", "vendor_id\t: GenuineIntel\ncpu family\t: 6\n");
        stat(&t.0, [10, 4]);
        msr(&t.0, 1, 0xffff_fffe);
        let c = PlatformCounters::start(&t.0, &[1]);
        stat(&t.0, [30, 7]);
        msr(&t.0, 1, 3);
        let p = c.finish(&t.0);
        assert_eq!(
            p.cpus,
            [CpuPlatform {
                steal_ns: Some(3 * 10_000_000),
                smis: Some(5)
            }]
        );
        assert_eq!(p.smi_unavailable, None);
        let notes = p.notes();
        assert!(
            notes.contains("STEAL is time the hypervisor") && notes.contains("MSR 0x34"),
            "{notes}"
        );
    }

    #[test]
    fn without_a_counter_the_count_is_unknown_and_the_reason_is_given() {
        let t = tree("amd", "vendor_id\t: AuthenticAMD\ncpu family\t: 25\n");
        stat(&t.0, [0, 0]);
        let c = PlatformCounters::start(&t.0, &[0, 1]);
        stat(&t.0, [0, 0]);
        let p = c.finish(&t.0);
        assert_eq!(
            p.cpus.iter().map(|c| c.smis).collect::<Vec<_>>(),
            [None, None]
        );
        assert_eq!(p.cpus[0].steal_ns, Some(0));
        let why = p.smi_unavailable.clone().unwrap();
        assert!(why.contains("AuthenticAMD"), "{why}");
        assert_eq!(
            p.notes(),
            format!("SMI: {why}\n"),
            "no steal note at 0 steal"
        );
    }

    #[test]
    fn the_stored_form_names_each_cpu_with_its_steal_and_smis() {
        let p = PlatformTotals {
            cpus: vec![
                CpuPlatform {
                    steal_ns: Some(30_000_000),
                    smis: None,
                },
                CpuPlatform {
                    steal_ns: None,
                    smis: Some(2),
                },
            ],
            smi_unavailable: None,
        };
        assert_eq!(
            p.stored(&[3, 1]),
            serde_json::json!({"cpus": [
                {"cpu": 3, "steal_ns": 30_000_000, "smis": null},
                {"cpu": 1, "steal_ns": null, "smis": 2}], "smi_unavailable": null})
        );
    }

    #[test]
    fn an_unreadable_proc_stat_is_unknown_steal_not_zero() {
        let t = tree("nostat", "vendor_id\t: AuthenticAMD\ncpu family\t: 25\n");
        let c = PlatformCounters::start(&t.0, &[0]);
        let p = c.finish(&t.0);
        assert_eq!(p.cpus[0].steal_ns, None);
    }

    #[test]
    fn this_machine_reads_steal_time() {
        // Every Linux has /proc/stat; a VM's steal column moves, bare metal's stays 0: either
        // way the value is read, never unknown.
        let c = PlatformCounters::start(Path::new("/"), &[0]);
        let p = c.finish(Path::new("/"));
        assert!(p.cpus[0].steal_ns.is_some(), "{p:?}");
        assert!(
            p.cpus[0].smis.is_some() || p.smi_unavailable.is_some(),
            "{p:?}"
        );
    }
}
