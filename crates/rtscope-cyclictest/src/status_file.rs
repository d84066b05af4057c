//! cyclictest's running-status file, `/dev/shm/cyclictest<PID>`: it exists for the whole run,
//! and SIGUSR2 writes the current status into it — the `#---` block of SIGUSR1 with one `T:`
//! line per thread. rt-tests' `get_cyclictest_snapshot` finds running instances by these files
//! (the PID is the name's trailing digits), sends them SIGUSR2 and prints the files.
//!
//! The file is written by the control thread (the session's observer), never by a measuring
//! thread. It is created with `O_CREAT|O_EXCL|O_NOFOLLOW` after removing a stale entry of the
//! same name (`unlink` removes a symlink itself, never its target), written through the
//! descriptor only, and removed when the [`StatusFile`] is dropped — on every exit path but
//! SIGKILL — if the name still refers to it.

use std::fs::File;
use std::io;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};

/// Where cyclictest's status files live (`shm_open("/cyclictest<PID>")`).
pub const SHM_DIR: &str = "/dev/shm";

/// The status file of this process, removed when dropped.
#[derive(Debug)]
pub struct StatusFile {
    file: File,
    path: PathBuf,
    /// (device, inode) of the file created, to remove only that one.
    id: (u64, u64),
}

impl StatusFile {
    /// Creates `/dev/shm/cyclictest<PID>` for this process.
    pub fn create() -> io::Result<StatusFile> {
        StatusFile::create_in(Path::new(SHM_DIR), std::process::id())
    }

    /// Creates `DIR/cyclictest<pid>`, empty. A stale entry of that name (a process with the
    /// same PID that was killed) is removed first, a symlink as a symlink.
    pub fn create_in(dir: &Path, pid: u32) -> io::Result<StatusFile> {
        let path = dir.join(format!("cyclictest{pid}"));
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
        let file = rtscope_common::outfile::create_new(&path)?;
        let m = file.metadata()?;
        Ok(StatusFile {
            file,
            path,
            id: (m.dev(), m.ino()),
        })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Replaces the file's content with `text`: written from the start, then cut to its
    /// length, so a reader never finds it empty once it held a status.
    pub fn write(&self, text: &str) -> io::Result<()> {
        self.file.write_all_at(text.as_bytes(), 0)?;
        self.file.set_len(text.len() as u64)
    }
}

impl Drop for StatusFile {
    fn drop(&mut self) {
        let ours = std::fs::symlink_metadata(&self.path)
            .is_ok_and(|m| (m.dev(), m.ino()) == self.id && m.file_type().is_file());
        if ours {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("rtscope-status-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn the_file_holds_the_last_status_and_is_removed_when_dropped() {
        let d = dir("content");
        let f = StatusFile::create_in(&d, 4242).unwrap();
        let path = d.join("cyclictest4242");
        assert_eq!(f.path(), path);
        assert_eq!(
            std::fs::read(&path).unwrap(),
            b"",
            "empty until the first SIGUSR2"
        );
        f.write("a longer status\n").unwrap();
        f.write("short\n").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "short\n");
        f.write("longer again\n").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "longer again\n");
        drop(f);
        assert!(!path.exists(), "removed on drop");
    }

    #[test]
    fn a_planted_symlink_is_removed_never_written_through() {
        let d = dir("symlink");
        let target = d.join("victim");
        std::fs::write(&target, "precious").unwrap();
        let path = d.join("cyclictest7");
        std::os::unix::fs::symlink(&target, &path).unwrap();
        let f = StatusFile::create_in(&d, 7).unwrap();
        f.write("status\n").unwrap();
        assert!(!std::fs::symlink_metadata(&path).unwrap().is_symlink());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "precious");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "status\n");
        drop(f);
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "precious");
    }

    #[test]
    fn a_file_put_in_its_place_is_not_removed() {
        let d = dir("replaced");
        let f = StatusFile::create_in(&d, 9).unwrap();
        let path = f.path().to_path_buf();
        std::fs::remove_file(&path).unwrap();
        std::fs::write(&path, "someone else's").unwrap();
        drop(f);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "someone else's");
    }
}
