//! cyclictest `-v` verbose output: a preamble, one `thread:cycle:latency` line per sample (each
//! field right-aligned in 8 columns, latency in µs, or ns with `-N`), and a final `T:` line per
//! thread.
//!
//! Built for size: the file is read in 8 MiB chunks and each line is parsed byte by byte with no
//! allocation; samples go into a per-thread dense counter array (see [`Counter`]), turned into
//! the histogram once at the end. Statistics are exact over the lines present. The unit comes
//! from the `T:` lines (`-N` widens `Act:` to 8 columns); without them it is µs.

use super::model::{excerpt, Bad, Counter, Imported, ThreadRow};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::io::Read;

/// Bytes read at a time, at most: the buffer starts at [`FIRST_CHUNK`] and doubles while reads
/// fill it (a small file does not cost 8 MiB of zeroing).
const CHUNK: usize = 8 << 20;
const FIRST_CHUNK: usize = 64 << 10;
/// Thread indices at or above this are refused (a garbage line must not allocate gigabytes).
const MAX_THREADS: u64 = 4096;

/// A final `T: 0 (27975) P:80 I:200 C:    200 Min:      4 Act:    4 Avg:    4 Max:      11`.
#[derive(Debug, Clone, Default, PartialEq)]
struct TLine {
    index: u32,
    tid: i32,
    prio: Option<i64>,
    interval_us: Option<u64>,
    cycles: Option<u64>,
    min: Option<u64>,
    avg: Option<u64>,
    max: Option<u64>,
    /// Width of the `Act:` field: 5 in µs mode, 8 with `-N`.
    act_width: usize,
}

#[derive(Default)]
struct State {
    counters: Vec<Counter>,
    line: usize,
    in_hist: bool,
    tlines: BTreeMap<u32, TLine>,
    cpus: BTreeMap<u32, u32>,
    negatives: u64,
}

/// Parses `-v` output from `input`.
// Inlined into its callers: as a function of its own (since `parse_bytes` became a second
// caller), the size-optimised release build imports 10 million lines about 5 % slower.
#[inline(always)]
pub fn parse(input: &mut dyn Read) -> Result<Imported, Bad> {
    let mut st = State::default();
    let mut buf = vec![0u8; FIRST_CHUNK];
    let mut filled = 0;
    loop {
        let n = read_some(input, &mut buf[filled..])?;
        filled += n;
        let full = filled == buf.len();
        let grow = |buf: &mut Vec<u8>| {
            if full && buf.len() < CHUNK {
                buf.resize(buf.len() * 2, 0);
            }
        };
        let end = if n == 0 {
            filled
        } else {
            match buf[..filled].iter().rposition(|&b| b == b'\n') {
                Some(p) => p + 1,
                None if full && buf.len() >= CHUNK => {
                    return Err(Bad::line(
                        st.line + 1,
                        "a line longer than 8 MiB: this is not cyclictest -v output",
                    ))
                }
                None => {
                    grow(&mut buf);
                    continue;
                }
            }
        };
        st.feed(&buf[..end])?;
        buf.copy_within(end..filled, 0);
        filled -= end;
        if n == 0 {
            break;
        }
        grow(&mut buf);
    }
    st.finish()
}

fn read_some(input: &mut dyn Read, buf: &mut [u8]) -> Result<usize, Bad> {
    loop {
        match input.read(buf) {
            Ok(n) => return Ok(n),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Bad::file(format!("cannot read: {e}"))),
        }
    }
}

#[inline(always)]
fn spaces(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && b[i] == b' ' {
        i += 1;
    }
    i
}

/// Digits at `i`: (value, end, number of digits). Callers bound the digit count, so the value
/// cannot overflow.
#[inline(always)]
fn digits(b: &[u8], mut i: usize) -> (u64, usize, usize) {
    let start = i;
    let mut v = 0u64;
    while i < b.len() {
        let d = b[i].wrapping_sub(b'0');
        if d > 9 {
            break;
        }
        v = v.wrapping_mul(10).wrapping_add(u64::from(d));
        i += 1;
    }
    (v, i, i - start)
}

