//! `rtscope runs merge` end to end: two "boards" record into their own databases, both are
//! merged into a lab database tagged `board=…` (twice: the second merge adds nothing), the
//! runs keep their UUIDs and host identity, and `rtscope compare board=a board=b` reads them.

use crate::common;

use serde_json::Value;
use std::path::Path;
use std::process::Output;

fn rtscope(args: &[&str]) -> Output {
    common::run(env!("CARGO_BIN_EXE_rtscope"), args)
}

fn ok(o: Output) -> String {
    assert_eq!(o.status.code(), Some(0), "{}", common::dump(&o));
    String::from_utf8(o.stdout).unwrap()
}

fn show(db: &Path, run: &str) -> Value {
    let o = rtscope(&["runs", "--db", db.to_str().unwrap(), "show", run, "--json"]);
    serde_json::from_str(&ok(o)).unwrap()
}

#[test]
fn boards_merge_once_into_a_lab_database_and_compare_by_board() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    let dir = common::fresh_dir("fleet-merge");
    let db = |n: &str| dir.join(n).to_str().unwrap().to_string();
    for board in ["a", "b"] {
        let _rt = common::rt_lock();
        let to = db(&format!("{board}.db"));
        ok(rtscope(
            &[
                &common::SHORT_MEASURE[..],
                &["--db", &to, "--label", "idle"],
            ]
            .concat(),
        ));
    }
    // `runs --db lab.db merge BOARD.db --tag TAG`.
    let merge = |board: &str, tag: &str| {
        let (lab, from) = (db("lab.db"), db(&format!("{board}.db")));
        rtscope(&["runs", "--db", &lab, "merge", &from, "--tag", tag])
    };
    let a = show(&dir.join("a.db"), "last");
    let uuid = a["uuid"].as_str().unwrap().to_string();
    assert_eq!(uuid.len(), 36);
    assert!(a["host"].is_string());
    let out = ok(merge("a", "board=a"));
    assert!(out.contains("1 run(s) added, 0 already here"), "{out}");
    ok(merge("b", "board=b"));
    let again = ok(merge("a", "board=a"));
    assert!(again.contains("0 run(s) added, 1 already here"), "{again}");
    let list: Value =
        serde_json::from_str(&ok(rtscope(&["runs", "--db", &db("lab.db"), "--json"]))).unwrap();
    assert_eq!(list.as_array().unwrap().len(), 2);
    let merged = show(&dir.join("lab.db"), "1");
    assert_eq!(merged["uuid"], a["uuid"]);
    assert_eq!(
        (merged["max_ns"].clone(), merged["samples"].clone()),
        (a["max_ns"].clone(), a["samples"].clone())
    );
    assert_eq!(merged["tags"]["board"], "a");
    // Exit 1 is a regression verdict between the two runs (load on this machine decides it).
    let o = rtscope(&["compare", "--db", &db("lab.db"), "board=a", "board=b"]);
    assert!(
        matches!(o.status.code(), Some(0 | 1)),
        "{}",
        common::dump(&o)
    );
    let cmp = String::from_utf8_lossy(&o.stdout);
    assert!(
        cmp.contains("A  board=a: 1 run") && cmp.contains("B  board=b: 1 run"),
        "{cmp}"
    );
    // A database that is not there: a usage error naming it.
    let o = rtscope(&["runs", "--db", &db("lab.db"), "merge", &db("nope.db")]);
    assert_eq!(o.status.code(), Some(2), "{}", common::dump(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("nope.db"));
    std::fs::remove_dir_all(&dir).unwrap();
}
