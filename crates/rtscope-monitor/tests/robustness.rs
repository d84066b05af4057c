//! Missing and malformed sources: unavailable or skipped, never an error or a panic.

mod common;

use common::*;
use rtscope_monitor::{Monitor, MonitorError};
use std::fs;
use std::path::Path;
use std::time::Duration;

#[test]
fn a_monitor_can_move_to_its_sampling_thread() {
    fn assert_send<T: Send + 'static>() {}
    assert_send::<Monitor>();
    assert_send::<rtscope_monitor::Sample>();
    let mut m = Monitor::new(&fixture("rpi4")).expect("monitor");
    let s = std::thread::spawn(move || m.sample(Duration::from_secs(1)))
        .join()
        .expect("sampling thread");
    assert!(s.value("temp.cpu-thermal").is_some());
}

#[test]
fn a_missing_root_is_the_only_error() {
    let err = Monitor::new(Path::new("/nonexistent/rtscope-monitor-root"))
        .err()
        .expect("error");
    assert!(matches!(err, MonitorError::NotADirectory { .. }));
    assert_eq!(
        err.to_string(),
        "monitor root /nonexistent/rtscope-monitor-root is not a directory"
    );
}

#[test]
fn an_empty_root_has_every_source_unavailable() {
    let root = scratch_dir("empty-root");
    let mut m = Monitor::new(&root).expect("monitor");
    let lines: Vec<String> = m.availability().iter().map(|s| s.to_string()).collect();
    assert_eq!(
        lines,
        [
            "thermal: unavailable (no /sys/class/thermal/thermal_zone*)",
            "hwmon: unavailable (no /sys/class/hwmon/hwmon*/temp*_input)",
            "cpufreq: unavailable (no /sys/devices/system/cpu/cpu*/cpufreq)",
            "cpu_throttle: unavailable (no /sys/devices/system/cpu/cpu*/thermal_throttle (x86 only))",
            "rpi_throttled: unavailable (no /sys/devices/platform/soc/soc:firmware/get_throttled (not a Raspberry Pi))",
            "interrupts: unavailable (no /proc/interrupts)",
            "softirqs: unavailable (no /proc/softirqs)",
            "stat: unavailable (no /proc/stat)",
            "loadavg: unavailable (no /proc/loadavg)",
            "meminfo: unavailable (no /proc/meminfo)",
            "threads: unavailable (no /proc/<pid>/task directories)",
        ]
    );
    for t in 1..=2 {
        let s = m.sample(Duration::from_secs(t));
        assert!(s.readings.is_empty() && s.states.is_empty() && s.top.is_empty());
    }
    assert!(m.availability().iter().all(|s| !s.available));
}

/// Rewrites a file's bytes.
type Corrupt = fn(&[u8]) -> Vec<u8>;

/// Every way a file is rewritten to break it.
fn corruptions() -> Vec<(&'static str, Corrupt)> {
    vec![
        ("empty", |_| Vec::new()),
        ("half", |b| b[..b.len() / 2].to_vec()),
        ("letters", |b| {
            b.iter()
                .map(|&c| if c.is_ascii_digit() { b'x' } else { c })
                .collect()
        }),
        ("not utf-8", |b| {
            let mut v = b.to_vec();
            v.splice(0..0, [0xff, 0xfe, 0x00]);
            v
        }),
        ("overflow", |b| {
            let s = String::from_utf8_lossy(b);
            s.replace('1', "99999999999999999999999").into_bytes()
        }),
        ("negative", |b| {
            let s = String::from_utf8_lossy(b);
            s.replace(' ', " -").replace("\n", "\n-").into_bytes()
        }),
        ("no newlines", |b| {
            b.iter()
                .map(|&c| if c == b'\n' { b' ' } else { c })
                .collect()
        }),
    ]
}

/// Rewrites every file of the copy `dst` as `f` of the same file in the pristine tree `src`.
fn corrupt_tree(src: &Path, dst: &Path, f: Corrupt) {
    for e in fs::read_dir(src).expect("read dir") {
        let e = e.expect("entry");
        let to = dst.join(e.file_name());
        if e.file_type().expect("type").is_dir() {
            corrupt_tree(&e.path(), &to, f);
        } else {
            let b = fs::read(e.path()).expect("read");
            fs::write(&to, f(&b)).expect("write");
        }
    }
}

#[test]
fn malformed_files_are_skipped_never_a_panic() {
    for fixture_name in ["rpi4", "x86-laptop"] {
        let root = scratch_copy(fixture_name, &format!("corrupt-{fixture_name}"));
        for (what, f) in corruptions() {
            // Discovered while healthy, then every file breaks between samples.
            corrupt_tree(&fixture(fixture_name), &root, |b| b.to_vec());
            let mut m = Monitor::new(&root).expect("monitor");
            m.sample(Duration::from_secs(1));
            corrupt_tree(&fixture(fixture_name), &root, f);
            for t in 2..=3 {
                let s = m.sample(Duration::from_secs(t));
                for r in &s.readings {
                    assert!(r.value.is_finite(), "{fixture_name}/{what}: {r:?}");
                }
                for t in &s.top {
                    assert!(t.cpu_percent.is_finite() && t.cpu_percent > 0.0);
                }
            }
            // Discovered while broken: nothing panics either.
            let mut broken = Monitor::new(&root).expect("monitor");
            broken.sample(Duration::from_secs(1));
            broken.sample(Duration::from_secs(2));
        }
    }
}

#[test]
fn a_proc_source_that_breaks_is_reported_and_recovers() {
    let root = scratch_copy("rpi4", "recovers");
    let mut m = Monitor::new(&root).expect("monitor");
    m.sample(Duration::from_secs(1));
    let good = fs::read(root.join("proc/stat")).expect("read");
    write(&root, "proc/stat", "garbage\n");
    fs::remove_file(root.join("proc/interrupts")).expect("rm");
    let s = m.sample(Duration::from_secs(2));
    assert!(s.value("ctxt_rate").is_none());
    assert!(s.value("load.1m").is_some(), "other sources are unaffected");
    let status = |m: &Monitor, src: &str| {
        m.availability()
            .into_iter()
            .find(|s| s.source == src)
            .expect("source")
            .to_string()
    };
    assert_eq!(
        status(&m, "stat"),
        "stat: unavailable (/proc/stat unreadable or malformed)"
    );
    assert_eq!(
        status(&m, "interrupts"),
        "interrupts: unavailable (/proc/interrupts unreadable or has no CPU header)"
    );
    fs::write(root.join("proc/stat"), good).expect("restore");
    let s = m.sample(Duration::from_secs(3));
    assert!(
        s.value("ctxt_rate").is_none(),
        "no rate across the broken sample"
    );
    assert_eq!(status(&m, "stat"), "stat: available (readable again)");
    let s = m.sample(Duration::from_secs(4));
    assert_eq!(s.value("ctxt_rate"), Some(0.0));
}
