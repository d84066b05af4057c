//! The noise loop and the memory it writes.
//!
//! ## The loop
//! A busy loop reads the clock, subtracts the previous reading (the gap: the time one iteration
//! took, including anything that took the CPU away), counts the gap in the lossless histogram
//! and, only for a gap over the threshold, stores its start and length into the gap ring and
//! adds it to the running totals. Per iteration: one counter read, the conversion to ns (a multiply), the subtraction, one histogram
//! store, two compares (the threshold, the end of the current stretch). No lock, allocation,
//! I/O or system call; the totals are written by this thread only, with plain relaxed stores.
//!
//! The loop spins in stretches of at most [`STRETCH`]; between stretches it publishes the time
//! spun and reads the stop flag. The gap across a stretch boundary is measured like any other
//! (the bookkeeping is part of it), so no time is lost between stretches.

use super::counter::{Anchor, Calibration};
use crate::state::bump;
use rtscope_core::{layout, Histogram, Nanos};
use std::sync::atomic::{AtomicI32, AtomicU64, AtomicU8, Ordering::*};

/// The longest stretch the loop spins before it publishes its runtime and reads the stop flag.
pub const STRETCH: Nanos = Nanos::from_ms(10);

/// One gap over the threshold: when the loop last read the clock before it, and how long it
/// was until the next reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gap {
    /// The reading before the gap (ns on CLOCK_MONOTONIC).
    pub start: Nanos,
    /// Its length.
    pub duration: Nanos,
    /// SMIs the CPU's counter (MSR 0x34) advanced by since it was last read — after the gap
    /// before, or at the window's start — read right after this gap; `None` where no counter is
    /// read.
    pub smis: Option<u32>,
}

impl Gap {
    /// The reading after the gap.
    pub fn end(&self) -> Nanos {
        self.start + self.duration
    }
}

/// The ring's encoding of "no SMI count".
const NO_SMIS: u64 = u64::MAX;

/// A single-producer single-consumer ring of gaps. The loop pushes; the control thread drains.
/// A gap that does not fit (the reader fell behind) is counted as dropped, never lost silently.
pub struct GapRing {
    slots: Box<[AtomicU64]>,
    capacity: u64,
    head: AtomicU64,
    tail: AtomicU64,
    dropped: AtomicU64,
}

impl GapRing {
    /// A ring of `capacity` gaps (at least one), its memory written through (resident before
    /// the loop runs, as [`crate::resident_counters`] makes its arrays). Allocated fallibly:
    /// memory the process may not have (`ulimit -v`, a cgroup) is an error to report, not an
    /// abort (`noise --gap-capacity 16777216` under `ulimit -v 600000` aborted with "memory
    /// allocation of 402653184 bytes failed", exit 134).
    pub(crate) fn new(capacity: usize) -> Result<Self, std::collections::TryReserveError> {
        let capacity = capacity.max(1);
        let n = capacity.saturating_mul(3);
        let mut slots = Vec::new();
        slots.try_reserve_exact(n)?;
        slots.extend(std::iter::repeat_with(|| AtomicU64::new(0)).take(n));
        Ok(GapRing {
            slots: slots.into_boxed_slice(),
            capacity: capacity as u64,
            head: AtomicU64::new(0),
            tail: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
        })
    }

    #[inline(always)]
    fn push(&self, start: u64, duration: u64, smis: u64) {
        let head = self.head.load(Relaxed);
        if head - self.tail.load(Acquire) >= self.capacity {
            bump(&self.dropped, 1);
            return;
        }
        let i = ((head % self.capacity) * 3) as usize;
        self.slots[i].store(start, Relaxed);
        self.slots[i + 1].store(duration, Relaxed);
        self.slots[i + 2].store(smis, Relaxed);
        self.head.store(head + 1, Release);
    }

    /// Hands every gap pushed since the last drain to `f`, oldest first. Only one thread may
    /// drain a ring.
    pub fn drain(&self, mut f: impl FnMut(Gap)) -> usize {
        let head = self.head.load(Acquire);
        let mut tail = self.tail.load(Relaxed);
        let n = (head - tail) as usize;
        while tail < head {
            let i = ((tail % self.capacity) * 3) as usize;
            let smis = self.slots[i + 2].load(Relaxed);
            f(Gap {
                start: Nanos(self.slots[i].load(Relaxed)),
                duration: Nanos(self.slots[i + 1].load(Relaxed)),
                smis: (smis != NO_SMIS).then_some(smis as u32),
            });
            tail += 1;
        }
        self.tail.store(tail, Release);
        n
    }

