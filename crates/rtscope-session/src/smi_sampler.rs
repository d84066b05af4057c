//! The SMI sampler of `measure --explain`: a housekeeping thread pinned to one of rtscope's
//! own CPUs (never a measured one) reads that CPU's `MSR_SMI_COUNT` every millisecond and
//! places the SMIs in time ([`rtscope_monitor::smi_timeline`]), so a spike whose time the
//! trace cannot place in the kernel is charged to firmware when an SMI was counted across it.
//! It reads only its own CPU's register: reading a measured CPU's would interrupt it. It does
//! not run where rtscope has no CPU of its own (the sampler would wake a measured CPU every
//! millisecond), nor where the counter cannot be read (not Intel, no msr driver); the tier
//! line says which.

use rtscope_engine::{sys, CpuSet};
use rtscope_monitor::smi::SmiCounter;
use rtscope_monitor::smi_timeline::SmiTimeline;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

/// How often the counter is read: the closest an SMI is placed to a spike.
pub const PERIOD: Duration = Duration::from_millis(1);

/// Why the sampler does not run: the tier line's words by `Display`.
#[derive(Debug, thiserror::Error)]
pub enum SmiOff {
    /// Every CPU of rtscope's own is measured (or it has none).
    #[error(
        "no CPU of rtscope's own outside the measured ones (reading the counter there would \
         wake a measured CPU every millisecond)"
    )]
    NoOwnCpu,
    /// The counter cannot be read (not Intel, no msr driver, no privilege).
    #[error(transparent)]
    Counter(#[from] rtscope_monitor::smi::SmiUnavailable),
    /// The thread could not be started.
    #[error("cannot start the SMI sampler: {0}")]
    Thread(std::io::Error),
}

/// The running sampler.
pub struct SmiSampler {
    timeline: Arc<Mutex<SmiTimeline>>,
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
    cpu: usize,
}

impl SmiSampler {
    /// Starts reading the counter of `cpu` below `root` on a thread pinned there, scheduled
    /// as the other housekeeping threads (`sched`); why not.
    pub fn start(
        root: &Path,
        cpu: usize,
        sched: crate::housekeeping::Housekeeping,
    ) -> Result<SmiSampler, SmiOff> {
        let counter = SmiCounter::open(root, &[cpu])?;
        let timeline = Arc::new(Mutex::new(SmiTimeline::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let (t, s) = (Arc::clone(&timeline), Arc::clone(&stop));
        let handle = std::thread::Builder::new()
            .name("rtscope-smi".into())
            .spawn(move || {
                // Pinned before the first read: a read from elsewhere would interrupt `cpu`.
                if sys::set_affinity_current(&CpuSet::from_cpus([cpu])).is_err() {
                    return;
                }
                sched.apply_current();
                while !s.load(Ordering::Relaxed) {
                    read_once(&counter, cpu, &t);
                    std::thread::sleep(PERIOD);
                }
                read_once(&counter, cpu, &t);
            })
            .map_err(SmiOff::Thread)?;
        Ok(SmiSampler {
            timeline,
            stop,
            handle: Some(handle),
            cpu,
        })
    }

    /// The CPU whose counter is read.
    pub fn cpu(&self) -> usize {
        self.cpu
    }

    /// The SMIs counted in the reads around `from_ns..=to_ns` (CLOCK_MONOTONIC); `None` when
    /// the reads do not cover it.
    pub fn smis_over(&self, from_ns: u64, to_ns: u64) -> Option<u32> {
        lock(&self.timeline).smis_over(from_ns, to_ns)
    }

    /// Takes a last read and stops the thread; the timeline stays for the last spikes.
    pub fn stop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }

    /// The SMIs counted over the run and the longest time between two reads.
    pub fn totals(&self) -> (u64, Duration) {
        let t = lock(&self.timeline);
        (t.total(), Duration::from_nanos(t.longest_interval_ns()))
    }
}

impl Drop for SmiSampler {
    fn drop(&mut self) {
        self.stop();
    }
}

fn read_once(counter: &SmiCounter, cpu: usize, timeline: &Mutex<SmiTimeline>) {
    let before = sys::now(libc::CLOCK_MONOTONIC).0;
    let count = counter.read_cpu(cpu);
    let after = sys::now(libc::CLOCK_MONOTONIC).0;
    if let Some(count) = count {
        lock(timeline).record(before, after, count);
    }
}

fn lock(m: &Mutex<SmiTimeline>) -> MutexGuard<'_, SmiTimeline> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Whether SMIs are placed in time for a run's spikes.
pub enum SmiState {
    /// The sampler runs.
    Sampling(SmiSampler),
    /// Not an x86 CPU: no firmware interrupts the kernel this way, nothing to say.
    NotX86,
    /// Not counted, and why.
    Off(String),
}

impl SmiState {
    /// Starts the sampler on the first of rtscope's CPUs (`ours`) the run does not measure,
    /// reading the counter below `root`.
    pub fn start(
        root: &Path,
        ours: Option<&CpuSet>,
        measured: &[usize],
        sched: crate::housekeeping::Housekeeping,
    ) -> SmiState {
        if let Err(rtscope_monitor::smi::SmiUnavailable::NotX86) = SmiCounter::check(root) {
            return SmiState::NotX86;
        }
        match sampler_cpu(ours, measured).and_then(|cpu| SmiSampler::start(root, cpu, sched)) {
            Ok(s) => SmiState::Sampling(s),
            Err(why) => SmiState::Off(why.to_string()),
        }
    }

