//! The Raspberry Pi 4 fixture: ARM GIC interrupts with dwc_otg, cpufreq-dt, the firmware's
//! get_throttled word (0x50005), 4 CPUs with CPU 3 isolated for the real-time thread.

mod common;

use common::*;
use rtscope_monitor::{housekeeping_cpus, unit, Monitor, Sample, ThreadShare};
use std::fs;
use std::time::Duration;

#[test]
fn availability_reports_x86_throttling_as_unavailable() {
    assert_availability(
        "rpi4",
        &[
            "thermal: available (1 thermal zones)",
            "hwmon: available (1 hwmon temperatures)",
            "cpufreq: available (8 cpufreq files)",
            "cpu_throttle: unavailable (no /sys/devices/system/cpu/cpu*/thermal_throttle (x86 only))",
            "rpi_throttled: available (get_throttled)",
            "interrupts: available (23 sources)",
        ],
    );
}

#[test]
fn first_sample_has_levels_only() {
    let mut m = Monitor::new(&fixture("rpi4")).expect("monitor");
    let s = m.sample(Duration::from_secs(1));
    assert_eq!(s.at, Duration::from_secs(1));
    assert_eq!(s.interval, None);
    assert_eq!(
        with_prefix(&s, "temp."),
        [("temp.cpu-thermal", 45.277, unit::DEG_C)]
    );
    assert_eq!(
        with_prefix(&s, "hwmon."),
        [("hwmon.cpu_thermal.temp1", 45.764, unit::DEG_C)]
    );
    for n in 0..4 {
        let r = s.reading(&format!("freq.cpu{n}")).expect("freq");
        assert_eq!((r.value, r.unit), (1_500_000.0, unit::KHZ));
    }
    assert_eq!(s.state("governor.cpu0"), Some("ondemand"));
    assert_eq!(s.state("governor.cpu3"), Some("performance"));
    // 0x50005: under-voltage now and since boot, throttled now and since boot.
    let flags: Vec<(&str, f64)> = with_prefix(&s, "rpi.")
        .into_iter()
        .map(|(m, v, u)| {
            assert_eq!(u, unit::FLAG);
            (m, v)
        })
        .collect();
    assert_eq!(
        flags,
        [
            ("rpi.under_voltage", 1.0),
            ("rpi.freq_capped", 0.0),
            ("rpi.throttled", 1.0),
            ("rpi.soft_temp_limit", 0.0),
            ("rpi.under_voltage_occurred", 1.0),
            ("rpi.freq_capped_occurred", 0.0),
            ("rpi.throttled_occurred", 1.0),
            ("rpi.soft_temp_limit_occurred", 0.0),
        ]
    );
    assert_eq!(s.state("rpi.get_throttled"), Some("0x50005"));
    assert_eq!(val(&s, "load.1m"), 0.52);
    assert_eq!(val(&s, "load.15m"), 0.59);
    assert_eq!(val(&s, "tasks.total"), 187.0);
    assert_eq!(val(&s, "procs.running"), 2.0);
    assert_eq!(val(&s, "mem.total"), 3_884_324.0 * 1024.0);
    assert_eq!(val(&s, "mem.available"), 3_516_852.0 * 1024.0);
    assert_eq!(s.reading("mem.total").map(|r| r.unit), Some(unit::BYTES));
    assert!(s
        .readings
        .iter()
        .all(|r| !r.metric.contains("_rate") && !r.metric.starts_with("cpu_busy")));
    assert!(s.top.is_empty());
}

/// The lines that 2 s of a run change, as (file, new line).
const NEW_LINES: [(&str, &str); 12] = [
    (
        "proc/interrupts",
        " 27: 1853623 923315 745802 1203004 GICv2 30 Level arch_timer",
    ),
    (
        "proc/interrupts",
        " 39: 342120 0 0 0   GICv2  73 Level     dwc_otg",
    ),
    (
        "proc/interrupts",
        "IPI2: 41382 63210 58123 49931 Rescheduling interrupts",
    ),
    ("proc/softirqs", "  TIMER: 287410 201337 184462 98110"),
    (
        "proc/stat",
        "cpu  184392 310 71229 5033391 9210 0 11855 0 0 0",
    ),
    ("proc/stat", "cpu0 52360 80 20137 1230211 3100 0 9936 0 0 0"),
    ("proc/stat", "cpu1 45211 70 17820 1262255 2010 0 801 0 0 0"),
    ("proc/stat", "cpu2 43921 90 16902 1266600 2200 0 712 0 0 0"),
    ("proc/stat", "cpu3 42900 70 16370 1274325 1900 0 406 0 0 0"),
    ("proc/stat", "ctxt 9231873"),
    ("proc/stat", "intr 3928234 0 0 0"),
    ("proc/stat", "processes 41235"),
];

