//! The hostile suite (issue 12): rtscope attacked as a hostile tester would — signals in the
//! end-of-run window, closed pipes, unwritable outputs, zero-length runs, hostile names. Each
//! case runs the built binary; none asserts an absolute time a loaded machine could break.
//! Runs use SCHED_OTHER (no real-time lock needed) and no monitors, to stay short.

use crate::hostile_support as support;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;
use support::*;

fn late_signal_keeps_the_run(case: &str, sig: i32) {
    let dir = scratch(case);
    let db = dir.join("r.db");
    let dbs = db.to_str().unwrap();
    let (child, mut reaper) = spawn(&measure_args(dbs, &["-D", "1s"]));
    let pid = child.id();
    wait_for(&db, "SELECT count(*) FROM runs");
    // Another process holds the write lock across the end of the run: the last checkpoint
    // and the end wait for it; the signal comes in that window.
    let hold = Duration::from_secs(8);
    let locker = Locker::hold(&db, hold);
    // The signal comes once the measuring thread has ended (the run measured its whole 1 s),
    // while the end still waits for the lock: on a loaded machine a SCHED_OTHER thread can
    // take seconds longer than its run, and a signal before its end interrupts the run.
    measuring_done(pid, Duration::from_secs(7));
    kill(pid, sig);
    let out = wait_output(child, Duration::from_secs(60), case);
    reaper.disarm();
    locker.join();
    let (stdout, stderr) = texts(&out);
    assert_eq!(code(&out), 0, "{stdout}\n{stderr}");
    assert!(stdout.contains("recorded as run 1"), "{stdout}\n{stderr}");
    assert!(stdout.contains("all"), "the table is printed: {stdout}");
    assert_eq!(
        query(&db, "SELECT status FROM runs WHERE id = 1"),
        "complete"
    );
    assert_eq!(query(&db, "SELECT exit_code FROM runs WHERE id = 1"), "0");
    // The length is the run's, not the run plus the wait for the lock (held 3 s).
    let progress: u64 = query(&db, "SELECT progress_ns FROM runs WHERE id = 1")
        .parse()
        .unwrap();
    assert!(
        progress < hold.as_nanos() as u64 - 500_000_000,
        "length {progress} ns includes the wait for the lock"
    );
}

/// Waits (at most `limit`) until process `pid` has had measuring threads (`rtscope-m…`) and
/// has none left.
fn measuring_done(pid: u32, limit: Duration) {
    let measuring = || {
        std::fs::read_dir(format!("/proc/{pid}/task"))
            .map(|tasks| {
                tasks.flatten().any(|t| {
                    std::fs::read_to_string(t.path().join("comm"))
                        .is_ok_and(|c| c.starts_with("rtscope-m"))
                })
            })
            .unwrap_or(false)
    };
    let t0 = std::time::Instant::now();
    let mut seen = false;
    while t0.elapsed() < limit {
        let now = measuring();
        if seen && !now {
            return;
        }
        seen |= now;
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Case 1 and 7: SIGTERM while the end of a finished run waits for the database lock.
#[test]
fn late_sigterm_while_the_end_is_written_loses_nothing() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    late_signal_keeps_the_run("late-sigterm", libc::SIGTERM);
}

/// Case 1 and 8: SIGINT and SIGHUP in the same window.
#[test]
fn late_sigint_and_sighup_while_the_end_is_written_lose_nothing() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    late_signal_keeps_the_run("late-sigint", libc::SIGINT);
    late_signal_keeps_the_run("late-sighup", libc::SIGHUP);
}

