//! Snapshot tests of rtscope's own human-facing text, with numbers filtered out
//! (`common::grammar::shape`). Set `UPDATE_SNAPSHOTS=1` to rewrite a snapshot after an intended
//! change, and review the diff.

use crate::common;

use common::grammar::shape;
use std::path::PathBuf;

fn snapshot(name: &str, actual: &str) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/snapshots")
        .join(name);
    let got = normalize(&shape(actual));
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(&path, &got).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path).unwrap_or_else(|_| {
        panic!(
            "missing snapshot {}: run with UPDATE_SNAPSHOTS=1",
            path.display()
        )
    });
    assert_eq!(
        got, want,
        "output shape changed (UPDATE_SNAPSHOTS=1 to accept):\n{actual}"
    );
}

/// Beyond `shape`: column padding and rule lengths follow the widest value, a duration's unit
/// follows its magnitude (850ns, 12.3us, 4.56ms), and a number's decimals follow its value
/// (a miss ratio of 0 is `0`, else `0.05`), so those are folded too.
fn normalize(shaped: &str) -> String {
    let spaces = regex::Regex::new(r" {2,}").unwrap();
    let rule = regex::Regex::new(r"-{3,}").unwrap();
    let unit = regex::Regex::new(r"N(\.N)?(ns|us|ms|s)\b").unwrap();
    let s = spaces.replace_all(shaped, " ");
    let s = rule.replace_all(&s, "---");
    let s = unit.replace_all(&s, "<duration>");
    s.replace("N.N", "N")
}

fn rtscope(args: &[&str]) -> String {
    let _lock = common::rt_lock();
    let out = common::run(env!("CARGO_BIN_EXE_rtscope"), args);
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn measure_summary_table_keeps_its_layout() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    let out = rtscope(&[
        "measure",
        "--cpus",
        "0",
        "-l",
        "2000",
        "-i",
        "100us",
        "-q",
        "--limit",
        "max=10s",
        "--limit",
        "missed=1000000",
    ]);
    snapshot("measure-table.txt", &out);
}

#[test]
fn measure_m_to_n_table_keeps_its_layout() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    let out = rtscope(&[
        "measure",
        "--cpus",
        "0",
        "--threads",
        "2",
        "-l",
        "500",
        "-i",
        "200us",
        "-q",
        "--limit",
        "p99=10s",
    ]);
    snapshot("measure-m-to-n.txt", &out);
}

#[test]
fn cyclictest_help_keeps_its_layout() {
    snapshot("cyclictest-help.txt", &rtscope(&["cyclictest", "--help"]));
}