    /// Gaps the reader was too slow for.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Relaxed)
    }
}

/// Everything one noise thread writes, allocated (and touched) before it starts.
#[repr(align(128))]
pub struct NoiseShared {
    pub(crate) phase: AtomicU8,
    pub(crate) tid: AtomicI32,
    /// Time spent in the loop (sum of the stretches, gaps included), ns.
    pub(crate) runtime: AtomicU64,
    /// Gaps over the threshold.
    pub(crate) over: AtomicU64,
    /// Sum of the gaps over the threshold, ns.
    pub(crate) noise: AtomicU64,
    /// The longest gap and the reading before it.
    pub(crate) max: AtomicU64,
    pub(crate) max_at: AtomicU64,
    pub(crate) hist: Box<[AtomicU64]>,
    pub(crate) ring: GapRing,
    /// Time the loop spent reading the SMI counter after gaps: not measured (no gap covers
    /// it) and not in the runtime, ns.
    pub(crate) excluded: AtomicU64,
    /// The CPU's SMI counter (`/dev/cpu/<N>/msr`, or a test's file), read after every gap
    /// over the threshold, never inside the loop.
    smi: Option<SmiMsr>,
}

/// An open SMI counter, its last reading, and the shortest time a read of it took (ns): the
/// read's own cost, against which a read that something interrupted is told apart.
struct SmiMsr {
    file: std::fs::File,
    last: AtomicU64,
    floor: AtomicU64,
}

/// Reads of the SMI counter timed at each window's start (outside the measured time) for its
/// floor.
const FLOOR_READS: usize = 4;

/// `MSR_SMI_COUNT`: its offset in the msr device; the low 32 bits count.
const MSR_SMI_COUNT: u64 = 0x34;

impl SmiMsr {
    /// Reads the counter, keeps the reading as the last, and returns the SMIs counted since
    /// `last` (NO_SMIS when either reading failed).
    fn count_since(&self, last: u64) -> u64 {
        let now = self.read();
        self.last.store(now.unwrap_or(NO_SMIS), Relaxed);
        match now {
            Some(n) if last != NO_SMIS => n.wrapping_sub(last) & 0xffff_ffff,
            _ => NO_SMIS,
        }
    }

    fn read(&self) -> Option<u64> {
        use std::os::unix::fs::FileExt;
        let mut b = [0u8; 8];
        self.file.read_exact_at(&mut b, MSR_SMI_COUNT).ok()?;
        Some(u64::from_le_bytes(b) & 0xffff_ffff)
    }
}

/// A live or final view of one noise thread's totals.
#[derive(Debug, Clone, PartialEq)]
pub struct NoiseTotals {
    /// Time in the loop.
    pub runtime: Nanos,
    /// Gaps over the threshold.
    pub over: u64,
    /// Their sum.
    pub noise: Nanos,
    /// The longest gap, when there was any iteration.
    pub max: Option<Gap>,
    /// Every iteration's gap.
    pub histogram: Histogram,
}

impl NoiseTotals {
    /// Iterations (gaps measured).
    pub fn iterations(&self) -> u64 {
        self.histogram.count()
    }

    /// The share of the runtime the loop had the CPU, in percent: `100 × (runtime − noise) /
    /// runtime`. `None` before any runtime.
    pub fn available_percent(&self) -> Option<f64> {
        (self.runtime.0 > 0).then(|| {
            100.0 * self.runtime.0.saturating_sub(self.noise.0) as f64 / self.runtime.0 as f64
        })
    }
}

impl NoiseShared {
    #[cfg(test)]
    pub(crate) fn new(gap_capacity: usize) -> Self {
        Self::with_smi(gap_capacity, None).expect("a test ring fits in memory")
    }

    /// A thread's memory, reading `smi` (an open `/dev/cpu/<N>/msr`) after every gap.
    /// Fails when the gap ring cannot be allocated.
    pub(crate) fn with_smi(
        gap_capacity: usize,
        smi: Option<std::fs::File>,
    ) -> Result<Self, std::collections::TryReserveError> {
        Ok(NoiseShared {
            phase: AtomicU8::new(0),
            tid: AtomicI32::new(0),
            runtime: AtomicU64::new(0),
            over: AtomicU64::new(0),
            noise: AtomicU64::new(0),
            max: AtomicU64::new(0),
            max_at: AtomicU64::new(0),
            hist: crate::resident_counters(layout::BUCKETS, 0),
            ring: GapRing::new(gap_capacity)?,
            excluded: AtomicU64::new(0),
            smi: smi.map(|file| SmiMsr {
                file,
                last: AtomicU64::new(NO_SMIS),
                floor: AtomicU64::new(u64::MAX),
            }),
        })
    }

