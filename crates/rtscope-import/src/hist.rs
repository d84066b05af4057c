//! cyclictest `-h`/`-H` histogram text, in both forms: Debian's rt-tests 2.4 (every bucket, empty
//! ones included, and a `# Total:` line) and upstream 2.7+ (non-empty buckets only, no total).
//!
//! Buckets are 1 µs wide (bucket `i` holds samples whose truncated latency is `i` µs); each is
//! recorded as `i` µs. Samples at or above the histogram's size (overflows) have no value in the
//! file: they count as samples, and the `# Max Latencies:` value (exact) is the max, but they are
//! not in the histogram. The mean is exact when nothing overflowed (computed from the buckets),
//! else cyclictest's truncated integer `# Avg Latencies:` value.

use super::model::{excerpt, parse_u64, Bad, Imported, ThreadRow, MAX_COUNT};
use rtscope_core::{Histogram, Nanos};
use serde_json::{json, Map, Value};
use std::io::{BufRead, Read};

/// The values of one trailer line and where it was.
#[derive(Debug, Clone, Default)]
struct Vals {
    line: usize,
    v: Vec<u64>,
}

#[derive(Debug, Default)]
struct Trailer {
    total: Option<Vals>,
    min: Option<Vals>,
    avg: Option<Vals>,
    max: Option<Vals>,
    overflows: Option<Vals>,
    /// Per thread: the listed overflow cycles and how many more were not listed.
    cycles: Vec<(usize, Vec<u64>, u64)>,
    thread_ids: Option<Vals>,
    break_thread: Option<u64>,
    break_value: Option<u64>,
}

/// The bucket rows, tallied as they are read: memory bounded by the number of columns, never
/// by the number of rows (a 300 MB file is read in constant memory).
#[derive(Debug, Default)]
struct Rows {
    first_line: usize,
    /// Rows read.
    count: usize,
    /// The last row's bucket.
    prev: Option<u64>,
    /// Whether every bucket so far is its row's index (Debian's full form).
    full: bool,
    /// One tally per column (the last one is `-H`'s sum column when there is one).
    columns: Vec<Tally>,
    /// The first row (line, bucket) whose last count is not the sum of the others: an error
    /// only if that column turns out to be `-H`'s sum.
    bad_sum: Option<(usize, u64)>,
}

/// One column's counts: the lossless histogram (bounded by its layout, whatever the number of
/// rows) and the exact sum for the mean.
#[derive(Debug, Clone, Default)]
struct Tally {
    histogram: Histogram,
    count: u64,
    /// Sum of the buckets (µs) times their counts.
    sum: u128,
    min: u64,
    max: u64,
}

impl Tally {
    fn add(&mut self, bucket: u64, n: u64) {
        if n == 0 {
            return;
        }
        if self.count.saturating_add(n) > MAX_COUNT {
            // Refused by `build` as not plausible; the histogram is left below its limits.
            self.count = self.count.saturating_add(n);
            return;
        }
        if self.count == 0 {
            self.min = bucket;
        }
        self.histogram
            .record_n(Nanos(bucket.saturating_mul(1000)), n);
        self.count = self.count.saturating_add(n);
        self.sum = self.sum.saturating_add(u128::from(bucket) * u128::from(n));
        self.min = self.min.min(bucket);
        self.max = self.max.max(bucket);
    }

    fn mean_ns(&self) -> Option<f64> {
        (self.count > 0).then(|| self.sum as f64 * 1000.0 / self.count as f64)
    }
}

/// The most counts a bucket row may have: 1,024 threads and `-H`'s sum column. Bounds the
/// memory of the tallies.
pub const MAX_COLUMNS: usize = 1025;

/// The longest line read: a row of [`MAX_COLUMNS`] counts is far shorter.
pub const MAX_LINE: usize = 1 << 20;

#[derive(PartialEq)]
enum Stage {
    Preamble,
    Rows,
    Trailer,
}

