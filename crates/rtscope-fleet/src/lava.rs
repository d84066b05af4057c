//! LAVA test-case signals, as a LAVA test definition's run step prints them
//! (`lava-test-case` writes the same lines): one test case per statistic of every CPU (result
//! `pass`, with the measurement), one per limit check (`pass`/`fail`), and one for the run
//! itself (`fail` when it was interrupted or failed), inside a test set named after the run's
//! label. Test-case ids hold only `[A-Za-z0-9_.-]`.

use crate::{check_text, measurements, name_part, Report};
use rtscope_store::RunStatus;
use std::io::{self, Write};

/// The id prefix: the sanitized label, or `rtscope`.
fn set_name(r: &Report) -> String {
    if r.label.is_empty() {
        "rtscope".into()
    } else {
        name_part(&r.label)
    }
}

fn case(
    out: &mut dyn Write,
    id: &str,
    pass: bool,
    measurement: Option<(f64, &str)>,
) -> io::Result<()> {
    let result = if pass { "pass" } else { "fail" };
    write!(
        out,
        "<LAVA_SIGNAL_TESTCASE TEST_CASE_ID={id} RESULT={result}"
    )?;
    if let Some((value, units)) = measurement {
        write!(out, " MEASUREMENT={value} UNITS={units}")?;
    }
    writeln!(out, ">")
}

/// Writes the runs `rs` as LAVA signals, a test set each.
pub fn write_all(out: &mut dyn Write, rs: &[Report]) -> io::Result<()> {
    rs.iter().try_for_each(|r| write(out, r))
}

/// Writes `r` as LAVA signals.
pub fn write(out: &mut dyn Write, r: &Report) -> io::Result<()> {
    let set = set_name(r);
    writeln!(out, "<LAVA_SIGNAL_TESTSET START {set}>")?;
    let ok = matches!(r.status, RunStatus::Complete | RunStatus::Running);
    case(out, "run", ok, Some((r.measured_s, "seconds")))?;
    for s in &r.scopes {
        let scope = format!("cpu{}", s.kind.label());
        for m in measurements(s) {
            let id = format!("{scope}-{}", name_part(m.stat));
            case(out, &id, true, Some((m.value, m.unit)))?;
        }
    }
    for c in &r.checks {
        let scope = name_part(&c.scope.replace(' ', ""));
        let id = format!("limit-{scope}-{}", name_part(&c.stat));
        let value = if c.stat == "missed" {
            (c.value as f64, "count")
        } else {
            (c.value as f64 / 1000.0, "us")
        };
        case(out, &id, c.passed, Some(value))?;
    }
    writeln!(out, "<LAVA_SIGNAL_TESTSET STOP>")?;
    // A line for people reading the job log.
    for c in r.checks.iter().filter(|c| !c.passed) {
        let (v, l) = check_text(c);
        writeln!(out, "# {set}: {} {} = {v} exceeds {l}", c.scope, c.stat)?;
    }
    Ok(())
}
