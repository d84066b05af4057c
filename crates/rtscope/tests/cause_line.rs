//! Issue 65 item 1, end to end: stored runs whose worst spike no single culprit holds half of.
//! The real binary's report answer and `runs explain` name the group or the spread with every
//! share, never a minority culprit as "the" cause. The explanations are injected (synthetic
//! runs with a stored summary), so nothing depends on the host's load.

use crate::common;

use rtscope_store::{SpikeSummaryRow, Store};
use rtscope_testkit::synthetic::{write_run, SyntheticRun};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::process::Output;

fn rtscope(args: &[&str]) -> Output {
    common::run(env!("CARGO_BIN_EXE_rtscope"), args)
}

/// A charge of the stored JSON: `kind` with its fields, and its time.
fn charge(kind: &str, fields: Value, ns: u64) -> Value {
    let mut c = fields;
    c["kind"] = json!(kind);
    c["ns"] = json!(ns);
    c
}

fn blocking(comm: &str, pid: i32, ns: u64) -> Value {
    charge(
        "blocking",
        json!({"comm": comm, "pid": pid, "prio": 120}),
        ns,
    )
}

fn thread(comm: &str, pid: i32, ns: u64) -> Value {
    charge("thread", json!({"comm": comm, "pid": pid, "prio": 0}), ns)
}

/// An explanation summary of one traced spike of `latency` ns charged as `charges`.
fn summary(latency: u64, charges: Vec<Value>) -> String {
    json!({
        "tier": "flight_recorder",
        "tier_reason": null,
        "threshold_ns": 300_000,
        "counts": {"spikes": 1, "traced": 1, "partial": 0, "coarse": 0, "no_context": 0,
                   "spike_ns": latency, "traced_ns": latency},
        "worst": [{
            "tier": "traced",
            "spike": {"cpu": 1, "tid": 2001, "deadline_ns": 5_000_000_000u64,
                      "wakeup_ns": 5_000_000_000u64 + latency},
            "charges": charges,
            "complete": true,
            "lost_events": false,
        }],
        "culprits": [],
    })
    .to_string()
}

/// Two synthetic runs, each explained by one spike larger than any of its wake-ups: run 1
/// the 51.67 ms spike over four blocking tasks of 9–15 % (51 % together), run 2 two
/// busy culprits of different kinds at 50 % each.
fn db() -> PathBuf {
    let db = common::temp_path("cause-line.db");
    for ext in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{ext}", db.display()));
    }
    let mut store = Store::open(&db).unwrap();
    let four = vec![
        blocking("synth_db", 9843, 7_800_000),
        blocking("kworker/1:2", 88, 7_300_000),
        blocking("synth_db", 9844, 6_300_000),
        blocking("rsyslogd", 612, 5_000_000),
        charge("irq", json!({"name": "eth0 (irq 24)"}), 15_000_000),
        charge("return_to_user", json!({}), 10_270_000),
    ];
    let two = vec![
        thread("busy_a", 4711, 500_000),
        charge("softirq", json!({"vec": "NET_RX"}), 500_000),
    ];
    for (label, latency, charges) in [("four", 51_670_000, four), ("two", 1_000_000, two)] {
        let spec = SyntheticRun {
            label: label.into(),
            samples: 2_000,
            monitors: false,
            tags: vec![("case".into(), label.into())],
            ..SyntheticRun::default()
        };
        let id = write_run(&mut store, &spec).unwrap();
        let row = SpikeSummaryRow {
            tier: "flight_recorder".into(),
            tier_reason: None,
            threshold_ns: 300_000,
            clock_start_ns: 4_000_000_000,
            summary: summary(latency, charges),
        };
        store.write_spikes(id, &row, &[]).unwrap();
    }
    db
}

#[test]
fn the_answer_and_runs_explain_never_name_a_minority_culprit_as_the_cause() {
    let db = db();
    let db_s = db.to_str().unwrap();
    let dir = common::fresh_dir("cause-line");
    let o = rtscope(&[
        "report",
        "--db",
        db_s,
        "1",
        "2",
        "-o",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", common::dump(&o));
    let page = std::fs::read_to_string(dir.join("report.html")).unwrap();
    let answer = &page[page.find("id=\"answer\"").unwrap()..];
    let answer = &answer[..answer.find("</div>").unwrap()];
    assert!(
        answer.contains(
            "the worst was caused by 4 lower-priority tasks holding the CPU (51 % together, \
             largest synth_db:9843:nice0 15 %)"
        ),
        "{answer}"
    );
    assert!(
        answer.contains(
            "the worst had no main cause, spread over 2 causes (largest thread busy_a:4711:rt99 \
             50 %, then softirq NET_RX 50 %)"
        ),
        "{answer}"
    );
    assert!(!answer.contains("caused by blocking by"), "{answer}");
    assert!(!answer.contains("caused by thread busy_a"), "{answer}");
    // The report's table of worst spikes gives each its cause by the same rule.
    assert!(
        page.contains(
            "<td class=\"t\">4 lower-priority tasks holding the CPU (51 % together, largest \
             synth_db:9843:nice0 15 %)</td>"
        ),
        "{page}"
    );

    let o = rtscope(&["runs", "explain", "1", "--db", db_s]);
    assert_eq!(o.status.code(), Some(0), "{}", common::dump(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains(
            "  the worst spike (51.67 ms) was caused by 4 lower-priority tasks holding the CPU \
             (51 % together, largest synth_db:9843:nice0 15 %)\n"
        ),
        "{text}"
    );
    let o = rtscope(&["runs", "show", "2", "--db", db_s]);
    assert_eq!(o.status.code(), Some(0), "{}", common::dump(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("the worst spike (1.00 ms) had no main cause, spread over 2 causes"),
        "{text}"
    );
}
