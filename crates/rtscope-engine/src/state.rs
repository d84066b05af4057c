//! Per-thread measurement state: preallocated before the thread turns real-time, written only by
//! its measuring thread (plain relaxed stores, no locked instructions), readable at any time by
//! the non-RT control thread for live display, checkpoints and sample draining.

use crate::config::{LinearSpec, RunConfig};
use rtscope_core::{layout, Histogram, Nanos, Stats};
use std::sync::atomic::{AtomicI32, AtomicU64, AtomicU8, Ordering::*};

/// Adds `n` to a counter that only the calling thread writes: a plain load and store, no
/// read-modify-write instruction in the timing loop.
#[inline(always)]
pub(crate) fn bump(counter: &AtomicU64, n: u64) {
    counter.store(counter.load(Relaxed).wrapping_add(n), Relaxed);
}

/// `n` counters set to `value`, every page of them written now. An allocator may hand out
/// fresh zero pages from the kernel without touching them (calloc of an mmap'd chunk), and
/// with `mlockall(MCL_ONFAULT)` a page is only made resident by its first write: left to a
/// timing loop, that write is a page fault (seen with `exceptions:page_fault_user` on the
/// measuring thread: 14 in a 3 s run as new histogram buckets were first hit; in a loaded
/// guest the fault waited on another thread's `mmap_lock`, the thread blocked in D). Every
/// array a measuring, noise or response thread writes in its loop comes from here.
pub fn resident_counters(n: usize, value: u64) -> Box<[AtomicU64]> {
    let counters = zeroed_box(n);
    // Every counter when they start at `value`, else one store per 4 KiB (the smallest page
    // size; larger pages are touched more than once) and the last one (the allocation need
    // not start on a page, so its last page may hold less than 4 KiB of it).
    let step = if value == 0 {
        4096 / std::mem::size_of::<AtomicU64>()
    } else {
        1
    };
    for c in counters.iter().step_by(step).chain(counters.last()) {
        c.store(value, Relaxed);
    }
    counters
}

fn zeroed(n: usize) -> Box<[AtomicU64]> {
    resident_counters(n, 0)
}

/// `n` zero counters from the allocator's zeroed memory, untouched (`Box::new_zeroed_slice`
/// once the minimum Rust version has it: 1.92).
fn zeroed_box(n: usize) -> Box<[AtomicU64]> {
    if n == 0 {
        return Box::new([]);
    }
    let layout = std::alloc::Layout::array::<AtomicU64>(n).expect("counters fit in memory");
    // SAFETY: the layout has a non-zero size (n > 0).
    let ptr = unsafe { std::alloc::alloc_zeroed(layout) }.cast::<AtomicU64>();
    if ptr.is_null() {
        std::alloc::handle_alloc_error(layout);
    }
    // SAFETY: `ptr` is a fresh allocation of the global allocator with the layout of `n`
    // `AtomicU64`s, which Box<[AtomicU64]> frees with that same layout; all-zero bits are a
    // valid `AtomicU64` (the in-memory representation of a `u64`), so every element is
    // initialised.
    unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(ptr, n)) }
}

/// Lifecycle of a measuring thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Not yet in its timing loop.
    Starting = 0,
    /// Measuring.
    Running = 1,
    /// Loop ended.
    Done = 2,
}

/// One recorded sample or event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample {
    /// 0-based wake-up number (missed deadlines are not samples and take no number).
    pub cycle: u64,
    /// Wake-up latency.
    pub latency: Nanos,
    /// Clock reading at the wake-up (ns on the run's clock).
    pub time: Nanos,
}

/// A fixed array of the first `capacity` samples above a threshold; later ones are counted.
/// A log of `width` 1 keeps only cycle numbers (cyclictest's overflow list).
pub struct EventLog {
    slots: Box<[AtomicU64]>,
    width: usize,
    len: AtomicU64,
    dropped: AtomicU64,
}

impl EventLog {
    fn new(capacity: usize, width: usize) -> Self {
        EventLog {
            slots: zeroed(capacity * width),
            width,
            len: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
        }
    }

    #[inline(always)]
    pub(crate) fn push(&self, s: Sample) {
        let n = self.len.load(Relaxed) as usize;
        let at = n * self.width;
        if at + self.width > self.slots.len() {
            bump(&self.dropped, 1);
            return;
        }
        self.slots[at].store(s.cycle, Relaxed);
        if self.width == 3 {
            self.slots[at + 1].store(s.latency.0, Relaxed);
            self.slots[at + 2].store(s.time.0, Relaxed);
        }
        self.len.store(n as u64 + 1, Release);
    }

    /// The events kept so far (latency and time are 0 in a cycles-only log).
    pub fn snapshot(&self) -> Vec<Sample> {
        self.since(0)
    }

