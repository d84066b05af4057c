//! cyclictest `--json` output: `"cmdline:"`, `"rt_test_version:"`, `start_time`, `end_time`,
//! `sysinfo`, `resolution_in_ns` (1 = values in ns, else µs) and per thread `histogram` (with
//! `-h`: non-empty buckets, overflows left out), `cycles`, `min`, `max` (exact), `avg` (2
//! decimals), `cpu`.
//!
//! cyclictest writes its command line unescaped and `nan` for the average of 0 cycles; a file
//! that is invalid JSON only for those reasons is repaired (and says so). The interval and
//! priority come from the recorded command line when it parses.

use super::model::{histogram_field, numbered_threads, whole_field, Bad, Imported, ThreadRow};
use super::rtjson::{envelope, environment, json_error, times};
use rtscope_ctopts::args::{self, CtOptions};
use serde_json::{json, Map, Value};

/// Parses cyclictest JSON text.
pub fn parse(text: &str) -> Result<Imported, Bad> {
    let (doc, repaired) = load(text)?;
    let obj = doc
        .as_object()
        .ok_or_else(|| Bad::file("the JSON document is not an object"))?;
    let cmdline = obj.get("cmdline:").and_then(Value::as_str);
    if cmdline.is_some_and(super::rtjson::is_oslat) {
        return Err(Bad::field(
            "\"cmdline:\"",
            "this is oslat output (a busy-loop noise measurement), not cyclictest's: import it with --format oslat, or let the format be detected",
        ));
    }
    let unit = match obj.get("resolution_in_ns").and_then(Value::as_u64) {
        Some(1) => 1,
        _ => 1000,
    };
    let opts = cmdline.and_then(options);
    let keyed = numbered_threads(obj)?;
    let mut out = Imported::default();
    let mut overflows = Vec::new();
    for (i, key, v) in keyed {
        let (d, over) = thread(i, key, v, unit, opts.as_ref())?;
        overflows.push(over);
        out.threads.push(d);
    }
    if out.threads.is_empty() {
        return Err(Bad::field("thread", "no threads"));
    }
    times(obj, &mut out);
    out.environment = environment(obj);
    out.source = source(obj, unit, &overflows, &out, opts.as_ref());
    notes(
        &mut out,
        &overflows,
        repaired,
        cmdline.is_some() && opts.is_none(),
    );
    Ok(out)
}

/// Parses the text, repairing cyclictest's known defects when it does not parse as it is.
fn load(text: &str) -> Result<(Value, Vec<&'static str>), Bad> {
    match serde_json::from_str::<Value>(text) {
        Ok(v) => Ok((v, Vec::new())),
        Err(e) => {
            if let Some((fixed, what)) = repair(text) {
                if let Ok(v) = serde_json::from_str::<Value>(&fixed) {
                    return Ok((v, what));
                }
            }
            Err(json_error(&e))
        }
    }
}

/// Escapes the quotes of an unescaped `"cmdline:"` value and turns `nan` averages into null.
fn repair(text: &str) -> Option<(String, Vec<&'static str>)> {
    let mut what = Vec::new();
    let mut out = String::with_capacity(text.len() + 16);
    for line in text.split_inclusive('\n') {
        if let Some(fixed) = fix_cmdline(line) {
            what.push("its unescaped command line");
            out.push_str(&fixed);
        } else if line.contains(": nan") || line.contains(": -nan") {
            what.push("a 'nan' average (a thread without cycles)");
            out.push_str(&line.replace(": -nan", ": null").replace(": nan", ": null"));
        } else {
            out.push_str(line);
        }
    }
    what.dedup();
    (!what.is_empty()).then_some((out, what))
}

fn fix_cmdline(line: &str) -> Option<String> {
    const KEY: &str = "\"cmdline:\": \"";
    let start = line.find(KEY)? + KEY.len();
    let end = line.rfind('"')?;
    let body = line.get(start..end)?;
    if !body.contains(['"', '\\']) {
        return None;
    }
    let escaped = body.replace('\\', "\\\\").replace('"', "\\\"");
    Some(format!("{}{escaped}{}", &line[..start], &line[end..]))
}

