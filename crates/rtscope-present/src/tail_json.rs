//! `rtscope tail --json`'s versioned document (schema [`SCHEMA`]): the run, and per thread its
//! CPU, its analysis (rtscope-evt's, serialised whole) and each limit with its verdict.
//!
//! The analysis's `regimes` carry `observed` (the run's own values, issue 66 item 4: every
//! bound of a given level a number, never `null`), and a verdict's `used` may be `observed`:
//! fields added within schema 1, none changed or removed, so readers of `rtscope.tail/1` are
//! unaffected.

use rtscope_evt::request::Outcome;
use serde_json::{json, Value};

/// The document's schema.
pub const SCHEMA: &str = "rtscope.tail/1";

/// The document of `o`.
pub fn document(o: &Outcome) -> Value {
    let threads: Vec<Value> = (o.threads.iter())
        .map(|t| {
            let limits: Vec<Value> = (t.verdicts.iter())
                .map(|(l, v)| {
                    json!({
                        "limit": l.to_string(),
                        "probability": l.probability(),
                        "limit_ns": l.limit.0,
                        "result": v,
                    })
                })
                .collect();
            json!({
                "thread": t.who.thread,
                "cpu": t.who.cpu,
                "analysis": t.analysis,
                "limits": limits,
            })
        })
        .collect();
    json!({ "schema": SCHEMA, "run": o.run, "threads": threads })
}