/// Parses histogram text held in memory.
#[cfg(test)]
pub fn parse(text: &str) -> Result<Imported, Bad> {
    parse_reader(&mut text.as_bytes())
}

/// Parses histogram text read line by line from `input`, in memory bounded by the number of
/// columns ([`MAX_COLUMNS`]) and the longest line ([`MAX_LINE`]), whatever the file's size.
pub fn parse_reader(input: &mut dyn BufRead) -> Result<Imported, Bad> {
    let mut stage = Stage::Preamble;
    let mut rows = Rows {
        full: true,
        ..Rows::default()
    };
    let mut tr = Trailer::default();
    let mut last = 0;
    let mut buf = Vec::new();
    let mut offset = 0usize;
    loop {
        buf.clear();
        let read = input
            .take(MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut buf)
            .map_err(|e| Bad::file(format!("cannot read: {e}")))?;
        if read == 0 {
            break;
        }
        let n = last + 1;
        last = n;
        if buf.len() > MAX_LINE && buf.last() != Some(&b'\n') {
            return Err(Bad::line(
                n,
                format!(
                    "a line longer than {} MiB: this is not cyclictest -h output",
                    MAX_LINE >> 20
                ),
            ));
        }
        let raw = std::str::from_utf8(&buf).map_err(|e| {
            let at = offset + e.valid_up_to();
            Bad::line(n, format!("binary data, not text (byte {at} is not UTF-8)"))
        })?;
        offset += read;
        let line = raw.trim_end();
        match stage {
            Stage::Preamble if line == "# Histogram" => stage = Stage::Rows,
            Stage::Preamble => {}
            Stage::Rows if line.is_empty() => {}
            Stage::Rows if line.starts_with('#') => {
                stage = Stage::Trailer;
                trailer_line(n, line, &mut tr)?;
            }
            Stage::Rows => row(n, line, &mut rows)?,
            Stage::Trailer if line.starts_with('#') => trailer_line(n, line, &mut tr)?,
            Stage::Trailer if line.is_empty() || tr.overflows.is_some() => {}
            Stage::Trailer => {
                return Err(Bad::line(
                    n,
                    format!(
                        "expected a '# …' trailer line after the buckets, found '{}'",
                        excerpt(line, 60)
                    ),
                ))
            }
        }
    }
    if offset == 0 {
        return Err(Bad::file("the file is empty"));
    }
    if stage == Stage::Preamble {
        return Err(Bad::file(
            "no '# Histogram' line: this is not cyclictest -h/-H output",
        ));
    }
    build(&rows, &tr, last)
}

fn row(n: usize, line: &str, rows: &mut Rows) -> Result<(), Bad> {
    let bad = |why: String| {
        Bad::line(
            n,
            format!(
                "{why} in bucket row '{}' (expected e.g. '000013 004376\t000861')",
                excerpt(line, 60)
            ),
        )
    };
    let mut it = line.split_whitespace();
    let first = it.next().unwrap_or_default();
    let bucket =
        parse_u64(first).ok_or_else(|| bad(format!("'{first}' is not a bucket number")))?;
    let mut counts = Vec::new();
    for (k, tok) in it.enumerate() {
        counts.push(
            parse_u64(tok)
                .ok_or_else(|| bad(format!("count {} is '{tok}', not a number", k + 1)))?,
        );
    }
    if counts.is_empty() {
        return Err(bad("no counts".into()));
    }
    if counts.len() > MAX_COLUMNS {
        return Err(bad(format!(
            "{} counts (at most {MAX_COLUMNS}: 1,024 threads and a sum)",
            counts.len()
        )));
    }
    if let Some(prev) = rows.prev {
        if rows.columns.len() != counts.len() {
            return Err(bad(format!(
                "{} counts where the rows above have {}",
                counts.len(),
                rows.columns.len()
            )));
        }
        if bucket <= prev {
            return Err(bad(format!(
                "bucket {bucket} does not follow bucket {prev}"
            )));
        }
    } else {
        rows.first_line = n;
        rows.columns = vec![Tally::default(); counts.len()];
    }
    let (last, others) = counts.split_last().expect("counts is not empty");
    // Summed in u128: hostile counts near u64::MAX must not overflow (a fuzzer found it).
    let others_sum: u128 = others.iter().map(|&c| u128::from(c)).sum();
    if rows.bad_sum.is_none() && others.len() >= 2 && u128::from(*last) != others_sum {
        rows.bad_sum = Some((n, bucket));
    }
    for (t, &c) in rows.columns.iter_mut().zip(&counts) {
        t.add(bucket, c);
    }
    rows.full &= bucket == rows.count as u64;
    rows.count += 1;
    rows.prev = Some(bucket);
    Ok(())
}

