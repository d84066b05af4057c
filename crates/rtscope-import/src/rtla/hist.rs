//! `rtla osnoise hist` text, imported as a run of kind `noise`: one thread per CPU column,
//! whose samples are the noises over the threshold (the tracer's `sample_threshold` events),
//! not the loop's gaps.
//!
//! rtla prints `# RTLA osnoise histogram`, `# Time unit is microseconds (us)`, `# Duration: D
//! HH:MM:SS`, `Index   CPU-000   CPU-001` (only the CPUs that saw a noise), one row per bucket
//! (`INDEX COUNT…`; `INDEX` is the bucket's lower bound, `-b` apart; rows whose counts are all 0
//! only with `--with-zeros`), then `over:` (noises at or above `-E` buckets), `count:`, `min:`,
//! `avg:` and `max:`. The kernel's histogram puts each noise at its bucket's lower bound, so
//! rtla's min, avg and max are of those lower bounds too, and max is known beyond the last
//! bucket. `--no-header` drops the `#` lines and the CPU line, `--no-summary` the last four;
//! `--no-index` (which rtla 6.1 refuses without `--with-zeros`) drops the bucket values and is
//! refused here. With no noise at all rtla prints no CPU column and `over: 0` … `max: 0`.

use super::{clean, duration_s, opt, put, quoted, source, Reported, Trailer, MAX_CPUS, MAX_US};
use crate::model::{parse_u64, Bad, Counter, Imported, ThreadRow, MAX_COUNT};
use rtscope_store::RunKind;
use serde_json::Value;

/// The footer's labels, in rtla's order.
const FOOTER: [&str; 5] = ["over:", "count:", "min:", "avg:", "max:"];

/// One CPU column.
#[derive(Debug, Clone)]
struct Column {
    cpu: Option<u32>,
    /// The rows, in the source's unit.
    counter: Counter,
    /// `over:`, `count:`, `min:`, `avg:`, `max:` (avg ×100: rtla 6.1 prints it whole, later
    /// versions with two decimals).
    footer: [Option<u64>; 5],
}

#[derive(Debug)]
struct State {
    header: bool,
    unit_ns: u64,
    duration: Option<u64>,
    columns: Option<Vec<Column>>,
    /// The footer lines read (a prefix of [`FOOTER`]).
    footer: usize,
    last_index: Option<u64>,
    /// The gcd of the bucket indices (the bucket width, or a multiple of it).
    gcd: u64,
    trailer: Trailer,
    /// rtla's form for no noise at all: no CPU column, `over: 0` … `max: 0`.
    empty: bool,
}

/// Parses `rtla osnoise hist` text.
pub fn parse(text: &str) -> Result<Imported, Bad> {
    let mut st = State {
        header: false,
        unit_ns: 1000,
        duration: None,
        columns: None,
        footer: 0,
        last_index: None,
        gcd: 0,
        trailer: Trailer::default(),
        empty: false,
    };
    for (i, raw) in text.lines().enumerate() {
        let (line, _) = clean(i + 1, raw)?;
        st.line(i + 1, line.trim())?;
    }
    st.finish()
}

fn column(cpu: Option<u32>) -> Column {
    Column {
        cpu,
        counter: Counter::new(),
        footer: [None; 5],
    }
}

impl State {
    fn line(&mut self, no: usize, t: &str) -> Result<(), Bad> {
        if t.is_empty() || self.trailer.take(t) {
            return Ok(());
        }
        if self.trailer.stopped || self.trailer.trace_saved.is_some() {
            return Err(Bad::line(
                no,
                "more output after rtla's last line (two runs in one file?)",
            ));
        }
        if let Some(c) = t.strip_prefix('#') {
            return self.comment(no, c.trim());
        }
        let first = t.split_whitespace().next().unwrap_or("");
        if let Some(k) = FOOTER.iter().position(|&f| f == first) {
            return self.footer(no, k, &t[first.len()..]);
        }
        if first == "Index" {
            return self.cpus(no, &t[first.len()..]);
        }
        if first.starts_with("CPU-") {
            return Err(Bad::line(
                no,
                "CPU columns without 'Index': rtla's --no-index output has no bucket values, so it cannot be imported (capture it again without --no-index)",
            ));
        }
        if first.starts_with(|c: char| c.is_ascii_digit()) {
            return self.row(no, t);
        }
        Err(quoted(no, "not a line of rtla osnoise hist", t))
    }

