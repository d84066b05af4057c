//! stress-ng `--cyclic` logs (`stress-ng: info:  [PID] cyclic: …`, values in ns): the policy,
//! delay and number of samples, mean, mode, min, max, standard deviation, percentiles, and a
//! distribution of the first buckets. One instance (PID) is one thread.
//!
//! stress-ng keeps summary statistics only, over at most `--cyclic-samples` samples: the run gets
//! samples, min, max and mean, an empty histogram, and the percentiles and distribution in
//! `config.source`.

use super::model::{excerpt, Bad, Imported, ThreadRow};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

/// What one instance reported, ns.
#[derive(Debug, Default)]
struct Instance {
    line: usize,
    policy: Option<String>,
    delay_ns: Option<u64>,
    samples: Option<u64>,
    mean: Option<f64>,
    mode: Option<u64>,
    min: Option<u64>,
    max: Option<u64>,
    stddev: Option<f64>,
    percentiles: Map<String, Value>,
    dist_interval: Option<u64>,
    dist_shown: Option<(u64, u64)>,
    dist: Vec<(u64, u64)>,
    samples_needed: Option<u64>,
    no_data: bool,
}

/// Parses a stress-ng log.
pub fn parse(text: &str) -> Result<Imported, Bad> {
    let mut inst: BTreeMap<String, Instance> = BTreeMap::new();
    let mut bogo_ops = None;
    let mut seconds = None;
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        if let Some(p) = line.find("cyclic:") {
            let pid = pid_of(&line[..p]);
            let e = inst.entry(pid).or_insert_with(|| Instance {
                line: n,
                ..Instance::default()
            });
            payload(n, line[p + "cyclic:".len()..].trim(), e)?;
        } else if let Some(ops) = metrics(line) {
            bogo_ops = Some(ops);
        } else if let Some(s) = line
            .split_once("completed in ")
            .and_then(|(_, r)| r.trim().strip_suffix('s'))
        {
            seconds = s.trim().parse::<f64>().ok();
        }
    }
    if inst.is_empty() {
        return Err(Bad::file(
            "no 'cyclic:' lines: this is not a stress-ng --cyclic log",
        ));
    }
    let mut out = Imported::default();
    for (k, (pid, e)) in inst.iter().enumerate() {
        out.threads.push(thread(k as u32, pid, e)?);
    }
    out.progress_ns = seconds.map_or(0, |s| (s * 1e9).round() as u64);
    out.source = source(&inst, bogo_ops, seconds);
    out.notes.push(
        "stress-ng logs summary statistics only: the run has samples, min, max and mean but no histogram; its percentiles and distribution are kept in the run's configuration".into(),
    );
    if inst.values().any(|e| e.samples_needed.is_some()) {
        out.notes.push(
            "stress-ng kept fewer samples than the run had cycles (--cyclic-samples): the statistics cover the samples kept".into(),
        );
    }
    Ok(out)
}

/// `stress-ng: info:  [13211] ` → `13211`.
fn pid_of(prefix: &str) -> String {
    prefix
        .rsplit_once('[')
        .and_then(|(_, r)| r.split_once(']'))
        .map_or(String::new(), |(p, _)| p.trim().to_string())
}

/// `stress-ng: metrc: [13207] cyclic  20000  5.00 …` → bogo ops.
fn metrics(line: &str) -> Option<u64> {
    let (_, rest) = line.split_once(']')?;
    let mut it = rest.split_whitespace();
    (it.next()? == "cyclic").then_some(())?;
    it.next()?.parse().ok()
}

/// The number before `unit` in `text` after `key`, e.g. `num("min: 10855 ns,", "min:")`.
fn num<T: std::str::FromStr>(text: &str, key: &str) -> Option<T> {
    let rest = text.split_once(key)?.1.trim_start();
    let end = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-'))
        .unwrap_or(rest.len());
    rest[..end].parse().ok()
}

