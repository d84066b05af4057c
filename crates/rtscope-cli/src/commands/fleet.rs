//! The fleet formats (rtscope-fleet) for `rtscope export --format prometheus|lava|kcidb|junit`
//! and `rtscope measure --metrics-file`.

use crate::cli::{ExportArgs, ExportFormat};
use anyhow::Context;
use rtscope_engine::{Run, RunResult};
use rtscope_fleet::{kcidb, name_part, Report};
use rtscope_session::limits::{self, Limit};
use rtscope_session::record::parse_tag;
use rtscope_session::{RunStatus, UsageError};
use rtscope_store::{RunId, Store};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

fn parse_limits(texts: &[String]) -> Result<Vec<Limit>, UsageError> {
    texts.iter().map(|l| limits::parse(l)).collect()
}

/// The file a format is written to in `dir`. The textfile is named after board and label (no
/// run id): the next run of the same board replaces it, as the textfile collector needs.
fn file_name(f: ExportFormat, r: &Report, id: RunId) -> String {
    match f {
        ExportFormat::Prometheus if r.label.is_empty() => {
            format!("rtscope-{}.prom", name_part(&r.board))
        }
        ExportFormat::Prometheus => {
            format!(
                "rtscope-{}-{}.prom",
                name_part(&r.board),
                name_part(&r.label)
            )
        }
        ExportFormat::Lava => format!("run-{id}.lava.txt"),
        ExportFormat::Kcidb => format!("run-{id}.kcidb.json"),
        _ => format!("run-{id}.junit.xml"),
    }
}

/// Writes run `id` in the fleet format `f` into `a.output`, printing `wrote PATH`.
pub fn export(
    f: ExportFormat,
    a: &ExportArgs,
    store: &Store,
    id: RunId,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let bundle = store
        .bundle(id, false)
        .map_err(|e| UsageError::new(format!("run {id}: {e}")))?;
    let extra = parse_limits(&a.limits)?;
    let report = Report::from_bundle(&bundle, &extra)
        .map_err(|e| UsageError::new(format!("run {id}: {e}")))?;
    let path = a.output.join(file_name(f, &report, id));
    let sub = kcidb::Submission {
        origin: a.kcidb_origin.clone(),
        build_id: a.kcidb_build_id.clone(),
    };
    rtscope_fleet::write_atomic(&path, |w| match f {
        ExportFormat::Prometheus => rtscope_fleet::prometheus::write(w, &report),
        ExportFormat::Lava => rtscope_fleet::lava::write(w, &report),
        ExportFormat::Kcidb => kcidb::write(w, &report, &sub),
        _ => rtscope_fleet::junit::write(w, &report),
    })
    .map_err(|e| UsageError::new(e.to_string()).hint("pass -o DIR with a writable directory"))?;
    writeln!(out, "wrote {}", path.display())?;
    Ok(())
}

/// `measure --metrics-file`: the textfile, rewritten from the control thread.
pub struct MetricsFile {
    path: PathBuf,
    board: String,
    label: String,
    limits: Vec<Limit>,
    started: SystemTime,
    warned: bool,
}

fn unix_s(t: SystemTime) -> f64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// The board name of this host: `--tag board=…`, else the host name.
fn board(tags: &[String]) -> String {
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
    /// Checks that `path` can be written (before the run starts: a usage error, exit 2).
    pub fn new(
        path: &Path,
        tags: &[String],
        label: Option<&str>,
        limit_texts: &[String],
    ) -> anyhow::Result<MetricsFile> {
        let m = MetricsFile {
            path: path.to_path_buf(),
            board: board(tags),
            label: label.unwrap_or_default().to_string(),
            limits: parse_limits(limit_texts)?,
            started: SystemTime::now(),
            warned: false,
        };
        let empty = Report::live(
            &m.board,
            &m.label,
            [],
            &[],
            0.0,
            unix_s(m.started),
            RunStatus::Running,
        );
        m.write(&empty)
            .map_err(|e| {
                UsageError::new(e.to_string())
                    .hint("pass --metrics-file a file in a writable directory")
            })
            .context("--metrics-file")?;
        Ok(m)
    }

    fn write(&self, r: &Report) -> Result<(), rtscope_fleet::FleetError> {
        rtscope_fleet::write_atomic(&self.path, |w| rtscope_fleet::prometheus::write(w, r))
    }

    fn put(&mut self, r: &Report) {
        if let Err(e) = self.write(r) {
            if !self.warned {
                eprintln!("rtscope: warning: --metrics-file: {e} (the run goes on)");
                self.warned = true;
            }
        }
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
        let r = Report::live(
            &self.board,
            &self.label,
            threads,
            &self.limits,
            measured,
            unix_s(SystemTime::now()),
            RunStatus::Running,
        );
        self.put(&r);
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
        let r = Report::live(
            &self.board,
            &self.label,
            threads,
            &self.limits,
            measured,
            unix_s(result.ended),
            status,
        );
        self.put(&r);
    }
}
