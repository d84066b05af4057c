//! rtscope's own threads during a run: the control thread (ring drain, checkpoints, series
//! points) and the monitor thread run at SCHED_FIFO 1 below the measuring threads by default,
//! `--housekeeping-prio` changes or turns it off, nothing they start inherits it, and what was
//! applied and their cadence gaps are stored with the run. Structure only: no time is asserted.

use crate::common;

use serde_json::Value;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_rtscope");

fn env_of(db: &Path) -> Value {
    common::show_last(db)["environment"].clone()
}

/// (policy, rt priority) of a thread from /proc/PID/task/TID/stat (fields 41 and 40).
fn sched_of(stat: &str) -> (u64, u64) {
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = after.split_whitespace().collect();
    // `after` starts at field 3 (state): field N is f[N - 3].
    (f[41 - 3].parse().unwrap(), f[40 - 3].parse().unwrap())
}

/// The scheduling of each named thread of `pid`, sampled while it runs.
fn threads_of(pid: u32) -> Vec<(String, (u64, u64))> {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|t| {
            let comm = std::fs::read_to_string(t.path().join("comm")).ok()?;
            let stat = std::fs::read_to_string(t.path().join("stat")).ok()?;
            Some((comm.trim().to_string(), sched_of(&stat)))
        })
        .collect()
}

#[test]
fn housekeeping_threads_run_at_fifo_1_below_the_measuring_threads_and_their_cadence_is_stored() {
    let _rt = common::rt_lock();
    let dir = common::fresh_dir("housekeeping");
    let db = dir.join("h.db");
    let mut child = Command::new(BIN)
        .args(["measure", "-D", "3s", "-i", "1ms", "-p", "80", "--db"])
        .arg(&db)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Sample the threads until the monitor thread shows up (it starts with the recording).
    let start = Instant::now();
    let mut seen = Vec::new();
    while start.elapsed() < Duration::from_secs(20) && child.try_wait().unwrap().is_none() {
        seen = threads_of(child.id());
        if seen.iter().any(|(c, _)| c == "rtscope-monitor") {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(child.wait().unwrap().code(), Some(0));
    const FIFO: u64 = 1;
    let get = |name: &str| seen.iter().find(|(c, _)| c == name).map(|t| t.1);
    assert_eq!(get("rtscope-monitor"), Some((FIFO, 1)), "{seen:?}");
    assert_eq!(
        get("rtscope"),
        Some((FIFO, 1)),
        "the control thread: {seen:?}"
    );
    assert_eq!(get("rtscope-m0"), Some((FIFO, 80)), "{seen:?}");

    let env = env_of(&db);
    assert_eq!(env["rtscope.housekeeping"], "fifo 1", "{env}");
    for key in ["rtscope.cadence.control", "rtscope.cadence.monitor"] {
        let v = env[key].as_str().unwrap_or_else(|| panic!("{key}: {env}"));
        let field = |k: &str| -> u64 {
            let f = v
                .split_whitespace()
                .find_map(|f| f.strip_prefix(k))
                .unwrap();
            f.trim_start_matches('=').parse().unwrap()
        };
        assert!(field("periods") >= 1, "{key}: {v}");
        assert!(field("late") <= field("periods"), "{key}: {v}");
        assert!(v.ends_with("period=1s"), "{key}: {v}");
    }
}

#[test]
fn housekeeping_prio_off_or_a_non_real_time_run_keeps_them_sched_other() {
    let _rt = common::rt_lock();
    let dir = common::fresh_dir("housekeeping-off");
    for (extra, want) in [
        (
            &["--housekeeping-prio", "off"][..],
            "other (--housekeeping-prio off)",
        ),
        (
            &["--policy", "other", "-p", "0"][..],
            "other (a measuring thread is not real-time above it)",
        ),
        (
            &["-p", "5", "--housekeeping-prio", "5"][..],
            "other (a measuring thread is not real-time above it)",
        ),
    ] {
        let db = dir.join(format!("{}.db", extra.join("_")));
        let mut args = vec![
            "measure",
            "-D",
            "1s",
            "-i",
            "1ms",
            "--db",
            db.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let o = common::run(BIN, &args);
        assert_eq!(o.status.code(), Some(0), "{extra:?}: {}", common::dump(&o));
        assert_eq!(env_of(&db)["rtscope.housekeeping"], want, "{extra:?}");
    }
    let o = common::run(BIN, &["measure", "-D", "1s", "--housekeeping-prio", "0"]);
    assert_eq!(o.status.code(), Some(2), "{}", common::dump(&o));
}
