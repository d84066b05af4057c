//! Writing recorded runs in the fleet formats: `rtscope export -f prometheus|lava|kcidb|junit`
//! (one run into a directory) and `--ci-output FORMAT=FILE` of `measure` and `run` (the runs a
//! command recorded, or merged from its boards, in one file or on stdout, with the boards asked
//! for that recorded no run as failed cases).

use crate::missing::MissingBoard;
use crate::{kcidb, name_part, FormatError, Report};
use rtscope_common::limits::{self, Limit};
use rtscope_store::{RunId, Store};
use std::io::Write;
use std::path::{Path, PathBuf};

/// A fleet format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// The node_exporter textfile.
    Prometheus,
    /// LAVA test-case signals.
    Lava,
    /// KernelCI KCIDB test objects.
    Kcidb,
    /// JUnit XML.
    Junit,
}

impl Format {
    /// `prometheus`, `lava`, `kcidb`, `junit`.
    pub fn parse(text: &str) -> Option<Format> {
        match text {
            "prometheus" => Some(Format::Prometheus),
            "lava" => Some(Format::Lava),
            "kcidb" => Some(Format::Kcidb),
            "junit" => Some(Format::Junit),
            _ => None,
        }
    }

    /// The name [`Format::parse`] reads.
    pub fn name(self) -> &'static str {
        match self {
            Format::Prometheus => "prometheus",
            Format::Lava => "lava",
            Format::Kcidb => "kcidb",
            Format::Junit => "junit",
        }
    }
}

/// `--limit STAT=VALUE` texts.
pub fn parse_limits(texts: &[String]) -> Result<Vec<Limit>, FormatError> {
    texts
        .iter()
        .map(|l| limits::parse(l).map_err(|e| FormatError::Limit(e.to_string())))
        .collect()
}

/// Run `id` of `store` as a report, `extra` limits checked besides its own.
pub fn report(store: &Store, id: RunId, extra: &[Limit]) -> Result<Report, FormatError> {
    let run = |e: String| FormatError::Run(format!("run {id}: {e}"));
    let bundle = store.bundle(id, false).map_err(|e| run(e.to_string()))?;
    Report::from_bundle(&bundle, extra).map_err(|e| run(e.to_string()))
}

/// The file a format is written to in a directory. The textfile is named after board and
/// label (no run id): the next run of the same board replaces it, as the textfile collector
/// needs.
pub fn file_name(f: Format, r: &Report, id: RunId) -> String {
    match f {
        Format::Prometheus if r.label.is_empty() => format!("rtscope-{}.prom", name_part(&r.board)),
        Format::Prometheus => {
            format!(
                "rtscope-{}-{}.prom",
                name_part(&r.board),
                name_part(&r.label)
            )
        }
        Format::Lava => format!("run-{id}.lava.txt"),
        Format::Kcidb => format!("run-{id}.kcidb.json"),
        Format::Junit => format!("run-{id}.junit.xml"),
    }
}

/// Writes the runs `rs` and the boards of `missing` (a failed case each; the textfile has no
/// place for them) in format `f`.
pub fn write(
    w: &mut dyn Write,
    f: Format,
    rs: &[Report],
    missing: &[MissingBoard],
    sub: &kcidb::Submission,
) -> std::io::Result<()> {
    match f {
        Format::Prometheus => rs.iter().try_for_each(|r| crate::prometheus::write(w, r)),
        Format::Lava => crate::lava::write_all(w, rs, missing),
        Format::Kcidb => kcidb::write_all(w, rs, missing, sub),
        Format::Junit => crate::junit::write_all(w, rs, missing),
    }
}

/// `rtscope export`: run `id` in format `f` into `dir` (atomically); the file written.
pub fn export(
    f: Format,
    store: &Store,
    id: RunId,
    dir: &Path,
    extra: &[Limit],
    sub: &kcidb::Submission,
) -> Result<PathBuf, FormatError> {
    let r = report(store, id, extra)?;
    let path = dir.join(file_name(f, &r, id));
    crate::atomic::write_atomic(&path, |w| write(w, f, std::slice::from_ref(&r), &[], sub))?;
    Ok(path)
}

