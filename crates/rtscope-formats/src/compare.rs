//! `rtscope compare … --ci-output FORMAT=FILE`: a comparison's verdicts as lab CI results, one
//! [`Case`] per statistic of every candidate group against the baseline and per load case a
//! candidate regresses in or rises on too few runs to test, written as JUnit, LAVA signals or
//! KCIDB tests, with the candidate's value and unit. The cases are built from a comparison by
//! rtscope-analysis (`compare::ci::cases`), so this crate links no plotting.

use crate::junit::escape;
use crate::kcidb::{self, element, Submission};
use crate::name_part;
use serde_json::json;
use std::io::{self, Write};

/// One verdict, as a CI test case.
#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    /// The candidate group's selector.
    pub candidate: String,
    /// The statistic, or `case NAME` for a load case of the matrix.
    pub stat: String,
    /// `false` on a regression.
    pub passed: bool,
    /// The candidate's value (µs for latencies, % of the deadlines for `missed`, % of the
    /// runtime for `available`, µs per s for `noise/s`), when known.
    pub value: Option<(f64, &'static str)>,
    /// For people: baseline, candidate, change and verdict.
    pub message: String,
}

/// The cases as JUnit: one suite per candidate.
pub fn junit(out: &mut dyn Write, cases: &[Case]) -> io::Result<()> {
    let failures = cases.iter().filter(|c| !c.passed).count();
    writeln!(out, r#"<?xml version="1.0" encoding="UTF-8"?>"#)?;
    writeln!(
        out,
        r#"<testsuites name="rtscope.compare" tests="{}" failures="{failures}" errors="0">"#,
        cases.len()
    )?;
    let mut candidates: Vec<&str> = cases.iter().map(|c| c.candidate.as_str()).collect();
    candidates.dedup();
    for cand in candidates {
        let mine: Vec<&Case> = cases.iter().filter(|c| c.candidate == cand).collect();
        let f = mine.iter().filter(|c| !c.passed).count();
        let suite = escape(&format!("rtscope.compare.{cand}"));
        writeln!(
            out,
            r#"  <testsuite name="{suite}" tests="{}" failures="{f}" errors="0" skipped="0">"#,
            mine.len()
        )?;
        for c in mine {
            let msg = escape(&c.message);
            write!(
                out,
                r#"    <testcase classname="{suite}" name="{}">"#,
                escape(&c.stat)
            )?;
            if c.passed {
                write!(out, "<system-out>{msg}</system-out>")?;
            } else {
                write!(
                    out,
                    r#"<failure type="regression" message="{msg}">{msg}</failure>"#
                )?;
            }
            writeln!(out, "</testcase>")?;
        }
        writeln!(out, "  </testsuite>")?;
    }
    writeln!(out, "</testsuites>")
}

/// The cases as LAVA signals, in the test set `compare`.
pub fn lava(out: &mut dyn Write, cases: &[Case]) -> io::Result<()> {
    writeln!(out, "<LAVA_SIGNAL_TESTSET START compare>")?;
    for c in cases {
        let id = format!("{}-{}", name_part(&c.candidate), name_part(&c.stat));
        let result = if c.passed { "pass" } else { "fail" };
        write!(
            out,
            "<LAVA_SIGNAL_TESTCASE TEST_CASE_ID={id} RESULT={result}"
        )?;
        if let Some((v, u)) = c.value {
            write!(out, " MEASUREMENT={v} UNITS={u}")?;
        }
        writeln!(out, ">")?;
    }
    writeln!(out, "<LAVA_SIGNAL_TESTSET STOP>")?;
    for c in cases.iter().filter(|c| !c.passed) {
        writeln!(out, "# compare: {}", c.message)?;
    }
    Ok(())
}

/// The cases as a KCIDB document: tests `rtscope.compare.CANDIDATE.STAT`, their ids
/// `ORIGIN:compare:UUID:PATH` with the invocation's UUID (`sub.invocation`): each comparison
/// is its own set of tests in KernelCI (the same ids every night overwrote the last), and one
/// comparison's tests share the UUID.
pub fn kcidb(out: &mut dyn Write, cases: &[Case], sub: &Submission) -> io::Result<()> {
    let origin = kcidb::origin(&sub.origin);
    let build_id = sub
        .build_id
        .clone()
        .unwrap_or_else(|| format!("{origin}:compare"));
    let tests: Vec<_> = cases
        .iter()
        .map(|c| {
            let path = format!(
                "rtscope.compare.{}.{}",
                element(&c.candidate),
                element(&c.stat.replace(' ', "_"))
            );
            let mut t = json!({
                "id": format!("{origin}:compare:{}:{path}", sub.invocation),
                "build_id": build_id,
                "origin": origin,
                "path": path,
                "status": if c.passed { "PASS" } else { "FAIL" },
                "log_excerpt": c.message,
                "misc": {"comparison_uuid": sub.invocation},
            });
            if let Some((v, u)) = c.value {
                t["number"] = json!({"value": v, "unit": u});
            }
            t
        })
        .collect();
    let doc =
        json!({"version": {"major": kcidb::VERSION.0, "minor": kcidb::VERSION.1}, "tests": tests});
    serde_json::to_writer_pretty(&mut *out, &doc)?;
    writeln!(out)
}