    /// The events kept from the `from`-th on (a reader that took the first `from` already).
    pub fn since(&self, from: usize) -> Vec<Sample> {
        let n = self.len.load(Acquire) as usize;
        let field = |i: usize, f: usize| {
            if f < self.width {
                self.slots[i * self.width + f].load(Relaxed)
            } else {
                0
            }
        };
        (from.min(n)..n)
            .map(|i| Sample {
                cycle: field(i, 0),
                latency: Nanos(field(i, 1)),
                time: Nanos(field(i, 2)),
            })
            .collect()
    }

    /// Events that did not fit.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Relaxed)
    }
}

/// A single-producer single-consumer ring of samples. The measuring thread pushes; the control
/// thread drains. When the reader falls behind, new samples are counted as dropped, never lost
/// silently.
pub struct SampleRing {
    slots: Box<[AtomicU64]>,
    capacity: u64,
    head: AtomicU64,
    tail: AtomicU64,
    dropped: AtomicU64,
}

impl SampleRing {
    fn new(capacity: usize) -> Self {
        let capacity = capacity.max(1);
        SampleRing {
            slots: zeroed(capacity * 3),
            capacity: capacity as u64,
            head: AtomicU64::new(0),
            tail: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
        }
    }

    #[inline(always)]
    pub(crate) fn push(&self, s: Sample) {
        let head = self.head.load(Relaxed);
        if head - self.tail.load(Acquire) >= self.capacity {
            bump(&self.dropped, 1);
            return;
        }
        let i = ((head % self.capacity) * 3) as usize;
        self.slots[i].store(s.cycle, Relaxed);
        self.slots[i + 1].store(s.latency.0, Relaxed);
        self.slots[i + 2].store(s.time.0, Relaxed);
        self.head.store(head + 1, Release);
    }

    /// Hands every sample pushed since the last drain to `f`, oldest first. Only one thread may
    /// drain a ring.
    pub fn drain(&self, mut f: impl FnMut(Sample)) -> usize {
        let head = self.head.load(Acquire);
        let mut tail = self.tail.load(Relaxed);
        let n = (head - tail) as usize;
        while tail < head {
            let i = ((tail % self.capacity) * 3) as usize;
            f(Sample {
                cycle: self.slots[i].load(Relaxed),
                latency: Nanos(self.slots[i + 1].load(Relaxed)),
                time: Nanos(self.slots[i + 2].load(Relaxed)),
            });
            tail += 1;
        }
        self.tail.store(tail, Release);
        n
    }

    /// Samples the reader was too slow for.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Relaxed)
    }
}

/// cyclictest-style linear histogram state.
pub struct LinearState {
    pub(crate) spec: LinearSpec,
    pub(crate) counts: Box<[AtomicU64]>,
    pub(crate) overflows: AtomicU64,
    pub(crate) overflow_cycles: EventLog,
}

/// The final linear histogram of a thread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinearResult {
    /// Bucket width.
    pub unit: Nanos,
    /// Count per bucket (`counts[i]` holds samples with `i × unit <= latency < (i+1) × unit`).
    pub counts: Vec<u64>,
    /// Samples at or beyond the last bucket.
    pub overflows: u64,
    /// Cycle numbers of the first overflows (as many as the spec keeps).
    pub overflow_cycles: Vec<u64>,
}

/// Everything one measuring thread writes.
#[repr(align(128))]
pub struct ThreadShared {
    pub(crate) phase: AtomicU8,
    pub(crate) tid: AtomicI32,
    pub(crate) count: AtomicU64,
    pub(crate) min: AtomicU64,
    pub(crate) max: AtomicU64,
    pub(crate) max_cycle: AtomicU64,
    pub(crate) max_time: AtomicU64,
    pub(crate) sum: AtomicU64,
    pub(crate) sum_hi: AtomicU64,
    pub(crate) last: AtomicU64,
    pub(crate) missed: AtomicU64,
    pub(crate) cpu: AtomicI32,
    pub(crate) hist: Box<[AtomicU64]>,
    pub(crate) linear: Option<LinearState>,
    pub(crate) events: EventLog,
    pub(crate) ring: Option<SampleRing>,
}

impl ThreadShared {
    /// Allocates (and touches) all the memory a thread of `config` will write.
    pub fn new(config: &RunConfig) -> Self {
        ThreadShared {
            phase: AtomicU8::new(Phase::Starting as u8),
            tid: AtomicI32::new(0),
            count: AtomicU64::new(0),
            min: AtomicU64::new(u64::MAX),
            max: AtomicU64::new(0),
            max_cycle: AtomicU64::new(0),
            max_time: AtomicU64::new(0),
            sum: AtomicU64::new(0),
            sum_hi: AtomicU64::new(0),
            last: AtomicU64::new(0),
            missed: AtomicU64::new(0),
            cpu: AtomicI32::new(-1),
            hist: zeroed(layout::BUCKETS),
            linear: config.linear.map(|spec| LinearState {
                spec,
                counts: zeroed(spec.buckets),
                overflows: AtomicU64::new(0),
                overflow_cycles: EventLog::new(spec.overflow_cycles, 1),
            }),
            events: EventLog::new(
                config.event_threshold.map_or(0, |_| config.event_capacity),
                3,
            ),
            ring: config.sample_ring.map(SampleRing::new),
        }
    }

