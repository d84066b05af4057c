//! The JSON result of `rtscope respond` (schema `rtscope.respond/1`, documented in
//! docs/json-schema.md): the run's rows, each as measure's series plus its source, path and
//! the mechanism's own counts. All latencies are integer nanoseconds.

use crate::measure_json::{series, LimitJson};
use rtscope_common::limits::Check;
use rtscope_respond::record::Row;
use serde_json::{json, Value};

/// The schema identifier; bump the number on any incompatible change.
pub const SCHEMA: &str = "rtscope.respond/1";

/// How a respond run ended, for its document.
#[derive(Debug, Clone, Copy)]
pub struct Ending<'a> {
    /// The signal that ended it early.
    pub signal: Option<i32>,
    /// An error during the run.
    pub error: Option<&'a str>,
    /// The exit code rtscope returns.
    pub exit_code: i32,
}

/// The document of a finished respond run: `config` is the front end's settings as given.
pub fn document(
    command_line: &[String],
    config: Value,
    rows: &[Row],
    checks: &[Check],
    end: Ending,
) -> Value {
    json!({
        "schema": SCHEMA,
        "tool": {"name": "rtscope", "version": env!("CARGO_PKG_VERSION"), "command_line": command_line},
        "config": config,
        "results": rows.iter().map(result).collect::<Vec<_>>(),
        "limits": checks.iter().map(LimitJson::from).collect::<Vec<_>>(),
        "interrupted": end.signal.map(rtscope_common::signals::signal_name),
        "error": end.error,
        "exit_code": end.exit_code,
    })
}

/// One row: its statistics as measure's series, then its source, path and extra fields.
fn result(r: &Row) -> Value {
    let mut v = serde_json::to_value(series(&r.stats, &r.histogram, None)).unwrap_or_default();
    if let (Some(m), Some(e)) = (v.as_object_mut(), r.extra.as_object()) {
        m.insert("source".into(), json!(r.source));
        m.insert("path".into(), json!(r.path));
        m.extend(e.clone());
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtscope_core::{Histogram, Nanos, Stats};

    fn row() -> Row {
        let mut histogram = Histogram::new();
        for ns in [1_000, 2_000, 3_000] {
            histogram.record(Nanos(ns));
        }
        let stats = Stats {
            count: 3,
            min: Nanos(1_000),
            max: Nanos(3_000),
            sum_ns: 6_000,
            max_cycle: 2,
            max_time: Nanos(3_000),
            missed: 0,
        };
        Row {
            source: "eventfd".into(),
            path: "0→1 cross".into(),
            cpu: Some(1),
            policy: "fifo",
            priority: 95,
            interval_ns: 1_000_000,
            stats,
            histogram,
            events: Vec::new(),
            extra: json!({"sent": 3, "received": 3}),
        }
    }

    #[test]
    fn a_row_is_measures_series_with_its_source_path_and_counts() {
        let end = Ending {
            signal: Some(15), // SIGTERM
            error: None,
            exit_code: 3,
        };
        let doc = document(
            &["rtscope".into()],
            json!({"ipc": "eventfd"}),
            &[row()],
            &[],
            end,
        );
        assert_eq!(doc["schema"], SCHEMA);
        assert_eq!(doc["config"]["ipc"], "eventfd");
        assert_eq!(doc["interrupted"], "SIGTERM");
        assert_eq!(doc["exit_code"], 3);
        let r = &doc["results"][0];
        assert_eq!(r["samples"], 3);
        assert_eq!(r["max_ns"], 3_000);
        assert_eq!(r["source"], "eventfd");
        assert_eq!(r["path"], "0→1 cross");
        assert_eq!(r["sent"], 3);
        assert!(r["percentiles_ns"].is_object(), "{r}");
    }
}
