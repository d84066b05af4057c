//! The hostile suite for `rtscope noise` (issue 67 items 1, 2, 5, 6): a database locked by
//! another process for seconds waited out by the default (explained) run; a SIGKILL in the
//! run's set-up (the trace, the pre-heat) leaving an `incomplete` run; a SIGTERM in the
//! analysis of the gaps after the loops ending it promptly, the run kept as `interrupted`;
//! the largest `--gap-capacity` under a memory limit refused with exit 2 instead of an abort;
//! `measure --explain` waiting out the same lock the same way.
//! Each case runs the built binary and waits for the state it needs by polling the database
//! or the command's stderr; the only bounds on time are hang guards, never assertions.

use crate::hostile_support as support;

use std::io::BufRead;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;
use support::*;

/// The longest the analysis of the gaps runs after the loops (docs/noise.md): the hang guard
/// of a SIGTERM in it is this plus a margin for the trace's teardown on a loaded machine.
const ANALYSIS_BOUND: Duration = Duration::from_secs(30);

/// The run of `db` as `rtscope runs --json` lists it (`id`), its status as read back.
fn listed(db: &Path, id: u64) -> serde_json::Value {
    let out = rtscope(&["runs", "--db", db.to_str().unwrap(), "--json"]);
    assert_eq!(code(&out), 0, "{:?}", texts(&out));
    let list: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let runs = list.as_array().cloned().unwrap_or_default();
    runs.into_iter()
        .find(|r| r["id"].as_u64() == Some(id))
        .unwrap_or_else(|| panic!("no run {id} in {list}"))
}

