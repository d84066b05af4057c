//! Run records: the real binary writing the real SQLite store, killed, read back, tagged.
//! Every test holds the SCHED_FIFO test lock (`rtscope_testkit::rt_lock`): their runs use the
//! default SCHED_FIFO 90 and must not overlap another test's, e.g. `check`'s audit of the
//! machine's real-time tasks.

use crate::common::{rtscope_with_db as rtscope, text};
use serde_json::Value;
use std::process::{Command, Stdio};
use std::time::Duration;

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_rtscope")
}

fn dir(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("rtscope-records-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn runs_json(db: &std::path::Path) -> Vec<Value> {
    let o = rtscope(db, &["runs", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    serde_json::from_slice::<Value>(&o.stdout)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

/// How many runs the database lists now (0 while it does not exist or cannot be read yet).
fn recorded_runs(db: &std::path::Path) -> usize {
    if !db.exists() {
        return 0;
    }
    let o = rtscope(db, &["runs", "--json"]);
    serde_json::from_slice::<Value>(&o.stdout)
        .ok()
        .and_then(|v| v.as_array().map(Vec::len))
        .unwrap_or(0)
}

/// Waits (up to a minute) until the store holds `n` runs.
fn wait_for_runs(db: &std::path::Path, n: usize) {
    let t0 = std::time::Instant::now();
    while t0.elapsed() < Duration::from_secs(60) {
        let o = rtscope(db, &["runs", "--json"]);
        let count = serde_json::from_slice::<Value>(&o.stdout)
            .ok()
            .and_then(|v| v.as_array().map(Vec::len));
        if count.is_some_and(|c| c >= n) {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("the store never held {n} runs");
}

fn kill(child: &std::process::Child, signal: i32) {
    // SAFETY: kill with the child's pid and a valid signal number.
    unsafe { libc::kill(child.id() as i32, signal) };
}

#[test]
fn a_run_killed_with_sigkill_reads_back_as_incomplete_with_its_series() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    let _rt = crate::common::rt_lock();
    let db = dir("sigkill").join("r.db");
    let mut child = Command::new(bin())
        .args([
            "measure", "-D", "60s", "-i", "1ms", "-q", "--label", "killed",
        ])
        .env("RTSCOPE_DB", &db)
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let spawned = std::time::Instant::now();
    // Structure, not timing: a loaded machine may start the run late or stall its recorder.
    wait_for_runs(&db, 1);
    std::thread::sleep(Duration::from_millis(3200));
    kill(&child, libc::SIGKILL);
    child.wait().unwrap();
    let wall = spawned.elapsed().as_nanos() as u64;
    let runs = runs_json(&db);
    assert_eq!(runs.len(), 1);
    let r = &runs[0];
    assert_eq!(r["status"], "incomplete", "{r}");
    assert_eq!(r["complete"], false);
    let measured = r["measured_ns"].as_u64().unwrap();
    assert!(
        measured > 0 && measured <= wall,
        "measured {measured} ns of {wall} ns"
    );
    let samples = r["samples"].as_u64().unwrap();
    let missed = r["missed_periods"].as_u64().unwrap();
    // Every deadline up to the last checkpoint was a wake-up or missed (1 ms interval).
    assert!(samples > 0, "{r}");
    assert!(
        (samples + missed) / r["threads"].as_u64().unwrap() <= measured / 1_000_000 + 1,
        "{r}"
    );
    let show = rtscope(&db, &["runs", "show", "last", "--json"]);
    let d: Value = serde_json::from_slice(&show.stdout).unwrap();
    let points = d["series_points"].as_u64().unwrap();
    let threads = d["threads"].as_u64().unwrap();
    assert!(
        points >= threads && points <= threads * (wall / 1_000_000_000 + 1),
        "{points} series points for {threads} threads in {wall} ns"
    );
}

#[test]
fn repeated_kills_during_writes_leave_a_readable_store() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    let _rt = crate::common::rt_lock();
    let db = dir("kills").join("r.db");
    for i in 0..4u64 {
        let mut child = Command::new(bin())
            .args([
                "measure",
                "-D",
                "60s",
                "-i",
                "200us",
                "-q",
                "--series-interval",
                "10ms",
                "--event-above",
                "1us",
            ])
            .env("RTSCOPE_DB", &db)
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        // Kill only once the run is in the store (a loaded machine may take long to start it),
        // then at a different point of its writes each time.
        wait_for_runs(&db, i as usize + 1);
        std::thread::sleep(Duration::from_millis(100 + 77 * i));
        kill(&child, libc::SIGKILL);
        child.wait().unwrap();
    }
    let runs = runs_json(&db);
    assert_eq!(runs.len(), 4);
    assert!(runs.iter().all(|r| r["status"] == "incomplete"));
    for r in &runs {
        let id = r["id"].to_string();
        let o = rtscope(&db, &["runs", "show", &id, "--json"]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    }
}

#[test]
fn a_reader_sees_a_run_while_it_is_being_written() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    let _rt = crate::common::rt_lock();
    let db = dir("reader").join("r.db");
    let mut child = Command::new(bin())
        .args(["measure", "-D", "3s", "-i", "1ms", "-q"])
        .env("RTSCOPE_DB", &db)
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    // Read as soon as the first checkpoint is in (the start takes a variable time on a loaded
    // machine); the run lasts 3 s after that.
    let start = std::time::Instant::now();
    let runs = loop {
        if recorded_runs(&db) > 0 {
            let runs = runs_json(&db);
            if runs[0]["samples"].as_u64().unwrap_or(0) > 0 {
                break runs;
            }
        }
        assert!(start.elapsed() < Duration::from_secs(30), "no checkpoint");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(runs[0]["status"], "running", "{}", runs[0]);
    assert!(child.wait().unwrap().success());
    assert_eq!(runs_json(&db)[0]["status"], "complete");
}

#[test]
fn runs_can_be_listed_shown_tagged_and_deleted() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    let _rt = crate::common::rt_lock();
    let db = dir("manage").join("r.db");
    for label in ["idle", "load"] {
        let o = rtscope(
            &db,
            &[
                "measure",
                "-l",
                "100",
                "-i",
                "200us",
                "-q",
                "--label",
                label,
                "--tag",
                "kernel=stock",
                "--event-above",
                "1us",
            ],
        );
        assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
        assert!(text(&o.stdout).contains("recorded as run"));
    }
    let list = text(&rtscope(&db, &["runs"]).stdout);
    assert!(
        list.contains("idle") && list.contains("load") && list.contains("kernel=stock"),
        "{list}"
    );
    let o = rtscope(&db, &["runs", "tag", "1", "board=vm", "--remove", "kernel"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let d: Value =
        serde_json::from_slice(&rtscope(&db, &["runs", "show", "1", "--json"]).stdout).unwrap();
    assert_eq!(d["tags"], serde_json::json!({"board": "vm"}));
    assert_eq!(d["label"], "idle");
    assert!(d["events"].as_u64().unwrap() > 0);
    assert!(d["environment"]["uname.release"].is_string());
    assert_eq!(d["config"]["policy"], "fifo");
    let show = text(&rtscope(&db, &["runs", "show", "last"]).stdout);
    assert!(
        show.contains("p99.9999") && show.contains("environment:"),
        "{show}"
    );
    assert_eq!(
        rtscope(&db, &["runs", "delete", "1"]).status.code(),
        Some(0)
    );
    let runs = runs_json(&db);
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["label"], "load");
    let gone = rtscope(&db, &["runs", "show", "1"]);
    assert_eq!(gone.status.code(), Some(2));
    assert!(text(&gone.stderr).contains("no run 1"));
}

#[test]
fn bad_databases_are_named_and_refused_with_exit_code_2() {
    let _rt = crate::common::rt_lock();
    let d = dir("bad");
    let garbage = d.join("garbage.db");
    std::fs::write(&garbage, vec![b'x'; 8192]).unwrap();
    for args in [
        vec![
            "measure",
            "-l",
            "10",
            "-q",
            "--db",
            garbage.to_str().unwrap(),
        ],
        vec!["runs", "--db", garbage.to_str().unwrap()],
    ] {
        let o = Command::new(bin()).args(&args).output().unwrap();
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("garbage.db") && err.contains("not an rtscope database"),
            "{err}"
        );
    }
    let missing = Command::new(bin())
        .args(["runs", "--db", d.join("none.db").to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(2));
    assert!(text(&missing.stderr).contains("none.db"));
}

#[test]
fn no_db_records_nothing() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    let _rt = crate::common::rt_lock();
    let d = dir("nodb");
    let db = d.join("r.db");
    let o = rtscope(&db, &["measure", "-l", "20", "-q", "--no-db"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(!db.exists());
    assert!(!text(&o.stdout).contains("recorded as run"));
}

#[test]
fn a_full_disk_stops_the_recording_but_not_the_results() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    let _rt = crate::common::rt_lock();
    let db = dir("full").join("r.db");
    // SIGXFSZ ignored (the disposition survives exec) so writes past the limit fail with EFBIG.
    // 300 KiB: room for creating the schema (its WAL reaches ~200 KiB since version 6), far
    // below what this run writes.
    let script = format!("trap '' XFSZ; ulimit -f 300; exec {} measure -D 2s -i 200us -q --series-interval 10ms --event-above 1us --event-capacity 100000", bin());
    let o = Command::new("bash")
        .args(["-c", &script])
        .env("RTSCOPE_DB", &db)
        .output()
        .unwrap();
    let (out, err) = (text(&o.stdout), text(&o.stderr));
    assert_eq!(o.status.code(), Some(2), "{out}{err}");
    assert!(
        err.contains("recording stopped") && err.contains("r.db"),
        "{err}"
    );
    assert!(
        out.lines().any(|l| l.starts_with("all ")),
        "the results are still printed: {out}"
    );
    let runs = runs_json(&db);
    assert_eq!(runs.len(), 1, "the store stays readable");
}

#[test]
fn raw_samples_are_kept_whole_with_their_size() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    let _rt = crate::common::rt_lock();
    let db = dir("raw").join("r.db");
    let o = rtscope(
        &db,
        &["measure", "-l", "2000", "-i", "100us", "-q", "--raw"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let d: Value =
        serde_json::from_slice(&rtscope(&db, &["runs", "show", "last", "--json"]).stdout).unwrap();
    assert_eq!(d["raw_samples"], d["samples"], "every sample is kept: {d}");
    assert_eq!(d["raw_dropped"], 0);
    let per_sample = d["raw_bytes"].as_f64().unwrap() / d["raw_samples"].as_f64().unwrap();
    assert!(per_sample < 8.0, "{per_sample} bytes per sample");
}

/// The whole stack: raw samples exported to CSV are every sample of the run, and the stored
/// percentiles equal their exact order statistics within the histogram's stated precision.
#[test]
fn exported_raw_samples_give_the_stored_percentiles_as_order_statistics() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    let _rt = crate::common::rt_lock();
    let d = dir("rawexport");
    let db = d.join("r.db");
    let o = rtscope(
        &db,
        &["measure", "-l", "3000", "-i", "100us", "-q", "--raw"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let out = d.join("out");
    let e = rtscope(
        &db,
        &["export", "last", "-o", out.to_str().unwrap(), "-f", "csv"],
    );
    assert_eq!(e.status.code(), Some(0), "{}", text(&e.stderr));
    let csv = std::fs::read_to_string(out.join("run-1-samples.csv")).unwrap();
    let mut header = csv.lines().next().unwrap().split(',');
    let col = header
        .position(|h| h == "latency_ns")
        .expect("latency_ns column");
    let mut lat: Vec<u64> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(col).unwrap().parse().unwrap())
        .collect();
    lat.sort_unstable();
    let show: Value =
        serde_json::from_slice(&rtscope(&db, &["runs", "show", "1", "--json"]).stdout).unwrap();
    assert_eq!(lat.len() as u64, show["samples"].as_u64().unwrap());
    for (label, q) in [("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("p99.9", 0.999)] {
        let rank = ((q * lat.len() as f64).ceil() as usize).clamp(1, lat.len());
        let exact = lat[rank - 1] as f64;
        let stored = show["percentiles_ns"][label].as_f64().unwrap();
        assert!(
            (stored - exact).abs() <= exact * 0.0005 + 0.5,
            "{label}: {stored} vs {exact}"
        );
    }
    assert_eq!(show["max_ns"].as_u64().unwrap(), *lat.last().unwrap());
}

#[test]
fn a_truncated_database_is_named_with_exit_code_2() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    let _rt = crate::common::rt_lock();
    let d = dir("truncated");
    let db = d.join("r.db");
    let o = rtscope(&db, &["measure", "-l", "200", "-q", "--event-above", "1us"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let bytes = std::fs::read(&db).unwrap();
    let cut = d.join("cut.db");
    std::fs::write(&cut, &bytes[..8192.min(bytes.len() / 2)]).unwrap();
    for args in [
        vec!["runs"],
        vec!["runs", "show", "1"],
        vec!["export", "1", "-o", d.to_str().unwrap()],
    ] {
        let mut full = args.clone();
        full.extend(["--db", cut.to_str().unwrap()]);
        let o = Command::new(bin()).args(&full).output().unwrap();
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{full:?}: {err}");
        assert!(
            err.contains("cut.db") && !err.contains("panicked"),
            "{full:?}: {err}"
        );
    }
}

/// Exports run 1 of `db` as CSV into `out`.
fn export_csv(db: &std::path::Path, out: &std::path::Path) -> std::path::PathBuf {
    let x = rtscope(
        db,
        &[
            "export",
            "1",
            "--format",
            "csv",
            "-o",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(x.status.code(), Some(0), "{}", text(&x.stderr));
    out.to_path_buf()
}

fn csv_rows(path: &std::path::Path) -> Vec<Vec<String>> {
    let body = std::fs::read_to_string(path).unwrap();
    body.lines()
        .skip(1)
        .map(|l| l.split(',').map(str::to_string).collect())
        .collect()
}

#[test]
fn a_measure_run_records_monitor_series_on_its_time_axis_and_unavailable_sources_are_not_errors() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    let _rt = crate::common::rt_lock();
    let d = dir("monitors");
    let db = d.join("m.db");
    let o = rtscope(
        &db,
        &[
            "measure",
            "-D",
            "2500ms",
            "-i",
            "1ms",
            "-q",
            "--monitor-interval",
            "500ms",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let out = export_csv(&db, &d.join("csv"));
    let rows = csv_rows(&out.join("run-1-monitor.csv"));
    // About one sample every 500 ms over 2.5 s, plus the closing one.
    let offsets: std::collections::BTreeSet<u64> =
        rows.iter().map(|r| r[3].parse().unwrap()).collect();
    assert!((5..=8).contains(&offsets.len()), "{offsets:?}");
    assert!(*offsets.last().unwrap() >= 2_400_000_000, "{offsets:?}");
    let metric = |name: &str| rows.iter().filter(|r| r[1] == name).count();
    assert!(metric("load.1m") >= 5);
    assert!(metric("mem.available") >= 5);
    // Rates need two samples: one fewer than the levels.
    assert_eq!(metric("ctxt_rate") + 1, metric("load.1m"));
    assert!(rows
        .iter()
        .any(|r| r[1].starts_with("irq_rate.") && r[2] == "1/s"));
    let busy: Vec<f64> = rows
        .iter()
        .filter(|r| r[1] == "cpu_busy.all")
        .map(|r| r[4].parse().unwrap())
        .collect();
    assert!(busy.iter().all(|b| (0.0..=100.0).contains(b)), "{busy:?}");
    // The measuring threads themselves are among the threads the monitor saw.
    let top = csv_rows(&out.join("run-1-top_threads.csv"));
    assert!(top.iter().any(|r| r[5].starts_with("rtscope-m")), "{top:?}");
    // No thermal zone in this VM: recorded as unavailable, and the run succeeded.
    let shown = rtscope(&db, &["runs", "show", "1"]);
    assert_eq!(shown.status.code(), Some(0));
}

#[test]
fn monitors_can_be_turned_off() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    let _rt = crate::common::rt_lock();
    let d = dir("nomonitors");
    let db = d.join("m.db");
    let o = rtscope(
        &db,
        &["measure", "-D", "1s", "-q", "--monitor-interval", "0"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let out = export_csv(&db, &d.join("csv"));
    assert!(csv_rows(&out.join("run-1-monitor.csv")).is_empty());
    let bad = rtscope(&db, &["measure", "-D", "1s", "--monitor-interval", "5ms"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        text(&bad.stderr).contains("--monitor-interval"),
        "{}",
        text(&bad.stderr)
    );
}

/// Runs of this version say that their samples are wake-ups; a run recorded before the rule
/// existed (no `rtscope.sample_rule` key) stays readable and is marked as the old rule.
#[test]
fn runs_show_names_the_sample_rule_and_marks_runs_of_the_old_rule() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    let _rt = crate::common::rt_lock();
    let db = dir("sample-rule").join("r.db");
    let o = rtscope(&db, &["measure", "-l", "50", "-i", "500us", "-q"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let show = |json: bool| {
        let mut args = vec!["runs", "show", "1"];
        if json {
            args.push("--json");
        }
        let o = rtscope(&db, &args);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
        text(&o.stdout)
    };
    let v: Value = serde_json::from_str(&show(true)).unwrap();
    assert_eq!(v["sample_rule"], "wake-up", "{v}");
    assert_eq!(v["environment"]["rtscope.sample_rule"], "wake-up");
    for t in v["thread_stats"].as_array().unwrap() {
        assert_eq!(t["samples"], 50, "{t}");
        assert!(t["miss_ratio"].is_number(), "{t}");
    }
    assert!(show(false).contains("samples:  one sample per wake-up"));
    let c = rusqlite::Connection::open(&db).unwrap();
    c.execute(
        "DELETE FROM environment WHERE key = 'rtscope.sample_rule'",
        [],
    )
    .unwrap();
    drop(c);
    let v: Value = serde_json::from_str(&show(true)).unwrap();
    assert_eq!(v["sample_rule"], "deadline", "{v}");
    let t = show(false);
    assert!(t.contains("samples:  OLD RULE"), "{t}");
}

/// Seed 001's first figure is the temperature over the run: `rtscope cyclictest --db` records
/// the system monitors as `measure` does, and says so on stderr (cyclictest's stdout is left
/// as cyclictest's).
#[test]
fn cyclictest_with_a_database_records_the_monitors_and_says_so() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    let _rt = crate::common::rt_lock();
    let d = dir("ct-monitors");
    let db = d.join("ct.db");
    let o = Command::new(bin())
        .args(["cyclictest", "-m", "-p", "80", "-D", "3", "-q", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(
        err.contains("recording the system monitors every 1 s with the run (--db)"),
        "{err}"
    );
    assert!(!text(&o.stdout).contains("monitors"));
    let conn = rusqlite::Connection::open(&db).unwrap();
    let (values, busy): (i64, i64) = conn
        .query_row(
            "select count(*), (select count(*) from monitor_metrics where name like 'cpu_busy.%') \
             from monitor_values",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert!(
        values > 0 && busy > 0,
        "{values} monitor values, {busy} cpu_busy metrics"
    );
}