    /// Current phase.
    pub fn phase(&self) -> Phase {
        match self.phase.load(Acquire) {
            0 => Phase::Starting,
            1 => Phase::Running,
            _ => Phase::Done,
        }
    }

    /// Kernel thread id (0 before the thread started).
    pub fn tid(&self) -> i32 {
        self.tid.load(Relaxed)
    }

    /// The CPU the thread is pinned to, when pinned to exactly one.
    pub fn cpu(&self) -> Option<usize> {
        usize::try_from(self.cpu.load(Relaxed)).ok()
    }

    /// Latest sample.
    pub fn last(&self) -> Nanos {
        Nanos(self.last.load(Relaxed))
    }

    /// Statistics so far (a consistent-enough view while running; exact after the run).
    pub fn stats(&self) -> Stats {
        let count = self.count.load(Relaxed);
        let sum =
            (u128::from(self.sum_hi.load(Relaxed)) << 64) | u128::from(self.sum.load(Relaxed));
        Stats {
            count,
            min: if count == 0 {
                Nanos::ZERO
            } else {
                Nanos(self.min.load(Relaxed))
            },
            max: Nanos(self.max.load(Relaxed)),
            sum_ns: sum,
            max_cycle: self.max_cycle.load(Relaxed),
            max_time: Nanos(self.max_time.load(Relaxed)),
            missed: self.missed.load(Relaxed),
        }
    }

    /// The lossless histogram so far.
    pub fn histogram(&self) -> Histogram {
        let s = self.stats();
        let counts = self.hist.iter().map(|c| c.load(Relaxed)).enumerate();
        Histogram::from_sparse(counts.filter(|&(_, c)| c > 0), s.min, s.max)
    }

    /// The linear histogram so far, when configured.
    pub fn linear(&self) -> Option<LinearResult> {
        self.linear.as_ref().map(|l| LinearResult {
            unit: l.spec.unit,
            counts: l.counts.iter().map(|c| c.load(Relaxed)).collect(),
            overflows: l.overflows.load(Relaxed),
            overflow_cycles: l
                .overflow_cycles
                .snapshot()
                .iter()
                .map(|s| s.cycle)
                .collect(),
        })
    }

    /// Samples above the event threshold.
    pub fn events(&self) -> &EventLog {
        &self.events
    }

    /// The sample ring, when configured.
    pub fn ring(&self) -> Option<&SampleRing> {
        self.ring.as_ref()
    }

    /// Records one sample. Called only by the owning measuring thread, which keeps the running
    /// count, sum and extremes in `acc` (registers) and only stores them here.
    #[inline(always)]
    pub(crate) fn record(&self, acc: &mut Running, s: Sample, event_threshold: u64) {
        let v = s.latency.0;
        bump(&self.hist[layout::index_of(v)], 1);
        if let Some(l) = &self.linear {
            let i = v / l.spec.unit.0;
            if (i as usize) < l.counts.len() {
                bump(&l.counts[i as usize], 1);
            } else {
                bump(&l.overflows, 1);
                l.overflow_cycles.push(s);
            }
        }
        if v < acc.min {
            acc.min = v;
            self.min.store(v, Relaxed);
        }
        if v > acc.max || acc.count == 0 {
            acc.max = v;
            self.max.store(v, Relaxed);
            self.max_cycle.store(s.cycle, Relaxed);
            self.max_time.store(s.time.0, Relaxed);
        }
        let (sum, carry) = acc.sum.overflowing_add(v);
        acc.sum = sum;
        self.sum.store(sum, Relaxed);
        if carry {
            bump(&self.sum_hi, 1);
        }
        self.last.store(v, Relaxed);
        if v > event_threshold {
            self.events.push(s);
        }
        if let Some(r) = &self.ring {
            r.push(s);
        }
        acc.count += 1;
        self.count.store(acc.count, Release);
    }
}

/// The writer side of a [`ThreadShared`] for measuring threads outside the timer engine (such as
/// `rtscope respond`'s receivers): owns the running values and records samples with the same
/// plain stores as the timing loop. Create it on the thread that records, after its set-up.
pub struct Recorder<'a> {
    shared: &'a ThreadShared,
    acc: Running,
    event_threshold: u64,
}

