//! The signals of a run, in one place for every process that waits for them (a measurement's
//! control thread, the fleet's fan-out, a campaign between runs): which they are, blocking them
//! before any thread starts, and waiting for them with `sigtimedwait`. Plain libc; the engine's
//! measuring threads use the same set (`rtscope_engine::sys` re-exports it).

use rtscope_core::Nanos;

/// `t` as a `timespec` (a relative timeout or an absolute deadline): the engine's sleeps and the
/// signal waits here.
#[inline]
pub fn timespec(t: Nanos) -> libc::timespec {
    libc::timespec {
        // `as _`: the field's own type (time_t), which musl's libc bindings deprecate naming.
        tv_sec: (t.0 / 1_000_000_000) as _,
        tv_nsec: (t.0 % 1_000_000_000) as libc::c_long,
    }
}

/// The real-time signal the last measuring thread sends its control thread when the run is done.
pub fn done_signal() -> libc::c_int {
    libc::SIGRTMIN() + 4
}

/// The signals a run handles in its control thread: SIGINT, SIGTERM, SIGHUP (an ssh session
/// that drops), SIGUSR1, SIGUSR2 and [`done_signal`].
pub fn run_signals() -> [libc::c_int; 6] {
    [
        libc::SIGINT,
        libc::SIGTERM,
        libc::SIGHUP,
        libc::SIGUSR1,
        libc::SIGUSR2,
        done_signal(),
    ]
}

/// A stop signal taken without waiting (the run's signals are held in every thread), `None`
/// when none is pending; another of the run's signals is taken and ignored. For work after the
/// measuring (an analysis) that must end when the user stops it.
pub fn pending_stop_signal() -> Option<i32> {
    while let Some(sig) = wait_run_signal(Nanos::ZERO) {
        if is_stop_signal(sig) {
            return Some(sig);
        }
    }
    None
}

/// Whether `s` asks a run to stop (SIGINT, SIGTERM or SIGHUP): the threads end after their
/// current cycle and every output is still produced.
pub fn is_stop_signal(s: libc::c_int) -> bool {
    s == libc::SIGINT || s == libc::SIGTERM || s == libc::SIGHUP
}

/// The name of a stop signal (`SIGINT`, `SIGTERM`, `SIGHUP`; `signal N` for another).
pub fn signal_name(s: libc::c_int) -> String {
    match s {
        libc::SIGINT => "SIGINT".into(),
        libc::SIGTERM => "SIGTERM".into(),
        libc::SIGHUP => "SIGHUP".into(),
        _ => format!("signal {s}"),
    }
}

/// A signal set holding `signals`.
pub fn sigset_of(signals: &[libc::c_int]) -> libc::sigset_t {
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

/// Blocks [`run_signals`] in the calling thread (and so in threads it starts afterwards); returns
/// the previous mask to restore.
pub fn block_run_signals() -> libc::sigset_t {
    let set = sigset_of(&run_signals());
    // SAFETY: sigset_t is plain data, filled by pthread_sigmask.
    let mut old: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: both sets are valid; SIG_BLOCK only adds signals to this thread's mask.
    unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old) };
    old
}

/// Restores a signal mask saved by [`block_run_signals`].
pub fn restore_signal_mask(old: &libc::sigset_t) {
    // SAFETY: `old` is a mask obtained from pthread_sigmask.
    unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, old, std::ptr::null_mut()) };
}

