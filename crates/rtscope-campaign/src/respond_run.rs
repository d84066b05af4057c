//! One run of a respond scenario (`respond = "eventfd"`): the same loads, settling and
//! campaign bookkeeping as a timer run, with an IPC event-response measurement in place of
//! the timer session; the run is recorded with kind `respond` (one thread: the receiver).

use super::one_run::{
    add_to_campaign, failed_loads, file_loads, start_loads, stop_loads, Ctx, RunEnd,
};
use super::PlannedRun;
use rtscope_core::Nanos;
use rtscope_engine::sys;
use rtscope_respond::ipc::{IpcConfig, IpcResult, IpcRun};
use rtscope_respond::record::{record, RecordMeta};
use rtscope_session::limits;
use rtscope_session::{RunError, SystemSettings, UsageError};
use rtscope_store::RunStatus;
use std::io::Write;
use std::time::SystemTime;

/// Runs `p`, a respond scenario measuring `cfg`.
pub(super) fn respond_run(
    ctx: &mut Ctx,
    p: &PlannedRun,
    cfg: &IpcConfig,
    number: usize,
    out: &mut dyn Write,
) -> Result<RunEnd, RunError> {
    let loads = match start_loads(ctx, p, number, out)? {
        Ok(loads) => loads,
        Err(end) => return Ok(end),
    };
    let _settings = SystemSettings::apply(&p.plan)?;
    let (started, clock_start) = (SystemTime::now(), sys::now(libc::CLOCK_MONOTONIC));
    let measured = measure(cfg.clone());
    let reports = loads.map(|l| stop_loads(ctx, l)).unwrap_or_default();
    let (r, signal) = match measured {
        Ok(m) => m,
        Err(e) => return Err(UsageError::new(format!("run {}: {e}", p.label)).into()),
    };
    if signal.is_some() {
        ctx.signals += 1;
    }
    let config_json = config_json(&r);
    let line = result_line(number, p, &r);
    let row = rtscope_respond::run::ipc_row(r);
    let scope = format!("{} {}", row.source, row.path);
    let checks = limits::check(&p.plan.limits, &scope, &row.stats, &row.histogram);
    let failed = checks.iter().any(|c| !c.passed);
    let load_failed = failed_loads(&reports);
    let code = if !load_failed.is_empty() {
        2
    } else if failed {
        1
    } else if signal.is_some() {
        3
    } else {
        0
    };
    let meta = RecordMeta {
        label: Some(p.label.clone()),
        tags: p.tags.clone(),
        command_line: ctx.argv.to_vec(),
        config_json,
        started,
        ended: SystemTime::now(),
        clock_start,
    };
    let status = if signal.is_some() {
        RunStatus::Interrupted
    } else {
        RunStatus::Complete
    };
    let mut record_failed = false;
    match record(&mut ctx.store, &meta, &[row], status, code) {
        Ok(id) => {
            add_to_campaign(ctx, p, id)?;
            file_loads(ctx, id, &reports);
        }
        Err(e) => {
            let label = &p.label;
            rtscope_session::output::warn(&format!(
                "error: run {label} could not be recorded: {e}"
            ));
            record_failed = true;
        }
    }
    let line = if failed {
        line + "; LIMIT EXCEEDED"
    } else {
        line
    };
    writeln!(out, "{line}")?;
    out.flush()?;
    Ok(RunEnd {
        load_failed: !load_failed.is_empty(),
        signal,
        limits_failed: failed,
        record_failed,
    })
}

/// Runs the measurement to its length or the first SIGINT/SIGTERM (the campaign's runner has
/// the run signals blocked).
fn measure(cfg: IpcConfig) -> Result<(IpcResult, Option<i32>), rtscope_respond::RespondError> {
    let run = IpcRun::start(cfg)?;
    let mut signal = None;
    while !run.is_finished() {
        if let Some(s) = rtscope_respond::run::wait_stop(Nanos::from_ms(200)) {
            signal = Some(s);
            run.stop();
            break;
        }
    }
    Ok((run.finish(), signal))
}

fn config_json(r: &IpcResult) -> String {
    serde_json::json!({
        "respond": r.kind.name(), "placement": r.placement.kind(),
        "sender_cpu": r.placement.sender, "receiver_cpu": r.placement.receiver,
        "interval_ns": r.interval.0, "burst": r.burst, "sent": r.sent,
        "send_failed": r.send_failed, "lost": r.lost(),
        "rows": [{"thread": 0, "source": r.kind.name(), "path": r.placement.path()}],
    })
    .to_string()
}

fn result_line(number: usize, p: &PlannedRun, r: &IpcResult) -> String {
    let us = super::progress::us;
    let h = &r.histogram;
    format!(
        "[{number}] {}: {} {} events, p50 {}, p99 {}, max {}, lost {}",
        p.label,
        r.received(),
        r.kind,
        us(h.value_at_quantile(0.5)),
        us(h.value_at_quantile(0.99)),
        us(h.max()),
        r.lost()
    )
}
