//! Issue 66 end to end: `rtscope tail` on an imported constant histogram (2 × 1,000,000
//! wake-ups all at 10 µs) ends with a refusal that says there is no tail, and every gate form
//! fails on it (exit 1, no `ok`); its JSON has no null bound. Nothing here asserts a time: the
//! command's own end is the check (the suite's hang guard catches a hang).

use crate::common::{self, rtscope_with_db as rtscope, text};
use serde_json::Value;

const GATES: [&str; 6] = [
    "tail@1e-6/wakeup=1000s",
    "tail@1e-6/episode=1000s",
    "tail@1/minute=1000s",
    "tail@1/hour=1000s",
    "tail@1/day=1000s",
    "tail@1/year=1000s",
];

/// Every `estimate_ns`, `lower_ns` and `upper_ns` in `v` is a number.
fn no_null_bound(v: &Value) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                if ["estimate_ns", "lower_ns", "upper_ns"].contains(&k.as_str()) {
                    assert!(x.is_number(), "{k} = {x}");
                }
                no_null_bound(x);
            }
        }
        Value::Array(a) => a.iter().for_each(no_null_bound),
        _ => {}
    }
}

#[test]
fn a_constant_import_gets_no_tail_and_no_gate_passes_on_it() {
    let dir = common::fresh_dir("tail-constant");
    let db = dir.join("r.db");
    let mut body = String::from("# Histogram\n");
    for us in 0..100u64 {
        let c = if us == 10 { 1_000_000 } else { 0 };
        body += &format!("{us:06} {c:06} {c:06}\n");
    }
    body += "# Total: 001000000 001000000\n# Min Latencies: 00010 00010\n# Avg Latencies: 00010 00010\n# Max Latencies: 00010 00010\n# Histogram Overflows: 00000 00000\n";
    let file = dir.join("constant.txt");
    std::fs::write(&file, body).unwrap();
    let o = rtscope(&db, &["import", file.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let o = rtscope(&db, &["tail", "last"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    assert!(
        out.contains("no tail to fit: the largest latencies take one value only"),
        "{out}"
    );
    assert!(!out.contains("measure about"), "{out}");
    for gate in GATES {
        for extra in [None, Some("--assume-stationary"), Some("--unreliable")] {
            let mut args = vec!["tail", "last", "--limit", gate];
            args.extend(extra);
            let o = rtscope(&db, &args);
            assert_eq!(o.status.code(), Some(1), "{args:?}: {}", text(&o.stdout));
            let out = text(&o.stdout);
            assert!(!out.contains(": ok:"), "{args:?}: {out}");
            assert!(out.contains("FAILED"), "{args:?}: {out}");
        }
    }
    let o = rtscope(&db, &["tail", "last", "--json", "--unreliable"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    no_null_bound(&doc);
    for t in doc["threads"].as_array().unwrap() {
        assert_eq!(t["analysis"]["refusals"][0]["reason"], "no-tail", "{t}");
    }
}