/// Stop signals taken so far by [`wait_run_signal`], wherever it was called.
static STOPS_TAKEN: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// Waits up to `timeout` for one of [`run_signals`] (which must be blocked); returns it.
pub fn wait_run_signal(timeout: Nanos) -> Option<libc::c_int> {
    let sig = wait_signals(&run_signals(), timeout);
    if sig.is_some_and(is_stop_signal) {
        STOPS_TAKEN.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
    sig
}

/// How many stop signals the process has taken, whoever took them: a second Ctrl-C taken by
/// an analysis that it cut (the spikes' at the end of a run) still counts as the user's second
/// (a campaign then kills its loads without their grace period).
pub fn stop_signals_taken() -> u32 {
    STOPS_TAKEN.load(std::sync::atomic::Ordering::Relaxed)
}

/// Takes a pending [`done_signal`] of the calling thread, if any, without waiting.
pub fn drain_done_signal() {
    while wait_signals(&[done_signal()], Nanos::ZERO).is_some() {}
}

fn wait_signals(signals: &[libc::c_int], timeout: Nanos) -> Option<libc::c_int> {
    let set = sigset_of(signals);
    let ts = timespec(timeout);
    // SAFETY: `set` and `ts` are valid; a null siginfo pointer is allowed.
    let rc = unsafe { libc::sigtimedwait(&set, std::ptr::null_mut(), &ts) };
    (rc > 0).then_some(rc)
}

/// Sends `signal` to thread `tid` of this process.
pub fn signal_thread(tid: i32, signal: libc::c_int) {
    // SAFETY: tgkill with our own pid, a thread id and a valid signal number; no pointers.
    unsafe { libc::syscall(libc::SYS_tgkill, libc::getpid(), tid, signal) };
}

/// The signal mask the process started with, kept by the first [`hold_signals`] (the front
/// end's, first thing in `main`) for [`release_signals`].
static STARTED_WITH: std::sync::OnceLock<libc::sigset_t> = std::sync::OnceLock::new();

/// Blocks the run's signals (SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2) in the calling thread
/// for the rest of the process. The front end calls it first thing in `main`, before it parses
/// its arguments and before any thread starts, so that every thread inherits the mask and a
/// signal can only be taken by the control loop: a signal that comes before the run starts
/// stops it at once (issue 67: one in the first instants, while a debug build beside a CPU hog
/// was still parsing its options, killed `rtscope noise` by its default action with nothing
/// recorded), one that comes after it ended (while the end is written) is ignored, and never
/// does one kill the process and lose a finished run. A command that takes no run's signals
/// gives them back with [`release_signals`]. A program started with `std::process::Command`
/// inherits the mask (the standard library does not reset it): start it through
/// [`unblocked_in_child`]. The first call keeps the mask the process started with; calling it
/// again changes nothing.
pub fn hold_signals() {
    let previous = block_run_signals();
    let _ = STARTED_WITH.set(previous);
}

/// Gives the run's signals back to their default action for a command that does not take
/// them (`runs`, `report`, `check`…, the load workers): the calling thread's mask is the one
/// the process started with again, and a signal that came while they were held (during the
/// option parsing) now has its default action, as it would have had without [`hold_signals`].
/// Without a held mask (no [`hold_signals`] before) it changes nothing.
pub fn release_signals() {
    if let Some(started) = STARTED_WITH.get() {
        restore_signal_mask(started);
    }
}

/// Starts the program `cmd` runs with an empty signal mask, as programs expect: the standard
/// library does not reset the mask in the child, so a program started from a thread holding
/// the run's signals ([`hold_signals`]: every thread of a measuring command) would otherwise
/// start with SIGINT, SIGTERM and SIGHUP blocked and ignore the SIGTERM that ends it (an alert
/// command, ssh, a responder). Dispositions are left as they are (an ignored SIGHUP under
/// `nohup` stays ignored; rtscope ignores none of the run's signals itself).
pub fn unblocked_in_child(cmd: &mut std::process::Command) -> &mut std::process::Command {
    use std::os::unix::process::CommandExt;
    // SAFETY: between fork and exec the closure only calls sigemptyset and sigprocmask
    // (async-signal-safe) on a set on its own stack; it allocates nothing.
    unsafe {
        cmd.pre_exec(|| {
            let mut none: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut none);
            if libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut()) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timespecs_split_seconds_and_nanoseconds() {
        let t = timespec(Nanos(2_000_000_300));
        assert_eq!((t.tv_sec, t.tv_nsec), (2, 300));
    }

    #[test]
    fn stop_signals_are_named() {
        assert!(is_stop_signal(libc::SIGHUP) && !is_stop_signal(libc::SIGUSR1));
        assert_eq!(signal_name(libc::SIGTERM), "SIGTERM");
        assert!(run_signals().contains(&done_signal()));
    }

    /// A stop signal taken by anyone counts: two SIGINTs sent to this thread (thread-directed,
    /// held by its mask) and taken one by [`pending_stop_signal`], one by [`wait_run_signal`],
    /// are two more stops taken; a SIGUSR1 taken is none.
    #[test]
    fn every_stop_signal_taken_is_counted() {
        let old = block_run_signals();
        // SAFETY: gettid has no arguments and cannot fail.
        let tid = unsafe { libc::syscall(libc::SYS_gettid) } as i32;
        let before = stop_signals_taken();
        signal_thread(tid, libc::SIGUSR1);
        assert_eq!(wait_run_signal(Nanos::from_ms(100)), Some(libc::SIGUSR1));
        assert_eq!(stop_signals_taken(), before, "SIGUSR1 is no stop");
        signal_thread(tid, libc::SIGINT);
        assert_eq!(pending_stop_signal(), Some(libc::SIGINT));
        signal_thread(tid, libc::SIGINT);
        assert_eq!(wait_run_signal(Nanos::from_ms(100)), Some(libc::SIGINT));
        // Another test of this process takes a SIGTERM of its own meanwhile: at least these two.
        assert!(stop_signals_taken() - before >= 2);
        restore_signal_mask(&old);
    }

    /// A program started from a thread holding the run's signals inherits them blocked, unless
    /// started through [`unblocked_in_child`].
    #[test]
    fn a_program_started_unblocked_has_an_empty_mask() {
        let blocked_in = |unblock: bool| {
            // grep itself, not through a shell: dash empties the mask at its start, others
            // (bash, ssh, most programs) keep what they inherit.
            let mut c = std::process::Command::new("grep");
            c.args(["SigBlk", "/proc/self/status"]);
            if unblock {
                unblocked_in_child(&mut c);
            }
            let o = c.output().expect("sh runs");
            let text = String::from_utf8_lossy(&o.stdout).to_string();
            let hex = text.split_whitespace().nth(1).unwrap_or("?").to_string();
            u64::from_str_radix(&hex, 16).expect("a mask")
        };
        std::thread::spawn(move || {
            let _previous = block_run_signals();
            let term = 1u64 << (libc::SIGTERM - 1);
            assert_ne!(
                blocked_in(false) & term,
                0,
                "the standard library keeps the mask"
            );
            assert_eq!(blocked_in(true), 0);
        })
        .join()
        .unwrap();
    }

    /// A SIGTERM sent while the signals are held stays pending, taken as a stop signal; after
    /// [`release_signals`] the thread's mask is the one it started with. In a thread of its own
    /// (the mask is per thread), the signal sent to that thread only.
    #[test]
    fn a_held_stop_signal_waits_to_be_taken_and_release_gives_the_mask_back() {
        std::thread::spawn(|| {
            let blocked = |s| {
                // SAFETY: sigset_t is plain data, filled by pthread_sigmask.
                let mut now: libc::sigset_t = unsafe { std::mem::zeroed() };
                // SAFETY: a null new set only reads the thread's mask into `now`.
                unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, std::ptr::null(), &mut now) };
                // SAFETY: `now` is a valid set.
                unsafe { libc::sigismember(&now, s) == 1 }
            };
            hold_signals();
            assert!(blocked(libc::SIGTERM) && blocked(libc::SIGINT));
            // SAFETY: gettid has no arguments and no preconditions.
            let tid = unsafe { libc::syscall(libc::SYS_gettid) } as i32;
            signal_thread(tid, libc::SIGTERM);
            assert_eq!(pending_stop_signal(), Some(libc::SIGTERM));
            assert_eq!(pending_stop_signal(), None);
            release_signals();
            // The test harness's threads start with the run's signals unblocked, unless
            // another test of this process held them first (then the kept mask holds them).
            let started = STARTED_WITH.get().expect("kept by hold_signals");
            // SAFETY: `started` is a valid set.
            let kept = unsafe { libc::sigismember(started, libc::SIGTERM) == 1 };
            assert_eq!(blocked(libc::SIGTERM), kept);
        })
        .join()
        .unwrap();
    }
}
