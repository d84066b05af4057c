//! `compare`'s kernel functions end to end, as root on this host: runs stored with
//! `measure --explain 1.5ms --explain-stacks on` beside a busy SCHED_FIFO 99 thread (the
//! spikes it causes carry a kernel stack, see explain_stacks.rs), tagged into two groups, and
//! a run explained without stacks as a third: compare's text and JSON list the functions the
//! runs stored, untested with one run per side, and say the group without stacks in one line
//! (no table for it, never counted as zero). Nothing asserted depends on load: which functions and how much time is
//! the host's; that compare lists what was stored is not. A test that cannot run here fails
//! under RTSCOPE_TEST_STRICT=1 and skips with the reason printed otherwise.

use crate::explain::{culprit, traceable};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// One 3 s `measure --explain 1.5ms` of the last CPU beside the culprit, tagged
/// `group=GROUP`, `extra` args added, stored in `db`; returns its `explain.functions` rows.
fn measure(db: &std::path::Path, group: &str, extra: &[&str]) -> Vec<serde_json::Value> {
    let json = db.with_file_name(format!("{group}.json"));
    let cpu = std::thread::available_parallelism().unwrap().get() - 1;
    let stop = Arc::new(AtomicBool::new(false));
    let c = culprit(cpu, stop.clone());
    let o = Command::new(env!("CARGO_BIN_EXE_rtscope"))
        .args([
            "measure",
            "-D",
            "3s",
            "-i",
            "1ms",
            "--cpus",
            &cpu.to_string(),
        ])
        .args([
            "--explain",
            "1.5ms",
            "-q",
            "--tag",
            &format!("group={group}"),
        ])
        .args(extra)
        .arg("--db")
        .arg(db)
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    stop.store(true, Ordering::Relaxed);
    c.join().unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}{}",
        text(&o.stdout),
        text(&o.stderr)
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    v["explain"]["functions"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

#[test]
fn compare_lists_the_kernel_functions_stored_runs_charged_and_names_a_group_without_stacks() {
    rtscope_testkit::require_ok!(traceable());
    let rt = rtscope_testkit::rt_lock();
    let d = std::env::temp_dir().join(format!("rtscope-cmpfn-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    let db = d.join("x.db");
    let on = ["--explain-stacks", "on"];
    let a = measure(&db, "a", &on);
    let b = measure(&db, "b", &on);
    measure(&db, "c", &[]);
    // compare runs no SCHED_FIFO thread: the lock's other tests go on.
    drop(rt);
    assert!(
        !a.is_empty() && !b.is_empty(),
        "the culprit's spikes carry no kernel stack: {a:?} {b:?}"
    );
    let compare = |json: bool| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_rtscope"));
        cmd.args(["compare", "group=a", "group=b", "group=c", "--db"])
            .arg(&db);
        if json {
            cmd.arg("--json");
        }
        let o = cmd.output().unwrap();
        // Exit 0 or 1 (a latency regression is the host's); never a usage error.
        assert!(
            matches!(o.status.code(), Some(0 | 1)),
            "{}",
            text(&o.stderr)
        );
        text(&o.stdout)
    };
    let out = compare(false);
    assert!(
        out.contains("kernel functions (time of the traced spikes"),
        "{out}"
    );
    assert!(out.contains("A: 1 of 1 runs with kernel stacks"), "{out}");
    assert!(out.contains("B vs A:"), "{out}");
    assert!(
        out.contains(
            "kernel functions not compared: C ('group=c') took no kernel stacks (explained without kernel stacks: run 3); to compare them, measure with --explain DUR --explain-stacks on"
        ),
        "{out}"
    );
    assert!(!out.contains("C vs A:"), "{out}");
    assert!(!out.contains("C: "), "no coverage line for C: {out}");
    // One run per side: listed, never called significant.
    assert!(
        out.contains("not tested: too few runs (n=1 per side)"),
        "{out}"
    );
    assert!(out.contains("changed significantly: none"), "{out}");
    let v: serde_json::Value = serde_json::from_str(&compare(true)).unwrap();
    let kf = &v["kernel_functions"];
    assert_eq!(kf["per"], "per_million_wakeups");
    // Every run explained at 1.5 ms: like with like, no note.
    assert_eq!(kf["thresholds_differ"], false);
    assert_eq!(
        kf["groups"][0]["explain_thresholds_ns"],
        serde_json::json!([1_500_000])
    );
    assert_eq!(kf["groups"][2]["left_out"][0]["reason"], "no_stacks");
    assert_eq!(kf["candidates"][1]["compared"], false);
    let listed: Vec<&str> = kf["candidates"][0]["functions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["function"].as_str().unwrap())
        .collect();
    // Every function either run stored is listed (both runs keep far fewer than 200).
    for row in a.iter().chain(&b) {
        let f = row["function"].as_str().unwrap();
        assert!(listed.contains(&f), "{f} not in {listed:?}");
    }
    // The largest change is the text's first row (names here are printable: shown as stored).
    assert!(out.contains(&format!("\n{} ", listed[0])), "{out}");
    let _ = std::fs::remove_dir_all(&d);
}