/// Threads' new (pid, tid, utime, stime) after 2 s.
const NEW_TICKS: [(u32, u32, u64, u64); 5] = [
    (160, 160, 0, 1583), // irq/39-dwc_otg: +60 ticks
    (12, 12, 0, 1213),   // ksoftirqd/0: +10
    (13, 13, 0, 863),    // rcu_preempt: +1
    (812, 815, 2400, 3), // rtscope-rt3: +200
    (812, 813, 4, 11),   // rtscope-mon: +2
];

/// Rewrites the fixture's counters as 2 s of a run would change them.
fn advance_two_seconds(root: &std::path::Path) {
    for (file, line) in NEW_LINES {
        set_line(root, file, line);
    }
    for (pid, tid, utime, stime) in NEW_TICKS {
        set_task_ticks(root, pid, tid, utime, stime);
    }
    // A thread started during the interval: all of its 4 ticks are in it.
    let mon = fs::read_to_string(root.join("proc/812/task/813/stat")).expect("read");
    let born = mon.replacen("813 (rtscope-mon)", "816 (rtscope-io)", 1);
    write(root, "proc/812/task/816/stat", &born);
    set_task_fields(root, 812, 816, &[(14, 4), (15, 0), (22, 41100)]);
    // bash (977) exited and its PID went to a new `sleep` that used 6 ticks.
    let bash = fs::read_to_string(root.join("proc/977/task/977/stat")).expect("read");
    write(
        root,
        "proc/977/task/977/stat",
        &bash.replacen("(bash)", "(sleep)", 1),
    );
    set_task_fields(root, 977, 977, &[(14, 6), (15, 0), (22, 41150)]);
}

/// Samples the fixture at 1 s, advances it by 2 s and returns the sample at 3 s.
fn sample_after_two_seconds(test: &str) -> Sample {
    let root = scratch_copy("rpi4", test);
    let mut m = Monitor::new(&root).expect("monitor");
    m.sample(Duration::from_secs(1));
    advance_two_seconds(&root);
    let s = m.sample(Duration::from_secs(3));
    assert_eq!(s.interval, Some(Duration::from_secs(2)));
    s
}

fn per_s(s: &Sample, metric: &str) -> f64 {
    let r = s.reading(metric).unwrap_or_else(|| panic!("no {metric}"));
    assert_eq!(r.unit, unit::PER_SECOND, "{metric}");
    r.value
}

#[test]
fn two_samples_give_exact_rates() {
    let s = sample_after_two_seconds("rpi4-rates");
    assert_eq!(per_s(&s, "irq_rate.39 dwc_otg.cpu0"), 4000.0);
    assert_eq!(per_s(&s, "irq_rate.39 dwc_otg.cpu1"), 0.0);
    let arch: Vec<f64> = (0..4)
        .map(|c| per_s(&s, &format!("irq_rate.27 arch_timer.cpu{c}")))
        .collect();
    assert_eq!(arch, [250.0, 100.0, 100.0, 1000.0]);
    assert_eq!(per_s(&s, "irq_rate.IPI2.cpu3"), 50.0);
    for quiet in [
        "33 fe00b880.mailbox",
        "42 DMA IRQ",
        "50 mmc1, mmc0",
        "58 xhci_hcd",
    ] {
        assert_eq!(per_s(&s, &format!("irq_rate.{quiet}.cpu0")), 0.0);
    }
    assert_eq!(per_s(&s, "irq_rate.Err.all"), 0.0);
    // 22 per-CPU lines x 4 CPUs + the one system-wide Err count.
    assert_eq!(with_prefix(&s, "irq_rate.").len(), 22 * 4 + 1);
    let timer: Vec<f64> = (0..4)
        .map(|c| per_s(&s, &format!("softirq_rate.TIMER.cpu{c}")))
        .collect();
    assert_eq!(timer, [250.0, 100.0, 100.0, 1000.0]);
    assert_eq!(with_prefix(&s, "softirq_rate.").len(), 10 * 4);

    assert_eq!(per_s(&s, "ctxt_rate"), 10_000.0);
    assert_eq!(per_s(&s, "intr_rate"), 5_000.0);
    assert_eq!(per_s(&s, "fork_rate"), 1.0);
    assert_eq!(
        with_prefix(&s, "cpu_busy."),
        [
            ("cpu_busy.all", 40.0, unit::PERCENT),
            ("cpu_busy.cpu0", 50.0, unit::PERCENT),
            ("cpu_busy.cpu1", 0.0, unit::PERCENT),
            ("cpu_busy.cpu2", 10.0, unit::PERCENT),
            ("cpu_busy.cpu3", 100.0, unit::PERCENT),
        ]
    );
    // Levels are still there, unchanged.
    assert_eq!(val(&s, "temp.cpu-thermal"), 45.277);
    assert_eq!(s.state("rpi.get_throttled"), Some("0x50005"));
}

