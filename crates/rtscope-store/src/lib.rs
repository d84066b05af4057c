//! rtscope-store: every run, whole and crash-safe, in one SQLite file.
//!
//! * [`Store::open`] opens or creates a database (WAL mode), applies migrations, and refuses a
//!   database written by a newer rtscope or a file that is not an rtscope database.
//! * A run is written as it goes: [`Store::begin_run`] at the start (status `running`),
//!   [`Store::checkpoint`] at least once a second from a non-real-time thread (statistics so
//!   far, new time-series points, new events), [`Store::finish_run`] at the end. A run killed
//!   with SIGKILL keeps its last checkpoint and reads back as incomplete.
//! * [`Store::list_runs`], [`Store::run`] and friends read it back, also while a run is writing.
//!
//! Schema: docs/store-schema.md.
//!
//! Re-exports (its facade): the record types (`NewRun`, `Checkpoint`, `ThreadStats`,
//! `SampleFigures`, `RunDetail`, `ThreadRow`, …) are named at the root for every reader and writer;
//! their modules (`read`, `write`, `batch`, `bundle`, …) are private, so the root is their one
//! path. `codec`, `schema` and `watch` are public modules and are not re-exported.

#![warn(missing_docs)]

mod batch;
mod bundle;
mod campaign;
mod checks;
pub mod codec;
mod merge;
mod monitor;
mod read;
mod recorder;
mod sample_rule;
pub mod schema;
mod spikes;
pub mod sqlite_alloc;
mod status;
pub mod watch;
mod write;

pub use batch::RunFacts;
pub use bundle::RunBundle;
pub use campaign::{CampaignId, CampaignRun, CampaignSummary, LoadMetric, LoadRow, NewCampaign};
pub use checks::CheckRow;
pub use merge::{MergeReport, RunIdentity};
pub use monitor::{
    MonitorBatch, MonitorSeries, MonitorSource, MonitorState, MonitorValue, TopThread,
};
pub use read::{RunDetail, RunSummary, SeriesRow, ThreadRow};
pub use recorder::{Recorded, Recorder};
pub use sample_rule::{SampleRule, SAMPLE_RULE_KEY};
pub use spikes::{ExplainedRun, SpikeRow, SpikeSummaryRow};
pub use status::{RunKind, RunStatus};
pub use write::{
    Checkpoint, EventRow, NewRun, RawChunk, SampleFigures, SeriesPoint, ThreadInfo, ThreadStats,
};

use rusqlite::{Connection, OpenFlags};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Why the store could not be used. Every variant names the file.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The file exists but is not a SQLite database, or not one of rtscope's.
    #[error("{path} is not an rtscope database ({why})")]
    NotADatabase {
        /// The file.
        path: PathBuf,
        /// What SQLite or the check said.
        why: String,
    },
    /// Written by a newer rtscope.
    #[error("{path} was written by a newer rtscope (schema version {found}, this rtscope knows up to {known}); upgrade rtscope to read it")]
    TooNew {
        /// The file.
        path: PathBuf,
        /// Its schema version.
        found: i64,
        /// Ours.
        known: i64,
    },
    /// `rtscope runs merge`: the other database holds a run with a UUID this one has for a
    /// different run.
    #[error("cannot merge {path}: its run {theirs} has UUID {uuid}, which run {ours} here has too but for a different run (started, kind or command line differ); nothing was merged")]
    UuidConflict {
        /// The other database.
        path: PathBuf,
        /// The UUID.
        uuid: String,
        /// The run here.
        ours: i64,
        /// The run there.
        theirs: i64,
    },
    /// `rtscope runs merge`: the other database cannot be merged (missing, the same file).
    #[error("cannot merge {path}: {why}")]
    Merge {
        /// The other database.
        path: PathBuf,
        /// Why.
        why: String,
    },
    /// The path names something that is not a regular file (a FIFO, a device, a directory, a
    /// socket): refused before SQLite opens it, for reading and writing alike, because opening
    /// a FIFO waits for a writer and a device or directory is no database.
    #[error("{} is not a regular file (a {kind}); a run database must be one", .path.display())]
    NotRegular {
        /// The path given.
        path: PathBuf,
        /// What it is, in words.
        kind: &'static str,
    },
    /// No such run.
    #[error("no run {0} in the database")]
    NoSuchRun(i64),
    /// A reading command's database does not exist (it is never created empty).
    #[error("no run database at {}", .0.display())]
    Missing(PathBuf),
    /// The file system holding the database has no space left (SQLite's `SQLITE_FULL`, an I/O
    /// error whose system error is "no space" or "quota exceeded", or a `-shm` file that could
    /// not grow): said as such, because SQLite's own words ("disk I/O error") hide the fix.
    #[error("database {}: the disk holding it is full ({what})", .path.display())]
    DiskFull {
        /// The file.
        path: PathBuf,
        /// What could not be done, and SQLite's words.
        what: String,
    },
    /// Any other SQLite error (permissions, corruption).
    #[error("database {path}: {source}")]
    Sqlite {
        /// The file.
        path: PathBuf,
        /// SQLite's error.
        source: rusqlite::Error,
    },
}

