//! `rtscope check` as a user runs it: the table and the JSON on this machine, the exit codes
//! (0 nothing bad, 1 something bad, 2 usage), `--cpus`, and untrusted names escaped.

use crate::common;

use std::path::PathBuf;
use std::process::Output;

fn rtscope(args: &[&str]) -> Output {
    common::run(env!("CARGO_BIN_EXE_rtscope"), args)
}

fn fixture(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../rtscope-check/tests/fixtures")
        .join(name)
        .display()
        .to_string()
}

const VERDICTS: [&str; 4] = ["ok", "warn", "bad", "unavailable"];

#[test]
fn the_table_has_a_verdict_and_a_fix_for_every_problem() {
    let out = rtscope(&["check"]);
    let text = String::from_utf8(out.stdout).expect("UTF-8");
    let code = out.status.code().expect("exit code");
    assert!(
        code == 0 || code == 1,
        "exit {code}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut lines = text.lines();
    let head = lines.next().unwrap();
    assert!(
        head.starts_with("rtscope check: 32 checks for CPUs "),
        "{head}"
    );
    assert_eq!(lines.next(), Some(""));
    assert!(lines.next().unwrap().starts_with("VERDICT      CHECK"));
    let mut rows = 0;
    let mut needs_fix = false;
    let mut bad = false;
    for l in lines {
        let verdict = l.split_whitespace().next().unwrap();
        if verdict == "fix:" {
            assert!(needs_fix, "a fix under a finding that needs none: {l}");
            needs_fix = false;
            continue;
        }
        assert!(!needs_fix, "warn/bad finding without a fix before: {l}");
        assert!(VERDICTS.contains(&verdict), "{l}");
        needs_fix = verdict == "warn" || verdict == "bad";
        bad |= verdict == "bad";
        rows += 1;
    }
    assert!(!needs_fix);
    assert_eq!(rows, 32);
    assert_eq!(code, i32::from(bad), "exit 1 exactly when a check is bad");
    assert!(
        text.contains("\npreempt_rt") || text.contains(" preempt_rt "),
        "{text}"
    );
}

#[test]
fn json_lists_every_check_and_the_exit_code_follows_the_bad_ones() {
    let out = rtscope(&["check", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(v["schema"], "rtscope-check/1");
    let findings = v["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 32);
    let bad = findings.iter().filter(|f| f["verdict"] == "bad").count();
    assert_eq!(v["summary"]["bad"], bad);
    assert_eq!(out.status.code(), Some(i32::from(bad > 0)));
    for f in findings {
        assert!(VERDICTS.contains(&f["verdict"].as_str().unwrap()), "{f}");
        for key in ["id", "title", "evidence", "why"] {
            assert!(
                f[key].as_str().is_some_and(|s| !s.is_empty()),
                "{key} in {f}"
            );
        }
        if f["verdict"] == "warn" || f["verdict"] == "bad" {
            assert!(f["fix"].is_string(), "{f}");
        }
    }
    // Certain on any machine: PREEMPT_RT is ok exactly when the kernel says it is RT.
    let uname_v = String::from_utf8(common::run("uname", &["-v"]).stdout).unwrap();
    let rt = uname_v.split_whitespace().any(|w| w == "PREEMPT_RT")
        || std::fs::read_to_string("/sys/kernel/realtime").is_ok_and(|s| s.trim() == "1");
    let preempt_rt = findings.iter().find(|f| f["id"] == "preempt_rt").unwrap();
    assert_eq!(preempt_rt["verdict"] == "ok", rt, "{preempt_rt}");
}

#[test]
fn cpus_selects_the_audited_cpus_and_bad_lists_are_usage_errors() {
    let out = rtscope(&["check", "--json", "--cpus", "0"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(v["cpus"], serde_json::json!([0]));
    for bad in [["--cpus", "99999"], ["--cpus", "x-1"], ["--priority", "0"]] {
        let out = rtscope(&["check", bad[0], bad[1]]);
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
        assert!(out.stdout.is_empty());
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("error"),
            "{bad:?}"
        );
    }
    let out = rtscope(&["check", "--cpus", "4096"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("CPU 4096 is not online"));
}

#[test]
fn a_throttled_raspberry_pi_tree_exits_1_and_names_the_flags() {
    let out = rtscope(&["check", "--root", &fixture("rpi4"), "--cpus", "3"]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    let line = text.lines().find(|l| l.contains("rpi_throttled")).unwrap();
    assert!(line.starts_with("bad "), "{line}");
    assert!(line.contains("now: under-voltage, throttled"), "{line}");
}

#[test]
fn names_from_the_system_cannot_drive_the_terminal() {
    let root = common::temp_path("check-escape-root");
    let _ = std::fs::remove_dir_all(&root);
    let w = |p: &str, t: &str| {
        let p = root.join(p);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, t).unwrap();
    };
    w("sys/devices/system/cpu/online", "0\n");
    let comm = "evil\x1b]0;owned\x07\x1b[2J";
    let mut fields = vec!["0"; 39];
    fields[0] = "S";
    fields[38] = "1"; // SCHED_FIFO
    fields[37] = "99";
    w("proc/77/comm", &format!("{comm}\n"));
    w(
        "proc/77/task/77/stat",
        &format!("77 ({comm}) {}\n", fields.join(" ")),
    );
    w("proc/77/task/77/status", "Cpus_allowed_list:\t0\n");
    let out = rtscope(&["check", "--root", root.to_str().unwrap()]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "an RT task at 99 on CPU 0 is bad"
    );
    assert!(!out.stdout.contains(&0x1b) && !out.stdout.contains(&0x07));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains(r"evil\u{1b}]0;owned\u{7}\u{1b}[2J[77] FIFO 99 on CPUs 0"),
        "{text}"
    );
    let json = rtscope(&["check", "--json", "--root", root.to_str().unwrap()]);
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let rt = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "rt_tasks")
        .unwrap();
    assert!(
        rt["evidence"].as_str().unwrap().contains(comm),
        "JSON keeps the name, escaped by JSON"
    );
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn an_unprivileged_user_is_told_rt_scheduling_is_refused() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    // RLIMIT_RTPRIO is 0 for nobody here and in CI; if a machine grants it, skip the verdict.
    let o = crate::common::as_nobody()
        .args(["check", "--json"])
        .output()
        .expect("setpriv (util-linux) is needed: apt-get install util-linux");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("panicked"), "{err}");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    let rtprio = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "rtprio")
        .unwrap();
    assert!(
        rtprio["evidence"]
            .as_str()
            .unwrap()
            .contains("CAP_SYS_NICE no"),
        "{rtprio}"
    );
    if rtprio["evidence"]
        .as_str()
        .unwrap()
        .contains("RLIMIT_RTPRIO soft 0,")
    {
        assert_eq!(rtprio["verdict"], "bad", "{rtprio}");
        assert_eq!(o.status.code(), Some(1));
    }
}

/// Runs `sqlite3 DB SQL` (CI installs sqlite3) and returns its output.
fn sql(db: &std::path::Path, query: &str) -> String {
    let o = common::run("sqlite3", &[db.to_str().unwrap(), query]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

#[test]
fn measure_stores_its_audit_and_compare_names_the_settings_that_differ() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    let db = common::temp_path("check-compare.db");
    let _ = std::fs::remove_file(&db);
    let d = db.to_str().unwrap();
    {
        let _rt = common::rt_lock();
        for interval in ["1ms", "2ms"] {
            let o = rtscope(&["measure", "-D", "300ms", "-i", interval, "-q", "--db", d]);
            assert_eq!(
                o.status.code(),
                Some(0),
                "{}",
                String::from_utf8_lossy(&o.stderr)
            );
            // One stderr line per bad verdict, each naming its check and fix.
            // (Besides the run's own note of where its threads ran.)
            for l in String::from_utf8_lossy(&o.stderr).lines() {
                if l.starts_with("rtscope: housekeeping: ") {
                    continue;
                }
                assert!(l.starts_with("check: bad: ") && l.contains("(fix: "), "{l}");
            }
        }
    }
    assert_eq!(
        sql(&db, "SELECT COUNT(*) FROM run_checks WHERE run_id = 1").trim(),
        "32"
    );
    // The audit runs before rtscope's own SCHED_FIFO threads start: it never names the run's
    // process. (Its verdict is not asserted: any other program's real-time threads on these
    // CPUs, another test run's for one, make it bad.)
    let pid = sql(&db, "SELECT pid FROM runs WHERE id = 1");
    let rt_tasks = sql(
        &db,
        "SELECT verdict || ' ' || evidence FROM run_checks WHERE run_id = 1 AND check_id = 'rt_tasks'",
    );
    let (verdict, evidence) = rt_tasks.trim().split_once(' ').unwrap();
    assert!(matches!(verdict, "ok" | "warn" | "bad"), "{rt_tasks}");
    for own in [format!("[{}]", pid.trim()), format!("[{}/", pid.trim())] {
        assert!(
            !evidence.contains(&own),
            "the audit saw rtscope's own threads: {rt_tasks}"
        );
    }
    // Two runs on one machine: the interval differs (a shared machine may change a checked
    // setting between the runs too, so that is not asserted absent).
    let o = rtscope(&["compare", "1", "2", "--db", d, "--no-fail"]);
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(
        text.contains("warning: the groups differ in more than what is compared"),
        "{text}"
    );
    assert!(
        text.contains("  run setting interval differs: A 1.00ms, B 2.00ms\n"),
        "{text}"
    );
    // As if run 2 had been measured with SMT in another state.
    sql(
        &db,
        "UPDATE run_checks SET setting = 'powersave' WHERE run_id = 2 AND check_id = 'smt'",
    );
    let o = rtscope(&["compare", "1", "2", "--db", d, "--no-fail", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let diffs = v["differences"].as_array().unwrap();
    let smt = diffs
        .iter()
        .find(|x| x["setting"] == "smt")
        .expect("smt differs");
    assert_eq!(smt["kind"], "check");
    assert_eq!(smt["values"]["B"], serde_json::json!(["powersave"]));
    assert!(diffs
        .iter()
        .any(|x| x["kind"] == "run" && x["setting"] == "interval"));
    for ext in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{d}{ext}"));
    }
}
