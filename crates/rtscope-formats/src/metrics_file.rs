//! `rtscope measure --metrics-file FILE`: the Prometheus textfile of a running measurement,
//! rewritten atomically from the control thread at every series interval and at the end (never
//! from a measuring thread). It is handed each thread's statistics as plain data
//! ([`MetricsFile::put`]); the measurement reads them from its live threads.

use crate::output::parse_limits;
use crate::{FormatError, Report};
use rtscope_common::limits::Limit;
use rtscope_common::names::parse_tag;
use rtscope_core::{Histogram, Stats};
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
pub fn unix_s(t: SystemTime) -> f64 {
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
    ) -> Result<MetricsFile, FormatError> {
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

    fn write(&self, r: &Report) -> Result<(), FormatError> {
        crate::atomic::write_atomic(&self.path, |w| crate::prometheus::write(w, r))
    }

    /// Writes the report of `threads` (index, CPU, statistics, histogram) measured for
    /// `measured_s` seconds up to `end_unix_s`; a failure is warned about once, and the run goes
    /// on.
    pub fn put(
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
                rtscope_common::error::warn(&format!(
                    "rtscope: warning: --metrics-file: {e} (the run goes on)"
                ));
                self.warned = true;
            }
        }
    }
}
