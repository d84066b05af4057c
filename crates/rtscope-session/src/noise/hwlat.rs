//! `rtscope noise --irqs-off`: the hardware-only mode, measured by the kernel's hwlat tracer
//! in per-CPU mode (`rtscope_trace::hwlat`): the time a CPU loses with interrupts off can only
//! be the hardware, the firmware (SMI), the hypervisor or an NMI. The run is driven here: the
//! tracer's samples are read every 100 ms, each new sample gets the SMIs its CPU counted since
//! the previous read (the counter read after the sample, never by the spinning thread), and a
//! signal ends the run at once.
//!
//! hwlat reports, per window, the longest gap over the threshold and how many gaps were over
//! it — not every gap's length — so the table gives what it can honestly give: windows with a
//! gap over the threshold, the gaps over it, the longest inner and outer gap, the NMIs, the
//! SMIs. No noise total and no "% available" (`--limit available=…` is refused before the run).

use super::platform::PlatformCounters;
use super::CpuNoise;
use rtscope_core::Nanos;
use rtscope_engine::sys;
use rtscope_monitor::smi::{smis_between, SmiCounter};
use rtscope_trace::hwlat::{HwlatConfig, HwlatRun, HwlatSample};
use rtscope_trace::tracefs::Tracefs;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;

/// How often the samples and the SMI counters are read.
const POLL: Nanos = Nanos::from_ms(100);

/// One sample with the SMIs counted on its CPU since the previous read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Sample {
    /// What the kernel reported.
    #[serde(flatten)]
    pub kernel: HwlatSample,
    /// SMIs its CPU counted since the previous read (within 100 ms after the sample);
    /// `None` without an SMI counter.
    pub smis: Option<u64>,
}

/// One CPU's summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct HwlatRow {
    /// The CPU.
    pub cpu: usize,
    /// Windows the run spanned on it.
    pub windows: u64,
    /// Windows with a gap over the threshold (the samples).
    pub samples: u64,
    /// Gaps over the threshold, summed over the samples (`None` where the kernel does not
    /// count them).
    pub gaps_over_threshold: Option<u64>,
    /// The longest inner gap, µs.
    pub max_inner_us: Option<u64>,
    /// The longest outer gap, µs.
    pub max_outer_us: Option<u64>,
    /// NMIs in the gaps.
    pub nmis: u64,
    /// SMIs counted on the CPU over the run (`None` without a counter).
    pub smis: Option<u64>,
}

/// What the run measured.
#[derive(Debug, Clone, PartialEq)]
pub struct HwlatOutcome {
    /// Every sample, in the order read.
    pub samples: Vec<Sample>,
    /// The signal that ended the run early.
    pub signal: Option<libc::c_int>,
    /// Why there is no SMI count, if there is none.
    pub smi_unavailable: Option<String>,
    /// Time the tracer ran.
    pub ran: Nanos,
}

/// Why the hardware-only mode cannot run or failed: the message, with the fix as data
/// ([`HwlatError::hint`]) for the front end to word.
#[derive(Debug, thiserror::Error)]
pub enum HwlatError {
    /// No usable tracefs.
    #[error("the hardware-only mode needs the kernel's tracefs: {0}")]
    NoTracefs(String),
    /// The kernel cannot run the tracer as the mode needs (no hwlat tracer, no per-CPU mode,
    /// the top-level tracer in use).
    #[error("{why}")]
    Unsupported {
        /// What is missing.
        why: String,
        /// The fix.
        hint: Option<String>,
    },
    /// The tracer failed while it ran.
    #[error("the kernel's hwlat tracer failed: {0}")]
    Tracer(String),
    /// The results could not be written.
    #[error("cannot write the results: {0}")]
    Output(#[from] std::io::Error),
}

impl HwlatError {
    /// How to fix it, where there is more to say than the message.
    pub fn hint(&self) -> Option<&str> {
        match self {
            HwlatError::NoTracefs(_) => {
                Some("run as root; mount it with `mount -t tracefs nodev /sys/kernel/tracing`")
            }
            HwlatError::Unsupported { hint, .. } => hint.as_deref(),
            HwlatError::Tracer(_) | HwlatError::Output(_) => None,
        }
    }

