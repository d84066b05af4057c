//! The hostile suite for `rtscope respond` (issue 67: "a killed or interrupted run of any
//! command is kept at every phase"): the run's row is written when the measurement starts and
//! checkpointed while it runs, so a SIGKILL leaves an `incomplete` run that `runs show` and
//! `report` read, with the figures its checkpoints kept; a SIGINT ends it with exit 3 and the run
//! `interrupted`; a run left alone still ends `complete`, under the id its row got at the start.
//! Each case polls the database for the state it needs; the only bounds on time are hang
//! guards, never assertions.

use crate::hostile_support as support;

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::time::Duration;
use support::*;

/// The hang guard of one respond case (a debug build beside CI's jobs).
const BOUND: Duration = Duration::from_secs(120);

/// Starts `respond --ipc eventfd --policy other -D LENGTH -q --db DB`.
fn start(db: &Path, length: &str) -> (std::process::Child, Reaper) {
    spawn(&[
        "respond",
        "--ipc",
        "eventfd",
        "--policy",
        "other",
        "-D",
        length,
        "-q",
        "--db",
        db.to_str().unwrap(),
    ])
}

/// `runs show ID --json` of `db`, which must exit 0.
fn shown(db: &Path, id: u64) -> serde_json::Value {
    let o = rtscope(&[
        "runs",
        "--db",
        db.to_str().unwrap(),
        "show",
        &id.to_string(),
        "--json",
    ]);
    assert_eq!(code(&o), 0, "{:?}", texts(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// Waits (polling) until the respond run's row holds samples: measuring, checkpointed.
fn wait_measuring(db: &Path) {
    wait_for(db, "SELECT count(*) FROM threads WHERE samples > 0");
}

/// A SIGKILL while respond measures leaves its run, read back as `incomplete`, with the
/// samples its checkpoints wrote; `runs show` and `report` read it.
#[test]
fn a_sigkilled_respond_leaves_an_incomplete_run_that_runs_show_and_report_read() {
    let dir = scratch("respond-kill");
    let db = dir.join("s.db");
    let (child, mut reaper) = start(&db, "60s");
    wait_measuring(&db);
    kill(child.id(), libc::SIGKILL);
    let o = wait_output(child, BOUND, "respond killed while measuring");
    reaper.disarm();
    assert_eq!(o.status.signal(), Some(libc::SIGKILL), "{:?}", texts(&o));
    assert_eq!(query(&db, "SELECT count(*) FROM runs"), "1");
    let run = shown(&db, 1);
    assert_eq!(run["status"], "incomplete", "{run}");
    assert_eq!(run["kind"], "respond", "{run}");
    assert!(run["samples"].as_u64().unwrap_or(0) > 0, "{run}");
    assert!(run["measured_ns"].as_u64().unwrap_or(0) > 0, "{run}");
    let out = dir.join("report");
    let r = rtscope(&[
        "report",
        "1",
        "--db",
        db.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code(&r), 0, "{:?}", texts(&r));
    // The report's row of the run holds the samples its checkpoints kept.
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    let samples = run["samples"].as_u64().unwrap();
    assert!(
        summary.contains(&format!("| all | {samples} |")),
        "{samples} samples in {summary}"
    );
}

/// A SIGINT while respond measures ends it with exit 3, the run (the row of its start, id 1)
/// kept as `interrupted` with its figures.
#[test]
fn a_sigint_ends_respond_with_exit_3_and_the_run_interrupted() {
    let dir = scratch("respond-int");
    let db = dir.join("s.db");
    let (child, mut reaper) = start(&db, "60s");
    wait_measuring(&db);
    kill(child.id(), libc::SIGINT);
    let o = wait_output(child, BOUND, "respond interrupted while measuring");
    reaper.disarm();
    assert_eq!(code(&o), 3, "{:?}", texts(&o));
    assert_eq!(query(&db, "SELECT count(*) FROM runs"), "1");
    let run = shown(&db, 1);
    assert_eq!(run["status"], "interrupted", "{run}");
    assert_eq!(run["exit_code"], 3, "{run}");
    assert!(run["samples"].as_u64().unwrap_or(0) > 0, "{run}");
}

/// A respond run left alone ends `complete` with exit 0: one run, the id of the row written
/// at its start, its settings the front end's (the rows it measured).
#[test]
fn a_respond_run_left_alone_is_complete_under_the_id_of_its_start() {
    let dir = scratch("respond-whole");
    let db = dir.join("s.db");
    let (child, mut reaper) = start(&db, "1s");
    let o = wait_output(child, BOUND, "respond for 1 s");
    reaper.disarm();
    assert_eq!(code(&o), 0, "{:?}", texts(&o));
    assert_eq!(query(&db, "SELECT count(*) FROM runs"), "1");
    let run = shown(&db, 1);
    assert_eq!(run["status"], "complete", "{run}");
    assert_eq!(run["exit_code"], 0, "{run}");
    assert!(run["samples"].as_u64().unwrap_or(0) > 0, "{run}");
    let config = query(&db, "SELECT config FROM runs WHERE id = 1");
    let config: serde_json::Value = serde_json::from_str(&config).unwrap();
    assert_eq!(config["rows"].as_array().map(Vec::len), Some(1), "{config}");
}
