//! The hostile suite, round 5 (issue 67, "nothing lost, nothing let in"): a run database that
//! is a FIFO (or a device, a directory) refused at once by every command, reading or writing;
//! a closed standard output that never changes a command's own exit code, and a full one said
//! once; the smaller items (units of `report --xmax`, `runs tag` saying what it did). Each case
//! runs the built binary and asserts exit codes and messages; the only bound on time is the
//! hang guard (a regression fails instead of hanging), never an assertion.

use crate::hostile_support as support;

use std::os::fd::{FromRawFd, OwnedFd};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;
use support::*;

/// How long one command may take before it counts as hung (a hang guard, not a timing).
const HANG: Duration = Duration::from_secs(60);

/// Runs the binary with `args`, stdout to `stdout`, under the hang guard.
fn run_with(args: &[&str], stdout: Stdio) -> Output {
    let child = Command::new(exe())
        .args(args)
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut reaper = Reaper::new(child.id());
    let o = wait_output(child, HANG, &format!("rtscope {args:?}"));
    reaper.disarm();
    o
}

/// The write end of a pipe whose read end is already closed: every write is EPIPE, as after
/// `| head -c 100` has read its fill.
fn closed_pipe() -> Stdio {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
    // SAFETY: pipe2 succeeded: both descriptors are open and owned by nobody else.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    drop(read);
    Stdio::from(write)
}

/// A database of two short runs (SCHED_OTHER, no root needed).
fn two_runs(dir: &Path) -> std::path::PathBuf {
    let db = dir.join("r.db");
    let dbs = db.to_str().unwrap();
    for _ in 0..2 {
        let o = rtscope(&measure_args(dbs, &["-D", "300ms", "-q"]));
        assert_eq!(code(&o), 0, "{:?}", texts(&o));
    }
    db
}

/// Item 4: every command that only reads a database, and the writing ones, end at once on a
/// FIFO given as `--db` (also through a symlink), with exit 2 and the one message; a device
/// and a directory the same; a symlink to a regular database is read.
#[test]
fn every_command_refuses_a_fifo_database_at_once() {
    let dir = scratch("round5-fifo-db");
    let db = two_runs(&dir);
    let fifo = dir.join("fifo.db");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let link = dir.join("link-to-fifo.db");
    std::os::unix::fs::symlink(&fifo, &link).unwrap();
    let reading: &[&[&str]] = &[
        &["runs"],
        &["runs", "list"],
        &["runs", "show", "1"],
        &["runs", "tag", "1", "k=v"],
        &["runs", "delete", "1"],
        &["runs", "explain", "1"],
        &["export", "1"],
        &["report", "1"],
        &["tail", "1"],
        &["compare", "1", "2"],
    ];
    let writing: &[&[&str]] = &[&["measure", "--policy", "other", "-t", "1", "-D", "100ms"]];
    for (path, kind) in [
        (fifo.as_path(), "a FIFO"),
        (link.as_path(), "a FIFO"),
        (Path::new("/dev/null"), "a character device"),
        (dir.as_path(), "a directory"),
    ] {
        for args in reading.iter().chain(writing) {
            let mut a = args.to_vec();
            a.extend(["--db", path.to_str().unwrap()]);
            let o = run_with(&a, Stdio::piped());
            let (_, stderr) = texts(&o);
            assert_eq!(code(&o), 2, "{a:?}: {stderr}");
            let want = format!("{} is not a regular file ({kind})", path.display());
            assert!(stderr.contains(&want), "{a:?}: {stderr}");
        }
    }
    // A symlink to a regular database is one.
    let good = dir.join("link.db");
    std::os::unix::fs::symlink(&db, &good).unwrap();
    let o = rtscope(&["runs", "--db", good.to_str().unwrap(), "--json"]);
    assert_eq!(code(&o), 0, "{:?}", texts(&o));
    let list: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(list.as_array().map(Vec::len), Some(2), "{list}");
}

