//! What every parser produces: one run's threads, statistics and provenance, independent of the
//! source format; plus [`Counter`], the per-thread tally of integer latencies that turns into a
//! lossless [`Histogram`] once at the end.

use rtscope_core::{layout, Histogram, Nanos};
use rtscope_store::SeriesPoint;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// A parse failure: where (`line 12`, `field thread."0".cycles`, `record 7`) and what. The caller
/// prefixes the file name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bad {
    /// The place in the file, if there is one.
    pub at: Option<String>,
    /// What is wrong.
    pub what: String,
}

/// The most of a message (and so of the offending line it quotes) an error keeps, in bytes.
pub const MAX_ERROR_BYTES: usize = 240;

/// A message safe to print: at most [`MAX_ERROR_BYTES`] of it, control characters escaped
/// (a hostile file's line is quoted in it).
fn bounded(what: String) -> String {
    let clipped = rtscope_core::text::clip(&what, MAX_ERROR_BYTES);
    rtscope_core::text::escape(&clipped).into_owned()
}

impl Bad {
    /// A failure at no particular place (the file as a whole).
    pub fn file(what: impl Into<String>) -> Bad {
        Bad {
            at: None,
            what: bounded(what.into()),
        }
    }
    /// A failure on a 1-based line.
    pub fn line(line: usize, what: impl Into<String>) -> Bad {
        Bad {
            at: Some(format!("line {line}")),
            what: bounded(what.into()),
        }
    }
    /// A failure in a named field (JSON path).
    pub fn field(field: impl std::fmt::Display, what: impl Into<String>) -> Bad {
        Bad {
            at: Some(bounded(format!("field {field}"))),
            what: bounded(what.into()),
        }
    }
}

impl std::fmt::Display for Bad {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.at {
            Some(at) => write!(f, "{at}: {}", self.what),
            None => f.write_str(&self.what),
        }
    }
}

/// One thread of an imported run: the store's own per-thread record
/// ([`rtscope_store::ThreadRow`]), filled in with what the source says (`policy` is `unknown`,
/// numbers 0 and options `None` where it says nothing; `samples` includes any the histogram
/// could not hold; `max_ns` is exact also beyond the source's histogram).
pub(crate) use rtscope_store::ThreadRow;

/// One parsed source: everything a run of the store needs except what the importer adds
/// (label, tags, command line, file path and format).
#[derive(Debug, Clone, Default)]
pub struct Imported {
    /// The threads, by index.
    pub threads: Vec<ThreadRow>,
    /// Start of the measurement, ns since the Unix epoch, when the source records it.
    pub started_unix_ns: Option<i64>,
    /// End of the measurement, ns since the Unix epoch, when the source records it.
    pub ended_unix_ns: Option<i64>,
    /// Time measured, ns (0 when unknown).
    pub progress_ns: u64,
    /// Format-specific facts for `config.source` (merged after `format` and `path`).
    pub source: Map<String, Value>,
    /// Environment facts (`uname.release`, …).
    pub environment: Vec<(String, String)>,
    /// Per-second series points, when the source has timestamps.
    pub series: Vec<SeriesPoint>,
    /// What the source lost or what the importer had to assume, for the user.
    pub notes: Vec<String>,
    /// The kind of run to record (`None`: `import`; busy-loop gaps or noise: `noise`).
    pub kind: Option<rtscope_store::RunKind>,
    /// The file was written as the run ended (rtla prints its results at the end): without a
    /// start time in the source, the start is its modification time minus the time measured.
    pub ends_at_mtime: bool,
}

impl Imported {
    /// Samples over all threads.
    pub fn samples(&self) -> u64 {
        self.threads.iter().map(|t| t.figures.samples).sum()
    }
}

/// More samples than this in one thread are refused as corrupt (2^56: 2 × 10^8 years at 10 kHz).
pub const MAX_COUNT: u64 = 1 << 56;

/// Values below this are counted in a dense array (grown on demand); larger ones in a map.
const DENSE_LIMIT: u64 = 1 << 20;
/// The dense array's first size, and its size at most per value counted outside it: the memory
/// grows with the input, not with the values in it (a 17-byte line `4095:0:1048575` must not
/// cost 8 MiB).
const DENSE_MIN: u64 = 1024;
const DENSE_PER_SLOW_ADD: u64 = 16;

/// A tally of integer latencies in the source's unit (µs or ns) for one thread: a dense counter
/// array indexed by value plus exact count, sum, min, max and the cycle of the max. Adding a
/// sample is an array increment; [`Counter::histogram`] converts once at the end.
#[derive(Debug, Clone)]
pub struct Counter {
    /// Counts of the values below `dense.len()`.
    dense: Vec<u64>,
    /// Counts of the values at or above `dense.len()`.
    sparse: BTreeMap<u64, u64>,
    /// Values counted outside the dense array (calls of `add_slow`): bound its size. Counted
    /// there, not in `add_n`, to keep the fast path a single increment.
    slow_adds: u64,
    /// Samples counted.
    pub count: u64,
    /// Sum of the values, in the source's unit.
    pub sum: u128,
    /// Smallest value (meaningless while `count == 0`).
    pub min: u64,
    /// Largest value.
    pub max: u64,
    /// Cycle of the first occurrence of the largest value.
    pub max_cycle: u64,
}