    fn comment(&mut self, no: usize, c: &str) -> Result<(), Bad> {
        let seen = self.header || self.columns.is_some();
        match c {
            "RTLA osnoise histogram" if !seen => self.header = true,
            "RTLA timerlat histogram" => {
                return Err(Bad::line(no, "rtla timerlat hist output: rtscope imports rtla osnoise top and hist, not timerlat"))
            }
            "Time unit is microseconds (us)" if self.header => self.unit_ns = 1000,
            "Time unit is nanoseconds (ns)" if self.header => self.unit_ns = 1,
            _ => {
                let d = c.strip_prefix("Duration:").filter(|_| self.header);
                let Some(s) = d.and_then(duration_s) else {
                    return Err(quoted(no, "not a header line of rtla osnoise hist", c));
                };
                self.duration = Some(s);
            }
        }
        Ok(())
    }

    /// `Index   CPU-000   CPU-001`.
    fn cpus(&mut self, no: usize, rest: &str) -> Result<(), Bad> {
        if self.columns.is_some() {
            return Err(Bad::line(
                no,
                "a second 'Index' line, or one after the rows",
            ));
        }
        let mut cols = Vec::new();
        for w in rest.split_whitespace() {
            let cpu = w
                .strip_prefix("CPU-")
                .and_then(parse_u64)
                .and_then(|c| u32::try_from(c).ok())
                .filter(|&c| c < 1 << 20)
                .ok_or_else(|| quoted(no, "not CPU-N", w))?;
            if cols.iter().any(|c: &Column| c.cpu == Some(cpu)) || cols.len() >= MAX_CPUS {
                return Err(Bad::line(no, "a CPU twice, or more than 4096 CPUs"));
            }
            cols.push(column(Some(cpu)));
        }
        self.columns = Some(cols);
        Ok(())
    }

    /// The columns, made from the first line of numbers under `--no-header`.
    fn columns_for(&mut self, no: usize, n: usize) -> Result<&mut Vec<Column>, Bad> {
        if self.columns.is_none() {
            if n == 0 || n > MAX_CPUS {
                return Err(Bad::line(
                    no,
                    "no CPU column, or more than 4096: not rtla osnoise hist",
                ));
            }
            self.columns = Some((0..n).map(|_| column(None)).collect());
        }
        let cols = self.columns.as_mut().expect("set above");
        if cols.len() != n {
            return Err(Bad::line(
                no,
                "not as many values as the histogram has CPU columns",
            ));
        }
        Ok(cols)
    }

    fn row(&mut self, no: usize, t: &str) -> Result<(), Bad> {
        if self.footer > 0 {
            return Err(Bad::line(no, "a bucket row after 'over:'"));
        }
        let mut w = t.split_whitespace();
        let index = w
            .next()
            .and_then(parse_u64)
            .filter(|&i| i <= MAX_US)
            .ok_or_else(|| quoted(no, "not a bucket index", t))?;
        if self.last_index.is_some_and(|l| index <= l) {
            return Err(quoted(no, "a bucket not after the one before it", t));
        }
        let mut values = Vec::new();
        for v in w {
            values.push(count(no, v)?);
        }
        let cols = self.columns_for(no, values.len())?;
        for (c, n) in cols.iter_mut().zip(values) {
            c.counter.add_n(index, n);
            c.counter.plausible(|| Bad::line(no, "the counts"))?;
        }
        self.gcd = gcd(self.gcd, index);
        self.last_index = Some(index);
        Ok(())
    }