    /// The tracer's refusal: what is missing, and the fix.
    fn unsupported(e: &rtscope_trace::hwlat::HwlatUnsupported) -> Self {
        HwlatError::Unsupported {
            why: e.to_string(),
            hint: e.hint(),
        }
    }
}

/// Why the hardware-only mode cannot run here, with the fix; `Ok` with the tracefs to use.
pub fn check() -> Result<Tracefs, HwlatError> {
    let tfs = Tracefs::discover().map_err(|e| HwlatError::NoTracefs(e.to_string()))?;
    rtscope_trace::hwlat::check(&tfs).map_err(|e| HwlatError::unsupported(&e))?;
    Ok(tfs)
}

/// Runs the tracer for `duration` (a stop signal ends it early) and reads the samples.
pub fn drive(
    tfs: &Tracefs,
    cfg: &HwlatConfig,
    duration: Nanos,
) -> Result<HwlatOutcome, HwlatError> {
    let smi = SmiCounter::open(Path::new("/"), &cfg.cpus);
    let old_mask = rtscope_common::signals::block_run_signals();
    let started = sys::now(libc::CLOCK_MONOTONIC);
    let failed = |e: &dyn std::fmt::Display| HwlatError::Tracer(e.to_string());
    let run = HwlatRun::start(tfs, cfg, true).map_err(|e| failed(&e));
    let result = run.and_then(|run| {
        let mut poll = Poll::new(smi.as_ref().ok());
        let mut signal = None;
        while signal.is_none() {
            let left = (started + duration)
                .0
                .saturating_sub(sys::now(libc::CLOCK_MONOTONIC).0);
            if left == 0 {
                break;
            }
            match rtscope_common::signals::wait_run_signal(Nanos(left.min(POLL.0))) {
                Some(s) if rtscope_common::signals::is_stop_signal(s) => signal = Some(s),
                _ => poll.read(&run.samples().map_err(|e| failed(&e))?),
            }
        }
        let ran = Nanos(sys::now(libc::CLOCK_MONOTONIC).0 - started.0);
        poll.read(&run.finish().map_err(|e| failed(&e))?);
        Ok(HwlatOutcome {
            samples: poll.samples,
            signal,
            smi_unavailable: smi.as_ref().err().map(ToString::to_string),
            ran,
        })
    });
    rtscope_common::signals::restore_signal_mask(&old_mask);
    result
}

/// The samples read so far, each new one given its CPU's SMIs since the previous read.
struct Poll<'a> {
    smi: Option<&'a SmiCounter>,
    last_smi: Vec<Option<u64>>,
    seen: u64,
    samples: Vec<Sample>,
}

impl<'a> Poll<'a> {
    fn new(smi: Option<&'a SmiCounter>) -> Self {
        Poll {
            last_smi: smi.map(SmiCounter::read).unwrap_or_default(),
            smi,
            seen: 0,
            samples: Vec::new(),
        }
    }

    fn read(&mut self, all: &[HwlatSample]) {
        let fresh: Vec<&HwlatSample> = all.iter().filter(|s| s.seq > self.seen).collect();
        if fresh.is_empty() {
            return;
        }
        let now = self.smi.map(SmiCounter::read).unwrap_or_default();
        let cpus: Vec<usize> = self.smi.map(|c| c.cpus().collect()).unwrap_or_default();
        let mut given = Vec::new();
        for s in fresh {
            self.seen = self.seen.max(s.seq);
            let i = cpus.iter().position(|&c| c == s.cpu);
            // The CPU's SMIs since the previous read go to its first new sample.
            let smis = i.and_then(|i| {
                let d = now[i]
                    .zip(self.last_smi[i])
                    .map(|(n, l)| smis_between(l, n));
                Some(if given.contains(&i) { 0 } else { d? })
            });
            given.extend(i);
            self.samples.push(Sample { kernel: *s, smis });
        }
        for &i in &given {
            self.last_smi[i] = now[i];
        }
    }
}

