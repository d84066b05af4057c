//! One watch per series and database: a POSIX record lock (`fcntl(F_SETLK)`) on one byte of a
//! lock file beside the database (`<db>.watch-lock`), at an offset given by the series name.
//! The kernel releases it when the watch's process ends, however it ends (SIGKILL, a crash),
//! so a dead watch never leaves a stale lock; and `F_GETLK` names the process that holds it,
//! so the second watch can say which PID to stop. Record locks are not inherited by children
//! (the alert command, the explainer's reaper), unlike `flock`, so no child keeps a series
//! locked after its watch.
//!
//! A lock file goes by path, and two paths can lead to one database without a symlink (a hard
//! link, a bind mount): the series is therefore locked a second time on the database file
//! itself, keyed by what the kernel keys it by (its device and inode), with an open file
//! description lock (`F_OFD_SETLK`) on the same byte. SQLite's own locks are POSIX record
//! locks near 1 GiB, far from these bytes; an OFD lock is not released when SQLite closes its
//! descriptors, and the descriptor is close-on-exec (the alert command does not keep it). Such
//! a lock does not name its holder, so the lock file's record lock is taken first and names it
//! whenever the two paths agree; a database created here is an empty file, which SQLite then
//! makes a database.
//!
//! The lock file is opened without following a symlink and must be a regular file: rtscope
//! runs as root, and a planted symlink or device must not be created or written through. It
//! is left in place at the end (removing it would race with a watch taking it) and holds no
//! data.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// Why the series could not be locked.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Another process holds the series' lock.
    #[error("series '{series}' in {db} is already watched by {} (lock {lock})", holder(*.pid))]
    Held {
        /// The series (escaped).
        series: String,
        /// The database (escaped).
        db: String,
        /// The lock file (escaped).
        lock: String,
        /// The process holding it (0: one in another PID namespace, whose PID is not seen here).
        pid: i32,
    },
    /// The lock file is not a regular file (a symlink, a directory, a device).
    #[error("the watch lock {lock} is not a regular file")]
    NotRegular {
        /// The lock file (escaped).
        lock: String,
    },
    /// Another process holds the series' lock on the database file through another path to
    /// it (a hard link or a bind mount: the lock file beside it is another one).
    #[error("series '{series}' in {db} is already watched by another process, through another path to the same database file (a hard link or a bind mount)")]
    HeldElsewhere {
        /// The series (escaped).
        series: String,
        /// The database (escaped).
        db: String,
    },
    /// The database is not a regular file (a FIFO, a device, a socket): the store's one check
    /// of a database path, as every command says it.
    #[error("{why}")]
    DbNotRegular {
        /// What the check said (the path escaped).
        why: String,
    },
    /// Opening or locking failed.
    #[error("cannot lock {lock}: {source}")]
    Io {
        /// The lock file (escaped).
        lock: String,
        /// Why.
        #[source]
        source: io::Error,
    },
}

/// The lock of one series, held while this value lives.
#[derive(Debug)]
pub struct SeriesLock {
    /// Held open: closing it (or any descriptor of the file in this process) releases the lock.
    _file: File,
    /// The database file, its series byte under an OFD lock released when this closes.
    _db: File,
    path: PathBuf,
}

/// Where the lock of `db` lives: `<db>.watch-lock` beside the database itself (through a
/// symlinked database or directory, the same file for every path that leads to it).
pub fn lock_path(db: &Path) -> PathBuf {
    let real = std::fs::canonicalize(db).ok().or_else(|| {
        let dir = match db.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let dir = std::fs::canonicalize(dir).ok()?;
        Some(dir.join(db.file_name()?))
    });
    let mut p = real.unwrap_or_else(|| db.to_path_buf()).into_os_string();
    p.push(".watch-lock");
    PathBuf::from(p)
}

/// The byte of the lock file that stands for `series`: FNV-1a (64 bits), kept below 2^62 so
/// the range fits an `off_t`. Written out here because the offset must never change between
/// versions of rtscope (an older and a newer watch must see each other's lock).
fn offset(series: &str) -> i64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in series.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    (h >> 2) as i64
}

/// The holder as the message names it.
fn holder(pid: i32) -> String {
    if pid > 0 {
        format!("PID {pid}")
    } else {
        "a process of another PID namespace (a container)".to_string()
    }
}

fn escape(s: &str) -> String {
    rtscope_core::text::escape(s).into_owned()
}

fn record(kind: i32, start: i64) -> libc::flock {
    // SAFETY: `flock` is plain integers; all-zero is a valid value, then set field by field.
    let mut l: libc::flock = unsafe { std::mem::zeroed() };
    l.l_type = kind as libc::c_short;
    l.l_whence = libc::SEEK_SET as libc::c_short;
    l.l_start = start as libc::off_t;
    l.l_len = 1;
    l
}

/// The database file `db` (created empty if missing), its byte of `series` locked with an
/// open file description lock: the lock of the file itself, whatever path led to it.
fn lock_database(db: &Path, series: &str) -> Result<File, LockError> {
    let shown = escape(&db.display().to_string());
    let io_err = |source| LockError::Io {
        lock: shown.clone(),
        source,
    };
    let not_regular = |kind: &str| LockError::DbNotRegular {
        why: format!("{shown} is not a regular file (a {kind}); a run database must be one"),
    };
    if let Err(rtscope_store::StoreError::NotRegular { kind, .. }) =
        rtscope_store::Store::check_regular(db)
    {
        return Err(not_regular(kind));
    }
    // O_NONBLOCK: a FIFO put in the database's place since is never waited on (refused below).
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .mode(0o644)
        .custom_flags(libc::O_NONBLOCK)
        .open(db)
        .map_err(io_err)?;
    if !file.metadata().map_err(io_err)?.is_file() {
        return Err(not_regular("special file"));
    }
    let l = record(libc::F_WRLCK, offset(series));
    // SAFETY: F_OFD_SETLK reads the `flock` record `l` points to (l_pid 0, as it requires),
    // which outlives the call.
    if unsafe { libc::fcntl(file.as_raw_fd(), libc::F_OFD_SETLK, &l) } == 0 {
        return Ok(file);
    }
    let e = io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::EACCES | libc::EAGAIN) => Err(LockError::HeldElsewhere {
            series: escape(series),
            db: shown,
        }),
        _ => Err(io_err(e)),
    }
}

