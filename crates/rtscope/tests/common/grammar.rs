//! A format grammar for cyclictest's outputs (rt-tests 2.40, the Debian
//! 2.4 build at /usr/bin/cyclictest), used to check both the real
//! cyclictest and rtscope's compatible output.
//!
//! Every checker is a pure function over the captured text and returns
//! `Err` with the 1-based line number, what was expected and the offending
//! line. Widths follow cyclictest's printf formats: `%5d` is a *minimum*
//! width (right-aligned with spaces; a wider number prints in full with no
//! padding), `%05lu` likewise with zeros.
//!
//! Formats (see /work/shared/FIELD-NOTES.md section 3):
//! - `-q` summary: [`check_summary`], [`parse_summary`]
//! - `-h`/`-H` histogram: [`check_histogram`], [`parse_histogram`]
//! - `-v` samples: [`check_verbose`]; `--spike`: [`check_spikes`]
//! - live status screen: [`check_live_status`], [`parse_live_status`]
//! - `--json=FILE`: [`check_json`]
//! - structure comparison: [`shape`], [`same_shape`]
#![allow(dead_code)]

use regex::Regex;
use std::fmt::Display;
use std::sync::OnceLock;

macro_rules! re {
    ($pat:expr) => {{
        static RE: OnceLock<Regex> = OnceLock::new();
        RE.get_or_init(|| Regex::new($pat).expect("valid grammar regex"))
    }};
}

/// `# /dev/cpu_dma_latency set to 0us`, printed first unless `--default-system`.
pub const PREAMBLE_RE: &str = r"^# /dev/cpu_dma_latency set to \d+us$";

/// Value cyclictest shows as `Min:` for a thread that recorded no sample.
pub const MIN_UNSET: i64 = 1_000_000;

fn is_preamble(line: &str) -> bool {
    re!(PREAMBLE_RE).is_match(line)
}

/// Formats an error for 1-based line `no`.
fn at(no: usize, line: &str, msg: impl Display) -> String {
    format!("line {no}: {msg}\n    line {no} is: {line:?}")
}

/// Splits `text` into lines; it must be non-empty and end with a newline.
fn lines_of(text: &str) -> Result<Vec<&str>, String> {
    if text.is_empty() {
        return Err("empty output".into());
    }
    if !text.ends_with('\n') {
        let last = text.rsplit('\n').next().unwrap_or("");
        return Err(format!(
            "output does not end with a newline; last line is {last:?}"
        ));
    }
    if let Some(i) = text.find('\r') {
        let no = text[..i].matches('\n').count() + 1;
        return Err(format!("line {no}: carriage return in output"));
    }
    Ok(text[..text.len() - 1].split('\n').collect())
}

// ---------------------------------------------------------------- numbers

/// Checks a printf `%<width>d` field: the integer right-aligned with spaces
/// in `width` columns, or printed in full without padding when wider.
/// Returns the value.
pub fn space_padded(field: &str, width: usize) -> Result<i64, String> {
    let digits = field.trim_start_matches(' ');
    if !re!(r"^-?(0|[1-9][0-9]*)$").is_match(digits) {
        return Err(format!("{field:?} is not a plain integer"));
    }
    let want = digits.len().max(width);
    if field.len() != want {
        return Err(format!(
            "{field:?} is {} columns wide, but `%{width}d` of {digits} is {want} columns",
            field.len()
        ));
    }
    digits.parse().map_err(|e| format!("{field:?}: {e}"))
}

/// Checks a printf `%0<width>lu` field: zero-padded to `width` digits, or
/// printed in full (no leading zero) when wider. Returns the value.
pub fn zero_padded(field: &str, width: usize) -> Result<u64, String> {
    if field.is_empty() || !field.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "{field:?} is not a `%0{width}lu` number (digits only)"
        ));
    }
    if field.len() < width {
        return Err(format!(
            "{field:?} has {} digits; `%0{width}lu` gives at least {width}",
            field.len()
        ));
    }
    if field.len() > width && field.starts_with('0') {
        return Err(format!(
            "{field:?} is wider than {width} digits yet has a leading zero"
        ));
    }
    field.parse().map_err(|e| format!("{field:?}: {e}"))
}

/// Splits `rest` (text after a label such as `# Min Latencies:`) into
/// ` %0<width>lu` values: each preceded by exactly one space.
fn zero_padded_list(rest: &str, width: usize) -> Result<Vec<u64>, String> {
    if rest.is_empty() {
        return Ok(Vec::new());
    }
    let Some(body) = rest.strip_prefix(' ') else {
        return Err(format!(
            "expected ' ' before the first value, found {rest:?}"
        ));
    };
    body.split(' ').map(|f| zero_padded(f, width)).collect()
}

// ---------------------------------------------------------------- T: lines

/// One `T:` status line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TLine {
    pub thread: i64,
    pub tid: i64,
    pub prio: i64,
    pub interval: i64,
    pub cycles: i64,
    pub min: i64,
    pub act: i64,
    pub avg: i64,
    pub max: i64,
}

/// Parses `T:%2d (%5d) P:%2d I:%ld C:%7lu Min:%7ld Act:%5ld Avg:%5ld Max:%8ld`
/// (with `nsecs` (-N), Act and Avg are `%8ld`).
pub fn parse_t_line(line: &str, nsecs: bool) -> Result<TLine, String> {
    let caps = re!(
        r"^T:( *-?\d+) \(( *-?\d+)\) P:( *-?\d+) I:(-?\d+) C:( *\d+) Min:( *-?\d+) Act:( *-?\d+) Avg:( *-?\d+) Max:( *-?\d+)$"
    )
    .captures(line)
    .ok_or_else(|| {
        "not a `T:%2d (%5d) P:%2d I:%ld C:%7lu Min:%7ld Act:.. Avg:.. Max:%8ld` line (single spaces between fields)"
            .to_string()
    })?;
    let aw = if nsecs { 8 } else { 5 };
    let spec = [
        ("T:", 2),
        ("(tid)", 5),
        ("P:", 2),
        ("I:", 1),
        ("C:", 7),
        ("Min:", 7),
        ("Act:", aw),
        ("Avg:", aw),
        ("Max:", 8),
    ];
    let mut v = [0i64; 9];
    for (i, (name, width)) in spec.iter().enumerate() {
        v[i] = space_padded(&caps[i + 1], *width).map_err(|e| format!("field {name} {e}"))?;
    }
    let [thread, tid, prio, interval, cycles, min, act, avg, max] = v;
    Ok(TLine {
        thread,
        tid,
        prio,
        interval,
        cycles,
        min,
        act,
        avg,
        max,
    })
}

/// Value sanity of a final `T:` line (not for live frames, which race).
pub fn check_t_values(t: &TLine) -> Result<(), String> {
    if t.cycles == 0 {
        if (t.min, t.act, t.avg, t.max) != (MIN_UNSET, 0, 0, 0) {
            return Err("a thread with C: 0 must show Min:1000000 Act:0 Avg:0 Max:0".into());
        }
        return Ok(());
    }
    if t.tid <= 0 {
        return Err(format!("thread with {} cycles has TID {}", t.cycles, t.tid));
    }
    if !(t.min <= t.avg && t.avg <= t.max) {
        return Err(format!(
            "expected Min <= Avg <= Max, got {} / {} / {}",
            t.min, t.avg, t.max
        ));
    }
    if !(t.min <= t.act && t.act <= t.max) {
        return Err(format!(
            "expected Min <= Act <= Max, got {} / {} / {}",
            t.min, t.act, t.max
        ));
    }
    Ok(())
}

