//! Issue 25, item 2: rtscope does not perturb the CPU it measures. While `rtscope measure
//! --cpus 1 --explain` runs, a private tracefs instance of this test records every context
//! switch and fork on every CPU; from them the test computes each rtscope thread's time and
//! switch-ins per CPU and asserts that on CPU 1, while the measuring thread was there, no other
//! thread of rtscope (control, monitor, trace reader, reaper, anything they started) ran at
//! all. Which thread ran where, never how long anything took. Needs root and tracefs: without
//! them it fails, naming what is missing (no skip).

use crate::common;

use serde_json::Value;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::LazyLock;
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_rtscope");

/// A private tracefs instance recording `sched_switch` and `sched_process_fork` on every CPU
/// into buffers large enough for the whole run (read once at the end: the kernel counts what
/// it could not keep, and the test fails on any loss); removed when dropped, on every path (a
/// failed assertion included).
struct SchedTrace {
    dir: PathBuf,
}

fn write(path: &Path, value: &str) {
    std::fs::write(path, value).unwrap_or_else(|e| panic!("writing {value} to {path:?}: {e}"));
}

impl SchedTrace {
    /// Creates and starts the instance; panics naming what is missing.
    fn start(name: &str) -> SchedTrace {
        // SAFETY: geteuid has no preconditions.
        let euid = unsafe { libc::geteuid() };
        assert_eq!(euid, 0, "this test traces the scheduler: it needs root");
        let root = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"]
            .into_iter()
            .map(Path::new)
            .find(|p| p.join("instances").is_dir())
            .expect("tracefs with instances/ is not mounted (mount -t tracefs nodev /sys/kernel/tracing)");
        // Not `rtscope-<pid>-…`: rtscope removes such instances of dead processes.
        let dir = root
            .join("instances")
            .join(format!("test-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir(&dir);
        std::fs::create_dir(&dir).unwrap_or_else(|e| panic!("mkdir {dir:?}: {e}"));
        let t = SchedTrace { dir };
        // 64 MiB per CPU: a few hundred thousand switches, far more than 4 s on 2 CPUs.
        write(&t.dir.join("buffer_size_kb"), "65536");
        for event in ["sched_switch", "sched_process_fork"] {
            write(&t.dir.join(format!("events/sched/{event}/enable")), "1");
        }
        write(&t.dir.join("tracing_on"), "1");
        t
    }

    /// Stops tracing and returns every line recorded, after checking that no CPU lost an
    /// event.
    fn finish(self) -> String {
        write(&self.dir.join("tracing_on"), "0");
        for cpu in 0..common::cpus() {
            let path = self.dir.join(format!("per_cpu/cpu{cpu}/stats"));
            let stats = std::fs::read_to_string(&path).unwrap();
            for key in ["overrun:", "dropped events:"] {
                let lost = stats
                    .lines()
                    .find_map(|l| l.strip_prefix(key))
                    .map(|v| v.trim().parse::<u64>().unwrap());
                assert_eq!(lost, Some(0), "CPU {cpu}'s trace is incomplete:\n{stats}");
            }
        }
        let trace = self.dir.join("trace");
        std::fs::read_to_string(&trace).unwrap_or_else(|e| panic!("reading {trace:?}: {e}"))
    }
}

impl Drop for SchedTrace {
    fn drop(&mut self) {
        let _ = std::fs::write(self.dir.join("tracing_on"), "0");
        for _ in 0..100 {
            if std::fs::remove_dir(&self.dir).is_ok() || !self.dir.exists() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("cannot remove the trace instance {:?}", self.dir);
    }
}

/// One record of the trace.
#[derive(Debug, PartialEq, Eq)]
enum Record {
    /// On `cpu` at `ns`: `prev` stopped running, `next` (named `next_comm`) started.
    Switch {
        cpu: usize,
        ns: u64,
        prev: i32,
        next: i32,
        next_comm: String,
    },
    /// `parent` created `child` (a process or a thread).
    Fork { parent: i32, child: i32 },
}

/// Parses the text lines of `sched_switch` and `sched_process_fork`; other lines (a
/// `[LOST n EVENTS]` marker) are returned as errors.
fn parse(line: &str) -> Option<Result<Record, String>> {
    if line.trim().is_empty() || line.starts_with('#') {
        return None;
    }
    static LINE: LazyLock<regex::Regex> = LazyLock::new(|| {
        regex::Regex::new(
            r"\[(\d+)\]\s+\S+\s+(\d+)\.(\d+): (sched_switch|sched_process_fork): (.*)$",
        )
        .unwrap()
    });
    static SWITCH: LazyLock<regex::Regex> = LazyLock::new(|| {
        regex::Regex::new(r"prev_pid=(-?\d+) .*==> next_comm=(.*) next_pid=(-?\d+) ").unwrap()
    });
    static FORK: LazyLock<regex::Regex> = LazyLock::new(|| {
        regex::Regex::new(r" pid=(-?\d+) child_comm=.* child_pid=(-?\d+)").unwrap()
    });
    let Some(c) = LINE.captures(line) else {
        return Some(Err(line.to_string()));
    };
    let cpu = c[1].parse().unwrap();
    let frac = format!("{:0<9}", &c[3]);
    let ns = c[2].parse::<u64>().unwrap() * 1_000_000_000 + frac.parse::<u64>().unwrap();
    let body = &c[5];
    Some(Ok(if &c[4] == "sched_switch" {
        let Some(f) = SWITCH.captures(body) else {
            return Some(Err(line.to_string()));
        };
        Record::Switch {
            cpu,
            ns,
            prev: f[1].parse().unwrap(),
            next: f[3].parse().unwrap(),
            next_comm: f[2].to_string(),
        }
    } else {
        let Some(f) = FORK.captures(body) else {
            return Some(Err(line.to_string()));
        };
        Record::Fork {
            parent: f[1].parse().unwrap(),
            child: f[2].parse().unwrap(),
        }
    }))
}

/// Per thread and CPU: time on the CPU (ns) and switch-ins.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Ran {
    ns: u64,
    switch_ins: u64,
}

/// What the trace says about the tasks descending from `root`.
#[derive(Debug, Default)]
struct Usage {
    /// Every task of `root`'s tree, with the last name it was switched in with.
    tasks: BTreeMap<i32, String>,
    /// (task, CPU) → time and switch-ins, all of the trace.
    per_cpu: BTreeMap<(i32, usize), Ran>,
    /// The same on `cpu` only while `watched` was on it (first switch-in to last switch-out).
    in_window: BTreeMap<i32, Ran>,
}

/// Each task's time per CPU from the switch records: a task runs on a CPU from its switch-in
/// to the next switch on that CPU. `watched` on `cpu` bounds the window.
fn usage(records: &[Record], root: i32, watched: i32, cpu: usize) -> Usage {
    let mut tree: HashSet<i32> = HashSet::from([root]);
    let mut u = Usage::default();
    let first = records.iter().position(
        |r| matches!(r, Record::Switch { cpu: c, next, .. } if *c == cpu && *next == watched),
    );
    let last = records.iter().rposition(
        |r| matches!(r, Record::Switch { cpu: c, prev, .. } if *c == cpu && *prev == watched),
    );
    let window = first.zip(last);
    let mut on: HashMap<usize, (i32, u64)> = HashMap::new();
    for (i, r) in records.iter().enumerate() {
        match r {
            Record::Fork { parent, child } if tree.contains(parent) => {
                tree.insert(*child);
            }
            Record::Fork { .. } => {}
            Record::Switch {
                cpu: c,
                ns,
                prev,
                next,
                next_comm,
            } => {
                if let Some((task, since)) = on.insert(*c, (*next, *ns)) {
                    if task == *prev && tree.contains(prev) {
                        u.per_cpu.entry((*prev, *c)).or_default().ns += ns - since;
                        if *c == cpu && window.is_some_and(|(a, b)| i > a && i <= b) {
                            u.in_window.entry(*prev).or_default().ns += ns - since;
                        }
                    }
                }
                if tree.contains(next) {
                    u.tasks.insert(*next, next_comm.clone());
                    u.per_cpu.entry((*next, *c)).or_default().switch_ins += 1;
                    if *c == cpu && window.is_some_and(|(a, b)| i >= a && i < b) {
                        u.in_window.entry(*next).or_default().switch_ins += 1;
                    }
                }
            }
        }
    }
    u
}

fn table(u: &Usage) -> String {
    u.per_cpu
        .iter()
        .map(|((t, c), r)| {
            let name = u.tasks.get(t).map_or("?", String::as_str);
            format!(
                "  tid {t:>7} {name:<16} cpu {c}: {:>12} ns, {} switch-ins\n",
                r.ns, r.switch_ins
            )
        })
        .collect()
}

#[test]
fn the_window_and_the_tree_of_a_synthetic_trace_are_accounted_exactly() {
    let sw = |cpu, ns, prev, next, comm: &str| Record::Switch {
        cpu,
        ns,
        prev,
        next,
        next_comm: comm.into(),
    };
    let records = vec![
        Record::Fork {
            parent: 10,
            child: 11,
        },
        sw(1, 100, 0, 10, "rtscope"), // before the window
        sw(1, 150, 10, 0, "swapper/1"),
        sw(1, 200, 0, 11, "rtscope-m0"),
        sw(0, 210, 0, 10, "rtscope"),
        sw(1, 260, 11, 99, "other"),
        sw(1, 300, 99, 11, "rtscope-m0"),
        Record::Fork {
            parent: 10,
            child: 12,
        },
        sw(1, 320, 11, 12, "rtscope-x"), // in the window
        sw(1, 330, 12, 11, "rtscope-m0"),
        sw(1, 400, 11, 0, "swapper/1"),
        sw(0, 500, 10, 0, "swapper/0"),
    ];
    let u = usage(&records, 10, 11, 1);
    let ran = |ns, switch_ins| Ran { ns, switch_ins };
    assert_eq!(u.in_window[&11], ran(60 + 20 + 70, 3));
    assert_eq!(u.in_window[&12], ran(10, 1));
    assert!(!u.in_window.contains_key(&10), "{:?}", u.in_window);
    assert_eq!(u.per_cpu[&(10, 1)], ran(50, 1));
    assert_eq!(u.per_cpu[&(10, 0)], ran(290, 1));
    assert!(!u.tasks.contains_key(&99));
    assert_eq!(
        parse("  rtscope-m0-77 [001] d..2. 12.000345: sched_switch: prev_comm=rtscope-m0 prev_pid=77 prev_prio=9 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120"),
        Some(Ok(sw(1, 12_000_345_000, 77, 0, "swapper/1")))
    );
    assert_eq!(
        parse("rtscope-5 [000] ..... 3.5: sched_process_fork: comm=rtscope pid=5 child_comm=rtscope child_pid=6"),
        Some(Ok(Record::Fork { parent: 5, child: 6 }))
    );
    assert!(matches!(parse("CPU:1 [LOST 3 EVENTS]"), Some(Err(_))));
}

#[test]
fn on_the_measured_cpu_only_the_measuring_thread_of_rtscope_runs() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO and tracefs");
    assert!(common::cpus() >= 2, "needs 2 CPUs (measures CPU 1)");
    let _rt = common::rt_lock();
    let dir = common::fresh_dir("observer");
    let (db, json) = (dir.join("o.db"), dir.join("o.json"));
    let trace = SchedTrace::start("observer");
    let child = std::process::Command::new(BIN)
        .args(["measure", "--cpus", "1", "--explain", "50us", "-D", "4s"])
        .args(["-i", "1ms", "-q", "--db"])
        .arg(&db)
        .arg("--json")
        .arg(&json)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let root = child.id() as i32;
    let out = child.wait_with_output().unwrap();
    let text = trace.finish();
    assert_eq!(out.status.code(), Some(0), "{}", common::dump(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("housekeeping: rtscope's own threads on CPU 0 (default, not measured)")
            && err.contains("explaining spikes: tier flight-recorder"),
        "{err}"
    );
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(doc["housekeeping"]["cpus"], serde_json::json!([0]), "{doc}");
    assert_eq!(doc["housekeeping"]["analysis"], "live");
    assert_eq!(doc["threads"][0]["cpu"], 1);
    let measuring = doc["threads"][0]["tid"].as_i64().unwrap() as i32;
    let samples = doc["threads"][0]["samples"].as_u64().unwrap();

    let mut records = Vec::new();
    let mut bad = Vec::new();
    for parsed in text.lines().filter_map(parse) {
        match parsed {
            Ok(r) => records.push(r),
            Err(line) => bad.push(line),
        }
    }
    assert!(
        bad.is_empty(),
        "lines not understood (lost events?): {bad:?}"
    );
    let u = usage(&records, root, measuring, 1);
    eprintln!(
        "rtscope's threads (measuring: {measuring}, {samples} samples), whole trace:\n{}",
        table(&u)
    );
    let names: HashSet<&str> = u.tasks.values().map(String::as_str).collect();
    for n in ["rtscope", "rtscope-m0", "rtscope-monitor", "rtscope-trace"] {
        assert!(
            names.contains(n),
            "thread {n} not in the trace; rtscope's threads:\n{}",
            table(&u)
        );
    }
    let measured = u.in_window.get(&measuring).copied().unwrap_or_default();
    assert!(
        measured.switch_ins > 0,
        "the measuring thread {measuring} never ran on CPU 1:\n{}",
        table(&u)
    );
    let others: Vec<(&i32, &Ran)> = u
        .in_window
        .iter()
        .filter(|(t, r)| **t != measuring && (r.ns > 0 || r.switch_ins > 0))
        .collect();
    assert!(
        others.is_empty(),
        "rtscope threads other than the measuring one ({measuring}) ran on CPU 1 during the measurement: {others:?}\nall of rtscope's threads:\n{}",
        table(&u)
    );
}

#[test]
fn with_every_cpu_measured_the_run_says_its_analysis_waits_for_the_end() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    let _rt = common::rt_lock();
    let dir = common::fresh_dir("observer-all");
    let (db, json) = (dir.join("a.db"), dir.join("a.json"));
    let all = format!("0-{}", common::cpus() - 1);
    let o = common::run(
        BIN,
        &[
            "measure",
            "--cpus",
            &all,
            "--explain",
            "50us",
            "-D",
            "1s",
            "-q",
            "--db",
            db.to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", common::dump(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("housekeeping: no housekeeping CPU (every online CPU is measured)")
            && err.contains("spike analysis (--explain) deferred to the end of the run"),
        "{err}"
    );
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(doc["housekeeping"]["cpus"], Value::Null, "{doc}");
    assert_eq!(doc["housekeeping"]["analysis"], "deferred");
    assert!(doc["explain"].is_object(), "{doc}");
    let env = common::show_last(&db)["environment"].clone();
    assert_eq!(
        env["rtscope.housekeeping.cpus"], "none (every online CPU is measured)",
        "{env}"
    );
    assert_eq!(env["rtscope.explain.analysis"], "deferred", "{env}");
}

/// `measure --cpus 1 --housekeeping HOUSEKEEPING` must be refused with exit 2 and `want` in its
/// message.
fn housekeeping_refused(housekeeping: &str, want: &str) {
    let o = common::run(
        BIN,
        &[
            "measure",
            "-D",
            "1s",
            "--cpus",
            "1",
            "--housekeeping",
            housekeeping,
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", common::dump(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains(want), "{err}");
}

#[test]
fn housekeeping_cpus_offline_or_measured_are_usage_errors() {
    housekeeping_refused(
        "4095",
        "invalid value for '--housekeeping': CPU 4095 is not online (online CPUs: ",
    );
    housekeeping_refused(
        "0-1",
        "invalid value for '--housekeeping': CPU 1 is measured",
    );
}