/// The cyclictest options of a recorded command line, when they parse.
fn options(cmdline: &str) -> Option<CtOptions> {
    let words: Vec<String> = cmdline.split_whitespace().map(String::from).collect();
    let start = words
        .iter()
        .position(|w| w.rsplit('/').next() == Some("cyclictest"))
        .map_or(1, |p| p + 1);
    args::parse(words.get(start..).unwrap_or_default()).ok()
}

/// Policy, priority and interval (ns) of thread `i` as cyclictest sets them up.
pub fn thread_setup(o: &CtOptions, i: usize) -> (String, i32, u64) {
    let distance = if o.histogram.is_some() {
        0
    } else {
        o.distance.unwrap_or(500)
    };
    let interval_us = o
        .interval
        .saturating_add((i as u64).saturating_mul(distance));
    let base = o.priority.unwrap_or(0);
    let prio = if o.priospread && base > 1 {
        (base - i as i32).max(1)
    } else {
        base
    };
    let policy = match o.policy.as_deref() {
        Some(p) if prio == 0 || p == "fifo" || p == "rr" => p.to_string(),
        _ if prio > 0 => "fifo".into(),
        _ => "other".into(),
    };
    (policy, prio, interval_us.saturating_mul(1000))
}

fn thread(
    i: u32,
    key: &str,
    v: &Value,
    unit: u64,
    opts: Option<&CtOptions>,
) -> Result<(ThreadRow, Option<u64>), Bad> {
    let f = |name: &str| format!("thread.\"{key}\".{name}");
    let int = |name: &str| whole_field(v, name, f);
    let cycles = int("cycles")?;
    let c = histogram_field(v, f)?;
    if c.count > cycles {
        return Err(Bad::field(
            f("histogram"),
            format!(
                "holds {} samples, more than the thread's {cycles} cycles",
                c.count
            ),
        ));
    }
    let has_hist = c.count > 0 || opts.is_some_and(|o| o.histogram.is_some());
    let overflows = has_hist.then_some(cycles - c.count);
    let mut d = ThreadRow::new(i);
    d.figures.samples = cycles;
    if cycles > 0 {
        let (min, max) = (int("min")?, int("max")?);
        if c.count > 0 && (min > c.min || max < c.max) {
            return Err(Bad::field(
                f("max"),
                format!(
                    "min {min} / max {max} do not cover the histogram's {} to {}",
                    c.min, c.max
                ),
            ));
        }
        d.figures.min_ns = Some(min.saturating_mul(unit));
        d.figures.max_ns = Some(max.saturating_mul(unit));
        d.figures.mean_ns = match v.get("avg") {
            _ if overflows == Some(0) => c.mean_ns(unit),
            Some(a) if a.is_number() => a.as_f64().map(|a| a * unit as f64),
            _ => return Err(Bad::field(f("avg"), "missing, or not a number")),
        };
    }
    d.histogram = c.histogram(unit);
    d.cpu = v
        .get("cpu")
        .and_then(Value::as_i64)
        .and_then(|c| u32::try_from(c).ok());
    if let Some(o) = opts {
        (d.policy, d.priority, d.interval_ns) = thread_setup(o, i as usize);
    }
    Ok((d, overflows))
}

fn source(
    obj: &Map<String, Value>,
    unit: u64,
    overflows: &[Option<u64>],
    out: &Imported,
    opts: Option<&CtOptions>,
) -> Map<String, Value> {
    let mut m = envelope(obj);
    m.insert("unit".into(), json!(if unit == 1 { "ns" } else { "us" }));
    m.insert("overflows".into(), json!(overflows));
    if let Some(o) = opts {
        let per =
            |f: &dyn Fn(&ThreadRow) -> Value| Value::Array(out.threads.iter().map(f).collect());
        m.insert("interval_us".into(), per(&|t| json!(t.interval_ns / 1000)));
        m.insert("priority".into(), per(&|t| json!(t.priority)));
        m.insert("histogram_size".into(), json!(o.histogram));
    }
    m
}

