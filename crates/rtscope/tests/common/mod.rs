//! Shared helpers for rtscope's integration tests.
//!
//! Include from a test file with `mod common;`, then use
//! `common::grammar::*` for the cyclictest format checkers and
//! `common::run` to run a binary with a timeout. Hold [`rt_lock`] around
//! runs that measure with SCHED_FIFO. `common::reference::*` holds the
//! reference cyclictest's captures and runs (tests/grammar_*.rs),
//! `common::compat::*` the side-by-side runs of tests/compat_*.rs.
#![allow(dead_code, unused_imports)]

pub mod browser;
pub mod compat;
pub mod grammar;
pub mod reference;

use std::fs::{File, OpenOptions};
use std::io::Read;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub use rtscope_testkit::{rt_lock, RtLock};

pub use rtscope_testkit::now_ns;

/// The campaign files' one scenario (one thread on CPU 0, named `1:1`) and first load case
/// (`idle`, no load), as TOML: a string literal, for `concat!`.
#[macro_export]
macro_rules! one_thread_on_cpu0_then_idle {
    () => {
        "[[scenario]]\nname = \"1:1\"\nthreads = 1\ncpus = \"0\"\n[[load_case]]\nname = \"idle\"\n"
    };
}

/// Threads `-S` starts: one per CPU available to this process.
pub fn cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// `name` in the temp dir, prefixed with this test process's id.
pub fn temp_path(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("rtscope-tests-{}-{name}", std::process::id()))
}

/// Default limit for [`run`]: a child still running after this is killed. A hang detector,
/// not a time the test asserts: CI runs the tests beside the guests, the fuzzing and a CPU
/// hog, where a debug build's `compare --tail-level` took over 30 s (issue 52).
pub const RUN_TIMEOUT: Duration = Duration::from_secs(120);

/// Runs `cmd args...` with stdin from /dev/null and captures stdout and
/// stderr. The child is killed after [`RUN_TIMEOUT`] and the test panics, showing what
/// it printed so far. Panics as well if the program cannot be started.
pub fn run(cmd: &str, args: &[&str]) -> Output {
    let (out, timed_out) = run_for(cmd, args, RUN_TIMEOUT);
    if timed_out {
        panic!(
            "`{}` did not finish within {:?} and was killed\n--- stdout (tail) ---\n{}\n--- stderr ---\n{}",
            describe(cmd, args),
            RUN_TIMEOUT,
            tail(&out.stdout, 2000),
            tail(&out.stderr, 2000)
        );
    }
    out
}

/// `rtscope ARGS` with `RTSCOPE_DB=db` (stdin inherited, no time limit), its output captured.
pub fn rtscope_with_db(db: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rtscope"))
        .args(args)
        .env("RTSCOPE_DB", db)
        .output()
        .expect("run rtscope")
}

/// The rtscope binary run as user and group nobody (65534) without supplementary groups or
/// capabilities (`setpriv`, util-linux): give it its arguments, then run it.
pub fn as_nobody() -> Command {
    let mut c = Command::new("setpriv");
    c.args([
        "--reuid=65534",
        "--regid=65534",
        "--clear-groups",
        "--inh-caps=-all",
        env!("CARGO_BIN_EXE_rtscope"),
    ]);
    c
}

/// Bytes a program printed, as text (invalid UTF-8 replaced).
pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A short, quiet real measurement (300 wake-ups at 200 µs): the start of the records',
/// exports' and fleet's `measure` command lines.
pub const SHORT_MEASURE: [&str; 6] = ["measure", "-l", "300", "-i", "200us", "-q"];

/// `run FILE --db DB --monitor-interval 0`: the campaign in `file` run without monitors,
/// recorded in `db`.
pub fn campaign_run_args<'a>(file: &'a Path, db: &'a Path) -> [&'a str; 6] {
    let (file, db) = (file.to_str().unwrap(), db.to_str().unwrap());
    ["run", file, "--db", db, "--monitor-interval", "0"]
}

/// The run database tests use: a per-process file in the temp dir, so no test writes
/// `./rtscope.db` into the source tree.
pub fn test_db() -> std::path::PathBuf {
    std::env::temp_dir().join(format!("rtscope-tests-{}.db", std::process::id()))
}

