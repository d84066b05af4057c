//! `rtscope import FILE…`: results of other tools into runs of the store (kind `import`), so
//! years of old results can be analysed and compared with new ones.
//!
//! Formats ([`detect`] picks one by content unless `--format` is given):
//! * [`hist`]: cyclictest `-h`/`-H` histogram text, Debian 2.4's full form and upstream's sparse
//!   one;
//! * [`verbose`]: cyclictest `-v` output, parsed at hundreds of MB/s;
//! * [`ctjson`]: cyclictest `--json`;
//! * [`jitter`]: a jitterdebugger output directory (results.json and samples.raw);
//! * [`stressng`]: a stress-ng `--cyclic` log;
//! * [`oslat`]: oslat `--json` (rt-tests), recorded as a run of kind `noise`;
//! * [`rtla`]: `rtla osnoise top` and `rtla osnoise hist` text, recorded as runs of kind `noise`.
//!
//! Every file is parsed before anything is written: one bad file (named, with its line, field or
//! record) fails the whole command with exit code 2 and no run is added. Latencies are stored in
//! ns; a µs source's value `v` is recorded as `v × 1000` ns. What a source cannot say (values of
//! histogram overflows, timestamps, priorities) is left out rather than invented, and the
//! importer says so (`note:` lines, `config.source.notes`).
//!
//! [`parse_bytes`] and [`parse_jitterdebugger`] run the parsers on bytes in memory, with no file
//! system and no database (the fuzz targets in `fuzz/` call them). Whatever the input, they
//! return a result: a parser never panics.
//!
//! Re-exports (its facade): `Imported` and `Bad`, what an import gives back, are named at the root
//! for the CLI; their module (`model`) is private.

#![warn(missing_docs)]

mod civil;
mod ctjson;
mod detect;
mod hist;
mod jitter;
mod model;
mod oslat;
mod rtjson;
mod rtla;
mod series;
mod stressng;
mod summary;
mod verbose;
mod write;

pub use model::{Bad, Imported};
use rtscope_common::error::UsageError;
use rtscope_common::names::parse_tag;
use rtscope_store::Store;
use serde_json::json;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

/// The formats `rtscope import` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImportFormat {
    /// cyclictest `-h`/`-H` histogram text (with or without empty buckets and `# Total:`).
    CyclictestHist,
    /// cyclictest `-v` verbose output (`thread:cycle:latency` lines).
    CyclictestVerbose,
    /// cyclictest `--json` output.
    CyclictestJson,
    /// A jitterdebugger output directory (results.json and samples.raw).
    Jitterdebugger,
    /// A stress-ng `--cyclic` log.
    StressNg,
    /// cyclictest's summary without a histogram: `-q` output, a live status, `--spike` output.
    CyclictestSummary,
    /// oslat `--json` output (busy-loop gaps), recorded as a run of kind `noise`.
    Oslat,
    /// `rtla osnoise top` (or `rtla hwnoise`) text, recorded as a run of kind `noise`.
    RtlaOsnoiseTop,
    /// `rtla osnoise hist` text, recorded as a run of kind `noise`.
    RtlaOsnoiseHist,
}

/// What `rtscope import` is asked to do.
#[derive(Debug, Clone, Default)]
pub struct ImportOptions {
    /// Files (or jitterdebugger directories), one run each.
    pub files: Vec<PathBuf>,
    /// The format (`None`: detected from the content).
    pub format: Option<ImportFormat>,
    /// The run database (`None`: `$RTSCOPE_DB`, else `./rtscope.db`).
    pub db: Option<PathBuf>,
    /// A label for the imported runs (`None`: the file name).
    pub label: Option<String>,
    /// `KEY=VALUE` tags for the imported runs.
    pub tags: Vec<String>,
    /// Print JSON (the new run ids) instead of text.
    pub json: bool,
}

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

/// The runs one `rtscope import` added: each source with its run id, for [`Imports::report`].
pub struct Imports {
    done: Vec<(Parsed, i64)>,
}

