//! Tests that cannot run here: a failure in CI, a printed skip elsewhere.
//!
//! Some tests need a tool (sshd, Chromium, xmllint, an rt-tests program), a privilege (root,
//! SCHED_FIFO) or a kernel feature (tracefs instances). cargo counts a test that returns early
//! as passed, so CI could not tell a skipped test from a passing one. Under
//! `RTSCOPE_TEST_STRICT=1` (`.ci/run` sets it) such a test fails, naming what is missing and
//! how to install it; otherwise it prints `SKIP: reason` to stderr and returns.

use std::fmt::Display;

/// The environment variable that turns every skip into a failure.
pub const STRICT_VAR: &str = "RTSCOPE_TEST_STRICT";

/// Whether skips are failures: [`STRICT_VAR`] is set to anything but empty or `0`.
pub fn strict() -> bool {
    std::env::var_os(STRICT_VAR).is_some_and(|v| !v.is_empty() && v != "0")
}

/// Reports that the calling test cannot run here because of `reason` (what is missing and how
/// to install it). Under [`strict`] it panics with the reason; otherwise it prints
/// `SKIP: reason` to stderr and the caller returns. Use [`require!`](crate::require) or
/// [`require_ok!`](crate::require_ok) in a test; call this where a helper returns `None`.
#[track_caller]
pub fn skip_or_fail(reason: impl Display) {
    if strict() {
        panic!("{STRICT_VAR} is set and this test cannot run here: {reason}");
    }
    eprintln!("SKIP: {reason} ({STRICT_VAR}=1 makes this a failure)");
}

/// `require!(cond, "what is missing and how to install it", args…)`: when `cond` is false,
/// [`skip_or_fail`] with the formatted reason and return `Default::default()` from the
/// calling function (`()` from a test, `None` from a helper returning an `Option`).
#[macro_export]
macro_rules! require {
    ($cond:expr, $($reason:tt)+) => {
        if !$cond {
            $crate::skip_or_fail(::std::format!($($reason)+));
            return ::std::default::Default::default();
        }
    };
}

/// `require_root!("what needs it")`: a test that needs root (the real engine at SCHED_FIFO,
/// locked memory, `/dev/cpu_dma_latency`, tracefs, the rt-tests programs) [`skip_or_fail`]s
/// when run as another user, naming what needs it. These are the real-time tests: few, and
/// marked by this line; the logic around them is tested without root (the fake clock of
/// `rtscope_common::clock`).
#[macro_export]
macro_rules! require_root {
    ($what:expr) => {
        $crate::require!(
            $crate::is_root(),
            "needs root: {} (run the tests as root, or leave {} unset to skip)",
            $what,
            $crate::STRICT_VAR
        )
    };
}

/// `require_ok!(result)`: the `Ok` value, or [`skip_or_fail`] with the `Err` (the reason) and
/// return `Default::default()` from the calling function.
#[macro_export]
macro_rules! require_ok {
    ($result:expr) => {
        match $result {
            ::std::result::Result::Ok(v) => v,
            ::std::result::Result::Err(why) => {
                $crate::skip_or_fail(why);
                return ::std::default::Default::default();
            }
        }
    };
}

/// Whether `program` can be run (`program arg` exits 0), for [`require!`](crate::require).
pub fn have(program: &str, arg: &str) -> bool {
    std::process::Command::new(program)
        .arg(arg)
        .stdin(std::process::Stdio::null())
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Whether `python3` (the first on PATH) imports every module of `modules` ("a, b").
pub fn python3_imports(modules: &str) -> bool {
    std::process::Command::new("python3")
        .args(["-c", &format!("import {modules}")])
        .stdin(std::process::Stdio::null())
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Whether this kernel runs BPF programs on trace events with a BPF ring buffer (its symbols
/// in `/proc/kallsyms`: `CONFIG_BPF_EVENTS`, Linux 5.8), for the late-only stacks' tests.
pub fn bpf_events_here() -> bool {
    let syms = std::fs::read_to_string("/proc/kallsyms").unwrap_or_default();
    [" perf_event_attach_bpf_prog\n", " bpf_ringbuf_reserve\n"]
        .iter()
        .all(|s| syms.contains(s))
}

/// Whether this process runs as root (uid 0), for [`require!`](crate::require).
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    // One test: the environment is process-wide.
    #[test]
    fn strict_panics_with_the_reason_and_otherwise_the_test_returns() {
        let saved = std::env::var_os(STRICT_VAR);
        fn guarded(ok: bool) -> Option<u32> {
            require!(ok, "{} is missing (apt-get install {})", "tool", "pkg");
            Some(7)
        }
        fn unit(r: Result<u8, &str>) -> u8 {
            let v = require_ok!(r);
            v + 1
        }
        std::env::remove_var(STRICT_VAR);
        assert!(!strict());
        assert_eq!(guarded(true), Some(7));
        assert_eq!(guarded(false), None);
        assert_eq!(unit(Ok(1)), 2);
        assert_eq!(unit(Err("no tracefs")), 0);
        std::env::set_var(STRICT_VAR, "0");
        assert!(!strict());
        std::env::set_var(STRICT_VAR, "1");
        assert!(strict());
        assert_eq!(guarded(true), Some(7));
        let e = std::panic::catch_unwind(|| guarded(false)).unwrap_err();
        let msg = e.downcast_ref::<String>().unwrap();
        assert!(
            msg.contains("RTSCOPE_TEST_STRICT is set")
                && msg.contains("tool is missing (apt-get install pkg)"),
            "{msg}"
        );
        let e = std::panic::catch_unwind(|| unit(Err("no tracefs"))).unwrap_err();
        assert!(e.downcast_ref::<String>().unwrap().ends_with("no tracefs"));
        match saved {
            Some(v) => std::env::set_var(STRICT_VAR, v),
            None => std::env::remove_var(STRICT_VAR),
        }
    }
}