impl<'a> Recorder<'a> {
    /// Starts recording into `shared` from the calling thread: stores its thread id and marks it
    /// running. Samples above `event_threshold` also go to the event log.
    pub fn start(shared: &'a ThreadShared, event_threshold: Option<Nanos>) -> Self {
        shared.tid.store(crate::sys::gettid(), Relaxed);
        shared.phase.store(Phase::Running as u8, Release);
        Recorder {
            shared,
            acc: Running::new(),
            event_threshold: event_threshold.map_or(u64::MAX, |t| t.0),
        }
    }

    /// Records one sample (histogram, extremes, sum, event log, sample ring).
    #[inline(always)]
    pub fn record(&mut self, s: Sample) {
        self.shared.record(&mut self.acc, s, self.event_threshold);
    }

    /// Adds `n` to the missed count (for a front end, events that never arrived).
    pub fn add_missed(&mut self, n: u64) {
        bump(&self.shared.missed, n);
    }
}

impl Drop for Recorder<'_> {
    fn drop(&mut self) {
        self.shared.phase.store(Phase::Done as u8, Release);
    }
}

/// The measuring thread's own running values, kept in registers and mirrored into
/// [`ThreadShared`] with plain stores.
#[derive(Debug)]
pub(crate) struct Running {
    pub(crate) count: u64,
    pub(crate) sum: u64,
    pub(crate) min: u64,
    pub(crate) max: u64,
}

impl Running {
    pub(crate) fn new() -> Self {
        Running {
            count: 0,
            sum: 0,
            min: u64::MAX,
            max: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pages of `c` the kernel has resident (`mincore`).
    fn resident_pages(c: &[AtomicU64]) -> (usize, usize) {
        // SAFETY: sysconf takes a constant name only.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
        let start = c.as_ptr() as usize / page * page;
        let end = (c.as_ptr() as usize + std::mem::size_of_val(c)).div_ceil(page) * page;
        let mut vec = vec![0u8; (end - start) / page];
        // SAFETY: [start, end) covers the live allocation `c`, rounded out to whole pages of
        // this process's mapping; `vec` has one byte per page.
        let rc =
            unsafe { libc::mincore(start as *mut libc::c_void, end - start, vec.as_mut_ptr()) };
        assert_eq!(rc, 0, "mincore: {}", std::io::Error::last_os_error());
        (vec.iter().filter(|b| **b & 1 == 1).count(), vec.len())
    }

    /// Counters a timing loop writes are resident when made, not at their first write: 32 MiB
    /// of zeroes (far above malloc's mmap threshold, so fresh pages no one wrote) and of ones.
    #[test]
    fn counters_are_resident_when_made() {
        for value in [0, u64::MAX] {
            let c = resident_counters(4 << 20, value);
            let (resident, pages) = resident_pages(&c);
            assert_eq!(resident, pages, "value {value:#x}");
            assert!(c.iter().all(|x| x.load(Relaxed) == value));
        }
    }
    use crate::config::{Policy, ThreadSpec};

    fn config() -> RunConfig {
        let mut c = RunConfig::new(vec![ThreadSpec {
            affinity: None,
            policy: Policy::Other,
            priority: 0,
            interval: Nanos::from_us(100),
        }]);
        c.sample_ring = Some(4);
        c.event_threshold = Some(Nanos(1000));
        c.event_capacity = 2;
        c.linear = Some(LinearSpec {
            unit: Nanos(1000),
            buckets: 10,
            overflow_cycles: 1,
        });
        c
    }

    #[test]
    fn record_updates_every_view() {
        let t = ThreadShared::new(&config());
        let mut acc = Running::new();
        for (i, v) in [500u64, 2_500, 70_000, 30_000, 900].iter().enumerate() {
            t.record(
                &mut acc,
                Sample {
                    cycle: i as u64,
                    latency: Nanos(*v),
                    time: Nanos(i as u64 * 10),
                },
                1000,
            );
        }
        let s = t.stats();
        assert_eq!(
            (s.count, s.min, s.max, s.max_cycle, s.max_time),
            (5, Nanos(500), Nanos(70_000), 2, Nanos(20))
        );
        assert_eq!(s.sum_ns, 103_900);
        assert_eq!(t.histogram().count(), 5);
        let lin = t.linear().unwrap();
        assert_eq!(
            (
                lin.counts[0],
                lin.counts[2],
                lin.overflows,
                lin.overflow_cycles.clone()
            ),
            (2, 1, 2, vec![2])
        );
        assert_eq!(t.events().snapshot().len(), 2);
        assert_eq!(t.events().dropped(), 1);
        let mut seen = Vec::new();
        t.ring().unwrap().drain(|s| seen.push(s.latency.0));
        assert_eq!(seen, vec![500, 2_500, 70_000, 30_000]);
        assert_eq!(t.ring().unwrap().dropped(), 1);
    }
}
