//! `rtla osnoise top` text (and `rtla hwnoise`, the same table without the IRQ, softirq and
//! thread columns), imported as a run of kind `noise`: one thread per CPU row of the last
//! table.
//!
//! rtla prints a title (`Operating System Noise`), `duration: D HH:MM:SS | time is in us`, the
//! header `CPU Period Runtime Noise % CPU Aval Max Noise Max Single HW NMI IRQ Softirq Thread`
//! and one row per CPU whose runtime is not 0: `CPU #PERIODS RUNTIME NOISE AVAIL MAXNOISE
//! MAXSINGLE HW NMI IRQ SOFTIRQ THREAD`, times in whole µs, the counts of interference entries
//! (not times). `% CPU Aval` is `(runtime − noise) × 10⁷ / runtime` in integer arithmetic,
//! printed as `%3d.%05d`: checked here exactly. Without `-q` the table is redrawn every second
//! after a screen clear (`ESC c`); the last table holds the totals.

use super::{clean, duration_s, quoted, source, Reported, Trailer, MAX_CPUS, MAX_US};
use crate::model::{parse_u64, Bad, Imported, ThreadRow, MAX_COUNT};
use rtscope_store::RunKind;
use serde_json::Value;

/// The header's words: osnoise's; hwnoise has the first [`HW_WORDS`].
const HEADER: [&str; 16] = [
    "CPU", "Period", "Runtime", "Noise", "%", "CPU", "Aval", "Max", "Noise", "Max", "Single", "HW",
    "NMI", "IRQ", "Softirq", "Thread",
];
const HW_WORDS: usize = 13;

/// Which tool printed the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// `rtla osnoise top`: five counts.
    Osnoise,
    /// `rtla hwnoise`: HW and NMI only.
    Hwnoise,
}

/// One table: its duration and rows.
#[derive(Debug, Default)]
struct Table {
    duration: Option<u64>,
    /// Counts per row (5, or 2 for hwnoise), once the header was read.
    counts: Option<usize>,
    rows: Vec<(u32, Reported)>,
}

#[derive(Debug, Default)]
struct State {
    mode: Option<Mode>,
    tables: usize,
    table: Option<Table>,
    trailer: Trailer,
    trailer_from: Option<usize>,
}

/// Parses `rtla osnoise top` (or `rtla hwnoise`) text.
pub fn parse(text: &str) -> Result<Imported, Bad> {
    let mut st = State::default();
    for (i, raw) in text.lines().enumerate() {
        let (line, clear) = clean(i + 1, raw)?;
        st.line(i + 1, line.trim(), clear)?;
    }
    st.finish()
}

impl State {
    fn line(&mut self, no: usize, t: &str, clear: bool) -> Result<(), Bad> {
        if t.is_empty() {
            return Ok(());
        }
        if self.trailer.take(t) {
            self.trailer_from.get_or_insert(no);
            return Ok(());
        }
        if self.trailer_from.is_some() {
            return Err(quoted(
                no,
                "more output after rtla's last line (two runs in one file?)",
                t,
            ));
        }
        let mode = match t {
            "Operating System Noise" => Some(Mode::Osnoise),
            "Hardware-related Noise" => Some(Mode::Hwnoise),
            _ => None,
        };
        if let Some(m) = mode {
            return self.title(no, m, clear);
        }
        if let Some(rest) = t.strip_prefix("duration:") {
            return self.duration(no, rest);
        }
        if t.starts_with("CPU ") {
            return self.header(no, t);
        }
        if t.starts_with(|c: char| c.is_ascii_digit()) {
            return self.row(no, t);
        }
        Err(quoted(no, "not a line of rtla osnoise top", t))
    }

    /// A title starts a table: the first, or a redraw after a screen clear.
    fn title(&mut self, no: usize, m: Mode, clear: bool) -> Result<(), Bad> {
        if self.mode.is_some_and(|old| old != m) {
            return Err(Bad::line(
                no,
                "a table of rtla hwnoise and one of rtla osnoise top in one file",
            ));
        }
        if self.tables > 0 && !clear {
            return Err(Bad::line(
                no,
                "a second table without rtla's screen clear before it: two runs in one file?",
            ));
        }
        self.mode = Some(m);
        self.tables += 1;
        self.table = Some(Table::default());
        Ok(())
    }