/// Like [`run`] with an explicit limit, but does not panic on a timeout:
/// returns the output collected so far and `true` if the child was killed.
pub fn run_for(cmd: &str, args: &[&str], timeout: Duration) -> (Output, bool) {
    let mut child = Command::new(cmd)
        .args(args)
        .env("RTSCOPE_DB", test_db())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start `{}`: {e}", describe(cmd, args)));
    let out_reader = reader(child.stdout.take());
    let err_reader = reader(child.stderr.take());
    let timed_out = wait_or_kill(&mut child, timeout);
    let status = child.wait().expect("wait for child");
    let stdout = out_reader.join().expect("stdout reader thread");
    let stderr = err_reader.join().expect("stderr reader thread");
    (
        Output {
            status,
            stdout,
            stderr,
        },
        timed_out,
    )
}

/// A one-line rendering of a command line for messages.
pub fn describe(cmd: &str, args: &[&str]) -> String {
    std::iter::once(cmd)
        .chain(args.iter().copied())
        .collect::<Vec<_>>()
        .join(" ")
}

fn reader<R: Read + Send + 'static>(pipe: Option<R>) -> JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(mut p) = pipe {
            let _ = p.read_to_end(&mut buf);
        }
        buf
    })
}

/// Polls the child until it exits or `timeout` passes; kills it on timeout.
fn wait_or_kill(child: &mut Child, timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        match child.try_wait() {
            Ok(Some(_)) => return false,
            Ok(None) if Instant::now() >= deadline => {
                let _ = child.kill();
                return true;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => panic!("waiting for child failed: {e}"),
        }
    }
}

fn tail(bytes: &[u8], max: usize) -> String {
    let s = String::from_utf8_lossy(bytes);
    let start = s.len().saturating_sub(max);
    let start = (start..=s.len())
        .find(|&i| s.is_char_boundary(i))
        .unwrap_or(s.len());
    s[start..].to_string()
}

/// Whether process `pid` is still running (not yet a zombie).
pub fn pid_alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rsplit_once(") ")
            .is_some_and(|(_, r)| !r.starts_with('Z'))
    })
}

/// A fresh, empty directory for one test (under [`temp_path`]).
pub fn fresh_dir(name: &str) -> std::path::PathBuf {
    let d = temp_path(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A process output for assertion messages: exit code, stdout and stderr.
pub fn dump(o: &Output) -> String {
    format!(
        "exit {:?}\n--- stdout ---\n{}--- stderr ---\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// `rtscope runs --db DB show last --json`, parsed; asserts exit 0.
pub fn show_last(db: &std::path::Path) -> serde_json::Value {
    let args = [
        "runs",
        "--db",
        db.to_str().unwrap(),
        "show",
        "last",
        "--json",
    ];
    let o = run(env!("CARGO_BIN_EXE_rtscope"), &args);
    assert_eq!(o.status.code(), Some(0), "{}", dump(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// The JSON a command printed on stdout; it must have exited 0.
pub fn ok_json(o: Output) -> serde_json::Value {
    assert_eq!(o.status.code(), Some(0), "{}", dump(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// Writes `text` to DIR/NAME and imports it: it must exit 2, name the file and `place`, and
/// leave no database behind.
pub fn import_refused(dir: &Path, name: &str, text: &[u8], place: &str) {
    let file = dir.join(name);
    std::fs::write(&file, text).unwrap();
    let db = dir.join(format!("{name}.db"));
    let o = run(
        env!("CARGO_BIN_EXE_rtscope"),
        &[
            "import",
            "--db",
            db.to_str().unwrap(),
            file.to_str().unwrap(),
        ],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{name}: {}", dump(&o));
    assert!(!err.contains("panicked"), "{err}");
    assert!(
        err.contains(name) && err.contains(place),
        "{place:?} not in {err:?}"
    );
    assert!(
        !err.contains('\x1b') && !err.contains('\x07'),
        "raw escape printed: {err:?}"
    );
    assert!(err.len() < 4096, "a bounded message: {} bytes", err.len());
    assert!(!db.exists(), "{name}: nothing is recorded");
}