fn numbers(n: usize, label: &str, rest: &str) -> Result<Vals, Bad> {
    let mut v = Vec::new();
    for (k, tok) in rest.split_whitespace().enumerate() {
        v.push(parse_u64(tok).ok_or_else(|| {
            Bad::line(
                n,
                format!("'# {label}' value {} is '{tok}', not a number", k + 1),
            )
        })?);
    }
    Ok(Vals { line: n, v })
}

fn trailer_line(n: usize, line: &str, tr: &mut Trailer) -> Result<(), Bad> {
    let body = line.trim_start_matches('#').trim_start();
    let labelled = |label: &str| body.strip_prefix(label);
    if let Some(r) = labelled("Total:") {
        tr.total = Some(numbers(n, "Total:", r)?);
    } else if let Some(r) = labelled("Min Latencies:") {
        tr.min = Some(numbers(n, "Min Latencies:", r)?);
    } else if let Some(r) = labelled("Avg Latencies:") {
        tr.avg = Some(numbers(n, "Avg Latencies:", r)?);
    } else if let Some(r) = labelled("Max Latencies:") {
        tr.max = Some(numbers(n, "Max Latencies:", r)?);
    } else if let Some(r) = labelled("Histogram Overflows:") {
        tr.overflows = Some(numbers(n, "Histogram Overflows:", r)?);
    } else if let Some(r) = labelled("Thread Ids:") {
        tr.thread_ids = Some(numbers(n, "Thread Ids:", r)?);
    } else if let Some(r) = labelled("Break thread:") {
        tr.break_thread = numbers(n, "Break thread:", r)?.v.first().copied();
    } else if let Some(r) = labelled("Break value:") {
        tr.break_value = numbers(n, "Break value:", r)?.v.first().copied();
    } else if let Some(r) = labelled("Thread ") {
        overflow_cycles(n, r, tr)?;
    }
    // Anything else ("# Histogram Overflow at cycle number:", future lines) carries no data.
    Ok(())
}

/// `# Thread 0: 05778 06123 # 00239 others`.
fn overflow_cycles(n: usize, rest: &str, tr: &mut Trailer) -> Result<(), Bad> {
    let Some((idx, list)) = rest.split_once(':') else {
        return Ok(());
    };
    let Some(thread) = parse_u64(idx.trim()) else {
        return Ok(());
    };
    let (listed, others) = match list.split_once('#') {
        Some((l, o)) => (l, o.trim().trim_end_matches("others").trim()),
        None => (list, "0"),
    };
    let cycles = numbers(n, &format!("Thread {thread}:"), listed)?.v;
    let others = parse_u64(others).ok_or_else(|| {
        Bad::line(
            n,
            format!("expected '# NNNNN others' after the cycle numbers, found '# {others}'"),
        )
    })?;
    tr.cycles.push((thread as usize, cycles, others));
    Ok(())
}