/// Case 8: SIGHUP (an ssh session that drops) ends `measure` like SIGINT: table, record,
/// exit 3.
#[test]
fn sighup_interrupts_measure_like_sigint() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    let dir = scratch("sighup");
    let db = dir.join("r.db");
    let (child, mut reaper) = spawn(&measure_args(db.to_str().unwrap(), &["-D", "1h"]));
    wait_for(&db, "SELECT count(*) FROM runs");
    kill(child.id(), libc::SIGHUP);
    let out = wait_output(child, Duration::from_secs(30), "sighup");
    reaper.disarm();
    let (stdout, stderr) = texts(&out);
    assert_eq!(code(&out), 3, "{stdout}\n{stderr}");
    assert!(stdout.contains("interrupted by SIGHUP"), "{stdout}");
    assert_eq!(query(&db, "SELECT status FROM runs"), "interrupted");
    assert_eq!(query(&db, "SELECT exit_code FROM runs"), "3");
}

/// Case 2: a closed stdout never turns a failed gate into a pass nor leaves the run running.
#[test]
fn closed_stdout_keeps_the_failed_gate_and_the_record() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    let dir = scratch("pipe");
    let db = dir.join("r.db");
    let script = format!(
        "set -o pipefail; \"$RTSCOPE\" {} -l 300 --limit max=1ns | head -c 1 >/dev/null",
        measure_args(db.to_str().unwrap(), &[]).join(" ")
    );
    let out = bash(&script);
    assert_eq!(code(&out), 1, "{:?}", texts(&out));
    assert_eq!(query(&db, "SELECT status FROM runs"), "complete");
    assert_eq!(query(&db, "SELECT exit_code FROM runs"), "1");
}

/// Case 3: an output path that cannot be written is refused before measuring.
#[test]
fn unwritable_json_paths_are_refused_before_measuring() {
    let dir = scratch("json-refused");
    let db = dir.join("r.db");
    let dbs = db.to_str().unwrap();
    let missing = dir.join("missing/out.json");
    for path in [missing.to_str().unwrap(), dir.to_str().unwrap()] {
        let mut args = measure_args(dbs, &["-l", "10"]);
        args.extend(["--json", path]);
        let out = rtscope(&args);
        let (stdout, stderr) = texts(&out);
        assert_eq!(code(&out), 2, "{path}: {stdout}\n{stderr}");
        assert!(stderr.contains("--json"), "{stderr}");
        assert!(
            !stdout.contains("rtscope measure:"),
            "nothing measured: {stdout}"
        );
    }
    assert!(!db.exists() || query(&db, "SELECT count(*) FROM runs") == "0");
    assert_eq!(
        std::fs::read_dir(&dir).unwrap().count(),
        1 + usize::from(db.exists()) - 1
    );
}

/// Case 3 and 7: a JSON file that fails at the end: the table is printed, the run recorded
/// with the exit code rtscope returns (2).
#[test]
fn json_to_a_full_disk_prints_the_table_and_records_exit_2() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    let dir = scratch("json-full");
    let db = dir.join("r.db");
    let mut args = measure_args(db.to_str().unwrap(), &["-l", "50"]);
    args.extend(["--json", "/dev/full"]);
    let out = rtscope(&args);
    let (stdout, stderr) = texts(&out);
    assert_eq!(code(&out), 2, "{stdout}\n{stderr}");
    assert!(stdout.contains("all"), "the table: {stdout}");
    assert!(stderr.contains("/dev/full"), "{stderr}");
    assert_eq!(query(&db, "SELECT status FROM runs"), "complete");
    assert_eq!(query(&db, "SELECT exit_code FROM runs"), "2");
}

/// `--json -` is standard output: the document alone, the table on stderr.
#[test]
fn json_dash_is_standard_output() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    let dir = scratch("json-dash");
    let db = dir.join("r.db");
    let mut args = measure_args(db.to_str().unwrap(), &["-l", "20"]);
    args.extend(["--json", "-"]);
    let out = rtscope(&args);
    let (stdout, stderr) = texts(&out);
    assert_eq!(code(&out), 0, "{stderr}");
    let doc: serde_json::Value = serde_json::from_str(&stdout).expect("stdout is the JSON");
    assert_eq!(doc["total"]["samples"], 20);
    assert!(stderr.contains("recorded as run 1"), "{stderr}");
    assert!(!Path::new("-").exists());
}

