//! oslat `--json` output (rt-tests 2.x), imported as a run of kind `noise`.
//!
//! oslat shares cyclictest's envelope (`"cmdline:"`, `"rt_test_version:"`, `start_time`,
//! `end_time`, `sysinfo`) and writes per thread `cpu`, `freq` (MHz), `min`, `avg`, `max` (µs),
//! `duration` (s) and `histogram`: `bucket_size` (`-b`, default 32) buckets keyed by their upper
//! bound in µs (`bias + (i + 1) × width`). oslat rounds every busy-loop gap up to a whole µs, so
//! bucket `k` holds the gaps in (k − width, k] µs; its last bucket also holds every gap above
//! it. Buckets are recorded at their key (the rounded-up value oslat prints); the last bucket is
//! kept out of the histogram as overflows with only a lower bound, as cyclictest's are.

use super::model::{numbered_threads, parse_u64, Bad, Counter, Imported, ThreadRow};
use super::rtjson::{envelope, is_oslat};
use rtscope_store::RunKind;
use serde_json::{json, Map, Value};

/// oslat's default number of buckets (`-b`).
const DEFAULT_BUCKETS: u64 = 32;

/// Parses oslat JSON text.
pub fn parse(text: &str) -> Result<Imported, Bad> {
    let doc: Value = serde_json::from_str(text).map_err(|e| super::rtjson::json_error(&e))?;
    let obj = doc
        .as_object()
        .ok_or_else(|| Bad::file("the JSON document is not an object"))?;
    let cmdline = obj.get("cmdline:").and_then(Value::as_str);
    if !cmdline.is_some_and(is_oslat) {
        return Err(Bad::field(
            "\"cmdline:\"",
            "missing, or not an oslat command line: this is not oslat output",
        ));
    }
    let buckets = cmdline.map_or(DEFAULT_BUCKETS, bucket_size);
    let keyed = numbered_threads(obj)?;
    let mut out = Imported {
        kind: Some(RunKind::Noise),
        ..Imported::default()
    };
    let mut per = Vec::new();
    for (i, key, v) in keyed {
        let (row, facts) = thread(i, key, v, buckets)?;
        out.threads.push(row);
        per.push(facts);
    }
    if out.threads.is_empty() {
        return Err(Bad::field("thread", "no threads"));
    }
    times(obj, &mut out, &per);
    out.environment = super::rtjson::environment(obj);
    out.source = source(obj, &per);
    notes(&mut out, &per);
    Ok(out)
}

/// `-b N` / `--bucket-size N` / `--bucket-size=N` of a recorded command line, else 32.
fn bucket_size(cmdline: &str) -> u64 {
    let words: Vec<&str> = cmdline.split_whitespace().collect();
    let mut found = None;
    for (i, w) in words.iter().enumerate() {
        let v = match *w {
            "-b" | "--bucket-size" => words.get(i + 1).copied(),
            _ => w
                .strip_prefix("--bucket-size=")
                .or_else(|| w.strip_prefix("-b").filter(|r| !r.is_empty())),
        };
        if let Some(n) = v.and_then(parse_u64) {
            found = Some(n);
        }
    }
    found.unwrap_or(DEFAULT_BUCKETS)
}

/// What one thread's histogram says beyond its row.
struct Facts {
    /// Bucket width, µs (the spacing of the keys; 1 when there is one key).
    width: u64,
    /// Count of the last bucket (every gap at or above its lower bound), if it is the last one.
    overflows: u64,
    /// The last bucket's key, µs.
    last_key: Option<u64>,
    /// The counter frequency oslat calibrated, MHz.
    freq: Value,
    /// The thread's measured time (`duration`), ns.
    duration_ns: Option<u64>,
}

