//! Issue 26 N2: SIGINT and SIGTERM end a run at once whatever its interval — the measuring
//! threads asleep to a deadline a minute or an hour away are woken — and the run is recorded
//! as interrupted; intervals beyond the longest allowed (1 hour) are refused with the range.
//!
//! The 20 s bound below is a liveness bound, not a latency assertion: before the fix, the
//! threads slept to their deadline (60 s, 1 hour) before the run could end.

use crate::common;
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const LIVENESS: Duration = Duration::from_secs(20);

/// Whether process `pid` has measuring threads (`rtscope-m…`, respond's `rtscope-tx`) with
/// their real-time policy.
fn measuring(pid: u32) -> bool {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return false;
    };
    let threads: Vec<u32> = tasks
        .flatten()
        .filter_map(|t| {
            let stat = std::fs::read_to_string(t.path().join("stat")).ok()?;
            let (head, rest) = stat.rsplit_once(") ")?;
            let name = head.split_once(" (")?.1;
            // measure's and cyclictest's threads, respond's sender.
            (name.starts_with("rtscope-m") || name.starts_with("rtscope-tx")).then_some(())?;
            // The policy is field 41 of stat, the 39th after "(comm) ".
            rest.split_whitespace().nth(38)?.parse().ok()
        })
        .collect();
    !threads.is_empty() && threads.iter().all(|&p| p != 0)
}

/// Runs `rtscope ARGS`, sends `signal` once its threads measure (asleep to their first
/// deadline), and returns the exit code; panics if it outlives [`LIVENESS`] after the signal.
fn stop_with(args: &[&str], signal: i32) -> Option<i32> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_rtscope"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start rtscope");
    let pid = child.id();
    let t0 = Instant::now();
    while !measuring(pid) && child.try_wait().unwrap().is_none() {
        assert!(t0.elapsed() < Duration::from_secs(60), "never measured");
        std::thread::sleep(Duration::from_millis(5));
    }
    // Into the sleep toward the first deadline.
    std::thread::sleep(Duration::from_millis(200));
    // SAFETY: kill with the child's pid and a valid signal number.
    unsafe { libc::kill(pid as i32, signal) };
    let sent = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status.code();
        }
        if sent.elapsed() > LIVENESS {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "`rtscope {}` still ran {LIVENESS:?} after signal {signal}",
                args.join(" ")
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn last_run(db: &Path) -> Value {
    common::show_last(db)
}

#[test]
fn a_signal_ends_measure_at_a_60s_interval_at_once_recorded_as_interrupted() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    let _rt = common::rt_lock();
    for (signal, name) in [(libc::SIGINT, "SIGINT"), (libc::SIGTERM, "SIGTERM")] {
        let db = common::temp_path(&format!("wake-measure-{name}.db"));
        let _ = std::fs::remove_file(&db);
        let d = db.to_str().unwrap();
        let code = stop_with(
            &["measure", "-q", "-i", "60s", "-D", "10m", "--db", d],
            signal,
        );
        // rtscope measure: exit 3 for an interrupted run (docs/measurement.md).
        assert_eq!(code, Some(3), "{name}");
        let r = last_run(&db);
        assert_eq!(r["status"], "interrupted", "{name}: {r}");
        assert_eq!(
            r["samples"], 0,
            "{name}: the cut-short sleep is no sample: {r}"
        );
    }
}

#[test]
fn a_signal_ends_cyclictest_at_an_hour_interval_at_once_recorded_as_interrupted() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    let _rt = common::rt_lock();
    for (signal, name) in [(libc::SIGTERM, "SIGTERM"), (libc::SIGINT, "SIGINT")] {
        let db = common::temp_path(&format!("wake-cyclictest-{name}.db"));
        let _ = std::fs::remove_file(&db);
        let d = format!("--db={}", db.display());
        // The longest interval allowed: one hour (`-i 99999999999` is refused, see below).
        let args = [
            "cyclictest",
            "-q",
            "-m",
            "-p80",
            "-i",
            "3600000000",
            "-l2",
            &d,
        ];
        let code = stop_with(&args, signal);
        // Like cyclictest, a signal ends `rtscope cyclictest` with exit 0
        // (docs/cyclictest-differences.md); the store says it was interrupted.
        assert_eq!(code, Some(0), "{name}");
        let r = last_run(&db);
        assert_eq!(r["status"], "interrupted", "{name}: {r}");
        assert_eq!(r["samples"], 0, "{name}: {r}");
    }
}

#[test]
fn intervals_beyond_an_hour_are_refused_with_the_range_and_exit_2() {
    for (args, needle) in [
        (
            &["cyclictest", "-q", "-i", "99999999999", "-l2"][..],
            "invalid value '99999999999' for '-i': use 1..3600000000 (microseconds, at most 1 hour)",
        ),
        (
            &["cyclictest", "-q", "-t2", "-i", "1000", "-d", "3600000000"][..],
            "-i + (threads - 1) x -d must be at most 3600000000",
        ),
        (
            &["measure", "-q", "-i", "61m"][..],
            "invalid value '3660s' for '--interval': a thread's interval must be 1us..3600s (1 hour)",
        ),
    ] {
        let o = common::run(env!("CARGO_BIN_EXE_rtscope"), args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}

/// `rtscope respond` as well: its sender (and, with handshake pacing, its receiver) slept to
/// the end of a 30 s interval before a stop was seen.
#[test]
fn a_signal_ends_respond_at_a_30s_interval_at_once_recorded_as_interrupted() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    let _rt = common::rt_lock();
    for pacing in ["timer", "handshake"] {
        let dir = common::fresh_dir(&format!("stop-wake-respond-{pacing}"));
        let db = dir.join("r.db");
        let args = [
            "respond",
            "--ipc",
            "futex",
            "--pacing",
            pacing,
            "--interval",
            "30s",
            "-D",
            "10m",
            "-q",
            "--db",
            db.to_str().unwrap(),
        ];
        assert_eq!(stop_with(&args, libc::SIGINT), Some(3), "{pacing}");
        assert_eq!(last_run(&db)["status"], "interrupted", "{pacing}");
    }
    // The same longest interval as measure's: 5 h gave a `complete` run of no event.
    let o = common::run(
        env!("CARGO_BIN_EXE_rtscope"),
        &[
            "respond",
            "--ipc",
            "futex",
            "--interval",
            "5h",
            "-D",
            "1s",
            "--no-db",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", common::dump(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("(1 hour)"));
}
