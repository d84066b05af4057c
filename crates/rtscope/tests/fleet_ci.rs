//! The lab CI outputs of the real binary read by the tools those formats are defined by
//! (issue 48): boards that cannot be reached (ssh to a closed loopback port) are failed cases
//! with their reason in JUnit (the XSD of Jenkins' xUnit plugin, junitparser), KCIDB
//! (kcidb-io's schema) and LAVA (its signal lines), counted in each file's totals; two
//! `compare --ci-output kcidb=` invocations share no test id, and one invocation's ids share
//! its comparison's UUID. Without xmllint or the Python modules (.ci/run installs them) the
//! tests fail under RTSCOPE_TEST_STRICT=1 and skip with the reason otherwise.

use crate::common;
use crate::fleet_ssh::{kcidb_valid, xsd_valid};

use regex::Regex;
use serde_json::Value;
use std::path::Path;
use std::process::Command;

/// A loopback port nothing listens on (bound, then closed).
fn closed_port(addr: &str) -> u16 {
    std::net::TcpListener::bind((addr, 0))
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The JUnit file as junitparser reads it: `suite NAME PROPS`, `case NAME RESULT MESSAGE`
/// lines and `totals TESTS FAILURES ERRORS`.
fn junitparser(doc: &Path) -> Option<String> {
    rtscope_testkit::require!(
        rtscope_testkit::python3_imports("junitparser"),
        "python3 with junitparser is not installed (.ci/run installs it in its venv: pip \
         install junitparser)"
    );
    let script = "import sys,junitparser\n\
        x=junitparser.JUnitXml.fromfile(sys.argv[1])\n\
        for s in x:\n\
        \x20 print('suite', s.name)\n\
        \x20 for c in s:\n\
        \x20   r=c.result\n\
        \x20   print('case', c.name, (type(r[0]).__name__.lower()+' '+(r[0].message or '')) if r else 'pass')\n\
        print('totals', x.tests, x.failures, x.errors)";
    let o = Command::new("python3")
        .args(["-c", script])
        .arg(doc)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    Some(String::from_utf8(o.stdout).unwrap())
}

/// LAVA's signal lines: (test set, case id, result) of every case, and the comment lines.
fn lava_cases(text: &str) -> (Vec<(String, String, String)>, Vec<String>) {
    let start = Regex::new(r"^<LAVA_SIGNAL_TESTSET START ([-_.A-Za-z0-9]+)>$").unwrap();
    let case = Regex::new(
        r"^<LAVA_SIGNAL_TESTCASE TEST_CASE_ID=([-_.A-Za-z0-9]+) RESULT=(pass|fail|skip|unknown)( MEASUREMENT=\S+ UNITS=\S+)?>$",
    )
    .unwrap();
    let (mut set, mut cases, mut comments) = (None, Vec::new(), Vec::new());
    for line in text.lines() {
        if let Some(m) = start.captures(line) {
            set = Some(m[1].to_string());
        } else if line == "<LAVA_SIGNAL_TESTSET STOP>" {
            set = None;
        } else if let Some(m) = case.captures(line) {
            let s = set.clone().expect("a case inside a test set");
            cases.push((s, m[1].to_string(), m[2].to_string()));
        } else if let Some(c) = line.strip_prefix("# ") {
            comments.push(c.to_string());
        } else {
            panic!("a line LAVA does not read: {line:?}");
        }
    }
    (cases, comments)
}

/// The issue's repro: every board unreachable made `<testsuites tests="0">`, which a CI
/// system that reads the files shows green. Each board is now an error case with ssh's reason
/// in JUnit, an `ERROR` test in KCIDB and a failed case in its own LAVA set, and the totals
/// count them; the exit status stays 2.
#[test]
fn unreachable_boards_are_failed_cases_in_junit_kcidb_and_lava() {
    let dir = common::fresh_dir("fleet-ci-unreachable");
    let (junit, kcidb, lava) = (
        dir.join("r.xml"),
        dir.join("r.json"),
        dir.join("r.lava.txt"),
    );
    let boards = [
        format!("root@127.0.0.1:{}", closed_port("127.0.0.1")),
        format!("root@127.0.0.6:{}", closed_port("127.0.0.6")),
    ];
    let o = Command::new(env!("CARGO_BIN_EXE_rtscope"))
        .env("RTSCOPE_SSH", "ssh -F /dev/null")
        .args(["measure", "-l", "100", "-q", "--label", "idle", "--db"])
        .arg(dir.join("lab.db"))
        .args(["--target", &boards[0], "--target", &boards[1]])
        .arg(format!("--ci-output=junit={}", junit.display()))
        .arg(format!("--ci-output=kcidb={}", kcidb.display()))
        .arg(format!("--ci-output=lava={}", lava.display()))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{}", common::dump(&o));
    for b in ["127.0.0.1", "127.0.0.6"] {
        assert!(
            stderr.contains(&format!("board {b} failed: connect failed")),
            "{stderr}"
        );
    }
    // JUnit: a suite per board, its `run` case an error with the reason; totals 2 tests, 2
    // errors; valid against the XSD and read so by junitparser.
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(
        xml.contains(r#"<testsuites name="rtscope" tests="2" failures="0" errors="2""#),
        "{xml}"
    );
    assert_eq!(xml.matches(r#"<error type="board failed""#).count(), 2);
    xsd_valid(&junit);
    if let Some(read) = junitparser(&junit) {
        for b in ["127.0.0.1", "127.0.0.6"] {
            assert!(read.contains(&format!("suite rtscope.{b}\n")), "{read}");
            assert!(
                read.contains(&format!("case run error board {b} failed: connect failed")),
                "{read}"
            );
        }
        assert!(read.contains("totals 2 0 2"), "{read}");
    }
    // KCIDB: one `ERROR` test per board with the reason, valid against the schema.
    let doc: Value = serde_json::from_slice(&std::fs::read(&kcidb).unwrap()).unwrap();
    let tests = doc["tests"].as_array().unwrap();
    assert_eq!(tests.len(), 2, "{doc}");
    for (t, b) in tests.iter().zip(["127.0.0.1", "127.0.0.6"]) {
        assert_eq!(t["status"], "ERROR", "{t}");
        assert_eq!(t["path"], "rtscope", "{t}");
        let excerpt = t["log_excerpt"].as_str().unwrap();
        assert!(
            excerpt.starts_with(&format!("board {b} failed: connect failed")),
            "{t}"
        );
    }
    assert_ne!(tests[0]["id"], tests[1]["id"]);
    kcidb_valid(&kcidb);
    // LAVA: each board its own set with a failed `run` case, the reason on a comment line.
    let (cases, comments) = lava_cases(&std::fs::read_to_string(&lava).unwrap());
    let want: Vec<(String, String, String)> = ["127.0.0.1", "127.0.0.6"]
        .iter()
        .map(|b| (b.to_string(), format!("{b}.run"), "fail".to_string()))
        .collect();
    assert_eq!(cases, want);
    assert!(
        comments
            .iter()
            .all(|c| c.contains("failed: connect failed")),
        "{comments:?}"
    );
    assert_eq!(comments.len(), 2);
}

/// The ids of `compare --ci-output kcidb=`'s tests, and the comparison's UUID of each.
fn compare_ids(db: &Path, out: &Path) -> Vec<(String, String)> {
    let o = Command::new(env!("CARGO_BIN_EXE_rtscope"))
        .args(["compare", "kernel=a", "kernel=b", "--db"])
        .arg(db)
        .arg(format!("--ci-output=kcidb={}", out.display()))
        .output()
        .unwrap();
    // 1: a regression verdict (the synthetic runs decide it); either way the file is written.
    assert!(
        matches!(o.status.code(), Some(0 | 1)),
        "{}",
        common::dump(&o)
    );
    kcidb_valid(out);
    let doc: Value = serde_json::from_slice(&std::fs::read(out).unwrap()).unwrap();
    doc["tests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["id"].as_str().unwrap().to_string(),
                t["misc"]["comparison_uuid"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// Issue 48: the same ids every night made each comparison overwrite the last in KernelCI.
/// Two invocations on the same database share no test id; within one, the ids are distinct
/// and carry the one UUID of that comparison.
#[test]
fn two_compare_invocations_share_no_kcidb_test_id() {
    let dir = common::fresh_dir("fleet-ci-compare-ids");
    let db = dir.join("r.db");
    let mut store = rtscope_store::Store::open(&db).unwrap();
    for (kernel, seed) in [("a", 1), ("a", 2), ("b", 3), ("b", 4)] {
        let spec = rtscope_testkit::synthetic::SyntheticRun {
            label: format!("k{kernel}"),
            samples: 5_000,
            seed,
            monitors: false,
            tags: vec![("kernel".into(), kernel.into())],
            ..Default::default()
        };
        rtscope_testkit::synthetic::write_run(&mut store, &spec).unwrap();
    }
    drop(store);
    let first = compare_ids(&db, &dir.join("1.json"));
    let second = compare_ids(&db, &dir.join("2.json"));
    assert!(!first.is_empty());
    assert_eq!(first.len(), second.len());
    for ids in [&first, &second] {
        let uuid = &ids[0].1;
        assert_eq!(uuid.len(), 36, "{uuid}");
        assert!(ids
            .iter()
            .all(|(id, u)| u == uuid && id.contains(uuid.as_str())));
        let mut unique: Vec<&String> = ids.iter().map(|(id, _)| id).collect();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), ids.len(), "{ids:?}");
    }
    assert_ne!(first[0].1, second[0].1);
    assert!(
        first
            .iter()
            .all(|(a, _)| second.iter().all(|(b, _)| a != b)),
        "{first:?}\n{second:?}"
    );
}
