//! `rtscope export RUN`: a recorded run's statistics, histograms, time series, events and
//! environment as CSV, JSON and Parquet files, ready for pandas. Files and columns:
//! docs/export.md.
//!
//! * [`tables`] reads the run into [`table::Table`]s (the one data model);
//! * [`csv`], [`json`] and [`parquet`] write those tables, so the formats always agree;
//! * each file is written under a temporary name and renamed into place, so an interrupted
//!   export never leaves a truncated file under the final name.

#![warn(missing_docs)]

pub mod csv;
pub mod delta;
pub mod dict;
pub mod json;
pub mod parquet;
pub mod table;
pub mod tables;
pub mod thrift;
pub mod wide;

use rtscope_common::error::UsageError;
use rtscope_store::codec::RawSample;
use rtscope_store::{RunId, Store};
use std::io::{self, Write};
use std::path::Path;
use table::Table;
use tables::RunData;

/// What writing an export can fail with.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// Bad input: no such run, an unusable directory.
    #[error(transparent)]
    Usage(#[from] UsageError),
    /// Writing failed (a full disk, a closed pipe).
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// Encoding JSON failed.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// Reading the database failed.
    #[error(transparent)]
    Store(#[from] rtscope_store::StoreError),
}

/// The formats `rtscope export` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportFormat {
    /// CSV files, one per table.
    Csv,
    /// One JSON document.
    Json,
    /// Parquet files, one per table.
    Parquet,
}

/// Reads everything exported about run `id` except its raw samples, which
/// [`write_format_streamed`] reads from the store one chunk at a time.
pub fn load_without_samples(store: &Store, id: RunId) -> Result<RunData, UsageError> {
    load_with(store, id, false)
}

/// Reads everything exported about run `id`, raw samples included.
pub fn load(store: &Store, id: RunId) -> Result<RunData, UsageError> {
    load_with(store, id, true)
}

fn load_with(store: &Store, id: RunId, raw: bool) -> Result<RunData, UsageError> {
    let b = store
        .bundle(id, raw)
        .map_err(|e| UsageError::new(format!("run {id}: {e}")))?;
    let samples = b
        .raw
        .into_iter()
        .zip(&b.detail.threads)
        .flat_map(|(raw, t)| raw.into_iter().map(move |r| (t.thread, r)))
        .collect();
    Ok(RunData {
        samples,
        detail: b.detail,
        series: b.series,
        events: b.events,
        monitor: b.monitors,
        top: b.top,
        loads: b.loads,
    })
}

/// Creates the output directory if needed; it must be a directory.
pub fn prepare_dir(dir: &Path) -> Result<(), UsageError> {
    if dir.exists() && !dir.is_dir() {
        return Err(UsageError::new(format!(
            "cannot export into {}: not a directory",
            dir.display()
        ))
        .hint("pass -o DIR with a directory (it is created if needed)"));
    }
    std::fs::create_dir_all(dir).map_err(|e| {
        UsageError::new(format!(
            "cannot create output directory {}: {e}",
            dir.display()
        ))
        .hint("pass -o DIR with a writable directory")
    })
}

/// Writes the file(s) of one format, printing `wrote PATH (N rows)` for each.
pub fn write_format(
    format: ExportFormat,
    dir: &Path,
    id: RunId,
    tables: &[Table],
    out: &mut dyn Write,
) -> Result<(), ExportError> {
    let created_by = format!("rtscope version {}", env!("CARGO_PKG_VERSION"));
    match format {
        ExportFormat::Csv => {
            for t in tables {
                let path = dir.join(format!("run-{id}-{}.csv", t.name));
                write_file(&path, |w| csv::write(w, t))?;
                report(out, &path, t.rows())?;
            }
        }
        ExportFormat::Json => {
            let path = dir.join(format!("run-{id}.json"));
            write_file(&path, |w| json::write(w, tables))?;
            report(out, &path, tables.iter().map(Table::rows).sum())?;
        }
        ExportFormat::Parquet => {
            for t in tables {
                let path = dir.join(format!("run-{id}-{}.parquet", t.name));
                write_file(&path, |w| parquet::write(w, t, &created_by, json::SCHEMA))?;
                report(out, &path, t.rows())?;
            }
        }
    }
    Ok(())
}

