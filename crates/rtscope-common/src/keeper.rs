//! A keeper: a forked child that undoes something when rtscope ends, however it ends (SIGKILL
//! included) — the trace crate's reaper removes its tracefs instance, respond's semaphore keeper
//! its SysV set. One pattern, one implementation:
//!
//! * the child holds the read end of a pipe whose only write end is rtscope's (close-on-exec, so
//!   no program rtscope starts inherits it); when rtscope closes it — dropping the [`Keeper`], or
//!   dying — the child's `read` returns end of file and it runs its clean-up, then `_exit`s;
//! * the child leaves the session (`setsid`) and ignores SIGINT, SIGTERM, SIGHUP, SIGPIPE and
//!   SIGQUIT, so a Ctrl-C on the terminal reaches rtscope only;
//! * it keeps only its pipes (the control pipe as fd 0, an optional answer pipe as fd 1): an
//!   inherited stdout would keep a reader of rtscope's output waiting, another keeper's control
//!   pipe that keeper alive.
//!
//! Between fork and exit the child may only make async-signal-safe calls on memory prepared
//! before the fork (the parent may have other threads holding locks, the allocator's included):
//! that is the contract of [`Keeper::spawn`]'s closures, hence `unsafe`.

use std::ffi::CStr;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// A running keeper; dropping it closes its pipe (the keeper cleans up) and reaps it.
#[derive(Debug)]
pub struct Keeper {
    pid: libc::pid_t,
    control: Option<OwnedFd>,
}

/// A close-on-exec pipe: (read end, write end).
pub fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: pipe2 succeeded; both descriptors are open and owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

impl Keeper {
    /// Forks a keeper named `name` (its `comm`). In the child: detach, keep the control pipe
    /// as fd 0 and `answer` (when given) as fd 1, run `start`, wait for the end of file on
    /// fd 0, run `clean_up`, `_exit(0)`. The parent's copy of `answer` is the caller's to close.
    ///
    /// # Safety
    /// `start` and `clean_up` run in the forked child of a possibly multi-threaded process:
    /// they must make only async-signal-safe calls (plain system calls) on memory allocated
    /// before the fork, never allocate, lock or unwind, and must return (the keeper exits).
    pub unsafe fn spawn(
        name: &CStr,
        answer: Option<RawFd>,
        start: impl FnOnce(),
        clean_up: impl FnOnce(),
    ) -> io::Result<Keeper> {
        let (read_end, write_end) = pipe()?;
        // SAFETY: the child runs only `child` (async-signal-safe system calls, and the caller's
        // closures under this function's contract) and ends with _exit, never returning into
        // Rust code of the parent's threads.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(io::Error::last_os_error());
        }
        if pid == 0 {
            // SAFETY: we are the forked child; the closures follow the contract above.
            unsafe { child(name, read_end.as_raw_fd(), answer, start, clean_up) }
        }
        drop(read_end);
        Ok(Keeper {
            pid,
            control: Some(write_end),
        })
    }

    /// The keeper's PID.
    pub fn pid(&self) -> libc::pid_t {
        self.pid
    }
}

impl Drop for Keeper {
    fn drop(&mut self) {
        // The keeper's end of file: it cleans up and exits.
        drop(self.control.take());
        let mut status = 0;
        // SAFETY: waits for our own child; `status` is a valid out-pointer.
        unsafe { libc::waitpid(self.pid, &mut status, 0) };
    }
}

/// The keeper's body. Never returns.
///
/// # Safety
/// Only in the child of [`Keeper::spawn`]'s fork, with closures under its contract.
unsafe fn child(
    name: &CStr,
    control: RawFd,
    answer: Option<RawFd>,
    start: impl FnOnce(),
    clean_up: impl FnOnce(),
) -> ! {
    // SAFETY: only async-signal-safe system calls on memory allocated before the fork (`name`,
    // stack buffers); the closures are the caller's under the same rule; ends with _exit.
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
        libc::prctl(libc::PR_SET_NAME, name.as_ptr(), 0, 0, 0);
        libc::dup2(control, 0);
        let first_closed = match answer {
            Some(fd) => {
                libc::dup2(fd, 1);
                2u32
            }
            None => 1u32,
        };
        libc::syscall(libc::SYS_close_range, first_closed, u32::MAX, 0u32);
        start();
        let mut buf = [0u8; 64];
        loop {
            let n = libc::read(0, buf.as_mut_ptr().cast(), buf.len());
            if n > 0 || (n < 0 && *libc::__errno_location() == libc::EINTR) {
                continue;
            }
            break;
        }
        clean_up();
        libc::_exit(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;

    fn exists(p: &CString) -> bool {
        // SAFETY: `p` is a valid NUL-terminated path.
        unsafe { libc::access(p.as_ptr(), libc::F_OK) == 0 }
    }

    /// The keeper runs `start` at once, `clean_up` only once the pipe is closed, and answers
    /// through fd 1 when given one.
    #[test]
    fn the_keeper_cleans_up_when_its_pipe_closes_and_not_before() {
        let dir = std::env::temp_dir().join(format!("rtscope-keeper-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let made = CString::new(dir.join("made").as_os_str().as_bytes()).unwrap();
        let (answer_rx, answer_tx) = pipe().unwrap();
        std::fs::create_dir_all(&dir).unwrap();
        let start = || {
            // SAFETY: plain system calls on memory made before the fork.
            unsafe {
                libc::mkdir(made.as_ptr(), 0o700);
                libc::write(1, b"ok".as_ptr().cast(), 2);
                libc::close(1);
            }
        };
        let clean_up = || {
            // SAFETY: as above.
            unsafe { libc::rmdir(made.as_ptr()) };
        };
        // SAFETY: both closures make only system calls on memory prepared before the fork.
        let k = unsafe {
            Keeper::spawn(
                c"rtscope-test",
                Some(answer_tx.as_raw_fd()),
                start,
                clean_up,
            )
        }
        .unwrap();
        drop(answer_tx);
        let mut got = String::new();
        io::Read::read_to_string(&mut std::fs::File::from(answer_rx), &mut got).unwrap();
        assert_eq!(got, "ok");
        assert!(exists(&made), "start ran, clean-up waits for the pipe");
        let comm = std::fs::read_to_string(format!("/proc/{}/comm", k.pid())).unwrap();
        assert_eq!(comm.trim(), "rtscope-test");
        drop(k);
        assert!(!exists(&made), "clean-up ran once the pipe closed");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
