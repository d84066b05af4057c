//! `rtla osnoise top` and `rtla osnoise hist` text (Linux `tools/tracing/rtla`), imported as
//! runs of kind `noise`: one thread per CPU. What both share is here: the lines with rtla's
//! terminal escapes taken out, the lines rtla may add after its table (a stop, a saved trace,
//! missed events), the duration, and the per-CPU figures the report and `compare` read back
//! (`config.source.per_cpu`: docs/import.md, "rtla osnoise").
//!
//! The formats were taken from real output of Debian 12's rtla 6.1 on its PREEMPT_RT kernel
//! (crates/rtscope/tests/fixtures/import/rtla/) and from rtla's sources for the variants that
//! output does not show (`hwnoise`, the mainline `%.2f` average, the missed-events line).

pub mod hist;
pub mod top;

use super::model::{excerpt, parse_u64, Bad};
use serde_json::{Map, Value};
use std::borrow::Cow;

/// The longest line read, bytes (a hist row of 4,096 CPUs is about 41 kB).
const MAX_LINE: usize = 1 << 20;
/// The most CPUs of one file (rows of top, columns of hist).
pub const MAX_CPUS: usize = 4096;
/// The largest time value accepted, µs (about 4.5 years): larger ones are not plausible and
/// would overflow once in ns.
pub const MAX_US: u64 = 1 << 47;

/// A line of rtla output with its terminal escapes taken out (`ESC [ … m` colours, which rtla
/// 6.1 writes even into a file; `ESC c`, the screen clear before each redraw of `top`), and
/// whether it held a clear. Any other control character or escape is refused, as is a line
/// longer than 1 MiB.
pub fn clean(no: usize, raw: &str) -> Result<(Cow<'_, str>, bool), Bad> {
    let raw = raw.strip_suffix('\r').unwrap_or(raw);
    if raw.len() > MAX_LINE {
        return Err(Bad::line(no, "longer than 1 MiB: not rtla output"));
    }
    let control = |c: char| (c < ' ' && c != '\t') || c == '\x7f';
    if !raw.contains(control) {
        return Ok((Cow::Borrowed(raw), false));
    }
    let (mut out, mut clear, mut rest) = (String::with_capacity(raw.len()), false, raw);
    while let Some(i) = rest.find(control) {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        if let Some(t) = tail.strip_prefix("\x1bc") {
            clear = true;
            rest = t;
            continue;
        }
        let sgr = tail.strip_prefix("\x1b[").and_then(|t| {
            let end = t.find(|c: char| !(c.is_ascii_digit() || c == ';'))?;
            t[end..].strip_prefix('m')
        });
        match sgr {
            Some(t) => rest = t,
            None => {
                return Err(quoted(
                    no,
                    "a control character or escape sequence rtla does not write",
                    tail,
                ))
            }
        }
    }
    out.push_str(rest);
    Ok((Cow::Owned(out), clear))
}

/// `WHAT: 'TOKEN'` on line `no` (the token cut short; escaped by [`Bad`]): the one way the
/// rtla parsers quote what they refuse.
#[cold]
#[inline(never)]
pub fn quoted(no: usize, what: &str, token: &str) -> Bad {
    Bad::line(no, format!("{what}: '{}'", excerpt(token, 40)))
}

/// `v` as JSON, `null` for `None`.
pub fn opt(v: Option<u64>) -> Value {
    v.map_or(Value::Null, Value::from)
}

/// Adds `facts` to `m`.
pub fn put(m: &mut Map<String, Value>, facts: Vec<(&str, Value)>) {
    for (k, v) in facts {
        m.insert(k.into(), v);
    }
}

/// rtla's duration, `D HH:MM:SS` (`  0 00:00:10`), in seconds.
pub fn duration_s(text: &str) -> Option<u64> {
    let mut w = text.split_whitespace();
    let (days, hms) = (parse_u64(w.next()?)?, w.next()?);
    if w.next().is_some() || days > 1 << 24 {
        return None;
    }
    let mut parts = hms.split(':').map(parse_u64);
    let (h, m, s) = (parts.next()??, parts.next()??, parts.next()??);
    (parts.next().is_none() && h < 24 && m < 60 && s < 60)
        .then(|| days * 86_400 + h * 3600 + m * 60 + s)
}

/// What rtla may print after its table: the stop condition hit (`-s`, `-S`, `-a`), the trace
/// saved (`-t`), events the trace buffer dropped (mainline).
#[derive(Debug, Default)]
pub struct Trailer {
    /// `osnoise hit stop tracing` (rtla 6.1 top), `rtla osnoise hit stop tracing` (6.1 hist).
    pub stopped: bool,
    /// `  Saving trace to FILE`: the file (escaped, clipped).
    pub trace_saved: Option<String>,
    /// `N (P%) events missed, …`: N; `unknown number of events missed, …`: unknown (rtla 6.1
    /// never says, so no line is not 0 either).
    pub missed: Option<Option<u64>>,
}