/// Parses consecutive `T:` lines starting at `lines[i]`, numbered 0, 1, ...
/// Returns them and the index of the first other line.
fn t_block(
    lines: &[&str],
    mut i: usize,
    nsecs: bool,
    values: bool,
) -> Result<(Vec<TLine>, usize), String> {
    let mut out: Vec<TLine> = Vec::new();
    while i < lines.len() && lines[i].starts_with("T:") && !lines[i].contains("Spike:") {
        let t = parse_t_line(lines[i], nsecs).map_err(|e| at(i + 1, lines[i], e))?;
        if t.thread != out.len() as i64 {
            return Err(at(
                i + 1,
                lines[i],
                format!("expected thread number {}", out.len()),
            ));
        }
        if values {
            check_t_values(&t).map_err(|e| at(i + 1, lines[i], e))?;
        }
        out.push(t);
        i += 1;
    }
    Ok((out, i))
}

// ---------------------------------------------------------------- summary

/// Options for [`check_summary`].
#[derive(Clone, Debug, Default)]
pub struct SummaryOpts {
    /// `-N`: values in ns, Act and Avg are `%8ld`.
    pub nsecs: bool,
    /// Expected number of `T:` lines; `None` accepts any number >= 1.
    pub threads: Option<usize>,
    /// `Some(true)`: the `# /dev/cpu_dma_latency` preamble is required;
    /// `Some(false)`: it must be absent (`--default-system`); `None`: optional.
    pub preamble: Option<bool>,
}

impl SummaryOpts {
    /// µs summary of `threads` threads with the preamble.
    pub fn us(threads: usize) -> Self {
        SummaryOpts {
            nsecs: false,
            threads: Some(threads),
            preamble: Some(true),
        }
    }
    /// `-N` summary of `threads` threads with the preamble.
    pub fn ns(threads: usize) -> Self {
        SummaryOpts {
            nsecs: true,
            threads: Some(threads),
            preamble: Some(true),
        }
    }
}

/// The `-b` trailer: `# Thread Ids: %05d...`, then, if the break fired,
/// `# Break thread: <tid>` and `# Break value: <value>`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BreakTrailer {
    pub thread_ids: Option<Vec<u64>>,
    pub break_thread: Option<u64>,
    pub break_value: Option<u64>,
}

/// A parsed `-q` summary.
#[derive(Clone, Debug)]
pub struct Summary {
    pub preamble: bool,
    pub threads: Vec<TLine>,
    pub trailer: BreakTrailer,
}

/// Checks a `-q` summary (stdout): the optional preamble, one `T:` line per
/// thread with cyclictest's exact widths, and the optional `-b` trailer.
pub fn check_summary(text: &str, opts: &SummaryOpts) -> Result<(), String> {
    parse_summary(text, opts).map(|_| ())
}

/// Like [`check_summary`], returning the parsed values.
pub fn parse_summary(text: &str, opts: &SummaryOpts) -> Result<Summary, String> {
    let lines = lines_of(text)?;
    let mut i = preamble(&lines, 0, opts.preamble)?;
    let has_preamble = i == 1;
    let (threads, next) = t_block(&lines, i, opts.nsecs, true)?;
    i = next;
    thread_count(&lines, i, threads.len(), opts.threads)?;
    let tids: Vec<u64> = threads.iter().map(|t| t.tid.max(0) as u64).collect();
    let (trailer, next) = break_trailer(&lines, i, threads.len(), Some(&tids))?;
    if let (Some(tid), Some(value)) = (trailer.break_thread, trailer.break_value) {
        let t = threads
            .iter()
            .find(|t| t.tid as u64 == tid)
            .expect("checked by break_trailer");
        if value as i64 > t.max {
            let msg = format!(
                "break value {value} exceeds Max {} of the break thread {tid}",
                t.max
            );
            return Err(at(next, lines[next - 1], msg));
        }
    }
    if next < lines.len() {
        let msg =
            "unexpected line: a summary holds only the preamble, `T:` lines and the -b trailer";
        return Err(at(next + 1, lines[next], msg));
    }
    Ok(Summary {
        preamble: has_preamble,
        threads,
        trailer,
    })
}

/// Checks the preamble at `lines[i]`; returns the index after it.
fn preamble(lines: &[&str], i: usize, want: Option<bool>) -> Result<usize, String> {
    let line = lines.get(i).copied().unwrap_or("");
    let has = is_preamble(line);
    match (want, has) {
        (Some(true), false) => Err(at(
            i + 1,
            line,
            "expected `# /dev/cpu_dma_latency set to 0us`",
        )),
        (Some(false), true) => Err(at(
            i + 1,
            line,
            "preamble present, expected none (--default-system)",
        )),
        _ => Ok(i + usize::from(has)),
    }
}

fn thread_count(lines: &[&str], i: usize, got: usize, want: Option<usize>) -> Result<(), String> {
    let line = lines.get(i).copied().unwrap_or("<end of output>");
    if got == 0 {
        return Err(at(i + 1, line, "expected a `T:` line"));
    }
    match want {
        Some(n) if n != got => Err(at(
            i + 1,
            line,
            format!("expected {n} `T:` lines, found {got}"),
        )),
        _ => Ok(()),
    }
}

/// Parses the optional `-b` trailer at `lines[i]` for `n` threads; `tids`
/// are the TIDs the ids must match when known. Returns the index after it.
fn break_trailer(
    lines: &[&str],
    mut i: usize,
    n: usize,
    tids: Option<&[u64]>,
) -> Result<(BreakTrailer, usize), String> {
    let mut tr = BreakTrailer::default();
    let Some(rest) = lines.get(i).and_then(|l| l.strip_prefix("# Thread Ids:")) else {
        return Ok((tr, i));
    };
    let ids = zero_padded_list(rest, 5).map_err(|e| at(i + 1, lines[i], e))?;
    if ids.len() != n {
        return Err(at(
            i + 1,
            lines[i],
            format!("expected {n} thread ids, found {}", ids.len()),
        ));
    }
    if let Some(t) = tids.filter(|t| *t != ids.as_slice()) {
        return Err(at(
            i + 1,
            lines[i],
            format!("thread ids differ from the TIDs of the `T:` lines {t:?}"),
        ));
    }
    tr.thread_ids = Some(ids.clone());
    i += 1;
    let Some(c) = lines
        .get(i)
        .and_then(|l| re!(r"^# Break thread: (\d+)$").captures(l))
    else {
        return Ok((tr, i));
    };
    let tid: u64 = c[1].parse().map_err(|e| at(i + 1, lines[i], e))?;
    if !ids.contains(&tid) {
        return Err(at(
            i + 1,
            lines[i],
            "break thread is not one of the thread ids",
        ));
    }
    i += 1;
    let line = lines.get(i).copied().unwrap_or("<end of output>");
    let Some(c) = re!(r"^# Break value: (\d+)$").captures(line) else {
        return Err(at(
            i + 1,
            line,
            "expected `# Break value: N` after `# Break thread:`",
        ));
    };
    tr.break_thread = Some(tid);
    tr.break_value = Some(c[1].parse().map_err(|e| at(i + 1, line, e))?);
    Ok((tr, i + 1))
}

// ---------------------------------------------------------------- histogram

