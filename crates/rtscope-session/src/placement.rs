//! Where rtscope's own threads run during a measurement: on the housekeeping CPUs, never on a
//! measured CPU (docs/measurement.md, "rtscope's own threads").
//!
//! Every thread of rtscope but the measuring ones — the control thread (the main thread: ring
//! drain, checkpoints, live output, the `--explain` spike analysis), the monitor thread, the
//! trace reader, the trace reaper process — runs on the housekeeping CPUs: `--housekeeping
//! LIST`, by default the online CPUs the run does not measure. The main thread pins itself
//! there before it starts anything, so every thread and process it starts afterwards is
//! created with that mask (the kernel copies the creator's affinity into a new task, which
//! first runs on a CPU of it); threads that existed before (a load supervisor's pipe reader)
//! are moved there too. A measuring thread sets its own CPU before it does any work. The
//! masks are restored when the session ends (a campaign starts the next run's loads
//! unpinned).
//!
//! When every online CPU is measured (or the measuring threads are not pinned), there is no
//! housekeeping CPU: nothing is pinned, the other threads only do their light periodic work
//! (they sleep between ticks), and the spike analysis of `--explain` waits for the end of the
//! run. The cyclictest front end's `--mainaffinity` may name measured CPUs (cyclictest accepts
//! any): rtscope's threads are pinned there, and the analysis waits too.

use rtscope_engine::{CpuSet, RunConfig};
use std::io;

/// Where rtscope's own threads run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Placement {
    /// On these CPUs, none of them measured: spikes are analysed during the run.
    Separate {
        /// The housekeeping CPUs.
        cpus: CpuSet,
        /// Named by an option (`--housekeeping`, `--main-cpus`), not the default.
        asked: bool,
    },
    /// On these CPUs, asked for although some are measured (cyclictest's `--mainaffinity`):
    /// spikes are analysed at the end of the run.
    Shared {
        /// The CPUs asked for.
        cpus: CpuSet,
        /// Those of them that are measured.
        measured: CpuSet,
    },
    /// Not pinned: every online CPU is measured. Spikes are analysed at the end of the run.
    NoCpu(NoCpuWhy),
}

/// Why there is no housekeeping CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoCpuWhy {
    /// The run measures every online CPU.
    AllMeasured,
    /// A measuring thread is not pinned (SCHED_DEADLINE, cyclictest without `-a`): it may run
    /// on every CPU.
    Unpinned,
    /// The CPUs not measured are outside the CPUs this process may use (its affinity, a
    /// cpuset).
    NotAllowed,
}

/// The CPUs a run of `config` measures: those its threads are pinned to, or every online CPU
/// when one of them is not pinned.
pub fn measured_cpus(config: &RunConfig, online: &CpuSet) -> CpuSet {
    if config.threads.iter().any(|t| t.affinity.is_none()) {
        online.clone()
    } else {
        config.pinned_cpus()
    }
}

impl Placement {
    /// The placement of a run of `config` on `online` CPUs, `asked` naming the housekeeping
    /// CPUs (`None`: the default, the online CPUs not measured).
    pub fn resolve(asked: Option<&CpuSet>, config: &RunConfig, online: &CpuSet) -> Placement {
        let measured = measured_cpus(config, online);
        if let Some(cpus) = asked {
            let overlap = CpuSet::from_cpus(cpus.iter().filter(|&c| measured.contains(c)));
            return if overlap.is_empty() {
                Placement::Separate {
                    cpus: cpus.clone(),
                    asked: true,
                }
            } else {
                Placement::Shared {
                    cpus: cpus.clone(),
                    measured: overlap,
                }
            };
        }
        let rest = CpuSet::from_cpus(online.iter().filter(|&c| !measured.contains(c)));
        if !rest.is_empty() {
            return Placement::Separate {
                cpus: rest,
                asked: false,
            };
        }
        if config.threads.iter().any(|t| t.affinity.is_none()) {
            Placement::NoCpu(NoCpuWhy::Unpinned)
        } else {
            Placement::NoCpu(NoCpuWhy::AllMeasured)
        }
    }

