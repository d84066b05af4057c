//! The `-h`/`-H` histogram block.

use super::summary::{break_trailer, preamble};
use super::*;

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