    /// Reads the SMI counter as the base of the next gap's count, and times a few reads for the
    /// read's floor (at a window's start, outside the measured time).
    pub(crate) fn smi_base(&self) {
        if let Some(m) = &self.smi {
            let mut now = None;
            for _ in 0..FLOOR_READS {
                let before = crate::sys::now(libc::CLOCK_MONOTONIC);
                now = m.read();
                let took = crate::sys::now(libc::CLOCK_MONOTONIC)
                    .0
                    .saturating_sub(before.0);
                m.floor.fetch_min(took, Relaxed);
            }
            m.last.store(now.unwrap_or(NO_SMIS), Relaxed);
        }
    }

    /// Time excluded from the measurement so far (the SMI reads), ns.
    pub(crate) fn excluded(&self) -> u64 {
        self.excluded.load(Relaxed)
    }

    /// Kernel thread id (0 before the thread started).
    pub fn tid(&self) -> i32 {
        self.tid.load(Relaxed)
    }

    /// The gap ring.
    pub fn ring(&self) -> &GapRing {
        &self.ring
    }

    /// The totals so far.
    pub fn totals(&self) -> NoiseTotals {
        let counts: Vec<u64> = self.hist.iter().map(|c| c.load(Relaxed)).collect();
        let histogram = Histogram::from_parts(&counts, self.min_of(&counts), self.max_of(&counts));
        let max = self.max.load(Relaxed);
        NoiseTotals {
            runtime: Nanos(self.runtime.load(Relaxed)),
            over: self.over.load(Relaxed),
            noise: Nanos(self.noise.load(Relaxed)),
            max: (histogram.count() > 0).then(|| Gap {
                start: Nanos(self.max_at.load(Relaxed)),
                duration: Nanos(max.max(histogram.max().map_or(0, |m| m.0))),
                smis: None,
            }),
            histogram,
        }
    }

    fn min_of(&self, counts: &[u64]) -> Nanos {
        counts
            .iter()
            .position(|&c| c > 0)
            .map_or(Nanos::ZERO, |i| Nanos(layout::lowest_of(i)))
    }

    /// The exact longest gap over the threshold, else the top bucket's lowest value (below the
    /// exact limit of 2,048 ns that is exact too).
    fn max_of(&self, counts: &[u64]) -> Nanos {
        let top = counts
            .iter()
            .rposition(|&c| c > 0)
            .map_or(0, layout::lowest_of);
        Nanos(top.max(self.max.load(Relaxed)))
    }

    /// The cold path: a gap over the threshold, from the counter reading `prev` to `t`. Reads
    /// the SMI counter, if there is one, and returns the gap's length (ns) and the reading the
    /// loop goes on from.
    ///
    /// The read is a system call: its own cost (the floor, timed at each window's start) is
    /// excluded, never a gap nor runtime. A read that took longer than that by more than the
    /// threshold was interrupted (an interrupt, a preemption, the host): the gap is extended
    /// to its end, so that nothing which took the CPU goes unmeasured, and the counter is read
    /// again, so that the count spans the whole gap. Injected ground truth beside a load
    /// caught a helper preempting the loop inside the read: its 50 µs spin was excluded and
    /// its SMI counted for the gap before.
    #[cold]
    #[inline(never)]
    fn over(
        &self,
        clock: &mut dyn FnMut() -> u64,
        (cal, anchor): (Calibration, Anchor),
        (prev, mut t, until): (u64, u64, u64),
        threshold: u64,
    ) -> (u64, u64) {
        let (mut smis, mut next) = (NO_SMIS, t);
        if let Some(m) = &self.smi {
            let last = m.last.load(Relaxed);
            loop {
                smis = m.count_since(last);
                next = clock();
                let took = cal.ns(next.saturating_sub(t));
                let floor = m.floor.fetch_min(took, Relaxed).min(took);
                if took <= floor.saturating_add(threshold) {
                    bump(&self.excluded, took);
                    break;
                }
                t = next;
                if t >= until {
                    break;
                }
            }
        }
        let (start, gap) = (anchor.at(cal, prev), cal.ns(t.saturating_sub(prev)));
        self.ring.push(start, gap, smis);
        bump(&self.over, 1);
        bump(&self.noise, gap);
        if gap > self.max.load(Relaxed) {
            self.max.store(gap, Relaxed);
            self.max_at.store(start, Relaxed);
        }
        (gap, next)
    }
}

