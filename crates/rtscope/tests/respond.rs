//! `rtscope respond` through the real binary: the table, the JSON, limits and the exit codes
//! (0 ok, 1 limit exceeded, 2 usage/setup, 3 interrupted), and the GPIO error messages. The
//! runs use SCHED_OTHER so they behave the same with or without real-time privileges.

use std::process::{Command, Output, Stdio};
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_rtscope");
const UNPRIVILEGED: [&str; 5] = ["--policy", "other", "-p", "0", "--no-mlock"];

fn rtscope(args: &[&str]) -> Output {
    let db = args.contains(&"--db");
    Command::new(BIN)
        .arg("respond")
        .args(args)
        .args(if db { &[][..] } else { &["--no-db"][..] })
        .env_remove("RTSCOPE_DB")
        .output()
        .expect("run rtscope")
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn tmp(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("rtscope-respond-{}-{name}", std::process::id()));
    let _ = std::fs::remove_file(&d);
    d
}

#[test]
fn eventfd_prints_the_table_and_writes_json() {
    let json = tmp("ok.json");
    let db = tmp("ok.db");
    let mut args = vec!["--ipc", "eventfd", "-D", "1s", "-q", "--json"];
    args.push(json.to_str().unwrap());
    args.extend(["--db", db.to_str().unwrap(), "--label", "respond-test"]);
    args.extend(UNPRIVILEGED);
    let o = rtscope(&args);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    let header = out.lines().next().unwrap();
    for col in ["source", "path", "events", "lost", "p50", "p99.99", "max"] {
        assert!(header.contains(col), "{header}");
    }
    let row = out.lines().find(|l| l.starts_with("eventfd")).unwrap();
    assert!(row.contains(" same "), "{row}");
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(doc["schema"], "rtscope.respond/1");
    assert_eq!(doc["exit_code"], 0);
    let r = &doc["results"][0];
    assert_eq!(r["mechanism"], "eventfd");
    assert_eq!(r["accounting_consistent"], true);
    assert_eq!(r["received"], r["sent"]);
    assert!(r["samples"].as_u64().unwrap() > 100);
    assert!(!r["histogram"]["buckets"].as_array().unwrap().is_empty());
    assert!(out.contains("recorded as run 1 in"), "{out}");
    // The run is in the database as kind respond, one thread per row, readable as any run.
    let runs = Command::new(BIN)
        .args(["runs", "--json", "--db", db.to_str().unwrap()])
        .output()
        .unwrap();
    let listed: serde_json::Value = serde_json::from_slice(&runs.stdout).unwrap();
    assert_eq!(listed[0]["kind"], "respond", "{listed}");
    assert_eq!(listed[0]["label"], "respond-test");
    assert_eq!(listed[0]["status"], "complete");
    let samples = r["samples"].as_u64().unwrap();
    assert_eq!(listed[0]["samples"].as_u64(), Some(samples), "{listed}");
    let _ = std::fs::remove_file(json);
    let _ = std::fs::remove_file(db);
}

#[test]
fn an_exceeded_limit_exits_1_and_a_bad_option_2() {
    let mut args = vec!["--ipc", "pipe", "-l", "50", "-q", "--limit", "max=1ns"];
    args.extend(UNPRIVILEGED);
    let o = rtscope(&args);
    let (out, _) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains("limit FAIL: max on pipe"), "{out}");

    let o = rtscope(&["--ipc", "carrier-pigeon", "-l", "5"]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        err.contains("unknown IPC mechanism 'carrier-pigeon'"),
        "{err}"
    );

    let o = rtscope(&["-l", "5"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).1.contains("nothing to measure"));
}

#[test]
fn sigterm_ends_the_run_with_exit_3_and_keeps_the_results() {
    let json = tmp("term.json");
    let child = Command::new(BIN)
        .args([
            "respond", "--no-db", "--ipc", "futex", "-D", "60s", "-q", "--json",
        ])
        .arg(&json)
        .args(UNPRIVILEGED)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    // SAFETY: kill with our own child's pid and SIGTERM.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let t0 = std::time::Instant::now();
    let o = child.wait_with_output().unwrap();
    // A liveness bound below the 60 s run, not a speed.
    assert!(t0.elapsed() < Duration::from_secs(45));
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(3), "{out}{err}");
    assert!(out.contains("interrupted by SIGTERM"), "{out}");
    assert!(out.lines().any(|l| l.starts_with("futex")), "{out}");
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(doc["interrupted"], "SIGTERM");
    assert!(doc["results"][0]["samples"].as_u64().unwrap() > 0);
    let _ = std::fs::remove_file(json);
}