impl StoreError {
    /// How to fix it, for the line after the message.
    pub fn hint(&self) -> &'static str {
        match self {
            StoreError::Missing(_) => {
                "record runs with `rtscope measure`, `rtscope run` or `rtscope import`, or pass --db PATH"
            }
            StoreError::DiskFull { .. } => {
                "free space on the file system holding the database (`df` on its directory), or pass --db PATH for a database on another one"
            }
            _ => "pass --db PATH (or set RTSCOPE_DB) for another database file",
        }
    }
}

/// How long opening waits for another process's lock (also the busy timeout after open).
const OPEN_WAIT: Duration = Duration::from_secs(5);

/// The result type of this crate.
pub type Result<T> = std::result::Result<T, StoreError>;

/// An open rtscope database.
pub struct Store {
    conn: Connection,
    path: PathBuf,
    /// Statements run through [`Store::sql`] (the readers) since the store was opened.
    statements: std::cell::Cell<u64>,
    /// Opened read-only because the disk is full ([`Store::open_existing`]): a write's
    /// "read-only database" is said as the full disk it is.
    on_full_disk: bool,
}

/// A run's id.
pub type RunId = i64;

impl StoreError {
    /// Whether another connection holds the lock (the write is worth retrying).
    pub fn is_busy(&self) -> bool {
        matches!(self, StoreError::Sqlite { source, .. } if matches!(
            source.sqlite_error_code(),
            Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
        ))
    }
}

impl Store {
    /// The database every command uses without `--db`: `$RTSCOPE_DB`, else `./rtscope.db`.
    pub fn default_path() -> PathBuf {
        std::env::var_os("RTSCOPE_DB").map_or_else(|| PathBuf::from("rtscope.db"), PathBuf::from)
    }

    /// Opens an existing database for a command that reads (`db`, else [`Store::default_path`]):
    /// a missing file is [`StoreError::Missing`], never a new empty database; a file on
    /// read-only media (or in a directory this user cannot write) is opened read-only and left
    /// untouched. So is one on a full disk, where the read-write open cannot grow the `-shm`
    /// file SQLite's WAL mode needs beside it, unless its `-wal` file holds changes a read-only
    /// open would not see: then [`StoreError::DiskFull`] says so. A write through a store opened
    /// so on a full disk fails with [`StoreError::DiskFull`].
    pub fn open_existing(db: Option<&Path>) -> Result<Store> {
        let path = db.map_or_else(Store::default_path, Path::to_path_buf);
        if !Store::check_regular(&path)? {
            return Err(StoreError::Missing(path));
        }
        if !Store::is_writable(&path) {
            return Store::open_read_only(&path);
        }
        match Store::open(&path) {
            Err(StoreError::DiskFull { what, .. }) => Store::open_on_full_disk(&path, what),
            r => r,
        }
    }

    /// [`Store::open_existing`] of a database whose read-write open failed for a full disk
    /// (`what`): read-only and immutable (nothing written beside it), unless its `-wal` file
    /// holds frames, which an immutable open ignores.
    fn open_on_full_disk(path: &Path, what: String) -> Result<Store> {
        if let Some(wal) = Store::wal_with_frames(path) {
            return Err(StoreError::DiskFull {
                path: path.to_path_buf(),
                what: format!(
                    "{what}; its write-ahead log {} holds changes not yet in the database file, \
                     which cannot be read without space beside it",
                    wal.display()
                ),
            });
        }
        let mut store = Store::open_read_only(path)?;
        store.on_full_disk = true;
        Ok(store)
    }

    /// The `-wal` file of `path` when it holds frames (more than its 32-byte header): changes
    /// that may not be in the database file yet. SQLite names it after the file a symlink
    /// leads to.
    fn wal_with_frames(path: &Path) -> Option<PathBuf> {
        let real = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        let mut wal = real.into_os_string();
        wal.push("-wal");
        let wal = PathBuf::from(wal);
        let len = std::fs::metadata(&wal).map(|m| m.len()).unwrap_or(0);
        (len > 32).then_some(wal)
    }

