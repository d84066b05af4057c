//! Drives a started run from the control thread: periodic work, signals, the end.
//!
//! SIGINT, SIGTERM and SIGHUP stop the measuring threads after their current cycle; the run is
//! then finished normally, so every output is still produced. SIGUSR1 and SIGUSR2 are handed to
//! the front end (cyclictest prints its status on them). The signals stay blocked after the run
//! (see [`hold_signals`]): one that comes while the end is written is taken by nobody and
//! changes nothing.

use rtscope_core::Nanos;
use rtscope_engine::{Run, RunResult, Wake};
use std::io;

/// What the control thread is woken for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// The periodic tick.
    Tick,
    /// SIGUSR1.
    User1,
    /// SIGUSR2.
    User2,
}

/// What the control loop drives: the engine's [`Run`], or a scripted run in tests (the seam
/// that tests the loop's logic without root or real time).
pub trait Driven {
    /// What [`Driven::finish`] returns.
    type Result;
    /// Waits up to `timeout` for a signal, or returns at once when the run has finished.
    fn wait(&self, timeout: Nanos) -> Wake;
    /// Asks the run to stop after its current cycle.
    fn stop(&self);
    /// Waits for the run's end and collects its results.
    fn finish(self) -> Self::Result;
}

impl Driven for Run {
    type Result = RunResult;
    fn wait(&self, timeout: Nanos) -> Wake {
        Run::wait(self, timeout)
    }
    fn stop(&self) {
        Run::stop(self)
    }
    fn finish(self) -> RunResult {
        Run::finish(self)
    }
}

/// How a driven run ended.
pub struct Outcome<R = RunResult> {
    /// The results.
    pub result: R,
    /// The signal (SIGINT, SIGTERM or SIGHUP) that ended it early, if any.
    pub signal: Option<i32>,
    /// The observer's error (a closed stdout) that ended it early, if any.
    pub output_error: Option<io::Error>,
}

/// Runs the control loop until the run ends, calling `on` every `tick` and on user signals.
/// An error from `on` (a closed stdout, say) stops the run like a signal would, and is
/// returned in the outcome; `on` is not called again.
pub fn drive<R: Driven>(
    run: R,
    tick: Nanos,
    mut on: impl FnMut(&R, Event) -> io::Result<()>,
) -> Outcome<R::Result> {
    let mut signal = None;
    let mut output_error: Option<io::Error> = None;
    let mut call = |run: &R, ev: Event, err: &mut Option<io::Error>| {
        if err.is_none() {
            if let Err(e) = on(run, ev) {
                run.stop();
                *err = Some(e);
            }
        }
    };
    loop {
        match run.wait(tick) {
            Wake::Finished => break,
            Wake::Signal(s) if rtscope_common::signals::is_stop_signal(s) => {
                signal.get_or_insert(s);
                run.stop();
            }
            Wake::Signal(s) if s == libc::SIGUSR1 => call(&run, Event::User1, &mut output_error),
            Wake::Signal(_) => call(&run, Event::User2, &mut output_error),
            Wake::Tick => call(&run, Event::Tick, &mut output_error),
        }
    }
    call(&run, Event::Tick, &mut output_error);
    Outcome {
        result: run.finish(),
        signal,
        output_error,
    }
}

#[cfg(test)]
#[path = "drive_tests.rs"]
mod tests;