fn notes(out: &mut Imported, overflows: &[Option<u64>], repaired: Vec<&str>, bad_cmdline: bool) {
    if !repaired.is_empty() {
        out.notes.push(format!(
            "the file is not valid JSON because of {}; repaired while reading",
            repaired.join(" and ")
        ));
    }
    let over: u64 = overflows.iter().flatten().sum();
    if over > 0 {
        out.notes.push(format!(
            "{over} histogram overflows have no value in the source: they count as samples and the exact max is kept, but they are not in the histogram, and the mean is cyclictest's 2-decimal average"
        ));
    }
    if overflows.iter().all(Option::is_none) {
        out.notes.push(
            "no histogram in the source (run without -h): samples, min, max and mean only, no percentiles".into(),
        );
    }
    if bad_cmdline {
        out.notes.push(
            "the recorded command line does not parse: interval and priority are unknown".into(),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = r##"{
  "file_version": 1,
  "cmdline:": "cyclictest -l20000 -m -S -p90 -i200 -h400 -q --json=x.json",
  "rt_test_version:": "2.40",
  "start_time": "Sun, 22 Nov 2026 01:41:24 +0000",
  "end_time": "Sun, 22 Nov 2026 01:41:28 +0000",
  "return_code": 0,
  "sysinfo": {"sysname": "Linux", "nodename": "vm", "release": "6.18", "version": "#1", "machine": "x86_64", "realtime": 0},
  "num_threads": 2,
  "resolution_in_ns": 0,
  "thread": {
    "0": {"histogram": {"10": 2, "12": 1}, "cycles": 4, "min": 10, "max": 725, "avg": 189.25, "cpu": 0, "node": -1},
    "1": {"histogram": {"11": 3}, "cycles": 3, "min": 11, "max": 11, "avg": 11.00, "cpu": 1, "node": -1}
  }
}
"##;

    #[test]
    fn threads_statistics_times_and_setup_are_read() {
        let r = parse(DOC).unwrap();
        let t0 = &r.threads[0];
        assert_eq!((t0.figures.samples, t0.histogram.count()), (4, 3));
        assert_eq!(
            (t0.figures.min_ns, t0.figures.max_ns, t0.figures.mean_ns),
            (Some(10_000), Some(725_000), Some(189_250.0))
        );
        let t1 = &r.threads[1];
        assert_eq!(t1.figures.mean_ns, Some(11_000.0));
        assert_eq!(
            (t1.policy.as_str(), t1.priority, t1.interval_ns, t1.cpu),
            ("fifo", 90, 200_000, Some(1))
        );
        assert_eq!(r.progress_ns, 4_000_000_000);
        assert_eq!(r.started_unix_ns, Some(1_795_311_684_000_000_000));
        assert!(r
            .environment
            .contains(&("uname.release".into(), "6.18".into())));
        assert_eq!(r.source["overflows"], json!([1, 0]));
        assert_eq!(r.source["interval_us"], json!([200, 200]));
    }

    #[test]
    fn an_unescaped_command_line_and_nan_are_repaired() {
        let doc = DOC
            .replace("-q --json", "-q --label \"a b\" --json")
            .replace("\"avg\": 11.00", "\"avg\": -nan");
        let r = parse(&doc).unwrap();
        assert!(r.notes[0].contains("repaired"), "{:?}", r.notes);
        assert_eq!(
            r.threads[1].figures.mean_ns,
            Some(11_000.0),
            "exact mean from the histogram"
        );
    }

    #[test]
    fn nanosecond_resolution_scales_every_value() {
        let doc = DOC.replace("\"resolution_in_ns\": 0", "\"resolution_in_ns\": 1");
        assert_eq!(parse(&doc).unwrap().threads[0].figures.max_ns, Some(725));
    }

    #[test]
    fn broken_documents_are_refused_with_the_field_or_line() {
        let half = &DOC[..DOC.len() / 2];
        for (text, want) in [
            (half.to_string(), "truncated"),
            (
                DOC.replace("\"cycles\": 4", "\"cycles\": \"4\""),
                "field thread.\"0\".cycles",
            ),
            (
                DOC.replace("\"cycles\": 3", "\"cycles\": 2"),
                "more than the thread's 2 cycles",
            ),
            (
                DOC.replace("\"12\": 1", "\"x\": 1"),
                "field thread.\"0\".histogram.\"x\"",
            ),
            (DOC.replace("\"max\": 11,", "\"max\": 10,"), "do not cover"),
            (DOC.replace("\"thread\"", "\"threads\""), "field thread:"),
            ("[1]".into(), "not an object"),
            (DOC.replace("cyclictest -l20000", "oslat -D"), "oslat"),
        ] {
            let e = parse(&text).unwrap_err().to_string();
            assert!(e.contains(want), "{want:?} not in {e:?}");
        }
    }
}