    /// Opens (creating if needed) the database at `path`, upgrading its schema.
    pub fn open(path: &Path) -> Result<Store> {
        Store::check_regular(path)?;
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(path, flags).map_err(|e| Self::classify(path, e))?;
        let mut store = Store {
            conn,
            path: path.to_path_buf(),
            statements: std::cell::Cell::new(0),
            on_full_disk: false,
        };
        store.setup().map_err(|e| match e {
            StoreError::Sqlite { source, .. } => match store.sqlite_error(source) {
                StoreError::Sqlite { source, .. } => Self::classify(path, source),
                other => other,
            },
            other => other,
        })?;
        Ok(store)
    }

    /// How long a write waits for another process's lock before it fails (5 s after
    /// [`Store::open`]). A running measurement checkpoints with a short wait and retries.
    pub fn set_busy_timeout(&self, d: Duration) -> Result<()> {
        self.conn.busy_timeout(d).map_err(self.err())
    }

    /// Makes every commit durable: `synchronous=FULL`, so the WAL is synced at each commit
    /// (one fsync per transaction). [`Store::open`] leaves `NORMAL`, where a committed
    /// transaction survives a crash of the program but a power loss can undo it until the next
    /// checkpoint. `rtscope watch` commits once per window and promises that a power loss
    /// loses at most the open window (seen lost in a QEMU guest cut off 3 s after a commit).
    pub fn set_durable_commits(&self) -> Result<()> {
        self.conn
            .pragma_update(None, "synchronous", "FULL")
            .map_err(self.err())
    }

    /// Opens an existing database for reading only, changing nothing in it or next to it
    /// (no WAL switch, no migration, no `-shm` file): for a database on read-only media or in
    /// a directory this user cannot write. Its schema must be this rtscope's.
    pub fn open_read_only(path: &Path) -> Result<Store> {
        Store::check_regular(path)?;
        let mut uri = String::from("file:");
        for b in path.as_os_str().as_encoded_bytes() {
            match b {
                b'%' | b'?' | b'#' => uri.push_str(&format!("%{b:02X}")),
                _ => uri.push(*b as char),
            }
        }
        uri.push_str("?immutable=1");
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = if path.as_os_str().to_str().is_some() {
            Connection::open_with_flags(&uri, flags)
        } else {
            Connection::open_with_flags(path, flags - OpenFlags::SQLITE_OPEN_URI)
        }
        .map_err(|e| Self::classify(path, e))?;
        let store = Store {
            conn,
            path: path.to_path_buf(),
            statements: std::cell::Cell::new(0),
            on_full_disk: false,
        };
        let version = store.user_version().map_err(|e| match e {
            StoreError::Sqlite { source, .. } => Self::classify(path, source),
            other => other,
        })?;
        if version != schema::SCHEMA_VERSION {
            return Err(StoreError::NotADatabase {
                path: path.to_path_buf(),
                why: format!(
                    "schema version {version} on read-only storage; this rtscope reads version {} (open it once where it can be written to upgrade it)",
                    schema::SCHEMA_VERSION
                ),
            });
        }
        Ok(store)
    }

    /// The one check of a database path before anything opens it, for every command: `Ok(true)`
    /// for a regular file (also through a symlink), `Ok(false)` for nothing there (a writer
    /// creates it, a reader says [`StoreError::Missing`]), [`StoreError::NotRegular`] for a
    /// FIFO, device, directory or socket. It only `stat`s the path, so it never waits on a FIFO.
    pub fn check_regular(path: &Path) -> Result<bool> {
        use std::os::unix::fs::FileTypeExt;
        let kind = match std::fs::metadata(path) {
            Ok(m) => m.file_type(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
            // Unreadable metadata (a permission on the way): SQLite's open says why.
            Err(_) => return Ok(true),
        };
        let what = if kind.is_file() {
            return Ok(true);
        } else if kind.is_dir() {
            "directory"
        } else if kind.is_fifo() {
            "FIFO"
        } else if kind.is_char_device() {
            "character device"
        } else if kind.is_block_device() {
            "block device"
        } else if kind.is_socket() {
            "socket"
        } else {
            "special file"
        };
        Err(StoreError::NotRegular {
            path: path.to_path_buf(),
            kind: what,
        })
    }

    /// Whether `path` can be written here: the file opened for writing and its directory
    /// writable (SQLite creates its `-wal` and `-shm` files there). Only a regular file is
    /// opened ([`Store::check_regular`] first), so a FIFO is never waited on.
    pub fn is_writable(path: &Path) -> bool {
        let file_ok = matches!(Store::check_regular(path), Ok(true))
            && std::fs::OpenOptions::new().append(true).open(path).is_ok();
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let probe = dir.join(format!(".rtscope-probe-{}", std::process::id()));
        let dir_ok = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&probe)
            .map(|_| std::fs::remove_file(&probe))
            .is_ok();
        file_ok && dir_ok
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn classify(path: &Path, e: rusqlite::Error) -> StoreError {
        let not_db = matches!(&e, rusqlite::Error::SqliteFailure(f, _) if f.code == rusqlite::ErrorCode::NotADatabase);
        if says_full(&e, None) {
            StoreError::DiskFull {
                path: path.to_path_buf(),
                what: format!("SQLite: {e}"),
            }
        } else if not_db {
            StoreError::NotADatabase {
                path: path.to_path_buf(),
                why: e.to_string(),
            }
        } else {
            StoreError::Sqlite {
                path: path.to_path_buf(),
                source: e,
            }
        }
    }

    /// The connection, for one read statement: counted, so a test can tell a reader of many
    /// runs that reads them one by one (its count grows with the runs) from one that does not.
    pub(crate) fn sql(&self) -> &Connection {
        self.statements.set(self.statements.get() + 1);
        &self.conn
    }

    /// The read statements run since the store was opened (see [`Store::sql`]).
    pub fn statements(&self) -> u64 {
        self.statements.get()
    }

    pub(crate) fn err(&self) -> impl Fn(rusqlite::Error) -> StoreError + '_ {
        move |source| self.sqlite_error(source)
    }

