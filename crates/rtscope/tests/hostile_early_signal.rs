//! A stop signal in a command's first instants (issue 67, the signal matrix's finding at
//! 0.2 s): SIGINT or SIGTERM sent to `rtscope noise` or `rtscope measure` while it is still
//! parsing its options or setting its run up ends it as a stop does later — exit 3, no panic,
//! a run left behind (if any) kept as `interrupted` — never by the signal's default action
//! with nothing recorded. Before, the run's signals were held only once the command had
//! started: a debug build beside a CPU hog spent more than 0.2 s before that.
//!
//! Each signal is sent a few milliseconds after the process holds its stop signals (SIGTERM in
//! its `SigBlk`, seen in `/proc/PID/status`: `main_with_args` holds them first; what runs
//! before that, the loader and Rust's start-up, no program can guard, and a loaded host can
//! stretch it past any fixed offset), at several small offsets; no time is asserted.

use crate::hostile_support as support;

use std::path::Path;
use std::process::Output;
use std::time::{Duration, Instant};
use support::*;

/// How long a case may take before it counts as hung (a hang guard, not an assertion).
const HANG: Duration = Duration::from_secs(120);

/// The offsets after the start-up at which the signal is sent (ms).
const OFFSETS_MS: [u64; 4] = [3, 10, 25, 50];

/// Whether signal `sig` is set in the hexadecimal mask of `field` (`SigIgn`, `SigBlk`) of
/// `/proc/PID/status`; `None` once the process is gone.
fn in_mask(pid: u32, field: &str, sig: i32) -> Option<bool> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status
        .lines()
        .find(|l| l.starts_with(&format!("{field}:")))?;
    let mask = u64::from_str_radix(line.split_whitespace().nth(1)?, 16).ok()?;
    Some(mask & (1 << (sig - 1)) != 0)
}

/// Waits until `pid` has entered Rust's start-up (SIGPIPE ignored; the child was spawned
/// with its default action) or is gone; false after the hang guard.
fn started(pid: u32) -> bool {
    let end = Instant::now() + HANG;
    while Instant::now() < end {
        match in_mask(pid, "SigIgn", libc::SIGPIPE) {
            Some(false) => std::thread::sleep(Duration::from_micros(200)),
            _ => return true,
        }
    }
    false
}

/// Starts `args` (with `{db}` replaced), sends `sig` `offset` after its start-up and returns
/// its output.
fn early_stop(args: &[&str], db: &Path, sig: i32, offset: Duration) -> Output {
    let args: Vec<String> = args
        .iter()
        .map(|a| a.replace("{db}", db.to_str().unwrap()))
        .collect();
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let (child, mut reaper) = spawn(&argv);
    let pid = child.id();
    assert!(started(pid), "`{}` never started", args.join(" "));
    // From the moment it holds its stop signals: what comes before (a few instructions of
    // Rust's start-up, stretched by a loaded host) no program can guard.
    assert!(
        signals_held(pid, HANG),
        "`{}` never held its signals",
        args.join(" ")
    );
    std::thread::sleep(offset);
    kill(pid, sig);
    let o = wait_output(child, HANG, &args.join(" "));
    reaper.disarm();
    o
}

/// Each command × SIGINT, SIGTERM × every offset: exit 3, no panic, every run left behind
/// `interrupted` and said so on stdout.
fn every_early_stop(name: &str, args: &[&str], offsets: &[u64]) {
    let dir = scratch(&format!("early-signal-{name}"));
    for (i, sig) in [libc::SIGINT, libc::SIGTERM].into_iter().enumerate() {
        for &ms in offsets {
            let db = dir.join(format!("{i}-{ms}.db"));
            let o = early_stop(args, &db, sig, Duration::from_millis(ms));
            let (out, err) = texts(&o);
            let case = format!(
                "{name} × signal {sig} at {ms} ms: {:?}\n{out}\n{err}",
                o.status
            );
            assert_eq!(o.status.code(), Some(3), "exit 3 (interrupted): {case}");
            assert!(!err.contains("panicked"), "a panic: {case}");
            let st = statuses(&db);
            assert!(st.len() <= 1, "one run at most: {st:?} {case}");
            assert!(st.iter().all(|s| s == "interrupted"), "{st:?}: {case}");
            let name = if sig == libc::SIGINT {
                "SIGINT"
            } else {
                "SIGTERM"
            };
            if !st.is_empty() {
                assert!(
                    out.contains(&format!("interrupted by {name}"))
                        || err.contains(&format!("interrupted by {name}"))
                        || err.contains(name),
                    "the stop said: {case}"
                );
            }
        }
    }
}

/// `rtscope noise` (its explanation off: the loops' set-up only) stopped in its first
/// instants.
#[test]
fn a_stop_signal_in_the_first_instants_of_noise_ends_it_with_exit_3() {
    rtscope_testkit::require_root!("rtscope noise");
    let args = [
        "noise",
        "-q",
        "--no-mlock",
        "--cpus",
        "0",
        "-D",
        "60s",
        "--explain",
        "off",
        "--db",
        "{db}",
    ];
    every_early_stop("noise", &args, &OFFSETS_MS);
}

/// `rtscope noise` with its default explanation (the trace set up when tracefs is usable)
/// stopped in its first instants.
#[test]
fn a_stop_signal_in_the_first_instants_of_the_default_noise_ends_it_with_exit_3() {
    rtscope_testkit::require_root!("rtscope noise --explain (tracefs)");
    let args = [
        "noise",
        "-q",
        "--no-mlock",
        "--cpus",
        "0",
        "-D",
        "60s",
        "--db",
        "{db}",
    ];
    every_early_stop("noise-default", &args, &OFFSETS_MS[..2]);
}

/// `rtscope measure` stopped in its first instants.
#[test]
fn a_stop_signal_in_the_first_instants_of_measure_ends_it_with_exit_3() {
    rtscope_testkit::require_root!("rtscope measure");
    let args = measure_args("{db}", &["-D", "60s", "-q"]);
    every_early_stop("measure", &args, &OFFSETS_MS);
}

/// A command that takes no run's signals keeps their default action once parsed: `rtscope
/// completions bash` (more than a pipe's buffer) writing into a pipe nobody reads blocks in
/// its write, and a SIGTERM then ends it by the signal (never held, never a hang).
#[test]
fn a_command_without_a_run_keeps_the_default_action_of_a_stop_signal() {
    use std::os::unix::process::ExitStatusExt;
    let mut child = std::process::Command::new(exe())
        .args(["completions", "bash"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut reaper = Reaper::new(child.id());
    let pid = child.id();
    assert!(started(pid));
    let end = Instant::now() + HANG;
    // Held from the start, given back once the command is known to take none.
    while in_mask(pid, "SigBlk", libc::SIGTERM) != Some(false) && Instant::now() < end {
        assert!(
            child.try_wait().unwrap().is_none(),
            "ended with its pipe unread"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    kill(pid, libc::SIGTERM);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < end, "SIGTERM held by `completions bash`");
        std::thread::sleep(Duration::from_millis(10));
    };
    reaper.disarm();
    assert_eq!(status.signal(), Some(libc::SIGTERM), "{status:?}");
}