/// Options for [`parse_histogram`].
#[derive(Clone, Debug)]
pub struct HistOpts {
    /// Number of measurement threads (columns).
    pub threads: usize,
    /// The `-h`/`-H` value (bucket count) when known.
    pub buckets: Option<usize>,
    /// `-H`: a TAB + sum column on every row; with more than one thread
    /// also a total on `# Total:`/`# Histogram Overflows:` and an overall
    /// max on `# Max Latencies:`. (cyclictest 2.4 omits all of it with one
    /// thread; upstream keeps the row sum column.)
    pub sum_column: bool,
    /// `true`: the Debian 2.4 layout (every bucket printed, `# Total:` line,
    /// `# Thread N:` with nothing after the colon when empty). `false`: the
    /// upstream >= 2.7 layout (only non-empty buckets, no `# Total:`,
    /// `# Thread N: ` with a trailing space when empty).
    pub total_line: bool,
}

/// One trailer line: its 0-based line index and values.
#[derive(Clone, Debug)]
pub struct Numbers {
    pub line: usize,
    pub values: Vec<u64>,
}

/// Overflow cycle numbers of one thread, and the ` # N others` count.
#[derive(Clone, Debug)]
pub struct OverflowList {
    pub line: usize,
    pub cycles: Vec<u64>,
    pub others: Option<u64>,
}

/// One bucket row: (0-based line index, bucket index, counts incl. the sum column).
pub type HistRow = (usize, u64, Vec<u64>);

/// A parsed `-h`/`-H` histogram block.
#[derive(Clone, Debug)]
pub struct Histogram {
    pub rows: Vec<HistRow>,
    pub total: Option<Numbers>,
    pub min: Numbers,
    pub avg: Numbers,
    pub max: Numbers,
    pub overflows: Numbers,
    pub overflow_at: Vec<OverflowList>,
    pub trailer: BreakTrailer,
}

/// Checks a histogram block: `# Histogram`, rows `%06d` + one space +
/// `%06lu` counts separated by TABs, the trailer lines, a blank line and the
/// optional `-b` trailer, plus internal consistency. `with_total_line`
/// selects the Debian 2.4 layout (see [`HistOpts::total_line`]). Leading
/// `WARN: ` lines (merged stderr) and the preamble are allowed.
pub fn check_histogram(
    text: &str,
    threads: usize,
    with_sum_column: bool,
    with_total_line: bool,
) -> Result<(), String> {
    let opts = HistOpts {
        threads,
        buckets: None,
        sum_column: with_sum_column,
        total_line: with_total_line,
    };
    parse_histogram(text, &opts).map(|_| ())
}

/// Like [`check_histogram`] with all options, returning the parsed block.
pub fn parse_histogram(text: &str, opts: &HistOpts) -> Result<Histogram, String> {
    let lines = lines_of(text)?;
    let mut i = 0;
    while lines.get(i).is_some_and(|l| l.starts_with("WARN: ")) {
        i += 1;
    }
    i = preamble(&lines, i, None)?;
    if lines.get(i) != Some(&"# Histogram") {
        return Err(at(
            i + 1,
            lines.get(i).copied().unwrap_or(""),
            "expected `# Histogram`",
        ));
    }
    let (rows, next) = hist_rows(&lines, i + 1, opts)?;
    let (mut h, next) = hist_trailer(&lines, next, rows, opts)?;
    if lines.get(next) != Some(&"") {
        let l = lines.get(next).copied().unwrap_or("<end of output>");
        return Err(at(
            next + 1,
            l,
            "expected the blank line that ends the histogram block",
        ));
    }
    let (trailer, next) = break_trailer(&lines, next + 1, opts.threads, None)?;
    if next < lines.len() {
        return Err(at(
            next + 1,
            lines[next],
            "unexpected line after the histogram block",
        ));
    }
    h.trailer = trailer;
    hist_consistency(&lines, &h, opts)?;
    Ok(h)
}

fn row_sum_column(opts: &HistOpts) -> bool {
    opts.sum_column && (opts.threads > 1 || !opts.total_line)
}

fn trailer_sum_value(opts: &HistOpts) -> bool {
    opts.sum_column && opts.threads > 1
}

/// Parses the bucket rows from `lines[i]` up to the first `#` line.
fn hist_rows(
    lines: &[&str],
    mut i: usize,
    opts: &HistOpts,
) -> Result<(Vec<HistRow>, usize), String> {
    let sum = row_sum_column(opts);
    let ncols = opts.threads + usize::from(sum);
    let mut rows: Vec<HistRow> = Vec::new();
    while i < lines.len() && !lines[i].starts_with('#') {
        let (idx, counts) = hist_row(lines[i], ncols).map_err(|e| at(i + 1, lines[i], e))?;
        let expect = rows.last().map_or(0, |r| r.1 + 1);
        if opts.total_line && idx != expect {
            return Err(at(
                i + 1,
                lines[i],
                format!("expected bucket {expect:06} (2.4 prints every bucket)"),
            ));
        }
        if !opts.total_line && idx < expect {
            return Err(at(i + 1, lines[i], "bucket indices must increase"));
        }
        let row_total: u64 = counts[..opts.threads].iter().sum();
        if sum && counts[opts.threads] != row_total {
            return Err(at(
                i + 1,
                lines[i],
                format!("sum column should be {row_total:06}"),
            ));
        }
        if !opts.total_line && row_total == 0 {
            return Err(at(
                i + 1,
                lines[i],
                "upstream layout prints non-empty buckets only",
            ));
        }
        if opts.buckets.is_some_and(|b| idx >= b as u64) {
            return Err(at(
                i + 1,
                lines[i],
                format!("bucket index beyond -h {}", opts.buckets.unwrap_or(0)),
            ));
        }
        rows.push((i, idx, counts));
        i += 1;
    }
    if opts.total_line && opts.buckets.is_some_and(|b| b != rows.len()) {
        let l = lines.get(i).copied().unwrap_or("");
        return Err(at(
            i + 1,
            l,
            format!(
                "expected {} rows (-h), found {}",
                opts.buckets.unwrap_or(0),
                rows.len()
            ),
        ));
    }
    Ok((rows, i))
}

/// `%06d` index, one space, `ncols` `%06lu` counts separated by TABs.
fn hist_row(line: &str, ncols: usize) -> Result<(u64, Vec<u64>), String> {
    let Some((idx, counts)) = line.split_once(' ') else {
        return Err("expected `%06d` bucket index, one space, then TAB-separated counts".into());
    };
    let idx = zero_padded(idx, 6).map_err(|e| format!("bucket index {e}"))?;
    if counts.contains(' ') {
        return Err("counts must be separated by single TABs, found a space".into());
    }
    let counts: Vec<u64> = counts
        .split('\t')
        .map(|f| zero_padded(f, 6).map_err(|e| format!("count {e}")))
        .collect::<Result<_, _>>()?;
    if counts.len() != ncols {
        return Err(format!("expected {ncols} counts, found {}", counts.len()));
    }
    Ok((idx, counts))
}

