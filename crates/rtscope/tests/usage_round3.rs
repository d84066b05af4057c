//! Issue 26, item 7: a command line or an error as a user meets it — bytes that are not UTF-8,
//! the order of an error's parts, "did you mean", completions of enumerations, and man pages
//! whose EXIT STATUS says what the program does.

use crate::common::{dump, fresh_dir, run};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_rtscope");

fn fixture(name: &str) -> String {
    format!(
        "{}/tests/fixtures/import/{name}",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// A fresh directory for one test and the path of the database `file` in it.
fn dir_and_db(name: &str, file: &str) -> (std::path::PathBuf, String) {
    let dir = fresh_dir(name);
    let db = dir.join(file).to_str().unwrap().to_string();
    (dir, db)
}

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `rtscope $'\xff'` panicked in `std::env::args()` (exit 134); now a usage error.
#[test]
fn a_non_utf8_argument_is_a_usage_error_not_an_abort() {
    for args in [vec![&b"\xff"[..]], vec![b"cyclictest", b"-q", b"\xff"]] {
        let o = Command::new(BIN)
            .args(args.iter().map(|a| OsStr::from_bytes(a)))
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{}", dump(&o));
        assert!(!stderr(&o).contains("panicked"), "{}", dump(&o));
    }
}

/// A database path is bytes: a file name that is not UTF-8 is used as given.
#[test]
fn a_non_utf8_database_path_is_used_as_given() {
    let dir = fresh_dir("non-utf8-db");
    let db = dir.join(OsStr::from_bytes(b"runs-\xff.db"));
    let o = Command::new(BIN)
        .arg("import")
        .arg(fixture("hist-h400.txt"))
        .arg("--db")
        .arg(&db)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", dump(&o));
    assert!(db.is_file(), "{} not created", db.display());
    let _ = std::fs::remove_dir_all(&dir);
}

/// `touch afile; rtscope report 1 -o afile/sub`: the error, then its causes (none repeated),
/// then the hint.
#[test]
fn an_error_prints_its_causes_before_its_hint_and_no_cause_twice() {
    let (dir, db) = dir_and_db("error-order", "m.db");
    let db = db.as_str();
    let o = run(BIN, &["import", &fixture("hist-h400.txt"), "--db", db]);
    assert_eq!(o.status.code(), Some(0), "{}", dump(&o));
    let afile = dir.join("afile");
    std::fs::write(&afile, "").unwrap();
    let out = afile.join("sub");
    let o = run(
        BIN,
        &["report", "1", "--db", db, "-o", out.to_str().unwrap()],
    );
    assert_eq!(o.status.code(), Some(2), "{}", dump(&o));
    let err = stderr(&o);
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with("check:"))
        .collect();
    let first = lines.first().copied().unwrap_or_default();
    assert!(
        first.starts_with("error: ") && first.contains("Not a directory"),
        "{err}"
    );
    let hint = lines
        .iter()
        .position(|l| l.starts_with("hint: "))
        .expect(&err);
    assert_eq!(hint, lines.len() - 1, "the hint is the last line:\n{err}");
    assert!(
        lines[1..hint]
            .iter()
            .all(|l| l.starts_with("  caused by: ")),
        "{err}"
    );
    assert_eq!(err.matches("Not a directory").count(), 1, "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_mistyped_subcommand_gets_a_suggestion() {
    let o = run(BIN, &["mesure"]);
    assert_eq!(o.status.code(), Some(2), "{}", dump(&o));
    assert!(stderr(&o).contains("'measure'"), "{}", dump(&o));
    let o = run(BIN, &["measure", "--durration", "1s"]);
    assert_eq!(o.status.code(), Some(2), "{}", dump(&o));
    assert!(stderr(&o).contains("--duration"), "{}", dump(&o));
}

/// Bash completion of `--preset` offers the presets, not file names; an unknown preset is
/// refused before anything runs, naming the valid ones.
#[test]
fn presets_are_completed_and_checked_by_name() {
    let o = run(BIN, &["completions", "bash"]);
    assert_eq!(o.status.code(), Some(0), "{}", dump(&o));
    let script = String::from_utf8_lossy(&o.stdout);
    assert!(
        script.contains("quick scenarios loadcases osadl respond-ipc"),
        "no preset list in the bash completion"
    );
    let o = run(BIN, &["run", "--preset", "quik", "--dry-run"]);
    assert_eq!(o.status.code(), Some(2), "{}", dump(&o));
    assert!(stderr(&o).contains("quick"), "{}", dump(&o));
}

/// The exit codes one page of the manual lists, from its roff source.
fn page_exit_codes(page: &str) -> Vec<(u8, String)> {
    let o = run(BIN, &["man", page]);
    assert_eq!(o.status.code(), Some(0), "{}", dump(&o));
    let roff = String::from_utf8_lossy(&o.stdout).into_owned();
    let section = roff
        .split(".SH \"EXIT STATUS\"")
        .nth(1)
        .and_then(|s| s.split(".SH ").next())
        .unwrap_or_else(|| panic!("rtscope-{page} has no EXIT STATUS"))
        .to_owned();
    section
        .split(".TP")
        .filter_map(|item| {
            let mut lines = item.trim().lines();
            let code = lines
                .next()?
                .trim_start_matches("\\fB")
                .trim_end_matches("\\fR");
            Some((code.parse().ok()?, lines.collect::<Vec<_>>().join(" ")))
        })
        .collect()
}

/// `man rtscope-cyclictest` said SIGINT exits 3 (it exits 0, as cyclictest); `man
/// rtscope-check` left out 1. The pages now say what the commands do, and the behaviour is
/// checked here against them.
#[test]
fn man_pages_list_the_exit_codes_the_commands_return() {
    let codes = |page| -> Vec<u8> { page_exit_codes(page).iter().map(|c| c.0).collect() };
    // cyclictest exits 0 when -b fires (issue 51: as the real one does).
    assert_eq!(codes("cyclictest"), [0, 2]);
    assert!(page_exit_codes("cyclictest")[0].1.contains("SIGINT"));
    assert_eq!(codes("check"), [0, 1, 2]);
    assert_eq!(codes("respond"), [0, 1, 2, 3]);
    assert_eq!(codes("measure"), [0, 1, 2, 3]);

    // cyclictest stopped by SIGINT: 0, as its page says.
    let _lock = crate::common::rt_lock();
    let mut child = Command::new(BIN)
        .args(["cyclictest", "-q", "-D", "60", "-i", "10000"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    // SAFETY: kill(2) on the child's pid, which has not been waited for.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let started = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if started.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            panic!("cyclictest did not end on SIGINT");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(0));
}

/// `--ci-output junit=F --no-db` wrote `<testsuites tests="0">`: a CI gate with limits saw no
/// test at all. The run is reported (and its limits) without a database left behind.
#[test]
fn ci_output_without_a_database_still_reports_the_run_and_its_limits() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    let dir = fresh_dir("ci-no-db");
    let junit = dir.join("j.xml");
    let arg = format!("junit={}", junit.display());
    let o = {
        let _lock = crate::common::rt_lock();
        run(
            BIN,
            &[
                "measure",
                "-q",
                "-D",
                "0.2",
                "--no-db",
                "--ci-output",
                &arg,
                "--limit",
                "max=1s",
            ],
        )
    };
    assert_eq!(o.status.code(), Some(0), "{}", dump(&o));
    let text = std::fs::read_to_string(&junit).unwrap();
    assert!(!text.contains(r#"tests="0""#), "{text}");
    assert!(
        text.contains("limit") && text.contains(".run_uuid\""),
        "{text}"
    );
    assert_eq!(
        std::fs::read_dir(&dir).unwrap().count(),
        1,
        "only j.xml is left"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// N9, N10: an output to a missing directory, or two formats to one file, are refused before
/// the run (nothing is measured or recorded), not after it.
#[test]
fn ci_outputs_are_checked_before_the_run() {
    let (dir, db) = dir_and_db("ci-check", "c.db");
    let db = db.as_str();
    let same = dir.join("r.out");
    let same = same.to_str().unwrap();
    for outs in [
        vec!["junit=/nonexistent/dir/j.xml".to_string()],
        vec![format!("junit={same}"), format!("lava={same}")],
    ] {
        let mut args = vec!["measure", "-q", "-D", "30", "--db", db];
        for o in &outs {
            args.extend(["--ci-output", o.as_str()]);
        }
        let o = run(BIN, &args);
        assert_eq!(o.status.code(), Some(2), "{}", dump(&o));
        assert!(stderr(&o).contains("--ci-output"), "{}", dump(&o));
        assert!(!String::from_utf8_lossy(&o.stdout).contains("recorded as"));
        assert!(
            !std::path::Path::new(db).exists() || {
                let l = run(BIN, &["runs", "--db", db]);
                !String::from_utf8_lossy(&l.stdout).contains("measure")
            }
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// N1: output options replaced device nodes and symlinks with regular files, as root. A
/// device is written through, `--json=/dev/stdout` is standard output, a symlink is refused
/// (before the run) unless `--follow-symlinks`; N11: a full disk on stdout is not a success.
#[test]
fn outputs_never_replace_devices_or_symlinks_and_write_errors_fail() {
    rtscope_testkit::require_root!("mknod of a device node");
    let dir = fresh_dir("outputs-n1");
    let node = dir.join("mynull");
    let st = Command::new("mknod")
        .args(["-m", "666"])
        .arg(&node)
        .args(["c", "1", "3"])
        .status()
        .unwrap();
    assert!(st.success(), "mknod (the tests run as root)");
    let db = dir.join("o.db");
    let db = db.to_str().unwrap();
    let _lock = crate::common::rt_lock();
    let junit = format!("junit={}", node.display());
    // A short measurement with `out` options.
    let short = |out: &[&str]| {
        let mut args = vec!["measure", "-q", "-D", "0.2"];
        args.extend_from_slice(out);
        run(BIN, &args)
    };
    let o = short(&["--db", db, "--ci-output", &junit]);
    assert_eq!(o.status.code(), Some(0), "{}", dump(&o));
    use std::os::unix::fs::FileTypeExt;
    assert!(std::fs::symlink_metadata(&node)
        .unwrap()
        .file_type()
        .is_char_device());

    let o = short(&["--no-db", "--json", "/dev/stdout"]);
    assert_eq!(o.status.code(), Some(0), "{}", dump(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("\"schema\": \"rtscope.measure/1\""));

    let victim = dir.join("victim");
    std::fs::write(&victim, "keep").unwrap();
    let link = dir.join("out.json");
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    let l = link.to_str().unwrap();
    let o = short(&["--no-db", "--json", l]);
    assert_eq!(o.status.code(), Some(2), "{}", dump(&o));
    assert!(stderr(&o).contains("symlink") && stderr(&o).contains("--follow-symlinks"));
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
    let o = short(&["--no-db", "--json", l, "--follow-symlinks"]);
    assert_eq!(o.status.code(), Some(0), "{}", dump(&o));
    assert!(std::fs::read_to_string(&victim)
        .unwrap()
        .contains("rtscope.measure/1"));

    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let o = Command::new(BIN)
        .args(["measure", "-q", "-D", "0.2", "--no-db"])
        .stdin(Stdio::null())
        .stdout(full)
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", dump(&o));
    assert!(stderr(&o).contains("cannot write the results to standard output"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// N12: `load io --dir /nonexistent` exited 1 (a load that failed) instead of 2 (the
/// caller's mistake), after starting the load.
#[test]
fn an_io_load_into_a_missing_directory_is_a_usage_error() {
    let o = run(
        BIN,
        &["load", "io", "--dir", "/nonexistent/dir", "--for", "1s"],
    );
    assert_eq!(o.status.code(), Some(2), "{}", dump(&o));
    assert!(stderr(&o).contains("an existing directory"), "{}", dump(&o));
    assert!(
        !stderr(&o).contains("running (pid"),
        "the load was started: {}",
        dump(&o)
    );
}

/// A built-in load SIGKILLed after the grace period lost its report yet `rtscope load` said
/// success. With no grace at all the worker may or may not report before the SIGKILL; either
/// way the exit code must agree with what was kept.
#[test]
fn a_load_whose_report_was_lost_is_not_a_success() {
    let mut lost_seen = false;
    for _ in 0..4 {
        let o = run(
            BIN,
            &[
                "load",
                "messaging",
                "--groups",
                "2",
                "--fds",
                "4",
                "--for",
                "1s",
                "--grace",
                "0",
                "--json",
            ],
        );
        let reports: serde_json::Value =
            serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", dump(&o)));
        let r = &reports[0];
        let lost = r["status"] == "killed" && r["metrics"].as_array().is_some_and(|m| m.is_empty());
        lost_seen |= lost;
        let want = if lost { 1 } else { 0 };
        assert_eq!(o.status.code(), Some(want), "{}", dump(&o));
        assert_eq!(
            stderr(&o).contains("its report was lost"),
            lost,
            "{}",
            dump(&o)
        );
    }
    eprintln!("a lost report was seen: {lost_seen}");
}

/// N8, the second line of defence: a database holding control characters in a label and a tag
/// (an old or foreign one: every input refuses them now) renders with no raw ESC or BEL in
/// any text file of the report, and every SVG is well-formed XML.
#[test]
fn a_report_of_hostile_labels_has_no_raw_control_characters() {
    let dir = fresh_dir("hostile-report");
    let db = dir.join("h.db");
    let o = run(
        BIN,
        &[
            "import",
            &fixture("hist-h400.txt"),
            "--db",
            db.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", dump(&o));
    {
        let mut s = rtscope_store::Store::open(&db).unwrap();
        s.set_tag(1, "rack\u{1b}[31m", Some("one\u{7}")).unwrap();
    }
    let c = std::process::Command::new("sqlite3")
        .arg(&db)
        .arg("UPDATE runs SET label = 'evil' || char(27) || '[2J' || char(7)")
        .status();
    rtscope_testkit::require!(
        c.is_ok_and(|s| s.success()),
        "sqlite3 is not installed (apt-get install sqlite3; .ci/run installs it)"
    );
    let out = dir.join("out");
    let o = run(
        BIN,
        &[
            "report",
            "1",
            "--db",
            db.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", dump(&o));
    for e in std::fs::read_dir(&out).unwrap().flatten() {
        let p = e.path();
        let ext = p.extension().and_then(|x| x.to_str()).unwrap_or("");
        if !["svg", "html", "csv", "md"].contains(&ext) {
            continue;
        }
        let bytes = std::fs::read(&p).unwrap();
        assert!(
            !bytes.iter().any(|&b| b == 0x1b || b == 0x07),
            "raw control character in {}",
            p.display()
        );
        if ext == "svg" && rtscope_testkit::have("xmllint", "--version") {
            let x = Command::new("xmllint")
                .arg("--noout")
                .arg(&p)
                .output()
                .unwrap();
            assert!(
                x.status.success(),
                "{}: {}",
                p.display(),
                String::from_utf8_lossy(&x.stderr)
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// N15: `--target-jobs 0` was accepted (no board would ever run).
#[test]
fn target_jobs_zero_is_refused() {
    let o = run(
        BIN,
        &["check", "--target", "127.0.0.1", "--target-jobs", "0"],
    );
    assert_eq!(o.status.code(), Some(2), "{}", dump(&o));
    assert!(stderr(&o).contains("--target-jobs"), "{}", dump(&o));
}
