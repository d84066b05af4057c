//! `rtscope tail RUN`: the latency a run did not see, estimated with extreme value theory
//! (rtscope-evt), per thread, with its diagnostics — or the refusal (docs/worst-case.md).

use crate::cli::tail::TailArgs;
use crate::commands::runs;
use rtscope_common::error::{ExitStatus, UsageError};
use rtscope_evt::gate::TailLimit;
use rtscope_evt::request::{self, Request};
use rtscope_evt::{render, words, Options};
use std::io::Write;

/// Runs `rtscope tail`.
pub fn run(a: &TailArgs, out: &mut dyn Write) -> anyhow::Result<ExitStatus> {
    let limits = (a.limits.iter())
        .map(|l| (l.parse::<TailLimit>()).map_err(|e| UsageError::new(e.to_string())))
        .collect::<Result<Vec<_>, _>>()?;
    if limits.iter().any(|l| l.deprecated) {
        rtscope_common::error::warn(rtscope_evt::gate::DEPRECATED);
    }
    let store = super::open_db(a.db.as_deref())?;
    let mut o = Options::default();
    if !a.probabilities.is_empty() {
        o.probabilities = a.probabilities.clone();
    }
    o.confidence = a.confidence;
    o.allow_bounded = a.allow_bounded;
    o.precision = a.precision;
    o.assume_stationary = a.assume_stationary;
    o.regimes = true;
    let r = Request::new(
        runs::resolve(&store, &a.run)?,
        a.cpu,
        o,
        limits,
        a.unreliable,
    );
    let outcome = request::run(&store, &r).map_err(|e| {
        let hint = e.hint();
        match (UsageError::from_error(e), hint) {
            (u, Some(h)) => u.hint(h),
            (u, None) => u,
        }
    })?;
    let status = match outcome.passed() {
        true => ExitStatus::Success,
        false => ExitStatus::LimitExceeded,
    };
    if a.json {
        let doc = rtscope_present::tail_json::document(&outcome);
        writeln!(out, "{}", serde_json::to_string_pretty(&doc)?)?;
        return Ok(status);
    }
    for t in &outcome.threads {
        out.write_all(render::text(&t.who, &t.analysis).as_bytes())?;
        for (l, v) in &t.verdicts {
            writeln!(out, "{}", render::limit(l, v))?;
        }
        writeln!(out)?;
    }
    // Each fix once, for every thread it concerns.
    let hints = words::hints(&outcome.fixes);
    if !hints.is_empty() {
        writeln!(out, "what to do:")?;
        for h in hints {
            writeln!(out, "  - {h}")?;
        }
    }
    Ok(status)
}