impl Counter {
    /// An empty tally.
    pub fn new() -> Counter {
        Counter {
            dense: Vec::new(),
            sparse: BTreeMap::new(),
            slow_adds: 0,
            count: 0,
            sum: 0,
            min: u64::MAX,
            max: 0,
            max_cycle: 0,
        }
    }

    /// Counts one sample `v` taken at `cycle`.
    #[inline]
    pub fn add(&mut self, v: u64, cycle: u64) {
        if v > self.max || self.count == 0 {
            self.max = v;
            self.max_cycle = cycle;
        }
        self.add_n(v, 1);
    }

    /// Counts `n` samples of value `v` (the cycle of the max is not tracked).
    #[inline]
    pub fn add_n(&mut self, v: u64, n: u64) {
        if n == 0 {
            return;
        }
        match self.dense.get_mut(v as usize) {
            Some(c) => *c = c.saturating_add(n),
            None => self.add_slow(v, n),
        }
        self.count = self.count.saturating_add(n);
        self.sum = self.sum.saturating_add(u128::from(v) * u128::from(n));
        self.min = self.min.min(v);
        self.max = self.max.max(v);
    }

    /// `v` is at or above `dense.len()`: grows the dense array to hold it when the input so far
    /// is large enough for the size, else counts it in the map.
    #[cold]
    fn add_slow(&mut self, v: u64, n: u64) {
        let len = (v.min(DENSE_LIMIT) + 1).next_power_of_two().max(DENSE_MIN);
        self.slow_adds += 1;
        let allowed = DENSE_MIN.max(self.slow_adds.saturating_mul(DENSE_PER_SLOW_ADD));
        if v < DENSE_LIMIT && len <= allowed {
            self.dense.resize(len as usize, 0);
            // Keep every value below the dense array's end in it (`values` relies on this).
            let above = self.sparse.split_off(&len);
            for (k, c) in std::mem::replace(&mut self.sparse, above) {
                self.dense[k as usize] = self.dense[k as usize].saturating_add(c);
            }
            self.dense[v as usize] = self.dense[v as usize].saturating_add(n);
        } else {
            let c = self.sparse.entry(v).or_insert(0);
            *c = c.saturating_add(n);
        }
    }

    /// Refuses a tally too large to be real (and too large to sum without overflow).
    pub fn plausible(&self, at: impl FnOnce() -> Bad) -> Result<(), Bad> {
        if self.count > MAX_COUNT {
            let mut b = at();
            b.what = format!("{} ({} samples is not plausible)", b.what, self.count);
            return Err(b);
        }
        Ok(())
    }

    /// `(value, count)` of every value counted, ascending.
    pub fn values(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.dense
            .iter()
            .enumerate()
            .filter(|(_, &c)| c > 0)
            .map(|(v, &c)| (v as u64, c))
            .chain(self.sparse.iter().map(|(&v, &c)| (v, c)))
    }

    /// The exact mean, in ns, for values in units of `unit_ns`.
    pub fn mean_ns(&self, unit_ns: u64) -> Option<f64> {
        (self.count > 0).then(|| self.sum as f64 * unit_ns as f64 / self.count as f64)
    }

    /// The lossless histogram of the values, each recorded as `value × unit_ns` ns.
    pub fn histogram(&self, unit_ns: u64) -> Histogram {
        if self.count == 0 {
            return Histogram::new();
        }
        let pairs = self
            .values()
            .map(|(v, c)| (layout::index_of(v.saturating_mul(unit_ns)), c));
        Histogram::from_sparse(
            pairs,
            Nanos(self.min.saturating_mul(unit_ns)),
            Nanos(self.max.saturating_mul(unit_ns)),
        )
    }
}

impl Default for Counter {
    fn default() -> Self {
        Counter::new()
    }
}

