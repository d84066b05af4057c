//! Running `rtscope cyclictest` and the real cyclictest side by side, and
//! checking what they print, for tests/compat_*.rs.

use super::grammar::*;
use super::reference::cyclictest_path;
use serde_json::Value;
use std::path::Path;

// ---------------------------------------------------------------- running

/// What a finished run printed.
pub struct Ran {
    pub what: String,
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Ran {
    /// Panics unless the run exited with `code`.
    pub fn expect_exit(&self, code: i32) -> &Self {
        assert_eq!(
            self.code,
            Some(code),
            "`{}` exited with {:?}, expected {code}\n{}",
            self.what,
            self.code,
            self.dump()
        );
        self
    }

    pub fn dump(&self) -> String {
        format!(
            "--- stdout ---\n{}--- stderr ---\n{}",
            self.stdout, self.stderr
        )
    }
}

/// Runs `bin args` under the SCHED_FIFO lock.
pub fn run_locked(bin: &str, args: &[&str]) -> Ran {
    let out = {
        let _guard = super::rt_lock();
        super::run(bin, args)
    };
    let what = super::describe(bin, args);
    Ran {
        code: out.status.code(),
        stdout: String::from_utf8(out.stdout)
            .unwrap_or_else(|e| panic!("`{what}` printed non-UTF-8 on stdout: {e}")),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        what,
    }
}

pub fn rtscope_bin() -> &'static str {
    env!("CARGO_BIN_EXE_rtscope")
}

/// `rtscope cyclictest args...`, whatever its exit code. Like with like: as [`cyclictest`]
/// runs the real one with `--default-system`, so does this one (both hold
/// /dev/cpu_dma_latency at 0 by default) unless `args` ask for a PM QoS setting themselves
/// (`--latency`, `--default-system`, `--laptop`).
pub fn rtscope_run(args: &[&str]) -> Ran {
    let own = args.iter().any(|a| {
        ["--latency", "--default-system", "--laptop"]
            .iter()
            .any(|o| a.starts_with(o))
    });
    let full: Vec<&str> = std::iter::once("cyclictest")
        .chain(args.iter().copied())
        .chain((!own).then_some("--default-system"))
        .collect();
    run_locked(rtscope_bin(), &full)
}

/// `rtscope cyclictest args...`, which must exit 0; returns its stdout.
pub fn rtscope(args: &[&str]) -> String {
    let r = rtscope_run(args);
    r.expect_exit(0);
    r.stdout
}

/// The real cyclictest with `args`, exactly as given; must exit 0 (it does
/// even when `-b` fires).
pub fn cyclictest_exact(args: &[&str]) -> Ran {
    let r = run_locked(
        &cyclictest_path("the real cyclictest is needed to compare rtscope's output with"),
        args,
    );
    r.expect_exit(0);
    r
}

/// The real cyclictest with `args` plus `--default-system`, so that it leaves
/// /dev/cpu_dma_latency alone as [`rtscope_run`] runs rtscope. Returns stdout
/// without any `# /dev/cpu_dma_latency` line (2.4 prints none with
/// `--default-system`; other builds might) and stderr.
pub fn cyclictest(args: &[&str]) -> (String, String) {
    let mut full = args.to_vec();
    full.push("--default-system");
    let r = cyclictest_exact(&full);
    (without_dma_latency_line(&r.stdout), r.stderr)
}

pub fn without_dma_latency_line(text: &str) -> String {
    text.split_inclusive('\n')
        .filter(|l| !l.starts_with("# /dev/cpu_dma_latency set to "))
        .collect()
}

/// Reads and deletes the JSON file at `path`; returns its text and value.
pub fn take_json(path: &Path) -> (String, Value) {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("the JSON file {} was not written: {e}", path.display()));
    let _ = std::fs::remove_file(path);
    let value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("the JSON file does not parse: {e}\n{text}"));
    (text, value)
}

// ---------------------------------------------------------------- checking

/// Panics with the checker's message and the whole output.
pub fn passes<T>(what: &str, text: &str, r: Result<T, String>) -> T {
    r.unwrap_or_else(|e| {
        panic!("rtscope's output ({what}) was rejected:\n{e}\n--- output ---\n{text}")
    })
}

pub fn assert_same_shape(what: &str, rtscope: &str, cyclictest: &str) {
    if let Err(e) = same_shape(rtscope, cyclictest) {
        panic!(
            "{what}: rtscope's output (left) does not have the shape of cyclictest's (right):\n{e}\n\
             --- rtscope ---\n{rtscope}--- cyclictest ---\n{cyclictest}"
        );
    }
}

/// A `-q` summary without the preamble ([`rtscope_run`]'s `--default-system`).
pub fn summary_opts(threads: usize, nsecs: bool) -> SummaryOpts {
    SummaryOpts {
        nsecs,
        threads: Some(threads),
        preamble: Some(false),
    }
}

/// A Debian 2.4 histogram of `threads` columns and `buckets` rows.
pub fn hist_opts(threads: usize, buckets: usize, sum_column: bool) -> HistOpts {
    HistOpts {
        threads,
        buckets: Some(buckets),
        sum_column,
        total_line: true,
    }
}

/// Per-thread `# Total:` + `# Histogram Overflows:` (the samples a thread took).
pub fn samples_per_thread(h: &Histogram, threads: usize) -> Vec<u64> {
    let total = h
        .total
        .as_ref()
        .expect("a Debian 2.4 histogram has `# Total:`");
    (0..threads)
        .map(|j| total.values[j] + h.overflows.values[j])
        .collect()
}
