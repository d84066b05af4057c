//! The audit as text for people: a table of verdict, check and evidence, with the fix under
//! each finding that has one. Pure functions; strings read from the system are escaped.

use crate::{Audit, Finding, Verdict};
use std::borrow::Cow;
use std::fmt::Write;

/// Escapes control characters (escape sequences, carriage returns, newlines) and Unicode
/// bidirectional overrides as `\u{..}`, so a process or IRQ name cannot drive the terminal.
pub fn escape(s: &str) -> Cow<'_, str> {
    let bad =
        |c: char| c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
    if !s.chars().any(bad) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if bad(c) {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// `12 ok, 8 warn, 1 bad, 3 unavailable`.
pub fn summary(audit: &Audit) -> String {
    [
        Verdict::Ok,
        Verdict::Warn,
        Verdict::Bad,
        Verdict::Unavailable,
    ]
    .iter()
    .map(|&v| format!("{} {v}", audit.count(v)))
    .collect::<Vec<_>>()
    .join(", ")
}

/// The table: a header line, then per finding `verdict  check  evidence` and, indented under
/// the evidence, `fix: …`.
pub fn table(audit: &Audit) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "rtscope check: {} checks for CPUs {}: {}",
        audit.findings.len(),
        rtscope_core::cpulist::format(&audit.cpus),
        summary(audit)
    );
    let _ = writeln!(out);
    let id_width = audit
        .findings
        .iter()
        .map(|f| f.check.id().len())
        .max()
        .unwrap_or(5)
        .max(5);
    let _ = writeln!(out, "{:<11}  {:<id_width$}  EVIDENCE", "VERDICT", "CHECK");
    for f in &audit.findings {
        row(&mut out, f, id_width);
    }
    out
}

fn row(out: &mut String, f: &Finding, id_width: usize) {
    let _ = writeln!(
        out,
        "{:<11}  {:<id_width$}  {}",
        f.verdict.as_str(),
        f.check.id(),
        escape(&f.evidence)
    );
    if let Some(fix) = &f.fix {
        let _ = writeln!(out, "{:<11}  {:<id_width$}  fix: {}", "", "", escape(fix));
    }
}

/// One line per bad finding, for the start of a measurement:
/// `check: bad: preemption: mode none; … (fix: …)`.
pub fn bad_lines(audit: &Audit) -> Vec<String> {
    audit
        .findings
        .iter()
        .filter(|f| f.verdict == Verdict::Bad)
        .map(|f| {
            let mut line = format!("check: bad: {}: {}", f.check.id(), escape(&f.evidence));
            if let Some(fix) = &f.fix {
                line.push_str(&format!(" (fix: {})", escape(fix)));
            }
            line
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CheckId, Finding};

    #[test]
    fn escapes_terminal_controls() {
        assert_eq!(escape("irq/39-dwc_otg"), "irq/39-dwc_otg");
        assert_eq!(escape("a\x1b[31mb\n"), "a\\u{1b}[31mb\\u{a}");
        assert_eq!(escape("x\u{202e}y"), "x\\u{202e}y");
    }

    #[test]
    fn table_lists_every_finding_with_its_fix() {
        let audit = Audit {
            cpus: vec![1, 2, 3],
            findings: vec![
                Finding::new(CheckId::Swap, Verdict::Ok, "/proc/swaps: no swap"),
                Finding::new(
                    CheckId::RtTasks,
                    Verdict::Bad,
                    "evil\x1b]0;x\x07[12] FIFO 99",
                )
                .fix("chrt -o -p 0 12"),
            ],
        };
        let t = table(&audit);
        assert!(t.starts_with(
            "rtscope check: 2 checks for CPUs 1-3: 1 ok, 0 warn, 1 bad, 0 unavailable\n"
        ));
        assert!(
            t.contains("\nok           swap      /proc/swaps: no swap\n"),
            "{t}"
        );
        assert!(
            t.contains("bad          rt_tasks  evil\\u{1b}]0;x\\u{7}[12] FIFO 99\n"),
            "{t}"
        );
        assert!(
            t.contains("\n                       fix: chrt -o -p 0 12\n"),
            "{t}"
        );
        assert!(!t.contains('\x1b'));
        assert_eq!(bad_lines(&audit).len(), 1);
    }
}
