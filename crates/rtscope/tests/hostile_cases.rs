//! The hostile suite (issue 12), the cases the first two files left without a test: `run` on
//! a lost load supervisor, on SIGHUP and on a signal after its last run, an oversized campaign file, the work of late
//! wake-ups at the shortest interval, and escape sequences in `compare`'s output. No timing
//! assertions.

use crate::hostile_support as support;

use std::process::Command;
use std::time::Duration;
use support::*;

fn campaign(dir: &std::path::Path, duration: &str) -> std::path::PathBuf {
    campaign_file(dir, "c", duration, "")
}

/// Case 8: SIGHUP (an ssh session that drops) ends `rtscope run` like SIGINT: the run being
/// measured is saved as interrupted, the campaign says so and how to resume, exit 3.
#[test]
fn sighup_interrupts_a_campaign_like_sigint() {
    let dir = scratch("run-sighup");
    let db = dir.join("r.db");
    let file = campaign(&dir, "30s");
    let (child, mut reaper) = spawn(&["run", file.to_str().unwrap(), "--db", db.to_str().unwrap()]);
    let pid = child.id();
    wait_for(&db, "SELECT count(*) FROM runs");
    kill(pid, libc::SIGHUP);
    let out = wait_output(child, Duration::from_secs(60), "run under SIGHUP");
    reaper.disarm();
    let (stdout, stderr) = texts(&out);
    assert_eq!(code(&out), 3, "{stdout}\n{stderr}");
    assert_eq!(query(&db, "SELECT status FROM runs"), "interrupted");
    assert!(
        format!("{stdout}{stderr}").contains("--resume"),
        "the resume hint survives: {stdout}\n{stderr}"
    );
}

/// Case 7: a signal that arrives after the last run was measured (while its load is being
/// stopped) interrupts nothing: the run and the campaign are complete, exit 0. The load ignores
/// SIGTERM (so stopping it takes the grace period) and marks when it was asked to stop: the
/// signal is sent inside that window, whatever the machine's load.
#[test]
fn a_signal_after_the_last_run_leaves_the_campaign_complete() {
    let dir = scratch("late-campaign-signal");
    let db = dir.join("r.db");
    let mark = dir.join("stopping");
    let script = format!(
        "trap 'touch {}' TERM; while :; do sleep 0.05; done",
        mark.display()
    );
    let load = format!(
        "  [[load_case.load]]\n  kind = \"external\"\n  program = \"sh\"\n  args = [\"-c\", {script:?}]\n"
    );
    let file = campaign_file(&dir, "late", "300ms", &load);
    let (child, mut reaper) = spawn(&["run", file.to_str().unwrap(), "--db", db.to_str().unwrap()]);
    let pid = child.id();
    let t0 = std::time::Instant::now();
    while !mark.exists() && t0.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(mark.exists(), "the load was never asked to stop");
    kill(pid, libc::SIGINT);
    let out = wait_output(
        child,
        Duration::from_secs(60),
        "campaign signalled at its end",
    );
    reaper.disarm();
    let (stdout, stderr) = texts(&out);
    assert_eq!(code(&out), 0, "{stdout}\n{stderr}");
    assert_eq!(query(&db, "SELECT status FROM runs"), "complete");
    assert_eq!(query(&db, "SELECT status FROM campaigns"), "complete");
}

/// The child processes of `pid` (all its threads'), from /proc.
fn children(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .flatten()
    {
        let list = std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
        out.extend(
            list.split_whitespace()
                .filter_map(|p| p.parse::<u32>().ok()),
        );
    }
    out
}

/// Case 4: a campaign whose load supervisor is SIGKILLed during the measurement does not
/// report the run as measured under load: it is tagged, the campaign failed, exit 2.
#[test]
fn a_campaign_that_lost_its_load_supervisor_failed() {
    let dir = scratch("supervisor-killed");
    let db = dir.join("r.db");
    let load =
        "  [[load_case.load]]\n  kind = \"external\"\n  program = \"sleep\"\n  args = [\"60\"]\n";
    let file = campaign_file(&dir, "lost", "5s", load);
    let (child, mut reaper) = spawn(&["run", file.to_str().unwrap(), "--db", db.to_str().unwrap()]);
    let pid = child.id();
    wait_for(&db, "SELECT count(*) FROM runs");
    let shepherds = children(pid);
    assert!(
        !shepherds.is_empty(),
        "the load supervisor is a child of rtscope"
    );
    for s in shepherds {
        kill(s, libc::SIGKILL);
    }
    let out = wait_output(
        child,
        Duration::from_secs(60),
        "campaign without its supervisor",
    );
    reaper.disarm();
    let (stdout, stderr) = texts(&out);
    assert_eq!(code(&out), 2, "{stdout}\n{stderr}");
    assert!(stdout.contains("without its load"), "{stdout}");
    assert_eq!(
        query(&db, "SELECT value FROM tags WHERE key = 'load_failed'"),
        "sleep"
    );
    assert_eq!(query(&db, "SELECT status FROM campaigns"), "failed");
}