/// Case 5: runs without a single sample are refused (exit 2), and a gate never passes on
/// zero samples.
#[test]
fn zero_sample_runs_are_refused() {
    let dir = scratch("zero");
    let db = dir.join("r.db");
    let dbs = db.to_str().unwrap();
    for length in [&["-l", "0"][..], &["-D", "0"], &["-i", "10ms", "-D", "5ms"]] {
        let out = rtscope(&measure_args(dbs, length));
        let (_, stderr) = texts(&out);
        assert_eq!(code(&out), 2, "{length:?}: {stderr}");
        assert!(stderr.contains("invalid value"), "{length:?}: {stderr}");
    }
    let out = rtscope(&["cyclictest", "-q", "-i", "10000", "-D", "5ms"]);
    assert_eq!(code(&out), 2, "cyclictest -i > -D: {:?}", texts(&out));
}

/// Case 13: an interval below 1 µs is refused.
#[test]
fn sub_microsecond_interval_is_refused() {
    let dir = scratch("tiny-interval");
    let db = dir.join("r.db");
    let out = rtscope(&measure_args(
        db.to_str().unwrap(),
        &["-i", "1ns", "-D", "3s"],
    ));
    let (_, stderr) = texts(&out);
    assert_eq!(code(&out), 2, "{stderr}");
    assert!(
        stderr.contains("--interval") && stderr.contains("1us"),
        "{stderr}"
    );
}

/// Case 6: a writer holding the database lock for longer than the busy timeout (8 s) stops
/// nothing: checkpoints wait in memory and are retried; every raw sample is recorded.
#[test]
fn a_long_lock_loses_no_checkpoint_and_no_raw_sample() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    let dir = scratch("long-lock");
    let db = dir.join("r.db");
    let (child, mut reaper) = spawn(&measure_args(db.to_str().unwrap(), &["-D", "3s", "--raw"]));
    wait_for(&db, "SELECT count(*) FROM runs");
    let locker = Locker::hold(&db, Duration::from_secs(8));
    let out = wait_output(child, Duration::from_secs(90), "long lock");
    reaper.disarm();
    locker.join();
    let (stdout, stderr) = texts(&out);
    assert_eq!(code(&out), 0, "{stdout}\n{stderr}");
    assert!(stderr.contains("locked by another process"), "{stderr}");
    assert_eq!(query(&db, "SELECT status FROM runs"), "complete");
    let samples = query(&db, "SELECT samples FROM threads");
    let raw = query(&db, "SELECT sum(count) FROM samples");
    assert_eq!(raw, samples, "every raw sample recorded");
    assert_eq!(query(&db, "SELECT raw_dropped FROM threads"), "0");
}

fn as_nobody(args: &[&str]) -> std::process::Output {
    let child = crate::common::as_nobody()
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("setpriv (util-linux)");
    wait_output(child, Duration::from_secs(60), "as nobody")
}

/// Case 9: another program's SQLite file is refused before anything in it changes.
#[test]
fn another_programs_database_is_refused_untouched() {
    let dir = scratch("foreign-db");
    let db = dir.join("other.db");
    let o = Command::new("sqlite3")
        .arg(&db)
        .arg("CREATE TABLE t(x); INSERT INTO t VALUES (1);")
        .output()
        .unwrap();
    assert!(o.status.success());
    for args in [&["runs", "--db"][..], &["measure", "-l", "10", "--db"]] {
        let mut a = args.to_vec();
        a.push(db.to_str().unwrap());
        let out = rtscope(&a);
        let (_, stderr) = texts(&out);
        assert_eq!(code(&out), 2, "{args:?}: {stderr}");
        assert!(stderr.contains("another program"), "{stderr}");
        assert_eq!(query(&db, "PRAGMA journal_mode"), "delete", "{args:?}");
    }
}

