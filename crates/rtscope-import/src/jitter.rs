//! A jitterdebugger output directory (`jitterdebugger -o DIR [-s]`): `results.json` (`version`,
//! `sysinfo` with `resolution_in_ns`, and per thread `histogram` (below 1 ms only), `count`,
//! `min`, `max`, `avg`) and, with `-s`, `samples.raw`: packed 28-byte little-endian records
//! (u32 thread, i64 s, i64 ns of CLOCK_MONOTONIC wake-up time, u64 latency in units of
//! `resolution_in_ns`), in per-thread chunks, not in time order.
//!
//! When `samples.raw` holds every sample of a thread, its histogram and statistics come from the
//! samples (lossless, no 1 ms cap); otherwise from `results.json`, where samples of 1 ms and more
//! are overflows kept as a count. With samples the run gets a per-second time series and an
//! interval inferred from the wake-up times.

use super::model::{histogram_field, parse_u64, whole_field, Bad, Counter, Imported, ThreadRow};
use super::rtjson::json_error;
use super::series::Series;
use serde_json::{json, Map, Value};
use std::io::Read;
use std::path::{Path, PathBuf};

/// Size of one `samples.raw` record, bytes.
pub const RECORD: usize = 28;

/// One thread of `results.json`.
struct JdThread {
    key: String,
    count: u64,
    min: u64,
    max: u64,
    avg: f64,
    hist: Counter,
}

/// What one pass over `samples.raw` found.
pub struct Raw {
    /// Per thread: the latencies (in the file's unit).
    pub counters: Vec<Counter>,
    /// Per thread: the series and the inferred interval.
    pub series: Vec<Series>,
    /// Earliest and latest wake-up time, ns on CLOCK_MONOTONIC.
    pub span: Option<(i64, i64)>,
    /// Records read.
    pub records: u64,
}

/// The files of a jitterdebugger run: `(results.json, samples.raw if it belongs to it, the
/// directory)`. `path` is the output directory, or a results.json file (its samples.raw is the
/// one beside it when the file is called results.json).
pub fn files_of(path: &Path) -> (PathBuf, Option<PathBuf>, PathBuf) {
    if path.is_dir() {
        let d = path.to_path_buf();
        return (d.join("results.json"), Some(d.join("samples.raw")), d);
    }
    let d = path
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    let beside = path.file_name().is_some_and(|n| n == "results.json");
    (path.to_path_buf(), beside.then(|| d.join("samples.raw")), d)
}

/// Parses the run at `path` (see [`files_of`]). Failures name the file inside the directory.
pub fn parse(path: &Path) -> Result<Imported, (PathBuf, Bad)> {
    let (results, raw_path, dir) = files_of(path);
    let text = std::fs::read(&results)
        .map_err(|e| (results.clone(), Bad::file(format!("cannot read: {e}"))))?;
    let res = Results::parse(&text).map_err(|b| (results.clone(), b))?;
    let raw = match raw_path.map(|p| (std::fs::File::open(&p), p)) {
        None => None,
        Some((Ok(f), p)) => Some(res.read_raw(f).map_err(|b| (p, b))?),
        Some((Err(e), _)) if e.kind() == std::io::ErrorKind::NotFound => None,
        Some((Err(e), p)) => return Err((p, Bad::file(format!("cannot read: {e}")))),
    };
    let mut out = res.build(raw.as_ref());
    out.environment.extend(dir_environment(&dir));
    Ok(out)
}

/// A parsed `results.json`: the document, its threads and its unit (ns).
pub struct Results {
    doc: Value,
    threads: Vec<JdThread>,
    unit: u64,
}

