//! The one module that calls libc. Every function is a small safe wrapper.

use crate::config::{ClockKind, Policy};
use crate::cpuset::CpuSet;
use rtscope_common::signals::timespec as to_timespec;
pub(crate) use rtscope_common::signals::{
    block_run_signals, done_signal, drain_done_signal, restore_signal_mask, signal_thread,
    sigset_of, wait_run_signal,
};
use rtscope_core::Nanos;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

/// The libc clock id of a clock.
pub fn clock_id(clock: ClockKind) -> libc::clockid_t {
    match clock {
        ClockKind::Monotonic => libc::CLOCK_MONOTONIC,
        ClockKind::Realtime => libc::CLOCK_REALTIME,
    }
}

/// Reads a clock (vDSO, no syscall on common architectures).
#[inline(always)]
pub fn now(clock: libc::clockid_t) -> Nanos {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; clock_gettime only writes into it.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    Nanos(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

/// Sleeps until the absolute time `t` of `clock`; retried on EINTR.
pub fn sleep_until(clock: libc::clockid_t, t: Nanos) {
    Deadline::new(t, Nanos::ZERO).sleep(clock);
}

/// An absolute deadline kept both in nanoseconds and as the `timespec` that `clock_nanosleep`
/// takes, so that advancing it by one interval costs two additions instead of a division.
#[derive(Debug, Clone, Copy)]
pub struct Deadline {
    ns: u64,
    ts: libc::timespec,
    step_ns: u64,
    step: libc::timespec,
}

impl Deadline {
    /// The deadline `first`, advancing by `interval`.
    pub fn new(first: Nanos, interval: Nanos) -> Self {
        Deadline {
            ns: first.0,
            ts: to_timespec(first),
            step_ns: interval.0,
            step: to_timespec(interval),
        }
    }

    /// The deadline in ns.
    #[inline(always)]
    pub fn ns(&self) -> u64 {
        self.ns
    }

    /// Moves to the next deadline.
    #[inline(always)]
    pub fn advance(&mut self) {
        self.ns += self.step_ns;
        self.ts.tv_sec += self.step.tv_sec;
        self.ts.tv_nsec += self.step.tv_nsec;
        if self.ts.tv_nsec >= 1_000_000_000 {
            self.ts.tv_nsec -= 1_000_000_000;
            self.ts.tv_sec += 1;
        }
    }

    /// Skips `n` deadlines (after missed periods).
    pub fn skip(&mut self, n: u64) {
        self.ns += n * self.step_ns;
        self.ts = to_timespec(Nanos(self.ns));
    }

    /// Sleeps until the deadline; retried on EINTR.
    #[inline(always)]
    pub fn sleep(&self, clock: libc::clockid_t) {
        while self.sleep_once(clock) == Slept::Interrupted {}
    }

    /// Sleeps until the deadline unless `stop` is set: a signal that interrupts the sleep
    /// (the run's [`wake_signal`]) ends it when `stop` is set, and is slept through otherwise.
    /// Returns whether the deadline was reached ([`Slept::Reached`]) or the sleep was cut
    /// short for the stop ([`Slept::Interrupted`]; not a wake-up at the deadline, so no
    /// sample). The flag is read only after an interruption: nothing is added to a sleep that
    /// reaches its deadline.
    #[inline(always)]
    pub fn sleep_unless(&self, clock: libc::clockid_t, stop: &AtomicBool) -> Slept {
        loop {
            match self.sleep_once(clock) {
                Slept::Reached => return Slept::Reached,
                Slept::Interrupted if stop.load(Relaxed) => return Slept::Interrupted,
                Slept::Interrupted => {}
            }
        }
    }

    /// One `clock_nanosleep` to the deadline.
    ///
    /// Calls the system call directly: the libc wrapper is a pthread cancellation point and
    /// spends about 60 instructions per call switching asynchronous cancellation on and off,
    /// which rtscope's threads never use.
    #[inline(always)]
    fn sleep_once(&self, clock: libc::clockid_t) -> Slept {
        // SAFETY: `ts` is a valid timespec; the remainder pointer may be null for
        // TIMER_ABSTIME.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_clock_nanosleep,
                clock,
                libc::TIMER_ABSTIME,
                &self.ts as *const libc::timespec,
                std::ptr::null_mut::<libc::timespec>(),
            )
        };
        if rc != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
            Slept::Interrupted
        } else {
            Slept::Reached
        }
    }
}