/// One `--ci-output FORMAT=FILE` (`FILE` `-`: stdout).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CiOutput {
    /// lava, kcidb or junit.
    pub format: Format,
    /// The file; `None` for stdout.
    pub path: Option<PathBuf>,
}

impl CiOutput {
    /// Parses `FORMAT=FILE`.
    pub fn parse(text: &str) -> Result<CiOutput, FormatError> {
        let bad = || {
            FormatError::Usage(format!(
                "invalid --ci-output '{text}': expected lava=FILE, kcidb=FILE or junit=FILE (FILE - for stdout)"
            ))
        };
        let (f, p) = text.split_once('=').ok_or_else(bad)?;
        let format = Format::parse(f)
            .filter(|f| *f != Format::Prometheus)
            .ok_or_else(bad)?;
        if p.is_empty() {
            return Err(bad());
        }
        Ok(CiOutput {
            format,
            path: (p != "-").then(|| PathBuf::from(p)),
        })
    }
}

/// The `--ci-output FORMAT=FILE` options `texts`, parsed and checked before anything runs
/// (see [`check_outputs`]).
pub fn parse_outputs(texts: &[String]) -> Result<Vec<CiOutput>, FormatError> {
    let outs = texts
        .iter()
        .map(|t| CiOutput::parse(t))
        .collect::<Result<Vec<_>, _>>()?;
    check_outputs(&outs)?;
    Ok(outs)
}

/// Checks `outs` before anything runs (issue 26, N9/N10): each file's directory exists, and no
/// two outputs name the same file (or both stdout), which would keep only the last silently.
fn check_outputs(outs: &[CiOutput]) -> Result<(), FormatError> {
    let mut seen: Vec<Option<PathBuf>> = Vec::new();
    for o in outs {
        let key = match &o.path {
            None => None,
            Some(p) => {
                let dir = match p.parent() {
                    Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
                    _ => PathBuf::from("."),
                };
                let dir = dir.canonicalize().ok().filter(|d| d.is_dir()).ok_or_else(|| {
                    FormatError::Usage(format!(
                        "--ci-output {}={}: the directory {} does not exist; create it first or name another file",
                        o.format.name(),
                        p.display(),
                        dir.display()
                    ))
                })?;
                Some(dir.join(p.file_name().unwrap_or_default()))
            }
        };
        if seen.contains(&key) {
            let what = key.map_or_else(|| "stdout".into(), |k| k.display().to_string());
            return Err(FormatError::Usage(format!(
                "two --ci-output options write {what}; give each format its own file"
            )));
        }
        seen.push(key);
    }
    Ok(())
}

/// The highest run id of `store` (runs recorded later have higher ids): taken before a
/// command, it tells which runs the command added.
pub fn mark(store: &Store) -> Result<RunId, FormatError> {
    let runs = store
        .list_runs()
        .map_err(|e| FormatError::Run(e.to_string()))?;
    Ok(runs.iter().map(|r| r.id).max().unwrap_or(0))
}

/// Writes a comparison's verdicts, `cases`, in every output of `outs` (see
/// [`crate::compare`]); each file written.
pub fn write_compare(
    cases: &[crate::compare::Case],
    outs: &[CiOutput],
    stdout: &mut dyn Write,
    sub: &kcidb::Submission,
) -> Result<Vec<PathBuf>, FormatError> {
    let body = |w: &mut dyn Write, f: Format| match f {
        Format::Lava => crate::compare::lava(w, cases),
        Format::Kcidb => crate::compare::kcidb(w, cases, sub),
        _ => crate::compare::junit(w, cases),
    };
    each(outs, stdout, |w, f| body(w, f))
}