/// The per-CPU summary, in the order of `cpus`; `smis_over_run` from the run's counters.
pub fn rows(cfg: &HwlatConfig, o: &HwlatOutcome, smis_over_run: &[Option<u64>]) -> Vec<HwlatRow> {
    let windows = o.ran.0 / (cfg.window_us.max(1) * 1000);
    let mut by_cpu: BTreeMap<usize, Vec<&HwlatSample>> = BTreeMap::new();
    for s in &o.samples {
        by_cpu.entry(s.kernel.cpu).or_default().push(&s.kernel);
    }
    cfg.cpus
        .iter()
        .enumerate()
        .map(|(i, &cpu)| {
            let v: &[&HwlatSample] = by_cpu.get(&cpu).map(Vec::as_slice).unwrap_or(&[]);
            HwlatRow {
                cpu,
                windows,
                samples: v.len() as u64,
                gaps_over_threshold: v.iter().map(|s| s.count).sum(),
                max_inner_us: v.iter().map(|s| s.inner_us).max(),
                max_outer_us: v.iter().map(|s| s.outer_us).max(),
                nmis: v.iter().map(|s| s.nmi_count).sum(),
                smis: smis_over_run.get(i).copied().flatten(),
            }
        })
        .collect()
}

/// A row as the limits see it: the longest single gap known, the available share unknown.
pub fn limit_view(r: &HwlatRow) -> CpuNoise {
    let max = r.max_inner_us.max(r.max_outer_us);
    CpuNoise {
        cpu: r.cpu,
        runtime_ns: 0,
        noise_ns: 0,
        available_percent: None,
        // No sample: no gap over the threshold in any window, so the longest is at most it.
        max_single_ns: max.map(|m| m * 1000),
        gaps_over_threshold: r.gaps_over_threshold.unwrap_or(r.samples),
        gaps_dropped: 0,
        gaps_not_kept: 0,
        iterations: 0,
        iterations_per_s: None,
        resolution_ns: None,
        platform: Default::default(),
    }
}

/// What a hardware-only run measured: each CPU's row, the samples and the limits checked (the
/// table and the JSON document are rtscope-present's, `noise::hwnoise`).
pub struct HwlatMeasured {
    /// Each CPU's summary.
    pub rows: Vec<HwlatRow>,
    /// The samples, the stop signal, the SMI counter's absence, the time run.
    pub outcome: HwlatOutcome,
    /// The limit verdicts.
    pub checks: Vec<super::NoiseCheck>,
}

impl HwlatMeasured {
    /// The exit status of the run: interrupted, a limit failed, or passed.
    pub fn status(&self) -> rtscope_common::error::ExitStatus {
        rtscope_common::error::ExitStatus::of_run(
            self.outcome.signal.is_some(),
            self.checks.iter().any(|c| !c.passed),
        )
    }
}

/// Runs the tracer for `duration` and checks the limits on what it measured; a tracer that
/// cannot be run is an error.
pub fn run(
    tfs: &Tracefs,
    cfg: &HwlatConfig,
    duration: Nanos,
    limits: &[super::NoiseLimit],
) -> Result<HwlatMeasured, HwlatError> {
    let platform = PlatformCounters::start(Path::new("/"), &cfg.cpus);
    let outcome = drive(tfs, cfg, duration)?;
    let rows = rows(cfg, &outcome, &smis_over_run(platform));
    let views: Vec<_> = rows.iter().map(limit_view).collect();
    let checks = super::check_limits(limits, &views);
    Ok(HwlatMeasured {
        rows,
        outcome,
        checks,
    })
}

