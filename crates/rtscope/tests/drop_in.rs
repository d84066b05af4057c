//! The drop-in measures in cyclictest's condition and is found by rt-tests' own tools (issue
//! 25 item 8): `/dev/cpu_dma_latency` held at 0 µs for the run unless `--default-system`, the
//! `# /dev/cpu_dma_latency set to 0us` line as cyclictest prints it, and the
//! `/dev/shm/cyclictest<PID>` status file that the real `get_cyclictest_snapshot` lists,
//! signals (SIGUSR2) and prints — gone when the run ends, however it ends.

use crate::common;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// rt-tests' snapshot script (Debian's rt-tests 2.4 ships it in /usr/sbin).
const SNAPSHOT: &str = "/usr/sbin/get_cyclictest_snapshot";

/// How long a step may take on a loaded machine before the test gives up: a liveness bound.
const PATIENCE: Duration = Duration::from_secs(60);

fn spawn(args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_rtscope"))
        .arg("cyclictest")
        .args(args)
        .env("RTSCOPE_DB", common::test_db())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start rtscope cyclictest")
}

/// Waits for `child` (killing it after [`PATIENCE`]); returns (exit code, stdout, stderr).
fn finish(mut child: Child) -> (Option<i32>, String, String) {
    let t0 = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t0.elapsed() > PATIENCE {
            let _ = child.kill();
            panic!("rtscope cyclictest still ran after {PATIENCE:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let o = child.wait_with_output().unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (o.status.code(), text(&o.stdout), text(&o.stderr))
}

/// Whether process `pid` has a descriptor open on /dev/cpu_dma_latency (its PM QoS request).
fn holds_dma_latency(pid: u32) -> bool {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    fds.flatten().any(|fd| {
        std::fs::read_link(fd.path()).is_ok_and(|t| t == Path::new("/dev/cpu_dma_latency"))
    })
}

/// Polls the child for the whole run: whether it ever held the request, and the system-wide
/// value read while it did.
fn watch_dma_latency(pid: u32) -> (bool, Option<i32>) {
    let (mut seen, mut value) = (false, None);
    while common::pid_alive(pid) {
        if holds_dma_latency(pid) {
            seen = true;
            let v = std::fs::read("/dev/cpu_dma_latency").unwrap();
            value = Some(i32::from_ne_bytes(v[..4].try_into().unwrap()));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    (seen, value)
}

fn status_file(pid: u32) -> PathBuf {
    PathBuf::from(format!("/dev/shm/cyclictest{pid}"))
}

#[test]
fn the_default_holds_cpu_dma_latency_at_zero_and_prints_cyclictests_line() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    let _rt = common::rt_lock();
    let child = spawn(&["-q", "-m", "-t1", "-i", "1000", "-l", "1500"]);
    let pid = child.id();
    let (held, value) = watch_dma_latency(pid);
    let (code, out, err) = finish(child);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        held,
        "rtscope cyclictest never held /dev/cpu_dma_latency open\n{out}{err}"
    );
    // The system-wide value is the smallest request: ours (0) is it.
    assert_eq!(value, Some(0));
    // Byte for byte cyclictest 2.40's first line (the capture of `cyclictest -q ...`).
    let reference = common::reference::reference("summary-q.txt");
    let first = reference.split_inclusive('\n').next().unwrap();
    assert_eq!(first, "# /dev/cpu_dma_latency set to 0us\n");
    assert!(out.starts_with(first), "{out}");
    assert!(out[first.len()..].starts_with("T: 0 ("), "{out}");
    assert!(!err.contains("WARN"), "{err}");
    assert!(
        !status_file(pid).exists(),
        "the status file outlived the run"
    );
}

#[test]
fn default_system_leaves_cpu_dma_latency_alone_with_cyclictests_warning() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    let rt = common::rt_lock();
    let child = spawn(&[
        "-q",
        "-m",
        "-t1",
        "-i",
        "1000",
        "-l",
        "1500",
        "--default-system",
    ]);
    let (held, _) = watch_dma_latency(child.id());
    let (code, out, err) = finish(child);
    // compat::cyclictest takes the lock itself.
    drop(rt);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        !held,
        "--default-system: rtscope opened /dev/cpu_dma_latency"
    );
    assert!(!out.contains("cpu_dma_latency"), "{out}");
    let warn = "WARN: not setting cpu_dma_latency from cyclictest";
    assert!(err.lines().any(|l| l == warn), "{err}");
    // The real cyclictest says the same on stderr.
    let (_, c_err) = common::compat::cyclictest(&["-q", "-t1", "-i", "200", "-l", "10"]);
    assert!(
        c_err.lines().any(|l| l == warn),
        "cyclictest's stderr: {c_err}"
    );
}

/// One `T:` line of a snapshot: (thread, tid, interval µs, cycles).
fn parse_t_line(l: &str) -> Option<(usize, i32, u64, u64)> {
    let rest = l.strip_prefix("T:")?;
    let (idx, rest) = rest.split_once(" (")?;
    let (tid, rest) = rest.split_once(") ")?;
    let field = |name: &str| -> Option<u64> {
        let at = rest.find(name)? + name.len();
        rest[at..].split_whitespace().next()?.parse().ok()
    };
    Some((
        idx.trim().parse().ok()?,
        tid.trim().parse().ok()?,
        field("I:")?,
        field("C:")?,
    ))
}