/// Item 11: every command that prints keeps its own exit code (as with stdout on /dev/null)
/// when its standard output is a pipe already closed by its reader, and prints no error.
#[test]
fn a_closed_standard_output_keeps_every_commands_own_exit_code() {
    let dir = scratch("round5-closed-pipe");
    let db = two_runs(&dir);
    let dbs = db.to_str().unwrap();
    let cases: &[&[&str]] = &[
        &["check", "--json"],
        &["check"],
        &["tail", "1", "--db", dbs],
        &["tail", "1", "--db", dbs, "--json"],
        &["compare", "1", "2", "--db", dbs, "--json"],
        &["compare", "1", "2", "--db", dbs],
        &["runs", "--db", dbs],
        &["runs", "--db", dbs, "--json"],
        &["runs", "show", "1", "--db", dbs],
        &["export", "1", "--db", dbs, "--format", "json", "-o", "-"],
        &["man", "measure"],
    ];
    for args in cases {
        let own = code(&run_with(args, Stdio::null()));
        let o = run_with(args, closed_pipe());
        let (_, stderr) = texts(&o);
        assert_eq!(code(&o), own, "{args:?}: {stderr}");
        assert!(!stderr.contains("error"), "{args:?}: {stderr}");
    }
}

/// Item 11: a standard output on a full device is said once, exit 2, for a measurement (whose
/// run is still recorded) and for a command that only prints.
#[test]
fn a_full_standard_output_is_one_error_line() {
    let dir = scratch("round5-dev-full");
    let db = two_runs(&dir);
    let dbs = db.to_str().unwrap();
    let full = || std::fs::OpenOptions::new().write(true).open("/dev/full");
    let cases: Vec<Vec<&str>> = vec![
        measure_args(dbs, &["-D", "300ms"]),
        vec!["runs", "--db", dbs],
        vec!["check", "--json"],
    ];
    for args in &cases {
        let o = run_with(args, Stdio::from(full().unwrap()));
        let (_, stderr) = texts(&o);
        assert_eq!(code(&o), 2, "{args:?}: {stderr}");
        let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error:")).collect();
        assert_eq!(errors.len(), 1, "{args:?}: {stderr}");
        assert!(
            errors[0].contains("standard output") && errors[0].contains("No space left"),
            "{args:?}: {stderr}"
        );
    }
    assert_eq!(query(&db, "SELECT count(*) FROM runs"), "3");
}

/// Item 8 on this machine: `measure --ci-output junit=-` writes the JUnit document alone to
/// stdout (it began with the table); the table goes to stderr.
#[test]
fn a_ci_output_on_stdout_is_the_document_alone() {
    let dir = scratch("round5-ci-stdout");
    let db = dir.join("r.db");
    let mut args = measure_args(db.to_str().unwrap(), &["-D", "300ms"]);
    args.extend(["--ci-output", "junit=-"]);
    let o = rtscope(&args);
    let (stdout, stderr) = texts(&o);
    assert_eq!(code(&o), 0, "{stdout}{stderr}");
    assert!(stdout.starts_with("<?xml"), "{stdout}");
    assert!(stdout.trim_end().ends_with("</testsuites>"), "{stdout}");
    assert!(stderr.contains("p99.99"), "the table: {stderr}");
}

