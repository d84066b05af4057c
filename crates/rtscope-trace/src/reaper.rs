//! The reaper: a forked child that removes the instance directory when rtscope dies, however it
//! dies (SIGKILL included). It is started before the directory is made, so a death during the
//! instance's set-up is covered too.
//!
//! Same idea as the load shepherd's: the child holds the read end of a pipe whose only write end
//! is rtscope's (close-on-exec, so no program rtscope starts inherits it). When rtscope exits
//! for any reason the kernel closes that end, the child's `read` returns end of file, and it
//! turns the instance's tracing off and removes the directory (retrying while the dead
//! process's `trace_pipe_raw` files are still being released). The child leaves the session
//! (`setsid`) and ignores SIGINT/SIGTERM/SIGHUP, so a Ctrl-C on the terminal reaches only
//! rtscope, whose normal path removes the instance itself. Between fork and exit the child
//! only makes async-signal-safe system calls on memory prepared before the fork.
//!
//! The timerlat tier also changes two global osnoise settings (`osnoise/cpus`,
//! `osnoise/timerlat_period_us`); their previous values are handed to the reaper
//! ([`Reaper::spawn_restoring`]), which writes them back after removing the instance.

use crate::TraceError;
use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// The running reaper; dropping it ends it (after the instance was removed normally).
#[derive(Debug)]
pub struct Reaper {
    pid: libc::pid_t,
    write_end: Option<OwnedFd>,
}

fn cstr(p: &Path) -> Result<CString, TraceError> {
    CString::new(p.as_os_str().as_bytes())
        .map_err(|_| TraceError::Unavailable("path with NUL".into()))
}

impl Reaper {
    /// Starts a reaper for the instance directory `dir`.
    pub fn spawn(dir: &Path) -> Result<Reaper, TraceError> {
        Reaper::spawn_restoring(dir, &[])
    }

    /// Starts a reaper for `dir` that also writes each `(file, value)` of `restore` back once
    /// the instance is gone.
    pub fn spawn_restoring(
        dir: &Path,
        restore: &[(PathBuf, String)],
    ) -> Result<Reaper, TraceError> {
        let restore = restore
            .iter()
            .map(|(p, v)| Ok((cstr(p)?, v.clone().into_bytes())))
            .collect::<Result<Vec<_>, TraceError>>()?;
        let dir_c = cstr(dir)?;
        let off_c = cstr(&dir.join("tracing_on"))?;
        let mut fds = [0 as libc::c_int; 2];
        // SAFETY: `fds` has room for the two descriptors pipe2 writes.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(os_err(dir, "pipe2"));
        }
        // SAFETY: pipe2 succeeded; both descriptors are open and owned by nobody else.
        let (read_end, write_end) =
            unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        // SAFETY: the child runs only async-signal-safe system calls (see `child`) and exits
        // with _exit, never returning into Rust code of the parent's threads.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(os_err(dir, "fork"));
        }
        if pid == 0 {
            child(read_end.as_raw_fd(), &dir_c, &off_c, &restore);
        }
        drop(read_end);
        Ok(Reaper {
            pid,
            write_end: Some(write_end),
        })
    }

    /// The reaper's PID.
    pub fn pid(&self) -> i32 {
        self.pid
    }
}

fn os_err(dir: &Path, what: &str) -> TraceError {
    TraceError::Io {
        path: dir.to_path_buf(),
        source: std::io::Error::other(format!("{what}: {}", std::io::Error::last_os_error())),
    }
}

/// The reaper's body. Never returns.
fn child(
    read_fd: libc::c_int,
    dir: &CString,
    tracing_on: &CString,
    restore: &[(CString, Vec<u8>)],
) -> ! {
    // SAFETY: only async-signal-safe system calls on memory allocated before the fork
    // (`dir`, `tracing_on`, stack buffers); ends with _exit.
    unsafe {
        libc::setsid();
        for s in [
            libc::SIGINT,
            libc::SIGTERM,
            libc::SIGHUP,
            libc::SIGPIPE,
            libc::SIGQUIT,
        ] {
            libc::signal(s, libc::SIG_IGN);
        }
        libc::prctl(libc::PR_SET_NAME, c"rtscope-reaper".as_ptr(), 0, 0, 0);
        // Keep only the pipe: an inherited stdout would keep a reader of rtscope's output waiting.
        libc::dup2(read_fd, 0);
        libc::syscall(libc::SYS_close_range, 1u32, u32::MAX, 0u32);
        let mut buf = [0u8; 64];
        loop {
            let n = libc::read(0, buf.as_mut_ptr().cast(), buf.len());
            if n > 0 || (n < 0 && *libc::__errno_location() == libc::EINTR) {
                continue;
            }
            break;
        }
        let fd = libc::open(tracing_on.as_ptr(), libc::O_WRONLY | libc::O_NOFOLLOW);
        if fd >= 0 {
            libc::write(fd, b"0".as_ptr().cast(), 1);
            libc::close(fd);
        }
        for _ in 0..250 {
            if libc::rmdir(dir.as_ptr()) == 0 || *libc::__errno_location() != libc::EBUSY {
                break;
            }
            let ts = libc::timespec {
                tv_sec: 0,
                tv_nsec: 20_000_000,
            };
            libc::nanosleep(&ts, std::ptr::null_mut());
        }
        for (path, value) in restore {
            let fd = libc::open(
                path.as_ptr(),
                libc::O_WRONLY | libc::O_TRUNC | libc::O_NOFOLLOW,
            );
            if fd >= 0 {
                libc::write(fd, value.as_ptr().cast(), value.len());
                libc::close(fd);
            }
        }
        libc::_exit(0)
    }
}

impl Drop for Reaper {
    fn drop(&mut self) {
        drop(self.write_end.take());
        let mut status = 0;
        // SAFETY: waits for our own child; `status` is a valid out-pointer.
        unsafe { libc::waitpid(self.pid, &mut status, 0) };
    }
}

#[cfg(test)]
mod restore_tests {
    use super::*;

    #[test]
    fn the_reaper_writes_saved_settings_back_after_removing_the_directory() {
        let base = std::env::temp_dir().join(format!("rtscope-reaper-{}", std::process::id()));
        let dir = base.join("instance");
        std::fs::create_dir_all(&dir).unwrap();
        let setting = base.join("cpus");
        std::fs::write(&setting, "1").unwrap();
        let r = Reaper::spawn_restoring(&dir, &[(setting.clone(), "0-3".into())]).unwrap();
        drop(r); // as if rtscope had died: the pipe closes, the child cleans up
        assert!(!dir.exists());
        assert_eq!(std::fs::read_to_string(&setting).unwrap(), "0-3");
        std::fs::remove_dir_all(base).unwrap();
    }
}
