//! The file I/O load: `threads` threads each write a `file_mb` MiB file in 1 MiB writes,
//! `fsync` it, and start over, in a scratch directory `rtscope-load-io-<pid>` made under `dir`
//! (default: the system temp directory) and removed when the load finishes.
//!
//! Reports `written` (bytes), `write_rate` (MB/s, 10^6 bytes per second) and `fsyncs`.
//! The directory is removed by [`Running::finish`]; the worker calls it on SIGTERM and SIGINT
//! too. Only a SIGKILL of the worker itself can leave it behind.

use super::{rate, Outcome, Running, Stop, Workers};
use crate::{LoadError, Metric};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Bytes per write call.
const BLOCK: usize = 1 << 20;

/// Creates the scratch directory under `dir` and starts the writer threads.
pub fn start(
    threads: u32,
    dir: Option<&Path>,
    file_mb: u64,
    stop: &Stop,
) -> Result<Box<dyn Running>, LoadError> {
    let base = dir.map_or_else(std::env::temp_dir, Path::to_path_buf);
    let scratch = Arc::new(Scratch::create(&base)?);
    let s = Arc::clone(&scratch);
    let w = Workers::spawn(threads, "io", stop, move |i, stop| {
        write_loop(&s.0.join(format!("load-{i}.dat")), file_mb, stop)
    })?;
    Ok(Box::new(Io { w, scratch }))
}

/// The scratch directory; removed (with its files) on drop.
#[derive(Debug)]
pub struct Scratch(pub PathBuf);

impl Scratch {
    fn create(base: &Path) -> Result<Scratch, LoadError> {
        let path = base.join(format!("rtscope-load-io-{}", std::process::id()));
        std::fs::create_dir(&path).map_err(|source| LoadError::Path {
            what: "cannot create the io load's scratch directory",
            path: path.clone(),
            source,
        })?;
        Ok(Scratch(path))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Bytes written and fsyncs done by one thread.
type Counts = (u64, u64);

fn write_loop(path: &Path, file_mb: u64, stop: &Stop) -> Result<Counts, LoadError> {
    let block = vec![0x5Au8; BLOCK];
    let (mut written, mut fsyncs) = (0u64, 0u64);
    let err = |what, source| LoadError::Path {
        what,
        path: path.to_path_buf(),
        source,
    };
    while !stop.is_set() {
        let mut f = std::fs::File::create(path).map_err(|e| err("cannot create", e))?;
        for _ in 0..file_mb.max(1) {
            if stop.is_set() {
                return Ok((written, fsyncs));
            }
            f.write_all(&block).map_err(|e| err("cannot write", e))?;
            written += BLOCK as u64;
        }
        f.sync_all().map_err(|e| err("cannot fsync", e))?;
        fsyncs += 1;
    }
    Ok((written, fsyncs))
}

struct Io {
    w: Workers<Counts>,
    scratch: Arc<Scratch>,
}

impl Running for Io {
    fn finish(self: Box<Self>) -> Outcome {
        let (counts, error, took) = self.w.join();
        drop(self.scratch); // the threads' clones are gone: this removes the directory
        let written = counts.iter().map(|c| c.0).sum::<u64>() as f64;
        let fsyncs = counts.iter().map(|c| c.1).sum::<u64>() as f64;
        Outcome {
            metrics: vec![
                Metric::new("written", written, "bytes"),
                Metric::new("write_rate", rate(written, took) / 1e6, "MB/s"),
                Metric::new("fsyncs", fsyncs, "fsyncs"),
            ],
            error,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_fsyncs_and_removes_its_directory() {
        let base = std::env::temp_dir().join(format!("rtscope-io-unit-{}", std::process::id()));
        std::fs::create_dir_all(&base).unwrap();
        let stop = Stop::new();
        let load = start(1, Some(&base), 1, &stop).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(300));
        assert_eq!(std::fs::read_dir(&base).unwrap().count(), 1);
        stop.set();
        let out = load.finish();
        assert!(out.error.is_none(), "{:?}", out.error);
        assert!(out.metrics[0].value >= BLOCK as f64);
        assert!(out.metrics[2].value >= 1.0, "{:?}", out.metrics);
        assert_eq!(std::fs::read_dir(&base).unwrap().count(), 0);
        std::fs::remove_dir(&base).unwrap();
    }

    #[test]
    fn a_missing_base_directory_is_named() {
        let e = start(1, Some(Path::new("/nonexistent/rtscope")), 1, &Stop::new())
            .err()
            .unwrap();
        assert!(e.to_string().contains("/nonexistent/rtscope"), "{e}");
    }
}
