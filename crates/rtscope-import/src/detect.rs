//! Format detection by content, and reading files as text.
//!
//! A directory with `results.json` is jitterdebugger's; JSON with `"rt_test_version:"` is
//! cyclictest `--json`, or oslat's when its `"cmdline:"` names oslat (JSON with `"cpu"` is jitterdebugger's results.json given as a file); a
//! `# Histogram` line means histogram text; `thread:cycle:latency` lines mean `-v` output;
//! `T: 0 ( 8946) P:90 I:200 C: … Min: … Max: …` status lines (with no histogram) mean
//! cyclictest's summary (`-q`, a live status, `--spike`); `stress-ng` with `cyclic:` means a
//! stress-ng log; rtla's title `Operating System Noise` (or `Hardware-related Noise`) or its
//! header `CPU Period Runtime …` means `rtla osnoise top`, `# RTLA osnoise histogram` (or,
//! under `--no-header`, bucket rows ending in `over:` and `count:` lines) `rtla osnoise hist`;
//! rtla timerlat output is named and refused. The first MiB decides, and the last 8 MiB
//! are searched for `# Histogram` (a long run without `-q` prints its live status first).

use super::model::Bad;
use crate::ImportFormat;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// Bytes looked at from the start of a file.
const HEAD: u64 = 1 << 20;
/// Bytes looked at from the end of a file when the head does not decide.
const TAIL: u64 = 8 << 20;

/// The formats, as `--format` spells them.
pub const NAMES: &str = "cyclictest-hist, cyclictest-verbose, cyclictest-json, cyclictest-summary, jitterdebugger, stress-ng, oslat, rtla-osnoise-top, rtla-osnoise-hist";

/// The `--format` spelling of a format.
pub fn name(f: ImportFormat) -> &'static str {
    match f {
        ImportFormat::CyclictestHist => "cyclictest-hist",
        ImportFormat::CyclictestVerbose => "cyclictest-verbose",
        ImportFormat::CyclictestJson => "cyclictest-json",
        ImportFormat::Jitterdebugger => "jitterdebugger",
        ImportFormat::StressNg => "stress-ng",
        ImportFormat::CyclictestSummary => "cyclictest-summary",
        ImportFormat::Oslat => "oslat",
        ImportFormat::RtlaOsnoiseTop => "rtla-osnoise-top",
        ImportFormat::RtlaOsnoiseHist => "rtla-osnoise-hist",
    }
}

/// An input that is none of the formats: the error, with the formats listed.
pub fn unknown(why: &str) -> Bad {
    Bad::file(format!(
        "{why}: not one of the formats rtscope imports ({NAMES})"
    ))
}

/// Detects the format of `path` (a file or a directory) from its content.
pub fn detect(path: &Path) -> Result<ImportFormat, Bad> {
    if path.is_dir() {
        return if path.join("results.json").is_file() {
            Ok(ImportFormat::Jitterdebugger)
        } else {
            Err(unknown("a directory without results.json"))
        };
    }
    let mut f = open_regular(path)?;
    let len = f.metadata().map_or(0, |m| m.len());
    let head = read_at(&mut f, 0, HEAD)?;
    if head.is_empty() {
        return Err(Bad::file("the file is empty"));
    }
    if head.contains(&0) || !utf8_prefix(&head) {
        return Err(unknown("binary data"));
    }
    let text = String::from_utf8_lossy(&head);
    if let Some(f) = rtla(&text)? {
        return Ok(f);
    }
    if let Some(f) = by_content(&text) {
        return Ok(f);
    }
    if len > HEAD {
        let tail = read_at(&mut f, len.saturating_sub(TAIL).max(HEAD), TAIL)?;
        if String::from_utf8_lossy(&tail)
            .lines()
            .any(|l| l.trim_end() == "# Histogram")
        {
            return Ok(ImportFormat::CyclictestHist);
        }
    }
    Err(unknown("unrecognised content"))
}