fn payload(n: usize, p: &str, e: &mut Instance) -> Result<(), Bad> {
    let bad = || {
        Bad::line(
            n,
            format!("unreadable stress-ng cyclic line '{}'", excerpt(p, 70)),
        )
    };
    if let Some(rest) = p.strip_prefix("sched ") {
        let (policy, rest) = rest.split_once(':').ok_or_else(bad)?;
        e.policy = Some(policy.split_whitespace().next().unwrap_or("").to_string());
        e.delay_ns = Some(
            rest.trim()
                .split(' ')
                .next()
                .and_then(|d| d.parse().ok())
                .ok_or_else(bad)?,
        );
        e.samples = Some(num(rest, "delay,").ok_or_else(bad)?);
    } else if p.starts_with("mean:") {
        e.mean = Some(num(p, "mean:").ok_or_else(bad)?);
        e.mode = num(p, "mode:");
    } else if p.starts_with("min:") {
        e.min = Some(num(p, "min:").ok_or_else(bad)?);
        e.max = Some(num(p, "max:").ok_or_else(bad)?);
        e.stddev = num(p, "std.dev.");
    } else if let Some((pct, v)) = p.split_once("%:") {
        let pct: f64 = pct.trim().parse().map_err(|_| bad())?;
        let v: u64 = num(v, "").ok_or_else(bad)?;
        e.percentiles.insert(format!("{pct:.2}"), json!(v));
    } else if p.starts_with("latency distribution") {
        e.dist_interval = num(p, "(");
    } else if p.starts_with("(for the first") {
        e.dist_shown = Some((
            num(p, "first").ok_or_else(bad)?,
            num(p, " of ").ok_or_else(bad)?,
        ));
    } else if let Some(rest) = p.strip_prefix("Note: --cyclic-samples needed to be") {
        e.samples_needed = num(rest, "");
    } else if p.contains("no latency information available") {
        e.no_data = true;
    } else if p.starts_with(|c: char| c.is_ascii_digit()) {
        let mut it = p.split_whitespace();
        let (Some(lo), Some(c), None) = (it.next(), it.next(), it.next()) else {
            return Err(bad());
        };
        let (lo, c) = (
            lo.parse().map_err(|_| bad())?,
            c.parse().map_err(|_| bad())?,
        );
        if c > 0 {
            e.dist.push((lo, c));
        }
    }
    Ok(())
}

fn thread(k: u32, pid: &str, e: &Instance) -> Result<ThreadRow, Bad> {
    let mut d = ThreadRow::new(k);
    d.tid = pid.parse::<i32>().ok().filter(|&v| v != 0);
    d.policy = e.policy.as_deref().map_or("unknown".into(), policy);
    d.interval_ns = e.delay_ns.unwrap_or(0);
    if e.no_data {
        return Ok(d);
    }
    let missing = |what: &str| {
        Bad::line(
            e.line,
            format!(
                "the cyclic report that starts here has no '{what}' line: the log is truncated"
            ),
        )
    };
    d.figures.samples = e.samples.ok_or_else(|| missing("sched … samples"))?;
    if d.figures.samples > 0 {
        d.figures.mean_ns = Some(e.mean.ok_or_else(|| missing("mean:"))?);
        d.figures.min_ns = Some(e.min.ok_or_else(|| missing("min: … max:"))?);
        d.figures.max_ns = e.max;
    }
    Ok(d)
}

/// `SCHED_DEADLINE` → `deadline`.
fn policy(p: &str) -> String {
    p.trim_start_matches("SCHED_").to_ascii_lowercase()
}

