//! Cost of the flight recorder on the measurement: alternating pairs of the same run with and
//! without `--explain`'s recorder, the order flipped every pair. Run as root from
//! bench/explain-overhead.sh, which starts the mixed load around it.
//!
//! Usage: explain_overhead PAIRS SECONDS INTERVAL_US [all]
//! (`all`: one thread on every CPU, so the trace reader shares a measured CPU; default: the
//! last CPU measured, the reader on the others.)

use rtscope_core::Nanos;
use rtscope_engine::{CpuSet, Policy, Run, RunConfig, ThreadSpec, Wake};
use rtscope_trace::explain::{ExplainConfig, Explainer};
use rtscope_trace::Spike;
use std::time::Duration;

struct Result {
    p50: u64,
    p99: u64,
    p999: u64,
    max: u64,
    spikes: u64,
    reader_cpu_ms: u64,
}

/// CPU time (ms) of this process's thread named `name` (utime + stime from /proc).
fn thread_cpu_ms(name: &str) -> u64 {
    let tick = 1000 / 100; // USER_HZ is 100 on Linux
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    dir.flatten()
        .filter(|t| std::fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.trim() == name))
        .filter_map(|t| std::fs::read_to_string(t.path().join("stat")).ok())
        .filter_map(|s| {
            let f: Vec<&str> = s.rsplit_once(')')?.1.split_whitespace().collect();
            Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
        })
        .sum::<u64>()
        * tick
}

fn one(cpus: &[usize], hk: &[usize], secs: u64, interval_us: u64, explain: bool) -> Result {
    let threads = cpus
        .iter()
        .map(|&c| ThreadSpec {
            affinity: Some(CpuSet::from_cpus([c])),
            policy: Policy::Fifo,
            priority: 95,
            interval: Nanos::from_us(interval_us),
        })
        .collect();
    let mut c = RunConfig::new(threads);
    c.duration = Some(Nanos::from_ms(secs * 1000));
    c.mlock = true;
    c.event_threshold = explain.then_some(Nanos::from_us(100));
    c.event_capacity = if explain { 100_000 } else { 0 };
    let mut ex = explain.then(|| {
        let mut cfg = ExplainConfig::new(100_000, cpus.to_vec());
        cfg.housekeeping = hk.to_vec();
        Explainer::start(cfg)
    });
    let run = Run::start(c).expect("engine (root)");
    let mut taken = vec![0usize; cpus.len()];
    let mut feed = |run: &Run, ex: &mut Option<Explainer>| {
        let Some(ex) = ex else { return };
        for (i, t) in run.threads().iter().enumerate() {
            let ev = t.events().snapshot();
            for s in &ev[taken[i]..] {
                ex.push_spike(Spike {
                    cpu: cpus[i],
                    tid: t.tid(),
                    deadline_ns: s.time.0 - s.latency.0,
                    wakeup_ns: s.time.0,
                });
            }
            taken[i] = ev.len();
        }
        ex.poll();
    };
    while run.wait(Nanos::from_ms(250)) != Wake::Finished {
        feed(&run, &mut ex);
    }
    feed(&run, &mut ex);
    let r = run.finish();
    let reader_cpu_ms = thread_cpu_ms("rtscope-trace");
    let spikes = ex.map_or(0, |e| e.finish(Duration::from_secs(2)).counts.traced);
    let h = r.total_histogram();
    let q = |x: f64| h.value_at_quantile(x).map_or(0, |n| n.0);
    Result {
        p50: q(0.5),
        p99: q(0.99),
        p999: q(0.999),
        max: h.max().map_or(0, |n| n.0),
        spikes,
        reader_cpu_ms,
    }
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let num = |i: usize, d: u64| a.get(i).and_then(|s| s.parse().ok()).unwrap_or(d);
    let (pairs, secs, interval) = (num(1, 5), num(2, 20), num(3, 200));
    let n = std::thread::available_parallelism().map_or(1, |n| n.get());
    let (cpus, hk): (Vec<usize>, Vec<usize>) = if a.get(4).map(String::as_str) == Some("all") {
        ((0..n).collect(), vec![])
    } else {
        (vec![n - 1], (0..n - 1).collect())
    };
    println!("measured CPUs {cpus:?}, reader on {hk:?}, {pairs} pairs of {secs} s at {interval} µs (µs: p50/p99/p99.9/max)");
    let mut ratios = Vec::new();
    for p in 0..pairs {
        let order = if p % 2 == 0 {
            [false, true]
        } else {
            [true, false]
        };
        let mut res = [None, None];
        for on in order {
            res[usize::from(on)] = Some(one(&cpus, &hk, secs, interval, on));
        }
        let [Some(off), Some(on)] = res else {
            unreachable!()
        };
        let us = |r: &Result| {
            format!(
                "{:.1}/{:.1}/{:.1}/{:.1}",
                r.p50 as f64 / 1e3,
                r.p99 as f64 / 1e3,
                r.p999 as f64 / 1e3,
                r.max as f64 / 1e3
            )
        };
        println!(
            "pair {}: off {}  on {} ({} spikes explained, trace reader {} ms CPU)",
            p + 1,
            us(&off),
            us(&on),
            on.spikes,
            on.reader_cpu_ms
        );
        ratios.push(on.p99 as f64 / off.p99.max(1) as f64);
    }
    ratios.sort_by(f64::total_cmp);
    println!(
        "p99 ratio on/off: median {:.3} (pairs {:.3}-{:.3})",
        ratios[ratios.len() / 2],
        ratios[0],
        ratios[ratios.len() - 1]
    );
}