    fn table(&mut self, no: usize) -> Result<&mut Table, Bad> {
        self.table
            .as_mut()
            .ok_or_else(|| Bad::line(no, "a line of the table before rtla's title line"))
    }

    fn duration(&mut self, no: usize, rest: &str) -> Result<(), Bad> {
        let (d, unit) = rest.split_once('|').unwrap_or((rest, ""));
        if unit.trim() != "time is in us" {
            return Err(Bad::line(
                no,
                "the duration line does not say 'time is in us'",
            ));
        }
        let s =
            duration_s(d).ok_or_else(|| quoted(no, "the duration is not D HH:MM:SS", d.trim()))?;
        self.table(no)?.duration = Some(s);
        Ok(())
    }

    fn header(&mut self, no: usize, t: &str) -> Result<(), Bad> {
        let words: Vec<&str> = t.split_whitespace().collect();
        let counts = match words.len() {
            16 if words == HEADER => 5,
            HW_WORDS if words == HEADER[..HW_WORDS] => 2,
            _ => return Err(quoted(no, "the header is not rtla osnoise top's", t)),
        };
        let want = if counts == 5 {
            Mode::Osnoise
        } else {
            Mode::Hwnoise
        };
        if self.mode.is_some_and(|m| m != want) {
            return Err(Bad::line(no, "the header's columns do not match the title"));
        }
        self.mode = Some(want);
        if self.table.is_none() {
            self.tables += 1;
            self.table = Some(Table::default());
        }
        let table = self.table(no)?;
        if table.counts.is_some() {
            return Err(Bad::line(no, "a second header in one table"));
        }
        table.counts = Some(counts);
        Ok(())
    }

    fn row(&mut self, no: usize, t: &str) -> Result<(), Bad> {
        let table = self.table(no)?;
        let counts = table
            .counts
            .ok_or_else(|| Bad::line(no, "a CPU row before the header"))?;
        let (cpu, r) = row(no, t, counts)?;
        if table.rows.iter().any(|(c, _)| *c == cpu) || table.rows.len() >= MAX_CPUS {
            return Err(Bad::line(
                no,
                "a CPU twice in one table, or more than 4096 CPU rows",
            ));
        }
        table.rows.push((cpu, r));
        Ok(())
    }

    fn finish(self) -> Result<Imported, Bad> {
        let (Some(mode), Some(table)) = (self.mode, self.table) else {
            return Err(Bad::file(
                "no rtla osnoise top table (its title 'Operating System Noise' and header 'CPU Period Runtime …')",
            ));
        };
        if table.rows.is_empty() {
            return Err(Bad::file(
                "rtla printed no CPU row: no CPU completed an osnoise period (rtla stopped, or was stopped, within the first period), so there is nothing to import",
            ));
        }
        let mut out = Imported {
            kind: Some(RunKind::Noise),
            ends_at_mtime: true,
            progress_ns: table
                .duration
                .map_or(0, |s| s.saturating_mul(1_000_000_000)),
            ..Imported::default()
        };
        let mut per_cpu = Vec::new();
        for (i, (cpu, r)) in table.rows.iter().enumerate() {
            let mut t = ThreadRow::new(i as u32);
            t.cpu = Some(*cpu);
            t.figures.max_ns = r.max_single_ns;
            out.threads.push(t);
            per_cpu.push(r.json(i));
        }
        let tool = match mode {
            Mode::Osnoise => "rtla osnoise top",
            Mode::Hwnoise => "rtla hwnoise",
        };
        out.source = source(tool, table.duration, per_cpu);
        out.source
            .insert("tables".into(), Value::from(self.tables as u64));
        notes(&mut out, mode, self.tables, &table);
        self.trailer.record(&mut out.source, &mut out.notes);
        Ok(out)
    }
}

