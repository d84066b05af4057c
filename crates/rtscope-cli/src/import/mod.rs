//! `rtscope import FILE…`: results of other tools into runs of the store (kind `import`), so
//! years of old results can be analysed and compared with new ones.
//!
//! Formats ([`detect`] picks one by content unless `--format` is given):
//! * [`hist`]: cyclictest `-h`/`-H` histogram text, Debian 2.4's full form and upstream's sparse
//!   one;
//! * [`verbose`]: cyclictest `-v` output, parsed at hundreds of MB/s;
//! * [`ctjson`]: cyclictest `--json`;
//! * [`jitter`]: a jitterdebugger output directory (results.json and samples.raw);
//! * [`stressng`]: a stress-ng `--cyclic` log.
//!
//! Every file is parsed before anything is written: one bad file (named, with its line, field or
//! record) fails the whole command with exit code 2 and no run is added. Latencies are stored in
//! ns; a µs source's value `v` is recorded as `v × 1000` ns. What a source cannot say (values of
//! histogram overflows, timestamps, priorities) is left out rather than invented, and the
//! importer says so (`note:` lines, `config.source.notes`).

mod civil;
mod ctjson;
mod detect;
mod hist;
mod jitter;
mod model;
mod series;
mod stressng;
mod verbose;
mod write;

use crate::cli::{ImportArgs, ImportFormat};
use crate::exit::{ExitStatus, UsageError};
use crate::record;
use model::{Bad, Imported};
use serde_json::json;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

/// One source, parsed.
struct Parsed {
    file: PathBuf,
    format: ImportFormat,
    imported: Imported,
    /// Modification time of the file (jitterdebugger: of results.json), ns since the epoch.
    mtime_ns: i64,
}

/// Why one source could not be imported: the file (possibly inside a directory) and what.
struct Failure {
    file: PathBuf,
    bad: Bad,
}

/// Runs `rtscope import`.
pub fn run(a: &ImportArgs, out: &mut dyn Write) -> anyhow::Result<ExitStatus> {
    let tags = a
        .tags
        .iter()
        .map(|t| record::parse_tag(t))
        .collect::<Result<Vec<_>, _>>()?;
    let mut parsed = Vec::new();
    let mut failures = Vec::new();
    for f in &a.files {
        match parse_one(f, a.format) {
            Ok(p) => parsed.push(p),
            Err(e) => failures.push(e),
        }
    }
    if !failures.is_empty() {
        return Err(failure_error(&failures, a.files.len(), a.format.is_none()).into());
    }
    let db = a.db.clone().unwrap_or_else(record::default_db);
    let mut store = record::open(&db).map_err(|e| UsageError {
        hint: Some("pass --db PATH for another database".into()),
        ..e
    })?;
    let argv: Vec<String> = std::env::args().collect();
    let command_line_json = serde_json::to_string(&argv)?;
    let mut done = Vec::new();
    for p in &parsed {
        let meta = meta(p, a, &tags, &command_line_json);
        let id = write::write(&mut store, &p.imported, &meta).map_err(|e| {
            UsageError::new(format!(
                "{}: the run could not be written: {e}",
                p.file.display()
            ))
        })?;
        done.push((p, id));
    }
    report(out, a.json, &done)?;
    Ok(ExitStatus::Success)
}

fn fail(file: &Path, bad: Bad) -> Failure {
    Failure {
        file: file.to_path_buf(),
        bad,
    }
}

/// Detects (unless forced), reads and parses one source.
fn parse_one(path: &Path, forced: Option<ImportFormat>) -> Result<Parsed, Failure> {
    let format = match forced {
        Some(f) => f,
        None => detect::detect(path).map_err(|b| fail(path, b))?,
    };
    let is_dir = path.is_dir();
    if is_dir && format != ImportFormat::Jitterdebugger {
        return Err(fail(
            path,
            Bad::file(format!(
                "a directory, but {} input is a file",
                detect::name(format)
            )),
        ));
    }
    let (imported, mtime_of) = match format {
        ImportFormat::Jitterdebugger => {
            let imp = jitter::parse(path).map_err(|(f, b)| fail(&f, b))?;
            (imp, jitter::files_of(path).0)
        }
        ImportFormat::CyclictestVerbose => {
            let mut f = open(path)?;
            (
                verbose::parse(&mut f).map_err(|b| fail(path, b))?,
                path.to_path_buf(),
            )
        }
        ImportFormat::CyclictestHist | ImportFormat::CyclictestJson | ImportFormat::StressNg => {
            let parse = match format {
                ImportFormat::CyclictestHist => hist::parse,
                ImportFormat::CyclictestJson => ctjson::parse,
                _ => stressng::parse,
            };
            let bytes = std::fs::read(path)
                .map_err(|e| fail(path, Bad::file(format!("cannot read: {e}"))))?;
            (
                parse_text(parse, &bytes).map_err(|b| fail(path, b))?,
                path.to_path_buf(),
            )
        }
    };
    Ok(Parsed {
        file: path.to_path_buf(),
        format,
        imported,
        mtime_ns: mtime_ns(&mtime_of),
    })
}

