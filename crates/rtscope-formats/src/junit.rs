//! JUnit XML as GitLab (`artifacts:reports:junit`) and Jenkins (`junit` step) read it: one
//! `<testsuite>` per run, one `<testcase>` per limit check (a `<failure>` when exceeded), and
//! one per CPU holding its statistics in `<system-out>`, so a run without limits still shows;
//! one `<testsuite>` per board that recorded no run ([`MissingBoard`]), its `run` case an
//! `<error>` with the reason, counted in the totals. Property names are unique in a file
//! (`SUITE.run_uuid`): a common Python parser crashed on a name repeated across suites.
//! Every attribute and text is XML-escaped.

use crate::missing::MissingBoard;
use crate::{check_text, measurements, Report};
use rtscope_store::RunStatus;
use std::io::{self, Write};

/// `text` escaped for an XML attribute or text node; control characters XML 1.0 cannot hold
/// become U+FFFD.
pub fn escape(text: &str) -> String {
    let mut s = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => s.push_str("&amp;"),
            '<' => s.push_str("&lt;"),
            '>' => s.push_str("&gt;"),
            '"' => s.push_str("&quot;"),
            '\'' => s.push_str("&apos;"),
            '\t' | '\n' | '\r' => s.push(c),
            c if (c as u32) < 0x20 => s.push('\u{FFFD}'),
            c => s.push(c),
        }
    }
    s
}

/// Writes `r` as a JUnit document.
pub fn write(out: &mut dyn Write, r: &Report) -> io::Result<()> {
    write_all(out, std::slice::from_ref(r), &[])
}

/// The counts of one run's suite: tests, failures, errors.
fn counts(r: &Report) -> (usize, usize, usize) {
    let ok = matches!(r.status, RunStatus::Complete | RunStatus::Running);
    let failures = r.checks.iter().filter(|c| !c.passed).count();
    (
        r.checks.len() + r.scopes.len() + 1,
        failures,
        usize::from(!ok),
    )
}

/// Writes the runs `rs` as one JUnit document, a `<testsuite>` each (a campaign's runs), and
/// a suite with one error case for each board of `missing`.
pub fn write_all(out: &mut dyn Write, rs: &[Report], missing: &[MissingBoard]) -> io::Result<()> {
    let (mut tests, mut failures, mut errors) = (missing.len(), 0, missing.len());
    for r in rs {
        let (t, f, e) = counts(r);
        (tests, failures, errors) = (tests + t, failures + f, errors + e);
    }
    // Folded from +0.0: an empty sum of f64 is -0.0, printed "-0.000".
    let time: f64 = rs.iter().map(|r| r.measured_s).fold(0.0, |a, b| a + b);
    writeln!(out, r#"<?xml version="1.0" encoding="UTF-8"?>"#)?;
    writeln!(
        out,
        r#"<testsuites name="rtscope" tests="{tests}" failures="{failures}" errors="{errors}" time="{time:.3}">"#
    )?;
    for r in rs {
        suite(out, r)?;
    }
    for m in missing {
        missing_suite(out, m)?;
    }
    writeln!(out, "</testsuites>")
}

/// The suite of a board that recorded no run: its `run` case an error with the reason.
fn missing_suite(out: &mut dyn Write, m: &MissingBoard) -> io::Result<()> {
    let suite = escape(&format!("rtscope.{}", m.board));
    writeln!(
        out,
        r#"  <testsuite name="{suite}" tests="1" failures="0" errors="1" skipped="0" time="0.000" hostname="{}">"#,
        escape(&m.board)
    )?;
    writeln!(
        out,
        r#"    <testcase classname="{suite}" name="run" time="0.000"><error type="board {0}" message="{1}">{1}</error></testcase>"#,
        m.end.word(),
        escape(&m.message())
    )?;
    writeln!(out, "  </testsuite>")
}

fn suite(out: &mut dyn Write, r: &Report) -> io::Result<()> {
    let mut suite = format!("rtscope.{}", r.board);
    if !r.label.is_empty() {
        suite.push_str(&format!(".{}", r.label));
    }
    if let Some(id) = r.run_id {
        suite.push_str(&format!(".run{id}"));
    }
    let ok = matches!(r.status, RunStatus::Complete | RunStatus::Running);
    let (tests, failures, errors) = counts(r);
    let time = format!("{:.3}", r.measured_s);
    write!(
        out,
        r#"  <testsuite name="{}" tests="{tests}" failures="{failures}" errors="{errors}" skipped="0" time="{time}" hostname="{}""#,
        escape(&suite),
        escape(&r.board)
    )?;
    if let Some(s) = &r.started {
        write!(out, r#" timestamp="{}""#, escape(s.trim_end_matches('Z')))?;
    }
    writeln!(out, ">")?;
    if let Some(u) = &r.uuid {
        // The run's identity outside this database (its number repeats across databases).
        // Named after the suite: unique in the file, as some parsers need.
        writeln!(
            out,
            r#"    <properties><property name="{}.run_uuid" value="{}"/></properties>"#,
            escape(&suite),
            escape(u)
        )?;
    }
    let class = escape(&suite);
    write!(
        out,
        r#"    <testcase classname="{class}" name="run" time="{time}">"#
    )?;
    if !ok {
        write!(
            out,
            r#"<error type="{0}" message="the run is {0}"/>"#,
            r.status
        )?;
    }
    writeln!(out, "</testcase>")?;
    for s in &r.scopes {
        let stats: Vec<String> = measurements(s)
            .iter()
            .map(|m| {
                format!(
                    "{}={}{}",
                    m.stat,
                    m.value,
                    if m.unit == "us" { "us" } else { "" }
                )
            })
            .collect();
        writeln!(
            out,
            r#"    <testcase classname="{class}" name="cpu {}"><system-out>{}</system-out></testcase>"#,
            escape(&s.kind.label()),
            escape(&stats.join(" "))
        )?;
    }
    for c in &r.checks {
        let (value, limit) = check_text(c);
        let name = escape(&format!("limit {} {} <= {limit}", c.scope, c.stat));
        write!(out, r#"    <testcase classname="{class}" name="{name}">"#)?;
        if !c.passed {
            let msg = escape(&format!("{} {} = {value} exceeds {limit}", c.scope, c.stat));
            write!(
                out,
                r#"<failure type="limit" message="{msg}">{msg}</failure>"#
            )?;
        } else {
            write!(out, "<system-out>{}</system-out>", escape(&value))?;
        }
        writeln!(out, "</testcase>")?;
    }
    writeln!(out, "  </testsuite>")
}
