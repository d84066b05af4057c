//! The few system calls this crate needs, wrapped so the rest of it stays safe.

use crate::LoadError;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

/// The signals that end a load worker or the shepherd: SIGINT, SIGTERM, SIGHUP.
pub const STOP_SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// A set of signals.
#[derive(Clone, Copy)]
pub struct SigSet(libc::sigset_t);

impl SigSet {
    /// The set holding `signals`.
    pub fn of(signals: &[libc::c_int]) -> SigSet {
        // SAFETY: sigset_t is plain data; sigemptyset initialises it.
        let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
        // SAFETY: `set` is a valid sigset_t and the signal numbers are valid.
        unsafe {
            libc::sigemptyset(&mut set);
            for &s in signals {
                libc::sigaddset(&mut set, s);
            }
        }
        SigSet(set)
    }

    /// Blocks these signals in the calling thread (threads started later inherit the mask).
    pub fn block(&self) {
        // SAFETY: a valid set; a null old-set pointer is allowed.
        unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &self.0, std::ptr::null_mut()) };
    }

    /// Unblocks these signals in the calling thread. Async-signal-safe (used between fork and
    /// exec).
    pub fn unblock(&self) {
        self.mask(libc::SIG_UNBLOCK);
    }

    /// Blocks these signals with `sigprocmask`: async-signal-safe, for between fork and exec
    /// (the mask survives the exec).
    pub fn block_in_child(&self) {
        self.mask(libc::SIG_BLOCK);
    }

    fn mask(&self, how: libc::c_int) {
        // SAFETY: a valid set; sigprocmask is async-signal-safe.
        unsafe { libc::sigprocmask(how, &self.0, std::ptr::null_mut()) };
    }

    /// Waits up to `timeout` for one of these (blocked) signals and takes it.
    pub fn wait(&self, timeout: Duration) -> Option<libc::c_int> {
        let ts = libc::timespec {
            tv_sec: timeout.as_secs() as _, // time_t, deprecated by name on musl
            tv_nsec: timeout.subsec_nanos() as libc::c_long,
        };
        // SAFETY: valid set and timespec; a null siginfo pointer is allowed.
        let rc = unsafe { libc::sigtimedwait(&self.0, std::ptr::null_mut(), &ts) };
        (rc > 0).then_some(rc)
    }
}

/// Sends `signal` to process `pid` (negative: to process group `-pid`); errors are ignored
/// (the process may be gone already).
pub fn kill(pid: i32, signal: libc::c_int) {
    if pid == 0 || pid == -1 {
        return; // never the caller's own group or every process
    }
    // SAFETY: kill has no memory arguments.
    unsafe { libc::kill(pid, signal) };
}

/// How a reaped process ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ended {
    /// exit(code).
    Exited(i32),
    /// Killed by this signal.
    Signaled(i32),
}

impl std::fmt::Display for Ended {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Ended::Exited(c) => write!(f, "exit status {c}"),
            Ended::Signaled(s) => write!(f, "killed by signal {s}"),
        }
    }
}

/// Reaps one ended child (any child, `pid` = -1, or one) without blocking.
pub fn reap(pid: i32) -> Option<(i32, Ended)> {
    let mut status = 0;
    // SAFETY: `status` is a valid int to write to.
    let rc = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
    if rc <= 0 {
        return None;
    }
    let ended = if libc::WIFSIGNALED(status) {
        Ended::Signaled(libc::WTERMSIG(status))
    } else {
        Ended::Exited(libc::WEXITSTATUS(status))
    };
    Some((rc, ended))
}

/// Whether the calling process has any child left (alive or zombie).
pub fn has_children() -> bool {
    // SAFETY: siginfo_t is plain data; waitid writes it.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: valid siginfo pointer; WNOWAIT leaves any zombie in place.
    let rc = unsafe {
        libc::waitid(
            libc::P_ALL,
            0,
            &mut info,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        )
    };
    rc == 0 // ECHILD: no children at all
}

/// Makes the calling process a child subreaper: orphaned descendants are re-parented to it.
pub fn set_child_subreaper() -> Result<(), LoadError> {
    // SAFETY: prctl with integer arguments only.
    let rc = unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
    if rc != 0 {
        return Err(LoadError::last_os("prctl(PR_SET_CHILD_SUBREAPER)"));
    }
    Ok(())
}