fn open(path: &Path) -> Result<std::fs::File, Failure> {
    let f = std::fs::File::open(path)
        .map_err(|e| fail(path, Bad::file(format!("cannot read: {e}"))))?;
    if f.metadata().is_ok_and(|m| m.len() == 0) {
        return Err(fail(path, Bad::file("the file is empty")));
    }
    Ok(f)
}

fn parse_text(parse: fn(&str) -> Result<Imported, Bad>, bytes: &[u8]) -> Result<Imported, Bad> {
    if bytes.is_empty() {
        return Err(Bad::file("the file is empty"));
    }
    parse(detect::text(bytes)?)
}

fn mtime_ns(path: &Path) -> i64 {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos() as i64)
}

/// The message for the sources that failed; nothing was written.
fn failure_error(failures: &[Failure], files: usize, detected: bool) -> UsageError {
    let line = |f: &Failure| format!("{}: {}", f.file.display(), f.bad);
    let unknown = failures
        .iter()
        .any(|f| f.bad.what.contains("not one of the formats"));
    let msg = if files == 1 {
        line(&failures[0])
    } else {
        let lines: Vec<String> = failures.iter().map(|f| format!("  {}", line(f))).collect();
        format!(
            "{} of {files} inputs could not be imported, so none was:\n{}",
            failures.len(),
            lines.join("\n")
        )
    };
    let e = UsageError::new(msg);
    if unknown && detected {
        e.hint(format!(
            "if the content is one of these formats, name it with --format ({})",
            detect::NAMES
        ))
    } else {
        e
    }
}

/// Start and end times, the label and the provenance of one run.
fn meta<'a>(
    p: &Parsed,
    a: &ImportArgs,
    tags: &'a [(String, String)],
    command_line_json: &'a str,
) -> write::RunMeta<'a> {
    let imp = &p.imported;
    let progress = i64::try_from(imp.progress_ns).unwrap_or(i64::MAX);
    let (started_ns, start_from) = match imp.started_unix_ns {
        Some(s) => (s, "source"),
        None if p.format == ImportFormat::Jitterdebugger && progress > 0 => (
            p.mtime_ns.saturating_sub(progress),
            "results.json modification time minus the span of the samples",
        ),
        None => (p.mtime_ns, "file modification time"),
    };
    let ended_ns = imp
        .ended_unix_ns
        .unwrap_or_else(|| started_ns.saturating_add(progress));
    let path = std::fs::canonicalize(&p.file).unwrap_or_else(|_| p.file.clone());
    let label = a
        .label
        .clone()
        .or_else(|| p.file.file_name().map(|n| n.to_string_lossy().into_owned()));
    write::RunMeta {
        format: detect::name(p.format),
        path: path.display().to_string(),
        label,
        tags,
        command_line_json,
        started_ns,
        ended_ns,
        start_from,
    }
}

fn report(out: &mut dyn Write, as_json: bool, done: &[(&Parsed, i64)]) -> anyhow::Result<()> {
    if as_json {
        let v: Vec<_> = done
            .iter()
            .map(|(p, id)| {
                json!({
                    "file": p.file.display().to_string(), "run": id,
                    "format": detect::name(p.format), "threads": p.imported.threads.len(),
                    "samples": p.imported.samples(), "notes": p.imported.notes,
                })
            })
            .collect();
        writeln!(out, "{}", serde_json::to_string_pretty(&v)?)?;
        return Ok(());
    }
    for (p, id) in done {
        let threads = p.imported.threads.len();
        writeln!(
            out,
            "imported {} as run {id} ({}, {threads} thread{}, {} samples)",
            p.file.display(),
            detect::name(p.format),
            if threads == 1 { "" } else { "s" },
            p.imported.samples()
        )?;
        for n in &p.imported.notes {
            eprintln!("note: {}: {n}", p.file.display());
        }
    }
    Ok(())
}
