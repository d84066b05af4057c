//! LAVA test-case signals, as a LAVA test definition's run step prints them
//! (`lava-test-case` writes the same lines): one test case per statistic of every CPU (result
//! `pass`, with the measurement), one per limit check (`pass`/`fail`), and one for the run
//! itself (`fail` when it was interrupted or failed), inside a test set named after the run's
//! label. A fleet's run (a `board` tag) is in its board's own set, `BOARD-LABEL`, and its case
//! ids begin with `BOARD.`: the sets and cases of several boards in one job's log never share
//! a name. A board that recorded no run ([`MissingBoard`]) is a set `BOARD` with one case
//! `BOARD.run`, `fail`, its reason on a comment line. Test-case ids hold only `[A-Za-z0-9_.-]`.

use crate::missing::MissingBoard;
use crate::{check_text, measurements, name_part, Report};
use rtscope_store::RunStatus;
use std::io::{self, Write};

/// The test set: the sanitized label, or `rtscope`; for a board's run, `BOARD-LABEL` (or
/// `BOARD`).
fn set_name(r: &Report) -> String {
    match (r.from_board, r.label.is_empty()) {
        (false, true) => "rtscope".into(),
        (false, false) => name_part(&r.label),
        (true, true) => name_part(&r.board),
        (true, false) => format!("{}-{}", name_part(&r.board), name_part(&r.label)),
    }
}

/// The prefix of a run's case ids: `BOARD.` for a board's run, else none.
fn case_prefix(r: &Report) -> String {
    if r.from_board {
        format!("{}.", name_part(&r.board))
    } else {
        String::new()
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

/// Writes the runs `rs` as LAVA signals, a test set each, then a set for each board of
/// `missing`.
pub fn write_all(out: &mut dyn Write, rs: &[Report], missing: &[MissingBoard]) -> io::Result<()> {
    rs.iter().try_for_each(|r| write(out, r))?;
    missing.iter().try_for_each(|m| write_missing(out, m))
}

/// Writes a board that recorded no run: its set, a failed `run` case and the reason.
pub fn write_missing(out: &mut dyn Write, m: &MissingBoard) -> io::Result<()> {
    let board = name_part(&m.board);
    writeln!(out, "<LAVA_SIGNAL_TESTSET START {board}>")?;
    case(out, &format!("{board}.run"), false, None)?;
    writeln!(out, "<LAVA_SIGNAL_TESTSET STOP>")?;
    // For people reading the job log; the reason is one line (escaped where it was made).
    writeln!(out, "# {board}: {}", m.message().replace(['\n', '\r'], " "))
}

/// Writes `r` as LAVA signals.
pub fn write(out: &mut dyn Write, r: &Report) -> io::Result<()> {
    let set = set_name(r);
    let p = case_prefix(r);
    writeln!(out, "<LAVA_SIGNAL_TESTSET START {set}>")?;
    let ok = matches!(r.status, RunStatus::Complete | RunStatus::Running);
    case(out, &format!("{p}run"), ok, Some((r.measured_s, "seconds")))?;
    for s in &r.scopes {
        let scope = format!("cpu{}", s.kind.label());
        for m in measurements(s) {
            let id = format!("{p}{scope}-{}", name_part(m.stat));
            case(out, &id, true, Some((m.value, m.unit)))?;
        }
    }
    for c in &r.checks {
        let scope = name_part(&c.scope.replace(' ', ""));
        let id = format!("{p}limit-{scope}-{}", name_part(&c.stat));
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
