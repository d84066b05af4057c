//! Cost of the flight recorder on the measurement: alternating pairs of the same run with and
//! without `--explain`'s recorder, the order flipped every pair. Run as root from
//! bench/explain-overhead.sh, which starts the mixed load around it.
//!
//! Usage: explain_overhead PAIRS SECONDS INTERVAL_US [all]
//! (`all`: one thread on every CPU, so the trace reader shares a measured CPU; default: the
//! last CPU measured, the reader on the others.)

use rtscope_core::Nanos;
use rtscope_engine::{CpuSet, Policy, Run, RunConfig, ThreadSpec, Wake};
use rtscope_explain::model::Spike;
use rtscope_trace::explain::{ExplainConfig, Explainer};
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

fn one(cpus: &[usize], hk: &[usize], secs: u64, interval_us: u64, v: Variant) -> Result {
    let explain = v != Variant::Off;
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
        let mut cfg = ExplainConfig::new(
            100_000,
            cpus.to_vec(),
            rtscope_trace::tracefs::StackChoice::Every,
        );
        cfg.housekeeping = hk.to_vec();
        cfg.force_coarse = v == Variant::Coarse;
        if v == Variant::Buf256 {
            cfg.buffer_kb = 256;
        }
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
                    smis: None,
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

/// What a run with `--explain` changes (ratios are against runs without it in the same round).
#[derive(Clone, Copy, PartialEq, Debug)]
enum Variant {
    /// Without --explain.
    Off,
    /// The explainer as the session starts it (tier chosen automatically).
    On,
    /// The explainer's coarse tier only: no tracing, the rest (spike hand-off, polls) the same.
    Coarse,
    /// The flight recorder with a 256 KiB buffer per CPU instead of 2 MiB.
    Buf256,
    /// As `On`, with this example's main thread (which polls the explainer) on the housekeeping CPUs.
    PinMain,
}

fn variant(s: &str) -> Variant {
    match s {
        "on" => Variant::On,
        "coarse" => Variant::Coarse,
        "buf256" => Variant::Buf256,
        "pinmain" => Variant::PinMain,
        _ => panic!("unknown variant {s} (on, coarse, buf256, pinmain)"),
    }
}

fn pin_self(cpus: &[usize]) {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; only that local set is touched.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        let all = if cpus.is_empty() {
            (0..libc::CPU_SETSIZE as usize).collect::<Vec<_>>()
        } else {
            cpus.to_vec()
        };
        for c in all {
            libc::CPU_SET(c, &mut set);
        }
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

/// Median (the mean of the middle two for an even count), minimum, maximum.
fn median(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let m = if n % 2 == 0 {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    } else {
        v[n / 2]
    };
    (m, v[0], v[n - 1])
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
    let variants: Vec<Variant> = std::env::var("VARIANTS")
        .unwrap_or_else(|_| "on".into())
        .split(',')
        .map(variant)
        .collect();
    println!("measured CPUs {cpus:?}, reader on {hk:?}, {pairs} rounds of {secs} s at {interval} µs, variants {variants:?} (µs: p50/p99/p99.9/max)");
    let mut all = vec![Variant::Off];
    all.extend(&variants);
    let mut p50_diff = vec![Vec::new(); variants.len()];
    let mut p99_ratio = vec![Vec::new(); variants.len()];
    for p in 0..pairs {
        // The order rotates every round, so no variant always runs first.
        let mut order: Vec<usize> = (0..all.len()).collect();
        order.rotate_left(p as usize % all.len());
        let mut res: Vec<Option<Result>> = all.iter().map(|_| None).collect();
        for i in order {
            pin_self(if all[i] == Variant::PinMain { &hk } else { &[] });
            res[i] = Some(one(&cpus, &hk, secs, interval, all[i]));
        }
        pin_self(&[]);
        let res: Vec<Result> = res.into_iter().map(Option::unwrap).collect();
        let us = |r: &Result| {
            format!(
                "{:.1}/{:.1}/{:.1}/{:.1}",
                r.p50 as f64 / 1e3,
                r.p99 as f64 / 1e3,
                r.p999 as f64 / 1e3,
                r.max as f64 / 1e3
            )
        };
        let mut line = format!("round {}: off {}", p + 1, us(&res[0]));
        for (k, v) in variants.iter().enumerate() {
            let r = &res[k + 1];
            line += &format!(
                " | {v:?} {} ({} spikes explained, trace reader {} ms CPU)",
                us(r),
                r.spikes,
                r.reader_cpu_ms
            );
            p50_diff[k].push((r.p50 as f64 - res[0].p50 as f64) / 1e3);
            p99_ratio[k].push(r.p99 as f64 / res[0].p99.max(1) as f64);
        }
        println!("{line}");
    }
    for (k, v) in variants.iter().enumerate() {
        let (m, lo, hi) = median(p99_ratio[k].clone());
        let (dm, dlo, dhi) = median(p50_diff[k].clone());
        println!(
            "{v:?}: p99 ratio to off median {m:.3} (rounds {lo:.3}-{hi:.3}); p50 minus off median {dm:+.1} µs (rounds {dlo:+.1} to {dhi:+.1})"
        );
    }
}