/// In a child between fork and exec (async-signal-safe calls only): die with SIGKILL when the
/// parent `parent` dies, and `_exit(127)` if it is already gone (the race the prctl cannot
/// see); put the process in a process group of its own when `own_group`.
pub fn child_bind_to_parent(parent: libc::pid_t, own_group: bool) -> std::io::Result<()> {
    // SAFETY: prctl, getppid, setpgid and _exit are async-signal-safe and take no pointers.
    unsafe {
        if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        if libc::getppid() != parent {
            libc::_exit(127);
        }
        if own_group && libc::setpgid(0, 0) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Names the calling thread (its `comm`, as `ps`, `top` and rtscope's monitors show it);
/// at most 15 bytes are kept.
pub fn set_name(name: &std::ffi::CStr) {
    // SAFETY: PR_SET_NAME reads a NUL-terminated string, which `name` is, during the call.
    unsafe { libc::prctl(libc::PR_SET_NAME, name.as_ptr()) };
}

/// The calling process's id.
pub fn getpid() -> libc::pid_t {
    // SAFETY: no arguments.
    unsafe { libc::getpid() }
}

/// Whether `fd` becomes readable (or hung up) within `timeout`.
pub fn readable(fd: std::os::fd::RawFd, timeout: Duration) -> bool {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    let ms = timeout.as_millis().min(i32::MAX as u128) as libc::c_int;
    // SAFETY: one valid pollfd.
    let rc = unsafe { libc::poll(&mut p, 1, ms) };
    rc > 0
}

/// The result of [`fork`].
pub enum Forked {
    /// In the parent: the child's pid.
    Parent(libc::pid_t),
    /// In the child.
    Child,
}

/// `fork(2)`. Only call it while the process has a single thread (the child gets only the
/// calling thread; locks held by others would stay locked forever).
pub fn fork() -> Result<Forked, LoadError> {
    // SAFETY: the callers fork before starting any thread (see the doc comment).
    match unsafe { libc::fork() } {
        -1 => Err(LoadError::last_os("fork")),
        0 => Ok(Forked::Child),
        pid => Ok(Forked::Parent(pid)),
    }
}

/// Ends the calling (forked) process at once, without running destructors or atexit handlers.
pub fn exit_now(code: i32) -> ! {
    // SAFETY: _exit takes no pointers and never returns.
    unsafe { libc::_exit(code) }
}

/// Counters in memory shared with forked children (one per task, each on its own cache line).
pub struct SharedCounters {
    ptr: *mut AtomicU64,
    len: usize,
}

// SAFETY: the memory holds only atomics and lives until drop; access goes through &AtomicU64.
unsafe impl Send for SharedCounters {}
// SAFETY: as above; every access is atomic.
unsafe impl Sync for SharedCounters {}

/// Stride between counters, in u64 words (one 64-byte cache line).
const STRIDE: usize = 8;

impl SharedCounters {
    /// `len` zeroed counters in an anonymous shared mapping.
    pub fn new(len: usize) -> Result<SharedCounters, LoadError> {
        let bytes = len.max(1) * STRIDE * 8;
        // SAFETY: an anonymous mapping with no address hint; the result is checked.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                bytes,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(LoadError::last_os("mmap shared counters"));
        }
        Ok(SharedCounters { ptr: p.cast(), len })
    }

    /// Counter `i` (panics when out of range).
    pub fn get(&self, i: usize) -> &AtomicU64 {
        assert!(i < self.len, "counter {i} of {}", self.len);
        // SAFETY: in bounds of the zero-initialised mapping (zero is a valid AtomicU64), which
        // lives as long as `self`; u64 alignment holds (page-aligned base, 64-byte stride).
        unsafe { &*self.ptr.add(i * STRIDE) }
    }

    /// The sum of all counters.
    pub fn sum(&self) -> u64 {
        (0..self.len)
            .map(|i| self.get(i).load(std::sync::atomic::Ordering::Relaxed))
            .sum()
    }
}

impl Drop for SharedCounters {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, with the same length; no reference outlives self.
        unsafe { libc::munmap(self.ptr.cast(), self.len.max(1) * STRIDE * 8) };
    }
}

/// A pipe: (read end, write end), both close-on-exec.
pub fn pipe() -> Result<(std::os::fd::OwnedFd, std::os::fd::OwnedFd), LoadError> {
    use std::os::fd::FromRawFd;
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(LoadError::last_os("pipe2"));
    }
    // SAFETY: pipe2 succeeded: both descriptors are open and owned by nobody else.
    Ok(unsafe {
        (
            std::os::fd::OwnedFd::from_raw_fd(fds[0]),
            std::os::fd::OwnedFd::from_raw_fd(fds[1]),
        )
    })
}

/// Waits for child `pid` to end (retrying on EINTR) and reaps it.
pub fn reap_blocking(pid: libc::pid_t) -> Option<Ended> {
    loop {
        let mut status = 0;
        // SAFETY: `status` is a valid int to write to.
        let rc = unsafe { libc::waitpid(pid, &mut status, 0) };
        if rc == pid {
            return Some(if libc::WIFSIGNALED(status) {
                Ended::Signaled(libc::WTERMSIG(status))
            } else {
                Ended::Exited(libc::WEXITSTATUS(status))
            });
        }
        if rc < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return None;
        }
    }
}

/// The processes whose parent is `parent`, from `/proc/<pid>/stat`.
pub fn children_of(parent: libc::pid_t) -> Vec<libc::pid_t> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<libc::pid_t>().ok())
        .filter(|&pid| parent_of(pid) == Some(parent))
        .collect()
}

/// The parent of `pid` (field 4 of `/proc/<pid>/stat`, after the parenthesised name).
pub fn parent_of(pid: libc::pid_t) -> Option<libc::pid_t> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// The process group of `pid` (field 5 of `/proc/<pid>/stat`, after the parenthesised name).
pub fn group_of(pid: libc::pid_t) -> Option<libc::pid_t> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(2)?.parse().ok()
}

/// Puts process `pid` into a process group of its own (from the parent; the child does the
/// same, whichever runs first wins, the other fails harmlessly).
pub fn set_group(pid: libc::pid_t) {
    // SAFETY: setpgid takes no pointers.
    unsafe { libc::setpgid(pid, pid) };
}