impl Results {
    /// Parses the bytes of `results.json`.
    pub fn parse(bytes: &[u8]) -> Result<Results, Bad> {
        let text = std::str::from_utf8(bytes).map_err(|e| {
            Bad::file(format!(
                "not text (invalid UTF-8 at byte {})",
                e.valid_up_to()
            ))
        })?;
        let doc: Value = serde_json::from_str(text).map_err(|e| json_error(&e))?;
        let (threads, unit) = results_json(&doc)?;
        Ok(Results { doc, threads, unit })
    }

    /// Reads a `samples.raw` for these threads and this unit.
    pub fn read_raw(&self, f: impl Read) -> Result<Raw, Bad> {
        read_raw(f, self.threads.len(), self.unit)
    }

    /// The run, from `results.json` and, when there is one, `samples.raw` (without the facts
    /// only the directory has: see [`dir_environment`]).
    pub fn build(&self, raw: Option<&Raw>) -> Imported {
        let mut out = Imported::default();
        build(&self.threads, self.unit, raw, &mut out);
        out.environment = environment(&self.doc);
        out.source = source(&self.doc, &self.threads, raw, &out);
        out
    }
}

fn results_json(doc: &Value) -> Result<(Vec<JdThread>, u64), Bad> {
    let unit = doc
        .pointer("/sysinfo/resolution_in_ns")
        .and_then(Value::as_u64)
        .filter(|&u| u > 0)
        .unwrap_or(1000);
    let cpus = doc.get("cpu").and_then(Value::as_object).ok_or_else(|| {
        Bad::field(
            "cpu",
            "missing, or not an object: this is not jitterdebugger's results.json",
        )
    })?;
    let mut keyed = Vec::new();
    for (k, v) in cpus {
        let i = parse_u64(k)
            .ok_or_else(|| Bad::field(format!("cpu.\"{k}\""), "the key is not a thread number"))?;
        keyed.push((i, k, v));
    }
    keyed.sort_by_key(|(i, _, _)| *i);
    let mut threads = Vec::new();
    for (n, (i, k, v)) in keyed.into_iter().enumerate() {
        if i != n as u64 {
            return Err(Bad::field(
                format!("cpu.\"{k}\""),
                format!("expected thread {n} (threads are numbered from 0)"),
            ));
        }
        threads.push(jd_thread(k, v)?);
    }
    if threads.is_empty() {
        return Err(Bad::field("cpu", "no threads"));
    }
    Ok((threads, unit))
}

fn jd_thread(k: &str, v: &Value) -> Result<JdThread, Bad> {
    let f = |name: &str| format!("cpu.\"{k}\".{name}");
    let int = |name: &str| whole_field(v, name, f);
    let c = histogram_field(v, f)?;
    let count = int("count")?;
    if c.count > count {
        return Err(Bad::field(
            f("histogram"),
            format!("holds {} samples, more than count ({count})", c.count),
        ));
    }
    let avg = match v.get("avg") {
        Some(a) if a.is_number() => a.as_f64().unwrap_or(0.0),
        _ if count == 0 => 0.0,
        _ => return Err(Bad::field(f("avg"), "missing, or not a number")),
    };
    Ok(JdThread {
        key: k.to_string(),
        count,
        min: if count > 0 { int("min")? } else { 0 },
        max: if count > 0 { int("max")? } else { 0 },
        avg,
        hist: c,
    })
}