/// Spins from the counter reading `prev` until a reading at or after `until`; returns the last
/// reading. `clock` is the counter (the vDSO clock or the raw counter in a run, a list of
/// readings in tests), `cal` turns its ticks into nanoseconds (one multiply), and `anchor`
/// places a gap's start on CLOCK_MONOTONIC (in the cold path only). `threshold` is in ns.
#[inline(always)]
pub(crate) fn spin(
    sh: &NoiseShared,
    clock: &mut impl FnMut() -> u64,
    (cal, anchor): (Calibration, Anchor),
    mut prev: u64,
    until: u64,
    threshold: u64,
) -> u64 {
    loop {
        let mut t = clock();
        let mut gap = cal.ns(t.saturating_sub(prev));
        if gap > threshold {
            (gap, t) = sh.over(clock, (cal, anchor), (prev, t, until), threshold);
        }
        bump(&sh.hist[layout::index_of(gap)], 1);
        prev = t;
        if t >= until {
            return t;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NS: (Calibration, Anchor) = (
        Calibration::IDENTITY,
        Anchor {
            tick: 0,
            ns: 0,
            width: 0,
        },
    );

    fn readings(v: &[u64]) -> impl FnMut() -> u64 + '_ {
        let mut i = 0;
        move || {
            let r = v[i.min(v.len() - 1)];
            i += 1;
            r
        }
    }

    #[test]
    fn every_gap_is_counted_and_those_over_the_threshold_are_kept_with_their_start() {
        let sh = NoiseShared::new(16);
        // From 1000: gaps 100, 100, 5000, 100, 1001 (over a 1000 ns threshold), 1000 (not over).
        let v = [1100, 1200, 6200, 6300, 7301, 8301];
        let last = spin(&sh, &mut readings(&v), NS, 1000, 8301, 1000);
        assert_eq!(last, 8301);
        let t = sh.totals();
        assert_eq!(t.iterations(), 6);
        assert_eq!(t.histogram.count_at_or_above(Nanos(1001)), 2);
        assert_eq!(t.over, 2);
        assert_eq!(t.noise, Nanos(6001));
        let max = t.max.unwrap();
        assert_eq!((max.start, max.duration), (Nanos(1200), Nanos(5000)));
        assert_eq!(t.histogram.min(), Some(Nanos(100)));
        let mut gaps = Vec::new();
        sh.ring().drain(|g| gaps.push(g));
        assert_eq!(
            gaps,
            vec![
                Gap {
                    start: Nanos(1200),
                    duration: Nanos(5000),
                    smis: None
                },
                Gap {
                    start: Nanos(6300),
                    duration: Nanos(1001),
                    smis: None
                },
            ]
        );
        assert_eq!(gaps[0].end(), Nanos(6200));
    }

    #[test]
    fn the_loop_stops_at_the_first_reading_at_or_after_its_end() {
        let sh = NoiseShared::new(4);
        let v = [10, 20, 30, 40];
        assert_eq!(spin(&sh, &mut readings(&v), NS, 0, 25, 1000), 30);
        assert_eq!(sh.totals().iterations(), 3);
    }

    #[test]
    fn a_full_ring_counts_the_gaps_it_drops_and_the_totals_keep_them() {
        let sh = NoiseShared::new(1);
        let v = [5000, 10000, 15000];
        spin(&sh, &mut readings(&v), NS, 0, 15000, 1000);
        let t = sh.totals();
        assert_eq!((t.over, t.noise), (3, Nanos(15000)));
        assert_eq!(sh.ring().dropped(), 2);
        assert_eq!(sh.ring().drain(|_| {}), 1);
    }

    #[test]
    fn raw_ticks_become_nanoseconds_and_starts_are_placed_on_the_clock_through_the_anchor() {
        // A 2 GHz counter (half a nanosecond a tick) whose tick 10,000 was at 7 s.
        let anchor = Anchor {
            tick: 10_000,
            ns: 7_000_000_000,
            width: 0,
        };
        let later = Anchor {
            tick: 2_000_010_000,
            ns: 8_000_000_000,
            width: 0,
        };
        let cal = Calibration::between(anchor, later).unwrap();
        let sh = NoiseShared::new(4);
        // From tick 9,000: 100 ticks (50 ns), 4,000 ticks (2 us, over a 1 us threshold), 100.
        let v = [9_100, 13_100, 13_200];
        assert_eq!(
            spin(&sh, &mut readings(&v), (cal, anchor), 9_000, 13_200, 1000),
            13_200
        );
        let t = sh.totals();
        assert_eq!((t.iterations(), t.over, t.noise), (3, 1, Nanos(2_000)));
        assert_eq!(t.histogram.min(), Some(Nanos(50)));
        let mut gaps = Vec::new();
        sh.ring().drain(|g| gaps.push(g));
        // Tick 9,100 is 900 ticks (450 ns) before the anchor.
        assert_eq!(
            gaps,
            vec![Gap {
                start: Nanos(6_999_999_550),
                duration: Nanos(2_000),
                smis: None
            }]
        );
    }

    /// Runs the loop from 0 until `until` over `script` (each reading, and the SMI count set as
    /// it is taken), a regular file standing for the msr device with the count `first` at the
    /// base read; `floor` replaces the read's timed floor. The thread's memory and its gaps.
    fn run_with_smis(
        first: u64,
        floor: Option<u64>,
        script: &[(u64, Option<u64>)],
        until: u64,
    ) -> (NoiseShared, Vec<(u64, u64, Option<u32>)>) {
        use std::os::unix::fs::FileExt;
        let name = format!("rtscope-msr-{}-{until}", std::process::id());
        let path = std::env::temp_dir().join(name);
        let msr = std::fs::File::create(&path).unwrap();
        let set = |n: u64| msr.write_all_at(&n.to_le_bytes(), MSR_SMI_COUNT).unwrap();
        set(first);
        let sh = NoiseShared::with_smi(8, Some(std::fs::File::open(&path).unwrap())).unwrap();
        std::fs::remove_file(&path).unwrap();
        sh.smi_base();
        if let Some(f) = floor {
            sh.smi.as_ref().unwrap().floor.store(f, Relaxed);
        }
        let mut i = 0;
        let mut clock = || {
            let (t, smi) = script[i.min(script.len() - 1)];
            if let Some(n) = smi {
                set(n);
            }
            i += 1;
            t
        };
        assert_eq!(spin(&sh, &mut clock, NS, 0, until, 1000), until);
        let mut gaps = Vec::new();
        sh.ring()
            .drain(|g| gaps.push((g.start.0, g.duration.0, g.smis)));
        (sh, gaps)
    }

    #[test]
    fn each_gap_carries_the_smis_counted_since_the_last_read_and_the_read_is_not_measured() {
        // From a count about to wrap at 32 bits, gaps from 0: 5,000 (two SMIs in it, across
        // the wrap), then the reading after the SMI read (100 later: excluded), 100, 3,000
        // (none), after the read 50, then 2,000 (one).
        let script = [
            (5_000, Some(0)),
            (5_100, None),
            (5_200, None),
            (8_200, None),
            (8_250, Some(1)),
            (10_250, None),
            (10_300, None),
        ];
        let (sh, gaps) = run_with_smis(0xffff_fffe, None, &script, 10_300);
        assert_eq!(
            gaps,
            vec![
                (0, 5_000, Some(2)),
                (5_200, 3_000, Some(0)),
                (8_250, 2_000, Some(1))
            ]
        );
        // Each read's 100, 50 and 50 ns are excluded: never a gap, never runtime.
        assert_eq!(sh.excluded(), 200);
        assert_eq!(sh.totals().iterations(), 4);
    }

    #[test]
    fn an_interrupted_smi_read_extends_its_gap_and_the_counter_is_read_again() {
        // A 5,000 ns gap with one SMI; its read takes 4,000 (a helper preempted the loop in it
        // and an SMI came meanwhile), against a floor of 100; the read again takes 100; then a
        // gap of 100.
        let script = [
            (5_000, Some(11)),
            (9_000, Some(12)),
            (9_100, None),
            (9_200, None),
        ];
        let (sh, gaps) = run_with_smis(10, Some(100), &script, 9_200);
        // One gap to the interrupted read's end, with both SMIs; only the last read excluded.
        assert_eq!(gaps, vec![(0, 9_000, Some(2))]);
        assert_eq!(sh.excluded(), 100);
        let t = sh.totals();
        assert_eq!((t.iterations(), t.over, t.noise), (2, 1, Nanos(9_000)));
        assert_eq!(t.histogram.max(), Some(Nanos(9_000)));
    }

    #[test]
    fn available_share_is_runtime_minus_noise_over_runtime() {
        let sh = NoiseShared::new(1);
        sh.runtime.store(1_000_000, Relaxed);
        sh.noise.store(100, Relaxed);
        let t = sh.totals();
        assert_eq!(t.available_percent(), Some(99.99));
        assert_eq!(NoiseShared::new(1).totals().available_percent(), None);
    }
}