/// One sample line starting at `i`: `(thread, cycle, latency, negative, start of next line)`.
/// `None` for anything else (the slow path then looks at the line).
#[inline(always)]
fn sample(b: &[u8], i: usize) -> Option<(u64, u64, u64, bool, usize)> {
    let (t, i, n) = digits(b, spaces(b, i));
    if n == 0 || n > 6 || b.get(i) != Some(&b':') {
        return None;
    }
    let (c, i, n) = digits(b, spaces(b, i + 1));
    if n == 0 || n > 18 || b.get(i) != Some(&b':') {
        return None;
    }
    let mut i = spaces(b, i + 1);
    let neg = b.get(i) == Some(&b'-');
    i += usize::from(neg);
    let (v, mut i, n) = digits(b, i);
    if n == 0 || n > 18 {
        return None;
    }
    if b.get(i) == Some(&b' ') {
        // `--smi` appends the SMI count.
        let (_, j, _) = digits(b, spaces(b, i));
        i = j;
    }
    if b.get(i) == Some(&b'\r') {
        i += 1;
    }
    match b.get(i) {
        Some(&b'\n') => Some((t, c, v, neg, i + 1)),
        None => Some((t, c, v, neg, i)),
        Some(_) => None,
    }
}

impl State {
    fn feed(&mut self, b: &[u8]) -> Result<(), Bad> {
        let mut i = 0;
        while i < b.len() {
            self.line += 1;
            if let Some((t, c, v, neg, next)) = sample(b, i) {
                self.count(t, c, v, neg)?;
                i = next;
            } else {
                let end = b[i..]
                    .iter()
                    .position(|&x| x == b'\n')
                    .map_or(b.len(), |p| i + p + 1);
                self.text_line(&b[i..end])?;
                i = end;
            }
        }
        Ok(())
    }

    #[inline(always)]
    fn count(&mut self, t: u64, cycle: u64, v: u64, neg: bool) -> Result<(), Bad> {
        let t = t as usize;
        if t >= self.counters.len() {
            if t as u64 >= MAX_THREADS {
                return Err(Bad::line(
                    self.line,
                    format!("thread index {t} is not plausible (at most {MAX_THREADS} threads)"),
                ));
            }
            self.counters.resize_with(t + 1, Counter::new);
        }
        if neg {
            self.negatives += 1;
            self.counters[t].add(0, cycle);
        } else {
            self.counters[t].add(v, cycle);
        }
        Ok(())
    }

    fn text_line(&mut self, raw: &[u8]) -> Result<(), Bad> {
        let Ok(text) = std::str::from_utf8(raw) else {
            return Err(Bad::line(self.line, "binary data, not text"));
        };
        let line = text.trim_end_matches(['\n', '\r']);
        if line.contains('\0') {
            return Err(Bad::line(self.line, "binary data, not text"));
        }
        let trimmed = line.trim_start();
        if trimmed.is_empty() {
            self.in_hist = false;
        } else if trimmed.starts_with(|c: char| c.is_ascii_digit()) {
            if !self.in_hist {
                return Err(Bad::line(
                    self.line,
                    format!(
                        "expected a 'thread:cycle:latency' sample (e.g. '       0:      12:      15'), found '{}'",
                        excerpt(line, 60)
                    ),
                ));
            }
        } else if line.starts_with("T:") {
            let t = tline(line).ok_or_else(|| {
                Bad::line(
                    self.line,
                    format!("unreadable 'T:' summary line '{}'", excerpt(line, 80)),
                )
            })?;
            // Every thread up to the highest `T:` index becomes one of the run's threads.
            if u64::from(t.index) >= MAX_THREADS {
                return Err(Bad::line(
                    self.line,
                    format!(
                        "'T:' line of thread {}: not plausible (at most {MAX_THREADS} threads)",
                        t.index
                    ),
                ));
            }
            self.tlines.insert(t.index, t);
        } else if line.starts_with("# Histogram") {
            self.in_hist = true;
        } else if let Some((t, cpu)) = using_cpu(line) {
            self.cpus.insert(t, cpu);
        }
        Ok(())
    }

    fn finish(self) -> Result<Imported, Bad> {
        if self.counters.iter().all(|c| c.count == 0) {
            return Err(Bad::file(
                "no 'thread:cycle:latency' sample lines: this is not cyclictest -v output",
            ));
        }
        let ns = self.tlines.values().any(|t| t.act_width >= 8);
        let unit = if ns { 1 } else { 1000 };
        let last = self
            .tlines
            .keys()
            .next_back()
            .map_or(0, |&k| k as usize + 1);
        let mut out = Imported::default();
        let mut reported = Map::new();
        let mut lost = Vec::new();
        let empty = Counter::new();
        for t in 0..self.counters.len().max(last) {
            let c = self.counters.get(t).unwrap_or(&empty);
            let mut d = ThreadRow::new(t as u32);
            d.figures.samples = c.count;
            if c.count > 0 {
                d.figures.min_ns = Some(c.min.saturating_mul(unit));
                d.figures.max_ns = Some(c.max.saturating_mul(unit));
                d.figures.mean_ns = c.mean_ns(unit);
                d.figures.max_cycle = Some(c.max_cycle);
            }
            d.histogram = c.histogram(unit);
            d.cpu = self.cpus.get(&(t as u32)).copied();
            if let Some(tl) = self.tlines.get(&(t as u32)) {
                d.tid = Some(tl.tid).filter(|&v| v != 0);
                d.priority = tl.prio.map_or(0, |p| p as i32);
                d.interval_ns = tl.interval_us.map_or(0, |i| i.saturating_mul(1000));
                reported.insert(
                    t.to_string(),
                    json!({"cycles": tl.cycles, "min": tl.min, "avg": tl.avg, "max": tl.max}),
                );
                if let Some(cycles) = tl.cycles.filter(|&n| n > c.count) {
                    lost.push(format!("thread {t}: {} of {cycles} cycles", c.count));
                }
            }
            out.threads.push(d);
        }
        out.source = self.source(ns, reported, &out);
        self.notes(&mut out, ns, lost);
        Ok(out)
    }

