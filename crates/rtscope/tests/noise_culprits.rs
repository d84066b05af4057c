//! `rtscope noise --explain` beside many short-lived processes (issue 48): a shell loop starting
//! `/bin/true` over and over on the measured CPU makes thousands of distinct culprit PIDs, and a
//! SCHED_FIFO 50 thread `inject` busy 300 µs of every 10 ms on the same CPU is the known cause
//! that must not be lost among them. Function checks only: the injector is named in the culprit
//! table, the short-lived PIDs merge into rows by command listing their PIDs (in the output and
//! in `runs explain` of the stored run), the class totals hold every row's time, and the
//! "unexplained" row is not the largest. The injector's charged share and the unexplained share
//! are printed (`--nocapture`), never asserted: they depend on the host's load. Needs root and tracefs (fails under RTSCOPE_TEST_STRICT=1 without them).

use crate::common::{dump, now_ns, run_for, temp_path};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_rtscope");

/// The injector's busy time per burst and its period (ns).
const BUSY_NS: u64 = 300_000;
const PERIOD_NS: u64 = 10_000_000;

/// Pins the calling thread to `cpu`.
fn pin(cpu: usize) {
    // SAFETY: a local cpu_set_t, zeroed then set, passed with its size.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

/// A SCHED_FIFO 50 thread named `inject` on `cpu`, busy [`BUSY_NS`] of every [`PERIOD_NS`]
/// until `stop`; returns each burst's first and last clock reading (CLOCK_MONOTONIC ns).
fn injector(cpu: usize, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<Vec<(u64, u64)>> {
    std::thread::spawn(move || {
        pin(cpu);
        // SAFETY: a NUL-terminated name and a local sched_param.
        unsafe {
            libc::prctl(libc::PR_SET_NAME, c"inject".as_ptr(), 0, 0, 0);
            let mut sp: libc::sched_param = std::mem::zeroed();
            sp.sched_priority = 50;
            libc::sched_setscheduler(0, libc::SCHED_FIFO, &sp);
        }
        let mut bursts = Vec::with_capacity(10_000);
        let mut next = now_ns();
        while !stop.load(Ordering::Relaxed) {
            let start = now_ns();
            let end = start + BUSY_NS;
            let mut t = start;
            while t < end {
                std::hint::spin_loop();
                t = now_ns();
            }
            bursts.push((start, t));
            next += PERIOD_NS;
            std::thread::sleep(Duration::from_nanos(next.saturating_sub(now_ns())));
        }
        bursts
    })
}

/// A shell on `cpu` starting `/bin/true` again and again for at most `seconds` (so it never
/// outlives the test by long); killed by its PID when dropped.
struct Spawner(Child);

impl Spawner {
    fn start(cpu: usize, seconds: u64) -> Spawner {
        let script = format!(
            "end=$(($(date +%s) + {seconds})); while [ $(date +%s) -lt $end ]; do \
             /bin/true; /bin/true; /bin/true; /bin/true; done"
        );
        let mut cmd = Command::new("/bin/sh");
        cmd.args(["-c", &script])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        // SAFETY: only sched_setaffinity (async-signal-safe) between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                pin(cpu);
                Ok(())
            });
        }
        Spawner(cmd.spawn().expect("start /bin/sh"))
    }
}