/// One CPU row: its CPU and figures, checked against each other.
fn row(no: usize, t: &str, counts: usize) -> Result<(u32, Reported), Bad> {
    let w: Vec<&str> = t.split_whitespace().collect();
    if w.len() != 7 + counts {
        return Err(quoted(no, "not the fields of a CPU row", t));
    }
    // A count, or a time in µs (at most 2^47: larger ones are not plausible).
    let num = |i: usize, max: u64, what: &str| {
        parse_u64(w[i])
            .filter(|&v| v <= max)
            .ok_or_else(|| quoted(no, what, w[i]))
    };
    let cpu = num(0, 1 << 20, "the CPU is not a CPU number")? as u32;
    let periods = w[1]
        .strip_prefix('#')
        .and_then(parse_u64)
        .filter(|&p| p > 0 && p <= MAX_COUNT)
        .ok_or_else(|| quoted(no, "the period count is not #N", w[1]))?;
    let us = |i: usize, what: &str| num(i, MAX_US, what).map(|v| v * 1000);
    let runtime = us(2, "the runtime is not a count of µs")?;
    let noise = us(3, "the noise is not a count of µs")?;
    let max_noise = us(5, "Max Noise is not a count of µs")?;
    let max_single = us(6, "Max Single is not a count of µs")?;
    check_available(no, runtime, noise, w[4])?;
    if max_single > max_noise || max_noise > noise {
        return Err(Bad::line(
            no,
            "Max Single, Max Noise and Noise are not in order (a single noise is part of its period's, a period's part of the total)",
        ));
    }
    let mut r = Reported {
        cpu: Some(cpu),
        periods: Some(periods),
        runtime_ns: Some(runtime),
        noise_ns: Some(noise),
        max_noise_ns: Some(max_noise),
        max_single_ns: Some(max_single),
        available: Some(w[4].to_string()),
        ..Reported::default()
    };
    for k in 0..counts {
        r.counts[k] = Some(num(
            7 + k,
            MAX_COUNT,
            "an interference count is not a count",
        )?);
    }
    Ok((cpu, r))
}

/// `% CPU Aval` as rtla computes it: `(runtime − noise) × 10⁷ / runtime`, integer, printed as
/// `%3d.%05d`.
fn check_available(no: usize, runtime: u64, noise: u64, printed: &str) -> Result<(), Bad> {
    if runtime == 0 || noise > runtime {
        return Err(Bad::line(
            no,
            "the noise is larger than the runtime, or the runtime is 0 (rtla prints no such row)",
        ));
    }
    let p = u128::from(runtime - noise) * 10_000_000 / u128::from(runtime);
    let (whole, frac) = printed.split_once('.').unwrap_or((printed, ""));
    let value = parse_u64(whole).zip(parse_u64(frac).filter(|_| frac.len() == 5));
    if value.map(|(w, f)| u128::from(w) * 100_000 + u128::from(f)) != Some(p) {
        return Err(quoted(
            no,
            "% CPU Aval does not follow from the runtime and noise",
            printed,
        ));
    }
    Ok(())
}

fn notes(out: &mut Imported, mode: Mode, tables: usize, table: &Table) {
    out.notes.push("rtla osnoise top, as a noise run: per CPU the tracer's sums over its periods in whole µs (runtime, noise at or over its unstated threshold, % available, the longest single noise as the max) and counts of interference entries, not times (HW: none seen, so hardware, firmware or hypervisor); no histogram, no iteration count: samples 0, no percentiles".into());
    if mode == Mode::Hwnoise {
        out.notes.push(
            "rtla hwnoise has no IRQ, softirq or thread column: those counts are unknown, not 0"
                .into(),
        );
    }
    if tables > 1 {
        out.notes.push("the last of the tables top redraws every second without -q (rtla's totals) is imported".into());
    }
    if table.duration.is_none() {
        out.notes
            .push("no duration line: the time measured is unknown".into());
    }
}

#[cfg(test)]
mod tests;
