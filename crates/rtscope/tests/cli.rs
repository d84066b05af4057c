//! The real rtscope binary, run as root: front ends, exit codes, signals, bad input.
//! Every test holds the SCHED_FIFO test lock (`rtscope_testkit::rt_lock`): their runs use the
//! default SCHED_FIFO 90 and must not overlap another test's, e.g. `check`'s audit of the
//! machine's real-time tasks.

use std::io::Read;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_rtscope")
}

/// The rtscope command, recording into a per-test-process database in the temp dir.
fn cmd() -> Command {
    let mut c = Command::new(bin());
    c.env(
        "RTSCOPE_DB",
        std::env::temp_dir().join(format!("rtscope-cli-tests-{}.db", std::process::id())),
    );
    c
}

fn rtscope(args: &[&str]) -> Output {
    cmd().args(args).output().expect("run rtscope")
}

/// What `rtscope cyclictest -q` prints first: cyclictest's PM QoS line (the drop-in holds
/// /dev/cpu_dma_latency at 0 by default, as cyclictest), then thread 0's `T:` line.
const DROP_IN_PREAMBLE_AND_T0: &str = "# /dev/cpu_dma_latency set to 0us\nT: 0 (";

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn tmp(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("rtscope-test-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn measure_prints_percentiles_and_missed_periods_and_writes_versioned_json() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    let _rt = crate::common::rt_lock();
    let json = tmp("measure").join("m.json");
    let o = rtscope(&[
        "measure",
        "-l",
        "200",
        "-i",
        "500us",
        "--json",
        json.to_str().unwrap(),
        "-q",
    ]);
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}{}", text(&o.stderr));
    for col in ["samples", "p50", "p99.9999", "max at", "missed", "miss %"] {
        assert!(out.contains(col), "missing column {col}:\n{out}");
    }
    assert!(out.lines().any(|l| l.starts_with("all ")), "{out}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["schema"], "rtscope.measure/1");
    assert_eq!(v["complete"], true);
    let threads = v["threads"].as_array().unwrap();
    assert!(!threads.is_empty());
    for t in threads {
        assert_eq!(t["samples"], 200);
        let buckets: u64 = t["histogram"]["buckets"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b[2].as_u64().unwrap())
            .sum();
        assert_eq!(buckets, 200, "histogram holds every sample");
        let missed = t["missed_periods"].as_u64().unwrap();
        assert_eq!(t["deadlines"].as_u64(), Some(200 + missed), "{t}");
        let ratio = t["miss_ratio"].as_f64().unwrap();
        assert!(
            (ratio - missed as f64 / (200 + missed) as f64).abs() < 1e-12,
            "{t}"
        );
        assert!(t["percentiles_ns"]["p50"].as_u64().unwrap() <= t["max_ns"].as_u64().unwrap());
    }
    assert_eq!(
        v["total"]["samples"].as_u64().unwrap(),
        200 * threads.len() as u64
    );
}

#[test]
fn measure_runs_sched_deadline_threads() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    let _rt = crate::common::rt_lock();
    let o = rtscope(&[
        "measure",
        "-l",
        "20",
        "-q",
        "--policy",
        "deadline",
        "--dl-runtime",
        "100us",
        "-i",
        "1ms",
    ]);
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}{}", text(&o.stderr));
    assert!(
        out.contains("SCHED_DEADLINE runtime 100.0us deadline 1.00ms period 1.00ms"),
        "{out}"
    );
}

#[test]
fn measure_limits_gate_the_exit_code() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    let _rt = crate::common::rt_lock();
    let pass = rtscope(&[
        "measure",
        "-l",
        "50",
        "-i",
        "200us",
        "-q",
        "--limit",
        "max=10s",
        "--limit",
        "p99.99=10s",
    ]);
    assert_eq!(pass.status.code(), Some(0), "{}", text(&pass.stderr));
    assert!(text(&pass.stdout).contains("limit pass: max on all"));
    let fail = rtscope(&[
        "measure", "-l", "50", "-i", "200us", "-q", "--limit", "max=1ns",
    ]);
    assert_eq!(fail.status.code(), Some(1));
    assert!(
        text(&fail.stdout).contains("limit FAIL: max on all"),
        "{}",
        text(&fail.stdout)
    );
}