/// Case 12: a campaign file larger than the documented cap (1 MiB) is refused before it is
/// parsed, with the cap in the message.
#[test]
fn an_oversized_campaign_file_is_refused() {
    let dir = scratch("campaign-size");
    let file = campaign(&dir, "1s");
    let mut text = std::fs::read_to_string(&file).unwrap();
    text.push_str(&"# padding\n".repeat(120_000));
    std::fs::write(&file, text).unwrap();
    let out = rtscope(&["run", file.to_str().unwrap(), "--dry-run"]);
    let (_, stderr) = texts(&out);
    assert_eq!(code(&out), 2, "{stderr}");
    assert!(stderr.contains("larger than 1024 KiB"), "{stderr}");
}

/// Case 18: `/` is refused in campaign names as in scenario and load case names (run labels
/// are campaign/scenario/case/repeat), naming the rule.
#[test]
fn a_slash_is_refused_in_every_campaign_name() {
    let dir = scratch("campaign-slash");
    let file = campaign(&dir, "1s");
    let text = std::fs::read_to_string(&file).unwrap();
    for (from, to) in [
        ("name = \"c\"", "name = \"a/b\""),
        ("name = \"s\"", "name = \"s/t\""),
    ] {
        std::fs::write(&file, text.replace(from, to)).unwrap();
        let out = rtscope(&["run", file.to_str().unwrap(), "--dry-run"]);
        let (_, stderr) = texts(&out);
        assert_eq!(code(&out), 2, "{to}: {stderr}");
        assert!(stderr.contains("'/'"), "{to}: {stderr}");
    }
}

/// Case 13: at the shortest interval (1 µs) every wake-up is later than the next deadline;
/// each costs a bounded amount of work (the passed deadlines are counted, not visited), so
/// the run ends on its grid: wake-ups plus missed deadlines are exactly its deadlines.
#[test]
fn late_wake_ups_at_the_shortest_interval_do_bounded_work() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    let dir = scratch("late-work");
    let db = dir.join("r.db");
    let mut args = measure_args(db.to_str().unwrap(), &["-i", "1us", "-D", "1s"]);
    args[4] = "2"; // threads
    let out = rtscope(&args);
    assert_eq!(code(&out), 0, "{:?}", texts(&out));
    let rows = query(&db, "SELECT samples, missed FROM threads ORDER BY thread");
    for row in rows.lines() {
        let v: Vec<u64> = row.split('|').map(|x| x.parse().unwrap()).collect();
        assert_eq!(v[0] + v[1], 1_000_000, "1 s of 1 µs deadlines: {row}");
        assert!(v[1] > 0, "a 1 µs grid is missed on any machine: {row}");
    }
}

/// Case 16: escape sequences in labels reach `compare`'s terminal output escaped.
#[test]
fn compare_escapes_hostile_labels() {
    let dir = scratch("compare-escape");
    let db = dir.join("r.db");
    let dbs = db.to_str().unwrap();
    // Two synthetic runs written through the real store: what compare prints of them is under
    // test, not a measurement (so no root).
    let mut store = rtscope_store::Store::open(&db).unwrap();
    for seed in [1, 2] {
        let spec = rtscope_testkit::synthetic::SyntheticRun {
            samples: 2_000,
            seed,
            ..Default::default()
        };
        rtscope_testkit::synthetic::write_run(&mut store, &spec).unwrap();
    }
    drop(store);
    let o = Command::new("sqlite3")
        .arg(&db)
        .arg("UPDATE runs SET label = 'x' || char(27) || ']0;pwned' || char(7) || char(10) || id")
        .output()
        .unwrap();
    assert!(o.status.success());
    let out = rtscope(&["compare", "1", "2", "--db", dbs, "--no-fail"]);
    let (stdout, stderr) = texts(&out);
    assert_eq!(code(&out), 0, "{stdout}\n{stderr}");
    for text in [&stdout, &stderr] {
        assert!(
            !text.contains('\x1b') && !text.contains('\x07'),
            "raw control characters: {text:?}"
        );
    }
}
