//! The control side's time, behind a seam: what plans, paces and reports a run (the session's
//! control loop and checkpoint cadence, a campaign's settling, progress and stamps) reads the
//! time and waits for the run's signals through a [`Clock`]. [`SystemClock`] is the real one;
//! [`FakeClock`] is a manual clock with scripted signals, so that logic is tested without root
//! and without real time. The measuring threads never use it: they read the kernel's clocks.

use rtscope_core::Nanos;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime};

/// Time as the control side sees it.
pub trait Clock: Send + Sync {
    /// A monotonic reading.
    fn now(&self) -> Instant;
    /// The wall clock (stamps in the store and the exports).
    fn wall(&self) -> SystemTime;
    /// Waits up to `timeout` for one of the run's signals ([`crate::signals::run_signals`],
    /// blocked beforehand); returns it, or `None` when the time passed.
    fn wait_signal(&self, timeout: Duration) -> Option<i32>;
}

/// A clock shared by the parts of one run.
pub type SharedClock = Arc<dyn Clock>;

/// The real clock: `Instant`, `SystemTime` and `sigtimedwait`.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Instant {
        Instant::now()
    }
    fn wall(&self) -> SystemTime {
        SystemTime::now()
    }
    fn wait_signal(&self, timeout: Duration) -> Option<i32> {
        crate::signals::wait_run_signal(Nanos(timeout.as_nanos().min(u128::from(u64::MAX)) as u64))
    }
}

/// The real clock, shared.
pub fn system() -> SharedClock {
    Arc::new(SystemClock)
}

/// A manual clock for tests: time moves only by [`FakeClock::advance`] and by waits, which
/// take their whole timeout unless a scripted signal comes first (then the clock stops at the
/// signal's time). Nothing sleeps.
#[derive(Debug)]
pub struct FakeClock {
    origin: Instant,
    wall_origin: SystemTime,
    state: Mutex<FakeState>,
}

#[derive(Debug, Default)]
struct FakeState {
    elapsed: Duration,
    /// Signals to deliver, by time since the origin, in order.
    signals: VecDeque<(Duration, i32)>,
    /// The waits asked for, in order (what a test checks a pacing against).
    waits: Vec<Duration>,
}

impl Default for FakeClock {
    fn default() -> Self {
        FakeClock::new()
    }
}

impl FakeClock {
    /// A clock at its origin (the wall clock at 2026-01-01T00:00:00Z), no signal scripted.
    pub fn new() -> FakeClock {
        FakeClock {
            origin: Instant::now(),
            wall_origin: SystemTime::UNIX_EPOCH + Duration::from_secs(1_767_225_600),
            state: Mutex::new(FakeState::default()),
        }
    }

    fn state(&self) -> MutexGuard<'_, FakeState> {
        // A test that panicked while holding the lock has failed already: its state is fine.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Moves the time on by `d`.
    pub fn advance(&self, d: Duration) {
        self.state().elapsed += d;
    }

    /// The time since the origin.
    pub fn elapsed(&self) -> Duration {
        self.state().elapsed
    }

    /// The waits asked for so far.
    pub fn waits(&self) -> Vec<Duration> {
        self.state().waits.clone()
    }

    /// Delivers `signal` to the first wait that reaches `at` (time since the origin). Signals
    /// are delivered in the order of their times.
    pub fn signal_at(&self, at: Duration, signal: i32) {
        let mut s = self.state();
        let i = s.signals.partition_point(|&(t, _)| t <= at);
        s.signals.insert(i, (at, signal));
    }
}

impl Clock for FakeClock {
    fn now(&self) -> Instant {
        self.origin + self.state().elapsed
    }
    fn wall(&self) -> SystemTime {
        self.wall_origin + self.state().elapsed
    }
    fn wait_signal(&self, timeout: Duration) -> Option<i32> {
        let mut s = self.state();
        s.waits.push(timeout);
        let end = s.elapsed + timeout;
        match s.signals.front().copied() {
            Some((at, sig)) if at <= end => {
                s.signals.pop_front();
                s.elapsed = s.elapsed.max(at);
                Some(sig)
            }
            _ => {
                s.elapsed = end;
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fake_wait_takes_its_timeout_or_stops_at_the_scripted_signal() {
        let c = FakeClock::new();
        let t0 = c.now();
        c.signal_at(Duration::from_millis(2500), libc::SIGTERM);
        c.signal_at(Duration::from_millis(1200), libc::SIGUSR1);
        assert_eq!(c.wait_signal(Duration::from_secs(1)), None);
        assert_eq!(c.now() - t0, Duration::from_secs(1));
        assert_eq!(c.wait_signal(Duration::from_secs(1)), Some(libc::SIGUSR1));
        assert_eq!(c.elapsed(), Duration::from_millis(1200));
        assert_eq!(c.wait_signal(Duration::from_secs(5)), Some(libc::SIGTERM));
        assert_eq!(c.elapsed(), Duration::from_millis(2500));
        // A signal already due is taken at once, without moving the time.
        c.signal_at(Duration::from_secs(1), libc::SIGHUP);
        assert_eq!(c.wait_signal(Duration::ZERO), Some(libc::SIGHUP));
        assert_eq!(c.elapsed(), Duration::from_millis(2500));
        c.advance(Duration::from_secs(60));
        assert_eq!(
            c.wall(),
            SystemTime::UNIX_EPOCH
                + Duration::from_secs(1_767_225_600 + 62)
                + Duration::from_millis(500)
        );
        assert_eq!(c.waits().len(), 4);
    }

    #[test]
    fn the_system_clock_moves_and_takes_no_signal_that_was_not_sent() {
        let c = system();
        let t0 = c.now();
        let old = crate::signals::block_run_signals();
        assert_eq!(c.wait_signal(Duration::from_millis(1)), None);
        crate::signals::restore_signal_mask(&old);
        assert!(c.now() > t0);
        assert!(c.wall() > SystemTime::UNIX_EPOCH);
    }
}
