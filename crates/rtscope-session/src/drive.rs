//! Drives a started run from the control thread: periodic work, signals, the end.
//!
//! SIGINT and SIGTERM stop the measuring threads after their current cycle; the run is then
//! finished normally, so every output is still produced. SIGUSR1 and SIGUSR2 are handed to the
//! front end (cyclictest prints its status on them).

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

/// How a driven run ended.
pub struct Outcome {
    /// The results.
    pub result: RunResult,
    /// The signal (SIGINT or SIGTERM) that ended it early, if any.
    pub signal: Option<i32>,
}

/// Runs the control loop until the run ends, calling `on` every `tick` and on user signals.
/// An error from `on` (a closed stdout, say) stops the run and is returned.
pub fn drive(
    run: Run,
    tick: Nanos,
    mut on: impl FnMut(&Run, Event) -> io::Result<()>,
) -> io::Result<Outcome> {
    let mut signal = None;
    loop {
        match run.wait(tick) {
            Wake::Finished => break,
            Wake::Signal(s) if s == libc::SIGINT || s == libc::SIGTERM => {
                signal.get_or_insert(s);
                run.stop();
            }
            Wake::Signal(s) if s == libc::SIGUSR1 => on(&run, Event::User1)?,
            Wake::Signal(_) => on(&run, Event::User2)?,
            Wake::Tick => on(&run, Event::Tick)?,
        }
    }
    on(&run, Event::Tick)?;
    Ok(Outcome {
        result: run.finish(),
        signal,
    })
}
