//! The measuring thread: set-up (affinity, policy, prefault), then the timing loop.
//!
//! ## The timing loop
//! Per cycle it does only this: sleep (`clock_nanosleep`), read the clock, compute the latency
//! (wake-up time minus programmed deadline) and store it into this thread's preallocated
//! [`ThreadShared`]. No lock, allocation, I/O or other system call.
//!
//! ## Samples are wake-ups; missed deadlines are counted (the exact rule)
//! Every wake-up is exactly one sample, with its latency (wake-up time minus the deadline it was
//! programmed for) and its wake-up number (`cycle`, 0-based). With absolute sleeps on interval
//! `I`, a wake-up for deadline `d(n)` with latency `L >= I` happened after the deadlines
//! `d(n+1) … d(n+m)`, `m = floor(L / I)`, had already passed: those `m` deadlines are **missed**.
//! They are counted in `missed` and are not samples (no wake-up happened for them); the next
//! deadline is `d(n+m+1)`, the first one still in the future, as in cyclictest. `loops` counts
//! wake-ups (cyclictest's `-l`), and the run's end time bounds the deadlines: the deadline at
//! exactly `start + duration` is still slept to (cyclictest's `-D`), and missed deadlines after
//! the end are not counted. With relative sleeps there is no fixed grid, so nothing is missed.
//!
//! ## Stopping
//! [`Run::stop`](crate::Run::stop) sets the run's stop flag and sends each measuring thread
//! [`sys::wake_signal`], whose empty handler cuts the sleep short (EINTR): the thread sees the
//! flag and ends at once, whatever its interval, and the cut-short sleep is not a sample. The
//! flag is read after every wake-up and after an interrupted sleep only.

use crate::config::SleepMode;
use crate::state::{Sample, ThreadShared};
use crate::sys::{self, Slept};
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
    /// Wake-ups to measure (`u64::MAX`: unbounded).
    pub(crate) loops: u64,
    /// No deadline after this clock time is slept to (a deadline exactly at it is).
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
    while cycle < p.loops && next.ns() <= p.end.0 {
        let (deadline, slept) = match p.sleep {
            SleepMode::Absolute => (next.ns(), next.sleep_unless(p.clock, &ctl.stop)),
            SleepMode::Relative => {
                let deadline = sys::now(p.clock).0 + interval;
                (
                    deadline,
                    sys::sleep_for_unless(p.clock, p.interval, &ctl.stop),
                )
            }
        };
        if slept == Slept::Interrupted {
            // Woken for the stop (the control thread's wake signal): not a sample.
            break;
        }
        let now = sys::now(p.clock).0;
        let latency = now.saturating_sub(deadline);
        let sample = Sample {
            cycle,
            latency: Nanos(latency),
            time: Nanos(now),
        };
        sh.record(&mut acc, sample, p.event_threshold);
        if latency >= interval && p.sleep == SleepMode::Absolute {
            let m = missed_deadlines(deadline, latency, interval, p.end.0);
            crate::state::bump(&sh.missed, m);
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

/// The deadlines after `deadline` that a wake-up `latency` ns late (`latency >= interval`) came
/// after — `floor(latency / interval)` — counting only those not after `end`.
#[cold]
#[inline(never)]
fn missed_deadlines(deadline: u64, latency: u64, interval: u64, end: u64) -> u64 {
    let passed = latency / interval;
    let before_end = end.saturating_sub(deadline) / interval;
    passed.min(before_end)
}

#[cfg(test)]
mod tests {
    use super::missed_deadlines;

    #[test]
    fn missed_deadlines_are_the_passed_ones_up_to_the_end() {
        // 1 ms grid, woken 9.5 ms late: deadlines +1 … +9 ms passed.
        assert_eq!(missed_deadlines(0, 9_500_000, 1_000_000, u64::MAX), 9);
        // Exactly on a later deadline: it has passed too (the wake-up came at it).
        assert_eq!(missed_deadlines(0, 2_000_000, 1_000_000, u64::MAX), 2);
        // The run ends 3 ms after this deadline: only +1 … +3 ms count.
        assert_eq!(missed_deadlines(0, 9_500_000, 1_000_000, 3_000_000), 3);
        assert_eq!(
            missed_deadlines(5_000_000, 1_500_000, 1_000_000, 5_000_000),
            0
        );
    }
}