    /// The default placement kept to the CPUs this process may use (`allowed`: its affinity
    /// when the run starts, so a cpuset that leaves out the other CPUs is no error); CPUs
    /// asked for are left as they are (pinning fails, naming them, when they are not allowed).
    pub fn within(self, allowed: &CpuSet) -> Placement {
        match self {
            Placement::Separate { cpus, asked: false } => {
                let usable = CpuSet::from_cpus(cpus.iter().filter(|&c| allowed.contains(c)));
                if usable.is_empty() {
                    Placement::NoCpu(NoCpuWhy::NotAllowed)
                } else {
                    Placement::Separate {
                        cpus: usable,
                        asked: false,
                    }
                }
            }
            other => other,
        }
    }

    /// The CPUs rtscope's own threads are pinned to (`None`: not pinned).
    pub fn cpus(&self) -> Option<&CpuSet> {
        match self {
            Placement::Separate { cpus, .. } | Placement::Shared { cpus, .. } => Some(cpus),
            Placement::NoCpu(_) => None,
        }
    }

    /// The CPUs rtscope's own threads run on when none of them is measured.
    pub fn separate_cpus(&self) -> Option<&CpuSet> {
        match self {
            Placement::Separate { cpus, .. } => Some(cpus),
            _ => None,
        }
    }

    /// Whether `--explain` analyses spikes while the run goes on (else at its end).
    pub fn live_analysis(&self) -> bool {
        matches!(self, Placement::Separate { .. })
    }

    /// `live` or `deferred`: when the spike analysis runs.
    pub fn analysis(&self) -> &'static str {
        if self.live_analysis() {
            "live"
        } else {
            "deferred"
        }
    }

    /// The CPU list (`0-1`), or `none`.
    pub fn cpus_text(&self) -> String {
        self.cpus().map_or("none".into(), ToString::to_string)
    }

    /// One line for people: where rtscope's own threads run, and (`explaining`) when spikes
    /// are analysed if not during the run.
    pub fn describe(&self, explaining: bool) -> String {
        let later = if explaining {
            "; spike analysis (--explain) deferred to the end of the run"
        } else {
            ""
        };
        match self {
            Placement::Separate { cpus, asked } => format!(
                "rtscope's own threads on CPU{} {cpus} ({}, not measured)",
                plural(cpus),
                if *asked { "asked" } else { "default" }
            ),
            Placement::Shared { cpus, measured } => format!(
                "rtscope's own threads on CPU{} {cpus}, which include{} measured CPU{} {measured}{later}",
                plural(cpus),
                if measured.len() == 1 { "s" } else { "" },
                plural(measured)
            ),
            Placement::NoCpu(why) => format!(
                "no housekeeping CPU ({}): rtscope's own threads share the measured CPUs, sleeping between ticks{later}",
                why.text()
            ),
        }
    }

    /// The housekeeping CPUs for the run's environment (`rtscope.housekeeping.cpus`): `0-1`,
    /// `0,3 (includes measured CPU 3)` or `none (every online CPU is measured)`.
    pub fn env_value(&self) -> String {
        match self {
            Placement::Separate { cpus, .. } => cpus.to_string(),
            Placement::Shared { cpus, measured } => format!(
                "{cpus} (includes measured CPU{} {measured})",
                plural(measured)
            ),
            Placement::NoCpu(why) => format!("none ({})", why.text()),
        }
    }

    /// The `housekeeping` object of the JSON results.
    pub fn doc(&self, explaining: bool) -> PlacementDoc {
        PlacementDoc {
            cpus: self.cpus().map(|c| c.iter().collect()),
            analysis: self.analysis(),
            note: self.describe(explaining),
        }
    }
}

impl NoCpuWhy {
    fn text(self) -> &'static str {
        match self {
            NoCpuWhy::AllMeasured => "every online CPU is measured",
            NoCpuWhy::Unpinned => "the measuring threads are not pinned",
            NoCpuWhy::NotAllowed => "the CPUs not measured are outside rtscope's CPU affinity",
        }
    }
}

