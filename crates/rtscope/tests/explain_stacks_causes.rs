//! Issue 65 item 2, against injected truth, as root on this host: the kernel stack a spike
//! shows is of the context charged its time. A user-space spinner process (SCHED_FIFO 95,
//! busy 3 ms every 100 ms in user space, started here by fork) shares the measured CPU with
//! a second rtscope process measuring beside it at FIFO 92, above the measured thread's 90:
//! no shown stack is an rtscope thread's (that process's `rtscope-m0` sleeping, or any
//! other) or the measured thread's own sleep; the spinner is said to be in user space,
//! never its `clock_nanosleep`; the time by kernel function has no sleep path in it; `runs
//! explain --folded` writes folded stacks without rtscope's tracing frames that inferno
//! renders unchanged; the report's flame graph covers every traced spike. A test that
//! cannot run here fails under RTSCOPE_TEST_STRICT=1 and skips with the reason printed
//! otherwise.

use crate::explain::traceable;
use std::process::{Command, Stdio};

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_rtscope")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `CLOCK_MONOTONIC` (ns), by the system call only (async-signal-safe: the spinner calls it
/// after fork).
fn mono_ns() -> u64 {
    // SAFETY: a local timespec the call writes.
    let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
    // SAFETY: `ts` is a valid timespec for the call to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// A spinner process named `spinner` on `cpu` at SCHED_FIFO `prio`: sleeps 96.3 ms, then
/// spins 3 ms in user space, for `secs` seconds. Killed (and reaped) when dropped. Its stack
/// is taken by a scheduler tick that finds it 1.5 ms or more into a measured thread's wait:
/// a cycle of 100 ms (97 + 3) kept the ticks' phase in its spins almost still (a 4 ms tick
/// at 250 Hz divides it), and a run of 50 spins then had none of them or a run of them
/// (none in 3 of about 15 runs beside loads, 29 Nov 2026); 99.3 ms moves it 0.7 ms a
/// spin.
struct Spinner(libc::pid_t);

impl Spinner {
    fn start(cpu: usize, prio: i32, secs: u64) -> Spinner {
        // SAFETY: the child calls only async-signal-safe functions (sched_setaffinity,
        // sched_setscheduler, prctl, clock_gettime, clock_nanosleep, _exit) on memory it
        // owns on its stack, and never returns from this block.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            // SAFETY: as above; every argument is a local of this frame.
            unsafe {
                let mut set: libc::cpu_set_t = std::mem::zeroed();
                libc::CPU_SET(cpu, &mut set);
                libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
                let mut sp: libc::sched_param = std::mem::zeroed();
                sp.sched_priority = prio;
                libc::sched_setscheduler(0, libc::SCHED_FIFO, &sp);
                libc::prctl(libc::PR_SET_NAME, c"spinner".as_ptr(), 0, 0, 0);
                let end = mono_ns() + secs * 1_000_000_000;
                let nap = libc::timespec {
                    tv_sec: 0,
                    tv_nsec: 96_300_000,
                };
                while mono_ns() < end {
                    libc::clock_nanosleep(libc::CLOCK_MONOTONIC, 0, &nap, std::ptr::null_mut());
                    let busy = mono_ns() + 3_000_000;
                    while mono_ns() < busy {
                        std::hint::spin_loop();
                    }
                }
                libc::_exit(0);
            }
        }
        Spinner(pid)
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        // SAFETY: our own child's PID; waitpid reaps it.
        unsafe {
            libc::kill(self.0, libc::SIGKILL);
            libc::waitpid(self.0, std::ptr::null_mut(), 0);
        }
    }
}

/// The frames of a JSON stack, innermost first.
fn frames(s: &serde_json::Value) -> Vec<&str> {
    s["frames"]
        .as_array()
        .map(|f| f.iter().filter_map(|x| x.as_str()).collect())
        .unwrap_or_default()
}

/// The sleep paths no shown function may be.
const SLEEPS: &[&str] = &[
    "do_nanosleep",
    "hrtimer_nanosleep",
    "common_nsleep",
    "common_nsleep_timens",
    "__x64_sys_clock_nanosleep",
];

