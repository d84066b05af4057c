//! Shared helpers for rtscope's integration tests.
//!
//! Include from a test file with `mod common;`, then use
//! `common::grammar::*` for the cyclictest format checkers and
//! `common::run` to run a binary with a timeout.
#![allow(dead_code)]

pub mod grammar;

use std::io::Read;
use std::process::{Child, Command, Output, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Default limit for [`run`]: a child still running after this is killed.
pub const RUN_TIMEOUT: Duration = Duration::from_secs(30);

/// Runs `cmd args...` with stdin from /dev/null and captures stdout and
/// stderr. The child is killed after 30 s and the test panics, showing what
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

/// Like [`run`] with an explicit limit, but does not panic on a timeout:
/// returns the output collected so far and `true` if the child was killed.
pub fn run_for(cmd: &str, args: &[&str], timeout: Duration) -> (Output, bool) {
    let mut child = Command::new(cmd)
        .args(args)
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