    /// SQLite's error `source` on this store: [`StoreError::DiskFull`] when it says the disk
    /// is full (or a write was refused by a store opened read-only for a full disk), else
    /// [`StoreError::Sqlite`].
    fn sqlite_error(&self, source: rusqlite::Error) -> StoreError {
        // SAFETY: the handle is this open connection's, used for one call that only reads
        // the error number of its last failed system call; nothing keeps the pointer.
        let errno = unsafe { rusqlite::ffi::sqlite3_system_errno(self.conn.handle()) };
        let read_only = matches!(&source, rusqlite::Error::SqliteFailure(f, _)
            if f.code == rusqlite::ErrorCode::ReadOnly);
        if self.on_full_disk && read_only {
            return StoreError::DiskFull {
                path: self.path.clone(),
                what: "no space for the write-ahead files a change makes beside it".into(),
            };
        }
        if says_full(&source, Some(errno)) {
            return StoreError::DiskFull {
                path: self.path.clone(),
                what: format!("SQLite: {source}"),
            };
        }
        StoreError::Sqlite {
            path: self.path.clone(),
            source,
        }
    }

    fn setup(&mut self) -> Result<()> {
        let err = |source| StoreError::Sqlite {
            path: self.path.clone(),
            source,
        };
        self.conn.busy_timeout(OPEN_WAIT).map_err(err)?;
        // Another program's database is refused before anything in it changes.
        Self::check_empty_or_ours(&self.conn, &self.path)?;
        self.switch_to_wal()?;
        self.conn
            .pragma_update(None, "synchronous", "NORMAL")
            .map_err(err)?;
        self.conn
            .pragma_update(None, "foreign_keys", "ON")
            .map_err(err)?;
        let version = self.user_version()?;
        if version > schema::SCHEMA_VERSION {
            return Err(StoreError::TooNew {
                path: self.path.clone(),
                found: version,
                known: schema::SCHEMA_VERSION,
            });
        }
        if version == schema::SCHEMA_VERSION {
            return Ok(());
        }
        // Another process may be creating or upgrading the same file right now: take the
        // write lock first (waiting up to the busy timeout), then look again.
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(err)?;
        let version: i64 = tx
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .map_err(err)?;
        Self::check_empty_or_ours(&tx, &self.path)?;
        for (v, sql) in schema::MIGRATIONS.iter().enumerate().skip(version as usize) {
            tx.execute_batch(sql).map_err(err)?;
            tx.pragma_update(None, "user_version", (v + 1) as i64)
                .map_err(err)?;
        }
        tx.commit().map_err(err)
    }

