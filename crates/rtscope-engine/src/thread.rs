//! The measuring thread: set-up (affinity, policy, prefault), then the timing loop.
//!
//! ## The timing loop
//! Per cycle it does only this: sleep (`clock_nanosleep`), read the clock, compute the latency
//! (wake-up time minus programmed deadline) and store it into this thread's preallocated
//! [`ThreadShared`]. No lock, allocation, I/O or other system call.
//!
//! ## Missed periods (the exact rule)
//! With absolute sleeps on interval `I`, a wake-up for deadline `d(n)` with latency `L >= I`
//! happened after the deadlines `d(n+1) … d(n+m)`, `m = floor(L / I)`, had already passed. Each of
//! those `m` deadlines is a **missed period**: it is counted in `missed` and recorded as a sample
//! of its own, with latency `L − k·I` (`k = 1 … m`, the time from that deadline to the actual
//! wake-up) and its own cycle number. The next deadline is then `d(n+m+1)`, the first one still in
//! the future. So every deadline of the run has exactly one sample, loops count deadlines, and a
//! stall shows in percentiles with its true weight (cyclictest instead skips the passed deadlines
//! and records one sample). With relative sleeps there is no fixed grid, so nothing is missed.

use crate::config::SleepMode;
use crate::state::{Sample, ThreadShared};
use crate::sys;
use rtscope_core::Nanos;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering::*};

/// Run-wide flags shared by all threads.
pub(crate) struct Control {
    pub(crate) stop: AtomicBool,
    pub(crate) done: AtomicUsize,
    pub(crate) break_thread: AtomicI64,
    pub(crate) break_value: AtomicU64,
    /// When the last thread finished, ns since the Unix epoch (0 until then): the run's end,
    /// whatever the control thread was busy with at that moment.
    pub(crate) ended_unix_ns: AtomicU64,
    pub(crate) trace_marker: Option<std::fs::File>,
    pub(crate) threads: usize,
}

impl Control {
    pub(crate) fn new(trace_marker: Option<std::fs::File>, threads: usize) -> Self {
        Control {
            stop: AtomicBool::new(false),
            done: AtomicUsize::new(0),
            break_thread: AtomicI64::new(-1),
            break_value: AtomicU64::new(0),
            ended_unix_ns: AtomicU64::new(0),
            trace_marker,
            threads,
        }
    }

    /// First break wins; stops every thread.
    #[cold]
    fn fire_break(&self, thread: usize, latency: Nanos, tid: i32) {
        if self
            .break_thread
            .compare_exchange(-1, thread as i64, AcqRel, Acquire)
            .is_ok()
        {
            self.break_value.store(latency.0, Release);
            if let Some(f) = &self.trace_marker {
                use std::io::Write;
                let mut w: &std::fs::File = f;
                let _ = writeln!(
                    w,
                    "hit latency threshold ({} > ...) tid {tid}",
                    latency.as_us_trunc()
                );
            }
        }
        self.stop.store(true, Release);
    }
}

/// Fixed parameters of one thread's loop.
pub(crate) struct LoopParams {
    pub(crate) index: usize,
    pub(crate) clock: libc::clockid_t,
    pub(crate) sleep: SleepMode,
    pub(crate) interval: Nanos,
    pub(crate) first_deadline: Nanos,
    /// Deadlines to handle (`u64::MAX`: unbounded).
    pub(crate) loops: u64,
    /// No deadline at or after this clock time is slept to.
    pub(crate) end: Nanos,
    pub(crate) break_threshold: u64,
    pub(crate) event_threshold: u64,
}

/// The timing loop. Returns when the loops are done, the end time is reached, or the run stops.
pub(crate) fn timing_loop(sh: &ThreadShared, ctl: &Control, p: &LoopParams) {
    let interval = p.interval.0;
    let mut next = sys::Deadline::new(p.first_deadline, p.interval);
    let mut cycle = 0u64;
    let mut acc = crate::state::Running::new();
    let tid = sh.tid();
    while cycle < p.loops && next.ns() < p.end.0 {
        let (deadline, now) = match p.sleep {
            SleepMode::Absolute => {
                next.sleep(p.clock);
                (next.ns(), sys::now(p.clock).0)
            }
            SleepMode::Relative => {
                let deadline = sys::now(p.clock).0 + interval;
                sys::sleep_for(p.clock, p.interval);
                (deadline, sys::now(p.clock).0)
            }
        };
        let latency = now.saturating_sub(deadline);
        let sample = Sample {
            cycle,
            latency: Nanos(latency),
            time: Nanos(now),
        };
        sh.record(&mut acc, sample, p.event_threshold);
        if latency >= interval && p.sleep == SleepMode::Absolute {
            let m = (latency / interval).min(p.loops - cycle - 1);
            for k in 1..=m {
                let s = Sample {
                    cycle: cycle + k,
                    latency: Nanos(latency - k * interval),
                    time: Nanos(now),
                };
                sh.record(&mut acc, s, p.event_threshold);
            }
            crate::state::bump(&sh.missed, m);
            cycle += m;
            next.skip(m);
        }
        if latency > p.break_threshold {
            ctl.fire_break(p.index, Nanos(latency), tid);
        }
        cycle += 1;
        next.advance();
        if ctl.stop.load(Relaxed) {
            break;
        }
    }
}
