//! `-v` sample lines.

use super::summary::t_block;
use super::*;
use regex::Regex;

/// Preamble lines `-v` may print before the samples (option-dependent).
const VERBOSE_PREAMBLE: &[&str] = &[
    r"^Max CPUs = \d+$",
    r"^Online CPUs = \d+$",
    r"^Using \d+ cpus\.$",
    PREAMBLE_RE,
    r"^Thread \d+ using cpu -?\d+\.$",
    r"^Thread \d+ Interval: \d+$",
];

/// A parsed `-v` output.
#[derive(Clone, Debug)]
pub struct Verbose {
    /// (thread, cycle, latency)
    pub samples: Vec<(u64, u64, i64)>,
    /// Final `T:` lines (printed with `-q` only).
    pub summary: Vec<TLine>,
}

/// Checks `-v` output: preamble lines, then `%8d:%8lu:%8ld` sample lines
/// (cycle numbers increasing per thread), then optional final `T:` lines.
pub fn check_verbose(text: &str) -> Result<(), String> {
    parse_verbose(text).map(|_| ())
}

/// Like [`check_verbose`], returning the samples.
pub fn parse_verbose(text: &str) -> Result<Verbose, String> {
    let lines = lines_of(text)?;
    let pre: Vec<Regex> = VERBOSE_PREAMBLE
        .iter()
        .map(|p| Regex::new(p).expect("regex"))
        .collect();
    let mut i = 0;
    let mut intervals = 0u64;
    while i < lines.len() && pre.iter().any(|r| r.is_match(lines[i])) {
        intervals += u64::from(lines[i].contains(" Interval: "));
        i += 1;
    }
    let mut samples: Vec<(u64, u64, i64)> = Vec::new();
    while i < lines.len() && !lines[i].starts_with("T:") {
        let s = verbose_sample(lines[i]).map_err(|e| at(i + 1, lines[i], e))?;
        if intervals > 0 && s.0 >= intervals {
            return Err(at(
                i + 1,
                lines[i],
                format!("thread {} but only {intervals} threads announced", s.0),
            ));
        }
        if let Some(p) = samples
            .iter()
            .rev()
            .find(|p| p.0 == s.0)
            .filter(|p| p.1 >= s.1)
        {
            return Err(at(
                i + 1,
                lines[i],
                format!("cycle numbers must increase per thread (previous {})", p.1),
            ));
        }
        samples.push(s);
        i += 1;
    }
    if samples.is_empty() {
        return Err(at(
            i + 1,
            lines.get(i).copied().unwrap_or(""),
            "expected `%8d:%8lu:%8ld` sample lines",
        ));
    }
    let nsecs = lines
        .get(i)
        .is_some_and(|l| parse_t_line(l, false).is_err() && parse_t_line(l, true).is_ok());
    let (summary, next) = t_block(&lines, i, nsecs, true)?;
    if next < lines.len() {
        return Err(at(next + 1, lines[next], "unexpected line in -v output"));
    }
    verbose_vs_summary(&samples, &summary).map_err(|(k, e)| at(i + k + 1, lines[i + k], e))?;
    Ok(Verbose { samples, summary })
}

fn verbose_sample(line: &str) -> Result<(u64, u64, i64), String> {
    let parts: Vec<&str> = line.split(':').collect();
    if parts.len() != 3 {
        return Err("expected a `%8d:%8lu:%8ld` sample line".into());
    }
    let mut v = [0i64; 3];
    for (k, name) in ["thread", "cycle", "latency"].iter().enumerate() {
        v[k] = space_padded(parts[k], 8).map_err(|e| format!("{name} {e}"))?;
    }
    if v[0] < 0 || v[1] < 0 {
        return Err("negative thread or cycle number".into());
    }
    Ok((v[0] as u64, v[1] as u64, v[2]))
}

/// Sample lines vs the final `T:` lines; `Err` carries the `T:` line offset.
fn verbose_vs_summary(
    samples: &[(u64, u64, i64)],
    summary: &[TLine],
) -> Result<(), (usize, String)> {
    for (k, t) in summary.iter().enumerate() {
        let fail = |msg: String| Err((k, msg));
        let mine: Vec<_> = samples.iter().filter(|s| s.0 == t.thread as u64).collect();
        if mine.len() as i64 > t.cycles {
            return fail(format!(
                "thread {}: {} sample lines but C: {}",
                t.thread,
                mine.len(),
                t.cycles
            ));
        }
        if let Some(last) = mine.last().filter(|s| s.1 as i64 >= t.cycles) {
            return fail(format!(
                "thread {}: sample cycle {} >= C: {}",
                t.thread, last.1, t.cycles
            ));
        }
    }
    Ok(())
}