#[test]
fn a_user_space_spinner_beside_another_rtscope_is_said_to_be_in_user_space_and_no_stack_is_rtscopes(
) {
    rtscope_testkit::require_ok!(traceable());
    rtscope_testkit::require!(
        rtscope_testkit::bpf_events_here()
            || std::path::Path::new("/sys/kernel/tracing/synthetic_events").exists(),
        "a kernel that takes late-only stacks (BPF programs on trace events, or hist triggers)"
    );
    let _rt = rtscope_testkit::rt_lock();
    let d = std::env::temp_dir().join(format!("rtscope-causes-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    let (db, json) = (d.join("x.db"), d.join("x.json"));
    let cpu = std::thread::available_parallelism().unwrap().get() - 1;
    let cpus = cpu.to_string();
    let spinner = Spinner::start(cpu, 95, 9);
    // The second rtscope: a measuring thread `rtscope-m0` at FIFO 92 on the same CPU, which
    // sleeps in clock_nanosleep right before the measured one gets its CPU back.
    let mut beside = Command::new(bin())
        .args([
            "measure", "-D", "8s", "-i", "1ms", "-p", "92", "--cpus", &cpus,
        ])
        .args(["--no-db", "-q"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(500));
    let o = Command::new(bin())
        .args([
            "measure", "-D", "5s", "-i", "1ms", "-p", "90", "--cpus", &cpus,
        ])
        .args([
            "--explain",
            "1.5ms",
            "--explain-keep",
            "40",
            "--explain-stacks",
            "auto",
        ])
        .arg("--db")
        .arg(&db)
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    let _ = beside.wait();
    drop(spinner);
    let (out, err) = (text(&o.stdout), text(&o.stderr));
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let x = &v["explain"];
    assert!(out.contains("thread spinner:"), "{out}");
    let worst = x["worst"].as_array().unwrap();
    let mut spinner_stacks = 0;
    for w in worst {
        let Some(s) = w.get("stack") else { continue };
        let comm = s["task"]["comm"].as_str().unwrap_or("");
        // Never an rtscope thread's (the other process's measuring thread, or any), never
        // the measured thread's own.
        assert!(comm != "rtscope" && !comm.starts_with("rtscope-"), "{s}");
        assert_ne!(s["task"]["pid"], w["spike"]["tid"], "{s}");
        // The task whose stack it is was charged time in the spike.
        let charged = w["charges"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["pid"] == s["task"]["pid"]);
        assert!(charged, "{w}");
        // rtscope's own tracing frames are cut from the stored stack's tip.
        let tip = frames(s).first().copied().unwrap_or("");
        assert!(
            !tip.starts_with("bpf_trace_run") && !tip.starts_with("__traceiter_"),
            "{s}"
        );
        if comm == "spinner" {
            spinner_stacks += 1;
            let f = frames(s);
            assert!(!f.iter().any(|f| f.starts_with("spin")), "{s}");
        }
    }
    // Every kept spike the spinner was charged most of has a stack, and it is the spinner's
    // (its user space, at the tick that found it holding the CPU). Whether the spinner leads
    // any of the 40 kept is the host's doing: beside CI's hog a rerun kept none it led (the
    // host's `qemu`, `rustc` and steal outlasted its 9 ms), so the count is required where
    // it led one (the text's "thread spinner:" above holds either way).
    let led_kept = worst
        .iter()
        .filter(|w| {
            w["charges"]
                .as_array()
                .and_then(|c| c.first())
                .is_some_and(|c| c["comm"] == "spinner")
        })
        .count();
    assert!(
        led_kept == 0 || spinner_stacks >= 1,
        "{led_kept} kept spike(s) led by the spinner, none with its stack: {out}{err}"
    );

    // Said to be in user space, never its sleep, wherever the text shows a spike the spinner
    // led with its stack (beside CI's hog the few worst spikes shown were all others', and
    // beside the guests' QEMU the ten shown had no stack while two others had: the JSON and
    // the folded stacks below check the spinner's stacks whatever the text shows).
    let lines: Vec<&str> = out.lines().collect();
    for (i, l) in lines.iter().enumerate() {
        let led = l.contains(" cpu1 ") && l.contains("ms: thread spinner:");
        // The spike's own lines follow it: its handler's, then its stack's.
        let stack = lines[i + 1..]
            .iter()
            .take(2)
            .find(|n| n.trim_start().starts_with("kernel stack") || n.contains("no kernel stack"));
        // The spike's stack may be another task's: a timer interrupt that came late while
        // a load ran (beside `stress-ng --cpu 4` a spinner-led spike's stack was of the
        // stress-ng worker the late interrupt found, 29 Nov 2026), said with its name.
        let spinners = stack.filter(|s| s.contains("(spinner:"));
        if let (true, Some(stack)) = (led, spinners) {
            assert!(
                stack.contains("no kernel stack: it ran in user space (spinner:"),
                "{stack}: {out}"
            );
        }
    }
    for sleep in SLEEPS {
        assert!(!out.contains(&format!("kernel stack: {sleep}")), "{out}");
    }
    let functions = x["functions"].as_array().unwrap();
    let names: Vec<&str> = functions
        .iter()
        .filter_map(|r| r["function"].as_str())
        .collect();
    assert!(names.contains(&"(user space)"), "{names:?}");
    assert!(!names.iter().any(|n| SLEEPS.contains(n)), "{names:?}");
    folded_renders(&db, x, spinner_stacks > 0);
    report_graph_covers_every_spike(&db, x);
    let _ = std::fs::remove_dir_all(&d);
}

/// `runs explain --folded`: a line per stack, `frames weight`, root first (the task), no
/// tracing frame nor any rtscope thread; the weights add up to the time by function; inferno
/// renders it unchanged.
fn folded_renders(db: &std::path::Path, x: &serde_json::Value, spinner_stacks: bool) {
    let o = Command::new(bin())
        .args(["runs", "explain", "last", "--folded", "--db"])
        .arg(db)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    let folded = text(&o.stdout);
    let mut total = 0u64;
    for line in folded.lines() {
        let (stack, n) = line.rsplit_once(' ').unwrap_or_else(|| panic!("{line}"));
        total += n.parse::<u64>().unwrap_or_else(|_| panic!("{line}"));
        assert!(!stack.is_empty() && !stack.contains('\t'), "{line}");
        // The frames, not the root: a task's name is its own (beside the hog, another test
        // binary's thread `trace_timerlat` was caught in user space, 30 Nov 2026).
        assert!(
            stack
                .split(';')
                .skip(1)
                .all(|f| !f.contains("bpf_") && !f.contains("trace_") && !f.contains("__schedule")),
            "{line}"
        );
        let root = stack.split(';').next().unwrap();
        assert!(root != "rtscope" && !root.starts_with("rtscope-"), "{line}");
    }
    assert!(
        !spinner_stacks || folded.contains("spinner;(user space) "),
        "{folded}"
    );
    let by_function: u64 = x["functions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["ns"].as_u64())
        .sum();
    assert_eq!(total, by_function, "{folded}");
    rtscope_testkit::require!(
        rtscope_testkit::have("inferno-flamegraph", "--help"),
        "inferno-flamegraph (cargo install inferno; .ci/run installs it)"
    );
    let mut inferno = Command::new("inferno-flamegraph")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    inferno
        .stdin
        .take()
        .unwrap()
        .write_all(folded.as_bytes())
        .unwrap();
    let svg = inferno.wait_with_output().unwrap();
    let page = text(&svg.stdout);
    assert!(svg.status.success(), "{}", text(&svg.stderr));
    assert!(page.contains("<svg"), "{page}");
    if spinner_stacks {
        assert!(
            page.contains("spinner") && page.contains("(user space)"),
            "{page}"
        );
    }
}

/// The report's flame graph is of every traced spike, as the table beside it.
fn report_graph_covers_every_spike(db: &std::path::Path, x: &serde_json::Value) {
    let dir = db.parent().unwrap().join("report");
    let o = Command::new(bin())
        .args(["report", "--last", "--db"])
        .arg(db)
        .arg("-o")
        .arg(&dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(
        html.contains("Kernel stacks of every traced spike under their task"),
        "no flame graph of every spike"
    );
    let stacks: u64 = x["stacks"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["spikes"].as_u64())
        .sum();
    let rows: u64 = x["functions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["spikes"].as_u64())
        .sum();
    assert_eq!(stacks, rows, "{x}");
}
