//! `rtscope noise` names causes by default, as the kernel's `osnoise top` counts them by
//! default: without `--explain` it explains every gap from the gap threshold (at least 5 µs)
//! where tracefs is usable, and where it is not it says why and how to fix it.

use crate::explain::{culprit, traceable};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

#[test]
fn noise_without_flags_names_the_injected_culprit() {
    rtscope_testkit::require_ok!(traceable());
    let _rt = rtscope_testkit::rt_lock();
    let cpu = std::thread::available_parallelism().unwrap().get() - 1;
    let stop = Arc::new(AtomicBool::new(false));
    let c = culprit(cpu, stop.clone());
    let o = Command::new(env!("CARGO_BIN_EXE_rtscope"))
        .args(["noise", "-D", "3s", "--cpus", &cpu.to_string(), "--no-db"])
        .output()
        .unwrap();
    stop.store(true, Ordering::Relaxed);
    c.join().unwrap();
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    assert!(err.contains("explaining gaps: tier "), "{err}");
    assert!(
        out.contains("What took the CPU in the longest gaps?") && out.contains("thread culprit:"),
        "{out}"
    );
}

#[test]
fn noise_where_tracefs_cannot_be_used_says_explain_is_off_and_the_fix() {
    let Some(mut hidden) = crate::explain_all_cpus::without_tracefs() else {
        return;
    };
    let _rt = rtscope_testkit::rt_lock();
    let o = hidden
        .args(["noise", "-D", "1s", "--cpus", "0", "--no-db"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(
        err.contains("explain: off — tracefs unavailable")
            && err.contains("fix: mount -t tracefs nodev /sys/kernel/tracing"),
        "{err}"
    );
    // With `--explain off` nothing is said: the user chose it.
    let quiet = Command::new(env!("CARGO_BIN_EXE_rtscope"))
        .args([
            "noise",
            "-D",
            "1s",
            "--cpus",
            "0",
            "--no-db",
            "--explain",
            "off",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&quiet.stderr);
    assert_eq!(quiet.status.code(), Some(0), "{err}");
    assert!(!err.contains("explain"), "{err}");
}