/// [`write_format`] for tables read by [`load_without_samples`]: the `samples` table is
/// streamed from `store` chunk by chunk into CSV and JSON (memory bounded by a chunk, whatever
/// the run's size) and into Parquet row groups of [`ROW_GROUP_ROWS`] rows.
pub fn write_format_streamed(
    format: ExportFormat,
    dir: &Path,
    id: RunId,
    tables: &[Table],
    store: &Store,
    out: &mut dyn Write,
) -> Result<(), ExportError> {
    let threads = store
        .run(id)
        .map_err(|e| UsageError::new(format!("run {id}: {e}")))?
        .threads
        .iter()
        .map(|t| t.thread)
        .collect::<Vec<u32>>();
    let raw = |sink: &mut dyn FnMut(u32, &[RawSample]) -> io::Result<()>| -> io::Result<usize> {
        let mut rows = 0;
        for &thread in &threads {
            store
                .for_each_raw_chunk(id, thread, &mut |chunk| {
                    rows += chunk.len();
                    sink(thread, &chunk)
                })
                .map_err(io::Error::other)?;
        }
        Ok(rows)
    };
    let stream = |sink: &mut dyn FnMut(&Table) -> io::Result<()>| -> io::Result<usize> {
        raw(&mut |thread, chunk| sink(&tables::samples_part(id, thread, chunk)))
    };
    let created_by = format!("rtscope version {}", env!("CARGO_PKG_VERSION"));
    match format {
        ExportFormat::Csv => {
            for t in tables {
                let path = dir.join(format!("run-{id}-{}.csv", t.name));
                let mut rows = t.rows();
                write_file(&path, |w| {
                    csv::write(w, t)?;
                    if t.name == "samples" {
                        rows = stream(&mut |part| csv::write_rows(w, part))?;
                    }
                    Ok(())
                })?;
                report(out, &path, rows)?;
            }
        }
        ExportFormat::Json => {
            let path = dir.join(format!("run-{id}.json"));
            let mut rows: usize = tables.iter().map(Table::rows).sum();
            write_file(&path, |w| {
                json::write_streamed(w, tables, "samples", &mut |sink| {
                    rows += stream(sink)?;
                    Ok(())
                })
            })?;
            report(out, &path, rows)?;
        }
        ExportFormat::Parquet => {
            for t in tables {
                let path = dir.join(format!("run-{id}-{}.parquet", t.name));
                let mut rows = t.rows();
                write_file(&path, |w| {
                    let mut pw = parquet::Writer::new(w, t, &created_by, json::SCHEMA)?;
                    pw.row_group(t)?;
                    if t.name == "samples" {
                        let mut groups = RowGroups::new(id, &mut pw);
                        raw(&mut |thread, chunk| groups.push(thread, chunk))?;
                        groups.flush()?;
                        rows = usize::try_from(pw.rows()).unwrap_or(usize::MAX);
                    }
                    pw.finish()
                })?;
                report(out, &path, rows)?;
            }
        }
    }
    Ok(())
}

/// Rows of a Parquet row group of raw samples: parts streamed from the store (about a second
/// of one thread each) are gathered up to this many rows, so that row groups are neither tiny
/// nor large: about 10 MiB of table in memory at 80 bytes a row.
pub const ROW_GROUP_ROWS: usize = 1 << 17;

/// Gathers streamed `samples` parts into row groups of about [`ROW_GROUP_ROWS`] rows.
struct RowGroups<'p, 'w> {
    writer: &'p mut parquet::Writer<'w>,
    run: RunId,
    thread: Option<u32>,
    pending: Vec<RawSample>,
}

impl<'p, 'w> RowGroups<'p, 'w> {
    fn new(run: RunId, writer: &'p mut parquet::Writer<'w>) -> Self {
        RowGroups {
            writer,
            run,
            thread: None,
            pending: Vec::new(),
        }
    }

    /// Adds the raw samples of one thread; a row group holds one thread's samples only.
    fn push(&mut self, thread: u32, chunk: &[RawSample]) -> io::Result<()> {
        if self.thread != Some(thread) {
            self.flush()?;
            self.thread = Some(thread);
        }
        self.pending.extend_from_slice(chunk);
        if self.pending.len() >= ROW_GROUP_ROWS {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        if let (Some(thread), false) = (self.thread, self.pending.is_empty()) {
            let part = tables::samples_part(self.run, thread, &self.pending);
            self.writer.row_group(&part)?;
            self.pending.clear();
        }
        Ok(())
    }
}

/// Writes the JSON document of run `id` to `w` (`rtscope export -o -`), its raw samples
/// streamed from `store` like [`write_format_streamed`].
pub fn write_json_to(
    w: &mut dyn Write,
    id: RunId,
    tables: &[Table],
    store: &Store,
) -> Result<(), ExportError> {
    let threads: Vec<u32> = store
        .run(id)
        .map_err(|e| UsageError::new(format!("run {id}: {e}")))?
        .threads
        .iter()
        .map(|t| t.thread)
        .collect();
    json::write_streamed(w, tables, "samples", &mut |sink| {
        for &thread in &threads {
            store
                .for_each_raw_chunk(id, thread, &mut |chunk| {
                    sink(&tables::samples_part(id, thread, &chunk))
                })
                .map_err(io::Error::other)?;
        }
        Ok(())
    })?;
    Ok(())
}

fn report(out: &mut dyn Write, path: &Path, rows: usize) -> io::Result<()> {
    writeln!(out, "wrote {} ({rows} rows)", path.display())
}

/// Writes `path` through `body`: into a temporary file first, renamed to `path` once
/// complete. Errors name the file.
fn write_file(
    path: &Path,
    body: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<(), UsageError> {
    // rtscope-common's one writer: a regular file replaced whole, a device written through, a
    // symlink planted in a shared output directory refused.
    rtscope_common::outfile::write(path, &mut io::stdout(), body)
        .map_err(|e| UsageError::from_error(e).hint("pass -o DIR with a writable directory"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_file_renames_into_place_and_names_the_file_on_error() {
        let dir = std::env::temp_dir().join(format!("rtscope-export-unit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("a.csv");
        write_file(&path, |w| w.write_all(b"x\r\n")).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"x\r\n");
        let bad = dir.join("a.csv").join("b.csv");
        let e = write_file(&bad, |w| w.write_all(b"x")).unwrap_err();
        assert!(e.message.contains(&bad.display().to_string()), "{e}");
        let failing = dir.join("c.csv");
        let e = write_file(&failing, |_| Err(io::Error::other("disk full"))).unwrap_err();
        assert!(e.message.contains("disk full") && !failing.exists());
        assert_eq!(
            std::fs::read_dir(&dir).unwrap().count(),
            1,
            "no partial file left"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