/// Parses `# Total:` .. `# Thread N:` lines starting at `lines[i]`.
fn hist_trailer(
    lines: &[&str],
    mut i: usize,
    rows: Vec<HistRow>,
    opts: &HistOpts,
) -> Result<(Histogram, usize), String> {
    let n = opts.threads;
    let extra = usize::from(trailer_sum_value(opts));
    let total = if opts.total_line {
        Some(numbers_line(lines, &mut i, "# Total:", n + extra, 9)?)
    } else {
        None
    };
    let min = numbers_line(lines, &mut i, "# Min Latencies:", n, 5)?;
    let avg = numbers_line(lines, &mut i, "# Avg Latencies:", n, 5)?;
    let max = numbers_line(lines, &mut i, "# Max Latencies:", n + extra, 5)?;
    let overflows = numbers_line(lines, &mut i, "# Histogram Overflows:", n + extra, 5)?;
    if lines.get(i) != Some(&"# Histogram Overflow at cycle number:") {
        let l = lines.get(i).copied().unwrap_or("<end of output>");
        return Err(at(
            i + 1,
            l,
            "expected `# Histogram Overflow at cycle number:`",
        ));
    }
    i += 1;
    let mut overflow_at = Vec::new();
    for t in 0..n {
        let l = lines.get(i).copied().unwrap_or("<end of output>");
        overflow_at.push(overflow_line(l, i, t, opts.total_line).map_err(|e| at(i + 1, l, e))?);
        i += 1;
    }
    let trailer = BreakTrailer::default();
    Ok((
        Histogram {
            rows,
            total,
            min,
            avg,
            max,
            overflows,
            overflow_at,
            trailer,
        },
        i,
    ))
}

fn numbers_line(
    lines: &[&str],
    i: &mut usize,
    label: &str,
    n: usize,
    width: usize,
) -> Result<Numbers, String> {
    let line = lines.get(*i).copied().unwrap_or("<end of output>");
    let Some(rest) = line.strip_prefix(label) else {
        return Err(at(
            *i + 1,
            line,
            format!("expected `{label}` with {n} values"),
        ));
    };
    let values = zero_padded_list(rest, width).map_err(|e| at(*i + 1, line, e))?;
    if values.len() != n {
        return Err(at(
            *i + 1,
            line,
            format!(
                "expected {n} values after `{label}`, found {}",
                values.len()
            ),
        ));
    }
    *i += 1;
    Ok(Numbers {
        line: *i - 1,
        values,
    })
}

/// `# Thread N:` + ` %05lu` cycle numbers + optional ` # %05lu others`.
fn overflow_line(line: &str, idx: usize, t: usize, debian: bool) -> Result<OverflowList, String> {
    let label = format!("# Thread {t}:");
    let Some(rest) = line.strip_prefix(label.as_str()) else {
        return Err(format!(
            "expected `{label}` (overflow cycle numbers of thread {t})"
        ));
    };
    let (list, others) = match rest.split_once(" # ") {
        Some((l, o)) => {
            let o = o
                .strip_suffix(" others")
                .ok_or("expected ` # %05lu others` at the end")?;
            (l, Some(zero_padded(o, 5)?))
        }
        None => (rest, None),
    };
    let list = if !debian && list == " " { "" } else { list };
    let cycles = zero_padded_list(list, 5)?;
    if cycles.windows(2).any(|w| w[0] >= w[1]) {
        return Err("overflow cycle numbers must increase".into());
    }
    Ok(OverflowList {
        line: idx,
        cycles,
        others,
    })
}

/// Cross-checks rows against the trailer lines.
fn hist_consistency(lines: &[&str], h: &Histogram, opts: &HistOpts) -> Result<(), String> {
    let n = opts.threads;
    let col = |j: usize| h.rows.iter().map(|r| r.2[j]).sum::<u64>();
    let l = |k: usize| lines[k];
    if let Some(total) = &h.total {
        for j in 0..n {
            if total.values[j] != col(j) {
                let msg = format!(
                    "thread {j}: total {} but its column sums to {}",
                    total.values[j],
                    col(j)
                );
                return Err(at(total.line + 1, l(total.line), msg));
            }
        }
    }
    if trailer_sum_value(opts) {
        let mut sums: Vec<(&Numbers, &str)> = vec![(&h.overflows, "overflows")];
        sums.extend(h.total.as_ref().map(|t| (t, "total")));
        for (nums, what) in sums {
            let s: u64 = nums.values[..n].iter().sum();
            if nums.values[n] != s {
                return Err(at(
                    nums.line + 1,
                    l(nums.line),
                    format!("last value ({what} of all threads) should be {s}"),
                ));
            }
        }
        let m = h.max.values[..n].iter().copied().max().unwrap_or(0);
        if h.max.values[n] != m {
            return Err(at(
                h.max.line + 1,
                l(h.max.line),
                format!("last (max of all threads) should be {m}"),
            ));
        }
    }
    let nb = if opts.total_line {
        Some(h.rows.len())
    } else {
        opts.buckets
    };
    for j in 0..n {
        hist_thread(lines, h, j, col(j), nb)?;
    }
    Ok(())
}

/// Per-thread checks: overflow list vs count, Min/Avg/Max vs the rows.
fn hist_thread(
    lines: &[&str],
    h: &Histogram,
    j: usize,
    in_range: u64,
    nb: Option<usize>,
) -> Result<(), String> {
    let err = |k: usize, msg: String| Err(at(k + 1, lines[k], format!("thread {j}: {msg}")));
    let ov = h.overflows.values[j];
    let cycles = in_range + ov;
    if let Err((k, msg)) = overflow_list_consistent(h, j, cycles, nb) {
        return err(k, msg);
    }
    let (min, avg, max) = (h.min.values[j], h.avg.values[j], h.max.values[j]);
    if cycles == 0 {
        if (min, avg, max) != (MIN_UNSET as u64, 0, 0) {
            return err(
                h.min.line,
                "no samples: Min must be 1000000, Avg and Max 0".into(),
            );
        }
        return Ok(());
    }
    if !(min <= avg && avg <= max) {
        return err(
            h.avg.line,
            format!("expected Min <= Avg <= Max, got {min} / {avg} / {max}"),
        );
    }
    let nonzero: Vec<u64> = h.rows.iter().filter(|r| r.2[j] > 0).map(|r| r.1).collect();
    if let (Some(&lo), Some(&hi)) = (nonzero.first(), nonzero.last()) {
        let min_in_range = ov == 0 || nb.is_some_and(|nb| min < nb as u64);
        if lo < min || (min_in_range && lo != min) {
            return err(
                h.min.line,
                format!("Min {min} but the lowest non-empty bucket is {lo}"),
            );
        }
        if hi > max || (ov == 0 && hi != max) {
            return err(
                h.max.line,
                format!("Max {max} but the highest non-empty bucket is {hi}"),
            );
        }
    }
    if ov > 0 && nb.is_some_and(|nb| max < nb as u64) {
        return err(
            h.max.line,
            format!("{ov} overflows but Max {max} is inside the histogram"),
        );
    }
    Ok(())
}

/// The `# Thread j:` cycle list vs `# Histogram Overflows:`; `Err` carries
/// the line index.
fn overflow_list_consistent(
    h: &Histogram,
    j: usize,
    cycles: u64,
    nb: Option<usize>,
) -> Result<(), (usize, String)> {
    let ov = h.overflows.values[j];
    let list = &h.overflow_at[j];
    let listed = list.cycles.len() as u64;
    let others = list.others.unwrap_or(0);
    if listed + others != ov {
        let msg = format!(
            "lists {listed} cycles + {others} others, but `# Histogram Overflows:` says {ov}"
        );
        return Err((list.line, msg));
    }
    if let (Some(_), Some(nb)) = (list.others, nb) {
        if listed != nb as u64 {
            let msg =
                format!("` # N others` used, so exactly {nb} (the -h size) cycles must be listed");
            return Err((list.line, msg));
        }
    }
    if let Some(c) = list.cycles.iter().find(|&&c| c >= cycles) {
        return Err((
            list.line,
            format!("cycle number {c} >= the thread's {cycles} samples"),
        ));
    }
    Ok(())
}