/// A trailer line that must be there, with `threads` values (or one more, `-H`'s total).
fn required<'a>(
    v: &'a Option<Vals>,
    label: &str,
    threads: Option<usize>,
    last: usize,
) -> Result<&'a Vals, Bad> {
    let vals = v.as_ref().ok_or_else(|| {
        Bad::line(
            last,
            format!("the file ends without a '# {label}' line: it is truncated"),
        )
    })?;
    if let Some(t) = threads {
        let ok = vals.v.len() == t || (t >= 2 && vals.v.len() == t + 1);
        if !ok {
            return Err(Bad::line(
                vals.line,
                format!(
                    "'# {label}' has {} values, expected one per thread ({t})",
                    vals.v.len()
                ),
            ));
        }
    }
    Ok(vals)
}

fn build(rows: &Rows, tr: &Trailer, last: usize) -> Result<Imported, Bad> {
    let min = required(&tr.min, "Min Latencies:", None, last)?;
    let threads = min.v.len();
    if threads == 0 {
        return Err(Bad::line(min.line, "'# Min Latencies:' lists no thread"));
    }
    let avg = required(&tr.avg, "Avg Latencies:", Some(threads), last)?;
    let max = required(&tr.max, "Max Latencies:", Some(threads), last)?;
    let over = required(&tr.overflows, "Histogram Overflows:", Some(threads), last)?;
    if avg.v.len() != threads {
        return Err(Bad::line(
            avg.line,
            format!(
                "'# Avg Latencies:' has {} values for {threads} threads",
                avg.v.len()
            ),
        ));
    }
    let width = if rows.count == 0 {
        threads
    } else {
        rows.columns.len()
    };
    let histofall = width == threads + 1 && threads >= 2;
    if width != threads && !histofall {
        return Err(Bad::line(
            rows.first_line,
            format!("the bucket rows have {width} counts but the trailer lists {threads} threads"),
        ));
    }
    if let (true, Some((line, bucket))) = (histofall, rows.bad_sum) {
        return Err(Bad::line(
            line,
            format!("bucket {bucket}: the sum column does not equal the sum of the threads"),
        ));
    }
    let mut counters = rows.columns[..threads.min(rows.columns.len())].to_vec();
    counters.resize(threads, Tally::default());
    for (t, c) in counters.iter().enumerate() {
        if c.count > MAX_COUNT {
            let what = format!(
                "the counts of thread {t} ({} samples is not plausible)",
                c.count
            );
            return Err(Bad::line(rows.first_line, what));
        }
    }
    let mut out = Imported::default();
    for (t, c) in counters.iter().enumerate() {
        out.threads.push(thread(t, c, tr, (min, avg, max, over))?);
    }
    out.source = source(rows, tr, histofall, &out);
    notes(&mut out, rows);
    Ok(out)
}

fn thread(
    t: usize,
    c: &Tally,
    tr: &Trailer,
    (min, avg, max, over): (&Vals, &Vals, &Vals, &Vals),
) -> Result<ThreadRow, Bad> {
    if let Some(total) = &tr.total {
        match total.v.get(t) {
            Some(&v) if v == c.count => {}
            Some(&v) => {
                return Err(Bad::line(
                    total.line,
                    format!(
                        "'# Total:' says {v} for thread {t}, but its bucket rows add up to {}",
                        c.count
                    ),
                ))
            }
            None => {
                return Err(Bad::line(
                    total.line,
                    format!("'# Total:' has no value for thread {t}"),
                ))
            }
        }
    }
    let overflows = over.v[t];
    let samples = c.count.saturating_add(overflows);
    let mut d = ThreadRow::new(t as u32);
    d.figures.samples = samples;
    if samples > 0 {
        if c.count > 0 && (max.v[t] < c.max || min.v[t] > c.min) {
            return Err(Bad::line(
                max.line,
                format!(
                    "thread {t}: min {} / max {} µs in the trailer, but its buckets run from {} to {} µs",
                    min.v[t], max.v[t], c.min, c.max
                ),
            ));
        }
        d.figures.min_ns = Some(min.v[t].saturating_mul(1000));
        d.figures.max_ns = Some(max.v[t].saturating_mul(1000));
        d.figures.mean_ns = if overflows == 0 {
            c.mean_ns()
        } else {
            Some(avg.v[t] as f64 * 1000.0)
        };
    }
    if let Some(ids) = &tr.thread_ids {
        d.tid = ids
            .v
            .get(t)
            .and_then(|&v| i32::try_from(v).ok())
            .filter(|&v| v != 0);
    }
    d.histogram = c.histogram.clone();
    Ok(d)
}