/// Case 9: a database this user cannot write (read-only media, another user's directory) is
/// readable by runs, report and export, and left untouched.
#[test]
fn a_read_only_database_is_readable() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    let dir = scratch("ro-db");
    let db = dir.join("r.db");
    let out = rtscope(&measure_args(db.to_str().unwrap(), &["-l", "100"]));
    assert_eq!(code(&out), 0, "{:?}", texts(&out));
    let outdir = dir.join("out");
    std::fs::create_dir(&outdir).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&outdir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let before: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    let dbs = db.to_str().unwrap();
    let outs = outdir.to_str().unwrap();
    for args in [
        &["runs", "--db", dbs][..],
        &["runs", "show", "1", "--db", dbs],
        &["export", "1", "--db", dbs, "-o", outs],
        &["report", "1", "--db", dbs, "-o", &format!("{outs}/report")],
    ] {
        let out = as_nobody(args);
        let (stdout, stderr) = texts(&out);
        assert_eq!(code(&out), 0, "{args:?}: {stdout}\n{stderr}");
    }
    let after: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(before, after, "nothing created next to the database");
}

/// A one-run campaign (SCHED_OTHER, 300 ms) with one load case `LOAD` (TOML lines).
fn campaign(dir: &Path, name: &str, load: &str) -> std::path::PathBuf {
    campaign_file(dir, name, "300ms", load)
}

/// Case 4: a load that fails (an external program that exits 1 at once) leaves a run measured
/// without its load: tagged, the campaign failed, exit 2.
#[test]
fn a_campaign_whose_load_failed_is_not_complete() {
    let dir = scratch("load-failed");
    let db = dir.join("r.db");
    let file = campaign(
        &dir,
        "lf",
        "  [[load_case.load]]\n  kind = \"external\"\n  program = \"false\"\n",
    );
    let out = rtscope(&crate::common::campaign_run_args(&file, &db));
    let (stdout, stderr) = texts(&out);
    assert_eq!(code(&out), 2, "{stdout}\n{stderr}");
    assert!(stdout.contains("without its load"), "{stdout}");
    assert_eq!(
        query(&db, "SELECT value FROM tags WHERE key = 'load_failed'"),
        "false"
    );
    assert_eq!(query(&db, "SELECT status FROM campaigns"), "failed");
}

/// Case 4: an io load whose directory does not exist is refused before anything starts.
#[test]
fn an_io_load_with_a_missing_directory_is_refused_up_front() {
    let dir = scratch("io-missing");
    let db = dir.join("r.db");
    let file = campaign(
        &dir,
        "io",
        "  [[load_case.load]]\n  kind = \"io\"\n  dir = \"/nonexistent/rtscope\"\n",
    );
    let out = rtscope(&["run", file.to_str().unwrap(), "--db", db.to_str().unwrap()]);
    let (stdout, stderr) = texts(&out);
    assert_eq!(code(&out), 2, "{stdout}\n{stderr}");
    assert!(stderr.contains("/nonexistent/rtscope"), "{stderr}");
    assert!(!db.exists(), "nothing started");
}

/// A database with one short run, for the output cases.
fn one_run_db(case: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let dir = scratch(case);
    let db = dir.join("r.db");
    let out = rtscope(&measure_args(db.to_str().unwrap(), &["-l", "50"]));
    assert_eq!(code(&out), 0, "{:?}", texts(&out));
    (dir, db)
}

/// A database holding one synthetic run (id 1) written through the real store: no measurement,
/// so no root, for the tests of what the other commands do with a run.
fn synthetic_run_db(case: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let dir = scratch(case);
    let db = dir.join("r.db");
    let mut store = rtscope_store::Store::open(&db).unwrap();
    let spec = rtscope_testkit::synthetic::SyntheticRun {
        samples: 2_000,
        tags: Vec::new(),
        ..Default::default()
    };
    assert_eq!(
        rtscope_testkit::synthetic::write_run(&mut store, &spec).unwrap(),
        1
    );
    (dir, db)
}