// ---------------------------------------------------------------- verbose

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

// ---------------------------------------------------------------- spikes

/// One `--spike` record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Spike {
    pub thread: i64,
    pub value: i64,
    pub ts: i64,
}

/// Default `--spike-nodes`: at most this many spike lines are printed.
pub const SPIKE_NODES: usize = 1024;

/// Checks `-q --spike=US` output: preamble, `T:` lines, then (if any spike
/// was seen) a blank line, `T:%2d Spike:%8ld: TS: %12ld` lines,
/// `spikes = N` and a blank line.
pub fn check_spikes(text: &str) -> Result<(), String> {
    parse_spikes(text, None).map(|_| ())
}

/// Like [`check_spikes`], also requiring every spike to exceed `trigger`.
pub fn check_spikes_above(text: &str, trigger: i64) -> Result<(), String> {
    parse_spikes(text, Some(trigger)).map(|_| ())
}

/// Parses spike output; returns the `T:` lines and the spikes.
pub fn parse_spikes(text: &str, trigger: Option<i64>) -> Result<(Vec<TLine>, Vec<Spike>), String> {
    let lines = lines_of(text)?;
    let i = preamble(&lines, 0, None)?;
    let (threads, mut i) = t_block(&lines, i, false, true)?;
    thread_count(&lines, i, threads.len(), None)?;
    if i == lines.len() {
        return Ok((threads, Vec::new()));
    }
    if !lines[i].is_empty() {
        return Err(at(
            i + 1,
            lines[i],
            "expected a blank line before the spike list",
        ));
    }
    i += 1;
    let mut spikes: Vec<Spike> = Vec::new();
    while i < lines.len() && lines[i].starts_with("T:") {
        let s = spike_line(lines[i], &threads, trigger).map_err(|e| at(i + 1, lines[i], e))?;
        if let Some(p) = spikes
            .iter()
            .rev()
            .find(|p| p.thread == s.thread)
            .filter(|p| p.ts > s.ts)
        {
            return Err(at(
                i + 1,
                lines[i],
                format!(
                    "TS goes backwards for thread {} (previous {})",
                    s.thread, p.ts
                ),
            ));
        }
        spikes.push(s);
        i += 1;
    }
    let line = lines.get(i).copied().unwrap_or("<end of output>");
    let Some(c) = re!(r"^spikes = (\d+)$").captures(line) else {
        return Err(at(
            i + 1,
            line,
            "expected `spikes = N` after the spike lines",
        ));
    };
    let total: usize = c[1].parse().map_err(|e| at(i + 1, line, e))?;
    let expect = total.min(SPIKE_NODES);
    if spikes.is_empty() || spikes.len() > total || (total <= SPIKE_NODES && spikes.len() != expect)
    {
        return Err(at(
            i + 1,
            line,
            format!("`spikes = {total}` but {} spike lines", spikes.len()),
        ));
    }
    if lines.get(i + 1) != Some(&"") || lines.len() != i + 2 {
        let l = lines.get(i + 1).copied().unwrap_or("<end of output>");
        return Err(at(
            i + 2,
            l,
            "expected one blank line ending the output after `spikes = N`",
        ));
    }
    Ok((threads, spikes))
}

fn spike_line(line: &str, threads: &[TLine], trigger: Option<i64>) -> Result<Spike, String> {
    let c = re!(r"^T:( *\d+) Spike:( *-?\d+): TS: ( *-?\d+)$")
        .captures(line)
        .ok_or("expected `T:%2d Spike:%8ld: TS: %12ld`")?;
    let thread = space_padded(&c[1], 2).map_err(|e| format!("thread {e}"))?;
    let value = space_padded(&c[2], 8).map_err(|e| format!("Spike: {e}"))?;
    let ts = space_padded(&c[3], 12).map_err(|e| format!("TS: {e}"))?;
    let t = threads
        .get(thread as usize)
        .ok_or(format!("no `T:` line for thread {thread}"))?;
    if value > t.max {
        return Err(format!("spike {value} exceeds the thread's Max {}", t.max));
    }
    if let Some(trig) = trigger.filter(|&trig| value <= trig) {
        return Err(format!("spike {value} is not above the trigger {trig}"));
    }
    Ok(Spike { thread, value, ts })
}

// ---------------------------------------------------------------- live status

/// A parsed live status stream.
#[derive(Clone, Debug)]
pub struct LiveStatus {
    pub preamble: bool,
    /// The `T:` lines of every frame.
    pub frames: Vec<Vec<TLine>>,
    /// Text after the last frame: empty, or a `# Histogram` block.
    pub rest: String,
}

/// Checks the live status stream (no `-q`): the preamble, then frames of
/// `policy: <p>: loadavg: <5 fields>` + 10 spaces, a blank line and one
/// `T:` line per thread, each frame but the last followed by
/// `ESC[<threads+2>A`. A `# Histogram` block may follow the last frame
/// (it is not checked here; see [`parse_live_status`]).
pub fn check_live_status(bytes: &[u8], threads: usize) -> Result<(), String> {
    parse_live_status(bytes, threads, false).map(|_| ())
}

/// Like [`check_live_status`] (with `nsecs` for `-N`), returning the frames.
pub fn parse_live_status(bytes: &[u8], threads: usize, nsecs: bool) -> Result<LiveStatus, String> {
    let text = std::str::from_utf8(bytes).map_err(|e| format!("live status is not UTF-8: {e}"))?;
    let first = text.split_inclusive('\n').next().unwrap_or("");
    let has_pre = is_preamble(first.trim_end_matches('\n')) && first.ends_with('\n');
    let body = if has_pre { &text[first.len()..] } else { text };
    let esc = format!("\x1b[{}A", threads + 2);
    let chunks: Vec<&str> = body.split(esc.as_str()).collect();
    let mut line_no = 1 + usize::from(has_pre);
    let mut frames: Vec<Vec<TLine>> = Vec::new();
    let mut rest = String::new();
    for (k, chunk) in chunks.iter().enumerate() {
        let last = k + 1 == chunks.len();
        let (frame, tail) = live_frame(chunk, threads, nsecs, line_no, last)
            .map_err(|e| format!("frame {k}: {e}"))?;
        if let Some(prev) = frames.last() {
            live_progress(prev, &frame)
                .map_err(|e| format!("frame {k} (starting line {line_no}): {e}"))?;
        }
        frames.push(frame);
        rest = tail.to_string();
        line_no += chunk.matches('\n').count();
    }
    Ok(LiveStatus {
        preamble: has_pre,
        frames,
        rest,
    })
}