/// Opens `path` for reading if it is a regular file: a FIFO is not waited on, and a pipe,
/// `/dev/stdin` or a device is refused (import reads files whole and may read them twice).
/// A `/proc` file (size 0 but not empty) is read like any other.
pub fn open_regular(path: &Path) -> Result<std::fs::File, Bad> {
    // Looked at before opening, so that a FIFO is never opened (which would wait for a writer).
    let m = std::fs::metadata(path).map_err(|e| Bad::file(format!("cannot read: {e}")))?;
    if !m.is_file() {
        return Err(Bad::file(
            "not a regular file (a pipe, FIFO, socket or device): save the output to a file and import that",
        ));
    }
    std::fs::File::open(path).map_err(|e| Bad::file(format!("cannot read: {e}")))
}

fn read_at(f: &mut std::fs::File, at: u64, max: u64) -> Result<Vec<u8>, Bad> {
    let mut buf = Vec::new();
    f.seek(SeekFrom::Start(at))
        .and_then(|_| f.take(max).read_to_end(&mut buf))
        .map_err(|e| Bad::file(format!("cannot read: {e}")))?;
    Ok(buf)
}

/// Whether `b` is UTF-8, allowing a character cut at the end.
fn utf8_prefix(b: &[u8]) -> bool {
    match std::str::from_utf8(b) {
        Ok(_) => true,
        Err(e) => e.error_len().is_none(),
    }
}

fn by_content(text: &str) -> Option<ImportFormat> {
    let trimmed = text.trim_start();
    if trimmed.starts_with('{') {
        if trimmed.contains("\"rt_test_version:\"") {
            return Some(if oslat_cmdline(trimmed) {
                ImportFormat::Oslat
            } else {
                ImportFormat::CyclictestJson
            });
        }
        if trimmed.contains("\"cpu\"") {
            return Some(ImportFormat::Jitterdebugger);
        }
        return None;
    }
    let mut verbose = false;
    for line in text.lines() {
        if line.trim_end() == "# Histogram" {
            return Some(ImportFormat::CyclictestHist);
        }
        verbose |= is_sample(line);
    }
    if verbose {
        return Some(ImportFormat::CyclictestVerbose);
    }
    if text.lines().any(crate::summary::is_status) {
        return Some(ImportFormat::CyclictestSummary);
    }
    if text.contains("stress-ng") && text.contains("cyclic:") {
        return Some(ImportFormat::StressNg);
    }
    None
}

/// rtla's text, by its title, header or footer lines (its colour escapes and screen clears
/// taken out); timerlat's is refused by name.
fn rtla(text: &str) -> Result<Option<ImportFormat>, Bad> {
    let (mut over, mut count) = (false, false);
    for line in text.lines() {
        let (l, _) = crate::rtla::clean(0, line).unwrap_or_default();
        match l.trim() {
            "Operating System Noise" | "Hardware-related Noise" => {
                return Ok(Some(ImportFormat::RtlaOsnoiseTop))
            }
            "# RTLA osnoise histogram" => return Ok(Some(ImportFormat::RtlaOsnoiseHist)),
            "# RTLA timerlat histogram" | "Timer Latency" => {
                return Err(Bad::file("rtla timerlat output: rtscope imports rtla osnoise top and hist, not timerlat (its IRQ and thread latencies are not a noise run)"))
            }
            t if t.starts_with("CPU Period ") && t.contains("Aval") => {
                return Ok(Some(ImportFormat::RtlaOsnoiseTop))
            }
            t => {
                over |= t.starts_with("over:");
                count |= over && t.starts_with("count:");
            }
        }
    }
    Ok((over && count).then_some(ImportFormat::RtlaOsnoiseHist))
}

/// Whether the `"cmdline:"` line of rt-tests JSON names oslat (its program name, the first word).
fn oslat_cmdline(text: &str) -> bool {
    const KEY: &str = "\"cmdline:\"";
    text.find(KEY).is_some_and(|p| {
        let rest = text[p + KEY.len()..].trim_start();
        let value = rest.strip_prefix(':').map_or("", str::trim_start);
        value
            .strip_prefix('"')
            .is_some_and(|v| crate::rtjson::is_oslat(v.split('"').next().unwrap_or("")))
    })
}

/// `^\s*\d+:\s*\d+:\s*\d+\s*$`, the shape of a `-v` sample line.
pub fn is_sample(line: &str) -> bool {
    let mut fields = line.trim_end().split(':');
    let ok = |f: Option<&str>| {
        f.map(str::trim_start)
            .is_some_and(|f| !f.is_empty() && f.bytes().all(|b| b.is_ascii_digit()))
    };
    ok(fields.next()) && ok(fields.next()) && ok(fields.next()) && fields.next().is_none()
}