    fn source(&self, ns: bool, reported: Map<String, Value>, out: &Imported) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("unit".into(), json!(if ns { "ns" } else { "us" }));
        m.insert("lines".into(), json!(self.line));
        let known = !self.tlines.is_empty();
        let per = |f: &dyn Fn(&ThreadRow) -> Value| -> Value {
            if known {
                Value::Array(out.threads.iter().map(f).collect())
            } else {
                Value::Null
            }
        };
        m.insert("interval_us".into(), per(&|t| json!(t.interval_ns / 1000)));
        m.insert("priority".into(), per(&|t| json!(t.priority)));
        m.insert("reported_by_t_lines".into(), Value::Object(reported));
        m.insert("negative_latencies".into(), json!(self.negatives));
        m
    }

    fn notes(&self, out: &mut Imported, ns: bool, lost: Vec<String>) {
        if self.tlines.is_empty() {
            out.notes.push(
                "no final 'T:' lines: the file may be truncated; latencies taken as µs".into(),
            );
        } else if ns {
            out.notes.push("latencies are in ns (cyclictest -N)".into());
        }
        if !lost.is_empty() {
            out.notes.push(format!(
                "fewer sample lines than cycles ({}): cyclictest drops -v lines it cannot write in time and those still buffered at exit",
                lost.join(", ")
            ));
        }
        if self.negatives > 0 {
            out.notes.push(format!(
                "{} negative latencies were counted as 0",
                self.negatives
            ));
        }
    }
}

/// The number after `key` (spaces allowed between), e.g. `C:    200`.
fn after(line: &str, key: &str) -> Option<u64> {
    let rest = &line[line.find(key)? + key.len()..];
    let rest = rest.trim_start();
    let end = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    rest[..end].parse().ok()
}

fn tline(line: &str) -> Option<TLine> {
    let rest = line.strip_prefix("T:")?.trim_start();
    let (idx, rest) = rest.split_once(' ')?;
    let tid = rest
        .trim_start()
        .strip_prefix('(')
        .and_then(|r| r.split_once(')'))
        .and_then(|(t, _)| t.trim().parse().ok())
        .unwrap_or(0);
    let act_width = line
        .split_once("Act:")
        .and_then(|(_, r)| r.split_once(" Avg:"))
        .map_or(0, |(a, _)| a.len());
    Some(TLine {
        index: idx.parse().ok()?,
        tid,
        prio: after(line, " P:").map(|p| p as i64),
        interval_us: after(line, " I:"),
        cycles: Some(after(line, " C:")?),
        min: after(line, " Min:"),
        avg: after(line, " Avg:"),
        max: after(line, " Max:"),
        act_width,
    })
}

