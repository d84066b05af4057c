//! The x86 laptop fixture: several thermal zones (two `acpitz`, x86_pkg_temp, a Wi-Fi zone
//! that reads nothing), coretemp/nvme/old-style hwmon chips, intel_pstate on 8 CPUs,
//! thermal_throttle counters, IO-APIC and PCI-MSI interrupts with spaces in their names.

mod common;

use common::*;
use rtscope_monitor::{housekeeping_cpus, unit, Monitor};
use std::fs;
use std::time::Duration;

#[test]
fn availability_reports_the_missing_firmware_flags() {
    assert_availability(
        "x86-laptop",
        &[
            "thermal: available (7 thermal zones)",
            "hwmon: available (11 hwmon temperatures)",
            "cpufreq: available (16 cpufreq files)",
            "cpu_throttle: available (9 throttle counters)",
            "rpi_throttled: unavailable (no /sys/devices/platform/soc/soc:firmware/get_throttled \
             (not a Raspberry Pi))",
            "interrupts: available (41 sources)",
        ],
    );
}

#[test]
fn temperatures_frequencies_and_throttling() {
    let mut m = Monitor::new(&fixture("x86-laptop")).expect("monitor");
    let s = m.sample(Duration::from_secs(10));
    let names = |prefix: &str| -> Vec<(String, f64)> {
        with_prefix(&s, prefix)
            .into_iter()
            .map(|(m, v, u)| {
                assert_eq!(u, unit::DEG_C, "{m}");
                (m.to_owned(), v)
            })
            .collect()
    };
    // The two acpitz zones are told apart by directory; iwlwifi_1 reads nothing and is skipped.
    let want: Vec<(String, f64)> = [
        ("temp.acpitz.zone0", 54.0),
        ("temp.INT3400 Thermal", 20.0),
        ("temp.SEN1", 45.05),
        ("temp.TCPU", 56.0),
        ("temp.x86_pkg_temp", 57.0),
        ("temp.acpitz.zone6", 27.8),
    ]
    .map(|(m, v)| (m.to_owned(), v))
    .into();
    assert_eq!(names("temp."), want);
    let want: Vec<(String, f64)> = [
        ("hwmon.acpitz.temp1", 54.0),
        ("hwmon.nvme.Composite", 38.85),
        ("hwmon.nvme.Sensor 1", 38.85),
        ("hwmon.nvme.Sensor 2", 41.85),
        ("hwmon.coretemp.Package id 0", 57.0),
        ("hwmon.coretemp.Core 0", 55.0),
        ("hwmon.coretemp.Core 1", 56.0),
        ("hwmon.coretemp.Core 2", 54.0),
        ("hwmon.coretemp.Core 3", 57.0),
        ("hwmon.thinkpad.temp1", 54.0),
    ]
    .map(|(m, v)| (m.to_owned(), v))
    .into();
    assert_eq!(names("hwmon."), want);

    let freqs: Vec<f64> = (0..8).map(|c| val(&s, &format!("freq.cpu{c}"))).collect();
    assert_eq!(
        freqs,
        [1800073.0, 799987.0, 2300104.0, 800021.0, 3400000.0, 799999.0, 1600019.0, 2100333.0]
    );
    assert_eq!(s.state("governor.cpu0"), Some("powersave"));
    assert_eq!(s.state("governor.cpu4"), Some("performance"));
    assert_eq!(
        s.states
            .iter()
            .filter(|(m, _)| m.starts_with("governor."))
            .count(),
        8
    );

    let core: Vec<f64> = (0..8)
        .map(|c| val(&s, &format!("throttle.core_count.cpu{c}")))
        .collect();
    assert_eq!(core, [12.0, 0.0, 3.0, 0.0, 12.0, 0.0, 3.0, 0.0]);
    let pkg = s
        .reading("throttle.package_count.pkg0")
        .expect("package count");
    assert_eq!((pkg.value, pkg.unit), (47.0, unit::EVENTS));
    assert_eq!(
        with_prefix(&s, "throttle.").len(),
        9,
        "one package count, not eight"
    );
    assert!(with_prefix(&s, "rpi.").is_empty());
    assert_eq!(val(&s, "procs.blocked"), 1.0);
    assert_eq!(val(&s, "mem.available"), 10_772_096.0 * 1024.0);
}

