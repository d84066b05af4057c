//! `rtscope measure --metrics-file FILE`: the Prometheus textfile of a running measurement,
//! rewritten atomically from the control thread at every series interval and at the end (never
//! from a measuring thread).

use crate::output::parse_limits;
use crate::{FleetError, Report};
use rtscope_core::{Histogram, Stats};
use rtscope_engine::{Run, RunResult};
use rtscope_session::limits::Limit;
use rtscope_session::record::parse_tag;
use rtscope_store::RunStatus;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// The textfile of one running measurement.
pub struct MetricsFile {
    path: PathBuf,
    board: String,
    label: String,
    limits: Vec<Limit>,
    warned: bool,
}

/// Seconds since the Unix epoch.
fn unix_s(t: SystemTime) -> f64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// The board name of this host: `--tag board=…`, else the host name, else `local`.
pub fn board(tags: &[String]) -> String {
    tags.iter()
        .filter_map(|t| parse_tag(t).ok())
        .find(|(k, v)| k == "board" && !v.is_empty())
        .map(|(_, v)| v)
        .or_else(|| {
            std::fs::read_to_string("/proc/sys/kernel/hostname")
                .ok()
                .map(|h| h.trim().to_string())
                .filter(|h| !h.is_empty())
        })
        .unwrap_or_else(|| "local".into())
}

impl MetricsFile {
    /// Writes an empty textfile at `path` (before the run starts, so an unwritable path is a
    /// usage error before anything is measured).
    pub fn new(
        path: &Path,
        tags: &[String],
        label: Option<&str>,
        limit_texts: &[String],
    ) -> Result<MetricsFile, FleetError> {
        let m = MetricsFile {
            path: path.to_path_buf(),
            board: board(tags),
            label: label.unwrap_or_default().to_string(),
            limits: parse_limits(limit_texts)?,
            warned: false,
        };
        let now = unix_s(SystemTime::now());
        m.write(&Report::live(
            &m.board,
            &m.label,
            [],
            &[],
            0.0,
            now,
            RunStatus::Running,
        ))?;
        Ok(m)
    }

    fn write(&self, r: &Report) -> Result<(), FleetError> {
        crate::write_atomic(&self.path, |w| crate::prometheus::write(w, r))
    }

    /// At a tick: the threads' statistics so far.
    pub fn update(&mut self, run: &Run) {
        let threads = run.threads().iter().enumerate().map(|(i, t)| {
            (
                i as u32,
                t.cpu().map(|c| c as u32),
                t.stats(),
                t.histogram(),
            )
        });
        let measured = run.started().elapsed().map_or(0.0, |d| d.as_secs_f64());
        let now = unix_s(SystemTime::now());
        self.put(threads, measured, now, RunStatus::Running);
    }

    /// At the end: the final statistics.
    pub fn finish(&mut self, result: &RunResult, interrupted: bool) {
        let threads = result.threads.iter().map(|t| {
            (
                t.index as u32,
                t.cpu.map(|c| c as u32),
                t.stats,
                t.histogram.clone(),
            )
        });
        let measured = result
            .ended
            .duration_since(result.started)
            .map_or(0.0, |d| d.as_secs_f64());
        let status = if interrupted {
            RunStatus::Interrupted
        } else {
            RunStatus::Complete
        };
        self.put(threads, measured, unix_s(result.ended), status);
    }

    /// Writes the report of `threads`; a failure is warned about once, and the run goes on.
    fn put(
        &mut self,
        threads: impl IntoIterator<Item = (u32, Option<u32>, Stats, Histogram)>,
        measured_s: f64,
        end_unix_s: f64,
        status: RunStatus,
    ) {
        let (board, label) = (&self.board, &self.label);
        let r = Report::live(
            board,
            label,
            threads,
            &self.limits,
            measured_s,
            end_unix_s,
            status,
        );
        if let Err(e) = self.write(&r) {
            if !self.warned {
                rtscope_session::output::warn(&format!(
                    "rtscope: warning: --metrics-file: {e} (the run goes on)"
                ));
                self.warned = true;
            }
        }
    }
}