fn plural(c: &CpuSet) -> &'static str {
    if c.len() == 1 {
        ""
    } else {
        "s"
    }
}

/// Where rtscope's own threads ran, in the JSON results (docs/json-schema.md).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PlacementDoc {
    /// The housekeeping CPUs (`null`: none, not pinned).
    pub cpus: Option<Vec<usize>>,
    /// `live` (spikes analysed during the run) or `deferred` (at its end).
    pub analysis: &'static str,
    /// The same in words.
    pub note: String,
}

/// The affinity of rtscope's threads, held while the session runs: restored when dropped.
#[derive(Debug, Default)]
pub struct Pinned {
    /// (thread id, its affinity before).
    saved: Vec<(i32, CpuSet)>,
}

impl Pinned {
    /// Pins the calling thread to `cpus`.
    pub fn current(cpus: &CpuSet) -> io::Result<Self> {
        let before = get_affinity(0)?;
        set_affinity(0, cpus)?;
        Ok(Pinned {
            saved: vec![(rtscope_engine::sys::gettid(), before)],
        })
    }

    /// Also pins every other thread of the process but `except` (best effort: a thread that
    /// ended meanwhile is skipped).
    pub fn others(&mut self, cpus: &CpuSet, except: &[i32]) {
        let me = rtscope_engine::sys::gettid();
        for tid in threads_of(None) {
            if tid != me && !except.contains(&tid) {
                if let Ok(before) = get_affinity(tid) {
                    if set_affinity(tid, cpus).is_ok() {
                        self.saved.push((tid, before));
                    }
                }
            }
        }
    }

    /// Pins every thread of process `pid`, a helper rtscope started before the run (the load
    /// shepherd, which ends with the run: it is not restored, its process id may be reused by
    /// then); best effort.
    pub fn process(pid: u32, cpus: &CpuSet) {
        for tid in threads_of(Some(pid)) {
            let _ = set_affinity(tid, cpus);
        }
    }
}

impl Drop for Pinned {
    /// Restores each thread that still is one of its process's (a thread id that ended may
    /// belong to another process by now).
    fn drop(&mut self) {
        let me = rtscope_engine::sys::gettid();
        let alive = threads_of(None);
        for (tid, cpus) in &self.saved {
            if *tid == me {
                let _ = set_affinity(0, cpus);
            } else if alive.contains(tid) {
                let _ = set_affinity(*tid, cpus);
            }
        }
    }
}

/// The threads of process `pid` (`None`: this one), from `/proc/PID/task`.
fn threads_of(pid: Option<u32>) -> Vec<i32> {
    let dir = pid.map_or("/proc/self/task".into(), |p| format!("/proc/{p}/task"));
    let Ok(dir) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .collect()
}