impl SeriesLock {
    /// Takes the lock of `series` in `db`, creating the lock file if needed. Refuses at once
    /// (never waits) when another process holds it, naming that process.
    pub fn take(db: &Path, series: &str) -> Result<SeriesLock, LockError> {
        let path = lock_path(db);
        let shown = escape(&path.display().to_string());
        let io_err = |source| LockError::Io {
            lock: shown.clone(),
            source,
        };
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .mode(0o644)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(&path)
            .map_err(|e| match e.raw_os_error() {
                Some(libc::ELOOP) => LockError::NotRegular {
                    lock: shown.clone(),
                },
                _ => io_err(e),
            })?;
        if !file.metadata().map_err(io_err)?.is_file() {
            return Err(LockError::NotRegular { lock: shown });
        }
        let at = offset(series);
        // A holder that ends between the refusal and the question leaves the byte free: try
        // again (a few times; another watch could take it in between).
        for _ in 0..5 {
            let l = record(libc::F_WRLCK, at);
            // SAFETY: F_SETLK reads the `flock` record `l` points to, which outlives the call.
            if unsafe { libc::fcntl(file.as_raw_fd(), libc::F_SETLK, &l) } == 0 {
                let db_file = lock_database(db, series)?;
                return Ok(SeriesLock {
                    _file: file,
                    _db: db_file,
                    path,
                });
            }
            let e = io::Error::last_os_error();
            if !matches!(e.raw_os_error(), Some(libc::EACCES | libc::EAGAIN)) {
                return Err(io_err(e));
            }
            let mut q = record(libc::F_WRLCK, at);
            // SAFETY: F_GETLK reads and overwrites the `flock` record `q` points to.
            if unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GETLK, &mut q) } != 0 {
                return Err(io_err(io::Error::last_os_error()));
            }
            if i32::from(q.l_type) != libc::F_UNLCK {
                return Err(LockError::Held {
                    series: escape(series),
                    db: escape(&db.display().to_string()),
                    lock: shown,
                    pid: q.l_pid,
                });
            }
        }
        Err(io_err(io::Error::from_raw_os_error(libc::EAGAIN)))
    }

    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The PID holding `series`' byte of the lock file open as `f`, asked through an open
    /// file description lock query (`F_OFD_GETLK`), which sees this process's own record locks
    /// as conflicts. (`f` stays open: closing any descriptor of the file would release this
    /// process's record locks on it.)
    fn holder(f: &File, series: &str) -> Option<i32> {
        let mut q = record(libc::F_WRLCK, offset(series));
        // SAFETY: F_OFD_GETLK reads and overwrites the `flock` record `q` points to.
        let rc = unsafe { libc::fcntl(f.as_raw_fd(), libc::F_OFD_GETLK, &mut q) };
        assert_eq!(rc, 0, "{}", io::Error::last_os_error());
        (i32::from(q.l_type) != libc::F_UNLCK).then_some(q.l_pid)
    }

    #[test]
    fn a_series_is_locked_once_and_another_series_is_free() {
        let dir = std::env::temp_dir().join(format!("rtscope-lock-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let db = dir.join("w.db");
        let l = SeriesLock::take(&db, "a").unwrap();
        assert_eq!(
            l.path(),
            dir.canonicalize().unwrap().join("w.db.watch-lock")
        );
        let f = File::open(l.path()).unwrap();
        let me = std::process::id() as i32;
        assert_eq!(holder(&f, "a"), Some(me));
        // Another series of the same database is free.
        assert_eq!(holder(&f, "b"), None);
        drop(l);
        assert_eq!(holder(&f, "a"), None);
        // A symlink planted at the lock's place is refused, not followed.
        let db2 = dir.join("x.db");
        std::os::unix::fs::symlink("/dev/null", dir.join("x.db.watch-lock")).unwrap();
        assert!(matches!(
            SeriesLock::take(&db2, "a"),
            Err(LockError::NotRegular { .. })
        ));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Issue 67 item 7: a hard link to the database is another path, so another lock file,
    /// but the same file: its series is refused while the first lock is held, and free after.
    #[test]
    fn a_hard_link_to_a_watched_database_is_refused() {
        let dir = std::env::temp_dir().join(format!("rtscope-lock-hl-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("other")).unwrap();
        let db = dir.join("w.db");
        let first = SeriesLock::take(&db, "a").unwrap();
        let link = dir.join("other").join("link.db");
        std::fs::hard_link(&db, &link).unwrap();
        assert_ne!(lock_path(&db), lock_path(&link));
        let e = SeriesLock::take(&link, "a").unwrap_err();
        assert!(matches!(e, LockError::HeldElsewhere { .. }), "{e:?}");
        assert!(e.to_string().contains("hard link"), "{e}");
        // Another series of the same file is free through the link.
        drop(SeriesLock::take(&link, "b").unwrap());
        drop(first);
        drop(SeriesLock::take(&link, "a").unwrap());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_offset_of_a_series_never_changes() {
        assert_eq!(offset(""), (0xcbf2_9ce4_8422_2325u64 >> 2) as i64);
        assert!(offset("board-7") >= 0 && offset("board-7") != offset("board-8"));
    }
}