#[test]
fn bad_input_is_named_with_exit_code_2() {
    let _rt = crate::common::rt_lock();
    let cases: &[(&[&str], &str)] = &[
        (&["measure", "-i", "0"], "--interval"),
        (&["measure", "-p", "100"], "--priority"),
        (&["measure", "--cpus", "999"], "not online"),
        (&["measure", "--threads", "1000000"], "--threads"),
        (&["measure", "--policy", "fast"], "--policy"),
        (&["measure", "--limit", "p42=1us"], "--limit"),
        (&["measure", "-D", "1y"], "--duration"),
        (&["measure", "--policy", "deadline"], "--dl-runtime"),
        (
            &[
                "measure",
                "--policy",
                "deadline",
                "--dl-runtime",
                "100us",
                "--cpus",
                "0",
            ],
            "--cpus",
        ),
        (
            &[
                "measure",
                "--policy",
                "deadline",
                "--dl-runtime",
                "2ms",
                "-i",
                "1ms",
            ],
            "SCHED_DEADLINE",
        ),
        (&["cyclictest", "-i", "0"], "'-i'"),
        (&["cyclictest", "-p", "100"], "'-p'"),
        (&["cyclictest", "-a", "999"], "not online"),
        (&["cyclictest", "-h", "0"], "'-h'"),
        (&["cyclictest", "--policy=fast"], "--policy"),
        (
            &["cyclictest", "-t", "1000000"],
            "more than this system allows",
        ),
        (&["cyclictest", "--bogus"], "--bogus"),
        (&["cyclictest", "-l", "x"], "'-l'"),
    ];
    for (args, needle) in cases {
        let o = rtscope(args);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(needle),
            "{args:?}: stderr lacks {needle}: {err}"
        );
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

#[test]
fn legacy_n_flag_is_accepted_with_a_notice() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    let _rt = crate::common::rt_lock();
    let o = rtscope(&["cyclictest", "-n", "-l20", "-i", "200", "-q"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(text(&o.stderr).contains("-n is obsolete"));
    assert!(text(&o.stdout).starts_with(DROP_IN_PREAMBLE_AND_T0));
}

#[test]
fn missing_rt_privilege_names_the_fix() {
    rtscope_testkit::require_root!("setpriv to run a step as another user");
    let _rt = crate::common::rt_lock();
    let o = crate::common::as_nobody()
        .args(["measure", "-l", "5", "--no-mlock", "--no-db"])
        .output()
        .expect("setpriv (util-linux) is needed: apt-get install util-linux");
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("run as root")
            && err.contains("RLIMIT_RTPRIO")
            && err.contains("realtime group"),
        "{err}"
    );
}

/// Waits (up to a minute) until process `pid` has its measuring threads (`rtscope-m…`), so a
/// loaded machine's slow start-up does not eat the time a test lets the run measure. With
/// `realtime`, also until every one of them has its real-time policy: a new thread starts as
/// SCHED_OTHER and may wait long on a loaded machine before it sets its policy and prefaults.
fn wait_until_measuring(pid: u32, realtime: bool) {
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(60) {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            return;
        };
        // (comm, policy): the policy is field 41 of stat, the 39th after "(comm) ".
        let threads: Vec<(String, u32)> = tasks
            .flatten()
            .filter_map(|t| {
                let stat = std::fs::read_to_string(t.path().join("stat")).ok()?;
                let (head, rest) = stat.rsplit_once(") ")?;
                let comm = head.split_once(" (")?.1.to_string();
                let policy = rest.split_whitespace().nth(38)?.parse().ok()?;
                Some((comm, policy))
            })
            .filter(|(comm, _)| comm.starts_with("rtscope-m"))
            .collect();
        if !threads.is_empty() && (!realtime || threads.iter().all(|&(_, p)| p != 0)) {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Starts rtscope, lets it measure for `after` once its measuring threads run, sends `signal`.
fn spawn_and_signal(args: &[&str], after: Duration, signal: i32) -> (Output, Duration) {
    let mut child = cmd()
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_until_measuring(child.id(), false);
    std::thread::sleep(after);
    let t0 = Instant::now();
    // SAFETY: kill with the child's pid and a valid signal number.
    unsafe { libc::kill(child.id() as i32, signal) };
    let mut out = Vec::new();
    child.stdout.take().unwrap().read_to_end(&mut out).unwrap();
    let mut err = Vec::new();
    child.stderr.take().unwrap().read_to_end(&mut err).unwrap();
    let status = child.wait().unwrap();
    (
        Output {
            status,
            stdout: out,
            stderr: err,
        },
        t0.elapsed(),
    )
}

#[test]
fn sigint_mid_run_still_yields_complete_outputs_and_exit_3() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    let _rt = crate::common::rt_lock();
    let json = tmp("sigint").join("m.json");
    let (o, _) = spawn_and_signal(
        &[
            "measure",
            "-D",
            "30s",
            "-i",
            "1ms",
            "--json",
            json.to_str().unwrap(),
            "-q",
        ],
        Duration::from_millis(400),
        libc::SIGINT,
    );
    assert_eq!(o.status.code(), Some(3), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    assert!(
        out.contains("interrupted by SIGINT") && out.lines().any(|l| l.starts_with("all ")),
        "{out}"
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["complete"], false);
    assert_eq!(v["interrupted_by"], "SIGINT");
    // Complete outputs of what was measured: the total is the threads' samples, some were taken
    // (the signal came after the threads measured), and it stopped early: fewer than the 30 s
    // at 1 ms asked for (counts, not the command's time, which a loaded host stretches).
    let per_thread: u64 = v["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["samples"].as_u64().unwrap())
        .sum();
    let total = v["total"]["samples"].as_u64().unwrap();
    let threads = v["threads"].as_array().unwrap().len() as u64;
    assert!(
        total == per_thread && total > 0 && total < 30_000 * threads,
        "{total} samples, the threads' {per_thread}"
    );
}

#[test]
fn sigterm_ends_a_cyclictest_run_with_its_summary_json_and_histogram() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    let _rt = crate::common::rt_lock();
    let json = tmp("sigterm").join("c.json");
    let j = format!("--json={}", json.display());
    let (o, _) = spawn_and_signal(
        &["cyclictest", "-D", "30", "-m", "-q", "-h", "100", &j],
        Duration::from_millis(400),
        libc::SIGTERM,
    );
    // Like cyclictest: stopped by a signal, exit 0 whatever -D says; recorded in the JSON.
    assert_eq!(o.status.code(), Some(0));
    let out = text(&o.stdout);
    assert!(
        out.contains("# Histogram") && out.contains("# Max Latencies:"),
        "{out}"
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    // The JSON holds the part that ran: the wake-ups the histogram on stdout counted, in its
    // buckets and beyond them (how many there were in 400 ms is the machine's business, not
    // the test's).
    let first = |label: &str| -> u64 {
        out.lines()
            .find_map(|l| l.strip_prefix(label))
            .and_then(|t| t.split_whitespace().next()?.parse().ok())
            .unwrap_or_else(|| panic!("no `{label}` line\n{out}"))
    };
    let total = first("# Total:") + first("# Histogram Overflows:");
    assert!(total > 0, "{out}");
    assert_eq!(
        v["thread"]["0"]["cycles"].as_u64(),
        Some(total),
        "{v}\n{out}"
    );
    assert_eq!(v["rtscope"]["interrupted"], true, "{v}");
}

#[test]
fn sigint_ends_an_endless_cyclictest_run_normally() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    let _rt = crate::common::rt_lock();
    let (o, _) = spawn_and_signal(
        &["cyclictest", "-q", "-i", "500"],
        Duration::from_millis(300),
        libc::SIGINT,
    );
    assert_eq!(
        o.status.code(),
        Some(0),
        "an endless run has no other way to end"
    );
    assert!(text(&o.stdout).starts_with(DROP_IN_PREAMBLE_AND_T0));
}

#[test]
fn a_closed_stdout_pipe_never_panics() {
    let _rt = crate::common::rt_lock();
    let mut child = cmd()
        .args(["cyclictest", "-v", "-i", "100", "-D", "20"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 64];
    child
        .stdout
        .as_mut()
        .unwrap()
        .read_exact(&mut first)
        .unwrap();
    drop(child.stdout.take());
    let t0 = Instant::now();
    let status = child.wait().unwrap();
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(
        t0.elapsed() < Duration::from_secs(3),
        "rtscope kept running after its reader left"
    );
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(status.code(), Some(0), "{err}");
}

/// As cyclictest: the break is printed and the exit code is 0 (issue 51).
#[test]
fn break_threshold_prints_the_break_and_exits_0() {
    let _rt = crate::common::rt_lock();
    let o = rtscope(&[
        "cyclictest",
        "-l",
        "2000",
        "-i",
        "200",
        "-h",
        "50",
        "-b",
        "1",
        "-q",
    ]);
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(
        out.contains("# Thread Ids:")
            && out.contains("# Break thread: ")
            && out.contains("# Break value: "),
        "{out}"
    );
}

#[test]
fn the_binary_answers_to_the_name_cyclictest() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    let _rt = crate::common::rt_lock();
    let dir = tmp("symlink");
    let link = dir.join("cyclictest");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(bin(), &link).unwrap();
    let o = Command::new(&link)
        .env(
            "RTSCOPE_DB",
            std::env::temp_dir().join(format!("rtscope-cli-tests-{}.db", std::process::id())),
        )
        .args(["-l20", "-mq", "-i", "200"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(text(&o.stdout).starts_with(DROP_IN_PREAMBLE_AND_T0));
}

#[test]
fn cpu_dma_latency_is_written_only_when_asked_and_restored() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    let _rt = crate::common::rt_lock();
    // rtscope's own request is an open file descriptor on /dev/cpu_dma_latency (the kernel
    // drops it when the descriptor closes), so the test looks at rtscope's descriptors, not at
    // the system-wide value other processes may change at any time.
    let holds = |latency: Option<&str>| {
        let mut args = vec!["measure", "-D", "2s", "-q"];
        if let Some(l) = latency {
            args.extend(["--latency", l]);
        }
        let child = cmd().args(&args).stdout(Stdio::null()).spawn().unwrap();
        let (mut seen, mut value) = (false, None);
        while crate::common::pid_alive(child.id()) && !seen {
            seen = dma_latency_fd_open(child.id());
            if seen {
                // The system-wide value is the smallest request: ours bounds it.
                let v = std::fs::read("/dev/cpu_dma_latency").unwrap();
                value = Some(i32::from_ne_bytes(v[..4].try_into().unwrap()));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
        (seen, value)
    };
    let (seen, value) = holds(Some("7"));
    assert!(
        seen,
        "--latency 7: rtscope never held /dev/cpu_dma_latency open"
    );
    assert!(value.is_some_and(|v| v <= 7), "{value:?}");
    let (seen, _) = holds(None);
    assert!(
        !seen,
        "without --latency rtscope opened /dev/cpu_dma_latency"
    );
}

/// Whether process `pid` has a file descriptor open on /dev/cpu_dma_latency.
/// Whether process `pid` holds a request on /dev/cpu_dma_latency: a descriptor open on it for
/// writing. The pre-run audit reads the value in force (read-only, for a moment); beside the
/// hog in a `.ci/run` pass the 10 ms poll caught that read once and the test failed.
fn dma_latency_fd_open(pid: u32) -> bool {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    fds.flatten().any(|fd| {
        let on_it = std::fs::read_link(fd.path())
            .is_ok_and(|t| t == std::path::Path::new("/dev/cpu_dma_latency"));
        on_it && opened_for_writing(pid, &fd.file_name().to_string_lossy())
    })
}

/// Whether descriptor `fd` of `pid` was opened for writing (`flags:` in its fdinfo, octal;
/// the access mode is its two low bits, 0 = read-only).
fn opened_for_writing(pid: u32, fd: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/fdinfo/{fd}")).is_ok_and(|info| {
        info.lines()
            .find_map(|l| l.strip_prefix("flags:"))
            .and_then(|f| u32::from_str_radix(f.trim(), 8).ok())
            .is_some_and(|flags| flags & 0o3 != 0)
    })
}

#[test]
fn compatible_json_stays_valid_with_quotes_in_the_command_line() {
    let _rt = crate::common::rt_lock();
    let dir = tmp("quote");
    let json = dir.join("a\"b.json");
    let arg = format!("--json={}", json.display());
    let o = rtscope(&["cyclictest", "-l", "10", "-q", &arg]);
    assert_eq!(o.status.code(), Some(0));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).expect("valid JSON");
    assert!(v["cmdline:"].as_str().unwrap().contains("a\"b.json"));
}

#[test]
fn help_man_page_and_completions_are_generated() {
    let _rt = crate::common::rt_lock();
    let h = rtscope(&["--help"]);
    assert!(text(&h.stdout).contains("measure") && h.status.success());
    let m = rtscope(&["man"]);
    assert!(text(&m.stdout).contains(".TH \"RTSCOPE\" \"1\""));
    let mm = rtscope(&["man", "runs", "show"]);
    assert!(
        text(&mm.stdout).contains("rtscope\\-runs\\-show \\- Show one run") && mm.status.success()
    );
    let bad = rtscope(&["man", "nope"]);
    assert_eq!(bad.status.code(), Some(2));
    let v = rtscope(&["--version"]);
    let version = text(&v.stdout);
    assert!(
        version.starts_with(&format!("rtscope {} (", env!("CARGO_PKG_VERSION"))),
        "{version}"
    );
    assert!(version.contains(", commit "), "{version}");
    let c = rtscope(&["completions", "bash"]);
    assert!(text(&c.stdout).contains("_rtscope"));
    let ch = rtscope(&["cyclictest", "--help"]);
    assert!(text(&ch.stdout).contains("--histogram") && ch.status.success());
}

/// Minor page faults of the measuring threads (`rtscope-mN`) of process `pid`, by thread id.
fn measuring_thread_faults(pid: u32) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .flatten()
    {
        let stat = std::fs::read_to_string(task.path().join("stat")).unwrap_or_default();
        let Some((comm, rest)) = stat.split_once(") ") else {
            continue;
        };
        if comm.contains("rtscope-m") {
            // Fields after "(comm) ": state ppid pgrp session tty tpgid flags minflt ...
            let minflt = rest.split_whitespace().nth(7).unwrap().parse().unwrap();
            out.push((task.file_name().to_string_lossy().into_owned(), minflt));
        }
    }
    out.sort();
    out
}

#[test]
fn measuring_threads_take_no_page_fault_in_their_loop() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    let _rt = crate::common::rt_lock();
    let mut child = cmd()
        .args(["measure", "-D", "3s", "-i", "200us", "-q", "--no-db"])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    wait_until_measuring(child.id(), true);
    std::thread::sleep(Duration::from_millis(500));
    let before = measuring_thread_faults(child.id());
    std::thread::sleep(Duration::from_millis(1500));
    let after = measuring_thread_faults(child.id());
    assert!(child.wait().unwrap().success());
    assert!(!before.is_empty());
    assert_eq!(
        before, after,
        "minor faults per measuring thread changed during the run"
    );
}