#[test]
fn a_missing_gpio_chip_is_a_clear_usage_error() {
    let o = rtscope(&["--list-lines", "gpiochip-none"]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        err.contains("GPIO chip 'gpiochip-none' does not exist"),
        "{err}"
    );
    assert!(err.contains("available chips"), "{err}");

    let mut args = vec![
        "--input",
        "gpiochip-none:3",
        "--stimulus",
        "gpiochip-none:2",
    ];
    args.extend(["-l", "5"]);
    args.extend(UNPRIVILEGED);
    let o = rtscope(&args);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).1.contains("does not exist"));
}

#[test]
fn the_json_file_is_never_written_through_a_planted_symlink() {
    let target = tmp("target.txt");
    let link = tmp("link.json");
    std::fs::write(&target, "keep").unwrap();
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let mut args = vec!["--ipc", "eventfd", "-l", "10", "-q", "--json"];
    args.push(link.to_str().unwrap());
    args.extend(UNPRIVILEGED);
    let o = rtscope(&args);
    // Like every output file (rtscope-common's outfile): a symlink is refused before the run
    // unless --follow-symlinks, neither followed nor replaced.
    assert_eq!(o.status.code(), Some(2), "{:?}", text(&o));
    assert!(text(&o).1.contains("symlink"), "{:?}", text(&o));
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
    assert!(link.is_symlink(), "the link stays");
    args.push("--follow-symlinks");
    let o = rtscope(&args);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&target).unwrap()).unwrap();
    assert_eq!(doc["schema"], "rtscope.respond/1");
    let _ = std::fs::remove_file(link);
    let _ = std::fs::remove_file(target);
}

#[test]
fn a_campaign_of_ipc_mechanisms_under_load_cases_is_recorded_and_reported() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    let dir = tmp("campaign");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("ipc.toml");
    std::fs::write(
        &file,
        r#"
[campaign]
name = "ipc-test"

[measure]
interval = "1ms"
policy = "other"
priority = 0
duration = "1s"
settle = "0s"

[[scenario]]
name = "eventfd"
respond = "eventfd"

[[scenario]]
name = "pipe"
respond = "pipe"
placement = "same"

[[load_case]]
name = "idle"

[[load_case]]
name = "cpu"
[[load_case.load]]
kind = "cpu"
threads = 1
"#,
    )
    .unwrap();
    let db = dir.join("runs.db");
    let (db_s, file_s) = (db.to_str().unwrap(), file.to_str().unwrap());
    let o = Command::new(BIN)
        .args(["run", file_s, "--db", db_s, "-q"])
        .output()
        .unwrap();
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    assert!(out.contains("ipc-test/pipe/cpu/1:"), "{out}");
    let runs = Command::new(BIN)
        .args(["runs", "--json", "--db", db_s])
        .output()
        .unwrap();
    let listed: serde_json::Value = serde_json::from_slice(&runs.stdout).unwrap();
    let listed = listed.as_array().unwrap();
    assert_eq!(listed.len(), 4, "{listed:?}");
    assert!(listed.iter().all(|r| r["kind"] == "respond"), "{listed:?}");
    let report = dir.join("report");
    let o = Command::new(BIN)
        .args(["report", "--campaign", "ipc-test", "--db", db_s, "-o"])
        .arg(&report)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    let summary = std::fs::read_to_string(report.join("summary.md")).unwrap();
    assert!(summary.contains("ipc-test/eventfd/cpu/1"), "{summary}");
    let o = Command::new(BIN)
        .args(["compare", "case=idle", "case=cpu", "--db", db_s])
        .output()
        .unwrap();
    assert!(matches!(o.status.code(), Some(0 | 1)), "{:?}", text(&o));
    assert!(text(&o).0.contains("load cases"), "{:?}", text(&o));
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn respond_keys_outside_a_respond_scenario_are_refused() {
    let file = tmp("bad.toml");
    std::fs::write(
        &file,
        "[[scenario]]\nname = \"x\"\nplacement = \"cross\"\n\n[[load_case]]\nname = \"idle\"\n",
    )
    .unwrap();
    let o = Command::new(BIN)
        .args(["run", "--dry-run", file.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o).1.contains("respond scenarios only"),
        "{:?}",
        text(&o)
    );
    let _ = std::fs::remove_file(file);
}

#[test]
fn an_unwritable_json_path_is_refused_before_measuring() {
    let dir = tmp("no-such-dir");
    let _ = std::fs::remove_dir_all(&dir);
    let path = dir.join("r.json");
    let mut args = vec!["--ipc", "eventfd", "-l", "10", "-q", "--json"];
    args.push(path.to_str().unwrap());
    args.extend(UNPRIVILEGED);
    let o = rtscope(&args);
    assert_eq!(o.status.code(), Some(2), "{:?}", text(&o));
    let (stdout, stderr) = text(&o);
    assert!(stderr.contains("does not exist"), "{stderr}");
    assert!(
        !stdout.contains("eventfd"),
        "nothing was measured: {stdout}"
    );
}