/// The whole of `bytes` as text, or the line of the first byte that is not UTF-8.
pub fn text(bytes: &[u8]) -> Result<&str, Bad> {
    std::str::from_utf8(bytes).map_err(|e| {
        let at = e.valid_up_to();
        let line = bytes[..at].iter().filter(|&&b| b == b'\n').count() + 1;
        Bad::line(
            line,
            format!("binary data, not text (byte {at} is not UTF-8)"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(name: &str, content: &[u8]) -> std::path::PathBuf {
        let p = std::env::temp_dir().join(format!("rtscope-detect-{}-{name}", std::process::id()));
        std::fs::write(&p, content).unwrap();
        p
    }

    #[test]
    fn each_format_is_recognised_by_its_content() {
        let cases: [(&str, &[u8], ImportFormat); 6] = [
            (
                "h",
                b"# /dev/cpu_dma_latency set to 0us\n# Histogram\n000000 000001\n",
                ImportFormat::CyclictestHist,
            ),
            (
                "v",
                b"Max CPUs = 2\n       0:       0:      80\n",
                ImportFormat::CyclictestVerbose,
            ),
            (
                "j",
                b"{\n  \"file_version\": 1,\n  \"rt_test_version:\": \"2.40\"}",
                ImportFormat::CyclictestJson,
            ),
            (
                "o",
                b"{\n  \"file_version\": 1,\n  \"cmdline:\": \"/usr/bin/oslat -D 2\",\n  \"rt_test_version:\": \"2.40\"}",
                ImportFormat::Oslat,
            ),
            (
                "jd",
                b"{\"version\": 3, \"cpu\": {}}",
                ImportFormat::Jitterdebugger,
            ),
            (
                "s",
                b"stress-ng: info:  [1] cyclic:   mean: 1 ns\n",
                ImportFormat::StressNg,
            ),
        ];
        for (name, content, want) in cases {
            assert_eq!(detect(&file(name, content)), Ok(want), "{name}");
        }
    }

    #[test]
    fn rtla_output_is_recognised_and_timerlat_named() {
        let dir =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../rtscope/tests/fixtures/import/rtla");
        let mut seen = 0;
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            let want = if name.starts_with("top-") {
                ImportFormat::RtlaOsnoiseTop
            } else if name.starts_with("hist-") && name.ends_with(".txt") || name == "hist.txt" {
                ImportFormat::RtlaOsnoiseHist
            } else {
                continue;
            };
            assert_eq!(detect(&p), Ok(want), "{name}");
            seen += 1;
        }
        assert_eq!(seen, 11);
        let e = detect(&file("tl", b"# RTLA timerlat histogram\nIndex   IRQ-000\n")).unwrap_err();
        assert!(e.what.contains("not timerlat"), "{e}");
        let e = detect(&file(
            "tt",
            b"\x1b[2;37;40m                  Timer Latency\n",
        ))
        .unwrap_err();
        assert!(e.what.contains("rtla timerlat"), "{e}");
    }

    #[test]
    fn unknown_empty_and_binary_inputs_are_refused_with_the_formats_listed() {
        let e = detect(&file("e", b"")).unwrap_err();
        assert_eq!(e.what, "the file is empty");
        let e = detect(&file("b", &[0x7f, b'E', b'L', b'F', 0, 1, 2])).unwrap_err();
        assert!(e.what.contains("binary") && e.what.contains(NAMES), "{e}");
        let e = detect(&file("t", b"hello world\n")).unwrap_err();
        assert!(e.what.contains("cyclictest-verbose"), "{e}");
        let dir = std::env::temp_dir().join(format!("rtscope-detect-{}-dir", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        assert!(detect(&dir)
            .unwrap_err()
            .what
            .contains("without results.json"));
    }

    #[test]
    fn sample_lines_and_text_errors() {
        assert!(is_sample("       0:       1:     117"));
        assert!(is_sample("0:1:2\r"));
        assert!(!is_sample("0:1"));
        assert!(!is_sample("T: 0 (1) P:80"));
        assert!(!is_sample("0:1:2:3"));
        let e = text(b"ok\nok\n\xff").unwrap_err();
        assert_eq!(e.at.as_deref(), Some("line 3"));
    }
}