const MSI: &str = "IR-PCI-MSI";

/// The lines that half a second changes, as (file, new line).
const NEW_LINES: [(&str, &str); 9] = [
    ("proc/interrupts", "137: 0 0 274 0 0 0 0 0 IR-PCI-MSI 2097152-edge iwlwifi: default queue"),
    ("proc/interrupts", "138: 0 0 0 42022 0 0 0 0 IR-PCI-MSI 2097153-edge iwlwifi: queue 1"),
    ("proc/interrupts", "125: 0 0 0 0 0 0 0 285230 IR-PCI-MSI 32768-edge  i915"),
    ("proc/interrupts", "LOC: 4821502 3998620 4102831 3877654 3712535 3602615 3722448 3490734 Local timer interrupts"),
    ("proc/interrupts", "ERR:          1"),
    ("proc/softirqs", "  NET_RX: 52410 1302 880 41193 3310 702 611 530"),
    ("proc/stat", "cpu  2203123 8334 704381 24583965 62025 0 19107 0 0 0"),
    ("proc/stat", "cpu7 257145 955 83302 3100546 6933 0 1588 0 0 0"),
    ("proc/stat", "ctxt 188218774"),
];

/// Threads' new (pid, tid, utime, stime) after half a second.
const NEW_TICKS: [(u32, u32, u64, u64); 4] = [
    (3310, 3342, 20236, 3301),  // Isolated Web Co: +25 ticks
    (2244, 2244, 88130, 21033), // gnome-shell: +10
    (171, 171, 0, 924),         // irq/137-iwlwifi: +3
    (4012, 4012, 0, 79),        // kworker/u16:2-events_unbound: +2
];

fn advance_half_a_second(root: &std::path::Path) {
    for (file, line) in NEW_LINES {
        set_line(root, file, line);
    }
    // A driver loaded (a new queue appears mid-table) and an IRQ was freed.
    let queue3 = format!("147: 0 0 0 5 0 0 0 0 {MSI} 2097162-edge  iwlwifi: queue 3");
    insert_line(root, "proc/interrupts", "138:", &queue3);
    remove_line(root, "proc/interrupts", "146:");
    for (pid, tid, utime, stime) in NEW_TICKS {
        set_task_ticks(root, pid, tid, utime, stime);
    }
    fs::remove_dir_all(root.join("proc/3355")).expect("Web Content exits");
    // PID 21 was ksoftirqd/1 (a kernel thread, read without listing its task directory);
    // now it is a two-threaded compiler: the monitor must notice and list the threads.
    let ks = fs::read_to_string(root.join("proc/21/task/21/stat")).expect("read");
    fs::remove_dir_all(root.join("proc/21")).expect("ksoftirqd/1 gone");
    let cc1 = ks.replacen("(ksoftirqd/1)", "(cc1)", 1);
    write(root, "proc/21/task/21/stat", &cc1);
    write(
        root,
        "proc/21/task/25/stat",
        &cc1.replacen("21 (cc1)", "25 (cc1)", 1),
    );
    set_task_fields(root, 21, 21, &[(9, 4194304), (14, 8), (15, 0), (22, 99000)]);
    set_task_fields(root, 21, 25, &[(9, 4194304), (14, 1), (15, 0), (22, 99001)]);
}