/// Parses an unsigned decimal number made only of ASCII digits (no sign, no spaces).
pub fn parse_u64(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// The `"thread"` object of rt-tests' JSON (cyclictest's and oslat's): its entries keyed by
/// thread number (below 4096), in the order of their numbers.
pub fn numbered_threads(obj: &Map<String, Value>) -> Result<Vec<(u32, &str, &Value)>, Bad> {
    let threads = obj
        .get("thread")
        .and_then(Value::as_object)
        .ok_or_else(|| Bad::field("thread", "missing, or not an object"))?;
    let mut keyed = Vec::new();
    for (k, v) in threads {
        let i = parse_u64(k).filter(|&i| i < 4096).ok_or_else(|| {
            Bad::field(format!("thread.\"{k}\""), "the key is not a thread number")
        })?;
        keyed.push((i as u32, k.as_str(), v));
    }
    keyed.sort_by_key(|(i, _, _)| *i);
    Ok(keyed)
}

/// A whole-number field `name` of the JSON object `v`, or an error naming it by `path(name)`.
pub fn whole_field(v: &Value, name: &str, path: impl Fn(&str) -> String) -> Result<u64, Bad> {
    v.get(name)
        .and_then(Value::as_u64)
        .ok_or_else(|| Bad::field(path(name), "missing, or not a whole number"))
}

/// The `histogram` object of `v` (bucket number → whole count) counted, plausible, or an
/// error naming the field by `path`.
pub fn histogram_field(v: &Value, path: impl Fn(&str) -> String) -> Result<Counter, Bad> {
    let hist = v
        .get("histogram")
        .and_then(Value::as_object)
        .ok_or_else(|| Bad::field(path("histogram"), "missing, or not an object"))?;
    let mut c = Counter::new();
    for (b, n) in hist {
        let at = || path(&format!("histogram.\"{b}\""));
        let bucket =
            parse_u64(b).ok_or_else(|| Bad::field(at(), "the key is not a bucket number"))?;
        let n = n
            .as_u64()
            .ok_or_else(|| Bad::field(at(), "the count is not a whole number"))?;
        c.add_n(bucket, n);
    }
    c.plausible(|| Bad::field(path("histogram"), "the counts"))?;
    Ok(c)
}

/// `text` cut to `max` characters for an error message, with `…` when cut.
pub fn excerpt(text: &str, max: usize) -> String {
    let t = text.trim_end_matches(['\r', '\n']);
    match t.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &t[..i]),
        None => t.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_counter_keeps_exact_statistics_and_a_lossless_histogram() {
        let mut c = Counter::new();
        for (v, cycle) in [(13, 0), (13, 1), (4139, 2), (8, 3), (2_000_000, 4)] {
            c.add(v, cycle);
        }
        c.add_n(20, 3);
        assert_eq!((c.count, c.min, c.max, c.max_cycle), (8, 8, 2_000_000, 4));
        assert_eq!(c.sum, 13 + 13 + 4139 + 8 + 2_000_000 + 60);
        let h = c.histogram(1000);
        assert_eq!(h.count(), 8);
        assert_eq!(h.min(), Some(Nanos::from_us(8)));
        assert_eq!(h.max(), Some(Nanos::from_us(2_000_000)));
        assert_eq!(h.count_at_or_above(Nanos::from_us(4000)), 2);
        assert_eq!(c.mean_ns(1000), Some(c.sum as f64 * 1000.0 / 8.0));
    }

    #[test]
    fn the_dense_array_grows_with_the_input_not_with_the_values() {
        // Found with the fuzz targets (import_cyclictest_verbose and _hist ran out of memory): one
        // sample of 1048575 per thread made an 8 MiB array each, gigabytes from a few kB of input.
        let mut c = Counter::new();
        c.add(1_048_575, 0);
        c.add(1_000_000, 1);
        c.add(5, 2);
        c.add(u64::MAX, 3);
        assert_eq!(c.dense.len(), 1024);
        assert_eq!(
            c.values().collect::<Vec<_>>(),
            vec![(5, 1), (1_000_000, 1), (1_048_575, 1), (u64::MAX, 1)]
        );
        // With enough such samples the array grows, and takes the values below its end along.
        let mut d = c.clone();
        for k in 0..70_000 {
            d.add(1_000_000 + k % 3, k);
        }
        assert_eq!(d.dense.len(), 1 << 20);
        assert_eq!(
            d.sparse.keys().collect::<Vec<_>>(),
            [&u64::MAX],
            "1048575 moved into the array"
        );
        let v: Vec<_> = d.values().collect();
        assert!(
            v.windows(2).all(|w| w[0].0 < w[1].0),
            "ascending, no duplicates"
        );
        assert_eq!(v.iter().map(|&(_, n)| n).sum::<u64>(), d.count);
        assert!(v.contains(&(1_000_000, 1 + 23_334)));
    }

    #[test]
    fn an_empty_counter_has_no_statistics() {
        let c = Counter::new();
        assert_eq!(c.mean_ns(1000), None);
        assert_eq!(c.histogram(1000).count(), 0);
    }

    #[test]
    fn failures_say_where() {
        assert_eq!(Bad::line(3, "bad").to_string(), "line 3: bad");
        assert_eq!(
            Bad::field("thread.0", "bad").to_string(),
            "field thread.0: bad"
        );
        assert_eq!(Bad::file("bad").to_string(), "bad");
        assert_eq!(excerpt("abcdef\n", 3), "abc…");
        assert_eq!(parse_u64("0012"), Some(12));
        assert_eq!(parse_u64("1x"), None);
        assert_eq!(parse_u64("-1"), None);
    }
}