    /// Puts the file in WAL mode (a no-op once it is). On a new file that needs the exclusive
    /// lock, and when other processes open the same new file at once SQLite returns "database
    /// is locked" at once rather than wait (deadlock avoidance), so the switch is retried for up
    /// to [`OPEN_WAIT`].
    fn switch_to_wal(&self) -> Result<()> {
        let deadline = std::time::Instant::now() + OPEN_WAIT;
        loop {
            match self.conn.pragma_update(None, "journal_mode", "WAL") {
                Ok(()) => return Ok(()),
                Err(source) => {
                    let e = StoreError::Sqlite {
                        path: self.path.clone(),
                        source,
                    };
                    if !e.is_busy() || std::time::Instant::now() > deadline {
                        return Err(e);
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
            }
        }
    }

    fn user_version(&self) -> Result<i64> {
        self.conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .map_err(self.err())
    }

    /// A version-0 file must be empty: a SQLite database of another program is refused.
    ///
    /// The version and the tables are read in one statement, so from one snapshot: read
    /// separately, another rtscope creating the same new file in between (its schema and
    /// version are one transaction) made a half-seen file look like another program's.
    fn check_empty_or_ours(conn: &Connection, path: &Path) -> Result<()> {
        let (version, tables): (i64, i64) = conn
            .query_row(
                "SELECT (SELECT user_version FROM pragma_user_version), \
                        (SELECT count(*) FROM sqlite_master)",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .map_err(|source| StoreError::Sqlite {
                path: path.to_path_buf(),
                source,
            })?;
        if version == 0 && tables > 0 {
            return Err(StoreError::NotADatabase {
                path: path.to_path_buf(),
                why: "it is a SQLite database of another program".into(),
            });
        }
        Ok(())
    }
}

/// Whether SQLite's error `e` says the disk is full: `SQLITE_FULL`; a `-shm` file that could
/// not grow (`SQLITE_IOERR_SHMSIZE`, its one cause being space); or an I/O error whose system
/// error (`errno`, when the connection is there to ask) is ENOSPC or EDQUOT.
fn says_full(e: &rusqlite::Error, errno: Option<i32>) -> bool {
    const SQLITE_IOERR_SHMSIZE: i32 = rusqlite::ffi::SQLITE_IOERR | (19 << 8);
    let rusqlite::Error::SqliteFailure(f, _) = e else {
        return false;
    };
    let no_space = errno.is_some_and(|n| {
        matches!(
            std::io::Error::from_raw_os_error(n).kind(),
            std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded
        )
    });
    match f.code {
        rusqlite::ErrorCode::DiskFull => true,
        rusqlite::ErrorCode::SystemIoFailure => f.extended_code == SQLITE_IOERR_SHMSIZE || no_space,
        _ => false,
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod full_disk_tests {
    use super::*;

    fn failure(code: i32) -> rusqlite::Error {
        rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(code), None)
    }

    #[test]
    fn a_full_disk_is_told_from_other_io_errors() {
        let full = rusqlite::ffi::SQLITE_FULL;
        let io = rusqlite::ffi::SQLITE_IOERR;
        let shm = io | (19 << 8); // SQLITE_IOERR_SHMSIZE: 4874, the reader's error of issue 67
        assert_eq!(shm, 4874);
        assert!(says_full(&failure(full), None));
        assert!(says_full(&failure(shm), None));
        // A plain write error is the full disk only when the system said "no space".
        let write = io | (3 << 8);
        assert!(!says_full(&failure(write), None));
        assert!(!says_full(&failure(write), Some(5))); // EIO
        assert!(says_full(&failure(write), Some(28))); // ENOSPC
        assert!(says_full(&failure(write), Some(122))); // EDQUOT
        assert!(!says_full(
            &failure(rusqlite::ffi::SQLITE_READONLY),
            Some(28)
        ));
        let path = Path::new("/d/x.db");
        let e = Store::classify(path, failure(shm));
        assert!(matches!(e, StoreError::DiskFull { .. }), "{e:?}");
        assert!(
            e.to_string()
                .starts_with("database /d/x.db: the disk holding it is full"),
            "{e}"
        );
        assert!(
            e.hint().starts_with("free space on the file system"),
            "{}",
            e.hint()
        );
    }

    /// A `-wal` file with frames is found (through a symlink, beside the file it leads to); a
    /// header alone or none is not.
    #[test]
    fn a_wal_with_frames_is_found_beside_the_real_file() {
        let dir = std::env::temp_dir().join(format!("rtscope-wal-frames-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let db = dir.join("r.db");
        std::fs::write(&db, b"").unwrap();
        let link = dir.join("l.db");
        std::os::unix::fs::symlink(&db, &link).unwrap();
        assert_eq!(Store::wal_with_frames(&link), None);
        std::fs::write(dir.join("r.db-wal"), [0u8; 32]).unwrap();
        assert_eq!(Store::wal_with_frames(&link), None);
        std::fs::write(dir.join("r.db-wal"), [0u8; 33]).unwrap();
        let wal = Store::wal_with_frames(&link).unwrap();
        assert_eq!(wal, dir.canonicalize().unwrap().join("r.db-wal"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