impl Drop for Spawner {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn noise_explain_beside_thousands_of_short_lived_processes_names_the_injector_and_merges_them() {
    rtscope_testkit::require_ok!(crate::explain::traceable());
    let _rt = rtscope_testkit::rt_lock();
    let cpu = std::thread::available_parallelism().unwrap().get() - 1;
    let (json, db) = (
        temp_path("noise-culprits.json"),
        temp_path("noise-culprits.db"),
    );
    let _ = std::fs::remove_file(&json);
    let _ = std::fs::remove_file(&db);
    let spawner = Spawner::start(cpu, 40);
    let stop = Arc::new(AtomicBool::new(false));
    let inject = injector(cpu, stop.clone());
    let cpus = cpu.to_string();
    let (json_arg, db_arg) = (json.to_str().unwrap(), db.to_str().unwrap());
    let all = [
        "noise",
        "--cpus",
        &cpus,
        "-D",
        "6s",
        "--explain",
        "20us",
        "-q",
        "--db",
        db_arg,
        "--json",
        json_arg,
    ];
    let (o, timed_out) = run_for(BIN, &all, Duration::from_secs(60));
    stop.store(true, Ordering::Relaxed);
    let bursts = inject.join().unwrap();
    drop(spawner);
    assert!(!timed_out, "{}", dump(&o));
    assert_eq!(o.status.code(), Some(0), "{}", dump(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let x = &doc["explain"];
    let rows = x["culprits"].as_array().expect("explain.culprits");
    let comm = |r: &serde_json::Value| r["category"]["comm"].as_str().unwrap_or("").to_string();
    let injected = rows
        .iter()
        .find(|r| r["category"]["kind"] == "thread" && comm(r) == "inject")
        .unwrap_or_else(|| panic!("inject not among the culprits: {rows:#?}\n{out}"));
    let pid = injected["category"]["pid"].as_i64().unwrap();
    assert!(
        out.contains(&format!("thread inject:{pid}:rt50")),
        "the culprit table does not name the injector:\n{out}"
    );
    // With every gap traced, the largest culprit is a cause, never "unexplained". A host that
    // overran the trace buffer (beside CI's hog: 1,026 of 2,285 gaps lost) leaves gaps no trace
    // covers, which are honestly unexplained; that is the load's, not the injector's.
    if x["counts"]["no_context"].as_u64() == Some(0) {
        assert_ne!(rows[0]["category"]["kind"], "unexplained", "{out}");
    }
    let merged = rows
        .iter()
        .find(|r| r["merged"]["by"] == "command")
        .unwrap_or_else(|| panic!("no command's PIDs merged: {rows:#?}\n{out}"));
    let pids = merged["merged"]["pids"].as_array().unwrap().len() as u64
        + merged["merged"]["more_pids"].as_u64().unwrap();
    assert!(pids >= 2, "{merged:#}");
    assert!(
        out.contains(&format!("{} ({pids} PIDs: ", comm(merged))),
        "{out}"
    );
    // The stored summary gives `runs explain` the same rows.
    let (o, _) = run_for(
        BIN,
        &["runs", "--db", db_arg, "explain", "last"],
        Duration::from_secs(30),
    );
    assert_eq!(o.status.code(), Some(0), "{}", dump(&o));
    let stored = String::from_utf8_lossy(&o.stdout);
    for want in [
        format!("thread inject:{pid}:rt50"),
        format!("{} ({pids} PIDs: ", comm(merged)),
    ] {
        assert!(
            stored.contains(&want),
            "runs explain lacks {want}:\n{stored}"
        );
    }
    worst_gaps_add_up(&out, x);
    // The report answers with the run's worst gap and names the injector among the culprits.
    let dir = crate::common::fresh_dir("noise-culprits-report");
    let (o, _) = run_for(
        BIN,
        &["report", "--db", db_arg, "-o", dir.to_str().unwrap()],
        Duration::from_secs(60),
    );
    assert_eq!(o.status.code(), Some(0), "{}", dump(&o));
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    let answer = &html[html
        .find("<div class=\"answer\" id=\"answer\">")
        .expect("no answer box")..];
    let answer = &answer[..answer.find("</div>").unwrap()];
    assert!(
        answer.contains("the longest traced gap (") && answer.contains("its parts: "),
        "{answer}"
    );
    assert!(answer.contains("of the traced gap time"), "{answer}");
    let gaps = &html[html.find("id=\"noise-gaps\"").expect("no worst gaps")..];
    assert!(
        gaps.contains(&format!("thread inject:{pid}:rt50")),
        "{gaps}"
    );
    for link in html.split("href=\"#").skip(1) {
        let id = &link[..link.find('"').unwrap()];
        assert!(
            html.contains(&format!(" id=\"{id}\"")),
            "a link to #{id}, which the page lacks"
        );
    }
    let classes = &x["classes"];
    let class_ns: u64 = classes
        .as_object()
        .expect("explain.classes")
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum();
    let row_ns: u64 = rows.iter().map(|r| r["total_ns"].as_u64().unwrap()).sum();
    assert_eq!(class_ns, row_ns, "the class totals miss rows' time");
    let unexplained = classes["unexplained_ns"].as_u64().unwrap();
    // The injector's busy time inside the run's 6 s (from its clock start), for the printout.
    let t0 = doc["clock_start_ns"].as_u64().unwrap();
    let busy: u64 = bursts
        .iter()
        .map(|&(a, b)| b.min(t0 + 6_000_000_000).saturating_sub(a.max(t0)))
        .sum();
    eprintln!(
        "noise --explain beside a /bin/true loop on CPU {cpu}: inject charged {} of its {} µs \
         busy in the run ({:.1} %); unexplained {:.1} % of {} µs traced gap time; {} culprit rows, {pids} PIDs in \
         `{}`'s row",
        injected["total_ns"].as_u64().unwrap() / 1000,
        busy / 1000,
        injected["total_ns"].as_u64().unwrap() as f64 * 100.0 / busy.max(1) as f64,
        unexplained as f64 * 100.0 / class_ns.max(1) as f64,
        class_ns / 1000,
        rows.len(),
        comm(merged)
    );
}

/// Each worst-gap line of the text accounts for its gap: its shares sum to 100 % (±1), it ends
/// with the unexplained rest, and the JSON's charges of each worst gap are within the gap.
fn worst_gaps_add_up(out: &str, x: &serde_json::Value) {
    let lines: Vec<&str> = out
        .lines()
        .skip_while(|l| l.trim() != "worst gaps")
        .skip(1)
        .filter(|l| {
            l.trim_start()
                .split_once("s cpu")
                .is_some_and(|(at, _)| at.parse::<f64>().is_ok())
        })
        .collect();
    assert!(!lines.is_empty(), "no worst gap printed:\n{out}");
    for l in lines {
        let shares: u64 = l
            .split(" (")
            .skip(1)
            .filter_map(|p| p.split("%)").next()?.parse::<u64>().ok())
            .sum();
        assert!((99..=101).contains(&shares), "{shares} %: {l}");
        assert!(
            l.contains(", unexplained rest ") || l.contains(": unexplained rest "),
            "{l}"
        );
    }
    for g in x["worst"].as_array().expect("explain.worst") {
        let Some(charges) = g["charges"].as_array() else {
            continue; // from the monitors only
        };
        let len =
            g["spike"]["wakeup_ns"].as_u64().unwrap() - g["spike"]["deadline_ns"].as_u64().unwrap();
        let charged: u64 = charges.iter().map(|c| c["ns"].as_u64().unwrap()).sum();
        assert!(
            charged <= len,
            "charges {charged} ns of a {len} ns gap: {g}"
        );
    }
}
