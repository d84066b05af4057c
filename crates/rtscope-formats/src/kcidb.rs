//! KernelCI's KCIDB submission format (schema v5.3, `kcidb_io.schema.LATEST`): a document of
//! `tests`, one per statistic of every CPU (status `DONE`, with `number {value, unit}`), one
//! per limit check (`PASS`/`FAIL`, with the measured value) and one for the run (`PASS`,
//! or `FAIL` when interrupted). The submitting CI system names the build the tests ran against
//! (`build_id`) and its origin; ids are `ORIGIN:…` as the schema requires. A board that
//! recorded no run ([`MissingBoard`]) is one test `rtscope`, `ERROR` (failed) or `FAIL`
//! (interrupted), its reason in `log_excerpt`, its id made unique by the invocation's UUID.

use crate::missing::{BoardEnd, MissingBoard};
use crate::{measurements, name_part, Report};
use rtscope_store::RunStatus;
use serde_json::{json, Map, Value};

/// KCIDB schema version written.
pub const VERSION: (u32, u32) = (5, 3);

/// Who submits, against what.
#[derive(Debug, Clone)]
pub struct Submission {
    /// The CI system's origin name (`[a-z0-9_]+`); anything else is mapped to `_`.
    pub origin: String,
    /// The build the kernel under test came from, `ORIGIN:ID`; `None` gives
    /// `ORIGIN:BOARD` (the schema requires one).
    pub build_id: Option<String>,
    /// A UUID of this invocation: the ids of tests that have no run UUID of their own (a
    /// comparison's verdicts, a board that recorded no run) are unique per invocation with
    /// it, and stable within one.
    pub invocation: String,
}

impl Default for Submission {
    /// Origin `rtscope`, no build id, a new random invocation UUID.
    fn default() -> Self {
        Submission {
            origin: "rtscope".into(),
            build_id: None,
            invocation: crate::missing::random_uuid(),
        }
    }
}

pub(crate) fn origin(text: &str) -> String {
    let s: String = text
        .chars()
        .map(|c| {
            if c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.is_empty() {
        "rtscope".into()
    } else {
        s
    }
}

/// A KCIDB path element: `[a-zA-Z0-9_-]+` (dots separate elements).
pub(crate) fn element(text: &str) -> String {
    name_part(text).replace('.', "_")
}

/// The KCIDB document for `r`.
pub fn document(r: &Report, sub: &Submission) -> Value {
    let origin = origin(&sub.origin);
    let build_id = sub
        .build_id
        .clone()
        .unwrap_or_else(|| format!("{origin}:{}", r.board));
    // The run's UUID, not its number: two jobs with fresh databases both have a run 1, and
    // their tests would overwrite each other in KernelCI.
    let run = r.uuid.clone().unwrap_or_else(|| match r.run_id {
        Some(id) => format!("run{id}"),
        None => "live".into(),
    });
    let base = format!("{origin}:{}:{}:{run}", r.board, element(&r.label));
    let mut env = Map::new();
    env.insert("comment".into(), json!(format!("board {}", r.board)));
    env.insert("misc".into(), json!({"board": r.board}));
    let common = |path: String, status: &str, number: Option<Value>| {
        let mut t = Map::new();
        t.insert("id".into(), json!(format!("{base}:{path}")));
        t.insert("build_id".into(), json!(build_id));
        t.insert("origin".into(), json!(origin));
        t.insert("path".into(), json!(path));
        t.insert("status".into(), json!(status));
        t.insert("environment".into(), Value::Object(env.clone()));
        if let Some(s) = &r.started {
            t.insert("start_time".into(), json!(s));
        }
        t.insert("duration".into(), json!(r.measured_s));
        if let Some(n) = number {
            t.insert("number".into(), n);
        }
        t.insert(
            "misc".into(),
            json!({"label": r.label, "run_id": r.run_id, "run_uuid": r.uuid}),
        );
        Value::Object(t)
    };
    let mut tests = Vec::new();
    let ok = matches!(r.status, RunStatus::Complete | RunStatus::Running);
    let root = "rtscope".to_string();
    tests.push(common(root.clone(), if ok { "PASS" } else { "FAIL" }, None));
    for s in &r.scopes {
        let scope = format!("cpu{}", s.kind.label());
        for m in measurements(s) {
            let path = format!("{root}.{scope}.{}", element(m.stat));
            let number = json!({"value": m.value, "unit": m.unit});
            tests.push(common(path, "DONE", Some(number)));
        }
    }
    for c in &r.checks {
        let scope = element(&c.scope.replace(' ', ""));
        let path = format!("{root}.limit.{scope}.{}", element(&c.stat));
        let number = if c.stat == "missed" {
            json!({"value": c.value, "unit": "count"})
        } else {
            json!({"value": c.value as f64 / 1000.0, "unit": "us"})
        };
        let status = if c.passed { "PASS" } else { "FAIL" };
        tests.push(common(path, status, Some(number)));
    }
    json!({
        "version": {"major": VERSION.0, "minor": VERSION.1},
        "tests": tests,
    })
}

/// The test of a board that recorded no run.
fn missing_test(m: &MissingBoard, sub: &Submission) -> Value {
    let origin = origin(&sub.origin);
    let build_id = sub
        .build_id
        .clone()
        .unwrap_or_else(|| format!("{origin}:{}", m.board));
    let status = match m.end {
        BoardEnd::Failed => "ERROR",
        BoardEnd::Interrupted => "FAIL",
    };
    json!({
        "id": format!("{origin}:{}:{}:rtscope", m.board, sub.invocation),
        "build_id": build_id,
        "origin": origin,
        "path": "rtscope",
        "status": status,
        "log_excerpt": m.message(),
        "environment": {"comment": format!("board {}", m.board), "misc": {"board": m.board}},
        "misc": {"board": m.board, "end": m.end.word(), "reason": m.reason,
                 "invocation": sub.invocation},
    })
}

/// One document for the runs `rs` and the boards of `missing`: their tests together.
pub fn document_all(rs: &[Report], missing: &[MissingBoard], sub: &Submission) -> Value {
    let tests: Vec<Value> = rs
        .iter()
        .flat_map(
            |r| match document(r, sub).get_mut("tests").map(Value::take) {
                Some(Value::Array(t)) => t,
                _ => Vec::new(),
            },
        )
        .chain(missing.iter().map(|m| missing_test(m, sub)))
        .collect();
    json!({
        "version": {"major": VERSION.0, "minor": VERSION.1},
        "tests": tests,
    })
}

/// Writes the document of the runs `rs` and the boards of `missing`, pretty-printed.
pub fn write_all(
    out: &mut dyn std::io::Write,
    rs: &[Report],
    missing: &[MissingBoard],
    sub: &Submission,
) -> std::io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, &document_all(rs, missing, sub))?;
    writeln!(out)
}

/// Writes the document, pretty-printed.
pub fn write(out: &mut dyn std::io::Write, r: &Report, sub: &Submission) -> std::io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, &document(r, sub))?;
    writeln!(out)
}
