//! The envelope rt-tests' programs (cyclictest, oslat) write around their JSON results: which
//! program wrote it, `start_time`/`end_time`, `sysinfo`, and serde's errors as located failures.
//! Shared by the cyclictest and oslat parsers.

use super::civil;
use super::model::{Bad, Imported};
use serde_json::{Map, Value};

/// Whether a JSON document's `"cmdline:"` names oslat.
pub fn is_oslat(cmdline: &str) -> bool {
    let first = cmdline.split_whitespace().next().unwrap_or("");
    first.rsplit('/').next() == Some("oslat")
}

/// The envelope's facts a run's `source` keeps: the command line, rt-tests' version, the file
/// version, start and end time and the return code (`null` where missing).
pub fn envelope(obj: &Map<String, Value>) -> Map<String, Value> {
    let get = |k: &str| obj.get(k).cloned().unwrap_or(Value::Null);
    let mut m = Map::new();
    m.insert("original_command_line".into(), get("cmdline:"));
    m.insert("tool_version".into(), get("rt_test_version:"));
    m.insert("file_version".into(), get("file_version"));
    m.insert("start_time".into(), get("start_time"));
    m.insert("end_time".into(), get("end_time"));
    m.insert("return_code".into(), get("return_code"));
    m
}

/// A serde_json error as a failure at its line and column.
pub fn json_error(e: &serde_json::Error) -> Bad {
    let msg = e.to_string();
    let msg = msg.rfind(" at line ").map_or(msg.as_str(), |p| &msg[..p]);
    let what = if e.is_eof() {
        format!("the JSON document ends early ({msg}): the file is truncated")
    } else {
        format!("invalid JSON: {msg}")
    };
    Bad {
        at: Some(format!("line {}, column {}", e.line(), e.column())),
        what,
    }
}

/// `start_time` and `end_time` (RFC 2822, whole seconds) as the run's times and length.
pub fn times(obj: &Map<String, Value>, out: &mut Imported) {
    let secs = |k: &str| {
        obj.get(k)
            .and_then(Value::as_str)
            .and_then(civil::parse_rfc2822)
    };
    let (start, end) = (secs("start_time"), secs("end_time"));
    out.started_unix_ns = start.map(|s| s.saturating_mul(1_000_000_000));
    out.ended_unix_ns = end.map(|s| s.saturating_mul(1_000_000_000));
    if let (Some(s), Some(e)) = (start, end) {
        out.progress_ns = u64::try_from(e - s)
            .unwrap_or(0)
            .saturating_mul(1_000_000_000);
    }
}

/// `sysinfo` as the environment keys `rtscope measure` records.
pub fn environment(obj: &Map<String, Value>) -> Vec<(String, String)> {
    let mut env = Vec::new();
    let Some(s) = obj.get("sysinfo").and_then(Value::as_object) else {
        return env;
    };
    for k in ["sysname", "nodename", "release", "version", "machine"] {
        if let Some(v) = s.get(k).and_then(Value::as_str) {
            env.push((format!("uname.{k}"), v.to_string()));
        }
    }
    if let Some(r) = s.get("realtime").and_then(Value::as_i64) {
        env.push(("kernel.realtime".into(), r.to_string()));
    }
    env
}
