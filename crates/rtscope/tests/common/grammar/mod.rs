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
//!
//! The checkers live in one submodule per format; everything public is
//! re-exported here, so `use common::grammar::*` reaches all of it.
#![allow(dead_code)]

use std::fmt::Display;

/// A `&'static Regex` compiled once per call site.
macro_rules! re {
    ($pat:expr) => {{
        static RE: ::std::sync::OnceLock<::regex::Regex> = ::std::sync::OnceLock::new();
        RE.get_or_init(|| ::regex::Regex::new($pat).expect("valid grammar regex"))
    }};
}

mod histogram;
mod json;
mod live;
mod shape;
mod spikes;
mod summary;
mod verbose;

pub use histogram::*;
pub use json::*;
pub use live::*;
pub use shape::*;
pub use spikes::*;
pub use summary::*;
pub use verbose::*;

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
