//! `rtscope load KIND`: runs one load standalone, through the same shepherd as a campaign, until
//! `--for` has passed, the load ends, or Ctrl-C (SIGINT), SIGTERM or SIGHUP; then prints what
//! it did.
//!
//! Exit codes: 0 done (Ctrl-C is the normal end without `--for`), 1 the load failed (ended
//! early with an error, miscompares), 2 bad option or the program is not installed,
//! 3 interrupted before `--for` ran out.

use crate::cli::load::LoadArgs;
use rtscope_common::error::{ExitStatus, UsageError};
use rtscope_core::Nanos;
use rtscope_load::sys::{SigSet, STOP_SIGNALS};
use rtscope_load::{LoadError, LoadReport, LoadSpec};
use std::io::Write;
use std::time::{Duration, Instant};

fn usage_from(e: LoadError) -> anyhow::Error {
    let hint = e.hint();
    let mut u = UsageError::from_error(e);
    if let Some(h) = hint {
        u = u.hint(h);
    }
    u.into()
}

fn duration(flag: &str, text: &str) -> anyhow::Result<Duration> {
    Nanos::parse_with_default_unit(text, "s")
        .map(|n| Duration::from_nanos(n.as_ns()))
        .map_err(|e| {
            UsageError::new(format!("{flag}: {e}"))
                .hint(format!("write e.g. `{flag} 30s`"))
                .into()
        })
}

/// Runs `rtscope load`.
pub fn run(a: &LoadArgs, out: &mut dyn Write) -> anyhow::Result<ExitStatus> {
    let spec = a.kind.to_spec();
    let limit = a
        .duration
        .as_deref()
        .map(|d| duration("--for", d))
        .transpose()?;
    let grace = duration("--grace", &a.grace)?;
    rtscope_load::validate(&spec).map_err(usage_from)?;
    let exe = std::env::current_exe()
        .map_err(|e| anyhow::anyhow!("cannot find the rtscope executable: {e}"))?;
    let signals = SigSet::of(&STOP_SIGNALS);
    signals.block();
    let result = supervise(&spec, &exe, limit, grace, &signals);
    while signals.wait(Duration::ZERO).is_some() {} // a second Ctrl-C must not kill the report
    signals.unblock();
    let (reports, interrupted) = result?;
    if a.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&reports)?)?;
    } else {
        write_table(out, &reports)?;
    }
    // A built-in load SIGKILLed after the grace period lost its report (a memory load's
    // miscompare count with it): that is not a success (issue 26).
    let lost = |r: &&LoadReport| {
        r.status == rtscope_core::LoadStatus::Killed
            && !matches!(r.spec, LoadSpec::External { .. })
            && r.metrics.is_empty()
    };
    for r in reports.iter().filter(lost) {
        rtscope_common::error::warn(&format!(
            "rtscope load: {}: its report was lost (SIGKILLed when --grace {} ran out after SIGTERM); on a busy machine raise --grace",
            r.name, a.grace
        ));
    }
    Ok(
        if reports
            .iter()
            .any(|r| r.status == rtscope_core::LoadStatus::Failed || lost(&r))
        {
            ExitStatus::LimitExceeded
        } else if interrupted && limit.is_some() {
            ExitStatus::Interrupted
        } else {
            ExitStatus::Success
        },
    )
}

/// Starts the load and waits for the end; returns the reports and whether a signal ended it.
fn supervise(
    spec: &LoadSpec,
    exe: &std::path::Path,
    limit: Option<Duration>,
    grace: Duration,
    signals: &SigSet,
) -> anyhow::Result<(Vec<LoadReport>, bool)> {
    let mut loads = rtscope_load::start(std::slice::from_ref(spec), exe).map_err(usage_from)?;
    let until = limit.map(|l| Instant::now() + l);
    {
        use std::io::Write as _;
        let _ = writeln!(
            std::io::stderr(),
            "rtscope load: {} running (pid {:?}){}",
            spec.name(),
            loads.pids(),
            if limit.is_some() {
                ""
            } else {
                "; Ctrl-C stops it"
            }
        );
    };
    let mut interrupted = false;
    loop {
        if signals.wait(Duration::from_millis(50)).is_some() {
            interrupted = true;
            break;
        }
        if until.is_some_and(|u| Instant::now() >= u) {
            break;
        }
        let ended = loads.poll();
        for e in &ended {
            {
                use std::io::Write as _;
                let _ = writeln!(
                    std::io::stderr(),
                    "rtscope load: {} (pid {}) ended: {}",
                    e.name,
                    e.pid,
                    e.status
                );
            };
        }
        if !ended.is_empty() {
            break; // one load per command: nothing left to run
        }
    }
    Ok((loads.stop(grace), interrupted))
}

fn number(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

/// The reports as a table: one row per metric.
pub fn write_table(out: &mut dyn Write, reports: &[LoadReport]) -> std::io::Result<()> {
    writeln!(
        out,
        "{:<12} {:<9} {:>9}  {:<16} {:>18}  unit",
        "load", "status", "ran (s)", "metric", "value"
    )?;
    for r in reports {
        let ran = format!("{:.2}", r.ran_ns as f64 / 1e9);
        let mut first = true;
        for m in &r.metrics {
            let (n, s, t) = if first {
                (&r.name[..], r.status.as_str(), &ran[..])
            } else {
                ("", "", "")
            };
            first = false;
            writeln!(
                out,
                "{n:<12} {s:<9} {t:>9}  {:<16} {:>18}  {}",
                m.name,
                number(m.value),
                m.unit
            )?;
        }
        if first {
            writeln!(out, "{:<12} {:<9} {ran:>9}", r.name, r.status)?;
        }
        writeln!(out, "command: {}", r.command_line.join(" "))?;
        if let Some(e) = &r.error {
            writeln!(out, "problem: {e}")?;
        }
    }
    Ok(())
}
