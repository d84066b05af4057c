//! The pipe matrix of the hostile suite (issue 67: "`| head` never changes an exit code"), and
//! the documented end of a run whose disk fills while it records.

use super::*;

/// The commands of the pipe matrix: everything that prints to stdout (`{db}` a database of
/// two synthetic runs, `{dir}` the case's scratch directory).
const PRINTERS: &[&[&str]] = &[
    &["check"],
    &["check", "--json"],
    &["runs", "--db", "{db}"],
    &["runs", "--db", "{db}", "--json"],
    &["runs", "list", "--db", "{db}"],
    &["runs", "show", "1", "--db", "{db}"],
    &["runs", "show", "last", "--db", "{db}", "--json"],
    &["runs", "tag", "1", "k=v", "--db", "{db}"],
    &["runs", "explain", "1", "--db", "{db}"],
    &["export", "1", "--db", "{db}", "--format", "json", "-o", "-"],
    &[
        "export",
        "1",
        "--db",
        "{db}",
        "-f",
        "csv",
        "-o",
        "{dir}/exp",
    ],
    &["report", "1", "--db", "{db}", "-o", "{dir}/rep"],
    &["compare", "1", "2", "--db", "{db}"],
    &["compare", "1", "2", "--db", "{db}", "--json"],
    &["tail", "1", "--db", "{db}"],
    &["tail", "1", "--db", "{db}", "--json"],
    &["import", "{dir}/hist-h400.txt", "--db", "{dir}/i.db"],
    &[
        "measure",
        "--policy",
        "other",
        "-t",
        "1",
        "-i",
        "1ms",
        "-D",
        "0.3s",
        "--monitor-interval",
        "0",
        "--db",
        "{dir}/m.db",
    ],
    &[
        "noise",
        "--no-mlock",
        "--cpus",
        "0",
        "-D",
        "0.3s",
        "--explain",
        "off",
        "--no-db",
    ],
    &[
        "respond", "--ipc", "eventfd", "--policy", "other", "-D", "0.3s", "--no-db",
    ],
    &["cyclictest", "-t1", "-i1000", "-l300"],
    &["load", "cpu", "--for", "0.3s"],
    &["man", "measure"],
    &["completions", "bash"],
    &["--help"],
];

/// One case of the pipe matrix: the command with stdout on /dev/null, then into `head -c 0`
/// (which exits at once: every write fails) and `head -c 1` (which exits after one byte); the
/// same exit code each time, and nothing said about the closed pipe.
fn pipe_case(args: &[&str]) -> Result<(), String> {
    let slug: String = args
        .iter()
        .flat_map(|a| a.chars().filter(char::is_ascii_alphanumeric))
        .take(80)
        .collect();
    let dir = scratch(&format!("matrix-pipe-{slug}"));
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/import/hist-h400.txt");
    std::fs::copy(fixture, dir.join("hist-h400.txt")).unwrap();
    let db = dir.join("r.db");
    good_db(&db);
    let (ds, dbs) = (dir.to_str().unwrap(), db.to_str().unwrap());
    // The two exit codes go to a file on fd 3; the piped run's stderr is the case's.
    let codes = dir.join("codes");
    let script = format!(
        "exec 3>{}; \"$0\" \"$@\" >/dev/null 2>/dev/null; own=$?; \
         \"$0\" \"$@\" | head -c 0; at0=${{PIPESTATUS[0]}}; \
         \"$0\" \"$@\" | head -c 1 >/dev/null; echo \"$own $at0 ${{PIPESTATUS[0]}}\" >&3",
        codes.display()
    );
    let mut argv2: Vec<String> = vec!["-c".into(), script, exe().into()];
    argv2.extend(
        args.iter()
            .map(|a| a.replace("{dir}", ds).replace("{db}", dbs)),
    );
    let o = run_guarded("bash", &argv2, HANG);
    let got = std::fs::read_to_string(&codes).unwrap_or_default();
    let (_, err) = texts(&o);
    let mut full = vec!["bash".to_string()];
    full.extend(argv2);
    let c: Vec<&str> = got.split_whitespace().collect();
    // A command's own error (runs explain of a run recorded without --explain) is said in
    // both runs; the closed pipe itself never is.
    let said = ["panicked", "Broken pipe", "standard output", "os error 32"]
        .iter()
        .any(|w| err.contains(w));
    if c.len() != 3 || c[0] != c[1] || c[0] != c[2] || said {
        return Err(failed(
            &format!("{} | head -c 0 / -c 1", args.join(" ")),
            &format!("the exit code to /dev/null, the pipe not said (codes own, | head -c 0, | head -c 1: {got:?})"),
            &full,
            &o,
        ));
    }
    Ok(())
}