fn sql(db: &Path, statement: &str) {
    let o = Command::new("sqlite3")
        .arg(db)
        .arg(statement)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// Case 10: a huge label is refused on input, and one already in a database never makes
/// `runs` panic.
#[test]
fn huge_labels_are_refused_and_never_panic_on_output() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    let (_dir, db) = one_run_db("huge-label");
    let dbs = db.to_str().unwrap();
    let huge = "x".repeat(70_000);
    let mut args = measure_args(dbs, &["-l", "10"]);
    args.extend(["--label", &huge]);
    let out = rtscope(&args);
    let (_, stderr) = texts(&out);
    assert_eq!(code(&out), 2);
    assert!(
        stderr.contains("--label") && stderr.len() < 1000,
        "{}",
        &stderr[..200]
    );
    sql(&db, "UPDATE runs SET label = printf('%.70000c', 'y')");
    let out = rtscope(&["runs", "--db", dbs]);
    assert_eq!(code(&out), 0, "{}", texts(&out).1);
    let out = rtscope(&["runs", "show", "1", "--db", dbs]);
    assert_eq!(code(&out), 0, "{}", texts(&out).1);
}

/// Cases 16 and 17: escape sequences and newlines in labels and tags reach no terminal raw,
/// and are refused on input.
#[test]
fn control_characters_are_escaped_on_output_and_refused_on_input() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    let (_dir, db) = one_run_db("escapes");
    let dbs = db.to_str().unwrap();
    sql(
        &db,
        "UPDATE runs SET label = 'a' || char(27) || ']0;pwned' || char(7) || char(10) || 'b' || char(13);\
         INSERT INTO tags VALUES (1, 'k', char(27) || '[2J');",
    );
    for args in [
        &["runs", "--db", dbs][..],
        &["runs", "show", "1", "--db", dbs],
    ] {
        let out = rtscope(args);
        let (stdout, stderr) = texts(&out);
        assert_eq!(code(&out), 0, "{stderr}");
        assert!(
            !stdout.contains('\x1b') && !stdout.contains('\x07') && !stdout.contains('\r'),
            "{args:?}: {stdout:?}"
        );
        assert!(stdout.contains("\\x1b]0;pwned"), "{stdout}");
    }
    let out = rtscope(&["runs", "--db", dbs]);
    let stdout = texts(&out).0;
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 4, "header, rule, one run, footnote: {lines:?}");
    let mut args = measure_args(dbs, &["-l", "10"]);
    args.extend(["--label", "a\x1b[2Jb"]);
    let out = rtscope(&args);
    assert_eq!(code(&out), 2, "{:?}", texts(&out));
    assert!(!texts(&out).1.contains('\x1b'));
}

/// Case 18: `runs tag` cannot move a run into another campaign.
#[test]
fn reserved_tags_are_refused_by_runs_tag() {
    let (_dir, db) = synthetic_run_db("reserved-tag");
    let out = rtscope(&[
        "runs",
        "tag",
        "1",
        "campaign=evil",
        "--db",
        db.to_str().unwrap(),
    ]);
    let (_, stderr) = texts(&out);
    assert_eq!(code(&out), 2, "{stderr}");
    assert!(stderr.contains("campaign"), "{stderr}");
    assert_eq!(query(&db, "SELECT count(*) FROM tags"), "0");
}

/// Case 17: NUL and escape sequences in a campaign name are refused with the position.
#[test]
fn control_characters_in_campaign_names_are_refused() {
    let dir = scratch("campaign-name");
    let file = campaign(&dir, "a\\u001b[2Jb", "");
    let out = rtscope(&["run", file.to_str().unwrap(), "--dry-run"]);
    let (stdout, stderr) = texts(&out);
    assert_eq!(code(&out), 2, "{stdout}\n{stderr}");
    assert!(
        !stderr.contains('\x1b') && !stdout.contains('\x1b'),
        "{stderr:?}"
    );
}