/// Runs `rtscope import`: parses every source, then records each as a run. A bad option or
/// file, or a database that cannot be opened or written, is a usage error (exit code 2); the
/// report is written by [`Imports::report`].
pub fn import(a: &ImportOptions) -> Result<Imports, UsageError> {
    let tags = a
        .tags
        .iter()
        .map(|t| parse_tag(t))
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
        return Err(failure_error(&failures, a.files.len(), a.format.is_none()));
    }
    let db = a.db.clone().unwrap_or_else(Store::default_path);
    let mut store = Store::open(&db).map_err(|e| {
        let hint = e.hint();
        UsageError::from_error(e).hint(hint)
    })?;
    let argv: Vec<String> = std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let command_line_json = serde_json::to_string(&argv).map_err(UsageError::from_error)?;
    let mut done = Vec::new();
    for p in parsed {
        let meta = meta(&p, a, &tags, &command_line_json);
        let id = write::write(&mut store, &p.imported, &meta).map_err(|e| {
            UsageError::new(format!(
                "{}: the run could not be written: {e}",
                p.file.display()
            ))
        })?;
        done.push((p, id));
    }
    Ok(Imports { done })
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
        ImportFormat::CyclictestHist => {
            let mut f = std::io::BufReader::new(open(path)?);
            (
                hist::parse_reader(&mut f).map_err(|b| fail(path, b))?,
                path.to_path_buf(),
            )
        }
        ImportFormat::CyclictestJson
        | ImportFormat::StressNg
        | ImportFormat::CyclictestSummary
        | ImportFormat::Oslat
        | ImportFormat::RtlaOsnoiseTop
        | ImportFormat::RtlaOsnoiseHist => {
            let parse = match format {
                ImportFormat::CyclictestJson => ctjson::parse,
                ImportFormat::Oslat => oslat::parse,
                ImportFormat::RtlaOsnoiseTop => rtla::top::parse,
                ImportFormat::RtlaOsnoiseHist => rtla::hist::parse,
                ImportFormat::CyclictestSummary => summary::parse,
                _ => stressng::parse,
            };
            let mut bytes = Vec::new();
            detect::open_regular(path)
                .and_then(|f| {
                    std::io::Read::read_to_end(
                        &mut std::io::Read::take(f, MAX_WHOLE_FILE + 1),
                        &mut bytes,
                    )
                    .map_err(|e| Bad::file(format!("cannot read: {e}")))
                })
                .map_err(|b| fail(path, b))?;
            if bytes.len() as u64 > MAX_WHOLE_FILE {
                return Err(fail(
                    path,
                    Bad::file(format!(
                        "larger than {} MiB, the most a JSON, stress-ng or rtla file is read",
                        MAX_WHOLE_FILE >> 20
                    )),
                ));
            }
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

/// The largest file read whole (cyclictest JSON, stress-ng logs, oslat and rtla output): 256 MiB. Histogram text,
/// `-v` output and jitterdebugger samples are streamed whatever their size.
pub const MAX_WHOLE_FILE: u64 = 256 << 20;

fn open(path: &Path) -> Result<std::fs::File, Failure> {
    detect::open_regular(path).map_err(|b| fail(path, b))
}

/// Parses one source held in memory: `data` is the whole file. No file system, no database.
/// For [`ImportFormat::Jitterdebugger`], `data` is `results.json` alone (no `samples.raw`; see
/// [`parse_jitterdebugger`]). The error is what `rtscope import` prints after the file name.
pub fn parse_bytes(format: ImportFormat, data: &[u8]) -> Result<Imported, Bad> {
    match format {
        ImportFormat::CyclictestHist => hist::parse_reader(&mut &data[..]),
        ImportFormat::CyclictestJson => parse_text(ctjson::parse, data),
        ImportFormat::StressNg => parse_text(stressng::parse, data),
        ImportFormat::Oslat => parse_text(oslat::parse, data),
        ImportFormat::RtlaOsnoiseTop => parse_text(rtla::top::parse, data),
        ImportFormat::RtlaOsnoiseHist => parse_text(rtla::hist::parse, data),
        ImportFormat::CyclictestSummary => parse_text(summary::parse, data),
        ImportFormat::CyclictestVerbose if data.is_empty() => Err(Bad::file("the file is empty")),
        ImportFormat::CyclictestVerbose => verbose::parse(&mut &data[..]),
        ImportFormat::Jitterdebugger => parse_jitterdebugger(data, None),
    }
}

/// Parses a jitterdebugger run held in memory: the bytes of `results.json` and, when the run
/// has one, of `samples.raw`. A failure in `samples.raw` says so in its place
/// (`samples.raw, record 7`). The facts only the directory has (`cmdline`, `cpuinfo`) are left
/// out.
pub fn parse_jitterdebugger(results: &[u8], samples_raw: Option<&[u8]>) -> Result<Imported, Bad> {
    let res = jitter::Results::parse(results)?;
    let raw = match samples_raw {
        None => None,
        Some(bytes) => Some(res.read_raw(bytes).map_err(|b| Bad {
            at: Some(b.at.map_or("samples.raw".into(), |at| format!("samples.raw, {at}"))),
            what: b.what,
        })?),
    };
    Ok(res.build(raw.as_ref()))
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
    a: &ImportOptions,
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
        None if imp.ends_at_mtime => (
            p.mtime_ns.saturating_sub(progress),
            "file modification time minus the duration the source states",
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

impl Imports {
    /// Writes what was imported to `out`: a line per run (`--json`: an array), and a `note:`
    /// on stderr for each note of a source.
    pub fn report(&self, out: &mut dyn Write, as_json: bool) -> std::io::Result<()> {
        report(out, as_json, &self.done)
    }
}

fn report(out: &mut dyn Write, as_json: bool, done: &[(Parsed, i64)]) -> std::io::Result<()> {
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
        let text = serde_json::to_string_pretty(&v).map_err(std::io::Error::from)?;
        writeln!(out, "{text}")?;
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
            {
                use std::io::Write as _;
                let _ = writeln!(std::io::stderr(), "note: {}: {n}", p.file.display());
            };
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fixtures of the import tests (crates/rtscope/tests/fixtures/import/).
    macro_rules! fixture {
        ($name:literal) => {
            (
                $name,
                include_bytes!(concat!("../../rtscope/tests/fixtures/import/", $name)).as_slice(),
            )
        };
    }

    const TEXT_FIXTURES: [(ImportFormat, (&str, &[u8])); 16] = [
        (ImportFormat::CyclictestHist, fixture!("hist-H100.txt")),
        (ImportFormat::CyclictestHist, fixture!("hist-h100-b300.txt")),
        (
            ImportFormat::CyclictestHist,
            fixture!("hist-h400-upstream-sparse.txt"),
        ),
        (ImportFormat::CyclictestHist, fixture!("hist-h400.txt")),
        (
            ImportFormat::CyclictestVerbose,
            fixture!("verbose-head100.txt"),
        ),
        (ImportFormat::CyclictestJson, fixture!("out.json")),
        (ImportFormat::CyclictestJson, fixture!("out-hist.json")),
        (ImportFormat::Jitterdebugger, fixture!("results.json")),
        (ImportFormat::StressNg, fixture!("stress-ng-cyclic.txt")),
        (ImportFormat::Oslat, fixture!("oslat.json")),
        (ImportFormat::RtlaOsnoiseTop, fixture!("rtla/top-q.txt")),
        (ImportFormat::RtlaOsnoiseTop, fixture!("rtla/top-live.txt")),
        (ImportFormat::RtlaOsnoiseHist, fixture!("rtla/hist.txt")),
        (
            ImportFormat::RtlaOsnoiseHist,
            fixture!("rtla/hist-c1-b10-E50-culprit.txt"),
        ),
        (
            ImportFormat::RtlaOsnoiseHist,
            fixture!("rtla/hist-no-header-culprit.txt"),
        ),
        (
            ImportFormat::RtlaOsnoiseHist,
            fixture!("rtla/hist-no-summary-culprit.txt"),
        ),
    ];
    const RESULTS_JSON: &[u8] = fixture!("results.json").1;
    /// 1000 records: thread 0's, then from record 537 on both threads' interleaved.
    const SAMPLES_RAW: &[u8] = fixture!("samples.raw.first1000").1;

    /// A small samples.raw of both threads: the first `n` records and `n` from record 537 on.
    fn samples_raw(n: usize) -> Vec<u8> {
        let (a, b) = SAMPLES_RAW.split_at(537 * jitter::RECORD);
        [&a[..n * jitter::RECORD], &b[..n * jitter::RECORD]].concat()
    }

    /// A results.json whose counts match the records of `raw` (every sample present).
    fn matching_results(raw: &[u8], unit: u64) -> String {
        let mut counts = [0u64; 2];
        for rec in raw.chunks_exact(jitter::RECORD) {
            let t = u32::from_le_bytes([rec[0], rec[1], rec[2], rec[3]]) as usize;
            if let Some(c) = counts.get_mut(t) {
                *c += 1;
            }
        }
        let cpu: Vec<String> = counts
            .iter()
            .enumerate()
            .map(|(t, n)| {
                format!(
                    r#""{t}": {{"histogram": {{}}, "count": {n}, "min": 0, "max": 0, "avg": 0}}"#
                )
            })
            .collect();
        format!(
            r#"{{"version": 3, "sysinfo": {{"resolution_in_ns": {unit}}}, "cpu": {{{}}}}}"#,
            cpu.join(", ")
        )
    }

    use rtscope_core::rng::XorShift64 as Rng;

    /// Bytes that steer the parsers towards their edges when inserted.
    const TOKENS: [&[u8]; 16] = [
        b"\n",
        b" ",
        b":",
        b"-",
        b"#",
        b"{",
        b"\"",
        b"0",
        b"18446744073709551616",
        b"-9223372036854775808",
        b"1048575",
        b"4294967295",
        b"nan",
        b"\xff",
        b"# Histogram\n",
        b"T: 4095 (1) P:80 I:200 C: 1 Min: 1 Act: 1 Avg: 1 Max: 1\n",
    ];

    /// `input` with 1 to 4 mutations: byte flips, truncations, insertions, deletions.
    fn mutate(rng: &mut Rng, input: &[u8]) -> Vec<u8> {
        let mut v = input.to_vec();
        for _ in 0..1 + rng.below(4) {
            let at = rng.below(v.len() + 1);
            match rng.below(6) {
                0 if at < v.len() => v[at] ^= 1 << rng.below(8),
                1 if at < v.len() => v[at] = rng.next_u64() as u8,
                2 => v.truncate(at),
                3 => {
                    let t = TOKENS[rng.below(TOKENS.len())];
                    v.splice(at..at, t.iter().copied());
                }
                4 => {
                    let end = (at + 1 + rng.below(64)).min(v.len());
                    v.drain(at.min(end)..end);
                }
                _ => {
                    let end = (at + 1 + rng.below(64)).min(v.len());
                    let chunk = v[at.min(end)..end].to_vec();
                    v.splice(at..at, chunk);
                }
            }
        }
        v
    }

    /// Runs `parse` on `mutants` mutations of `input`; a panic fails with the mutant's seed.
    fn survives(name: &str, input: &[u8], mutants: u64, parse: impl Fn(&[u8])) {
        for k in 0..mutants {
            let seed = 0x9E37_79B9_7F4A_7C15 ^ (k + 1).wrapping_mul(0x2545_F491_4F6C_DD1D);
            let mut rng = Rng::new(seed);
            let m = mutate(&mut rng, input);
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| parse(&m)));
            assert!(
                r.is_ok(),
                "{name}: mutant {k} (seed {seed:#x}, {} bytes) panicked",
                m.len()
            );
        }
    }

    /// Mutants per fixture: 2000, fewer for the largest fixtures (at most about 6 MB parsed per
    /// fixture), so that all of them take under 2 s in a debug build.
    fn mutants(len: usize) -> u64 {
        (6_000_000 / len.max(1)).clamp(400, 2000) as u64
    }

    /// Every text fixture of `format` survives its mutants.
    fn mutated_fixtures_survive(format: ImportFormat) {
        for (f, (name, bytes)) in TEXT_FIXTURES {
            if f == format {
                assert!(parse_bytes(format, bytes).is_ok(), "{name}");
                survives(name, bytes, mutants(bytes.len()), |m| {
                    let _ = parse_bytes(format, m);
                });
            }
        }
    }

    #[test]
    fn mutated_histograms_give_errors_never_panics() {
        mutated_fixtures_survive(ImportFormat::CyclictestHist);
    }

    #[test]
    fn mutated_verbose_output_gives_errors_never_panics() {
        mutated_fixtures_survive(ImportFormat::CyclictestVerbose);
    }

    #[test]
    fn mutated_cyclictest_json_gives_errors_never_panics() {
        mutated_fixtures_survive(ImportFormat::CyclictestJson);
    }

    #[test]
    fn mutated_oslat_json_gives_errors_never_panics() {
        mutated_fixtures_survive(ImportFormat::Oslat);
    }

    #[test]
    fn mutated_rtla_output_gives_errors_never_panics() {
        mutated_fixtures_survive(ImportFormat::RtlaOsnoiseTop);
        mutated_fixtures_survive(ImportFormat::RtlaOsnoiseHist);
    }

    #[test]
    fn mutated_stress_ng_logs_give_errors_never_panics() {
        mutated_fixtures_survive(ImportFormat::StressNg);
    }

    #[test]
    fn mutated_jitterdebugger_results_give_errors_never_panics() {
        mutated_fixtures_survive(ImportFormat::Jitterdebugger);
        let raw = samples_raw(40);
        assert!(parse_jitterdebugger(RESULTS_JSON, Some(&raw)).is_ok());
        survives("results.json with samples.raw", RESULTS_JSON, 500, |m| {
            let _ = parse_jitterdebugger(m, Some(&raw));
        });
    }

    #[test]
    fn mutated_jitterdebugger_samples_give_errors_never_panics() {
        let raw = samples_raw(40);
        let matching = matching_results(&raw, 1000);
        let full = parse_jitterdebugger(matching.as_bytes(), Some(&raw)).unwrap();
        assert!(
            full.threads
                .iter()
                .all(|t| t.figures.samples > 0 && t.histogram.count() == t.figures.samples),
            "the lossless path"
        );
        // With the fixture's results.json (parsed once: counts above the records) and with one
        // matching the records (the lossless path), in µs and ns.
        let res = jitter::Results::parse(RESULTS_JSON).unwrap();
        survives("samples.raw", &raw, 2000, |m| {
            if let Ok(r) = res.read_raw(m) {
                res.build(Some(&r));
            }
            for unit in [1000, 1] {
                let _ = parse_jitterdebugger(matching_results(m, unit).as_bytes(), Some(m));
            }
        });
    }

    #[test]
    fn fuzzing_finds_stay_fixed() {
        // cyclictest --json with a hugely negative hour in start_time: an overflow panic in the
        // date conversion. Now the time is unknown.
        let json = String::from_utf8(fixture!("out.json").1.to_vec()).unwrap();
        let bad_time = json.replace("01:41:18 +0000", "-9223372036854775807:41:18 +0000");
        assert_ne!(json, bad_time);
        let r = parse_bytes(ImportFormat::CyclictestJson, bad_time.as_bytes()).unwrap();
        assert_eq!(r.started_unix_ns, None);
        // A -v 'T:' line of thread 4000000000: four billion threads (out of memory).
        let e = parse_bytes(
            ImportFormat::CyclictestVerbose,
            b"0:0:1\nT: 4000000000 (1) P:80 I:200 C: 1 Min: 1 Act: 1 Avg: 1 Max: 1\n",
        )
        .unwrap_err();
        assert_eq!(e.at.as_deref(), Some("line 2"));
        assert!(e.what.contains("not plausible"), "{e}");
        // One sample of 1048575 per thread: an 8 MiB array each (out of memory). Now exact and
        // small: the values are counted in the map.
        let lines: String = (0..400).map(|t| format!("{t}:0:1048575\n")).collect();
        let r = parse_bytes(ImportFormat::CyclictestVerbose, lines.as_bytes()).unwrap();
        assert_eq!(r.threads.len(), 400);
        assert!(r
            .threads
            .iter()
            .all(|t| t.figures.max_ns == Some(1_048_575_000) && t.histogram.count() == 1));
        let n = 300;
        let row = |label: &str, v: &str| format!("# {label} {}\n", vec![v; n].join(" "));
        let hist = format!(
            "# Histogram\n1048575 {}\n{}{}{}{}",
            vec!["1"; n].join(" "),
            row("Min Latencies:", "1048575"),
            row("Avg Latencies:", "1048575"),
            row("Max Latencies:", "1048575"),
            row("Histogram Overflows:", "0"),
        );
        let r = parse_bytes(ImportFormat::CyclictestHist, hist.as_bytes()).unwrap();
        assert_eq!((r.threads.len(), r.samples()), (n, n as u64));
    }

    #[test]
    fn in_memory_parsing_matches_the_files_and_names_samples_raw() {
        let e = parse_bytes(ImportFormat::CyclictestVerbose, b"").unwrap_err();
        assert_eq!(e.what, "the file is empty");
        let e = parse_bytes(ImportFormat::StressNg, b"").unwrap_err();
        assert_eq!(e.what, "the file is empty");
        let e = parse_jitterdebugger(RESULTS_JSON, Some(&SAMPLES_RAW[..27])).unwrap_err();
        assert_eq!(e.at.as_deref(), Some("samples.raw"));
        let mut bad = SAMPLES_RAW[..56].to_vec();
        bad[28] = 7;
        let e = parse_jitterdebugger(RESULTS_JSON, Some(&bad)).unwrap_err();
        assert_eq!(e.at.as_deref(), Some("samples.raw, record 2 (byte 28)"));
        let r = parse_jitterdebugger(RESULTS_JSON, None).unwrap();
        assert_eq!(r.threads.len(), 2);
        assert!(r.notes[0].starts_with("no samples.raw"));
        // More records than the first read buffer holds.
        let raw = SAMPLES_RAW.repeat(5);
        let r = parse_jitterdebugger(matching_results(&raw, 1000).as_bytes(), Some(&raw)).unwrap();
        assert_eq!(r.samples(), 5000);
        assert_eq!(r.source["samples_raw_records"], json!(5000));
    }
}