/// Reads `samples.raw`; `threads` bounds the thread field.
pub fn read_raw(mut f: impl Read, threads: usize, unit: u64) -> Result<Raw, Bad> {
    let mut raw = Raw {
        counters: vec![Counter::new(); threads],
        series: (0..threads).map(|_| Series::new(unit)).collect(),
        span: None,
        records: 0,
    };
    let mut records = Vec::new();
    // Up to 65536 records at a time; the buffer starts at 1024 and doubles while reads fill it.
    let mut buf = vec![0u8; RECORD * 1024];
    let mut filled = 0;
    let mut bytes = 0u64;
    loop {
        let n = f
            .read(&mut buf[filled..])
            .map_err(|e| Bad::file(format!("cannot read: {e}")))?;
        bytes += n as u64;
        filled += n;
        let full = filled == buf.len();
        let whole = filled / RECORD * RECORD;
        for rec in buf[..whole].chunks_exact(RECORD) {
            records.push(decode(rec, raw.records, threads)?);
            raw.records += 1;
        }
        raw.add(&records);
        records.clear();
        buf.copy_within(whole..filled, 0);
        filled -= whole;
        if n == 0 {
            break;
        }
        if full && buf.len() < RECORD * 65536 {
            buf.resize(buf.len() * 2, 0);
        }
    }
    if filled != 0 {
        return Err(Bad::file(format!(
            "{bytes} bytes is not a whole number of {RECORD}-byte records ({} records and {filled} bytes left over): the file is truncated",
            raw.records
        )));
    }
    Ok(raw)
}

/// One record: (thread, wake-up time ns, latency).
fn decode(rec: &[u8], index: u64, threads: usize) -> Result<(usize, i64, u64), Bad> {
    let at = |what: String| Bad {
        at: Some(format!(
            "record {} (byte {})",
            index + 1,
            index * RECORD as u64
        )),
        what,
    };
    let u32_at = |o: usize| u32::from_le_bytes([rec[o], rec[o + 1], rec[o + 2], rec[o + 3]]);
    let u64_at = |o: usize| u64::from_le_bytes(std::array::from_fn(|k| rec[o + k]));
    let thread = u32_at(0) as usize;
    let (sec, nsec, lat) = (u64_at(4) as i64, u64_at(12) as i64, u64_at(20));
    if thread >= threads {
        return Err(at(format!(
            "thread {thread}, but results.json has {threads} threads"
        )));
    }
    if !(0..1_000_000_000).contains(&nsec) || !(0..1 << 33).contains(&sec) {
        return Err(at(format!(
            "time {sec} s {nsec} ns is not a valid timestamp"
        )));
    }
    Ok((thread, sec * 1_000_000_000 + nsec, lat))
}

impl Raw {
    fn add(&mut self, records: &[(usize, i64, u64)]) {
        for &(t, ts, lat) in records {
            let c = &mut self.counters[t];
            c.add(lat, c.count);
            self.series[t].add(ts, lat);
            self.span = Some(match self.span {
                None => (ts, ts),
                Some((a, b)) => (a.min(ts), b.max(ts)),
            });
        }
    }
}

fn build(threads: &[JdThread], unit: u64, raw: Option<&Raw>, out: &mut Imported) {
    let t0 = raw.and_then(|r| r.span).map_or(0, |s| s.0);
    let mut incomplete = Vec::new();
    for (i, jd) in threads.iter().enumerate() {
        let mut d = ThreadRow::new(i as u32);
        d.policy = "fifo".into();
        d.figures.samples = jd.count;
        let full = raw
            .map(|r| &r.counters[i])
            .filter(|c| c.count == jd.count && c.count > 0);
        if let Some(c) = full {
            d.figures.min_ns = Some(c.min.saturating_mul(unit));
            d.figures.max_ns = Some(c.max.saturating_mul(unit));
            d.figures.mean_ns = c.mean_ns(unit);
            d.figures.max_cycle = Some(c.max_cycle);
            d.histogram = c.histogram(unit);
        } else if jd.count > 0 {
            if let Some(r) = raw {
                incomplete.push(format!(
                    "thread {i}: {} of {}",
                    r.counters[i].count, jd.count
                ));
            }
            d.figures.min_ns = Some(jd.min.saturating_mul(unit));
            d.figures.max_ns = Some(jd.max.saturating_mul(unit));
            d.figures.mean_ns = if jd.hist.count == jd.count {
                jd.hist.mean_ns(unit)
            } else {
                Some(jd.avg * unit as f64)
            };
            d.histogram = jd.hist.histogram(unit);
        }
        if let Some(r) = raw {
            d.interval_ns = r.series[i].interval_ns();
            d.figures.max_offset_ns = full
                .and(r.series[i].max_at())
                .map(|ts| (ts - t0).max(0) as u64);
            out.series.extend(r.series[i].points(i as u32, t0));
        }
        out.threads.push(d);
    }
    // The span of the samples is the time measured only when every sample is there.
    if let (Some((a, b)), true) = (raw.and_then(|r| r.span), incomplete.is_empty()) {
        out.progress_ns = (b - a).max(0) as u64;
    }
    notes(threads, raw, incomplete, out);
}

