//! `rtscope tail RUN`: the latency a run did not see, estimated with extreme value theory
//! (rtscope-evt), per thread, with its diagnostics — or the refusal (docs/worst-case.md).

use crate::cli::tail::TailArgs;
use crate::commands::runs;
use rtscope_common::error::ExitStatus;
use rtscope_common::error::UsageError;
use rtscope_evt::gate::{TailLimit, Verdict};
use rtscope_evt::words::{self, Who};
use rtscope_evt::{input, render, Options};
use std::io::Write;

/// Runs `rtscope tail`.
pub fn run(a: &TailArgs, out: &mut dyn Write) -> anyhow::Result<ExitStatus> {
    let limits = a
        .limits
        .iter()
        .map(|l| {
            l.parse::<TailLimit>()
                .map_err(|e| UsageError::new(e.to_string()))
        })
        .collect::<Result<Vec<_>, _>>()?;
    if limits.iter().any(|l| l.deprecated) {
        rtscope_common::error::warn(rtscope_evt::gate::DEPRECATED);
    }
    let store = super::open_db(a.db.as_deref())?;
    let id = runs::resolve(&store, &a.run)?;
    let detail = store.run(id).map_err(UsageError::from_error)?;
    let threads: Vec<_> = detail
        .threads
        .iter()
        .filter(|t| a.cpu.is_none() || t.cpu == a.cpu)
        .collect();
    if threads.is_empty() {
        return Err(no_such_cpu(&detail, a.cpu.unwrap_or(0)));
    }
    let mut o = Options::default();
    if !a.probabilities.is_empty() {
        o.probabilities = a.probabilities.clone();
    }
    for p in limits.iter().filter_map(|l| l.probability()) {
        // Once each: a limit at a probability also asked for adds no second row.
        if !o.probabilities.iter().any(|q| (q / p - 1.0).abs() < 1e-9) {
            o.probabilities.push(p);
        }
    }
    o.confidence = a.confidence;
    o.allow_bounded = a.allow_bounded;
    o.precision = a.precision;
    o.assume_stationary = a.assume_stationary;
    o.regimes = true;
    let mut status = ExitStatus::Success;
    let mut json = Vec::new();
    let mut fixes = Vec::new();
    for t in threads {
        let analysis = input::analyse_thread(&store, &detail, t, &o, a.unreliable)
            .map_err(|e| UsageError::new(format!("run {id}: {e}")))?;
        // M:N: threads sharing a CPU are named by thread.
        let shared_cpu =
            t.cpu.is_some() && detail.threads.iter().filter(|u| u.cpu == t.cpu).count() > 1;
        let who = Who {
            run: id.to_string(),
            thread: t.thread,
            cpu: t.cpu,
            shared_cpu,
        };
        fixes.extend(render::fixes(&who, &analysis));
        let mut verdicts = Vec::new();
        for l in &limits {
            let v = l.check(&analysis);
            if !matches!(v, Verdict::Pass { .. }) {
                status = ExitStatus::LimitExceeded;
            }
            verdicts.push((l, v));
        }
        if a.json {
            json.push(serde_json::json!({
                "thread": t.thread,
                "cpu": t.cpu,
                "analysis": analysis,
                "limits": verdicts.iter().map(|(l, v)| serde_json::json!({
                    "limit": l.to_string(),
                    "probability": l.probability(),
                    "limit_ns": l.limit.0,
                    "result": v,
                })).collect::<Vec<_>>(),
            }));
            continue;
        }
        out.write_all(render::text(&who, &analysis).as_bytes())?;
        for (l, v) in verdicts {
            writeln!(out, "{}", render::limit(l, &v))?;
        }
        writeln!(out)?;
    }
    if a.json {
        let doc = serde_json::json!({ "schema": "rtscope.tail/1", "run": id, "threads": json });
        writeln!(out, "{}", serde_json::to_string_pretty(&doc)?)?;
        return Ok(status);
    }
    // Each fix once, for every thread it concerns.
    let hints = words::hints(&fixes);
    if !hints.is_empty() {
        writeln!(out, "what to do:")?;
        for h in hints {
            writeln!(out, "  - {h}")?;
        }
    }
    Ok(status)
}

/// `--cpu N` for a run that did not measure CPU `N`: the error naming the CPUs it did.
fn no_such_cpu(detail: &rtscope_store::RunDetail, cpu: u32) -> anyhow::Error {
    let cpus: Vec<String> = detail
        .threads
        .iter()
        .filter_map(|t| t.cpu)
        .map(|c| c.to_string())
        .collect();
    let id = detail.summary.id;
    crate::usage(format!(
        "run {id} has no thread on CPU {cpu}\n\nhint: its CPUs are {}",
        if cpus.is_empty() {
            "not recorded".to_string()
        } else {
            cpus.join(", ")
        }
    ))
}
