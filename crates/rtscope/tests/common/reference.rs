//! The reference cyclictest (rt-tests 2.40, the Debian 2.4 build) for
//! tests/grammar_*.rs: its captured outputs in
//! tests/reference/cyclictest-2.40/ (copied from /work/shared/reference/),
//! helpers to break copies of them, and runs of the real binary.
//! [`cyclictest_path`] is shared with [`super::compat`].

use std::path::{Path, PathBuf};

// ---------------------------------------------------------------- captures

pub fn reference(name: &str) -> String {
    let path = reference_dir().join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

pub fn reference_bytes(name: &str) -> Vec<u8> {
    let path = reference_dir().join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

pub fn reference_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/reference/cyclictest-2.40")
}

/// `text` with the first `from` replaced by `to`; panics if `from` is absent
/// so that a mutation can never silently be a no-op.
pub fn mutate(text: &str, from: &str, to: &str) -> String {
    assert!(text.contains(from), "mutation target {from:?} not found");
    text.replacen(from, to, 1)
}

/// Every `(description, text)` must be rejected by `check`.
pub fn assert_all_rejected(
    what: &str,
    cases: Vec<(&str, String)>,
    check: impl Fn(&str) -> Result<(), String>,
) {
    let mut accepted = Vec::new();
    for (desc, text) in &cases {
        match check(text) {
            Ok(()) => accepted.push(*desc),
            Err(e) => eprintln!(
                "{what} / {desc}: rejected as expected:\n  {}",
                e.replace('\n', "\n  ")
            ),
        }
    }
    assert!(
        accepted.is_empty(),
        "{what}: broken copies were accepted: {accepted:?}"
    );
}

pub fn ok(what: &str, r: Result<(), String>) {
    if let Err(e) = r {
        panic!("{what} was rejected:\n{e}");
    }
}

// ---------------------------------------------------------------- real cyclictest

pub const CYCLICTEST: &str = "/usr/bin/cyclictest";

/// The cyclictest to compare with: $CYCLICTEST, else /usr/bin/cyclictest.
/// Panics, saying `needed_for` and how to install it, if it is missing.
pub fn cyclictest_path(needed_for: &str) -> String {
    let path = std::env::var("CYCLICTEST").unwrap_or_else(|_| CYCLICTEST.to_string());
    assert!(
        Path::new(&path).is_file(),
        "{path} is missing: {needed_for}; \
         install it with `apt-get install rt-tests` (rt-tests 2.4, run as root)"
    );
    path
}

/// How many times a test runs the real cyclictest for one usable `--json` file.
pub const PEER_ATTEMPTS: usize = 3;

/// Whether cyclictest's `--json` text comes from a run where a thread never woke. Its `-l`
/// ends the run when the first thread is done, so on a loaded machine a starved thread leaves
/// `"cycles": 0` and `"avg": -nan` (not JSON). Such a peer run says nothing about rtscope: the
/// test measures again (at most [`PEER_ATTEMPTS`] runs).
pub fn starved_peer_json(text: &str) -> bool {
    text.contains("nan")
}

/// Whether cyclictest's histogram text (`-h`) comes from a run where a thread never woke: a
/// `# Total:` of 0, whose `# Min Latencies:` is cyclictest's starting value (1000000) and its
/// max 0, where rtscope rightly imports no statistics. Measured again like
/// [`starved_peer_json`].
pub fn starved_peer_histogram(text: &str) -> bool {
    text.lines()
        .filter_map(|l| l.strip_prefix("# Total:"))
        .any(|t| t.split_whitespace().any(|v| v.parse() == Ok(0u64)))
}

/// Runs cyclictest with `args`; asserts exit 0 and returns (stdout, stderr).
pub fn cyclictest(args: &[&str]) -> (String, String) {
    let bin = cyclictest_path("the reference cyclictest is needed for these tests");
    // Serialised with every other SCHED_FIFO run, also those of other test
    // binaries (tests/compat_*.rs and the other grammar_*.rs).
    let _guard = super::rt_lock();
    let out = super::run(&bin, args);
    let stdout = String::from_utf8(out.stdout).expect("cyclictest stdout is UTF-8");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success(),
        "`{}` failed ({}); it needs root for SCHED_FIFO\n--- stderr ---\n{stderr}\n--- stdout ---\n{stdout}",
        super::describe(&bin, args),
        out.status
    );
    (stdout, stderr)
}

/// Panics with the checker's message and the whole output.
pub fn passes(what: &str, text: &str, r: Result<(), String>) {
    if let Err(e) = r {
        panic!("real cyclictest output ({what}) was rejected:\n{e}\n--- output ---\n{text}");
    }
}