/// A usage error: exit 2, the message on stderr naming `flag`, nothing measured or recorded.
fn assert_refused(args: &[&str], flag: &str, why: &str) {
    let db = tmp(&format!("refused-{}.db", flag.trim_start_matches('-')));
    let mut all = args.to_vec();
    all.extend(["--ipc", "eventfd", "-q", "--db", db.to_str().unwrap()]);
    let o = rtscope(&all);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {out}{err}");
    assert!(err.contains(&format!("'{flag}'")), "{args:?}: {err}");
    assert!(err.contains(why), "{args:?}: {err}");
    assert!(!out.contains("eventfd"), "nothing was measured: {out}");
    assert!(!db.exists(), "{args:?}: nothing was recorded");
}

#[test]
fn n13_respond_refuses_zero_loops() {
    assert_refused(&["-l", "0"], "--loops", "length 0");
}

#[test]
fn n13_respond_refuses_a_zero_duration() {
    assert_refused(&["-D", "0"], "--duration", "length 0");
}

#[test]
fn n13_respond_refuses_a_priority_the_policy_does_not_take() {
    assert_refused(
        &["--policy", "other", "-p", "50"],
        "--priority",
        "nice value",
    );
    assert_refused(&["--policy", "fifo", "-p", "0"], "--priority", "1..99");
}

#[test]
fn n13_respond_refuses_control_characters_in_the_label_and_tags() {
    assert_refused(&["--label", "a\x1b[31mb"], "--label", "control characters");
    assert_refused(&["--tag", "k=\x1b]0;x\x07"], "--tag", "control characters");
}

#[test]
fn n13_respond_refuses_a_cpu_it_cannot_use_at_once_naming_the_flag() {
    assert_refused(&["--cpu", "4095"], "--cpu", "CPU 4095 is not online");
    assert_refused(&["--placement", "0:4095"], "--placement", "not online");
}

#[test]
fn n16_a_refused_invocation_never_runs_the_responder_command() {
    let marker = tmp("n16-responder-ran");
    let cmd = format!("touch {}", marker.display());
    // GPIO without the watched input an external responder needs; a missing chip; and --ipc.
    let cases: [&[&str]; 3] = [
        &["--input", "gpiochip0:3", "-l", "5"],
        &["--input", "gpiochip-none:3", "--watch", "gpiochip-none:4"],
        &["--ipc", "eventfd", "-l", "5"],
    ];
    for args in cases {
        let mut all = args.to_vec();
        all.extend(["--stimulus-watch", "gpiochip0:5", "--responder-cmd", &cmd]);
        all.extend(UNPRIVILEGED);
        let o = rtscope(&all);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {:?}", text(&o));
        std::thread::sleep(Duration::from_millis(200));
        assert!(!marker.exists(), "{args:?}: the responder command ran");
    }
    let o = rtscope(&["--ipc", "eventfd", "-l", "5", "--responder-cmd", &cmd]);
    assert!(text(&o).1.contains("'--responder-cmd'"), "{:?}", text(&o));
}

/// The SysV semaphore sets in /proc/sysvipc/sem whose key is one of `keys`.
fn sem_sets_with_keys(keys: &[i32]) -> Vec<String> {
    let table = std::fs::read_to_string("/proc/sysvipc/sem").expect("/proc/sysvipc/sem");
    table
        .lines()
        .skip(1)
        .filter(|l| {
            let key = l.split_whitespace().next().and_then(|k| k.parse().ok());
            key.is_some_and(|k: i32| keys.contains(&k))
        })
        .map(str::to_string)
        .collect()
}

/// Whether `done` came true; generous, since the condition is about what happens, not how fast
/// (load may be high).
fn comes_true(mut done: impl FnMut() -> bool) -> bool {
    for _ in 0..1200 {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

#[test]
fn n7_a_sigkilled_sysvsem_run_leaks_no_semaphore_set() {
    let mut child = Command::new(BIN)
        .args(["respond", "--no-db", "--ipc", "sysvsem", "-D", "120s", "-q"])
        .args(UNPRIVILEGED)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // The keys rtscope uses for this process's sets (key 0x52PPPPPn, docs/respond.md).
    let keys = rtscope_respond::ipc::sysv_keys_of(child.id());
    let appeared = comes_true(|| !sem_sets_with_keys(&keys).is_empty());
    // SAFETY: kill with our own child's pid and SIGKILL.
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    let status = child.wait().unwrap();
    assert!(
        appeared,
        "the run's semaphore set never appeared under its key"
    );
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(9)
    );
    assert!(
        comes_true(|| sem_sets_with_keys(&keys).is_empty()),
        "the SIGKILLed run's semaphore set was left behind: {:?}",
        sem_sets_with_keys(&keys)
    );
}

#[test]
fn latency_holds_a_pm_qos_request_for_the_run_and_records_it() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    let json = tmp("latency.json");
    let mut args = vec![
        "--ipc",
        "eventfd",
        "-l",
        "20",
        "-q",
        "--latency",
        "0",
        "--json",
    ];
    args.push(json.to_str().unwrap());
    args.extend(UNPRIVILEGED);
    let o = rtscope(&args);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(doc["config"]["cpu_dma_latency_us"], 0, "{}", doc["config"]);
    assert_eq!(doc["config"]["pacing"], "timer");
    let _ = std::fs::remove_file(json);
    let o = rtscope(&["--ipc", "eventfd", "-l", "5", "--latency", "-1"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).1.contains("--latency"), "{:?}", text(&o));
}