/// The histogram size (µs) when every bucket from 0 is listed (Debian's form), else `None`.
fn full_size(rows: &Rows) -> Option<usize> {
    (rows.full && rows.count > 0).then_some(rows.count)
}

fn source(rows: &Rows, tr: &Trailer, histofall: bool, out: &Imported) -> Map<String, Value> {
    let full = full_size(rows).is_some();
    let threads = out.threads.len();
    let pick = |v: &Option<Vals>| v.as_ref().map(|v| v.v[..threads.min(v.v.len())].to_vec());
    let mut m = Map::new();
    m.insert("unit".into(), json!("us"));
    m.insert(
        "histogram_form".into(),
        json!(if full {
            "full (rt-tests 2.4)"
        } else {
            "sparse (rt-tests 2.7+)"
        }),
    );
    m.insert("histogram_size_us".into(), json!(full_size(rows)));
    m.insert("histofall".into(), json!(histofall));
    m.insert("overflows".into(), json!(pick(&tr.overflows)));
    let cycles: Map<String, Value> = tr
        .cycles
        .iter()
        .map(|(t, c, others)| (t.to_string(), json!({"listed": c, "not_listed": others})))
        .collect();
    m.insert("overflow_cycles".into(), Value::Object(cycles));
    m.insert("avg_latencies_us".into(), json!(pick(&tr.avg)));
    if let Some(ids) = &tr.thread_ids {
        m.insert("thread_ids".into(), json!(ids.v));
    }
    if let Some(t) = tr.break_thread {
        m.insert("break_thread".into(), json!(t));
    }
    if let Some(v) = tr.break_value {
        m.insert("break_value_us".into(), json!(v));
    }
    m
}