/// Writes every output of `outs` through `body`; each file written.
fn each(
    outs: &[CiOutput],
    stdout: &mut dyn Write,
    body: impl Fn(&mut dyn Write, Format) -> std::io::Result<()>,
) -> Result<Vec<PathBuf>, FormatError> {
    let mut written = Vec::new();
    for o in outs {
        match &o.path {
            None => body(stdout, o.format).map_err(|e| FormatError::Write {
                path: "stdout".into(),
                source: e,
            })?,
            Some(p) => {
                crate::atomic::write_atomic(p, |w| body(w, o.format))?;
                written.push(p.clone());
            }
        }
    }
    Ok(written)
}

/// Writes the runs of `store` after `mark`, and the boards of `missing` as failed cases, in
/// every output of `outs`; each file written.
pub fn write_ci(
    store: &Store,
    mark: RunId,
    missing: &[MissingBoard],
    outs: &[CiOutput],
    stdout: &mut dyn Write,
    sub: &kcidb::Submission,
) -> Result<Vec<PathBuf>, FormatError> {
    let mut ids: Vec<RunId> = store
        .list_runs()
        .map_err(|e| FormatError::Run(e.to_string()))?
        .iter()
        .map(|r| r.id)
        .filter(|&id| id > mark)
        .collect();
    ids.sort_unstable();
    let rs = ids
        .iter()
        .map(|&id| report(store, id, &[]))
        .collect::<Result<Vec<_>, _>>()?;
    each(outs, stdout, |w, f| write(w, f, &rs, missing, sub))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ci_outputs_parse() {
        let o = CiOutput::parse("junit=out/r.xml").unwrap();
        assert_eq!(
            (o.format, o.path),
            (Format::Junit, Some(PathBuf::from("out/r.xml")))
        );
        assert_eq!(CiOutput::parse("lava=-").unwrap().path, None);
        for bad in ["junit", "prometheus=x", "xml=x", "kcidb="] {
            assert!(CiOutput::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn outputs_to_a_missing_directory_or_the_same_file_are_refused_before_the_run() {
        let parse = |v: &[&str]| -> Vec<CiOutput> {
            v.iter().map(|t| CiOutput::parse(t).unwrap()).collect()
        };
        let dir = std::env::temp_dir();
        let f = dir.join(format!("rtscope-ci-check-{}.xml", std::process::id()));
        let f = f.to_str().unwrap();
        assert!(check_outputs(&parse(&[&format!("junit={f}"), "lava=-"])).is_ok());
        let e = check_outputs(&parse(&["junit=/nonexistent/dir/r.xml"])).unwrap_err();
        assert!(
            e.to_string().contains("/nonexistent/dir does not exist"),
            "{e}"
        );
        let same = [format!("junit={f}"), format!("lava={f}")];
        let e = check_outputs(&parse(&[&same[0], &same[1]])).unwrap_err();
        assert!(e.to_string().contains("two --ci-output"), "{e}");
        let e = check_outputs(&parse(&["junit=-", "lava=-"])).unwrap_err();
        assert!(e.to_string().contains("write stdout"), "{e}");
    }

    #[test]
    fn ci_output_options_are_parsed_and_checked_together_or_refused_naming_the_option() {
        let texts = |v: &[&str]| -> Vec<String> { v.iter().map(|t| t.to_string()).collect() };
        let outs = parse_outputs(&texts(&["junit=-", "kcidb=r.json"])).unwrap();
        assert_eq!(
            outs[0],
            CiOutput {
                format: Format::Junit,
                path: None
            }
        );
        assert_eq!(outs[1].path, Some(PathBuf::from("r.json")));
        assert!(parse_outputs(&[]).unwrap().is_empty());
        let e = parse_outputs(&texts(&["junit=-", "xml=r.xml"])).unwrap_err();
        assert!(
            e.to_string().starts_with("invalid --ci-output 'xml=r.xml'"),
            "{e}"
        );
        let e = parse_outputs(&texts(&["lava=-", "junit=-"])).unwrap_err();
        assert!(
            e.to_string()
                .contains("two --ci-output options write stdout"),
            "{e}"
        );
    }
}
