//! cyclictest's summary output without a histogram: the `-q` end summary (one
//! `T: 0 ( 8946) P:90 I:200 C:  20000 Min:      8 Act:   12 Avg:   24 Max:    6368` line per
//! thread), the last block of a live status captured without `-q` (cursor escapes ignored), and
//! `--spike=N` output (`T: 1 Spike:     162: TS:   2162688834` lines and `spikes = 1`).
//!
//! Such output carries summary statistics only: the run gets samples (`C:`, cyclictest's
//! wake-ups), min, max and cyclictest's truncated integer average, the thread id, priority and
//! interval, and an empty histogram (no percentiles). Spikes (latency µs, and the wake-up time
//! in µs on the run's clock, which is not tied to the run's start) are kept in
//! `config.source.spikes`. Values are µs: a summary printed with `-N` (ns) cannot be told from
//! one in µs and is imported as µs, as for histograms.

use super::model::{excerpt, Bad, Imported, ThreadRow};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

/// Most spikes kept in `config.source` (the count is exact).
pub const MAX_SPIKES: usize = 10_000;

/// The highest thread number accepted (cyclictest runs one thread per CPU).
const MAX_THREADS: u32 = 4096;

/// One `T:` status line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Status {
    tid: i64,
    prio: i64,
    interval_us: u64,
    cycles: u64,
    min: u64,
    avg: u64,
    max: u64,
}

/// Whether `line` is a `T:` status line (the shape detection looks for).
pub fn is_status(line: &str) -> bool {
    status(line).is_some_and(|s| s.is_ok())
}

/// The number after `key` in `s` (spaces allowed before it), and the rest after it.
fn after<'a>(s: &'a str, key: &str) -> Option<(i64, &'a str)> {
    let rest = s.split_once(key)?.1.trim_start();
    let end = rest
        .char_indices()
        .find(|&(i, c)| !(c.is_ascii_digit() || (i == 0 && c == '-')))
        .map_or(rest.len(), |(i, _)| i);
    Some((rest[..end].parse().ok()?, &rest[end..]))
}

/// `T: 0 ( 8946) P:90 I:200 C: 20000 Min: 8 Act: 12 Avg: 24 Max: 6368` → thread and status;
/// `None` for any other line, an error for a `T:` line with a `Min:` that does not read.
fn status(line: &str) -> Option<Result<(u32, Status), ()>> {
    let at = line.find("T:")?;
    let l = &line[at..];
    if !(l.contains(" P:") && l.contains("C:") && l.contains("Min:") && l.contains("Max:")) {
        return None;
    }
    let read = || -> Option<(u32, Status)> {
        let (t, r) = after(l, "T:")?;
        let (tid, r) = after(r, "(")?;
        let (prio, r) = after(r, "P:")?;
        let (interval, r) = after(r, "I:")?;
        let (cycles, r) = after(r, "C:")?;
        let (min, r) = after(r, "Min:")?;
        let (_, r) = after(r, "Act:")?;
        let (avg, r) = after(r, "Avg:")?;
        let (max, _) = after(r, "Max:")?;
        let u = |v: i64| u64::try_from(v).ok();
        Some((
            u32::try_from(t).ok()?,
            Status {
                tid,
                prio,
                interval_us: u(interval)?,
                cycles: u(cycles)?,
                min: u(min)?,
                avg: u(avg)?,
                max: u(max)?,
            },
        ))
    };
    Some(read().ok_or(()))
}

/// A `--spike` line: (thread, latency µs, time µs).
fn spike(line: &str) -> Option<(u32, u64, u64)> {
    let l = &line[line.find("T:")?..];
    if !l.contains("Spike:") {
        return None;
    }
    let (t, r) = after(l, "T:")?;
    let (lat, r) = after(r, "Spike:")?;
    let (ts, _) = after(r, "TS:")?;
    Some((
        u32::try_from(t).ok()?,
        u64::try_from(lat).ok()?,
        u64::try_from(ts).ok()?,
    ))
}