/// Case 15: symlinks planted in the output directory of `export` and `report` are refused
/// (issue 26: an output path that is a symlink is never written through nor replaced unless
/// --follow-symlinks), their targets never written.
#[test]
fn export_and_report_never_write_through_planted_symlinks() {
    let (dir, db) = synthetic_run_db("symlinks");
    let victim = dir.join("victim");
    std::fs::write(&victim, "precious").unwrap();
    let exp = dir.join("exp");
    let rep = dir.join("rep");
    std::fs::create_dir_all(&exp).unwrap();
    std::fs::create_dir_all(&rep).unwrap();
    for name in [
        "run-1-series.csv",
        ".run-1-series.csv.partial",
        "run-1-summary.json",
    ] {
        std::os::unix::fs::symlink(&victim, exp.join(name)).unwrap();
    }
    for name in ["report.html", "summary.txt", ".report.html.partial"] {
        std::os::unix::fs::symlink(&victim, rep.join(name)).unwrap();
    }
    let dbs = db.to_str().unwrap();
    let out = rtscope(&["export", "1", "--db", dbs, "-o", exp.to_str().unwrap()]);
    assert_eq!(code(&out), 2, "{:?}", texts(&out));
    assert!(texts(&out).1.contains("is a symlink"), "{:?}", texts(&out));
    let out = rtscope(&["report", "1", "--db", dbs, "-o", rep.to_str().unwrap()]);
    assert_eq!(code(&out), 2, "{:?}", texts(&out));
    assert!(texts(&out).1.contains("is a symlink"), "{:?}", texts(&out));
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    assert!(exp.join("run-1-series.csv").is_symlink());
    assert!(rep.join("report.html").is_symlink());
}

/// Exports run 1 of `db` into `exp` as `format`; it must exit 0.
fn export_ok(db: &str, exp: &Path, format: &str) {
    let out = rtscope(&[
        "export",
        "1",
        "--db",
        db,
        "-o",
        exp.to_str().unwrap(),
        "--format",
        format,
    ]);
    assert_eq!(code(&out), 0, "{:?}", texts(&out));
}

/// Case 17: control characters in a label make no invalid SVG, no raw ESC/BEL in the HTML,
/// and a label that looks like a formula gets a leading ' in CSV.
#[test]
fn hostile_labels_are_escaped_in_svg_html_and_csv() {
    let (dir, db) = synthetic_run_db("svg-html-csv");
    sql(
        &db,
        "UPDATE runs SET label = '=cmd|x' || char(27) || '[31m' || char(7) || char(0) || '<b>';",
    );
    let dbs = db.to_str().unwrap();
    let rep = dir.join("rep");
    let out = rtscope(&["report", "1", "--db", dbs, "-o", rep.to_str().unwrap()]);
    assert_eq!(code(&out), 0, "{:?}", texts(&out));
    for e in std::fs::read_dir(&rep).unwrap() {
        let p = e.unwrap().path();
        if matches!(p.extension().and_then(|x| x.to_str()), Some("svg" | "html")) {
            let body = std::fs::read(&p).unwrap();
            assert!(
                !body
                    .iter()
                    .any(|&b| b < 0x20 && !matches!(b, b'\n' | b'\r' | b'\t')),
                "{} holds a control character",
                p.display()
            );
        }
    }
    let exp = dir.join("exp");
    export_ok(dbs, &exp, "csv");
    let mut seen = false;
    for e in std::fs::read_dir(&exp).unwrap() {
        let body = std::fs::read_to_string(e.unwrap().path()).unwrap();
        for cell in body.split([',', '\n']) {
            let cell = cell.trim_start_matches('"');
            assert!(!cell.starts_with("=cmd"), "formula cell in {body}");
            seen |= cell.starts_with("'=cmd");
        }
    }
    assert!(seen, "the label is exported");
}

