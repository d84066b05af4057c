//! Helpers of the hostile suite: the binary in a scratch directory, a child with a deadline,
//! a process holding the SQLite write lock, and queries through the `sqlite3` program.
#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The binary under test.
pub fn exe() -> &'static str {
    env!("CARGO_BIN_EXE_rtscope")
}

/// A fresh scratch directory for one case.
pub fn scratch(case: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("rtscope-hostile-{}-{case}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// How long a command of these tests may run before it counts as hung: a hang detector, not a
/// time the tests assert (a streamed 60 MB histogram import under `ulimit -v` took over 60 s
/// in a debug build beside CI's other jobs; issue 52).
const HANG: Duration = Duration::from_secs(240);

/// Waits for `child` at most `limit`, reading its output meanwhile (a full pipe never blocks
/// it); kills it and panics after that (a hang is a failure).
pub fn wait_output(mut child: Child, limit: Duration, what: &str) -> Output {
    fn reader<R: std::io::Read + Send + 'static>(r: Option<R>) -> std::thread::JoinHandle<Vec<u8>> {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut r) = r {
                let _ = r.read_to_end(&mut buf);
            }
            buf
        })
    }
    let out = reader(child.stdout.take());
    let err = reader(child.stderr.take());
    let end = Instant::now() + limit;
    let mut timed_out = false;
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > end {
            let _ = child.kill();
            timed_out = true;
            break child.wait().unwrap();
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let o = Output {
        status,
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    };
    if timed_out {
        let tail =
            |b: &[u8]| String::from_utf8_lossy(&b[b.len().saturating_sub(2000)..]).into_owned();
        panic!(
            "{what}: still running after {limit:?}\nstdout: {}\nstderr: {}",
            tail(&o.stdout),
            tail(&o.stderr)
        );
    }
    o
}

/// Runs rtscope with `args` (stdin from /dev/null), killed after 60 s.
pub fn rtscope(args: &[&str]) -> Output {
    let (child, mut reaper) = spawn(args);
    let out = wait_output(child, HANG, &format!("rtscope {args:?}"));
    reaper.disarm();
    out
}

/// Runs `script` with bash (`set -o pipefail` is the script's), killed after 60 s.
pub fn bash(script: &str) -> Output {
    let child = Command::new("bash")
        .args(["-c", script])
        .env("RTSCOPE", exe())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_output(child, HANG, script)
}

/// The exit code, or a panic naming the signal that killed the process.
pub fn code(o: &Output) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    match o.status.code() {
        Some(c) => c,
        None => panic!(
            "killed by signal {:?}\nstdout: {}\nstderr: {}",
            o.status.signal(),
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        ),
    }
}