fn thread(i: u32, key: &str, v: &Value, buckets: u64) -> Result<(ThreadRow, Facts), Bad> {
    let f = |name: &str| format!("thread.\"{key}\".{name}");
    let pairs = read_buckets(v, &f)?;
    let width = pairs
        .windows(2)
        .map(|w| w[1].0 - w[0].0)
        .min()
        .unwrap_or(1)
        .max(1);
    // The last bucket holds everything above it: it is an overflow when the file has all the
    // buckets (or when -z left out some empty ones, the key of the last is `bucket_size × width`
    // plus a bias, so at least that).
    let last_key = pairs.last().map(|p| p.0);
    let is_last = pairs.len() as u64 >= buckets
        || last_key.is_some_and(|k| k >= buckets.saturating_mul(width));
    let mut c = Counter::new();
    let mut overflows = 0u64;
    for (idx, &(k, n)) in pairs.iter().enumerate() {
        if is_last && idx + 1 == pairs.len() {
            overflows = n;
        } else {
            c.add_n(k, n);
        }
    }
    c.plausible(|| Bad::field(f("histogram"), "the counts"))?;
    let samples = c
        .count
        .checked_add(overflows)
        .filter(|&s| s <= super::model::MAX_COUNT)
        .ok_or_else(|| Bad::field(f("histogram"), "the counts are not plausible"))?;
    let mut d = ThreadRow::new(i);
    d.figures.samples = samples;
    if samples > 0 {
        let int = |name: &str| {
            v.get(name)
                .and_then(Value::as_u64)
                .ok_or_else(|| Bad::field(f(name), "missing, or not a whole number of µs"))
        };
        let (min, max) = (int("min")?, int("max")?);
        // Bucket `k` holds the rounded-up gaps k − width + 1 ..= k µs (oslat: floor(gap) + 1).
        let top = if overflows > 0 { last_key } else { Some(c.max) };
        let top = top.map(|t| t.saturating_sub(width - 1));
        if (c.count > 0 && min > c.min) || top.is_some_and(|t| max < t) {
            return Err(Bad::field(
                f("max"),
                format!("min {min} / max {max} µs do not cover the histogram"),
            ));
        }
        d.figures.min_ns = Some(min.saturating_mul(1000));
        d.figures.max_ns = Some(max.saturating_mul(1000));
        d.figures.mean_ns = match v.get("avg").and_then(Value::as_f64) {
            Some(a) if a.is_finite() && a >= 0.0 => Some(a * 1000.0),
            _ => return Err(Bad::field(f("avg"), "missing, or not a number")),
        };
    }
    d.histogram = c.histogram(1000);
    d.cpu = v
        .get("cpu")
        .and_then(Value::as_i64)
        .and_then(|c| u32::try_from(c).ok());
    let duration_ns = v
        .get("duration")
        .and_then(Value::as_f64)
        .filter(|s| s.is_finite() && *s >= 0.0)
        .map(|s| (s * 1e9).round().min(u64::MAX as f64) as u64);
    let facts = Facts {
        width,
        overflows,
        last_key: last_key.filter(|_| is_last),
        freq: v.get("freq").cloned().unwrap_or(Value::Null),
        duration_ns,
    };
    Ok((d, facts))
}

/// The `histogram` of one thread as (key µs, count), ascending.
fn read_buckets(v: &Value, f: &dyn Fn(&str) -> String) -> Result<Vec<(u64, u64)>, Bad> {
    let hist = v
        .get("histogram")
        .and_then(Value::as_object)
        .ok_or_else(|| Bad::field(f("histogram"), "missing, or not an object"))?;
    let mut pairs = Vec::with_capacity(hist.len());
    for (b, n) in hist {
        let at = || f(&format!("histogram.\"{b}\""));
        let k =
            parse_u64(b).ok_or_else(|| Bad::field(at(), "the key is not a whole number of µs"))?;
        let n = n
            .as_u64()
            .ok_or_else(|| Bad::field(at(), "the count is not a whole number"))?;
        pairs.push((k, n));
    }
    pairs.sort();
    Ok(pairs)
}

/// Start and end from `start_time`/`end_time` (whole seconds); the time measured is the longest
/// thread `duration` (oslat's own measure, ms resolution), else end minus start.
fn times(obj: &Map<String, Value>, out: &mut Imported, per: &[Facts]) {
    super::rtjson::times(obj, out);
    if let Some(ns) = per.iter().filter_map(|f| f.duration_ns).max() {
        out.progress_ns = ns;
    }
}

fn source(obj: &Map<String, Value>, per: &[Facts]) -> Map<String, Value> {
    let mut m = envelope(obj);
    m.insert("tool".into(), json!("oslat"));
    m.insert("unit".into(), json!("us"));
    let col = |f: &dyn Fn(&Facts) -> Value| Value::Array(per.iter().map(f).collect());
    m.insert("bucket_width_us".into(), col(&|f| json!(f.width)));
    m.insert("overflows".into(), col(&|f| json!(f.overflows)));
    m.insert("overflow_bucket_us".into(), col(&|f| json!(f.last_key)));
    m.insert("counter_freq_mhz".into(), col(&|f| f.freq.clone()));
    m.insert("duration_ns".into(), col(&|f| json!(f.duration_ns)));
    m
}

fn notes(out: &mut Imported, per: &[Facts]) {
    let width = per.iter().map(|f| f.width).max().unwrap_or(1);
    out.notes.push(format!(
        "oslat busy-loop gaps (imported as a noise run): oslat rounds each gap up to a whole µs and bins it in {width} µs buckets, recorded at each bucket's upper bound; min and max are oslat's, rounded up the same way (each within 1 µs above the true gap), the duration is oslat's; the mean is oslat's average (oslat 2.x adds the first thread's overflow excess, not each thread's own, to every thread's average)"
    ));
    let over: u64 = per.iter().map(|f| f.overflows).sum();
    if over > 0 {
        let floor = per.iter().filter_map(|f| f.last_key).min().unwrap_or(0);
        out.notes.push(format!(
            "{over} gaps are in oslat's last bucket ({floor} µs and above, up to the max): they count as samples but have no value, so they are histogram overflows with only a lower bound"
        ));
    }
}

#[cfg(test)]
mod tests;