impl Trailer {
    /// Takes `line` if it is one of these; false otherwise.
    pub fn take(&mut self, line: &str) -> bool {
        let t = line.trim();
        if matches!(
            t,
            "osnoise hit stop tracing"
                | "rtla osnoise hit stop tracing"
                | "hwnoise hit stop tracing"
                | "rtla hwnoise hit stop tracing"
        ) {
            self.stopped = true;
            return true;
        }
        if let Some(file) = t.strip_prefix("Saving trace to ") {
            let safe = rtscope_core::text::escape(file).into_owned();
            self.trace_saved = Some(rtscope_core::text::clip(&safe, 200).into_owned());
            return true;
        }
        let Some(head) = t.strip_suffix("events missed, results might not be accurate") else {
            return false;
        };
        let n = head.split_whitespace().next().and_then(parse_u64);
        match head.trim() {
            "unknown number of" => self.missed = Some(None),
            h if n.is_some() && h.ends_with("%)") => self.missed = Some(n),
            _ => return false,
        }
        true
    }

    /// Its facts for `config.source`, and its notes.
    pub fn record(&self, source: &mut Map<String, Value>, notes: &mut Vec<String>) {
        source.insert("stopped".into(), Value::Bool(self.stopped));
        if self.stopped {
            notes.push("rtla hit its stop condition (-s, -S, -a) and ended there".into());
        }
        if let Some(f) = &self.trace_saved {
            source.insert("trace_saved_to".into(), Value::from(f.as_str()));
        }
        if let Some(n) = self.missed {
            source.insert("missed_events".into(), opt(n));
            notes.push(format!(
                "rtla says {} events were missed: its figures may be incomplete",
                n.map_or("an unknown number of".into(), |n| n.to_string())
            ));
        }
    }
}

/// One CPU as rtla reports it, for `config.source.per_cpu` (the report's and `compare`'s
/// figures of an rtla import: `rtscope_report::noise`). `None`: rtla does not say.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Reported {
    /// The CPU (`None`: hist `--no-header`).
    pub cpu: Option<u32>,
    /// osnoise periods summed (top's `#N`).
    pub periods: Option<u64>,
    /// Time the osnoise thread ran, ns.
    pub runtime_ns: Option<u64>,
    /// Noise: the time lost to gaps at or over the threshold, ns.
    pub noise_ns: Option<u64>,
    /// The largest noise of one period, ns.
    pub max_noise_ns: Option<u64>,
    /// The longest single noise, ns.
    pub max_single_ns: Option<u64>,
    /// rtla's `% CPU Aval`, as printed.
    pub available: Option<String>,
    /// Noises over the threshold counted (hist's `count:`).
    pub noise_events: Option<u64>,
    /// Interference counts: HW, NMI, IRQ, softirq, thread (`None` each where rtla has no
    /// column: hwnoise has only HW and NMI).
    pub counts: [Option<u64>; 5],
}

/// The names of [`Reported::counts`], in order.
pub const CLASSES: [&str; 5] = ["hw", "nmi", "irq", "softirq", "thread"];

impl Reported {
    /// As JSON, with `null` for what rtla does not say.
    pub fn json(&self, thread: usize) -> Value {
        let mut counts = Map::new();
        for (name, v) in CLASSES.iter().zip(self.counts) {
            counts.insert((*name).into(), opt(v));
        }
        let mut m = Map::new();
        let figures = [
            ("thread", Some(thread as u64)),
            ("cpu", self.cpu.map(u64::from)),
            ("periods", self.periods),
            ("runtime_ns", self.runtime_ns),
            ("noise_ns", self.noise_ns),
            ("max_noise_ns", self.max_noise_ns),
            ("max_single_ns", self.max_single_ns),
            ("noise_events", self.noise_events),
        ];
        for (k, v) in figures {
            m.insert(k.into(), opt(v));
        }
        let avail = self.available.as_deref().map_or(Value::Null, Value::from);
        put(
            &mut m,
            vec![("available_pct", avail), ("counts", Value::Object(counts))],
        );
        Value::Object(m)
    }
}

/// The source facts both formats record.
pub fn source(tool: &str, duration: Option<u64>, per_cpu: Vec<Value>) -> Map<String, Value> {
    let mut m = Map::new();
    put(
        &mut m,
        vec![
            ("tool", Value::from(tool)),
            ("unit", Value::from("us")),
            ("duration_s", opt(duration)),
            ("per_cpu", Value::Array(per_cpu)),
        ],
    );
    m
}

#[cfg(test)]
mod tests;