/// How a sleep ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slept {
    /// The sleep lasted until its deadline (or failed for another reason than a signal, which
    /// an absolute sleep to a valid deadline does not).
    Reached,
    /// A signal cut it short.
    Interrupted,
}

/// Sleeps for `d` on `clock` (relative); retried with the remainder on EINTR.
#[inline(always)]
pub fn sleep_for(clock: libc::clockid_t, d: Nanos) {
    sleep_for_unless(clock, d, &AtomicBool::new(false));
}

/// Sleeps for `d` on `clock` (relative) unless `stop` is set: an interruption by a signal
/// ends the sleep when `stop` is set ([`Slept::Interrupted`]), and the remainder is slept
/// otherwise.
#[inline(always)]
pub fn sleep_for_unless(clock: libc::clockid_t, d: Nanos, stop: &AtomicBool) -> Slept {
    let mut ts = to_timespec(d);
    loop {
        let mut rem = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: both pointers refer to valid timespecs owned by this frame.
        let rc = unsafe { libc::clock_nanosleep(clock, 0, &ts, &mut rem) };
        if rc != libc::EINTR {
            return Slept::Reached;
        }
        if stop.load(Relaxed) {
            return Slept::Interrupted;
        }
        ts = rem;
    }
}

/// The kernel thread id of the calling thread.
pub fn gettid() -> i32 {
    // SAFETY: gettid has no arguments and cannot fail.
    unsafe { libc::syscall(libc::SYS_gettid) as i32 }
}