/// Case 14: a stderr that cannot be written (a full disk holding the log) is silence: errors
/// keep their exit code, runs still run and are recorded.
#[test]
fn a_failing_stderr_is_silence_not_a_panic() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    let dir = scratch("stderr-full");
    let db = dir.join("r.db");
    let args = measure_args(db.to_str().unwrap(), &["-l", "50", "--label", "x"]).join(" ");
    let out = bash(&format!(
        "\"$RTSCOPE\" {args} 2>/dev/full; echo \"exit $?\""
    ));
    assert!(texts(&out).0.contains("exit 0"), "{:?}", texts(&out));
    let out = bash("\"$RTSCOPE\" measure --interval nonsense 2>/dev/full; echo \"exit $?\"");
    assert!(texts(&out).0.contains("exit 2"), "{:?}", texts(&out));
    let out = bash("\"$RTSCOPE\" runs --db /nonexistent/x.db 2>/dev/full; echo \"exit $?\"");
    assert!(texts(&out).0.contains("exit 2"), "{:?}", texts(&out));
}

/// Case 11: huge counts are refused with their range, under a 2 GB address-space limit (an
/// allocation attempt would abort instead).
#[test]
fn huge_counts_are_refused_before_anything_is_allocated() {
    let dir = scratch("huge-counts");
    let db = dir.join("r.db");
    let file = campaign(&dir, "huge", "");
    let text = std::fs::read_to_string(&file)
        .unwrap()
        .replace("[measure]", "repeats = 90000000\n[measure]");
    std::fs::write(&file, text).unwrap();
    for (cmd, want) in [
        (
            format!(
                "{} --event-capacity 100000000000 -l 10",
                measure_args(db.to_str().unwrap(), &[]).join(" ")
            ),
            "--event-capacity",
        ),
        (
            "cyclictest -q -l 10 --spike=100 --spike-nodes=100000000000".to_string(),
            "--spike-nodes",
        ),
        ("cyclictest -q -l 10 -h 99999999999".to_string(), "-h"),
        (format!("run {} --dry-run", file.display()), "at most"),
    ] {
        let out = bash(&format!("ulimit -v 2000000; \"$RTSCOPE\" {cmd}"));
        let (_, stderr) = texts(&out);
        assert_eq!(code(&out), 2, "{cmd}: {stderr}");
        assert!(stderr.contains(want), "{cmd}: {stderr}");
    }
}

/// Case 12: FIFOs, /dev/zero, /dev/stdin and /proc files are refused (or read) with a correct
/// message, never waited on or read until memory runs out; a long bad line is quoted short.
#[test]
fn non_regular_files_are_refused_and_errors_quote_little() {
    let dir = scratch("non-regular");
    let fifo = dir.join("fifo");
    let o = Command::new("mkfifo").arg(&fifo).output().unwrap();
    assert!(o.status.success());
    let db = dir.join("r.db");
    let dbs = db.to_str().unwrap();
    let f = fifo.to_str().unwrap();
    for (args, want) in [
        (vec!["run", f, "--dry-run"], "not a regular file"),
        (vec!["run", "/dev/zero", "--dry-run"], "not a regular file"),
        (vec!["import", f, "--db", dbs], "not a regular file"),
        (
            vec!["import", "/dev/stdin", "--db", dbs],
            "not a regular file",
        ),
        (
            vec!["import", "/proc/self/status", "--db", dbs],
            "unrecognised",
        ),
    ] {
        let out = bash(&format!(
            "ulimit -v 2000000; \"$RTSCOPE\" {} </dev/zero",
            args.join(" ")
        ));
        let (_, stderr) = texts(&out);
        assert_eq!(code(&out), 2, "{args:?}: {stderr}");
        assert!(stderr.contains(want), "{args:?}: {stderr}");
    }
    let big = dir.join("big.txt");
    std::fs::write(
        &big,
        format!("# Histogram\n000000 {}\n", "9".repeat(100_000)),
    )
    .unwrap();
    let out = rtscope(&["import", big.to_str().unwrap(), "--db", dbs]);
    let (_, stderr) = texts(&out);
    assert_eq!(code(&out), 2, "{stderr}");
    assert!(stderr.len() < 1200, "{} bytes of error", stderr.len());
}

