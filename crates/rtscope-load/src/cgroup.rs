//! A cgroup v2 directory of one shepherd's loads: `rtscope-<pid>` under the cgroup2 mount
//! (`/sys/fs/cgroup`, or `/sys/fs/cgroup/unified` on hybrid systems), when it is writable.
//!
//! Every load moves itself into it between fork and exec (writing `0` to `cgroup.procs`), so
//! whatever it forks later stays inside, even a daemon that left the process group. Writing
//! `1` to `cgroup.kill` (Linux 5.14+) SIGKILLs all of it at once.

use std::fs::File;
use std::os::fd::{AsRawFd, RawFd};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The cgroup; [`Cgroup::remove`] deletes it once empty.
#[derive(Debug)]
pub struct Cgroup {
    dir: PathBuf,
    procs: File,
}

impl Cgroup {
    /// Creates `rtscope-<pid>` under the cgroup2 mount; `None` when there is none or it is not
    /// writable (loads are then tracked by process group and subreaper only).
    pub fn create(pid: i32) -> Option<Cgroup> {
        let mounts = std::fs::read_to_string("/proc/self/mounts").ok()?;
        let root = mounts.lines().find_map(|l| {
            let mut f = l.split_whitespace();
            let (_, dir, kind) = (f.next()?, f.next()?, f.next()?);
            (kind == "cgroup2").then(|| PathBuf::from(dir))
        })?;
        remove_stale(&root);
        let dir = root.join(format!("rtscope-{pid}"));
        std::fs::create_dir(&dir).ok()?;
        match std::fs::OpenOptions::new()
            .write(true)
            .open(dir.join("cgroup.procs"))
        {
            Ok(procs) => Some(Cgroup { dir, procs }),
            Err(_) => {
                let _ = std::fs::remove_dir(&dir);
                None
            }
        }
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// The open `cgroup.procs` (close-on-exec), for [`join_self`] in a forked child.
    pub fn procs_fd(&self) -> RawFd {
        self.procs.as_raw_fd()
    }

    /// SIGKILLs every process in the cgroup (`cgroup.kill`); false when unsupported.
    pub fn kill_all(&self) -> bool {
        std::fs::write(self.dir.join("cgroup.kill"), "1").is_ok()
    }

    /// Whether no process is left in it.
    pub fn is_empty(&self) -> bool {
        std::fs::read_to_string(self.dir.join("cgroup.procs")).is_ok_and(|s| s.trim().is_empty())
    }

    /// Removes the directory, waiting up to `wait` for the last processes to leave.
    pub fn remove(self, wait: Duration) {
        let until = Instant::now() + wait;
        while std::fs::remove_dir(&self.dir).is_err() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// Between fork and exec: moves the calling process into the cgroup whose `cgroup.procs` is
/// open as `fd`. Async-signal-safe (one `write`); failure is ignored (process groups remain).
pub fn join_self(fd: RawFd) {
    // SAFETY: a static one-byte buffer; write(2) is async-signal-safe.
    unsafe { libc::write(fd, b"0".as_ptr().cast(), 1) };
}

impl Cgroup {
    /// The processes in it now.
    pub fn pids(&self) -> Vec<i32> {
        std::fs::read_to_string(self.dir.join("cgroup.procs"))
            .map(|s| s.lines().filter_map(|l| l.trim().parse().ok()).collect())
            .unwrap_or_default()
    }
}

/// Removes the empty `rtscope-<pid>` cgroups of shepherds that are gone (SIGKILLed before they
/// could remove theirs). A cgroup that still holds processes cannot be removed and stays.
fn remove_stale(root: &Path) {
    let Ok(dir) = std::fs::read_dir(root) else {
        return;
    };
    for e in dir.flatten() {
        let name = e.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.strip_prefix("rtscope-")) else {
            continue;
        };
        if pid.parse::<u32>().is_ok() && !Path::new("/proc").join(pid).exists() {
            let _ = std::fs::remove_dir(e.path());
        }
    }
}