/// One frame: policy line, blank line, `threads` `T:` lines. Returns the
/// frame and the remaining text (only allowed in the last chunk).
fn live_frame<'a>(
    chunk: &'a str,
    threads: usize,
    nsecs: bool,
    line_no: usize,
    last: bool,
) -> Result<(Vec<TLine>, &'a str), String> {
    let mut rest = chunk;
    let mut next = |no: usize| -> Result<&'a str, String> {
        let Some(end) = rest.find('\n') else {
            return Err(at(no, rest, "incomplete line (no newline) inside a frame"));
        };
        let line = &rest[..end];
        rest = &rest[end + 1..];
        if line.contains('\x1b') {
            return Err(at(
                no,
                line,
                "unexpected escape sequence (expected ESC[<threads+2>A between frames only)",
            ));
        }
        Ok(line)
    };
    let policy = next(line_no)?;
    let pol_re =
        r"^policy: [a-z]+(/[a-z]+)?: loadavg: \d+\.\d\d \d+\.\d\d \d+\.\d\d \d+/\d+ \d+ {10}$";
    if !re!(pol_re).is_match(policy) {
        return Err(at(
            line_no,
            policy,
            "expected `policy: fifo: loadavg: <loadavg>` + 10 spaces",
        ));
    }
    let blank = next(line_no + 1)?;
    if !blank.is_empty() {
        return Err(at(
            line_no + 1,
            blank,
            "expected a blank line after the policy line",
        ));
    }
    let mut frame = Vec::new();
    for t in 0..threads {
        let no = line_no + 2 + t;
        let line = next(no)?;
        let tl = parse_t_line(line, nsecs).map_err(|e| at(no, line, e))?;
        if tl.thread != t as i64 {
            return Err(at(no, line, format!("expected thread number {t}")));
        }
        frame.push(tl);
    }
    let histogram_follows = last && rest.starts_with("# Histogram\n");
    if !rest.is_empty() && !histogram_follows {
        let no = line_no + 2 + threads;
        let msg = format!(
            "expected ESC[{}A or the end after {threads} `T:` lines",
            threads + 2
        );
        return Err(at(no, rest.lines().next().unwrap_or(rest), msg));
    }
    Ok((frame, rest))
}

/// Between frames: C: never decreases, TID/P:/I: do not change once set.
fn live_progress(prev: &[TLine], cur: &[TLine]) -> Result<(), String> {
    for (p, c) in prev.iter().zip(cur) {
        if c.cycles < p.cycles {
            return Err(format!(
                "thread {}: C: went from {} to {}",
                c.thread, p.cycles, c.cycles
            ));
        }
        if p.tid != 0 && c.tid != p.tid {
            return Err(format!(
                "thread {}: TID changed from {} to {}",
                c.thread, p.tid, c.tid
            ));
        }
        if (p.prio, p.interval) != (c.prio, c.interval) {
            return Err(format!("thread {}: P:/I: changed between frames", c.thread));
        }
    }
    Ok(())
}

// ---------------------------------------------------------------- JSON

#[derive(Clone, Copy, Debug)]
enum Kind {
    Int,
    Flag,
    Float2,
    Str,
    Version,
    Date,
    Sysinfo,
    Threads,
    Thread,
    Hist,
}

/// cyclictest's top-level keys, in order (note the two keys ending in `:`).
pub const JSON_ROOT_KEYS: &[&str] = &[
    "file_version",
    "cmdline:",
    "rt_test_version:",
    "start_time",
    "end_time",
    "return_code",
    "sysinfo",
    "num_threads",
    "resolution_in_ns",
    "thread",
];

const ROOT: &[(&str, Kind)] = &[
    ("file_version", Kind::Int),
    ("cmdline:", Kind::Str),
    ("rt_test_version:", Kind::Version),
    ("start_time", Kind::Date),
    ("end_time", Kind::Date),
    ("return_code", Kind::Int),
    ("sysinfo", Kind::Sysinfo),
    ("num_threads", Kind::Int),
    ("resolution_in_ns", Kind::Flag),
    ("thread", Kind::Threads),
];

const SYSINFO: &[(&str, Kind)] = &[
    ("sysname", Kind::Str),
    ("nodename", Kind::Str),
    ("release", Kind::Str),
    ("version", Kind::Str),
    ("machine", Kind::Str),
    ("realtime", Kind::Flag),
];

const THREAD: &[(&str, Kind)] = &[
    ("histogram", Kind::Hist),
    ("cycles", Kind::Int),
    ("min", Kind::Int),
    ("max", Kind::Int),
    ("avg", Kind::Float2),
    ("cpu", Kind::Int),
    ("node", Kind::Int),
];

#[derive(Clone, Copy)]
enum Keys {
    Fixed(&'static [(&'static str, Kind)]),
    Threads,
}

/// A value as read by the line grammar (line indices are 0-based).
#[derive(Clone, Debug)]
enum JVal {
    Raw(String, usize),
    Obj(Vec<(String, JVal)>),
    Hist(Vec<(u64, u64)>, usize),
    Extra,
}

type Entries = Vec<(String, JVal)>;

/// Checks a `--json=FILE` file line by line: `{`/`}` layout with two-space
/// indentation, cyclictest's keys in its exact order and value types
/// (`file_version`, `"cmdline:"`, `"rt_test_version:"` as `"2.40"`, date
/// strings, `sysinfo`, `num_threads`, `resolution_in_ns`, `thread` with
/// `"0"`, `"1"`, ... each `histogram`, `cycles`, `min`, `max`, `avg` (2
/// decimals), `cpu`, `node`). Extra keys (rtscope additions) are tolerated
/// only after cyclictest's keys of the same object. Without `-h`
/// (`with_histogram == false`) every `histogram` must be `{      }`; with
/// it, non-empty maps of increasing unpadded bucket indices to counts.
/// The text must also be valid JSON unless it carries cyclictest's known
/// defects (`nan` avg for a thread without samples, a `"` in the cmdline).
pub fn check_json(text: &str, with_histogram: bool) -> Result<(), String> {
    let lines = lines_of(text)?;
    if lines[0] != "{" {
        return Err(at(1, lines[0], "expected `{` alone on the first line"));
    }
    let mut p = JParser {
        lines: lines.clone(),
        pos: 1,
    };
    let (root, comma) = p.object(2, Keys::Fixed(ROOT))?;
    if comma {
        return Err(at(
            p.pos,
            lines[p.pos - 1],
            "no comma after the closing `}`",
        ));
    }
    if p.pos != lines.len() {
        return Err(at(
            p.pos + 1,
            lines[p.pos],
            "unexpected text after the closing `}`",
        ));
    }
    json_semantics(&lines, &root, with_histogram)?;
    json_validity(text, &root)
}

struct JParser<'a> {
    lines: Vec<&'a str>,
    pos: usize,
}

impl<'a> JParser<'a> {
    fn err(&self, idx: usize, msg: impl Display) -> String {
        at(
            idx + 1,
            self.lines.get(idx).copied().unwrap_or("<end of file>"),
            msg,
        )
    }

