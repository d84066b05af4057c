//! Output that never loses a run: a standard output that may close under us, and result files
//! checked before the measurement and written without following planted symlinks.
//!
//! * [`Guarded`]: a writer whose failures (a closed pipe, `rtscope measure | head -1`) are
//!   remembered instead of returned, so that the run is still recorded and the exit code is
//!   still the gate's;
//! * `rtscope_common::outfile::AtomicFile`: a new file written under a temporary name created
//!   with `O_CREAT|O_EXCL|O_NOFOLLOW`, renamed over the target once complete;
//! * [`OutputFile`]: `--json PATH` and the like, opened before measuring (exit 2 on a missing
//!   directory or a directory), `-` meaning standard output.

use rtscope_common::error::UsageError;
use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// A writer that swallows its inner writer's errors after remembering the first one; output
/// after a failure is dropped.
pub struct Guarded<W: Write> {
    inner: W,
    error: Option<io::Error>,
}

impl<W: Write> Guarded<W> {
    /// Wraps `inner`.
    pub fn new(inner: W) -> Self {
        Guarded { inner, error: None }
    }

    /// The first error the inner writer returned.
    pub fn error(&self) -> Option<&io::Error> {
        self.error.as_ref()
    }

    /// Whether the inner writer failed (its output is gone from then on).
    pub fn failed(&self) -> bool {
        self.error.is_some()
    }

    /// The error that lost text the user asked for: any but a closed pipe (`| head -1` is the
    /// reader's choice: the documented quiet exit, which changes no exit code).
    pub fn lost(&self) -> Option<&io::Error> {
        self.error
            .as_ref()
            .filter(|e| e.kind() != io::ErrorKind::BrokenPipe)
    }

    /// The exit status once the output is done: after a lost output ([`Guarded::lost`]: a
    /// full disk, `/dev/full`, EIO) says so on stderr (`what` names the output, `kept` what was
    /// not lost) and turns a success into exit 2 (a failed limit or an interruption keeps its
    /// own code); otherwise `status` as it is. The one rule of every command whose stdout is
    /// guarded.
    pub fn verdict(
        &self,
        status: rtscope_common::error::ExitStatus,
        what: &str,
        kept: &str,
    ) -> rtscope_common::error::ExitStatus {
        if let Some(e) = self.lost() {
            rtscope_common::error::warn(&format!(
                "error: cannot write {what} to standard output: {e}{kept}"
            ));
        }
        self.status_after(status)
    }

    /// [`Guarded::verdict`]'s exit status without a word: for a document that states the exit
    /// code it will end with (a JSON file written before the end).
    pub fn status_after(
        &self,
        status: rtscope_common::error::ExitStatus,
    ) -> rtscope_common::error::ExitStatus {
        match (self.lost(), status) {
            (Some(_), rtscope_common::error::ExitStatus::Success) => {
                rtscope_common::error::ExitStatus::Usage
            }
            _ => status,
        }
    }

    fn keep(&mut self, r: io::Result<()>) {
        if let Err(e) = r {
            self.error.get_or_insert(e);
        }
    }
}

impl<W: Write> Write for Guarded<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.error.is_none() {
            let r = self.inner.write_all(buf);
            self.keep(r);
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.error.is_none() {
            let r = self.inner.flush();
            self.keep(r);
        }
        Ok(())
    }
}

use rtscope_common::outfile::{open_special, AtomicFile, Dest};

/// A result file that could not be written at the end of a run.
#[derive(Debug, thiserror::Error)]
#[error("error: cannot write '{path}' ({flag}): {source}")]
pub struct WriteError {
    /// The file (`-`: standard output), escaped for a terminal.
    pub path: String,
    /// The option that named it.
    pub flag: &'static str,
    /// Why.
    #[source]
    pub source: io::Error,
}

/// A result file named on the command line, opened before the run.
pub enum OutputFile {
    /// `-`: standard output.
    Stdout,
    /// A regular file (new, or replaced once the run is written).
    File(AtomicFile),
    /// A device, FIFO or socket that exists already (`/dev/stdout`, `/dev/null`): written in
    /// place.
    Special(File, PathBuf),
}

impl OutputFile {
    /// [`OutputFile::prepare`] when the option was given (`--json FILE`), `None` when not.
    pub fn prepare_given(
        path: Option<&Path>,
        flag: &str,
    ) -> Result<Option<OutputFile>, UsageError> {
        path.map(|p| OutputFile::prepare(p, flag)).transpose()
    }