fn notes(threads: &[JdThread], raw: Option<&Raw>, incomplete: Vec<String>, out: &mut Imported) {
    if raw.is_none() {
        let over: u64 = threads.iter().map(|t| t.count - t.hist.count).sum();
        out.notes.push(format!(
            "no samples.raw (run without -s): histogram from results.json, where samples of 1 ms and more ({over}) are a count only; no time series"
        ));
    } else if !incomplete.is_empty() {
        out.notes.push(format!(
            "samples.raw does not hold every sample results.json counts ({}): statistics and histogram come from results.json (samples of 1 ms and more are a count only); the time series covers only the samples present",
            incomplete.join(", ")
        ));
    }
}

fn environment(doc: &Value) -> Vec<(String, String)> {
    let mut env = Vec::new();
    for k in ["sysname", "nodename", "release", "version", "machine"] {
        if let Some(v) = doc
            .pointer(&format!("/sysinfo/{k}"))
            .and_then(Value::as_str)
        {
            env.push((format!("uname.{k}"), v.to_string()));
        }
    }
    if let Some(n) = doc.pointer("/sysinfo/cpus_online").and_then(Value::as_u64) {
        env.push(("cpu.count".into(), n.to_string()));
    }
    env
}

/// The environment facts of the files beside results.json (`cmdline`, `cpuinfo`).
fn dir_environment(dir: &Path) -> Vec<(String, String)> {
    let mut env = Vec::new();
    let read = |name: &str| {
        std::fs::read_to_string(dir.join(name))
            .ok()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
    };
    if let Some(c) = read("cmdline") {
        env.push(("kernel.cmdline".into(), c));
    }
    let model = read("cpuinfo").and_then(|c| {
        c.lines().find_map(|l| {
            l.split_once(':')
                .filter(|(k, _)| k.trim() == "model name")
                .map(|(_, v)| v.trim().to_string())
        })
    });
    if let Some(m) = model {
        env.push(("cpu.model".into(), m));
    }
    env
}