/// Parses a `-q` summary, a live status or `--spike` output.
pub fn parse(text: &str) -> Result<Imported, Bad> {
    let mut last: BTreeMap<u32, Status> = BTreeMap::new();
    let mut spikes: Vec<(u32, u64, u64)> = Vec::new();
    let (mut seen_spikes, mut said_spikes) = (0u64, None);
    for (i, line) in text.lines().enumerate() {
        if let Some(s) = spike(line) {
            seen_spikes += 1;
            if spikes.len() < MAX_SPIKES {
                spikes.push(s);
            }
        } else if let Some(st) = status(line) {
            let (t, s) = st.map_err(|()| {
                Bad::line(
                    i + 1,
                    format!("unreadable cyclictest status line '{}'", excerpt(line, 70)),
                )
            })?;
            if t >= MAX_THREADS || s.cycles > crate::model::MAX_COUNT {
                return Err(Bad::line(i + 1, "thread number or cycle count too large"));
            }
            last.insert(t, s);
        } else if let Some(n) = line.trim().strip_prefix("spikes = ") {
            said_spikes = n.trim().parse::<u64>().ok();
        }
    }
    if last.is_empty() {
        return Err(Bad::file(
            "no 'T: N (TID) P:.. I:.. C:.. Min:.. Max:..' line: not a cyclictest summary",
        ));
    }
    let mut out = Imported::default();
    for (&t, s) in &last {
        out.threads.push(thread(t, s));
    }
    out.source = source(&last, &spikes, seen_spikes, said_spikes);
    out.notes.push(
        "a cyclictest summary (no histogram) carries summary statistics only: the run has samples, min, max and cyclictest's truncated integer average, but no histogram and so no percentiles".into(),
    );
    if last.values().any(|s| s.cycles > 0 && s.min >= 1000) {
        out.notes.push(
            "a minimum of 1 ms or more: if cyclictest ran with -N, its values are ns and every latency here is 1000× too high (the output does not say which)".into(),
        );
    }
    if seen_spikes > 0 || said_spikes.is_some() {
        out.notes.push(format!(
            "{seen_spikes} --spike events kept in the run's configuration (config.source.spikes: thread, latency µs, wake-up time µs on cyclictest's clock)"
        ));
    }
    Ok(out)
}

fn thread(t: u32, s: &Status) -> ThreadRow {
    let mut d = ThreadRow::new(t);
    d.tid = i32::try_from(s.tid).ok().filter(|&v| v != 0);
    d.priority = i32::try_from(s.prio).unwrap_or(0);
    d.interval_ns = s.interval_us.saturating_mul(1000);
    d.figures.samples = s.cycles;
    if s.cycles > 0 {
        d.figures.min_ns = Some(s.min.saturating_mul(1000));
        d.figures.max_ns = Some(s.max.saturating_mul(1000));
        d.figures.mean_ns = Some(s.avg as f64 * 1000.0);
    }
    d.policy = "unknown".into();
    d
}

fn source(
    last: &BTreeMap<u32, Status>,
    spikes: &[(u32, u64, u64)],
    seen: u64,
    said: Option<u64>,
) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("unit".into(), json!("us"));
    m.insert("summary_only".into(), json!(true));
    m.insert(
        "avg_latencies_us".into(),
        json!(last.values().map(|s| s.avg).collect::<Vec<_>>()),
    );
    if seen > 0 || said.is_some() {
        let list: Vec<Value> = spikes
            .iter()
            .map(|&(t, lat, ts)| json!({"thread": t, "latency_us": lat, "ts_us": ts}))
            .collect();
        m.insert("spikes".into(), Value::Array(list));
        m.insert("spike_lines".into(), json!(seen));
        m.insert("spikes_reported".into(), json!(said));
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    const Q: &str = "# /dev/cpu_dma_latency set to 0us\nT: 0 ( 8946) P:90 I:200 C:  20000 Min:      8 Act:   12 Avg:   24 Max:    6368\nT: 1 ( 8957) P:90 I:700 C:   5754 Min:     11 Act:   77 Avg:   36 Max:    6292\n";

    #[test]
    fn a_q_summary_imports_its_statistics_without_a_histogram() {
        let r = parse(Q).unwrap();
        assert_eq!(r.threads.len(), 2);
        let t1 = &r.threads[1];
        assert_eq!(
            (t1.tid, t1.priority, t1.interval_ns),
            (Some(8957), 90, 700_000)
        );
        assert_eq!(
            (t1.figures.samples, t1.figures.min_ns, t1.figures.max_ns),
            (5754, Some(11_000), Some(6_292_000))
        );
        assert_eq!(t1.figures.mean_ns, Some(36_000.0));
        assert_eq!(t1.histogram.count(), 0);
        assert_eq!(r.source["summary_only"], json!(true));
        assert!(r.source.get("spikes").is_none());
    }

    #[test]
    fn spikes_are_kept_with_their_count() {
        let text = format!("{Q}\nT: 1 Spike:     162: TS:   2162688834\nspikes = 1\n");
        let r = parse(&text).unwrap();
        assert_eq!(
            r.source["spikes"],
            json!([{"thread": 1, "latency_us": 162, "ts_us": 2162688834u64}])
        );
        assert_eq!(r.source["spikes_reported"], json!(1));
    }

    #[test]
    fn the_last_block_of_a_live_status_wins_and_bad_lines_are_refused() {
        let live = "T: 0 ( 1) P:90 I:200 C:      5 Min:      8 Act:    9 Avg:    9 Max:      10\n\x1b[1AT: 0 ( 1) P:90 I:200 C:     50 Min:      7 Act:    9 Avg:    9 Max:      12\n";
        assert_eq!(parse(live).unwrap().threads[0].figures.samples, 50);
        let bad = "T: 0 ( 1) P:90 I:200 C: x Min: 1 Act: 1 Avg: 1 Max: 1\n";
        assert_eq!(parse(bad).unwrap_err().at.as_deref(), Some("line 1"));
        assert!(parse("nothing here\n").is_err());
    }
}