    fn line(&self, idx: usize) -> Result<&'a str, String> {
        self.lines
            .get(idx)
            .copied()
            .ok_or_else(|| self.err(idx, "unexpected end of JSON"))
    }

    /// Entries of an object whose `{` ended the previous line, through its
    /// closing `}` at `indent - 2`. Returns them and the closing comma.
    fn object(&mut self, indent: usize, keys: Keys) -> Result<(Entries, bool), String> {
        let close = format!("{}}}", " ".repeat(indent - 2));
        let mut entries: Entries = Vec::new();
        let mut prev: Option<(usize, bool)> = None;
        loop {
            let idx = self.pos;
            let line = self.line(idx)?;
            if line == close || line.strip_suffix(',') == Some(close.as_str()) {
                if let Some((pi, true)) = prev {
                    return Err(self.err(pi, "comma after the last entry of an object"));
                }
                missing_key(keys, &entries).map_err(|e| self.err(idx, e))?;
                self.pos += 1;
                return Ok((entries, line.ends_with(',')));
            }
            if let Some((pi, false)) = prev {
                return Err(self.err(pi, "missing comma between entries"));
            }
            let (key, rest) = self.entry_head(idx, indent)?;
            let kind = expected_kind(keys, &entries, &key).map_err(|e| self.err(idx, e))?;
            self.pos += 1;
            let (val, comma) = match kind {
                Some(k) => self.value(indent, k, rest, idx)?,
                None => (JVal::Extra, self.skip_extra(indent, rest, idx)?),
            };
            prev = Some((self.pos - 1, comma));
            entries.push((key, val));
        }
    }

    fn entry_head(&self, idx: usize, indent: usize) -> Result<(String, &'a str), String> {
        let line = self.lines[idx];
        let body = line.trim_start_matches(' ');
        if line.len() - body.len() != indent {
            return Err(self.err(
                idx,
                format!("expected an entry indented by exactly {indent} spaces"),
            ));
        }
        let c = re!(r#"^"([^"]*)": (.*)$"#)
            .captures(body)
            .ok_or_else(|| self.err(idx, "expected `\"key\": value`"))?;
        let rest = &body[c.get(2).map_or(body.len(), |m| m.start())..];
        Ok((c[1].to_string(), rest))
    }

    fn value(
        &mut self,
        indent: usize,
        kind: Kind,
        rest: &'a str,
        idx: usize,
    ) -> Result<(JVal, bool), String> {
        let nested = |keys| (keys, rest);
        let (keys, open) = match kind {
            Kind::Sysinfo => nested(Keys::Fixed(SYSINFO)),
            Kind::Thread => nested(Keys::Fixed(THREAD)),
            Kind::Threads => nested(Keys::Threads),
            Kind::Hist => return self.hist(indent, rest, idx),
            scalar => {
                return scalar_value(scalar, rest)
                    .map_err(|e| self.err(idx, e))
                    .map(|(v, c)| (JVal::Raw(v, idx), c))
            }
        };
        if open != "{" {
            return Err(self.err(idx, "expected `{` at the end of the line (nested object)"));
        }
        let (entries, comma) = self.object(indent + 2, keys)?;
        Ok((JVal::Obj(entries), comma))
    }

    /// `{      }` (no buckets) or `{` + `"N": count` lines + `}`.
    fn hist(&mut self, indent: usize, rest: &str, idx: usize) -> Result<(JVal, bool), String> {
        if let Some(r) = rest.strip_prefix("{      }") {
            return match r {
                "" | "," => Ok((JVal::Hist(Vec::new(), idx), r == ",")),
                _ => Err(self.err(idx, "unexpected text after `{      }`")),
            };
        }
        if rest != "{" {
            return Err(self.err(
                idx,
                "histogram must be `{      }` (six spaces) or `{` followed by bucket lines",
            ));
        }
        let close = format!("{}}}", " ".repeat(indent));
        let pad = " ".repeat(indent + 2);
        let mut buckets: Vec<(u64, u64)> = Vec::new();
        loop {
            let i = self.pos;
            let line = self.line(i)?;
            self.pos += 1;
            if line == close || line.strip_suffix(',') == Some(close.as_str()) {
                if buckets.is_empty() {
                    return Err(self.err(i, "an empty histogram is written `{      }`"));
                }
                return Ok((JVal::Hist(buckets, idx), line.ends_with(',')));
            }
            let (b, comma) = hist_entry(line, &pad).map_err(|e| self.err(i, e))?;
            if buckets.last().is_some_and(|p| p.0 >= b.0) {
                return Err(self.err(i, "bucket indices must increase"));
            }
            let next_closes = self
                .lines
                .get(i + 1)
                .is_some_and(|l| l.trim_end_matches(',') == close);
            if comma == next_closes {
                return Err(self.err(i, "every bucket but the last ends with a comma"));
            }
            buckets.push(b);
        }
    }

    /// Skips the value of an extra key; returns its trailing comma.
    fn skip_extra(&mut self, indent: usize, rest: &str, idx: usize) -> Result<bool, String> {
        let (v, comma) = match rest.strip_suffix(',') {
            Some(v) => (v, true),
            None => (rest, false),
        };
        if v != "{" && v != "[" {
            serde_json::from_str::<serde_json::Value>(v)
                .map_err(|e| self.err(idx, format!("extra key: invalid JSON value: {e}")))?;
            return Ok(comma);
        }
        loop {
            let i = self.pos;
            let line = self.line(i)?;
            self.pos += 1;
            let body = line.trim_start_matches(' ');
            let ind = line.len() - body.len();
            if ind > indent {
                continue;
            }
            let closer = if v == "{" { "}" } else { "]" };
            if ind == indent && body.trim_end_matches(',') == closer {
                return Ok(body.ends_with(','));
            }
            return Err(self.err(
                i,
                format!("expected `{closer}` indented by {indent} to close the extra key's value"),
            ));
        }
    }
}