    fn footer(&mut self, no: usize, k: usize, rest: &str) -> Result<(), Bad> {
        if k != self.footer {
            return Err(quoted(
                no,
                "a summary line out of rtla's order (over:, count:, min:, avg:, max:)",
                FOOTER[k],
            ));
        }
        self.footer += 1;
        let words: Vec<&str> = rest.split_whitespace().collect();
        // No noise at all: no CPU column and a single 0 after each label.
        if self.columns.as_ref().is_some_and(Vec::is_empty) && words == ["0"] {
            self.empty = true;
            return Ok(());
        }
        let mut values = Vec::with_capacity(words.len());
        for w in &words {
            values.push(match k {
                3 => avg(no, w)?,
                2 | 4 => time(no, w)?,
                _ => count(no, w)?,
            });
        }
        let cols = self.columns_for(no, values.len())?;
        for (c, v) in cols.iter_mut().zip(values) {
            c.footer[k] = Some(v);
        }
        Ok(())
    }

    fn finish(mut self) -> Result<Imported, Bad> {
        if self.empty || (self.footer > 0 && self.columns.as_ref().is_some_and(Vec::is_empty)) {
            return Err(Bad::file("rtla saw no noise over the threshold on any CPU: it prints no CPU column then, so there is no CPU to import"));
        }
        let footer = self.footer;
        let Some(cols) = self.columns.take().filter(|c| !c.is_empty() && footer > 0) else {
            return Err(Bad::file(
                "no 'over:' line after the bucket rows: not rtla osnoise hist output, or cut short",
            ));
        };
        let width = self.gcd.max(1);
        let floor = self.last_index.map_or(0, |l| l.saturating_add(width));
        let mut out = Imported {
            kind: Some(RunKind::Noise),
            ends_at_mtime: true,
            progress_ns: self.duration.map_or(0, |s| s.saturating_mul(1_000_000_000)),
            ..Imported::default()
        };
        let (mut per_cpu, mut over) = (Vec::new(), Vec::new());
        for (i, c) in cols.iter().enumerate() {
            let (t, r) = thread(i, c, self.unit_ns, floor)?;
            over.push(c.footer[0]);
            out.threads.push(t);
            per_cpu.push(r.json(i));
        }
        out.source = source("rtla osnoise hist", self.duration, per_cpu);
        let unit = if self.unit_ns == 1 { "ns" } else { "us" };
        let shown = if self.unit_ns == 1 { "ns" } else { "µs" };
        let over = over.into_iter().map(opt).collect();
        let facts = vec![
            ("unit", Value::from(unit)),
            ("histogram", Value::from("noise_over_threshold")),
            ("bucket_width", Value::from(width)),
            ("overflows", Value::Array(over)),
            ("overflow_at_least", Value::from(floor)),
            ("header", Value::Bool(self.header)),
            ("summary", Value::Bool(self.footer == FOOTER.len())),
        ];
        put(&mut out.source, facts);
        notes(&mut out, &self, shown, width, floor);
        self.trailer.record(&mut out.source, &mut out.notes);
        Ok(out)
    }
}

fn count(no: usize, w: &str) -> Result<u64, Bad> {
    parse_u64(w)
        .filter(|&v| v <= MAX_COUNT)
        .ok_or_else(|| quoted(no, "not a count", w))
}

/// A time (`min:`, `max:`), at most 2^47 units: larger ones are not plausible.
fn time(no: usize, w: &str) -> Result<u64, Bad> {
    parse_u64(w)
        .filter(|&v| v <= MAX_US)
        .ok_or_else(|| quoted(no, "not a time up to 2^47", w))
}

