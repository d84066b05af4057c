//! The SCHED_FIFO test lock.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Held while a SCHED_FIFO measurement runs; see [`rt_lock`].
pub struct RtLock {
    // Dropped first: closing the file releases the flock, then the mutex.
    _file: Option<File>,
    _guard: MutexGuard<'static, ()>,
    waited: Duration,
    taken: Instant,
}

/// With `RTSCOPE_TEST_LOCK_LOG=FILE`, each release appends `TEST<TAB>waited s<TAB>held s` to
/// FILE: which tests the serialised runs are spent in (the suite's wall time is mostly theirs).
impl Drop for RtLock {
    fn drop(&mut self) {
        let Some(path) = std::env::var_os("RTSCOPE_TEST_LOCK_LOG") else {
            return;
        };
        let line = format!(
            "{}\t{:.3}\t{:.3}\n",
            std::thread::current().name().unwrap_or("?"),
            self.waited.as_secs_f64(),
            self.taken.elapsed().as_secs_f64()
        );
        if let Ok(mut f) = OpenOptions::new().create(true).append(true).open(path) {
            let _ = f.write_all(line.as_bytes());
        }
    }
}

/// Serialises SCHED_FIFO runs (cyclictest's and rtscope's): concurrent runs
/// on a 2-vCPU machine would only disturb each other. A process-wide mutex
/// covers the test threads of one test binary; an `flock` on a file in the
/// temp dir covers test binaries running at the same time (e.g. under
/// nextest). Without a usable lock file only the mutex is taken.
pub fn rt_lock() -> RtLock {
    static RUNS: Mutex<()> = Mutex::new(());
    let asked = Instant::now();
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
        waited: asked.elapsed(),
        taken: Instant::now(),
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
