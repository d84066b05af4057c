//! One ssh connection per board (issue 28): an OpenSSH ControlMaster per board, its socket in
//! a private directory of the fan-out, and every step of that board (architecture and remote
//! directory, copies, the run, the fetch and cleanup) a session multiplexed over it. A step
//! then costs a channel on an established connection, not a TCP connect, a key exchange and an
//! authentication.
//!
//! A master rather than one session that streams the binary in, runs, and streams the database
//! back: each step keeps its own remote command, exit status, stderr and timeout, so a failure
//! still names its step; the run's stdin stays the watcher's (`stop`, or the end of input when
//! the session is lost) and its stdout the run's text, with no framing of binary data in
//! either; and the binary to copy depends on the board's `uname -m`, a round trip before the
//! copy in any design.
//!
//! The master is rtscope's own child (`ControlPersist=no`: it never detaches), in its own
//! process group, ended with SIGTERM (ssh then removes its socket) when the board's steps are
//! done, failed or interrupted, and by the kernel when the board's thread dies with rtscope
//! (`PR_SET_PDEATHSIG`), so even a SIGKILLed rtscope leaves no connection open. The directory
//! is removed when the fan-out ends; one that a SIGKILLed rtscope left (its process gone) is
//! removed by the next fan-out.

use crate::remote::{last_line, wait_within, RemoteError, Ssh, Stop};
use crate::targets::{Target, DEFAULT_STEP_TIMEOUT_S};
use std::fs::{self, DirBuilder, File};
use std::io;
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

/// The name of a fan-out's control directory: `rtscope-ssh.PID.RANDOM`.
const PREFIX: &str = "rtscope-ssh.";

/// The longest temporary directory the sockets go under: a socket path (this, the directory's
/// name, the board's index and the 17 characters of the name ssh binds before renaming) must
/// fit the 107 bytes of `sun_path`. A longer `$TMPDIR` falls back to /tmp.
const MAX_BASE: usize = 56;

/// The private (0700) directory of a fan-out's control sockets, removed with everything in it
/// when dropped.
#[derive(Debug)]
pub struct ControlDir {
    path: PathBuf,
}

impl ControlDir {
    /// Creates it under `$TMPDIR` (or /tmp), first removing the directories of dead rtscope
    /// processes.
    pub fn create() -> io::Result<ControlDir> {
        let base = base_dir();
        sweep(&base);
        let pid = std::process::id();
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        for attempt in 0u32..64 {
            let tag = seed.wrapping_add(attempt.wrapping_mul(0x9e37_79b9));
            let path = base.join(format!("{PREFIX}{pid}.{tag:08x}"));
            match DirBuilder::new().mode(0o700).create(&path) {
                Ok(()) => {
                    // Whatever the umask: the owner must be able to write, nobody else to look.
                    fs::set_permissions(&path, fs::Permissions::from_mode(0o700))?;
                    return Ok(ControlDir { path });
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => {
                    return Err(io::Error::new(
                        e.kind(),
                        format!("cannot create {}: {e}", path.display()),
                    ))
                }
            }
        }
        Err(io::Error::other(format!(
            "cannot create a directory {PREFIX}{pid}.* in {}",
            base.display()
        )))
    }

    /// The control socket of board `index`.
    pub fn socket(&self, index: usize) -> PathBuf {
        self.path.join(index.to_string())
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for ControlDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.path);
    }
}

/// `$TMPDIR` when a socket path fits under it and ssh reads it literally (ssh expands `%` and
/// a leading `~` in a control path), else /tmp.
fn base_dir() -> PathBuf {
    let t = std::env::temp_dir();
    let s = t.to_string_lossy();
    if t.is_absolute() && s.len() <= MAX_BASE && !s.contains('%') && t.is_dir() {
        t
    } else {
        PathBuf::from("/tmp")
    }
}

/// Removes the control directories in `base` whose rtscope is gone (killed before it could),
/// only this user's own.
fn sweep(base: &Path) {
    let Ok(entries) = fs::read_dir(base) else {
        return;
    };
    // SAFETY: geteuid has no arguments and cannot fail.
    let me = unsafe { libc::geteuid() };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(PREFIX))
            .and_then(|rest| rest.split('.').next())
            .and_then(|p| p.parse::<i32>().ok())
        else {
            continue;
        };
        let ours = fs::symlink_metadata(e.path()).is_ok_and(|m| m.is_dir() && m.uid() == me);
        if ours && pid > 0 && !alive(pid) {
            let _ = fs::remove_dir_all(e.path());
        }
    }
}