/// `get_cyclictest_snapshot ARGS`; asserts exit 0; its stdout.
fn snapshot_tool(args: &[&str]) -> String {
    let o = common::run(SNAPSHOT, args);
    assert_eq!(o.status.code(), Some(0), "{}", common::dump(&o));
    String::from_utf8(o.stdout).unwrap()
}

/// Asks for snapshots until one shows every thread measuring; returns its `T:` lines.
fn snapshot_of_running_threads(pid: u32, threads: usize) -> Vec<(usize, i32, u64, u64)> {
    let p = pid.to_string();
    let t0 = Instant::now();
    let mut last = String::new();
    while t0.elapsed() < PATIENCE {
        snapshot_tool(&["-s", &p]);
        std::thread::sleep(Duration::from_millis(100));
        last = snapshot_tool(&["-p", &p]);
        let lines: Vec<&str> = last.lines().collect();
        let t: Vec<_> = lines.iter().filter_map(|l| parse_t_line(l)).collect();
        if t.len() == threads && t.iter().all(|&(_, _, _, c)| c > 0) {
            // The block as cyclictest writes it, then the newline `print` adds.
            assert_eq!(lines[0], "#---------------------------", "{last}");
            assert_eq!(lines[1], "# cyclictest current status:", "{last}");
            assert_eq!(lines[2 + threads], "#---------------------------", "{last}");
            assert_eq!(lines.len(), 4 + threads, "{last}");
            assert_eq!(lines[3 + threads], "", "{last}");
            assert!(
                last.ends_with("#---------------------------\n\n"),
                "{last:?}"
            );
            return t;
        }
    }
    panic!("no snapshot showed {threads} measuring threads within {PATIENCE:?}; last:\n{last}");
}

#[test]
fn get_cyclictest_snapshot_finds_a_running_rtscope_and_prints_its_status() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    assert!(
        Path::new(SNAPSHOT).is_file(),
        "{SNAPSHOT} is missing: the test runs rt-tests' own snapshot tool against rtscope; \
         install it with `apt-get install rt-tests`"
    );
    let _rt = common::rt_lock();
    let child = spawn(&["-q", "-m", "-t2", "-p80", "-i", "1000", "-D", "10m"]);
    let pid = child.id();
    let file = status_file(pid);
    let t0 = Instant::now();
    while !file.exists() && common::pid_alive(pid) && t0.elapsed() < PATIENCE {
        std::thread::sleep(Duration::from_millis(5));
    }
    let listed = snapshot_tool(&["-l"]);
    assert!(listed.lines().any(|l| l == pid.to_string()), "-l: {listed}");
    let t = snapshot_of_running_threads(pid, 2);
    let tasks: Vec<i32> = std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect();
    for (i, &(index, tid, interval, _)) in t.iter().enumerate() {
        assert_eq!(index, i);
        assert!(
            tasks.contains(&tid),
            "T:{i} tid {tid} is not a thread of {pid}"
        );
        // -t2 with cyclictest's default distance of 500 µs.
        assert_eq!(interval, 1000 + 500 * i as u64);
    }
    // SAFETY: kill with the child's pid and a valid signal number.
    unsafe { libc::kill(pid as i32, libc::SIGINT) };
    let (code, out, err) = finish(child);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(!file.exists(), "{} outlived the run", file.display());
    let after = snapshot_tool(&["-l"]);
    assert!(
        !after.lines().any(|l| l == pid.to_string()),
        "-l after the end: {after}"
    );
}

#[test]
fn the_status_file_is_removed_when_the_run_fails_to_start() {
    let _rt = common::rt_lock();
    // The database cannot be opened: exit 2 after the status file was created.
    let child = spawn(&["-q", "-l", "10", "--db", "/proc/no-such-dir/x.db"]);
    let pid = child.id();
    let (code, _, err) = finish(child);
    assert_eq!(code, Some(2), "{err}");
    // Refused when the store is opened, which comes after the status file is created.
    assert!(err.contains("/proc/no-such-dir/x.db"), "{err}");
    assert!(!status_file(pid).exists());
}

#[test]
fn smi_counts_end_each_t_line_or_the_missing_counter_is_named() {
    // cyclictest --smi: an SMI column where MSR_SMI_COUNT can be read (Intel, msr driver,
    // root), else exit 2 naming the reason (this project's CI VMs are AMD: "AuthenticAMD").
    let _rt = common::rt_lock();
    let (code, out, err) = finish(spawn(&["--smi", "-a", "0", "-q", "-l", "20", "-i", "1000"]));
    match code {
        Some(0) => {
            let t = out
                .lines()
                .find(|l| l.starts_with("T: 0"))
                .unwrap_or_default();
            assert!(t.contains(" SMI:"), "{out}");
        }
        Some(2) => {
            assert!(err.contains("option '--smi': no SMI counter"), "{err}");
            assert!(
                !out.contains("cpu_dma_latency"),
                "refused before any setting: {out}"
            );
        }
        other => panic!("exit {other:?}: {out}{err}"),
    }
    // Without -a, refused as cyclictest refuses it.
    let (code, _, err) = finish(spawn(&["--smi", "-q", "-l", "1"]));
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("'--smi' needs '-a'"), "{err}");
}