fn source(
    inst: &BTreeMap<String, Instance>,
    bogo_ops: Option<u64>,
    seconds: Option<f64>,
) -> Map<String, Value> {
    let per: Vec<Value> = inst
        .iter()
        .map(|(pid, e)| {
            json!({
                "pid": pid, "policy": e.policy, "delay_ns": e.delay_ns, "samples": e.samples,
                "mean_ns": e.mean, "mode_ns": e.mode, "min_ns": e.min, "max_ns": e.max,
                "stddev_ns": e.stddev, "percentiles_ns": e.percentiles,
                "samples_needed": e.samples_needed,
                "distribution": {
                    "interval_ns": e.dist_interval,
                    "buckets_shown": e.dist_shown.map(|s| s.0),
                    "buckets_total": e.dist_shown.map(|s| s.1),
                    "nonzero": e.dist.iter().map(|&(lo, c)| json!([lo, c])).collect::<Vec<_>>(),
                },
            })
        })
        .collect();
    let mut m = Map::new();
    m.insert("unit".into(), json!("ns"));
    m.insert("instances".into(), Value::Array(per));
    m.insert("bogo_ops".into(), json!(bogo_ops));
    m.insert("run_seconds".into(), json!(seconds));
    let d: Vec<u64> = inst.values().filter_map(|e| e.delay_ns).collect();
    m.insert(
        "interval_us".into(),
        json!(d.iter().map(|d| d / 1000).collect::<Vec<_>>()),
    );
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOG: &str = "stress-ng: info:  [13207] setting to a 5 second run per stressor
stress-ng: info:  [13211] cyclic: sched SCHED_DEADLINE: 100000 ns delay, 10000 samples
stress-ng: info:  [13211] cyclic:   mean: 24451.04 ns, mode: 20910 ns
stress-ng: info:  [13211] cyclic:   min: 10855 ns, max: 854110 ns, std.dev. 11833.03
stress-ng: info:  [13211] cyclic: latency percentiles:
stress-ng: info:  [13211] cyclic:   25.00%:      20639 ns
stress-ng: info:  [13211] cyclic:   99.99%:     854110 ns
stress-ng: info:  [13211] cyclic: latency distribution (1000 ns intervals):
stress-ng: info:  [13211] cyclic: (for the first 250 buckets of 855)
stress-ng: info:  [13211] cyclic: latency (ns)  frequency
stress-ng: info:  [13211] cyclic:            0          0
stress-ng: info:  [13211] cyclic:        10000          1
stress-ng: info:  [13211] cyclic:           ..         .. (all zeros hereafter)
stress-ng: info:  [13211] cyclic: Note: --cyclic-samples needed to be 20000 to capture all the data for this run
stress-ng: metrc: [13207] cyclic            20000      5.00      0.03      0.34      3998.21       54408.89
stress-ng: info:  [13207] successful run completed in 5.00s
";

    #[test]
    fn the_summary_statistics_and_percentiles_are_kept() {
        let r = parse(LOG).unwrap();
        let t = &r.threads[0];
        assert_eq!(
            (
                t.figures.samples,
                t.figures.min_ns,
                t.figures.max_ns,
                t.figures.mean_ns
            ),
            (10000, Some(10855), Some(854_110), Some(24451.04))
        );
        assert_eq!(
            (t.policy.as_str(), t.interval_ns, t.tid),
            ("deadline", 100_000, Some(13211))
        );
        assert_eq!(t.histogram.count(), 0);
        let i = &r.source["instances"][0];
        assert_eq!(i["percentiles_ns"]["99.99"], json!(854_110));
        assert_eq!(i["distribution"]["nonzero"], json!([[10000, 1]]));
        assert_eq!(i["distribution"]["buckets_total"], json!(855));
        assert_eq!(r.source["bogo_ops"], json!(20000));
        assert_eq!(r.progress_ns, 5_000_000_000);
    }

    #[test]
    fn truncated_or_garbled_logs_are_refused_with_the_line() {
        let cut: String = LOG.lines().take(2).map(|l| format!("{l}\n")).collect();
        assert!(parse(&cut)
            .unwrap_err()
            .to_string()
            .contains("line 2: the cyclic report that starts here has no 'mean:'"));
        let bad = LOG.replace("min: 10855 ns", "min: lots ns");
        assert!(parse(&bad).unwrap_err().to_string().starts_with("line 4:"));
        assert!(parse("stress-ng: info: hello\n").is_err());
    }
}