#[test]
fn rates_follow_sources_by_name_as_lines_come_and_go() {
    let root = scratch_copy("x86-laptop", "x86-rates");
    let mut m = Monitor::new(&root).expect("monitor");
    m.sample(Duration::from_secs(10));
    advance_half_a_second(&root);
    let s = m.sample(Duration::from_millis(10_500));
    assert_eq!(s.interval, Some(Duration::from_millis(500)));

    assert_eq!(val(&s, "irq_rate.137 iwlwifi: default queue.cpu2"), 200.0);
    assert_eq!(val(&s, "irq_rate.137 iwlwifi: default queue.cpu3"), 0.0);
    assert_eq!(val(&s, "irq_rate.138 iwlwifi: queue 1.cpu3"), 200.0);
    assert_eq!(val(&s, "irq_rate.125 i915.cpu7"), 120.0);
    assert_eq!(val(&s, "irq_rate.0 timer.cpu0"), 0.0);
    assert_eq!(val(&s, "irq_rate.9 acpi.cpu1"), 0.0);
    assert_eq!(val(&s, "irq_rate.14 INT34BB:00.cpu0"), 0.0);
    assert_eq!(val(&s, "irq_rate.127 nvme0q0.cpu5"), 0.0);
    assert_eq!(val(&s, "irq_rate.1 i8042.cpu5"), 0.0);
    assert_eq!(val(&s, "irq_rate.12 i8042.cpu7"), 0.0);
    let loc: Vec<f64> = (0..8)
        .map(|c| val(&s, &format!("irq_rate.LOC.cpu{c}")))
        .collect();
    assert_eq!(
        loc,
        [250.0, 1000.0, 1000.0, 1000.0, 1000.0, 1000.0, 1000.0, 1000.0]
    );
    assert_eq!(val(&s, "irq_rate.ERR.all"), 2.0);
    assert_eq!(val(&s, "irq_rate.MIS.all"), 0.0);
    // New and vanished sources have no rate; 38 per-CPU sources x 8 + ERR + MIS remain.
    assert!(s.value("irq_rate.147 iwlwifi: queue 3.cpu3").is_none());
    assert!(s.value("irq_rate.146 iwlwifi: exception.cpu7").is_none());
    assert_eq!(with_prefix(&s, "irq_rate.").len(), 38 * 8 + 2);

    assert_eq!(val(&s, "softirq_rate.NET_RX.cpu0"), 600.0);
    assert_eq!(val(&s, "softirq_rate.NET_RX.cpu3"), 200.0);
    assert_eq!(val(&s, "softirq_rate.TIMER.cpu0"), 0.0);
    assert_eq!(val(&s, "ctxt_rate"), 10_000.0);
    // Only CPU 7's jiffies moved in this hand-made interval; CPUs with none have no share.
    assert_eq!(
        with_prefix(&s, "cpu_busy."),
        [
            ("cpu_busy.all", 50.0, unit::PERCENT),
            ("cpu_busy.cpu7", 50.0, unit::PERCENT)
        ]
    );

    assert_eq!(
        top(&s),
        [
            ("Isolated Web Co", 50.0),
            ("gnome-shell", 20.0),
            ("cc1", 16.0),
            ("irq/137-iwlwifi", 6.0),
            ("kworker/u16:2-events_unbound", 4.0),
            ("cc1", 2.0),
        ]
    );
    assert_eq!(
        (s.top[2].pid, s.top[2].tid, s.top[2].kernel_thread),
        (21, 21, false)
    );
    assert_eq!((s.top[5].pid, s.top[5].tid), (21, 25));
    let web = &s.top[0];
    assert_eq!(
        (web.pid, web.tid, web.last_cpu, web.kernel_thread),
        (3310, 3342, 4, false)
    );
    assert!(s.top[3].kernel_thread && s.top[4].kernel_thread);
}

#[test]
fn every_online_cpu_is_housekeeping_without_isolation() {
    // isolated is empty and nohz_full reads "(null)".
    assert_eq!(
        housekeeping_cpus(&fixture("x86-laptop")),
        (0..8).collect::<Vec<u32>>()
    );
}
