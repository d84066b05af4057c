//! `rtscope load` and the load supervision, with the real binary: every built-in load does
//! work, bad input is refused with a hint, and no load process outlives rtscope however it
//! ends (normal end, SIGINT, SIGTERM, SIGKILL of rtscope alone).

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_rtscope")
}

/// Runs `rtscope load ARGS --json` and returns its only report.
fn load_json(args: &[&str]) -> serde_json::Value {
    let mut all = vec!["load", "--json"];
    all.extend_from_slice(args);
    let o = common::run(bin(), &all);
    assert!(o.status.success(), "{}", common::dump(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON on stdout");
    assert_eq!(v.as_array().map(Vec::len), Some(1), "{v}");
    v[0].clone()
}

fn metric(report: &serde_json::Value, name: &str) -> f64 {
    report["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == name)
        .unwrap_or_else(|| panic!("no metric {name} in {report}"))["value"]
        .as_f64()
        .unwrap()
}

#[test]
fn messaging_in_processes_over_sockets_passes_messages() {
    let r = load_json(&["messaging", "-g", "2", "-f", "4", "--for", "1s"]);
    assert_eq!(r["status"], "ok", "{r}");
    // Work done, not how much: a second's throughput is the host's load's to decide (beside
    // `stress-ng --cpu 4 --io 2 --vm 1` the memory load copied 8.6 MB/s, 30 Nov 2026).
    assert!(metric(&r, "messages") > 0.0, "{r}");
    assert!(metric(&r, "bytes") > 0.0, "{r}");
}

#[test]
fn messaging_in_threads_over_pipes_passes_messages() {
    let args = [
        "messaging",
        "-g",
        "2",
        "-f",
        "4",
        "--pipe",
        "--mode",
        "threads",
    ];
    let r = load_json(&[&args[..], &["--for", "1s"]].concat());
    assert_eq!(r["status"], "ok", "{r}");
    assert_eq!(r["spec"]["transport"], "pipe");
    assert!(metric(&r, "messages") > 0.0, "{r}");
}

#[test]
fn memory_copies_with_zero_miscompares() {
    let r = load_json(&[
        "memory",
        "--threads",
        "2",
        "--megabytes",
        "32",
        "--for",
        "1s",
    ]);
    assert_eq!(r["status"], "ok", "{r}");
    assert!(
        metric(&r, "copied") > 0.0 && metric(&r, "bandwidth") > 0.0,
        "{r}"
    );
    assert_eq!(metric(&r, "miscompares"), 0.0);
}

#[test]
fn cpu_and_network_do_work() {
    let r = load_json(&["cpu", "--threads", "1", "--for", "1s"]);
    assert!(metric(&r, "ops") > 0.0, "{r}");
    let r = load_json(&["network", "--threads", "1", "--size", "512", "--for", "1s"]);
    assert!(metric(&r, "round_trips") > 0.0, "{r}");
    assert_eq!(metric(&r, "bytes"), metric(&r, "round_trips") * 1024.0);
}

#[test]
fn io_writes_and_fsyncs_and_leaves_no_scratch_directory() {
    let dir = common::fresh_dir("io-load");
    let d = dir.to_str().unwrap();
    let r = load_json(&["io", "--dir", d, "--file-mb", "1", "--for", "1s"]);
    assert_eq!(r["status"], "ok", "{r}");
    assert!(metric(&r, "fsyncs") >= 1.0, "{r}");
    assert_eq!(files_in(&dir), 0, "scratch dir left");
}

/// How many entries the directory `dir` holds.
fn files_in(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir).unwrap().count()
}

/// `load external -- hackbench -g 2 -f FDS -l LOOPS`'s arguments after `load`.
fn hackbench(fds: &'static str, loops: &'static str) -> [&'static str; 9] {
    [
        "external",
        "--",
        "hackbench",
        "-g",
        "2",
        "-f",
        fds,
        "-l",
        loops,
    ]
}

/// Starts an io load in a fresh directory, ends rtscope with `sig`, checks that every process
/// and the scratch directory are gone.
fn io_ended_by(name: &str, sig: libc::c_int) {
    let dir = common::fresh_dir(name);
    let mut child = spawn(&[
        "load",
        "io",
        "--dir",
        dir.to_str().unwrap(),
        "--file-mb",
        "1",
    ]);
    let tree = wait_for_tree(child.0.id() as i32, 2); // shepherd + worker
                                                      // The worker makes its scratch directory once it runs: on a loaded machine, a while after
                                                      // it exists.
    let made = Instant::now();
    while files_in(&dir) == 0 && made.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(files_in(&dir), 1, "scratch dir made");
    signal(child.0.id() as i32, sig);
    let status = child.0.wait().unwrap();
    if sig != libc::SIGKILL {
        assert_eq!(status.code(), Some(0));
    }
    assert_gone(&tree);
    assert_eq!(files_in(&dir), 0, "scratch dir left");
}

#[test]
fn io_scratch_directory_is_removed_on_sigterm_too() {
    io_ended_by("io-load-term", libc::SIGTERM);
}

#[test]
fn io_scratch_directory_is_removed_when_rtscope_is_sigkilled() {
    io_ended_by("io-load-kill", libc::SIGKILL);
}

#[test]
fn a_bad_value_is_refused_with_a_hint_and_exit_2() {
    let o = common::run(bin(), &["load", "messaging", "--groups", "0"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{}", common::dump(&o));
    assert!(err.contains("error: load 'messaging': groups = 0"), "{err}");
    assert!(err.contains("(allowed: 1 to 1000)"), "{err}");
    assert!(err.contains("hint: change `groups`"), "{err}");
}

#[test]
fn a_missing_program_is_named_with_its_package_and_exit_2() {
    let o = common::run(
        bin(),
        &[
            "load",
            "external",
            "--",
            "/nonexistent/hackbench",
            "-l",
            "1",
        ],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{}", common::dump(&o));
    assert!(
        err.contains("'/nonexistent/hackbench' was not found"),
        "{err}"
    );
    assert!(
        err.contains("hint: install it (`apt install rt-tests`)"),
        "{err}"
    );
}

#[test]
fn a_bad_worker_spec_is_refused_with_exit_2() {
    let o = common::run(bin(), &["__load", "{\"kind\":\"gpu\"}"]);
    assert_eq!(o.status.code(), Some(2), "{}", common::dump(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("cannot parse the load spec"));
}

#[test]
fn real_hackbench_runs_as_an_external_load_and_its_time_is_read() {
    rtscope_testkit::require!(
        std::path::Path::new("/usr/bin/hackbench").exists(),
        "/usr/bin/hackbench is not installed (apt-get install rt-tests; .ci/run installs it)"
    );
    let r = load_json(&hackbench("5", "100"));
    assert_eq!(r["status"], "finished", "{r}");
    assert_eq!(r["command_line"][0], "/usr/bin/hackbench");
    assert_eq!(metric(&r, "exit_code"), 0.0);
    assert!(metric(&r, "hackbench_time") > 0.0, "{r}");
}

// ---- survivors ----

/// A started rtscope; SIGTERMed and reaped when a failing test drops it.
struct Rtscope(Child);

impl Drop for Rtscope {
    fn drop(&mut self) {
        if matches!(self.0.try_wait(), Ok(None)) {
            signal(self.0.id() as i32, libc::SIGTERM);
            let _ = self.0.wait();
        }
    }
}

fn spawn(args: &[&str]) -> Rtscope {
    let child = Command::new(bin())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start rtscope");
    Rtscope(child)
}

fn signal(pid: i32, sig: libc::c_int) {
    // SAFETY: kill takes no pointers.
    unsafe { libc::kill(pid, sig) };
}

/// (ppid, start time in clock ticks) of a process, from /proc/<pid>/stat.
fn stat(pid: i32) -> Option<(i32, u64)> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let f: Vec<&str> = s[s.rfind(')')? + 2..].split_whitespace().collect();
    Some((f[1].parse().ok()?, f[19].parse().ok()?))
}

/// Every descendant of `root` now, with its start time (to tell a reused pid apart).
fn descendants(root: i32) -> BTreeMap<i32, u64> {
    let all: Vec<(i32, i32, u64)> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|p| stat(p).map(|(pp, st)| (p, pp, st)))
        .collect();
    let mut found = BTreeMap::new();
    let mut todo = vec![root];
    while let Some(p) = todo.pop() {
        for &(c, _, st) in all.iter().filter(|(_, pp, _)| *pp == p) {
            if found.insert(c, st).is_none() {
                todo.push(c);
            }
        }
    }
    found
}

/// Waits until `root` has at least `n` descendants and their number settled; returns them.
fn wait_for_tree(root: i32, n: usize) -> BTreeMap<i32, u64> {
    let until = Instant::now() + Duration::from_secs(5);
    let mut last = BTreeMap::new();
    loop {
        std::thread::sleep(Duration::from_millis(150));
        let now = descendants(root);
        if now.len() >= n && now.keys().collect::<BTreeSet<_>>() == last.keys().collect() {
            return now;
        }
        assert!(
            Instant::now() < until,
            "only {} descendants: {now:?}",
            now.len()
        );
        last = now;
    }
}

/// Asserts that within 3 s none of `tree` exists any more (zombies count as existing).
fn assert_gone(tree: &BTreeMap<i32, u64>) {
    let until = Instant::now() + Duration::from_secs(3);
    loop {
        let alive: Vec<i32> = tree
            .iter()
            .filter(|(&p, &st)| stat(p).is_some_and(|(_, s)| s == st))
            .map(|(&p, _)| p)
            .collect();
        if alive.is_empty() {
            return;
        }
        if Instant::now() >= until {
            let names: Vec<String> = alive
                .iter()
                .map(|p| std::fs::read_to_string(format!("/proc/{p}/stat")).unwrap_or_default())
                .collect();
            panic!("{} load processes survived: {names:#?}", alive.len());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Starts `rtscope ARGS`, waits for `n` descendants, ends rtscope with `sig` (none: waits for
/// `--for`), and checks that every descendant is gone.
fn survivors(args: &[&str], n: usize, sig: Option<libc::c_int>) {
    let mut child = spawn(args);
    let root = child.0.id() as i32;
    let tree = wait_for_tree(root, n);
    if let Some(s) = sig {
        signal(root, s);
    }
    let status = child.0.wait().unwrap();
    if sig != Some(libc::SIGKILL) {
        assert!(status.code().is_some(), "rtscope ended by {status:?}");
    }
    assert_gone(&tree);
}

/// Messaging in process mode: shepherd + worker + 2 groups × (3 + 3) tasks.
const MESSAGING: [&str; 8] = [
    "load",
    "messaging",
    "-g",
    "2",
    "-f",
    "3",
    "--mode",
    "processes",
];

#[test]
fn no_messaging_process_survives_the_end_of_for() {
    survivors(&[&MESSAGING[..], &["--for", "2s"]].concat(), 14, None);
}

#[test]
fn no_messaging_process_survives_sigint() {
    survivors(&MESSAGING, 14, Some(libc::SIGINT));
}

#[test]
fn no_messaging_process_survives_sigterm() {
    survivors(&MESSAGING, 14, Some(libc::SIGTERM));
}

#[test]
fn no_messaging_process_survives_sigkill_of_rtscope() {
    survivors(&MESSAGING, 14, Some(libc::SIGKILL));
}

/// An external load whose grandchildren left its process group (setsid) and its parent.
const ESCAPING: [&str; 5] = ["load", "external", "--", "sh", "-c"];
const SCRIPT: &str = "setsid sleep 100 & sleep 100 & sleep 100";

#[test]
fn no_grandchild_of_an_external_load_survives_sigkill_of_rtscope() {
    survivors(&[&ESCAPING[..], &[SCRIPT]].concat(), 4, Some(libc::SIGKILL));
}

#[test]
fn no_grandchild_of_an_external_load_survives_sigterm() {
    survivors(&[&ESCAPING[..], &[SCRIPT]].concat(), 4, Some(libc::SIGTERM));
}

#[test]
fn no_hackbench_process_survives_sigkill_of_rtscope() {
    rtscope_testkit::require!(
        std::path::Path::new("/usr/bin/hackbench").exists(),
        "/usr/bin/hackbench is not installed (apt-get install rt-tests; .ci/run installs it)"
    );
    let args = hackbench("3", "100000000");
    // shepherd + hackbench + 2 × (3 + 3) tasks
    survivors(&[&["load"][..], &args].concat(), 14, Some(libc::SIGKILL));
}

#[test]
fn a_load_that_fails_early_is_reported_and_exits_1() {
    let o = common::run(
        bin(),
        &[
            "load",
            "--json",
            "external",
            "--",
            "sh",
            "-c",
            "echo oops >&2; exit 3",
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}", common::dump(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v[0]["status"], "failed", "{v}");
    assert_eq!(metric(&v[0], "exit_code"), 3.0);
    assert!(
        v[0]["output_tail"].as_str().unwrap().contains("oops"),
        "{v}"
    );
    assert!(String::from_utf8_lossy(&o.stderr).contains("ended: exit status 3"));
}

#[test]
fn a_load_that_ignores_sigterm_is_killed_after_the_grace_period() {
    let script = "trap '' TERM; sleep 100";
    let args = [
        "load", "--json", "--for", "300ms", "--grace", "300ms", "external", "--",
    ];
    let start = Instant::now();
    let o = common::run(bin(), &[&args[..], &["sh", "-c", script]].concat());
    // A liveness bound (the script sleeps 100 s unless killed), not a speed.
    assert!(
        start.elapsed() < Duration::from_secs(60),
        "took {:?}",
        start.elapsed()
    );
    let v: serde_json::Value =
        serde_json::from_slice(&o.stdout).unwrap_or_else(|_| panic!("{}", common::dump(&o)));
    assert_eq!(v[0]["status"], "killed", "{v}");
    assert_eq!(metric(&v[0], "signal"), libc::SIGKILL as f64);
}

// ---- the library API the campaign runner uses ----

fn specs() -> Vec<rtscope_load::LoadSpec> {
    vec![
        rtscope_load::LoadSpec::Cpu { threads: 1 },
        rtscope_load::LoadSpec::External {
            program: "sleep".into(),
            args: vec!["100".into()],
        },
    ]
}

#[test]
fn start_poll_stop_report_every_load_in_order() {
    let exe = std::path::Path::new(bin());
    let mut loads = rtscope_load::start(&specs(), exe).expect("start");
    assert_eq!(loads.pids().len(), 2);
    let tree = descendants(loads.shepherd_pid() as i32);
    assert!(tree.len() >= 2, "{tree:?}");
    std::thread::sleep(Duration::from_millis(300));
    assert!(loads.poll().is_empty(), "nothing ended early");
    let reports = loads.stop(Duration::from_secs(1));
    let names: Vec<&str> = reports.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["cpu", "sleep"]);
    assert!(
        reports
            .iter()
            .all(|r| r.status == rtscope_core::LoadStatus::Ok),
        "{reports:#?}"
    );
    assert!(reports[0].metric("ops").unwrap() > 0.0);
    assert_eq!(reports[1].metric("signal"), Some(libc::SIGTERM as f64));
    assert_gone(&tree);
}

#[test]
fn poll_reports_a_load_that_ended_early() {
    let exe = std::path::Path::new(bin());
    let spec = rtscope_load::LoadSpec::External {
        program: "false".into(),
        args: vec![],
    };
    let mut loads = rtscope_load::start(&[spec], exe).expect("start");
    let until = Instant::now() + Duration::from_secs(3);
    let exits = loop {
        let e = loads.poll();
        if !e.is_empty() || Instant::now() > until {
            break e;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(exits.len(), 1, "{exits:?}");
    assert_eq!((exits[0].index, exits[0].name.as_str()), (0, "false"));
    assert_eq!(exits[0].status, "exit status 1");
    assert_eq!(
        loads.stop(Duration::ZERO)[0].status,
        rtscope_core::LoadStatus::Failed
    );
}

#[test]
fn dropping_running_loads_ends_them_all() {
    let exe = std::path::Path::new(bin());
    let loads = rtscope_load::start(&specs(), exe).expect("start");
    let shepherd = loads.shepherd_pid() as i32;
    let mut tree = descendants(shepherd);
    tree.insert(shepherd, stat(shepherd).unwrap().1);
    drop(loads);
    assert_gone(&tree);
}

#[test]
fn start_refuses_a_missing_program_before_starting_anything() {
    let spec = rtscope_load::LoadSpec::External {
        program: "stressapptest-not-here".into(),
        args: vec![],
    };
    let e = rtscope_load::start(&[spec], std::path::Path::new(bin())).unwrap_err();
    assert!(
        matches!(e, rtscope_load::LoadError::ProgramNotFound { .. }),
        "{e}"
    );
}

#[test]
fn loads_die_with_a_sigkilled_shepherd() {
    let messaging = rtscope_load::LoadSpec::Messaging {
        groups: 1,
        fds: 2,
        size: 100,
        transport: rtscope_load::MsgTransport::Socket,
        mode: rtscope_load::MsgMode::Processes,
    };
    let specs = [messaging, specs().remove(1)];
    let loads = rtscope_load::start(&specs, std::path::Path::new(bin())).expect("start");
    let shepherd = loads.shepherd_pid() as i32;
    let tree = wait_for_tree(shepherd, 6); // worker + 4 tasks + sleep
    signal(shepherd, libc::SIGKILL);
    assert_gone(&tree);
    drop(loads); // reaps the shepherd
}

#[test]
fn a_second_ctrl_c_still_gets_the_report() {
    let child = Command::new(bin())
        .args(["load", "--json", "cpu", "--threads", "1"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id() as i32;
    wait_for_tree(pid, 2);
    signal(pid, libc::SIGINT);
    std::thread::sleep(Duration::from_millis(20));
    signal(pid, libc::SIGINT);
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", common::dump(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v[0]["status"], "ok");
}
