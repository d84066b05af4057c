//! The preflight audit of a run: `rtscope check`'s checks (crate rtscope-check) for the CPUs and
//! priority of a plan, run before anything of the run starts (before the `cpu_dma_latency`
//! request and the measuring threads, which would otherwise audit themselves), printed as one
//! line per bad verdict by the front end and stored with the run.

use crate::plan::RunPlan;
use rtscope_check::{audit as run_audit, Audit, LiveProbe, Options, System};
use rtscope_store::CheckRow;
use std::path::Path;

/// Audits this machine for `plan`: its pinned CPUs (every online CPU when its threads are not
/// pinned) and its highest real-time priority (90 for non-real-time policies).
pub fn audit(plan: &RunPlan) -> Audit {
    let cpus: Vec<u32> = plan.config.pinned_cpus().iter().map(|c| c as u32).collect();
    let priority = plan
        .config
        .threads
        .iter()
        .filter(|t| t.policy.is_realtime_priority())
        .map(|t| t.priority.clamp(1, 99) as u32)
        .max()
        .unwrap_or(90);
    let probe = LiveProbe;
    run_audit(
        &System::new(Path::new("/"), &probe),
        &Options { cpus, priority },
    )
}

/// The rows the store records for `audit`.
pub fn rows(audit: &Audit) -> Vec<CheckRow> {
    audit
        .findings
        .iter()
        .map(|f| CheckRow {
            check: f.check.id().to_owned(),
            verdict: f.verdict.as_str().to_owned(),
            evidence: f.evidence.clone(),
            fix: f.fix.clone(),
            setting: f.setting.clone(),
        })
        .collect()
}

/// One line per bad verdict, for stderr at the start of a run (terminal-escaped):
/// `check: bad: preemption: mode none; … (fix: …)`.
pub fn bad_lines(audit: &Audit) -> Vec<String> {
    rtscope_check::render::bad_lines(audit)
}

/// What a front end runs before anything of its run starts: the audit of `plan` ([`audit`]),
/// each bad verdict warned on stderr ([`bad_lines`]), and the rows the store records ([`rows`]).
pub fn warned_rows(plan: &RunPlan) -> Vec<CheckRow> {
    let audit = audit(plan);
    for line in bad_lines(&audit) {
        rtscope_common::error::warn(&line);
    }
    rows(&audit)
}
