//! The controller's signals: SIGINT, SIGTERM and SIGHUP end a measurement early (the results
//! of the part that ran are still reported).

use rtscope_core::Nanos;

/// The signals that stop a measurement.
pub const STOP_SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

fn set_of(signals: &[libc::c_int]) -> libc::sigset_t {
    // SAFETY: sigset_t is plain data, initialised by sigemptyset right away.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid sigset_t; the signal numbers are valid.
    unsafe {
        libc::sigemptyset(&mut set);
        for &s in signals {
            libc::sigaddset(&mut set, s);
        }
    }
    set
}

/// Blocks [`STOP_SIGNALS`] in the calling thread (and the threads it starts afterwards) for its
/// lifetime, so they are taken by [`StopSignals::wait`] instead of killing the process.
pub struct StopSignals {
    old: libc::sigset_t,
}

impl StopSignals {
    /// Blocks the signals; the previous mask comes back on drop.
    pub fn block() -> Self {
        let set = set_of(&STOP_SIGNALS);
        // SAFETY: sigset_t is plain data, filled by pthread_sigmask.
        let mut old: libc::sigset_t = unsafe { std::mem::zeroed() };
        // SAFETY: both sets are valid; SIG_BLOCK only adds signals to this thread's mask.
        unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old) };
        StopSignals { old }
    }

    /// Waits up to `timeout` for a stop signal; returns it.
    pub fn wait(&self, timeout: Nanos) -> Option<libc::c_int> {
        let set = set_of(&STOP_SIGNALS);
        let ts = libc::timespec {
            // `as _`: the field's own type (time_t), which musl's libc bindings deprecate naming.
            tv_sec: (timeout.0 / 1_000_000_000) as _,
            tv_nsec: (timeout.0 % 1_000_000_000) as libc::c_long,
        };
        // SAFETY: `set` and `ts` are valid; a null siginfo pointer is allowed.
        let rc = unsafe { libc::sigtimedwait(&set, std::ptr::null_mut(), &ts) };
        (rc > 0).then_some(rc)
    }

    /// The signal's name.
    pub fn name(signal: libc::c_int) -> &'static str {
        match signal {
            libc::SIGINT => "SIGINT",
            libc::SIGTERM => "SIGTERM",
            libc::SIGHUP => "SIGHUP",
            _ => "a signal",
        }
    }
}

impl Drop for StopSignals {
    fn drop(&mut self) {
        // SAFETY: `old` is a mask obtained from pthread_sigmask.
        unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &self.old, std::ptr::null_mut()) };
    }
}
