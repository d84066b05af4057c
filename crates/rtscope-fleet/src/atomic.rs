//! Writing a file whole or not at all, never through a symlink: the content goes into a new
//! temporary file in the same directory (created exclusively, so an existing file or symlink
//! under that name is never opened), is synced, and is renamed over the target. A reader (the
//! node_exporter textfile collector, a CI job) sees the old file or the new one, never half;
//! a symlink at the target is replaced, not followed.

use crate::FleetError;
use std::fs::OpenOptions;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

fn temp_path(path: &Path, attempt: u32) -> PathBuf {
    let name = path
        .file_name()
        .map_or_else(|| "out".into(), |n| n.to_string_lossy().into_owned());
    path.with_file_name(format!(".{name}.{}.{attempt}.tmp", std::process::id()))
}

/// Writes `path` through `body` atomically (see the module docs). Errors name the file.
pub fn write_atomic(
    path: &Path,
    body: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<(), FleetError> {
    let err = |source| FleetError::Write {
        path: path.display().to_string(),
        source,
    };
    let mut attempt = 0;
    let (tmp, file) = loop {
        let tmp = temp_path(path, attempt);
        match OpenOptions::new().write(true).create_new(true).open(&tmp) {
            Ok(f) => break (tmp, f),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && attempt < 16 => attempt += 1,
            Err(e) => return Err(err(e)),
        }
    };
    let result = (|| {
        let mut w = BufWriter::new(file);
        body(&mut w)?;
        w.into_inner().map_err(|e| e.into_error())?.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    result.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        err(e)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("rtscope-fleet-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn replaces_a_symlink_instead_of_writing_through_it() {
        let d = dir("symlink");
        let victim = d.join("victim");
        std::fs::write(&victim, "keep").unwrap();
        let target = d.join("metrics.prom");
        std::os::unix::fs::symlink(&victim, &target).unwrap();
        write_atomic(&target, |w| w.write_all(b"new\n")).unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "new\n");
        assert!(!std::fs::symlink_metadata(&target).unwrap().is_symlink());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_failed_write_leaves_the_old_file_and_no_temporary() {
        let d = dir("fail");
        let target = d.join("m.prom");
        std::fs::write(&target, "old").unwrap();
        let e = write_atomic(&target, |_| Err(std::io::Error::other("disk full"))).unwrap_err();
        assert!(e.to_string().contains("disk full") && e.to_string().contains("m.prom"));
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "old");
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 1);
        std::fs::remove_dir_all(&d).unwrap();
    }
}
