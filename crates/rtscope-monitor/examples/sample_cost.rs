//! Measures what one `Monitor::sample()` costs on this machine's real /sys and /proc.
//!
//! `cargo run --release -p rtscope-monitor --example sample_cost [samples]`

use rtscope_monitor::Monitor;
use std::path::Path;
use std::time::{Duration, Instant};

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(200);
    let mut m = Monitor::new(Path::new("/")).expect("monitor on /");
    let t0 = Instant::now();
    let mut costs = Vec::with_capacity(n);
    let mut last = m.sample(t0.elapsed());
    for _ in 0..n {
        std::thread::sleep(Duration::from_millis(5));
        let now = t0.elapsed();
        let start = Instant::now();
        last = m.sample(now);
        costs.push(start.elapsed());
    }
    costs.sort_unstable();
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    let threads = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().nth(3).map(str::to_owned))
        .unwrap_or_default();
    println!(
        "sample(): {n} samples, min {:.0} us, median {:.0} us, p99 {:.0} us, max {:.0} us",
        us(costs[0]),
        us(costs[n / 2]),
        us(costs[(n * 99 / 100).min(n - 1)]),
        us(costs[n - 1])
    );
    println!(
        "last sample: {} readings, {} text states, {} top threads; runnable/threads {threads}",
        last.readings.len(),
        last.states.len(),
        last.top.len()
    );
    for s in m.availability() {
        println!("  {s}");
    }
}