/// Text of stdout and stderr.
pub fn texts(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// One value from the database through the `sqlite3` program (read-only), `None` while it
/// cannot answer: a file not yet a database, its schema not yet made (a command polled or
/// killed in its first instants, on a loaded machine).
pub fn try_query(db: &Path, sql: &str) -> Option<String> {
    let o = Command::new("sqlite3")
        .args(["-readonly", "-cmd", ".timeout 10000"])
        .arg(db)
        .arg(sql)
        .output()
        .ok()?;
    (o.status.success() && db.exists())
        .then(|| String::from_utf8_lossy(&o.stdout).trim().to_string())
}

/// One value from the database through the `sqlite3` program (read-only).
pub fn query(db: &Path, sql: &str) -> String {
    let o = Command::new("sqlite3")
        .args(["-readonly", "-cmd", ".timeout 10000"])
        .arg(db)
        .arg(sql)
        .output()
        .expect("the sqlite3 program (apt-get install sqlite3)");
    assert!(
        o.status.success(),
        "{sql}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

/// Waits until `sql` returns a non-empty, non-zero answer (at most 30 s).
pub fn wait_for(db: &Path, sql: &str) {
    // A hang guard: a set-up beside CI's CPU hog took more than 30 s (28 Nov 2026).
    let end = Instant::now() + Duration::from_secs(120);
    while Instant::now() < end {
        let o = Command::new("sqlite3")
            .arg("-readonly")
            .arg(db)
            .arg(sql)
            .output();
        if let Some(o) = o.ok().filter(|o| o.status.success() && db.exists()) {
            let v = String::from_utf8_lossy(&o.stdout).trim().to_string();
            if !v.is_empty() && v != "0" {
                return;
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("{sql}: never true");
}

/// A `sqlite3` process holding the write lock of `db` for `hold` (BEGIN IMMEDIATE; sleep;
/// COMMIT). Returns once the lock is taken.
pub struct Locker {
    child: Child,
}

impl Locker {
    pub fn hold(db: &Path, hold: Duration) -> Locker {
        let mut child = Command::new("sqlite3")
            .arg(db)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("the sqlite3 program");
        let mut stdin = child.stdin.take().unwrap();
        writeln!(
            stdin,
            ".timeout 20000\nBEGIN IMMEDIATE;\nSELECT 'locked';\n.shell sleep {}\nCOMMIT;\n.quit",
            hold.as_secs_f64()
        )
        .unwrap();
        drop(stdin);
        let mut out = child.stdout.take().unwrap();
        let mut buf = [0u8; 7];
        std::io::Read::read_exact(&mut out, &mut buf).unwrap();
        assert_eq!(&buf, b"locked\n");
        Locker { child }
    }

    /// Waits for the lock to be released.
    pub fn join(mut self) {
        self.child.wait().unwrap();
    }
}

/// Sends `sig` to `pid`.
pub fn kill(pid: u32, sig: i32) {
    // SAFETY: kill takes a pid and a signal number; the pid is our child's.
    unsafe { libc::kill(pid as i32, sig) };
}

/// Waits until `pid` holds the run's stop signals (SIGTERM blocked in its main thread,
/// `/proc/PID/status`'s `SigBlk`: rtscope holds them first thing in `main_with_args`) or is
/// gone; false after `guard` (a hang guard). Before that point — the loader and Rust's start-up,
/// which a loaded host can stretch well past 0.2 s — no program can take a signal, and a
/// test that sends one by the clock there tests the host's scheduler, not rtscope.
pub fn signals_held(pid: u32, guard: std::time::Duration) -> bool {
    let end = std::time::Instant::now() + guard;
    while std::time::Instant::now() < end {
        let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
            return true;
        };
        let blocked = status
            .lines()
            .find_map(|l| l.strip_prefix("SigBlk:"))
            .and_then(|m| u64::from_str_radix(m.trim(), 16).ok());
        match blocked {
            Some(m) if m & (1 << (libc::SIGTERM - 1)) != 0 => return true,
            // A zombie or a process past its end: nothing left to wait for.
            None => return true,
            Some(_) => std::thread::sleep(std::time::Duration::from_micros(200)),
        }
    }
    false
}

/// Kills the child `pid` with SIGKILL when dropped armed (a failed assertion before the child
/// is waited for must not leave a one-hour run behind). Disarm it once the child is reaped.
pub struct Reaper {
    pid: u32,
    armed: bool,
}

impl Reaper {
    pub fn new(pid: u32) -> Reaper {
        Reaper { pid, armed: true }
    }

    pub fn disarm(&mut self) {
        self.armed = false;
    }
}

impl Drop for Reaper {
    fn drop(&mut self) {
        if self.armed {
            kill(self.pid, libc::SIGKILL);
        }
    }
}

/// `rtscope measure` arguments of a short, cheap run recorded in `db` (SCHED_OTHER, one
/// thread, no monitors, 1 ms unless `length` has `-i`).
pub fn measure_args<'a>(db: &'a str, length: &'a [&'a str]) -> Vec<&'a str> {
    let mut v = vec![
        "measure",
        "--policy",
        "other",
        "-t",
        "1",
        "--monitor-interval",
        "0",
        "--db",
        db,
    ];
    if !length.contains(&"-i") {
        v.extend(["-i", "1ms"]);
    }
    v.extend_from_slice(length);
    v
}

/// A one-run campaign file `NAME.toml` in `dir` (SCHED_OTHER, one thread at 1 ms for
/// `duration`) with one load case `case` made of the TOML lines `load`.
pub fn campaign_file(dir: &Path, name: &str, duration: &str, load: &str) -> PathBuf {
    // The loads of these cases sleep or fail on purpose: no wait for them to work.
    let text = format!(
        "[campaign]\nname = \"{name}\"\n[measure]\ninterval = \"1ms\"\nduration = \"{duration}\"\n\
         settle = \"100ms\"\nload_start = 0\npolicy = \"other\"\nmlock = false\n[[scenario]]\nname = \"s\"\n\
         threads = 1\n[[load_case]]\nname = \"case\"\n{load}"
    );
    let file = dir.join(format!("{name}.toml"));
    std::fs::write(&file, text).unwrap();
    file
}

/// Starts the binary with `args` (stdin closed, output piped), with a [`Reaper`] that kills it
/// if the test fails before waiting for it.
pub fn spawn(args: &[&str]) -> (Child, Reaper) {
    let child = Command::new(exe())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let reaper = Reaper::new(child.id());
    (child, reaper)
}

/// The statuses of the runs in `db` as `rtscope runs --json` reads them back (a dead
/// `running` run is `incomplete`); none when the database was never made.
pub fn statuses(db: &std::path::Path) -> Vec<String> {
    if !db.exists() {
        return Vec::new();
    }
    let o = rtscope(&["runs", "--db", db.to_str().unwrap(), "--json"]);
    assert_eq!(code(&o), 0, "runs --json: {:?}", texts(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    v.as_array()
        .unwrap()
        .iter()
        .map(|r| r["status"].as_str().unwrap_or("?").to_string())
        .collect()
}