#[test]
fn the_handshake_pacing_runs_every_mechanism_with_an_rt_tests_peer() {
    let json = tmp("handshake.json");
    let mut args = vec![
        "--ipc",
        "futex,mqueue,signal,sysvsem",
        "--pacing",
        "handshake",
    ];
    args.extend([
        "-l",
        "50",
        "-i",
        "200us",
        "-q",
        "--json",
        json.to_str().unwrap(),
    ]);
    args.extend(UNPRIVILEGED);
    let o = rtscope(&args);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let results = doc["results"].as_array().unwrap();
    assert_eq!(results.len(), 4);
    for r in results {
        assert_eq!(r["pacing"], "handshake", "{r}");
        assert_eq!(
            (r["received"].as_u64(), r["lost"].as_u64()),
            (Some(50), Some(0)),
            "{r}"
        );
        assert!(r["rt_tests_peer"].is_string(), "{r}");
    }
    let _ = std::fs::remove_file(json);
}

#[test]
fn a_bad_interval_or_burst_is_refused_naming_the_flag() {
    assert_refused(&["-i", "0"], "--interval", "greater than 0");
    assert_refused(&["-i", "500ns"], "--interval", "at least 1us");
    assert_refused(&["--burst", "0"], "--burst", "1..=");
    assert_refused(
        &["--pacing", "handshake", "--burst", "2"],
        "--burst",
        "ready token",
    );
}

/// Issue 27: respond's plan is checked as measure's, so a run shorter than its interval (no
/// event would be sent) is refused naming the flag, before anything starts.
#[test]
fn a_duration_shorter_than_the_interval_is_refused_as_by_measure() {
    assert_refused(
        &["-D", "1ms", "-i", "10ms"],
        "--duration",
        "shorter than the interval",
    );
}

/// Issue 27: a respond run goes through measure's pre-run audit, stored with the run.
#[test]
fn a_respond_run_is_recorded_with_the_pre_run_audit() {
    let db = tmp("audit.db");
    let mut args = vec!["--ipc", "eventfd", "-l", "20", "-q", "--db"];
    args.push(db.to_str().unwrap());
    args.extend(UNPRIVILEGED);
    let o = rtscope(&args);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    let store = rtscope_store::Store::open(&db).unwrap();
    let runs = store.list_runs().unwrap();
    assert_eq!(runs.len(), 1);
    let checks = store.checks(runs[0].id).unwrap();
    assert!(!checks.is_empty(), "the audit's verdicts are stored");
    assert!(
        checks.iter().all(|c| !c.verdict.is_empty()),
        "{:?}",
        checks.iter().map(|c| &c.check).collect::<Vec<_>>()
    );
    drop(store);
    let _ = std::fs::remove_file(db);
}

/// Issue 27: a campaign's respond scenario is planned by the same code as `rtscope respond`:
/// a placement on a CPU that is not online and a policy a receiver cannot run with are
/// refused at planning, naming the campaign key.
#[test]
fn a_respond_scenario_is_refused_at_planning_naming_the_key() {
    for (line, key, why) in [
        (
            "placement = \"0:4095\"",
            "'placement'",
            "CPU 4095 is not online",
        ),
        ("policy = \"batch\"", "'policy'", "fifo, rr or other"),
        ("burst = 0", "'burst'", "events per interval"),
    ] {
        let file = tmp("bad-respond.toml");
        std::fs::write(
            &file,
            format!("[[scenario]]\nname = \"x\"\nrespond = \"pipe\"\n{line}\n\n[[load_case]]\nname = \"idle\"\n"),
        )
        .unwrap();
        let o = Command::new(BIN)
            .args(["run", "--dry-run", file.to_str().unwrap()])
            .output()
            .unwrap();
        let (_, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{line}: {err}");
        assert!(err.contains(key) && err.contains(why), "{line}: {err}");
        let _ = std::fs::remove_file(file);
    }
}