fn set_affinity(tid: i32, cpus: &CpuSet) -> io::Result<()> {
    // SAFETY: cpu_set_t is a plain bit array; all-zero is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for cpu in cpus.iter() {
        if cpu >= libc::CPU_SETSIZE as usize {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        // SAFETY: `cpu` is below CPU_SETSIZE, checked above.
        unsafe { libc::CPU_SET(cpu, &mut set) };
    }
    // SAFETY: `set` is a valid cpu_set_t of the size passed; `tid` 0 is the calling thread.
    let rc = unsafe { libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

fn get_affinity(tid: i32) -> io::Result<CpuSet> {
    // SAFETY: cpu_set_t is a plain bit array; all-zero is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid, writable cpu_set_t of the size passed.
    let rc =
        unsafe { libc::sched_getaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `set` was filled by the kernel; CPU_ISSET reads within its bounds.
    Ok(CpuSet::from_cpus(
        (0..libc::CPU_SETSIZE as usize).filter(|&c| unsafe { libc::CPU_ISSET(c, &set) }),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtscope_core::Nanos;
    use rtscope_engine::{Policy, ThreadSpec};

    fn config(pins: &[Option<usize>]) -> RunConfig {
        RunConfig::new(
            pins.iter()
                .map(|p| ThreadSpec {
                    affinity: p.map(|c| CpuSet::from_cpus([c])),
                    policy: Policy::Fifo,
                    priority: 90,
                    interval: Nanos::from_ms(1),
                })
                .collect(),
        )
    }

    fn cpus(c: &[usize]) -> CpuSet {
        CpuSet::from_cpus(c.iter().copied())
    }

    #[test]
    fn the_default_housekeeping_cpus_are_the_online_cpus_not_measured() {
        let online = cpus(&[0, 1, 2, 3]);
        let p = Placement::resolve(None, &config(&[Some(1), Some(3)]), &online);
        assert_eq!(
            p,
            Placement::Separate {
                cpus: cpus(&[0, 2]),
                asked: false
            }
        );
        assert!(p.live_analysis());
        assert_eq!(p.doc(true).cpus, Some(vec![0, 2]));
        assert_eq!(p.analysis(), "live");
        let p = Placement::resolve(None, &config(&[Some(1)]), &cpus(&[0, 1]));
        assert_eq!(p.cpus_text(), "0");
        assert_eq!(
            p.describe(true),
            "rtscope's own threads on CPU 0 (default, not measured)"
        );
        assert_eq!(p.env_value(), "0");
    }

    #[test]
    fn with_every_cpu_measured_there_is_none_and_the_analysis_is_deferred() {
        let online = cpus(&[0, 1]);
        let p = Placement::resolve(None, &config(&[Some(0), Some(1)]), &online);
        assert_eq!(p, Placement::NoCpu(NoCpuWhy::AllMeasured));
        assert_eq!(p.cpus(), None);
        assert!(!p.live_analysis());
        let doc = p.doc(true);
        assert_eq!((doc.cpus, doc.analysis), (None, "deferred"));
        assert!(
            doc.note
                .starts_with("no housekeeping CPU (every online CPU is measured)")
                && doc.note.ends_with("deferred to the end of the run"),
            "{}",
            doc.note
        );
        assert_eq!(p.env_value(), "none (every online CPU is measured)");
        assert!(!p.describe(false).contains("--explain"));
        // The CPUs not measured, but none this process may use (a cpuset).
        let p = Placement::resolve(None, &config(&[Some(1)]), &online);
        assert_eq!(p.clone().within(&cpus(&[0])).cpus_text(), "0");
        assert_eq!(
            p.within(&cpus(&[1])),
            Placement::NoCpu(NoCpuWhy::NotAllowed)
        );
        // An unpinned measuring thread may run on every CPU.
        let p = Placement::resolve(None, &config(&[None]), &online);
        assert_eq!(p, Placement::NoCpu(NoCpuWhy::Unpinned));
    }

    #[test]
    fn asked_cpus_are_used_and_an_overlap_defers_the_analysis() {
        let online = cpus(&[0, 1, 2, 3]);
        let c = config(&[Some(2), Some(3)]);
        let p = Placement::resolve(Some(&cpus(&[1])), &c, &online);
        assert_eq!(
            p,
            Placement::Separate {
                cpus: cpus(&[1]),
                asked: true
            }
        );
        let p = Placement::resolve(Some(&cpus(&[0, 3])), &c, &online);
        assert_eq!(
            p,
            Placement::Shared {
                cpus: cpus(&[0, 3]),
                measured: cpus(&[3])
            }
        );
        assert!(!p.live_analysis());
        assert_eq!(p.cpus_text(), "0,3");
        assert_eq!(p.env_value(), "0,3 (includes measured CPU 3)");
    }

    #[test]
    fn pinning_moves_the_calling_thread_and_dropping_restores_it() {
        let before = get_affinity(0).unwrap();
        let first = CpuSet::from_cpus([before.nth_cyclic(0)]);
        let pinned = Pinned::current(&first).unwrap();
        assert_eq!(get_affinity(0).unwrap(), first);
        drop(pinned);
        assert_eq!(get_affinity(0).unwrap(), before);
    }
}
