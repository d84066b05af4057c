//! The one way rtscope writes an output file (`--json`, `--ci-output`, `--metrics-file`,
//! exports, the report's files). rtscope runs as root, so a name given on the command line may
//! be a device, a FIFO or a symlink someone planted:
//!
//! * `-` and `/dev/stdout` mean standard output;
//! * an existing device, FIFO or socket (`/dev/null`, a named pipe a harness reads) is written
//!   through, never renamed over (`--ci-output junit=/dev/null` replaced `/dev/null` with a
//!   regular file for the whole system);
//! * a symlink is refused, unless `--follow-symlinks` ([`set_follow_symlinks`]) says to write
//!   where it points;
//! * a regular file (or a new one) is written whole or not at all: a new temporary file next to
//!   it, created with `O_CREAT|O_EXCL|O_NOFOLLOW`, synced and renamed over it;
//! * every write error (a full disk, `/dev/full`, EIO) is returned, naming the file.
//!
//! [`Dest::resolve`] classifies a path before a run, so a bad one fails before anything is
//! measured; [`write`] and [`AtomicFile`] do the writing.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

static FOLLOW_SYMLINKS: AtomicBool = AtomicBool::new(false);

/// `--follow-symlinks`: output paths that are symlinks are written where they point (the
/// target classified as any other path) instead of refused. Set once at start.
pub fn set_follow_symlinks(on: bool) {
    FOLLOW_SYMLINKS.store(on, Ordering::Relaxed);
}

fn follow_symlinks() -> bool {
    FOLLOW_SYMLINKS.load(Ordering::Relaxed)
}

/// Why an output path cannot be written.
#[derive(Debug, thiserror::Error)]
pub enum OutError {
    /// The path is a directory.
    #[error("cannot write {path}: it is a directory")]
    Directory {
        /// The path.
        path: String,
    },
    /// The directory the file would go into does not exist.
    #[error("cannot write {path}: the directory {dir} does not exist")]
    NoDirectory {
        /// The path.
        path: String,
        /// Its directory.
        dir: String,
    },
    /// The path is a symlink and `--follow-symlinks` was not given.
    #[error("cannot write {path}: it is a symlink (to {target}); rtscope does not write through symlinks\n\nhint: name the file itself, or pass --follow-symlinks to write where it points")]
    Symlink {
        /// The path.
        path: String,
        /// Where it points.
        target: String,
    },
    /// Opening, writing, syncing or renaming failed.
    #[error("cannot write {path}: {source}")]
    Io {
        /// The path (`standard output` for stdout).
        path: String,
        /// Why.
        source: io::Error,
    },
}

impl OutError {
    /// The I/O error behind this one, if any (a closed pipe is told apart by its kind).
    pub fn io_kind(&self) -> Option<io::ErrorKind> {
        match self {
            OutError::Io { source, .. } => Some(source.kind()),
            _ => None,
        }
    }
}

/// Where an output path leads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Dest {
    /// `-` or `/dev/stdout`: standard output.
    Stdout,
    /// A regular file, new or replaced whole.
    Regular(PathBuf),
    /// An existing device, FIFO or socket: written through.
    Special(PathBuf),
}