fn notes(out: &mut Imported, rows: &Rows) {
    let over: Vec<String> = out
        .threads
        .iter()
        .filter(|t| t.figures.samples > t.histogram.count())
        .map(|t| {
            format!(
                "thread {}: {}",
                t.thread,
                t.figures.samples - t.histogram.count()
            )
        })
        .collect();
    if !over.is_empty() {
        let range = full_size(rows).map_or(String::new(), |n| format!(" (>= {n} µs)"));
        out.notes.push(format!(
            "histogram overflows{range} have no value in the source ({}): they count as samples and the exact max is kept, but they are not in the histogram or its percentiles, and the mean is cyclictest's truncated integer average",
            over.join(", ")
        ));
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn counts_near_u64_max_do_not_overflow_the_total_check() {
        // Found by the fuzzer: the per-thread counts summed past u64::MAX.
        let max = u64::MAX;
        let text = format!("000000 {max} {max} 5\n000001 {max} {max} 5\n");
        let _ = parse_reader(&mut text.as_bytes());
        let crash = include_bytes!(
            "../../../fuzz/corpus/import_cyclictest_hist/seed-regression-count-sum-overflow"
        );
        let _ = parse_reader(&mut &crash[..]);
    }

    use super::*;

    const DEBIAN: &str = "# /dev/cpu_dma_latency set to 0us\n# Histogram\n000000 000000\t000000\n000001 000002\t000000\n000002 000001\t000003\n000003 000000\t000000\n# Total: 000000003 000000003\n# Min Latencies: 00001 00002\n# Avg Latencies: 00001 00002\n# Max Latencies: 00002 00950\n# Histogram Overflows: 00000 00001\n# Histogram Overflow at cycle number:\n# Thread 0:\n# Thread 1: 00003\n\n";

    #[test]
    fn the_debian_form_imports_with_overflows_kept_as_a_count() {
        let r = parse(DEBIAN).unwrap();
        assert_eq!(r.threads.len(), 2);
        let t0 = &r.threads[0];
        assert_eq!(
            (t0.figures.samples, t0.figures.min_ns, t0.figures.max_ns),
            (3, Some(1000), Some(2000))
        );
        assert_eq!(
            t0.figures.mean_ns,
            Some(4000.0 / 3.0),
            "exact mean without overflows"
        );
        let t1 = &r.threads[1];
        assert_eq!((t1.figures.samples, t1.histogram.count()), (4, 3));
        assert_eq!(t1.figures.max_ns, Some(950_000));
        assert_eq!(
            t1.figures.mean_ns,
            Some(2000.0),
            "truncated avg with overflows"
        );
        assert_eq!(r.source["overflows"], json!([0, 1]));
        assert_eq!(r.source["histogram_size_us"], json!(4));
        assert_eq!(r.source["overflow_cycles"]["1"]["listed"], json!([3]));
    }

    #[test]
    fn the_upstream_sparse_form_without_total_imports() {
        let text = "# Histogram\n000013 004376\n000399 000002\n# Min Latencies: 00013\n# Avg Latencies: 00014\n# Max Latencies: 00399\n# Histogram Overflows: 00000\n# Histogram Overflow at cycle number:\n# Thread 0:\n";
        let r = parse(text).unwrap();
        assert_eq!(r.threads[0].figures.samples, 4378);
        assert_eq!(r.source["histogram_size_us"], Value::Null);
    }

    #[test]
    fn histofall_adds_a_checked_sum_column() {
        let text = "# Histogram\n000001 000001\t000002\t000003\n# Total: 000000001 000000002 000000003\n# Min Latencies: 00001 00001\n# Avg Latencies: 00001 00001\n# Max Latencies: 00001 00001 00001\n# Histogram Overflows: 00000 00000 00000\n";
        let r = parse(text).unwrap();
        assert_eq!(r.source["histofall"], json!(true));
        assert_eq!(r.samples(), 3);
        let broken = text.replace("000003\n#", "000004\n#");
        assert!(parse(&broken)
            .unwrap_err()
            .to_string()
            .contains("sum column"));
    }

    #[test]
    fn many_overflows_are_counted_with_the_unlisted_ones() {
        let text = DEBIAN.replace("# Thread 1: 00003", "# Thread 1: 00003 # 00239 others");
        let r = parse(&text).unwrap();
        assert_eq!(r.source["overflow_cycles"]["1"]["not_listed"], json!(239));
    }

    #[test]
    fn broken_histograms_are_refused_with_the_line() {
        let cases = [
            (DEBIAN.replace("000002 000001", "000002 0000x1"), "line 5:"),
            (
                DEBIAN.replace("# Max Latencies: 00002 00950\n", ""),
                "'# Max Latencies:'",
            ),
            (
                DEBIAN[..DEBIAN.find("# Total").unwrap()].to_string(),
                "truncated",
            ),
            (
                DEBIAN.replace("# Total: 000000003", "# Total: 000000004"),
                "line 7:",
            ),
            (DEBIAN.replace("00950", "00001"), "max"),
            (
                DEBIAN.replace("000001 000002\t000000", "000001 000002"),
                "line 4:",
            ),
            ("hello\n".to_string(), "no '# Histogram'"),
            (
                DEBIAN
                    .replace("000001 000002", "000001 18446744073709551615")
                    .replace("000002 000001", "000002 18446744073709551615"),
                "not plausible",
            ),
            (
                DEBIAN.replace("00001 00002\n# Avg", "00001\n# Avg"),
                "has 2 values",
            ),
        ];
        for (text, want) in cases {
            let e = parse(&text).unwrap_err().to_string();
            assert!(e.contains(want), "{want:?} not in {e:?}");
        }
    }
}