    /// The sampler, when it runs.
    pub fn sampler(&self) -> Option<&SmiSampler> {
        match self {
            SmiState::Sampling(s) => Some(s),
            _ => None,
        }
    }

    /// Stops the sampler (a last read first).
    pub fn stop(&mut self) {
        if let SmiState::Sampling(s) = self {
            s.stop();
        }
    }

    /// The SMIs the sampler counted around `from_ns..=to_ns`; `None` without a sampler or
    /// where its reads do not cover the span.
    pub fn smis_over(&self, from_ns: u64, to_ns: u64) -> Option<u32> {
        self.sampler()?.smis_over(from_ns, to_ns)
    }

    /// `line` (a tier line) with this state's clause after it; unchanged on a CPU without SMIs.
    pub fn with_line(&self, line: String) -> String {
        match self.line() {
            Some(smi) => format!("{line}; {smi}"),
            None => line,
        }
    }

    /// A clause for the tier line; none on a CPU without SMIs.
    pub fn line(&self) -> Option<String> {
        match self {
            SmiState::Sampling(s) => Some(format!(
                "SMIs read on CPU {} every {} ms",
                s.cpu(),
                PERIOD.as_millis()
            )),
            SmiState::NotX86 => None,
            SmiState::Off(why) => Some(format!("SMIs not counted: {why}")),
        }
    }
}

/// The CPU the sampler reads: the first of rtscope's own CPUs that the run does not measure;
/// `Err` with the reason where there is none.
pub fn sampler_cpu(ours: Option<&CpuSet>, measured: &[usize]) -> Result<usize, SmiOff> {
    ours.and_then(|o| o.iter().find(|c| !measured.contains(c)))
        .ok_or(SmiOff::NoOwnCpu)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::FileExt;

    #[test]
    fn the_sampler_reads_only_a_cpu_the_run_does_not_measure() {
        let ours = CpuSet::from_cpus([0, 1]);
        assert_eq!(sampler_cpu(Some(&ours), &[1, 2, 3]).ok(), Some(0));
        assert!(matches!(
            sampler_cpu(Some(&ours), &[0, 1]),
            Err(SmiOff::NoOwnCpu)
        ));
        assert_eq!(
            sampler_cpu(None, &[1]).unwrap_err().to_string(),
            "no CPU of rtscope's own outside the measured ones (reading the counter there would \
             wake a measured CPU every millisecond)"
        );
    }

    /// The thread against a fixture counter: an SMI added while it runs is counted over the
    /// span from before the write to after the sampler has read past it, whatever the
    /// sampler's cadence on a loaded machine; a span the reads do not cover is not decided.
    #[test]
    fn an_smi_added_while_the_sampler_runs_is_placed_across_its_write() {
        let root = std::env::temp_dir().join(format!("rtscope-smi-sampler-{}", std::process::id()));
        let cpu = sys::current_affinity().map_or(0, |a| a.nth_cyclic(0));
        let dir = root.join(format!("dev/cpu/{cpu}"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::create_dir_all(root.join("proc")).unwrap();
        std::fs::write(
            root.join("proc/cpuinfo"),
            "vendor_id : GenuineIntel\ncpu family : 6\n",
        )
        .unwrap();
        let msr = std::fs::File::create(dir.join("msr")).unwrap();
        let set = |n: u64| msr.write_all_at(&n.to_le_bytes(), 0x34).unwrap();
        set(41);
        let normal =
            crate::housekeeping::Housekeeping::Normal(crate::housekeeping::NormalWhy::Asked);
        let mut s = SmiSampler::start(&root, cpu, normal).unwrap();
        let now = || sys::now(libc::CLOCK_MONOTONIC).0;
        let wait_past = |s: &SmiSampler, t: u64| {
            while lock(&s.timeline).covered_until_ns().is_none_or(|c| c <= t) {
                std::thread::sleep(Duration::from_millis(1));
            }
        };
        let start = now();
        wait_past(&s, start);
        let before_write = now();
        set(42);
        let after_write = now();
        wait_past(&s, after_write);
        assert_eq!(s.smis_over(before_write, after_write), Some(1));
        assert_eq!(s.smis_over(start, u64::MAX), None, "not read that far");
        s.stop();
        assert_eq!(s.totals().0, 1);
        std::fs::remove_dir_all(&root).unwrap();
    }
}