/// Every command that prints, piped into a reader that exits at once (`| head -c 0`) or after
/// one byte (`| head -c 1`), keeps the exit code it has with stdout on /dev/null and says
/// nothing about the pipe.
#[test]
fn every_printing_command_keeps_its_exit_code_through_head() {
    rtscope_testkit::require_root!("the measuring commands");
    in_parallel(PRINTERS, |args| pipe_case(args));
}

/// The commands of the full-disk-during-a-run rows: each records a 3 s run in `{db}`.
const FILLED: &[(&str, &[&str])] = &[
    (
        "measure",
        &[
            "measure",
            "--policy",
            "other",
            "-t",
            "1",
            "-i",
            "1ms",
            "-D",
            "3s",
            "-q",
            "--monitor-interval",
            "0",
            "--db",
            "{db}",
        ],
    ),
    (
        "noise",
        &[
            "noise",
            "-q",
            "--no-mlock",
            "--cpus",
            "0",
            "-D",
            "3s",
            "--explain",
            "off",
            "--db",
            "{db}",
        ],
    ),
    (
        "cyclictest",
        &["cyclictest", "-t1", "-i1000", "-D3", "-q", "--db={db}"],
    ),
];

/// The script of a disk that fills during a run: a private 8 MB tmpfs at `$1`, the command
/// (`$0 "$@"` after the shift) started, the disk filled once its run checkpointed, its exit
/// code to `$1/../rc`, then the database copied out of the namespace to `$1/../after`.
const FILL_SCRIPT: &str = r#"m=$1; shift
mount -t tmpfs -o size=8m tmpfs "$m" || exit 99
"$0" "$@" >"$m/../out" 2>"$m/../err" & p=$!
until [ "$(sqlite3 -readonly "$m/r.db" 'SELECT count(*) FROM runs WHERE progress_ns > 0' 2>/dev/null)" = 1 ]; do
  kill -0 $p 2>/dev/null || break; sleep 0.05
done
dd if=/dev/zero of="$m/pad" bs=4k 2>/dev/null
wait $p; echo $? >"$m/../rc"
mkdir "$m/../after" && cp "$m"/r.db* "$m/../after/""#;

/// One row: the documented end of a run whose database fills (docs/store-schema.md): the
/// recording stops with a message naming the file, the measurement goes on and its results
/// are printed, exit 2, and the file stays a database whose run reads back `incomplete`.
fn filled_case(name: &str, args: &[&str]) -> Result<(), String> {
    let dir = scratch(&format!("matrix-filled-{name}"));
    let m = dir.join("m");
    std::fs::create_dir(&m).unwrap();
    let db = m.join("r.db");
    let dbs = db.to_str().unwrap();
    let mut argv: Vec<String> = ["-m", "--propagation", "private", "bash", "-c", FILL_SCRIPT]
        .iter()
        .map(|s| s.to_string())
        .collect();
    argv.extend([exe().to_string(), m.to_str().unwrap().to_string()]);
    argv.extend(args.iter().map(|a| a.replace("{db}", dbs)));
    let o = run_guarded("unshare", &argv, HANG);
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap_or_default();
    let (rc, out, err) = (read("rc"), read("out"), read("err"));
    let mut full = vec!["unshare".to_string()];
    full.extend(argv.iter().cloned());
    let case = format!("{name} × a disk that fills during the run");
    let fail = |what: String| {
        Err(failed(&case, &what, &full, &o) + &format!("\n  rc: {rc}\n  its stderr: {err}"))
    };
    let said = format!("recording stopped: database {dbs}: database or disk is full");
    if rc.trim() != "2" || !err.contains(&said) || out.trim().is_empty() {
        return fail(format!("exit 2, `{said}`, the results printed"));
    }
    let after = dir.join("after/r.db");
    if query(&after, "PRAGMA integrity_check") != "ok" {
        return fail("the database intact".into());
    }
    let st = statuses(&after);
    if st != ["incomplete"] {
        return fail(format!("its run read back `incomplete` (got {st:?})"));
    }
    Ok(())
}

/// A disk that fills while measure, noise and cyclictest record (a private tmpfs filled once
/// the run checkpointed): each ends as documented, exit 2 naming the database, its results
/// printed, its run kept `incomplete` in an intact database.
#[test]
fn a_disk_that_fills_during_a_run_stops_the_recording_not_the_measurement() {
    rtscope_testkit::require_root!("a tmpfs in a private mount namespace");
    in_parallel(FILLED, |(name, args)| filled_case(name, args));
}
