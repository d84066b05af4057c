//! Writing a fleet output (`--ci-output`, `--metrics-file`, exports): a regular file whole or
//! not at all (a reader such as the node_exporter textfile collector sees the old file or the
//! new one, never half), a device written through, a symlink refused — rtscope-common's
//! `outfile`, the one writer of every front end.

use crate::FormatError;
use std::io::Write;
use std::path::Path;

/// Writes `path` through `body` by rtscope-common's one rule (a regular file replaced whole,
/// a device or FIFO written through, a symlink refused unless `--follow-symlinks`; see
/// `rtscope_common::outfile`). Errors name the file.
pub fn write_atomic(
    path: &Path,
    body: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<(), FormatError> {
    rtscope_common::outfile::write(path, &mut std::io::stdout(), body).map_err(|e| {
        FormatError::Write {
            path: path.display().to_string(),
            source: std::io::Error::other(e),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::path::PathBuf;

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("rtscope-formats-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// A planted symlink is refused, its target untouched (it used to be replaced).
    #[test]
    fn a_symlink_is_refused_never_written_through() {
        let d = dir("symlink");
        let victim = d.join("victim");
        std::fs::write(&victim, "keep").unwrap();
        let target = d.join("metrics.prom");
        std::os::unix::fs::symlink(&victim, &target).unwrap();
        let e = write_atomic(&target, |w| w.write_all(b"new\n")).unwrap_err();
        assert!(e.to_string().contains("symlink"), "{e}");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
        assert!(std::fs::symlink_metadata(&target).unwrap().is_symlink());
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
