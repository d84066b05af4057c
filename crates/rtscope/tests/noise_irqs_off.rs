//! `rtscope noise --irqs-off`, the hardware-only mode through the kernel's hwlat tracer, through
//! the real binary: the options of the user-space loop are refused with it (exit 2, nothing
//! recorded, before tracefs is touched), and on this machine's kernel the mode either runs —
//! a table labelled as the kernel's measurement, every tracer setting written back — or is
//! refused naming the kernel option it lacks. The QEMU guests run it on kernels that have the
//! tracer (tests/guest).

use crate::common::{dump, run, temp_path};

const BIN: &str = env!("CARGO_BIN_EXE_rtscope");

#[test]
fn options_of_the_user_space_loop_are_refused_with_irqs_off() {
    let db = temp_path("noise-irqs-off-bad.db");
    let _ = std::fs::remove_file(&db);
    for (flag, value) in [
        ("--explain", Some("20us")),
        ("--counter", Some("raw")),
        ("--policy", Some("fifo")),
        ("--priority", Some("5")),
        ("--limit", Some("available=99%")),
    ] {
        let mut args = vec!["noise", "-q", "--irqs-off", "-D", "1s", "--db"];
        args.push(db.to_str().unwrap());
        args.push(flag);
        args.extend(value);
        let o = run(BIN, &args);
        assert_eq!(o.status.code(), Some(2), "{flag}: {}", dump(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(flag.trim_start_matches("--")), "{flag}: {err}");
        assert!(err.contains("hint:"), "{flag}: {err}");
        assert!(!db.exists(), "{flag} created the database");
    }
}

/// The top-level tracer's settings, to compare before and after.
fn tracer_settings() -> Vec<(String, String)> {
    let root = std::path::Path::new("/sys/kernel/tracing");
    [
        "current_tracer",
        "tracing_thresh",
        "tracing_cpumask",
        "hwlat_detector/mode",
        "hwlat_detector/width",
        "hwlat_detector/window",
    ]
    .iter()
    .map(|f| {
        let v = std::fs::read_to_string(root.join(f)).unwrap_or_else(|e| format!("({e})"));
        (f.to_string(), v)
    })
    .collect()
}

#[test]
fn irqs_off_runs_the_kernels_tracer_or_names_the_option_the_kernel_lacks() {
    rtscope_testkit::require_root!("the hwlat tracer is driven through tracefs");
    let db = temp_path("noise-irqs-off.db");
    let _ = std::fs::remove_file(&db);
    let before = tracer_settings();
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let cpu = (cpus - 1).to_string();
    let o = run(
        BIN,
        &[
            "noise",
            "-q",
            "--irqs-off",
            "--cpus",
            &cpu,
            "-D",
            "1500ms",
            "--runtime",
            "100ms",
            "--period",
            "500ms",
            "--db",
            db.to_str().unwrap(),
        ],
    );
    let (err, text) = (
        String::from_utf8_lossy(&o.stderr),
        String::from_utf8_lossy(&o.stdout),
    );
    let has_hwlat = std::fs::read_to_string("/sys/kernel/tracing/available_tracers")
        .is_ok_and(|t| t.split_whitespace().any(|t| t == "hwlat"));
    if has_hwlat {
        assert_eq!(o.status.code(), Some(0), "{}", dump(&o));
        assert!(
            text.contains("measured by the kernel's hwlat tracer"),
            "{text}"
        );
        assert!(text.contains("100000 us of every 500000 us"), "{text}");
    } else {
        assert_eq!(o.status.code(), Some(2), "{}", dump(&o));
        assert!(err.contains("CONFIG_HWLAT_TRACER"), "{err}");
    }
    assert!(!db.exists(), "an --irqs-off run is not recorded");
    assert_eq!(
        tracer_settings(),
        before,
        "the tracer's settings were not written back"
    );
}
