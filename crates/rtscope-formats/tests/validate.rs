//! The lab CI outputs validated by the tools those formats are defined by: KCIDB documents
//! against kcidb-io's published JSON schema (Python's `jsonschema`), JUnit documents against
//! the JUnit XSD of Jenkins' xUnit plugin (`xmllint --schema`, Debian's libxml2-utils). The
//! schemas are fixtures: tests/fixtures/README.md says where they come from.

use rtscope_common::limits;
use rtscope_formats::{junit, kcidb, Report};
use rtscope_store::Store;
use rtscope_testkit::synthetic::{write_run, SyntheticRun};
use rtscope_testkit::{have, python3_imports, require};
use std::path::{Path, PathBuf};
use std::process::Command;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("rtscope-formats-v-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Two reports: without limits, and with a failing and a passing one; label with characters
/// every format has to escape.
fn reports(d: &Path) -> Vec<Report> {
    let mut s = Store::open(&d.join("r.db")).unwrap();
    let spec = SyntheticRun {
        label: "rt <&\"'> kernel".into(),
        samples: 5_000,
        monitors: false,
        ..SyntheticRun::default()
    };
    let id = write_run(&mut s, &spec).unwrap();
    let b = s.bundle(id, false).unwrap();
    let lim = [
        limits::parse("max=1us").unwrap(),
        limits::parse("missed=0").unwrap(),
    ];
    vec![
        Report::from_bundle(&b, &[]).unwrap(),
        Report::from_bundle(&b, &lim).unwrap(),
    ]
}

#[test]
fn kcidb_documents_validate_against_the_published_schema() {
    require!(
        python3_imports("jsonschema, kcidb_io"),
        "python3 with jsonschema and kcidb-io is not installed (.ci/run installs them in a venv: \
         pip install jsonschema kcidb-io)"
    );
    let d = dir("kcidb");
    let rs = reports(&d);
    let all = kcidb::document_all(&rs, &[], &kcidb::Submission::default());
    let len = |r| {
        kcidb::document(r, &kcidb::Submission::default())["tests"]
            .as_array()
            .unwrap()
            .len()
    };
    assert_eq!(
        all["tests"].as_array().unwrap().len(),
        len(&rs[0]) + len(&rs[1])
    );
    for (i, r) in rs.iter().enumerate() {
        let sub = kcidb::Submission {
            origin: "lab ci".into(),
            build_id: if i == 0 {
                None
            } else {
                Some("lab_ci:kernel-6.6-rt".into())
            },
            ..kcidb::Submission::default()
        };
        let path = d.join(format!("k{i}.json"));
        let mut out = Vec::new();
        kcidb::write(&mut out, r, &sub).unwrap();
        std::fs::write(&path, &out).unwrap();
        let doc: serde_json::Value = serde_json::from_slice(&out).unwrap();
        let tests = doc["tests"].as_array().unwrap();
        assert!(tests.iter().any(|t| t["number"]["unit"] == "us"));
        let fails = tests.iter().filter(|t| t["status"] == "FAIL").count();
        assert_eq!(
            fails,
            if i == 0 { 0 } else { 3 },
            "max=1us fails on cpu 0, cpu 1, all"
        );
        let script = "import json,sys,jsonschema,kcidb_io\n\
            s=kcidb_io.schema.V5_3.json;d=json.load(open(sys.argv[2]))\n\
            jsonschema.Draft7Validator.check_schema(s)\n\
            errs=list(jsonschema.Draft7Validator(s).iter_errors(d))\n\
            [print(e.message) for e in errs]\n\
            sys.exit(1 if errs else 0)";
        let o = Command::new("python3")
            .args(["-c", script, "kcidb_io.schema.V5_3"])
            .arg(&path)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
    }
    // The validator does reject a document that breaks the schema (the check is real).
    let bad = d.join("bad.json");
    std::fs::write(
        &bad,
        r#"{"version":{"major":5,"minor":3},"tests":[{"id":"x","origin":"r"}]}"#,
    )
    .unwrap();
    let o = Command::new("python3")
        .args(["-c", "import json,sys,jsonschema,kcidb_io\njsonschema.validate(json.load(open(sys.argv[2])),kcidb_io.schema.V5_3.json)", "kcidb_io.schema.V5_3"])
        .arg(&bad)
        .output()
        .unwrap();
    assert!(!o.status.success());
    std::fs::remove_dir_all(d).unwrap();
}

#[test]
fn junit_documents_validate_against_the_xsd() {
    require!(
        have("xmllint", "--version"),
        "xmllint is not installed (apt-get install libxml2-utils; .ci/run installs it)"
    );
    let d = dir("junit");
    for (i, r) in reports(&d).iter().enumerate() {
        let path = d.join(format!("j{i}.xml"));
        let mut out = Vec::new();
        junit::write(&mut out, r).unwrap();
        std::fs::write(&path, &out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(
            text.matches("<failure ").count(),
            if i == 0 { 0 } else { 3 }
        );
        assert_valid_junit(&path);
    }
    // Many runs in one document (a campaign's `--ci-output junit=FILE`): a suite each.
    let all = d.join("all.xml");
    let mut out = Vec::new();
    junit::write_all(&mut out, &reports(&d), &[]).unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out).matches("<testsuite ").count(),
        2
    );
    std::fs::write(&all, &out).unwrap();
    assert_valid_junit(&all);
    std::fs::remove_dir_all(d).unwrap();
}