/// The SMIs counted per CPU over the run, from the platform counters read around it.
pub fn smis_over_run(p: PlatformCounters) -> Vec<Option<u64>> {
    p.finish(Path::new("/"))
        .cpus
        .iter()
        .map(|c| c.smis)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(cpu: usize, seq: u64, inner: u64, outer: u64, count: Option<u64>) -> HwlatSample {
        HwlatSample {
            cpu,
            seq,
            inner_us: inner,
            outer_us: outer,
            realtime_ns: seq,
            count,
            nmi_count: seq % 2,
            nmi_total_ns: None,
        }
    }

    #[test]
    fn each_new_sample_gets_the_smis_its_cpu_counted_since_the_previous_read() {
        use std::os::unix::fs::FileExt;
        let root = std::env::temp_dir().join(format!("rtscope-hwlat-smi-{}", std::process::id()));
        let msr = |cpu: usize| root.join(format!("dev/cpu/{cpu}/msr"));
        for cpu in [1, 2] {
            std::fs::create_dir_all(msr(cpu).parent().unwrap()).unwrap();
            std::fs::write(msr(cpu), [0u8; 0x40]).unwrap();
        }
        std::fs::create_dir_all(root.join("proc")).unwrap();
        std::fs::write(
            root.join("proc/cpuinfo"),
            "vendor_id\t: GenuineIntel\ncpu family\t: 6\n",
        )
        .unwrap();
        let set = |cpu: usize, n: u64| {
            let f = std::fs::OpenOptions::new()
                .write(true)
                .open(msr(cpu))
                .unwrap();
            f.write_all_at(&n.to_le_bytes(), 0x34).unwrap();
        };
        let counter = SmiCounter::open(&root, &[1, 2]).unwrap();
        let mut p = Poll::new(Some(&counter));
        set(1, 3);
        p.read(&[sample(1, 1, 40, 2, Some(1))]);
        // CPU 2's count moved while CPU 1 had two samples: the first gets CPU 1's, none of
        // CPU 2's yet; CPU 2's go to its own sample when it comes.
        set(1, 4);
        set(2, 5);
        p.read(&[sample(1, 2, 40, 2, Some(1)), sample(1, 3, 9, 9, Some(1))]);
        p.read(&[sample(2, 4, 12, 1, Some(1))]);
        let smis: Vec<(u64, Option<u64>)> =
            p.samples.iter().map(|s| (s.kernel.seq, s.smis)).collect();
        assert_eq!(
            smis,
            vec![(1, Some(3)), (2, Some(1)), (3, Some(0)), (4, Some(5))]
        );
        std::fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn samples_are_read_once_and_summed_per_cpu_with_the_longest_gaps() {
        let cfg = HwlatConfig {
            cpus: vec![1, 2, 3],
            width_us: 500_000,
            window_us: 1_000_000,
            threshold_us: 10,
        };
        let mut p = Poll::new(None);
        p.read(&[sample(1, 1, 12, 30, Some(2))]);
        // The buffer is read whole every time: seen samples are not taken twice.
        p.read(&[sample(1, 1, 12, 30, Some(2)), sample(2, 2, 50, 11, Some(1))]);
        p.read(&[
            sample(1, 1, 12, 30, Some(2)),
            sample(2, 2, 50, 11, Some(1)),
            sample(1, 3, 15, 4, Some(7)),
        ]);
        assert_eq!(p.samples.len(), 3);
        assert!(p.samples.iter().all(|s| s.smis.is_none()));
        let o = HwlatOutcome {
            samples: p.samples,
            signal: None,
            smi_unavailable: Some("no SMI counter".into()),
            ran: Nanos::from_ms(3_500),
        };
        let r = rows(&cfg, &o, &[None, None, None]);
        assert_eq!(
            (r[0].windows, r[0].samples, r[0].gaps_over_threshold),
            (3, 2, Some(9))
        );
        assert_eq!(
            (r[0].max_inner_us, r[0].max_outer_us, r[0].nmis),
            (Some(15), Some(30), 2)
        );
        assert_eq!((r[1].samples, r[1].max_inner_us), (1, Some(50)));
        assert_eq!(
            (r[2].samples, r[2].max_inner_us, r[2].gaps_over_threshold),
            (0, None, Some(0))
        );
        let v = limit_view(&r[1]);
        assert_eq!((v.max_single_ns, v.available_percent), (Some(50_000), None));
    }
}
