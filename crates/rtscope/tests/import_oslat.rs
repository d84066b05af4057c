//! `rtscope import` of oslat `--json` (rt-tests): the reference capture and a fresh 2 s run of
//! the real oslat, recorded as runs of kind `noise` and read back with `rtscope runs show` and
//! `rtscope runs list`; a broken oslat file exits 2 naming the field.

use crate::common;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Output;

const OSLAT: &str = "/usr/bin/oslat";

fn rtscope(args: &[&str]) -> Output {
    common::run(env!("CARGO_BIN_EXE_rtscope"), args)
}

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/import/oslat.json")
}

/// Imports `file` into `db`; returns (run id, `runs show --json`, `runs --json` list).
fn import(db: &Path, file: &Path) -> (Value, Value, Value) {
    let db_s = db.to_str().unwrap();
    let r = common::ok_json(rtscope(&[
        "import",
        "--db",
        db_s,
        "--json",
        file.to_str().unwrap(),
    ]));
    assert_eq!(r[0]["format"], "oslat", "{r}");
    let id = r[0]["run"].clone();
    let show = common::ok_json(rtscope(&[
        "runs",
        "--db",
        db_s,
        "show",
        &id.to_string(),
        "--json",
    ]));
    let list = common::ok_json(rtscope(&["runs", "--db", db_s, "--json"]));
    (id, show, list)
}

/// The run is a noise run in `show` and in `list`, with one thread per oslat thread whose
/// samples are the sum of its buckets and whose max is oslat's.
fn assert_noise_run(id: &Value, show: &Value, list: &Value, doc: &Value) {
    assert_eq!(show["kind"], "noise", "{show}");
    let listed = list
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == *id)
        .unwrap_or_else(|| panic!("run {id} not listed: {list}"));
    assert_eq!(listed["kind"], "noise", "{listed}");
    let threads = show["thread_stats"].as_array().unwrap();
    let src = doc["thread"].as_object().unwrap();
    assert_eq!(threads.len(), src.len(), "{show}");
    for (t, (_, s)) in threads.iter().zip(src) {
        let total: u64 = s["histogram"]
            .as_object()
            .unwrap()
            .values()
            .map(|n| n.as_u64().unwrap())
            .sum();
        assert_eq!(t["samples"].as_u64(), Some(total), "{t}");
        assert_eq!(
            t["max_ns"].as_u64(),
            Some(s["max"].as_u64().unwrap() * 1000),
            "{t}"
        );
    }
    assert_eq!(show["config"]["source"]["format"], "oslat", "{show}");
    assert_eq!(
        show["config"]["source"]["original_command_line"], doc["cmdline:"],
        "{show}"
    );
}

#[test]
fn the_reference_oslat_file_is_a_noise_run() {
    let db = common::fresh_dir("import-oslat-ref").join("r.db");
    let doc: Value = serde_json::from_slice(&std::fs::read(fixture()).unwrap()).unwrap();
    let (id, show, list) = import(&db, &fixture());
    assert_noise_run(&id, &show, &list, &doc);
    let t = &show["thread_stats"][0];
    assert_eq!(
        (t["cpu"].as_u64(), t["max_ns"].as_u64()),
        (Some(1), Some(9_641_000))
    );
}

#[test]
fn a_fresh_run_of_the_real_oslat_is_imported_as_a_noise_run() {
    rtscope_testkit::require!(
        Path::new(OSLAT).is_file(),
        "{OSLAT} is not installed (apt-get install rt-tests; .ci/run installs it)"
    );
    rtscope_testkit::require!(rtscope_testkit::is_root(), "oslat needs root");
    let d = common::fresh_dir("import-oslat-real");
    let file = d.join("oslat.json");
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let cpu = (cpus - 1).to_string();
    let json_arg = format!("--json={}", file.display());
    let out = {
        // A busy loop on one CPU for 3 s (1 s pre-heat): kept apart from the timing tests.
        let _guard = common::rt_lock();
        common::run(OSLAT, &["-D", "2", "-c", &cpu, "-q", &json_arg])
    };
    assert!(out.status.success(), "oslat failed: {}", common::dump(&out));
    let doc: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    let (id, show, list) = import(&d.join("r.db"), &file);
    assert_noise_run(&id, &show, &list, &doc);
    assert_eq!(
        show["thread_stats"][0]["cpu"].as_u64(),
        cpu.parse().ok(),
        "{show}"
    );
}

#[test]
fn a_broken_oslat_file_exits_2_naming_the_field() {
    let d = common::fresh_dir("import-oslat-bad");
    let text = std::fs::read_to_string(fixture()).unwrap();
    for (name, bad, place) in [
        (
            "max.json",
            text.replace("\"max\": 9641", "\"max\": 3"),
            "field thread.\"0\".max",
        ),
        (
            "key.json",
            text.replace("\"7\": 122", "\"7x\": 122"),
            "histogram.\"7x\"",
        ),
        ("cut.json", text[..text.len() / 3].to_string(), "truncated"),
    ] {
        common::import_refused(&d, name, bad.as_bytes(), place);
    }
}