#[test]
fn two_samples_give_exact_thread_shares() {
    let s = sample_after_two_seconds("rpi4-shares");
    assert_eq!(
        top(&s),
        [
            ("rtscope-rt3", 100.0),
            ("irq/39-dwc_otg", 30.0),
            ("ksoftirqd/0", 5.0),
            ("sleep", 3.0),
            ("rtscope-io", 2.0),
            ("rtscope-mon", 1.0),
            ("rcu_preempt", 0.5),
        ]
    );
    assert_eq!(
        s.top[1],
        ThreadShare {
            pid: 160,
            tid: 160,
            comm: "irq/39-dwc_otg".to_owned(),
            cpu_percent: 30.0,
            last_cpu: 0,
            kernel_thread: true,
            own: false,
        }
    );
    let rt = &s.top[0];
    assert_eq!(
        (rt.pid, rt.tid, rt.last_cpu, rt.kernel_thread),
        (812, 815, 3, false)
    );
}

/// A thread is own when its process is the monitoring one or descends from it: with bash
/// (977) as the owner, its child `sleep` (978, parent 977) is own and rtscope (812, parent
/// 790) is another program's, though its threads are named `rtscope-*`.
#[test]
fn own_threads_are_the_owner_and_its_descendants() {
    let root = scratch_copy("rpi4", "rpi4-own");
    let mut m = Monitor::new(&root).expect("monitor").with_own_process(977);
    m.sample(Duration::from_secs(1));
    advance_two_seconds(&root);
    let s = m.sample(Duration::from_secs(3));
    let own: Vec<(&str, bool)> = s.top.iter().map(|t| (t.comm.as_str(), t.own)).collect();
    assert_eq!(
        own,
        [
            ("rtscope-rt3", false),
            ("irq/39-dwc_otg", false),
            ("ksoftirqd/0", false),
            ("sleep", true),
            ("rtscope-io", false),
            ("rtscope-mon", false),
            ("rcu_preempt", false),
        ]
    );
    let s = sample_after_two_seconds("rpi4-not-own");
    assert!(
        s.top.iter().all(|t| !t.own),
        "the test process is none of them"
    );
}

#[test]
fn top_n_and_non_increasing_time() {
    let root = scratch_copy("rpi4", "rpi4-topn");
    let mut m = Monitor::new(&root).expect("monitor").with_top_threads(3);
    m.sample(Duration::from_secs(1));
    advance_two_seconds(&root);
    let s = m.sample(Duration::from_secs(3));
    assert_eq!(
        top(&s),
        [
            ("rtscope-rt3", 100.0),
            ("irq/39-dwc_otg", 30.0),
            ("ksoftirqd/0", 5.0)
        ]
    );
    // The same instant again: no interval, so no rates and no shares, only levels.
    let again = m.sample(Duration::from_secs(3));
    assert_eq!(again.interval, None);
    assert!(with_prefix(&again, "irq_rate.").is_empty());
    assert!(again.top.is_empty());
    assert_eq!(val(&again, "load.5m"), 0.58);
    // Nothing changed since: every rate is zero and no thread used CPU time.
    let later = m.sample(Duration::from_secs(4));
    assert!(with_prefix(&later, "irq_rate.").iter().all(|r| r.1 == 0.0));
    assert_eq!(val(&later, "ctxt_rate"), 0.0);
    assert!(later.top.is_empty());
}

#[test]
fn housekeeping_excludes_the_isolated_cpu() {
    assert_eq!(housekeeping_cpus(&fixture("rpi4")), [0, 1, 2]);
}

#[test]
fn a_short_interval_never_credits_a_thread_with_more_than_one_cpu() {
    let root = scratch_copy("rpi4", "rpi4-short");
    let mut m = Monitor::new(&root).expect("monitor");
    m.sample(Duration::from_secs(1));
    // Two seconds of ticks, but the monitor is told only 0.5 s passed (as a sample taken
    // right after the previous one sees with tick-quantised accounting).
    advance_two_seconds(&root);
    let s = m.sample(Duration::from_millis(1500));
    let rt = s.top.iter().find(|t| t.comm == "rtscope-rt3").unwrap();
    assert_eq!(rt.cpu_percent, 100.0);
    assert!(s.top.iter().all(|t| t.cpu_percent <= 100.0), "{:?}", s.top);
    let irq = s.top.iter().find(|t| t.comm == "irq/39-dwc_otg").unwrap();
    assert_eq!(
        irq.cpu_percent, 100.0,
        "30 % over 2 s is 120 % of 0.5 s, capped"
    );
}