fn hist_entry(line: &str, pad: &str) -> Result<((u64, u64), bool), String> {
    let body = line.strip_prefix(pad).filter(|b| !b.starts_with(' '));
    let c = body
        .and_then(|b| re!(r#"^"(0|[1-9]\d*)": ([1-9]\d*)(,?)$"#).captures(b))
        .ok_or_else(|| format!("expected `{pad}\"<bucket>\": <count>` (unpadded, count > 0)"))?;
    let b: u64 = c[1].parse().map_err(|e| format!("{e}"))?;
    let n: u64 = c[2].parse().map_err(|e| format!("{e}"))?;
    Ok(((b, n), &c[3] == ","))
}

/// Which kind the next key must have; `None` for a tolerated extra key.
fn expected_kind(keys: Keys, entries: &Entries, key: &str) -> Result<Option<Kind>, String> {
    let known = entries
        .iter()
        .filter(|e| !matches!(e.1, JVal::Extra))
        .count();
    let extra_seen = known != entries.len();
    match keys {
        Keys::Fixed(list) => match list.get(known) {
            Some((want, kind)) if *want == key => Ok(Some(*kind)),
            Some((want, _)) if list.iter().any(|(k, _)| *k == key) => {
                Err(format!("key {key:?} out of order: cyclictest writes {want:?} here"))
            }
            Some((want, _)) => Err(format!(
                "extra key {key:?} before cyclictest's key {want:?}: extra keys must come after cyclictest's keys"
            )),
            None if list.iter().any(|(k, _)| *k == key) => Err(format!("duplicate key {key:?}")),
            None => Ok(None),
        },
        Keys::Threads if key.bytes().all(|b| b.is_ascii_digit()) && !key.is_empty() => {
            if extra_seen {
                return Err(format!("thread {key:?} after an extra key: extra keys must come last"));
            }
            if key != known.to_string() {
                return Err(format!("expected thread key \"{known}\", found {key:?}"));
            }
            Ok(Some(Kind::Thread))
        }
        Keys::Threads if known == 0 => Err(format!("extra key {key:?} before thread \"0\"")),
        Keys::Threads => Ok(None),
    }
}

fn missing_key(keys: Keys, entries: &Entries) -> Result<(), String> {
    let known = entries
        .iter()
        .filter(|e| !matches!(e.1, JVal::Extra))
        .count();
    match keys {
        Keys::Fixed(list) if known < list.len() => Err(format!(
            "object closed, but key {:?} is missing",
            list[known].0
        )),
        Keys::Threads if known == 0 => Err("`thread` has no thread entries".into()),
        _ => Ok(()),
    }
}

/// A scalar value of `kind` with an optional trailing comma.
fn scalar_value(kind: Kind, rest: &str) -> Result<(String, bool), String> {
    let (pat, what) = match kind {
        Kind::Int => (r"^-?(0|[1-9]\d*)$", "an integer"),
        Kind::Flag => (r"^[01]$", "0 or 1"),
        Kind::Float2 => (
            r"^(-?(0|[1-9]\d*)\.\d\d|-?nan)$",
            "a number with exactly 2 decimals",
        ),
        Kind::Str => (r#"^".*"$"#, "a string"),
        Kind::Version => (
            r#"^"\d+\.\d\d"$"#,
            r#"a version string with 2 decimals ("2.40")"#,
        ),
        Kind::Date => (
            r#"^"(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d\d (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4} \d\d:\d\d:\d\d [+-]\d{4}"$"#,
            r#"a date string like "Sun, 22 Nov 2026 01:41:18 +0000""#,
        ),
        _ => unreachable!("not a scalar kind"),
    };
    let r = Regex::new(pat).expect("regex");
    if r.is_match(rest) {
        return Ok((rest.to_string(), false));
    }
    match rest.strip_suffix(',') {
        Some(v) if r.is_match(v) => Ok((v.to_string(), true)),
        _ => Err(format!("expected {what}")),
    }
}

fn get<'e>(obj: &'e Entries, key: &str) -> &'e JVal {
    &obj.iter()
        .find(|e| e.0 == key)
        .expect("schema guarantees the key")
        .1
}

fn raw(v: &JVal) -> (&str, usize) {
    match v {
        JVal::Raw(s, i) => (s.as_str(), *i),
        _ => ("", 0),
    }
}

fn int_of(v: &JVal) -> i64 {
    raw(v).0.parse().unwrap_or(0)
}

/// Cross-checks values: thread count, histogram vs -h, min/avg/max.
fn json_semantics(lines: &[&str], root: &Entries, with_histogram: bool) -> Result<(), String> {
    let JVal::Obj(threads) = get(root, "thread") else {
        unreachable!()
    };
    let threads: Vec<&Entries> = threads
        .iter()
        .filter_map(|(_, v)| if let JVal::Obj(o) = v { Some(o) } else { None })
        .collect();
    let (nt, nt_line) = raw(get(root, "num_threads"));
    if nt != threads.len().to_string() {
        return Err(at(
            nt_line + 1,
            lines[nt_line],
            format!("num_threads {nt} but {} thread entries", threads.len()),
        ));
    }
    let mut any_buckets = false;
    let mut all_empty_threads = true;
    for (t, obj) in threads.iter().enumerate() {
        let JVal::Hist(buckets, hline) = get(obj, "histogram") else {
            unreachable!()
        };
        if !with_histogram && !buckets.is_empty() {
            return Err(at(
                hline + 1,
                lines[*hline],
                format!("thread {t}: histogram must be `{{      }}` without -h"),
            ));
        }
        any_buckets |= !buckets.is_empty();
        all_empty_threads &= int_of(get(obj, "cycles")) == 0;
        json_thread(lines, obj, buckets, *hline).map_err(|e| format!("thread \"{t}\": {e}"))?;
    }
    if with_histogram && !any_buckets && !all_empty_threads {
        return Err("with -h at least one thread's histogram must list buckets".into());
    }
    Ok(())
}

fn json_thread(
    lines: &[&str],
    obj: &Entries,
    buckets: &[(u64, u64)],
    hline: usize,
) -> Result<(), String> {
    let (cycles, min, max) = (
        int_of(get(obj, "cycles")),
        int_of(get(obj, "min")),
        int_of(get(obj, "max")),
    );
    let (avg_s, avg_line) = raw(get(obj, "avg"));
    let l = |i: usize| lines[i];
    let in_hist: u64 = buckets.iter().map(|b| b.1).sum();
    if in_hist as i64 > cycles {
        return Err(at(
            hline + 1,
            l(hline),
            format!("histogram holds {in_hist} samples, more than cycles {cycles}"),
        ));
    }
    if cycles == 0 {
        return Ok(());
    }
    let avg: f64 = avg_s.parse().map_err(|_| {
        at(
            avg_line + 1,
            l(avg_line),
            "avg must be a number when cycles > 0",
        )
    })?;
    if !(min <= max && min as f64 <= avg + 0.005 && avg <= max as f64 + 0.005) {
        return Err(at(
            avg_line + 1,
            l(avg_line),
            format!("expected min <= avg <= max, got {min} / {avg} / {max}"),
        ));
    }
    if let (Some(lo), Some(hi)) = (buckets.first(), buckets.last()) {
        if (lo.0 as i64) < min || hi.0 as i64 > max {
            let msg = format!(
                "buckets {}..{} lie outside min {min} / max {max}",
                lo.0, hi.0
            );
            return Err(at(hline + 1, l(hline), msg));
        }
    }
    Ok(())
}

/// The whole text must parse as JSON unless cyclictest's known defects
/// (a `nan` avg, an unescaped `"` in the cmdline) are present.
fn json_validity(text: &str, root: &Entries) -> Result<(), String> {
    let Err(e) = serde_json::from_str::<serde_json::Value>(text) else {
        return Ok(());
    };
    let cmd = raw(get(root, "cmdline:")).0;
    let quote_in_cmdline = cmd.len() >= 2 && cmd[1..cmd.len() - 1].contains('"');
    let has_nan = re!(r#"(?m)^ +"avg": -?nan,?$"#).is_match(text);
    if quote_in_cmdline || has_nan {
        return Ok(());
    }
    Err(format!("not valid JSON: {e}"))
}

// ---------------------------------------------------------------- shape

/// The structure of `text`: every (optionally negative) digit run becomes
/// `N`; spaces padding a number are dropped after line start, `:`, `(`, `=`
/// or a TAB, and collapsed to one space elsewhere. Two outputs with the same
/// layout but different numbers and widths have the same shape.
pub fn shape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for m in re!(r" *-?\d+").find_iter(text) {
        out.push_str(&text[last..m.start()]);
        let spaces = m.as_str().len() - m.as_str().trim_start_matches(' ').len();
        let prev = text[..m.start()].chars().last();
        let padding = matches!(prev, None | Some('\n' | ':' | '(' | '=' | '\t'));
        if spaces > 0 && !padding {
            out.push(' ');
        }
        out.push('N');
        last = m.end();
    }
    out.push_str(&text[last..]);
    out
}

/// Compares the [`shape`] of two outputs line by line; `Err` names the
/// first differing line of each.
pub fn same_shape(a: &str, b: &str) -> Result<(), String> {
    let (sa, sb) = (shape(a), shape(b));
    let (la, lb): (Vec<&str>, Vec<&str>) = (sa.split('\n').collect(), sb.split('\n').collect());
    for (i, (x, y)) in la.iter().zip(&lb).enumerate() {
        if x != y {
            return Err(format!(
                "line {}: shapes differ\n    left:  {x:?}\n    right: {y:?}",
                i + 1
            ));
        }
    }
    if la.len() != lb.len() {
        return Err(format!("line counts differ: {} vs {}", la.len(), lb.len()));
    }
    Ok(())
}
