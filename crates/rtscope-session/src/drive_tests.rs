//! The control loop's logic over a scripted run on a fake clock: no root, no real time.

use super::*;
use rtscope_common::clock::{Clock, FakeClock};
use std::cell::{Cell, RefCell};
use std::time::Duration;

/// A run of `length` on a fake clock whose threads end `cycle` after a stop.
struct Scripted {
    clock: FakeClock,
    length: Duration,
    cycle: Duration,
    stopped_at: Cell<Option<Duration>>,
    stops: Cell<u32>,
}

impl Scripted {
    fn new(length_ms: u64, cycle_ms: u64) -> Scripted {
        Scripted {
            clock: FakeClock::new(),
            length: Duration::from_millis(length_ms),
            cycle: Duration::from_millis(cycle_ms),
            stopped_at: Cell::new(None),
            stops: Cell::new(0),
        }
    }
    fn end(&self) -> Duration {
        self.stopped_at
            .get()
            .map_or(self.length, |t| (t + self.cycle).min(self.length))
    }
}

impl Driven for Scripted {
    /// When it ended, and how many times it was asked to stop.
    type Result = (Duration, u32);
    fn wait(&self, timeout: Nanos) -> Wake {
        let (now, end) = (self.clock.elapsed(), self.end());
        if now >= end {
            return Wake::Finished;
        }
        match self
            .clock
            .wait_signal(Duration::from_nanos(timeout.0).min(end - now))
        {
            Some(s) => Wake::Signal(s),
            None if self.clock.elapsed() >= end => Wake::Finished,
            None => Wake::Tick,
        }
    }
    fn stop(&self) {
        self.stops.set(self.stops.get() + 1);
        if self.stopped_at.get().is_none() {
            self.stopped_at.set(Some(self.clock.elapsed()));
        }
    }
    fn finish(self) -> (Duration, u32) {
        (self.clock.elapsed(), self.stops.get())
    }
}

/// The events the observer saw, each with its time in ms.
type Log = Vec<(u128, Event)>;

/// Drives `run` with a 1 s tick; returns the outcome and each event with its time in ms.
fn drive_logged(run: Scripted, mut fail_at_call: Option<usize>) -> (Outcome<(Duration, u32)>, Log) {
    let log = RefCell::new(Vec::new());
    let outcome = drive(run, Nanos::from_ms(1000), |run, ev| {
        log.borrow_mut().push((run.clock.elapsed().as_millis(), ev));
        match fail_at_call.as_mut() {
            Some(0) => Err(io::Error::from(io::ErrorKind::BrokenPipe)),
            Some(n) => {
                *n -= 1;
                Ok(())
            }
            None => Ok(()),
        }
    });
    (outcome, log.into_inner())
}

fn ticks(ms: &[u128]) -> Log {
    ms.iter().map(|&t| (t, Event::Tick)).collect()
}

#[test]
fn the_loop_ticks_until_the_run_ends_then_once_more_for_the_end() {
    let (out, log) = drive_logged(Scripted::new(10_000, 1), None);
    let mut want: Vec<u128> = (1..10).map(|s| s * 1000).collect();
    want.push(10_000);
    assert_eq!(log, ticks(&want));
    assert_eq!(out.result, (Duration::from_secs(10), 0));
    assert!(out.signal.is_none() && out.output_error.is_none());
}

#[test]
fn the_first_stop_signal_ends_the_run_after_its_cycle_and_is_the_one_kept() {
    let run = Scripted::new(10_000, 200);
    run.clock
        .signal_at(Duration::from_millis(2500), libc::SIGINT);
    run.clock
        .signal_at(Duration::from_millis(2600), libc::SIGTERM);
    run.clock
        .signal_at(Duration::from_millis(2900), libc::SIGHUP); // after the end: never taken
    let (out, log) = drive_logged(run, None);
    assert_eq!(log, ticks(&[1000, 2000, 2700]));
    // Stopped on SIGINT and again on SIGTERM; the threads ended one cycle after the first.
    assert_eq!(out.result, (Duration::from_millis(2700), 2));
    assert_eq!(out.signal, Some(libc::SIGINT));
}

#[test]
fn user_signals_reach_the_observer_and_do_not_stop_the_run() {
    let run = Scripted::new(4000, 1);
    run.clock
        .signal_at(Duration::from_millis(1500), libc::SIGUSR1);
    run.clock
        .signal_at(Duration::from_millis(3200), libc::SIGUSR2);
    let (out, log) = drive_logged(run, None);
    let want = vec![
        (1000, Event::Tick),
        (1500, Event::User1),
        // The wait after a signal starts a whole tick again.
        (2500, Event::Tick),
        (3200, Event::User2),
        (4000, Event::Tick),
    ];
    assert_eq!(log, want);
    assert_eq!(out.result, (Duration::from_secs(4), 0));
    assert_eq!(out.signal, None);
}

#[test]
fn an_observer_error_stops_the_run_and_the_observer_is_not_called_again() {
    // The third call fails (a closed stdout): the run stops, no end-of-run call follows.
    let (out, log) = drive_logged(Scripted::new(10_000, 300), Some(2));
    assert_eq!(log, ticks(&[1000, 2000, 3000]));
    assert_eq!(out.result, (Duration::from_millis(3300), 1));
    assert_eq!(
        out.output_error.map(|e| e.kind()),
        Some(io::ErrorKind::BrokenPipe)
    );
    assert_eq!(out.signal, None);
}