/// Pins the calling thread to `cpus`.
pub fn set_affinity_current(cpus: &CpuSet) -> io::Result<()> {
    // SAFETY: cpu_set_t is a plain bit array; all-zero is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for cpu in cpus.iter() {
        if cpu >= libc::CPU_SETSIZE as usize {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        // SAFETY: `cpu` is below CPU_SETSIZE, checked above.
        unsafe { libc::CPU_SET(cpu, &mut set) };
    }
    // SAFETY: `set` is a valid cpu_set_t of the size passed; pid 0 is the calling thread.
    let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The CPUs the calling thread may run on.
pub fn current_affinity() -> io::Result<CpuSet> {
    // SAFETY: cpu_set_t is a plain bit array; all-zero is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid, writable cpu_set_t of the size passed.
    let rc =
        unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `set` was filled by the kernel; CPU_ISSET reads within its bounds.
    Ok(CpuSet::from_cpus(
        (0..libc::CPU_SETSIZE as usize).filter(|&c| unsafe { libc::CPU_ISSET(c, &set) }),
    ))
}

#[repr(C)]
#[derive(Default)]
struct SchedAttr {
    size: u32,
    sched_policy: u32,
    sched_flags: u64,
    sched_nice: i32,
    sched_priority: u32,
    sched_runtime: u64,
    sched_deadline: u64,
    sched_period: u64,
}

const SCHED_DEADLINE: u32 = 6;

/// Sets the scheduling policy of the calling thread. Uses `pthread_setschedparam`, which works on
/// glibc and musl alike (musl's `sched_setscheduler` is a stub), and the raw `sched_setattr`
/// system call for SCHED_DEADLINE.
pub fn set_policy_current(policy: Policy, priority: i32) -> io::Result<()> {
    let (pol, prio) = match policy {
        Policy::Fifo => (libc::SCHED_FIFO, priority),
        Policy::Rr => (libc::SCHED_RR, priority),
        Policy::Other => (libc::SCHED_OTHER, 0),
        Policy::Batch => (libc::SCHED_BATCH, 0),
        Policy::Idle => (libc::SCHED_IDLE, 0),
        Policy::Deadline {
            runtime,
            deadline,
            period,
        } => {
            let attr = SchedAttr {
                size: std::mem::size_of::<SchedAttr>() as u32,
                sched_policy: SCHED_DEADLINE,
                sched_runtime: runtime.0,
                sched_deadline: deadline.0,
                sched_period: period.0,
                ..SchedAttr::default()
            };
            // SAFETY: `attr` is a valid sched_attr of the size it declares; pid 0 = this thread.
            let rc =
                unsafe { libc::syscall(libc::SYS_sched_setattr, 0, &attr as *const SchedAttr, 0) };
            return if rc == 0 {
                Ok(())
            } else {
                Err(io::Error::last_os_error())
            };
        }
    };
    // SAFETY: sched_param is plain data; zeroing covers musl's extra fields.
    let mut param: libc::sched_param = unsafe { std::mem::zeroed() };
    param.sched_priority = prio;
    // SAFETY: pthread_self() is the calling thread; `param` is a valid sched_param.
    let rc = unsafe { libc::pthread_setschedparam(libc::pthread_self(), pol, &param) };
    if rc != 0 {
        return Err(io::Error::from_raw_os_error(rc));
    }
    if matches!(policy, Policy::Other | Policy::Batch) && priority != 0 {
        // SAFETY: setpriority on this thread's tid; no pointers involved.
        let rc = unsafe { libc::setpriority(libc::PRIO_PROCESS, gettid() as libc::id_t, priority) };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Locks all current and future memory of the process, page by page as it is first used
/// (`MCL_ONFAULT`, Linux 4.4+; plain `mlockall` on older kernels).
///
/// Everything a measuring thread touches in its loop — its counters and histogram (every
/// page written when allocated: [`crate::resident_counters`]), its stack (prefaulted), and the loop's code and libc/vDSO pages (touched
/// before its first sleep) — is resident and locked before the first deadline, so the loop
/// takes no page fault. Code the run never executes (the database, importers, exporters) is
/// not read in and not locked, which keeps the locked footprint near cyclictest's.
pub fn mlockall() -> io::Result<()> {
    let base = libc::MCL_CURRENT | libc::MCL_FUTURE;
    // SAFETY: mlockall takes flags only.
    if unsafe { libc::mlockall(base | libc::MCL_ONFAULT) } == 0 {
        return Ok(());
    }
    // SAFETY: as above, without MCL_ONFAULT for kernels that reject it with EINVAL.
    if unsafe { libc::mlockall(base) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Keeps glibc's malloc to one arena. Each thread that allocates would otherwise get its own
/// arena (132 KiB resident, and locked under `mlockall`); rtscope's measuring threads hardly
/// allocate, so the extra arenas are pure footprint. A no-op on other C libraries.
pub fn single_malloc_arena() {
    #[cfg(target_env = "gnu")]
    // SAFETY: mallopt takes two integers; M_ARENA_MAX is a valid parameter.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
    }
}

/// Undoes [`mlockall`].
pub fn munlockall() {
    // SAFETY: munlockall takes no arguments.
    unsafe { libc::munlockall() };
}

const PREFAULT_CHUNK: usize = 16 * 1024;

/// Touches `bytes` (rounded up to 16 KiB) of the calling thread's stack so its pages are present
/// before the timing loop starts.
#[inline(never)]
pub fn prefault_stack(bytes: usize) {
    fn touch(remaining: usize) {
        let mut buf = [0u8; PREFAULT_CHUNK];
        for i in (0..PREFAULT_CHUNK).step_by(4096) {
            // SAFETY: `i` is within `buf`; the volatile write keeps the page touch.
            unsafe { std::ptr::write_volatile(buf.as_mut_ptr().add(i), 1) };
        }
        std::hint::black_box(&buf);
        if remaining > PREFAULT_CHUNK {
            touch(remaining - PREFAULT_CHUNK);
        }
    }
    if bytes > 0 {
        touch(bytes);
    }
}

/// The number of CPUs the system is configured with (online or not), as `sysconf` says.
pub fn configured_cpus() -> usize {
    // SAFETY: sysconf takes a constant and returns a number.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) };
    usize::try_from(n).unwrap_or(1)
}

/// The CPU this thread runs on now (it may be moved right after); `None` where the kernel
/// does not say.
pub fn current_cpu() -> Option<usize> {
    // SAFETY: sched_getcpu takes nothing and returns a number.
    let cpu = unsafe { libc::sched_getcpu() };
    usize::try_from(cpu).ok()
}

/// The online CPUs (`/sys/devices/system/cpu/online`, else this thread's affinity).
pub fn online_cpus() -> CpuSet {
    std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|t| CpuSet::parse(t.trim(), &CpuSet::default()).ok())
        .or_else(|| current_affinity().ok())
        .unwrap_or_else(|| CpuSet::from_cpus([0]))
}

/// The soft RLIMIT_RTPRIO of the process (the highest RT priority allowed without CAP_SYS_NICE).
pub fn rtprio_limit() -> u64 {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is a valid, writable rlimit.
    unsafe { libc::getrlimit(libc::RLIMIT_RTPRIO, &mut lim) };
    #[allow(clippy::unnecessary_cast)]
    let v = lim.rlim_cur as u64;
    v
}

/// The real-time signal the control thread sends each measuring thread to cut its sleep short
/// when the run stops (SIGRTMIN+4 is [`done_signal`], SIGRTMIN+5 `rtscope respond`'s signal
/// mechanism). Its handler does nothing; it is installed without `SA_RESTART` so the sleep
/// returns EINTR, and the measuring thread then sees the stop flag.
pub fn wake_signal() -> libc::c_int {
    libc::SIGRTMIN() + 6
}

extern "C" fn wake_handler(_: libc::c_int) {}

/// Installs the empty handler of [`wake_signal`] (once per process; later calls do nothing).
/// Until it is installed, the signal's default action would end the process.
pub fn install_wake_handler() -> io::Result<()> {
    static INSTALLED: std::sync::OnceLock<Result<(), i32>> = std::sync::OnceLock::new();
    let r = INSTALLED.get_or_init(|| {
        // SAFETY: sigaction is plain data; zeroed is a valid empty action, filled below.
        let mut sa: libc::sigaction = unsafe { std::mem::zeroed() };
        sa.sa_sigaction = wake_handler as extern "C" fn(libc::c_int) as libc::sighandler_t;
        // No SA_RESTART: an interrupted clock_nanosleep returns EINTR to the caller.
        sa.sa_flags = 0;
        // SAFETY: `sa.sa_mask` is a valid sigset_t inside `sa`.
        unsafe { libc::sigemptyset(&mut sa.sa_mask) };
        // SAFETY: `sa` is a valid sigaction whose handler is an async-signal-safe function
        // that does nothing; the old action is not asked for.
        let rc = unsafe { libc::sigaction(wake_signal(), &sa, std::ptr::null_mut()) };
        if rc == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EINVAL))
        }
    });
    r.map_err(io::Error::from_raw_os_error)
}