/// `Thread 0 using cpu 1.`
fn using_cpu(line: &str) -> Option<(u32, u32)> {
    let rest = line.strip_prefix("Thread ")?;
    let (t, rest) = rest.split_once(" using cpu ")?;
    Some((t.parse().ok()?, rest.trim_end_matches('.').parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(text: &str) -> Result<Imported, Bad> {
        parse(&mut text.as_bytes())
    }

    const TEXT: &str = "Max CPUs = 2\nOnline CPUs = 2\n# /dev/cpu_dma_latency set to 0us\nThread 0 Interval: 700\nThread 0 using cpu 1.\n       0:       0:       8\n       1:       0:      13\n       0:       1:      12\n       0:       2:       5\nT: 0 (27975) P:80 I:200 C:      3 Min:      5 Act:    5 Avg:    8 Max:      12\nT: 1 (27976) P:80 I:700 C:      2 Min:     13 Act:   13 Avg:   13 Max:      13\n";

    #[test]
    fn samples_give_exact_statistics_and_the_t_lines_the_threads() {
        let r = p(TEXT).unwrap();
        assert_eq!(r.threads.len(), 2);
        let t0 = &r.threads[0];
        assert_eq!(
            (t0.figures.samples, t0.figures.min_ns, t0.figures.max_ns),
            (3, Some(5000), Some(12000))
        );
        assert_eq!(t0.figures.mean_ns, Some(25000.0 / 3.0));
        assert_eq!(
            (t0.figures.max_cycle, t0.tid, t0.priority, t0.interval_ns),
            (Some(1), Some(27975), 80, 200_000)
        );
        assert_eq!(t0.cpu, Some(1));
        assert_eq!(r.threads[1].interval_ns, 700_000);
        assert!(
            r.notes
                .iter()
                .any(|n| n.contains("thread 1: 1 of 2 cycles")),
            "{:?}",
            r.notes
        );
        assert_eq!(r.source["unit"], json!("us"));
    }

    #[test]
    fn a_chunk_boundary_inside_a_line_changes_nothing() {
        struct Trickle<'a>(&'a [u8]);
        impl Read for Trickle<'_> {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                let n = buf.len().min(7).min(self.0.len());
                buf[..n].copy_from_slice(&self.0[..n]);
                self.0 = &self.0[n..];
                Ok(n)
            }
        }
        let a = parse(&mut Trickle(TEXT.as_bytes())).unwrap();
        let b = p(TEXT).unwrap();
        assert_eq!(a.threads, b.threads);
    }

    #[test]
    fn the_read_buffer_grows_for_large_files_and_long_lines() {
        let long = format!("Max CPUs = {}\n", "x".repeat(3 * FIRST_CHUNK));
        let samples: String = (0..40_000)
            .map(|c| format!("{:8}:{c:8}:{:8}\n", c % 2, c % 97))
            .collect();
        let r = p(&format!("{long}{samples}")).unwrap();
        assert_eq!(
            (r.threads[0].figures.samples, r.threads[1].figures.samples),
            (20_000, 20_000)
        );
        assert_eq!(r.threads[0].figures.max_ns, Some(96_000));
    }

    #[test]
    fn nanosecond_output_is_recognised_by_its_wide_act_field() {
        let text = "       0:       0:   14091\n       0:       1:    9347\nT: 0 (29393) P:80 I:200 C:      2 Min:   9347 Act:    9347 Avg:   11719 Max:   14091\n";
        let r = p(text).unwrap();
        assert_eq!(r.threads[0].figures.max_ns, Some(14091));
        assert_eq!(r.source["unit"], json!("ns"));
    }

    #[test]
    fn smi_columns_crlf_negative_values_and_an_interleaved_histogram_are_accepted() {
        let text = "       0:       0:      12       0\r\n       0:       1:      -3\n# Histogram\n000000 000001\n\n       0:       2:       7";
        let r = p(text).unwrap();
        let t = &r.threads[0];
        assert_eq!(
            (t.figures.samples, t.figures.min_ns, t.figures.max_ns),
            (3, Some(0), Some(12000))
        );
        assert_eq!(r.source["negative_latencies"], json!(1));
        assert!(r.notes.iter().any(|n| n.contains("truncated")));
    }

    #[test]
    fn broken_lines_are_refused_with_their_number() {
        for (text, want) in [
            (
                "       0:       0:      12\n       0:       1:     1x3\n",
                "line 2:",
            ),
            ("       0:       0:      12\n       0:       1", "line 2:"),
            (
                "       0:       0:      12\nT: x\n",
                "line 2: unreadable 'T:'",
            ),
            ("       9999999:       0:      12\n", "line 1:"),
            ("       5000:       0:      12\n", "not plausible"),
            ("Max CPUs = 2\n", "no 'thread:cycle:latency'"),
            ("\u{0}\u{1}garbage\n", "line 1: binary"),
        ] {
            let e = p(text).unwrap_err().to_string();
            assert!(e.contains(want), "{want:?} not in {e:?}");
        }
        let e = parse(&mut &[0xffu8, 0xfe, b'\n'][..])
            .unwrap_err()
            .to_string();
        assert!(e.contains("binary"), "{e}");
    }

    #[test]
    fn t_lines_parse_with_and_without_interval() {
        let t =
            tline("T:12 ( 8946) P:90 I:200 C:  20000 Min:      8 Act:   12 Avg:   24 Max:    6368")
                .unwrap();
        assert_eq!(
            (t.index, t.tid, t.prio, t.interval_us, t.cycles, t.max),
            (12, 8946, Some(90), Some(200), Some(20000), Some(6368))
        );
        assert_eq!(t.act_width, 5);
        let old = tline("T: 0 ( 123) P:95 C:2999967 Min:  6 Act:7 Avg:7 Max:  12").unwrap();
        assert_eq!((old.interval_us, old.cycles), (None, Some(2_999_967)));
    }
}