/// Item 12: `runs tag` says what it did (text and JSON), a bad tag changes nothing, and
/// `report --xmax` takes a latency with its unit like every other latency option.
#[test]
fn runs_tag_says_what_it_did_and_report_xmax_takes_units() {
    let dir = scratch("round5-tag-xmax");
    let db = two_runs(&dir);
    let dbs = db.to_str().unwrap();
    let o = rtscope(&["runs", "tag", "1", "kernel=rt", "board=b1", "--db", dbs]);
    let (stdout, stderr) = texts(&o);
    assert_eq!(code(&o), 0, "{stderr}");
    assert_eq!(
        stdout,
        "run 1: set kernel=rt, board=b1; its tags now: board=b1, kernel=rt\n"
    );
    let o = rtscope(&[
        "runs", "tag", "1", "--remove", "board", "--db", dbs, "--json",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["removed"], serde_json::json!(["board"]), "{v}");
    assert_eq!(v["tags"], serde_json::json!({"kernel": "rt"}), "{v}");
    let o = rtscope(&["runs", "tag", "1", "x=1", "bad tag", "--db", dbs]);
    assert_eq!(code(&o), 2, "{:?}", texts(&o));
    assert_eq!(query(&db, "SELECT count(*) FROM tags WHERE key='x'"), "0");
    for (xmax, ok) in [
        ("400us", true),
        ("0.4ms", true),
        ("400", true),
        ("0", false),
    ] {
        let out = dir.join(format!("rep-{xmax}"));
        let o = rtscope(&[
            "report",
            "1",
            "--db",
            dbs,
            "--xmax",
            xmax,
            "-o",
            out.to_str().unwrap(),
        ]);
        let (_, stderr) = texts(&o);
        assert_eq!(code(&o), if ok { 0 } else { 2 }, "--xmax {xmax}: {stderr}");
        assert_eq!(out.join("report.html").exists(), ok, "--xmax {xmax}");
        assert!(!stderr.contains("invalid digit"), "{stderr}");
    }
}

/// Item 7: a second watch of the same series through a hard link to the database (another
/// path, so another lock file beside it) is refused while the first runs, which runs on.
#[test]
fn a_watch_through_a_hard_link_to_a_watched_database_is_refused() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    let _rt = crate::common::rt_lock();
    let dir = scratch("round5-watch-link");
    std::fs::create_dir_all(dir.join("other")).unwrap();
    let db = dir.join("w.db");
    let link = dir.join("other").join("link.db");
    let args = |db: &Path| -> Vec<String> {
        [
            "--series",
            "e2e",
            "--cpus",
            "0",
            "--interval",
            "5ms",
            "--window",
            "1s",
            "--db",
        ]
        .iter()
        .map(|s| s.to_string())
        .chain([db.to_str().unwrap().to_string()])
        .collect()
    };
    let first_args = args(&db);
    let first_args: Vec<&str> = first_args.iter().map(String::as_str).collect();
    let mut first = crate::watch::Watch::start(&first_args);
    crate::watch::until(&mut first, "a window of the first watch", || {
        !crate::watch::windows_of(&db, Some("e2e")).is_empty()
    });
    std::fs::hard_link(&db, &link).unwrap();
    let mut second = vec!["watch".to_string()];
    second.extend(args(&link));
    let second: Vec<&str> = second.iter().map(String::as_str).collect();
    let o = rtscope(&second);
    let (out, err) = texts(&o);
    assert_eq!(code(&o), 2, "{out}{err}");
    assert!(
        err.contains("series 'e2e'")
            && err.contains("through another path to the same database file"),
        "{err}"
    );
    assert!(!out.contains("until stopped"), "no banner: {out}");
    assert!(first.alive(), "the first watch runs on");
    first.signal(libc::SIGTERM);
    let o = first.finish();
    assert_eq!(o.status.code(), Some(0), "{}", crate::common::dump(&o));
}

/// The live (not zombie) processes whose command line has the argument `word`.
fn live_with_arg(word: &str) -> Vec<u32> {
    let dir = std::fs::read_dir("/proc").unwrap();
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let zombie = stat
                .rsplit_once(") ")
                .is_some_and(|(_, r)| r.starts_with('Z'));
            !zombie
                && std::fs::read(format!("/proc/{pid}/cmdline"))
                    .is_ok_and(|c| c.split(|&b| b == 0).any(|a| a == word.as_bytes()))
        })
        .collect()
}

/// Item 9: an alert command that leaves its process group (`setsid sleep …`) does not
/// outlive the watch.
#[test]
fn an_alert_command_that_leaves_its_group_ends_with_the_watch() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    let _rt = crate::common::rt_lock();
    let dir = scratch("round5-alert-setsid");
    let db = dir.join("w.db");
    // A length no other process has, to find the sleep by its command line.
    let word = format!("1000.{}", std::process::id());
    let cmd = format!("setsid sleep {word}");
    let dbs = db.to_str().unwrap();
    let mut w = crate::watch::Watch::start(&[
        "--series",
        "e2e",
        "--cpus",
        "0",
        "--interval",
        "5ms",
        "--window",
        "1s",
        "--db",
        dbs,
        "--alert",
        "max>1ns",
        "--alert-command",
        &cmd,
    ]);
    crate::watch::until(&mut w, "the alert command's sleep", || {
        !live_with_arg(&word).is_empty()
    });
    w.signal(libc::SIGTERM);
    let o = w.finish();
    assert_eq!(o.status.code(), Some(0), "{}", crate::common::dump(&o));
    assert_eq!(
        live_with_arg(&word),
        Vec::<u32>::new(),
        "outlived the watch"
    );
}
