//! The real /sys and /proc of the machine the tests run on.

use rtscope_monitor::{housekeeping_cpus, Monitor, SourceStatus};
use std::path::Path;
use std::time::{Duration, Instant};

fn status(m: &Monitor, source: &str) -> SourceStatus {
    m.availability()
        .into_iter()
        .find(|s| s.source == source)
        .expect("source listed")
}

/// The clock ticks of CPU time (user and system) the kernel has charged the calling thread:
/// `utime` and `stime` of /proc/thread-self/stat, as the monitor's top threads read them.
fn own_ticks() -> u64 {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").expect("/proc/thread-self/stat");
    // After the name in parentheses (which may hold spaces): state is field 3, utime 14.
    let after = &stat[stat.rfind(')').expect("a task's name") + 2..];
    let fields: Vec<&str> = after.split(' ').collect();
    fields[11].parse::<u64>().expect("utime") + fields[12].parse::<u64>().expect("stime")
}

/// Whether `dir` has an entry whose name starts with `prefix` and holds `file`.
fn any_entry_with(dir: &str, prefix: &str, file: &str) -> bool {
    std::fs::read_dir(dir).is_ok_and(|rd| {
        rd.flatten().any(|e| {
            e.file_name().to_string_lossy().starts_with(prefix) && e.path().join(file).exists()
        })
    })
}

#[test]
fn two_samples_of_this_machine() {
    // A long top list, so that the check for this test's own thread does not depend on how
    // busy the machine is.
    let mut m = Monitor::new(Path::new("/"))
        .expect("monitor")
        .with_top_threads(1000);
    let start = Instant::now();
    let first_at = start.elapsed();
    let first = m.sample(first_at);
    assert!(first.value("load.1m").is_some());
    assert!(first.top.is_empty());

    // Burn CPU on this thread until the kernel has charged it 5 clock ticks more (50 ms at
    // USER_HZ 100), so it is certain to show in the top threads: 100 ms of wall time was
    // not enough beside `stress-ng --cpu 4 --io 2 --vm 1` and CI's guests (30 Nov 2026: the
    // thread got under a tick of CPU in it and was not listed). However slow the machine,
    // the spin ends once the CPU is given (structure, not timing).
    let ticks = own_ticks();
    let mut x = 0u64;
    while own_ticks() < ticks + 5 {
        for _ in 0..100_000 {
            x = std::hint::black_box(x.wrapping_add(1));
        }
    }
    // At least 200 ms after the first sample, however late this thread runs: the interval is
    // exactly the difference of the two times given (structure, not timing).
    std::thread::sleep((first_at + Duration::from_millis(200)).saturating_sub(start.elapsed()));
    let now = start.elapsed();
    let s = m.sample(now);
    let interval = s.interval.expect("interval");
    assert_eq!(interval, now - first_at);
    assert!(interval >= Duration::from_millis(200), "{interval:?}");

    assert!(s.value("ctxt_rate").expect("ctxt_rate") > 0.0);
    assert!(s.value("load.1m").expect("load") >= 0.0);
    assert!(s.value("mem.total").expect("mem.total") > 0.0);
    let avail = s.value("mem.available").expect("mem.available");
    assert!(avail > 0.0 && avail <= s.value("mem.total").unwrap_or(0.0));
    assert!(s.value("cpu_busy.all").is_some());
    assert!(s.value("intr_rate").is_some());
    assert!(s.readings.iter().any(|r| r.metric.starts_with("irq_rate.")));
    assert!(s
        .readings
        .iter()
        .any(|r| r.metric.starts_with("softirq_rate.TIMER.")));
    assert!(!s.top.is_empty(), "at least one thread used CPU time");
    let me = std::process::id();
    assert!(
        s.top.iter().any(|t| t.pid == me),
        "the spinning test thread is among the top: {:?}",
        s.top
    );
    for t in &s.top {
        // A thread can use at most 100 % of one CPU; allow for tick rounding.
        let max = 100.0 + 2.0 * 100.0 / interval.as_secs_f64() / 100.0;
        assert!(t.cpu_percent > 0.0 && t.cpu_percent <= max, "{t:?}");
    }
    let shares: Vec<f64> = s.top.iter().map(|t| t.cpu_percent).collect();
    assert!(
        shares.windows(2).all(|w| w[0] >= w[1]),
        "highest first: {shares:?}"
    );

    for src in [
        "interrupts",
        "softirqs",
        "stat",
        "loadavg",
        "meminfo",
        "threads",
    ] {
        assert!(status(&m, src).available, "{}", status(&m, src));
    }
}

/// This VM has no thermal zones and no cpufreq: the monitor must say so, not fail. On a
/// machine that has them, it must find them.
#[test]
fn thermal_and_cpufreq_availability_matches_this_machine() {
    let mut m = Monitor::new(Path::new("/")).expect("monitor");
    let thermal = status(&m, "thermal");
    if any_entry_with("/sys/class/thermal", "thermal_zone", "temp") {
        assert!(thermal.available, "{thermal}");
    } else {
        assert_eq!(
            thermal.to_string(),
            "thermal: unavailable (no /sys/class/thermal/thermal_zone*)"
        );
    }
    let cpufreq = status(&m, "cpufreq");
    if any_entry_with("/sys/devices/system/cpu", "cpu", "cpufreq/scaling_cur_freq") {
        assert!(cpufreq.available, "{cpufreq}");
    } else {
        assert_eq!(
            cpufreq.to_string(),
            "cpufreq: unavailable (no /sys/devices/system/cpu/cpu*/cpufreq)"
        );
        let s = m.sample(Duration::ZERO);
        assert!(s.readings.iter().all(|r| !r.metric.starts_with("freq.")));
    }
    let rpi = status(&m, "rpi_throttled");
    let fw = Path::new("/sys/devices/platform/soc/soc:firmware/get_throttled");
    assert_eq!(rpi.available, fw.is_file(), "{rpi}");
}

#[test]
fn this_machine_has_a_housekeeping_cpu() {
    let hk = housekeeping_cpus(Path::new("/"));
    assert!(!hk.is_empty());
    for cpu in hk {
        let dir = format!("/sys/devices/system/cpu/cpu{cpu}");
        assert!(Path::new(&dir).is_dir(), "{dir}");
    }
}