fn source(
    doc: &Value,
    threads: &[JdThread],
    raw: Option<&Raw>,
    out: &Imported,
) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert(
        "results_version".into(),
        doc.get("version").cloned().unwrap_or(Value::Null),
    );
    let unit = doc
        .pointer("/sysinfo/resolution_in_ns")
        .and_then(Value::as_u64);
    m.insert(
        "unit".into(),
        json!(if unit == Some(1) { "ns" } else { "us" }),
    );
    let over: Vec<u64> = threads.iter().map(|t| t.count - t.hist.count).collect();
    m.insert("overflows_in_results_json".into(), json!(over));
    m.insert(
        "avg".into(),
        json!(threads.iter().map(|t| t.avg).collect::<Vec<_>>()),
    );
    m.insert(
        "threads".into(),
        json!(threads.iter().map(|t| t.key.as_str()).collect::<Vec<_>>()),
    );
    m.insert("samples_raw_records".into(), json!(raw.map(|r| r.records)));
    if raw.is_some() {
        let iv: Vec<u64> = out.threads.iter().map(|t| t.interval_ns / 1000).collect();
        m.insert("interval_us".into(), json!(iv));
        m.insert("interval_inferred".into(), json!(true));
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(t: u32, ns: i64, lat: u64) -> Vec<u8> {
        let mut v = t.to_le_bytes().to_vec();
        v.extend((ns / 1_000_000_000).to_le_bytes());
        v.extend((ns % 1_000_000_000).to_le_bytes());
        v.extend(lat.to_le_bytes());
        v
    }

    fn dir(name: &str, results: &str, raw: Option<&[u8]>) -> PathBuf {
        let d = std::env::temp_dir().join(format!("rtscope-jd-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("results.json"), results).unwrap();
        if let Some(r) = raw {
            std::fs::write(d.join("samples.raw"), r).unwrap();
        }
        d
    }

    const RESULTS: &str = r#"{"version": 3, "sysinfo": {"release": "6.18", "cpus_online": 1, "resolution_in_ns": 1000},
        "cpu": {"0": {"histogram": {"20": 2, "30": 1}, "count": 4, "min": 20, "max": 1500, "avg": 392.5}}}"#;

    #[test]
    fn complete_samples_give_a_lossless_histogram_a_series_and_the_interval() {
        let mut raw = Vec::new();
        for (k, lat) in [20u64, 30, 1500, 20].iter().enumerate() {
            let ts = 5_000_000_000 + k as i64 * 700_000_000 + *lat as i64 * 1000;
            raw.extend(record(0, ts, *lat));
        }
        let r = parse(&dir("full", RESULTS, Some(&raw))).unwrap();
        let t = &r.threads[0];
        assert_eq!(
            (t.figures.samples, t.histogram.count(), t.figures.max_ns),
            (4, 4, Some(1_500_000))
        );
        assert_eq!(t.figures.mean_ns, Some(392_500.0));
        assert_eq!(t.interval_ns, 700_000_000);
        assert_eq!(t.figures.max_cycle, Some(2));
        assert_eq!(r.series.len(), 3, "{:?}", r.series);
        assert_eq!(r.series.iter().map(|p| p.samples).sum::<u64>(), 4);
    }

    #[test]
    fn without_samples_the_results_json_histogram_keeps_overflows_as_a_count() {
        let r = parse(&dir("nosamples", RESULTS, None)).unwrap();
        let t = &r.threads[0];
        assert_eq!((t.figures.samples, t.histogram.count()), (4, 3));
        assert_eq!(t.figures.mean_ns, Some(392_500.0));
        assert!(r.series.is_empty());
        assert_eq!(r.environment[0], ("uname.release".into(), "6.18".into()));
    }

    #[test]
    fn broken_directories_name_the_file_and_place() {
        let raw = record(0, 1, 20);
        let (p, e) = parse(&dir("short", RESULTS, Some(&raw[..27]))).unwrap_err();
        assert!(
            p.ends_with("samples.raw") && e.to_string().contains("27 bytes"),
            "{e}"
        );
        let (p, e) = parse(&dir("thread", RESULTS, Some(&record(3, 1, 20)))).unwrap_err();
        assert!(
            p.ends_with("samples.raw") && e.to_string().contains("record 1"),
            "{e}"
        );
        let (p, e) = parse(&dir("json", &RESULTS[..40], None)).unwrap_err();
        assert!(
            p.ends_with("results.json") && e.to_string().contains("line 1"),
            "{e}"
        );
        let (_, e) = parse(&dir(
            "count",
            &RESULTS.replace("\"count\": 4", "\"count\": 2"),
            None,
        ))
        .unwrap_err();
        assert!(e.to_string().contains("field cpu.\"0\".histogram"), "{e}");
        let (p, e) = parse(&std::env::temp_dir().join("rtscope-no-such-dir")).unwrap_err();
        assert!(p.ends_with("rtscope-no-such-dir") && e.what.starts_with("cannot read"));
        let d = dir("dir-only", RESULTS, None);
        std::fs::remove_file(d.join("results.json")).unwrap();
        let (p, _) = parse(&d).unwrap_err();
        assert!(p.ends_with("results.json"));
    }
}