/// A path as it is shown in messages: control characters escaped (it is untrusted).
fn shown(p: &Path) -> String {
    let s = p.display().to_string();
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_control() {
            out.push_str(&format!("\\x{:02x}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

fn is_special(t: &std::fs::FileType) -> bool {
    t.is_char_device() || t.is_block_device() || t.is_fifo() || t.is_socket()
}

impl Dest {
    /// Classifies `path` (see the module docs); a directory, a missing directory or a symlink
    /// (without `--follow-symlinks`) is an error now, before anything runs.
    pub fn resolve(path: &Path) -> Result<Dest, OutError> {
        if path.as_os_str() == "-" || path == Path::new("/dev/stdout") {
            return Ok(Dest::Stdout);
        }
        let is_link = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
        if is_link {
            if !follow_symlinks() {
                let target = std::fs::read_link(path).unwrap_or_default();
                return Err(OutError::Symlink {
                    path: shown(path),
                    target: shown(&target),
                });
            }
            // --follow-symlinks: the path the link chain ends at, existing or not, is the
            // one classified and written.
            return Dest::resolve(&link_target(path)?);
        }
        let meta = std::fs::symlink_metadata(path).ok();
        match meta {
            Some(m) if m.is_dir() => {
                return Err(OutError::Directory { path: shown(path) });
            }
            Some(m) if is_special(&m.file_type()) => return Ok(Dest::Special(path.into())),
            _ => {}
        }
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        if !dir.is_dir() {
            return Err(OutError::NoDirectory {
                path: shown(path),
                dir: shown(dir),
            });
        }
        Ok(Dest::Regular(path.to_path_buf()))
    }
}

/// Where the symlink chain at `path` ends (at most 40 links, as the kernel allows).
fn link_target(path: &Path) -> Result<PathBuf, OutError> {
    let mut p = path.to_path_buf();
    for _ in 0..40 {
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let next = std::fs::read_link(&p).map_err(|source| OutError::Io {
                    path: shown(&p),
                    source,
                })?;
                p = match p.parent() {
                    Some(dir) if next.is_relative() => dir.join(next),
                    _ => next,
                };
            }
            _ => return Ok(p),
        }
    }
    Err(OutError::Io {
        path: shown(path),
        source: io::Error::from_raw_os_error(libc::ELOOP),
    })
}

/// Creates `path` as a new file: fails if anything (a file, a symlink) is already there.
pub fn create_new(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .mode(0o644)
        .open(path)
}

/// A regular file written under a temporary name in its directory and renamed over it by
/// [`AtomicFile::commit`]; removed when dropped uncommitted.
pub struct AtomicFile {
    target: PathBuf,
    tmp: PathBuf,
    file: Option<io::BufWriter<File>>,
}

impl AtomicFile {
    /// Creates the temporary file next to `target` (which checks that its directory exists
    /// and is writable). `target` should have been [`Dest::resolve`]d as regular.
    pub fn create(target: &Path) -> io::Result<AtomicFile> {
        let name = target
            .file_name()
            .map_or_else(|| "out".into(), |n| n.to_string_lossy().into_owned());
        let mut last = None;
        for attempt in 0..16u32 {
            let tmp =
                target.with_file_name(format!(".{name}.{}.{attempt}.partial", std::process::id()));
            match create_new(&tmp) {
                Ok(f) => {
                    return Ok(AtomicFile {
                        target: target.to_path_buf(),
                        tmp,
                        file: Some(io::BufWriter::new(f)),
                    })
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some(e),
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or_else(|| io::Error::other("no temporary name")))
    }

    /// The file written.
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Syncs the file and renames it over the target.
    pub fn commit(mut self) -> io::Result<()> {
        let Some(w) = self.file.take() else {
            return Err(io::Error::other("committed twice"));
        };
        let f = w.into_inner().map_err(|e| e.into_error())?;
        f.sync_all()?;
        std::fs::rename(&self.tmp, &self.target)
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self.file.as_mut() {
            Some(f) => f.write(buf),
            None => Err(io::Error::other("written after commit")),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self.file.as_mut() {
            Some(f) => f.flush(),
            None => Ok(()),
        }
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if self.file.take().is_some() {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

/// Opens an existing device, FIFO or socket for writing through (no create, no truncate).
pub fn open_special(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_CLOEXEC)
        .open(path)
}

/// Writes `path` through `body` by the rules of the module docs; `stdout` is what `-` means.
/// Every write error is returned, naming the file.
pub fn write(
    path: &Path,
    stdout: &mut dyn Write,
    body: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<(), OutError> {
    let dest = Dest::resolve(path)?;
    write_to(&dest, stdout, body)
}

/// [`write`] to a destination resolved before.
pub fn write_to(
    dest: &Dest,
    stdout: &mut dyn Write,
    body: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<(), OutError> {
    fn io_err(p: &Path) -> impl Fn(io::Error) -> OutError + '_ {
        move |source| OutError::Io {
            path: shown(p),
            source,
        }
    }
    match dest {
        Dest::Stdout => body(stdout)
            .and_then(|()| stdout.flush())
            .map_err(io_err(Path::new("standard output"))),
        Dest::Special(p) => {
            let mut f = open_special(p).map_err(io_err(p))?;
            body(&mut f).and_then(|()| f.flush()).map_err(io_err(p))
        }
        Dest::Regular(p) => {
            let mut f = AtomicFile::create(p).map_err(io_err(p))?;
            body(&mut f).and_then(|()| f.commit()).map_err(io_err(p))
        }
    }
}

#[cfg(test)]
mod tests;