    /// Opens `path` for `flag` (`--json`): `-` is standard output; a directory, a missing
    /// directory or an unwritable one is a usage error now, before anything is measured.
    pub fn prepare(path: &Path, flag: &str) -> Result<OutputFile, UsageError> {
        let err = |e: &dyn std::fmt::Display| {
            UsageError::new(format!(
                "cannot write '{}' ({flag}): {e}",
                rtscope_core::text::escape(&path.display().to_string())
            ))
        };
        // rtscope-common's one rule: `-` and /dev/stdout are stdout, a device is written
        // through, a symlink refused (unless --follow-symlinks), a regular file replaced whole.
        let dest = Dest::resolve(path).map_err(|e| UsageError::new(format!("{flag}: {e}")))?;
        match dest {
            Dest::Stdout => Ok(OutputFile::Stdout),
            Dest::Special(p) => open_special(&p)
                .map(|f| OutputFile::Special(f, p))
                .map_err(|e| err(&e)),
            Dest::Regular(p) => AtomicFile::create(&p)
                .map(OutputFile::File)
                .map_err(|e| err(&e)),
        }
    }

    /// Whether this is standard output.
    pub fn is_stdout(&self) -> bool {
        matches!(self, OutputFile::Stdout)
    }

    /// Writes `body` (to `stdout` for `-`) and puts the file in place; the error names the
    /// file and the flag, its cause kept.
    pub fn write(
        self,
        body: &[u8],
        stdout: &mut dyn Write,
        flag: &'static str,
    ) -> Result<(), WriteError> {
        let (path, r) = match self {
            OutputFile::Stdout => (
                PathBuf::from("-"),
                stdout.write_all(body).and_then(|()| stdout.flush()),
            ),
            OutputFile::File(mut f) => {
                let path = f.target().to_path_buf();
                let r = f.write_all(body).and_then(|()| f.commit());
                (path, r)
            }
            OutputFile::Special(mut f, path) => {
                let r = f.write_all(body).and_then(|()| f.flush());
                (path, r)
            }
        };
        r.map_err(|source| WriteError {
            path: rtscope_core::text::escape(&path.display().to_string()).into_owned(),
            flag,
            source,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("rtscope-output-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn guarded_remembers_the_first_error_and_accepts_the_rest() {
        struct Broken;
        impl Write for Broken {
            fn write(&mut self, _: &[u8]) -> io::Result<usize> {
                Err(io::ErrorKind::BrokenPipe.into())
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let mut g = Guarded::new(Broken);
        writeln!(g, "one").unwrap();
        writeln!(g, "two").unwrap();
        assert_eq!(g.error().unwrap().kind(), io::ErrorKind::BrokenPipe);
    }

    #[test]
    fn missing_directory_and_directory_are_refused_before_the_run() {
        let d = dir("refuse");
        let e = OutputFile::prepare(&d.join("nope/out.json"), "--json")
            .err()
            .unwrap();
        assert!(e.to_string().contains("does not exist"), "{e}");
        let e = OutputFile::prepare(&d, "--json").err().unwrap();
        assert!(e.to_string().contains("directory"), "{e}");
    }

    #[test]
    fn a_planted_symlink_is_refused_before_the_run() {
        let d = dir("symlink");
        let victim = d.join("victim");
        std::fs::write(&victim, "keep").unwrap();
        std::os::unix::fs::symlink(&victim, d.join("out.json")).unwrap();
        let e = OutputFile::prepare(&d.join("out.json"), "--json")
            .err()
            .unwrap();
        assert!(e.to_string().contains("symlink"), "{e}");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
        let left: Vec<_> = std::fs::read_dir(&d).unwrap().collect();
        assert_eq!(left.len(), 2, "no temporary file left");
    }

    #[test]
    fn a_device_is_written_in_place_and_its_failure_named() {
        let f = OutputFile::prepare(Path::new("/dev/full"), "--json").unwrap();
        let e = f
            .write(b"{}\n", &mut io::sink(), "--json")
            .unwrap_err()
            .to_string();
        assert!(e.contains("/dev/full") && e.contains("--json"), "{e}");
    }

    #[test]
    fn an_uncommitted_file_is_removed() {
        let d = dir("drop");
        drop(OutputFile::prepare(&d.join("x.json"), "--json").unwrap());
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 0);
    }
}