/// The Python script that reads a JUnit file with junitparser (the common Python JUnit
/// parser, which crashed on a property name repeated across suites) and prints, per suite,
/// its name, its property names and each case's result (`pass`, `failure`, `error`) with the
/// first result's message, then the file's totals.
const JUNITPARSER: &str = "import sys,junitparser\n\
    x=junitparser.JUnitXml.fromfile(sys.argv[1])\n\
    for s in x:\n\
    \x20 print('suite', s.name, ','.join(p.name for p in s.properties()))\n\
    \x20 for c in s:\n\
    \x20   r=c.result\n\
    \x20   print('case', c.name, (type(r[0]).__name__.lower()+' '+(r[0].message or '')) if r else 'pass')\n\
    print('totals', x.tests, x.failures, x.errors)";

/// xunitparser's reading of a JUnit file: `tests ERRORS FAILURES RUN` and one `case CLASS
/// NAME RESULT MESSAGE` line each. It asserts that no property name repeats in a file: a file
/// of two runs, each suite with `rtscope.run_uuid`, was an AssertionError (issue 51).
const XUNITPARSER: &str = "import sys,xunitparser\n\
    ts,tr=xunitparser.parse(open(sys.argv[1]))\n\
    print('tests', len(tr.errors), len(tr.failures), tr.testsRun)\n\
    for t in ts:\n\
    \x20 print('case', t.classname, t.methodname, t.result, t.message or '')";

/// Issues 48 and 51: a file of several runs and a board that recorded no run is one JUnit
/// document valid against the XSD, whose property names are unique, read by junitparser and
/// xunitparser with the board's `run` case an error carrying its reason and every case
/// counted in the totals.
/// The JUnit file at `path` must validate against the JUnit 10 XSD (xmllint).
fn assert_valid_junit(path: &Path) {
    let o = Command::new("xmllint")
        .args(["--noout", "--schema"])
        .arg(fixture("junit-10.xsd"))
        .arg(path)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// What the Python `script` printed of the file at `path`; it must succeed.
fn parsed(script: &str, path: &Path) -> String {
    let o = Command::new("python3")
        .args(["-c", script])
        .arg(path)
        .output()
        .unwrap();
    let read = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(
        o.status.success(),
        "{read}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    read
}

#[test]
fn several_runs_and_a_missing_board_make_one_junit_file_the_python_parsers_read() {
    require!(
        have("xmllint", "--version"),
        "xmllint is not installed (apt-get install libxml2-utils; .ci/run installs it)"
    );
    require!(
        python3_imports("junitparser"),
        "python3 with junitparser is not installed (.ci/run installs it in its venv: pip \
         install junitparser)"
    );
    require!(
        python3_imports("xunitparser"),
        "python3 with xunitparser is not installed (.ci/run installs it in its venv: pip \
         install xunitparser)"
    );
    let d = dir("junit-many");
    let mut s = Store::open(&d.join("r.db")).unwrap();
    let mut rs = Vec::new();
    for label in ["idle", "idle", "load"] {
        let spec = SyntheticRun {
            label: label.into(),
            samples: 2_000,
            monitors: false,
            ..SyntheticRun::default()
        };
        let id = write_run(&mut s, &spec).unwrap();
        rs.push(Report::from_bundle(&s.bundle(id, false).unwrap(), &[]).unwrap());
    }
    let missing = [rtscope_formats::missing::MissingBoard {
        board: "rpi4".into(),
        end: rtscope_formats::missing::BoardEnd::Failed,
        reason: "connect failed: Connection refused".into(),
    }];
    let path = d.join("all.xml");
    let mut out = Vec::new();
    junit::write_all(&mut out, &rs, &missing).unwrap();
    std::fs::write(&path, &out).unwrap();
    let text = String::from_utf8(out).unwrap();
    let names: Vec<&str> = text
        .split("<property name=\"")
        .skip(1)
        .map(|p| p.split('"').next().unwrap())
        .collect();
    assert_eq!(names.len(), 3, "{text}");
    let mut unique = names.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(
        unique.len(),
        names.len(),
        "repeated property names: {names:?}"
    );
    assert_valid_junit(&path);
    let read = parsed(JUNITPARSER, &path);
    assert_eq!(read.matches("suite ").count(), 4, "{read}");
    assert!(read.contains("suite rtscope.rpi4 \n"), "{read}");
    assert!(
        read.contains("case run error board rpi4 failed: connect failed: Connection refused"),
        "{read}"
    );
    // Each run: `run` and 3 scopes; the board: `run`. No limits, so no failures.
    assert!(read.contains("totals 13 0 1"), "{read}");
    assert!(text.contains(r#"<testsuites name="rtscope" tests="13" failures="0" errors="1""#));
    let read = parsed(XUNITPARSER, &path);
    assert!(read.starts_with("tests 1 0 13\n"), "{read}");
    assert!(
        read.contains("case rtscope.rpi4 run error board rpi4 failed: connect failed"),
        "{read}"
    );
    // The check is real: the same file with a property name repeated across suites, as
    // before, is refused by xunitparser.
    let repeated = text.replace(
        &format!("name=\"{}\"", names[1]),
        &format!("name=\"{}\"", names[0]),
    );
    let dup = d.join("dup.xml");
    std::fs::write(&dup, repeated).unwrap();
    let o = Command::new("python3")
        .args(["-c", XUNITPARSER])
        .arg(&dup)
        .output()
        .unwrap();
    assert!(
        !o.status.success(),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    std::fs::remove_dir_all(d).unwrap();
}
