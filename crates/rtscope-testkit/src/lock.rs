//! The SCHED_FIFO test lock.

use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::sync::{Mutex, MutexGuard};

/// Held while a SCHED_FIFO measurement runs; see [`rt_lock`].
pub struct RtLock {
    // Dropped first: closing the file releases the flock, then the mutex.
    _file: Option<File>,
    _guard: MutexGuard<'static, ()>,
}

/// Serialises SCHED_FIFO runs (cyclictest's and rtscope's): concurrent runs
/// on a 2-vCPU machine would only disturb each other. A process-wide mutex
/// covers the test threads of one test binary; an `flock` on a file in the
/// temp dir covers test binaries running at the same time (e.g. under
/// nextest). Without a usable lock file only the mutex is taken.
pub fn rt_lock() -> RtLock {
    static RUNS: Mutex<()> = Mutex::new(());
    let guard = RUNS.lock().unwrap_or_else(|p| p.into_inner());
    let path = std::env::temp_dir().join("rtscope-tests-sched-fifo.lock");
    let file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .ok()
        .filter(flock_exclusive);
    RtLock {
        _file: file,
        _guard: guard,
    }
}

/// Blocks until an exclusive `flock` on `file` is held; `false` on failure.
fn flock_exclusive(file: &File) -> bool {
    loop {
        // SAFETY: flock only reads the descriptor number; `file` keeps it
        // open for the whole call.
        let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) };
        if rc == 0 {
            return true;
        }
        if std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            return false;
        }
    }
}