/// Unblocks [`wake_signal`] in the calling thread (a mask inherited from the parent process
/// could block it, and the sleep would then never be cut short).
pub fn unblock_wake_signal() {
    let set = sigset_of(&[wake_signal()]);
    // SAFETY: `set` is a valid sigset_t; SIG_UNBLOCK only removes it from this thread's mask.
    unsafe { libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut()) };
}

/// Sends [`wake_signal`] to the thread `thread` of this process (a `JoinHandle`'s
/// `as_pthread_t()`), which must not have been joined yet.
pub fn wake_thread(thread: std::os::unix::thread::RawPthread) {
    // std's RawPthread is an integer; libc's pthread_t is one on glibc and a pointer on musl.
    #[allow(clippy::unnecessary_cast)]
    let thread = thread as libc::pthread_t;
    // SAFETY: `thread` is a thread of this process that has not been joined (its id is still
    // valid, even after it returned); the signal has a handler (`install_wake_handler`).
    unsafe { libc::pthread_kill(thread, wake_signal()) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_reads_are_monotonic_and_sleeps_wait() {
        let c = clock_id(ClockKind::Monotonic);
        let a = now(c);
        sleep_until(c, a + Nanos::from_us(500));
        let b = now(c);
        assert!(b >= a + Nanos::from_us(500));
        sleep_for(c, Nanos::from_us(200));
        assert!(now(c) >= b + Nanos::from_us(200));
    }

    #[test]
    fn deadlines_advance_like_nanoseconds() {
        let mut d = Deadline::new(Nanos(1_999_999_900), Nanos(300));
        d.advance();
        assert_eq!((d.ns(), d.ts.tv_sec, d.ts.tv_nsec), (2_000_000_200, 2, 200));
        d.skip(4);
        assert_eq!(
            (d.ns(), d.ts.tv_sec, d.ts.tv_nsec),
            (2_000_001_400, 2, 1400)
        );
    }

    #[test]
    fn online_cpus_are_found() {
        let cpus = online_cpus();
        assert!(!cpus.is_empty());
        assert!(cpus.contains(0));
    }
}