/// Whether process `pid` exists (a process of another user counts).
fn alive(pid: i32) -> bool {
    // SAFETY: kill with signal 0 only checks that the process exists; no pointers.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// A board's ssh connection: the master process and its socket.
#[derive(Debug)]
pub struct Master {
    child: Child,
    socket: PathBuf,
    log: PathBuf,
}

impl Master {
    /// Connects to `t` with a master listening on `socket`: ready once ssh has authenticated
    /// and created the socket. Fails with ssh's message when it exits, after the board's step
    /// timeout when it hangs, and as not started when `stop` is called meanwhile.
    pub fn open(
        ssh: &Ssh,
        t: &Target,
        socket: PathBuf,
        stop: &Stop,
    ) -> Result<Master, RemoteError> {
        let log = socket.with_extension("log");
        let stderr = File::create(&log)?;
        let mut c = ssh.master_command(t, &socket);
        c.stdin(Stdio::null()).stdout(Stdio::null()).stderr(stderr);
        let parent = std::process::id();
        // SAFETY: between fork and exec the closure only makes async-signal-safe system calls
        // (sigemptyset, sigprocmask, prctl, getppid) on a set on its own stack, and allocates
        // nothing.
        unsafe {
            c.pre_exec(move || {
                // The fan-out holds the run signals blocked (they stop the boards instead), and
                // a blocked mask is inherited: ssh would never see its SIGTERM.
                let mut none = std::mem::zeroed::<libc::sigset_t>();
                libc::sigemptyset(&mut none);
                if libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut()) != 0 {
                    return Err(io::Error::last_os_error());
                }
                // SIGTERM to the master when the board's thread ends without closing it
                // (rtscope killed): ssh then closes the connection and removes the socket.
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM, 0, 0, 0) != 0 {
                    return Err(io::Error::last_os_error());
                }
                // rtscope died before the line above: nobody would end this master.
                if u32::try_from(libc::getppid()).ok() != Some(parent) {
                    return Err(io::Error::other("rtscope is gone"));
                }
                Ok(())
            });
        }
        let child = c.spawn().map_err(ssh.spawn_err())?;
        let mut m = Master { child, socket, log };
        let limit_s = t.step_timeout_s.unwrap_or(DEFAULT_STEP_TIMEOUT_S);
        let deadline = Instant::now() + Duration::from_secs(u64::from(limit_s));
        let mut nap = Duration::from_millis(1);
        loop {
            if let Some(status) = m.child.try_wait()? {
                let text = fs::read(&m.log).unwrap_or_default();
                return Err(RemoteError::Step {
                    step: "connect",
                    why: last_line(&text, status),
                });
            }
            if fs::symlink_metadata(&m.socket).is_ok_and(|md| md.file_type().is_socket()) {
                return Ok(m);
            }
            if stop.is_stopped() {
                return Err(RemoteError::NotStarted);
            }
            if Instant::now() >= deadline {
                return Err(RemoteError::Step {
                    step: "connect",
                    why: format!(
                        "no answer within {limit_s} s (raise step_timeout for this board in targets.toml if it is only slow)"
                    ),
                });
            }
            std::thread::sleep(nap);
            nap = (nap * 2).min(Duration::from_millis(50));
        }
    }

    /// Its control socket.
    pub fn socket(&self) -> &Path {
        &self.socket
    }
}

impl Drop for Master {
    /// SIGTERM, then SIGKILL if ssh has not ended within 5 s; the socket (left by a killed
    /// master) and ssh's messages removed.
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            if let Ok(pid) = i32::try_from(self.child.id()) {
                // SAFETY: kill(2) on our own child, not yet reaped (its pid cannot have been
                // reused); no pointers.
                unsafe { libc::kill(pid, libc::SIGTERM) };
            }
            let _ = wait_within(&mut self.child, Duration::from_secs(5));
        }
        let _ = fs::remove_file(&self.socket);
        let _ = fs::remove_file(&self.log);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_control_directory_is_private_and_removed_when_dropped() {
        let d = ControlDir::create().unwrap();
        let path = d.path().to_path_buf();
        let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            name.starts_with(&format!("{PREFIX}{}.", std::process::id())),
            "{name}"
        );
        // A socket path fits sun_path with ssh's temporary suffix.
        assert!(d.socket(999).as_os_str().len() + 17 <= 107);
        fs::write(d.socket(0).with_extension("log"), "x").unwrap();
        drop(d);
        assert!(!path.exists());
    }

    /// A directory left by a process that is gone is removed; a live process's is kept.
    #[test]
    fn directories_of_dead_processes_are_swept() {
        let base = std::env::temp_dir().join(format!("rtscope-sweep-{}", std::process::id()));
        fs::create_dir_all(&base).unwrap();
        // A pid that exited: a child reaped.
        let mut c = std::process::Command::new("true").spawn().unwrap();
        let dead = c.id();
        c.wait().unwrap();
        let gone = base.join(format!("{PREFIX}{dead}.0000abcd"));
        let live = base.join(format!("{PREFIX}{}.0000abcd", std::process::id()));
        let other = base.join("rtscope-ssh-not-ours");
        for d in [&gone, &live, &other] {
            fs::create_dir_all(d).unwrap();
        }
        sweep(&base);
        // The reaped pid may have been reused by then: only assert what cannot race.
        assert!(live.exists() && other.exists());
        assert!(!gone.exists() || alive(i32::try_from(dead).unwrap()));
        fs::remove_dir_all(&base).unwrap();
    }

    /// A master whose ssh fails at once (a fake "ssh" that prints a reason and exits 255)
    /// fails the connect step with that reason and leaves nothing in the directory.
    #[test]
    fn a_master_that_cannot_connect_fails_with_ssh_s_reason() {
        let d = ControlDir::create().unwrap();
        let fake = d.path().join("ssh");
        fs::write(
            &fake,
            "#!/bin/sh\necho 'ssh: connect to host b port 22: Connection refused' >&2\nexit 255\n",
        )
        .unwrap();
        fs::set_permissions(&fake, fs::Permissions::from_mode(0o755)).unwrap();
        let ssh = Ssh::with_argv(vec![fake.to_string_lossy().into_owned()]);
        let t = Target {
            name: "b".into(),
            host: "b".into(),
            ..Target::default()
        };
        let e = Master::open(&ssh, &t, d.socket(0), &Stop::default()).unwrap_err();
        assert!(
            e.to_string()
                .contains("connect failed: ssh: connect to host b port 22: Connection refused"),
            "{e}"
        );
        fs::remove_file(&fake).unwrap();
        assert_eq!(fs::read_dir(d.path()).unwrap().count(), 0);
    }
}