/// rtla's average ×100: `884` (6.1, whole) or `3046.52` (later, `%.2f`).
fn avg(no: usize, w: &str) -> Result<u64, Bad> {
    let (whole, frac) = w.split_once('.').unwrap_or((w, ""));
    let hundredths = match frac.len() {
        0 => Some(0),
        1 | 2 => parse_u64(frac).map(|f| if frac.len() == 1 { f * 10 } else { f }),
        _ => None,
    };
    parse_u64(whole)
        .filter(|&v| v <= MAX_US)
        .zip(hundredths)
        .map(|(v, f)| v * 100 + f)
        .ok_or_else(|| quoted(no, "avg is not a number", w))
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// One column as a thread and its reported figures, its footer checked against its rows.
fn thread(i: usize, c: &Column, unit: u64, floor: u64) -> Result<(ThreadRow, Reported), Bad> {
    let bad = |what: &str| match c.cpu {
        Some(cpu) => Bad::file(format!("CPU {cpu}: {what}")),
        None => Bad::file(format!("column {}: {what}", i + 1)),
    };
    let h = &c.counter;
    let [over, count, min, avg100, max] = c.footer;
    let over = over.unwrap_or(0);
    let total = h.count.checked_add(over).filter(|&t| t <= MAX_COUNT);
    let total = total.ok_or_else(|| bad("the counts are not plausible"))?;
    if count.is_some_and(|n| n != total) || total == 0 {
        return Err(bad(
            "count: is not the rows plus over: (and rtla prints only CPUs with noise)",
        ));
    }
    check_summary(h, c.footer, total, floor).map_err(bad)?;
    let rows = (h.count > 0).then_some((h.min, h.max));
    let mut t = ThreadRow::new(i as u32);
    t.cpu = c.cpu;
    t.figures.samples = total;
    t.histogram = h.histogram(unit);
    // Indices and rtla's min and max are at most 2^47 units: no overflow in ns.
    t.figures.min_ns = min.or(rows.map(|r| r.0)).map(|v| v * unit);
    t.figures.max_ns = max
        .or(rows.filter(|_| over == 0).map(|r| r.1))
        .map(|v| v * unit);
    t.figures.mean_ns = match avg100 {
        Some(a) => Some(a as f64 * unit as f64 / 100.0),
        None if over == 0 => h.mean_ns(unit),
        None => None,
    };
    let noise = t.figures.mean_ns.map(|m| (m * total as f64).round() as u64);
    let r = Reported {
        cpu: c.cpu,
        noise_ns: noise,
        max_single_ns: t.figures.max_ns,
        noise_events: Some(total),
        ..Reported::default()
    };
    Ok((t, r))
}

/// rtla's `min:`, `max:` and `avg:` against the rows and `over:` (what is wrong, if anything).
fn check_summary(
    h: &Counter,
    footer: [Option<u64>; 5],
    total: u64,
    floor: u64,
) -> Result<(), &'static str> {
    let [over, _, min, avg100, max] = footer;
    let over = over.unwrap_or(0);
    let rows = (h.count > 0).then_some((h.min, h.max));
    // rtla's min and max are bucket lower bounds: the lowest and highest row with a count, or
    // above the rows when the max (or every noise) is among the overflows.
    let min_ok = min.is_none_or(|m| rows.map_or(m >= floor, |(lo, _)| m == lo));
    let max_ok = max.is_none_or(|m| match rows {
        Some((_, hi)) if over == 0 => m == hi,
        _ => m >= floor,
    });
    if !min_ok || !max_ok {
        return Err("min: or max: does not match the rows and over:");
    }
    // Every noise lies at or above its bucket (an overflow at or above `floor`), and rtla's
    // average is cut to a whole or to two decimals: it cannot lie a whole unit below that.
    let least = h.sum + u128::from(over) * u128::from(floor);
    if let Some(a) = avg100 {
        let top = (u128::from(a) + 100) * u128::from(total);
        if top < least * 100
            || min.is_some_and(|m| a + 100 < m * 100)
            || max.is_some_and(|m| a > m * 100 + 100)
        {
            return Err("avg: does not fit the rows, min and max");
        }
    }
    Ok(())
}

fn notes(out: &mut Imported, st: &State, unit: &str, width: u64, floor: u64) {
    out.notes.push(format!(
        "rtla osnoise hist, as a noise run: each sample is a noise at or over the unstated threshold, not a loop iteration, recorded at its bucket's lower bound ({width} {unit} buckets, as rtla's min, avg and max); noise = avg × count; no runtime (available unknown), no interference counts"
    ));
    let over: u64 = out
        .threads
        .iter()
        .map(|t| t.figures.samples - t.histogram.count())
        .sum();
    if over > 0 {
        out.notes.push(format!(
            "{over} noises are in rtla's over: count (at least {floor} {unit}): samples without a value, histogram overflows with a lower bound; the max is rtla's"
        ));
    }
    if !st.header {
        out.notes
            .push("--no-header: CPUs and duration unknown, µs assumed".into());
    }
    if st.footer < FOOTER.len() {
        out.notes.push("--no-summary: min and max from the rows (no max if noises overflowed), the mean only without overflows".into());
    }
}

#[cfg(test)]
mod tests;