/// A database with one short run in it (its schema made, so that opening it needs no lock).
fn made_db(case: &str) -> std::path::PathBuf {
    let db = scratch(case).join("n.db");
    let o = rtscope(&[
        "noise",
        "-q",
        "--no-mlock",
        "--cpus",
        "0",
        "-D",
        "0.2s",
        "--explain",
        "off",
        "--db",
        db.to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 0, "{:?}", texts(&o));
    db
}

/// Item 1: another process holds the database's write lock for 12 s from before the run
/// starts; noise with its default `--explain` waits it out, says so, and records the run
/// (before: exit 2, "database is locked", no run, while `--explain off` happened to miss the
/// lock).
#[test]
fn noise_with_its_default_explain_waits_out_a_locked_database() {
    rtscope_testkit::require_ok!(crate::explain::traceable());
    let db = made_db("noise-locked");
    let dbs = db.to_str().unwrap();
    let locker = Locker::hold(&db, Duration::from_secs(12));
    let o = rtscope(&["noise", "-q", "--no-mlock", "-D", "1s", "--db", dbs]);
    locker.join();
    let (out, err) = texts(&o);
    assert_eq!(code(&o), 0, "{out}{err}");
    assert!(
        err.contains("is locked by another process: waiting for it"),
        "{err}"
    );
    assert!(!err.contains("database is locked"), "{err}");
    assert!(out.contains("recorded as run 2"), "{out}");
    assert_eq!(listed(&db, 2)["status"], "complete");
}

/// Item 2: the run's row is written before the trace's set-up and the loops' pre-heat (its
/// settings say `set_up: false` until the loops start): a SIGKILL there leaves an
/// `incomplete` run. A 2 s pre-heat keeps the set-up long enough for the kill to land in it.
/// `measure --explain` waits out the same lock the same way (one path, `lock_wait`): its row
/// was written with SQLite's 5 s wait and the run failed with "database is locked".
#[test]
fn measure_with_explain_waits_out_a_locked_database_like_noise() {
    rtscope_testkit::require_ok!(crate::explain::traceable());
    let db = made_db("measure-locked");
    let dbs = db.to_str().unwrap();
    let locker = Locker::hold(&db, Duration::from_secs(12));
    let o = rtscope(&[
        "measure",
        "-q",
        "--no-mlock",
        "-D",
        "1s",
        "--cpus",
        "0",
        "--explain",
        "100us",
        "--db",
        dbs,
    ]);
    locker.join();
    let (out, err) = texts(&o);
    assert_eq!(code(&o), 0, "{out}{err}");
    assert!(
        err.contains("is locked by another process: waiting for it"),
        "{err}"
    );
    assert!(!err.contains("database is locked"), "{err}");
    assert_eq!(listed(&db, 2)["status"], "complete", "{out}{err}");
}

#[test]
fn a_sigkill_in_noise_set_up_leaves_an_incomplete_run() {
    rtscope_testkit::require_ok!(crate::explain::traceable());
    let dir = scratch("noise-setup-kill");
    let db = dir.join("n.db");
    let dbs = db.to_str().unwrap();
    let args = [
        "noise",
        "-q",
        "--no-mlock",
        "--cpus",
        "0",
        "-D",
        "3s",
        "--preheat",
        "2s",
        "--db",
        dbs,
    ];
    let (child, mut reaper) = spawn(&args);
    wait_for(
        &db,
        "SELECT count(*) FROM runs WHERE config LIKE '%\"set_up\":false%'",
    );
    kill(child.id(), libc::SIGKILL);
    let o = wait_output(child, Duration::from_secs(60), "noise killed in its set-up");
    reaper.disarm();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(o.status.signal(), Some(libc::SIGKILL), "{:?}", texts(&o));
    let run = listed(&db, 1);
    assert_eq!(run["status"], "incomplete", "{run}");
    assert_eq!(run["kind"], "noise", "{run}");
}

/// Item 5: a SIGTERM while the gaps are analysed after the loops (deferred: every CPU is
/// measured, so there is no housekeeping CPU to analyse them during the run) stops the
/// analysis: the process ends within the analysis's bound (a hang guard), exit 3, the cut
/// said, the run kept as `interrupted`.
#[test]
fn a_sigterm_in_the_analysis_after_the_loops_ends_noise_with_its_run_interrupted() {
    rtscope_testkit::require_ok!(crate::explain::traceable());
    let _rt = rtscope_testkit::rt_lock();
    let dir = scratch("noise-analysis-term");
    let (db, json) = (dir.join("n.db"), dir.join("n.json"));
    let (dbs, jsons) = (db.to_str().unwrap(), json.to_str().unwrap());
    let mut child = Command::new(exe())
        .args([
            "noise",
            "--no-mlock",
            "-D",
            "2s",
            "--db",
            dbs,
            "--json",
            jsons,
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut reaper = Reaper::new(child.id());
    let stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut seen = Vec::new();
    // The line the analysis starts with; stderr ends with the process (the hang guard).
    for line in stderr.lines() {
        let line = line.unwrap();
        let started = line.contains("the loops ended; attributing");
        seen.push(line);
        if started {
            kill(child.id(), libc::SIGTERM);
            break;
        }
    }
    assert!(
        seen.last()
            .is_some_and(|l| l.contains("SIGINT or SIGTERM stops it")),
        "no analysis announced: {seen:?}"
    );
    let pid = child.id();
    // A hang guard: beside CI's CPU hog the end (the analysis cut, then the trace's teardown,
    // unbounded then) took more than the bound + 20 s (28 Nov 2026); the teardown is bounded
    // now (the reader's stop, the instance's removal, else left to the reaper and said).
    let o = wait_output(
        child,
        ANALYSIS_BOUND + Duration::from_secs(150),
        "SIGTERM in the analysis",
    );
    reaper.disarm();
    let (out, err) = texts(&o);
    assert_eq!(code(&o), 3, "{out}{err}");
    // The trace's instance is gone once rtscope has exited: removed by rtscope, or, when its
    // end left it behind (said on stderr with its path), by the reaper at the exit.
    let left = instances_of(pid);
    assert!(
        left.is_empty() || wait_gone(pid),
        "instances left behind: {left:?}\n{err}"
    );
    if !left.is_empty() || err.contains("was left behind") {
        assert!(
            err.contains("the reaper removes it when rtscope exits"),
            "{err}"
        );
    }
    assert!(out.contains("interrupted by SIGTERM"), "{out}");
    assert!(
        out.contains("the analysis of the gaps was stopped by SIGTERM"),
        "{out}"
    );
    let run = listed(&db, 1);
    assert_eq!(run["status"], "interrupted", "{run}");
    assert_eq!(query(&db, "SELECT exit_code FROM runs WHERE id = 1"), "3");
    // The JSON says the same: the cut, its gaps and those not attributed.
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let cut = &doc["explain_cut"];
    assert_eq!(cut["by"], "SIGTERM", "{cut}");
    let (gaps, left) = (cut["gaps"].as_u64(), cut["not_attributed"].as_u64());
    assert!(
        matches!((gaps, left), (Some(g), Some(l)) if l <= g && g > 0),
        "{cut}"
    );
    assert_eq!(doc["interrupted"], "SIGTERM", "{doc}");
}

/// The tracefs instances of rtscope process `pid` (`rtscope-PID-N`) that still exist.
fn instances_of(pid: u32) -> Vec<String> {
    let prefix = format!("rtscope-{pid}-");
    [
        "/sys/kernel/tracing/instances",
        "/sys/kernel/debug/tracing/instances",
    ]
    .iter()
    .filter_map(|d| std::fs::read_dir(d).ok())
    .flat_map(|d| d.filter_map(|e| e.ok()))
    .map(|e| e.file_name().to_string_lossy().into_owned())
    .filter(|n| n.starts_with(&prefix))
    .collect()
}

/// Waits until the reaper of `pid` has removed its instances; false after a hang guard.
fn wait_gone(pid: u32) -> bool {
    let end = std::time::Instant::now() + Duration::from_secs(60);
    while std::time::Instant::now() < end {
        if instances_of(pid).is_empty() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    false
}

/// Item 6: the documented largest `--gap-capacity` under a 300 MB address-space limit (the
/// issue's 600 MB with its two CPUs; one CPU here, so that the test needs only CPU 0): its
/// ring (384 MiB) cannot be allocated; refused with exit 2 naming the setting and the
/// way out, no run kept (before: "memory allocation of … bytes failed", abort, exit 134).
#[test]
fn the_largest_gap_capacity_under_a_memory_limit_is_refused_not_aborted() {
    rtscope_testkit::require_root!("noise's loops at their default settings");
    let dir = scratch("noise-ulimit");
    let db = dir.join("n.db");
    let script = format!(
        "ulimit -v 300000; exec {} noise -q --cpus 0 --gap-capacity 16777216 --explain off -D 0.5s --db {}",
        exe(),
        db.display()
    );
    let o = bash(&script);
    let (out, err) = texts(&o);
    assert_eq!(code(&o), 2, "{out}{err}");
    assert!(
        err.contains("cannot allocate the gap ring of CPU 0")
            && err.contains("--gap-capacity 16777216 is 384 MiB per CPU")
            && err.contains("hint: lower --gap-capacity"),
        "{err}"
    );
    assert!(!err.contains("memory allocation of"), "{err}");
    assert_eq!(
        query(&db, "SELECT count(*) FROM runs"),
        "0",
        "refused before it ran"
    );
}
