//! Numbers a user can trust (issue 11): samples are wake-ups, and no `-v` line is lost when the
//! run is also recorded, even on a loaded machine.

use crate::common;

use serde_json::Value;
use std::process::{Child, Command, Stdio};

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_rtscope")
}

/// `rtscope load cpu` in the background for as long as the guard lives.
struct CpuLoad(Child);

impl CpuLoad {
    fn start() -> CpuLoad {
        let child = Command::new(bin())
            .args(["load", "cpu", "--for", "120s"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start rtscope load cpu");
        CpuLoad(child)
    }
}

impl Drop for CpuLoad {
    fn drop(&mut self) {
        // SAFETY: kill with our own child's pid and a valid signal number.
        unsafe { libc::kill(self.0.id() as i32, libc::SIGTERM) };
        let _ = self.0.wait();
    }
}

/// The `-v` lines per thread (`thread:cycle:value`), checking that each thread's cycles are
/// 0, 1, 2 … in order: one line per wake-up, none lost, none repeated.
fn verbose_lines(stdout: &str, threads: usize) -> Vec<u64> {
    let mut next = vec![0u64; threads];
    for line in stdout.lines() {
        let f: Vec<&str> = line.split(':').map(str::trim).collect();
        let [t, c, _v] = f[..] else { continue };
        let (Ok(t), Ok(c)) = (t.parse::<usize>(), c.parse::<u64>()) else {
            continue;
        };
        assert_eq!(c, next[t], "thread {t}: line `{line}` out of order");
        next[t] += 1;
    }
    next
}

/// The count in rtscope's "N samples were not printed with -v" warning (0 without one).
fn reported_unprinted(stderr: &str) -> u64 {
    stderr
        .lines()
        .find(|l| l.contains("were not printed with -v"))
        .and_then(|l| l.split_whitespace().nth(2))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// 10 kHz × 2 threads with `--db --raw -v` under a CPU load started here: every wake-up is a
/// line on stdout AND a raw sample in the store (lines = samples), and a line the ring could
/// not hold would be counted on stderr, never dropped silently.
#[test]
fn verbose_with_db_and_raw_prints_every_sample_under_load() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    let db = common::temp_path("fidelity-verbose.db");
    let _ = std::fs::remove_file(&db);
    let loops = 20_000u64;
    let l = format!("-l{loops}");
    let db_arg = format!("--db={}", db.display());
    let ran = {
        let _load = CpuLoad::start();
        common::compat::run_locked(
            bin(),
            &[
                "cyclictest",
                "-q",
                "-v",
                "-i100",
                &l,
                "-t2",
                "-p80",
                &db_arg,
                "--raw",
            ],
        )
    };
    assert_eq!(ran.code, Some(0), "{}", ran.dump());
    let lines = verbose_lines(&ran.stdout, 2);
    let unprinted = reported_unprinted(&ran.stderr);
    assert_eq!(
        lines.iter().sum::<u64>() + unprinted,
        2 * loops,
        "lines per thread {lines:?}, {unprinted} reported as not printed\n{}",
        ran.stderr
    );
    assert_eq!(unprinted, 0, "the -v ring overflowed: {}", ran.stderr);
    assert_eq!(lines, vec![loops; 2], "one line per wake-up");
    let o = Command::new(bin())
        .args(["runs", "show", "last", "--json", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&o.stdout).expect("runs show --json");
    assert_eq!(v["samples"], 2 * loops, "{v}");
    assert_eq!(v["raw_samples"], 2 * loops, "every sample stored raw: {v}");
    assert_eq!(v["raw_dropped"], 0, "{v}");
    assert_eq!(v["sample_rule"], "wake-up");
}

/// `--raw` keeps samples in a database: without `--db` it is a usage error.
#[test]
fn cyclictest_raw_without_db_is_a_usage_error() {
    let o = common::run(bin(), &["cyclictest", "--raw", "-l1", "-q"]);
    assert_eq!(o.status.code(), Some(2), "{}", common::dump(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--db"));
}

/// What a harness sees of one run: exit code and the JSON file's threads.
struct HarnessRun {
    code: Option<i32>,
    json: Value,
}

/// Runs `program args… --json=FILE` the way a harness does (optionally sending `signal` after
/// `after`), and reads the JSON back; a starved real-cyclictest run is measured again
/// (`reference::starved_peer_json`).
fn harness(program: &[&str], args: &[&str], signal: Option<(i32, u64)>) -> HarnessRun {
    let mut attempt = 1;
    loop {
        let (code, text) = harness_once(program, args, signal);
        if attempt < common::reference::PEER_ATTEMPTS && common::reference::starved_peer_json(&text)
        {
            attempt += 1;
            continue;
        }
        let json = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("{program:?} {args:?}: invalid JSON ({e}): {text}"));
        return HarnessRun { code, json };
    }
}

/// One harness run: the exit code and the JSON file's text.
fn harness_once(
    program: &[&str],
    args: &[&str],
    signal: Option<(i32, u64)>,
) -> (Option<i32>, String) {
    let json = common::temp_path(&format!("harness-{}.json", args.join("_").replace('/', "")));
    let _ = std::fs::remove_file(&json);
    let _guard = common::rt_lock();
    let mut cmd = Command::new(program[0]);
    cmd.args(&program[1..])
        .args(args)
        .arg(format!("--json={}", json.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let child = cmd.spawn().expect("start the program");
    if let Some((sig, ms)) = signal {
        std::thread::sleep(std::time::Duration::from_millis(ms));
        // SAFETY: kill with our own child's pid and a valid signal number.
        unsafe { libc::kill(child.id() as i32, sig) };
    }
    let o = child.wait_with_output().unwrap();
    let text = std::fs::read_to_string(&json).unwrap_or_else(|e| {
        panic!(
            "{program:?} {args:?}: no JSON ({e}); stderr: {}",
            String::from_utf8_lossy(&o.stderr)
        )
    });
    (o.status.code(), text)
}

fn both() -> [Vec<&'static str>; 2] {
    [vec!["/usr/bin/cyclictest"], vec![bin(), "cyclictest"]]
}

fn threads(v: &Value) -> Vec<&Value> {
    let t = v["thread"].as_object().expect("thread object");
    t.values().collect()
}

/// A harness that runs one thread per CPU passes `-a all` (or `-aall`, `--affinity=all`):
/// both tools accept every spelling and run one thread per CPU.
#[test]
fn harness_affinity_all_spellings_work_like_cyclictest() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    for spelling in [&["-a", "all"][..], &["-aall"], &["--affinity=all"]] {
        for program in both() {
            let mut args = spelling.to_vec();
            args.extend(["-t", "-m", "-l50", "-i1000", "-q"]);
            let r = harness(&program, &args, None);
            assert_eq!(r.code, Some(0), "{program:?} {args:?}");
            assert_eq!(
                threads(&r.json).len(),
                common::cpus(),
                "{program:?} {args:?}"
            );
        }
    }
}

/// `-D 1 -i 1000`: cyclictest sleeps to every deadline up to and including start + 1 s, so
/// 1000 cycles when none is skipped. rtscope takes exactly those 1000 deadlines: each is a
/// wake-up (a cycle) or counted missed.
#[test]
fn harness_duration_runs_as_many_cycles_as_cyclictest() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    let args = ["-D1", "-i1000", "-m", "-q"];
    let ct = harness(&both()[0], &args, None);
    let t = &threads(&ct.json)[0];
    let cycles = t["cycles"].as_u64().unwrap();
    // cyclictest skips missed deadlines silently: exactly 1000 when it never woke an interval
    // late, fewer otherwise.
    if t["max"].as_u64().unwrap() < 1000 {
        assert_eq!(cycles, 1000, "{t}");
    } else {
        assert!(cycles <= 1000, "{t}");
    }
    let rt = harness(&both()[1], &args, None);
    assert_eq!(rt.code, Some(0));
    let t = &threads(&rt.json)[0];
    let (cycles, missed) = (
        t["cycles"].as_u64().unwrap(),
        t["missed_periods"].as_u64().unwrap(),
    );
    assert_eq!(cycles + missed, 1000, "{t}");
}

/// A harness stopping a bounded run early with SIGINT or SIGTERM gets exit 0 from both, and
/// rtscope says in its JSON that the run was interrupted.
#[test]
fn harness_signal_stops_a_bounded_run_with_exit_0_like_cyclictest() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    for sig in [libc::SIGINT, libc::SIGTERM] {
        for (i, program) in both().iter().enumerate() {
            let r = harness(
                program,
                &["-l100000", "-i1000", "-m", "-q"],
                Some((sig, 400)),
            );
            assert_eq!(r.code, Some(0), "{program:?} signal {sig}");
            let cycles = threads(&r.json)[0]["cycles"].as_u64().unwrap();
            assert!(cycles > 0 && cycles < 100_000, "{program:?}: {cycles}");
            if i == 1 {
                assert_eq!(r.json["rtscope"]["interrupted"], true, "{}", r.json);
            }
        }
    }
}