/// Case 18: values that would mean something else are refused, naming the flag and range.
#[test]
fn values_that_mean_something_else_are_refused() {
    let dir = scratch("values");
    let db = dir.join("r.db");
    let dbs = db.to_str().unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec![
                "measure",
                "--policy",
                "other",
                "-t",
                "2",
                "--distance",
                "999999999s",
                "--db",
                dbs,
            ],
            // Each thread's interval is at most 1 hour (issue 26 N2).
            "invalid value '999999999s' for '--distance': a thread's interval must be 1us..3600s",
        ),
        (measure_args(dbs, &["-i", "100000000000s"]), "too long"),
        (
            vec!["cyclictest", "-q", "-l", "10", "--latency=-5"],
            "--latency",
        ),
        (
            measure_args(dbs, &["-p", "50", "-l", "10"]),
            "'--priority': other takes a nice value, -20..19",
        ),
    ];
    for (args, want) in cases {
        let out = rtscope(&args);
        let (_, stderr) = texts(&out);
        assert_eq!(code(&out), 2, "{args:?}: {stderr}");
        assert!(stderr.contains(want), "{args:?}: {stderr}");
    }
}

/// Case 18: the priority a thread is recorded with is the one it ran at: a nice value for
/// SCHED_OTHER (0 unless given), never the real-time default of 90 the kernel would clamp.
#[test]
fn the_recorded_priority_is_the_one_applied() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    let (_dir, db) = one_run_db("priority-recorded");
    assert_eq!(query(&db, "SELECT DISTINCT priority FROM threads"), "0");
    let nice = rtscope(&measure_args(
        db.to_str().unwrap(),
        &["-p", "7", "-l", "20"],
    ));
    assert_eq!(code(&nice), 0, "{:?}", texts(&nice));
    let applied = query(&db, "SELECT priority FROM threads WHERE run_id = 2");
    assert_eq!(applied, "7");
}

/// Case 19: the raw samples are streamed into CSV and JSON chunk by chunk; every sample is
/// there, the JSON is one valid document (memory figures: bench/export-memory.py).
#[test]
fn streamed_exports_hold_every_raw_sample() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    let dir = scratch("streamed-export");
    let db = dir.join("r.db");
    let dbs = db.to_str().unwrap();
    let out = rtscope(&measure_args(
        dbs,
        &["-i", "200us", "-D", "2500ms", "--raw"],
    ));
    assert_eq!(code(&out), 0, "{:?}", texts(&out));
    let n: usize = query(&db, "SELECT sum(count) FROM samples")
        .parse()
        .unwrap();
    let chunks: usize = query(&db, "SELECT count(*) FROM samples").parse().unwrap();
    assert!(chunks > 1, "several chunks to stream: {chunks}");
    let exp = dir.join("exp");
    export_ok(dbs, &exp, "csv,json");
    let csv = std::fs::read_to_string(exp.join("run-1-samples.csv")).unwrap();
    assert_eq!(csv.lines().count(), n + 1, "header and every sample");
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(exp.join("run-1.json")).unwrap()).unwrap();
    let rows = doc["samples"].as_array().unwrap();
    assert_eq!(rows.len(), n);
    let cycles: Vec<u64> = rows.iter().map(|r| r["cycle"].as_u64().unwrap()).collect();
    assert!(
        cycles.windows(2).all(|w| w[0] < w[1]),
        "one thread, cycles in order"
    );
}

/// `export -o -` is standard output: the JSON document, raw samples streamed; other formats
/// are refused.
#[test]
fn export_dash_is_standard_output() {
    let (dir, db) = synthetic_run_db("export-dash");
    let dbs = db.to_str().unwrap();
    let out = rtscope(&["export", "1", "--db", dbs, "-o", "-", "--format", "json"]);
    let (stdout, stderr) = texts(&out);
    assert_eq!(code(&out), 0, "{stderr}");
    let doc: serde_json::Value = serde_json::from_str(&stdout).expect("one JSON document");
    assert_eq!(doc["schema"], "rtscope.export/1");
    let out = rtscope(&["export", "1", "--db", dbs, "-o", "-"]);
    assert_eq!(code(&out), 2, "{:?}", texts(&out));
    assert!(!dir.join("-").exists());
}
