//! Executes a campaign: each planned run with its loads, monitors, progress and recording.
//!
//! Signals: SIGINT and SIGTERM are blocked for the whole campaign and taken synchronously
//! (while settling and by the run's control loop). The first ends the campaign after saving
//! the current run as `interrupted` (loads stopped with a grace period); a second one skips the
//! grace period, still saving. The loads run under a supervisor that kills them whatever
//! happens to rtscope (see rtscope-load).

use super::expand::{Campaign, PlannedRun};
use super::one_run::{one_run, Ctx, RunEnd};
use super::progress::Progress;
use super::CampaignOptions;
use rtscope_common::error::{ExitStatus, UsageError};
use rtscope_session::record;
use rtscope_session::RunError;
use rtscope_store::RunStatus;
use rtscope_store::{CampaignId, NewCampaign, Store};
use std::io::Write;
use std::time::{Duration, SystemTime};

/// Runs every planned run of `c` not done yet.
pub fn execute(
    c: Campaign,
    a: &CampaignOptions,
    argv: &[String],
    out: &mut dyn Write,
) -> Result<ExitStatus, RunError> {
    // Blocked for the rest of the process, before any thread starts: taken by sigtimedwait
    // only, so a late signal never kills the campaign while a run's end is written.
    rtscope_common::signals::hold_signals();
    // A closed stdout loses the text, never a run nor the exit code; any other failure (a
    // full disk, /dev/full) lost the progress and summary asked for: exit 2, said on stderr.
    let mut guarded = rtscope_session::output::Guarded::new(out);
    let status = execute_guarded(c, a, argv, &mut guarded)?;
    let _ = guarded.flush();
    Ok(guarded.verdict(
        status,
        "the campaign's progress and summary",
        " (its runs are still recorded)",
    ))
}

/// [`execute`] with its standard output guarded.
fn execute_guarded(
    c: Campaign,
    a: &CampaignOptions,
    argv: &[String],
    out: &mut dyn Write,
) -> Result<ExitStatus, RunError> {
    let clock = rtscope_common::clock::system();
    let monitor_interval = a.monitor_interval;
    let db =
        a.db.clone()
            .unwrap_or_else(rtscope_store::Store::default_path);
    let mut store = record::open(&db)?;
    let (cid, done) = if a.resume {
        resume(&mut store, &c)?
    } else {
        (begin(&mut store, &c, argv, clock.wall())?, Vec::new())
    };
    let todo: Vec<&PlannedRun> = c.runs.iter().filter(|p| !done.contains(&p.seq)).collect();
    let total: Duration = todo.iter().map(|p| super::expand::estimate(p)).sum();
    announce(&c, todo.len(), done.len(), total, out)?;
    let exe = std::env::current_exe().map_err(|e| {
        UsageError::new(format!(
            "cannot find the rtscope executable to start loads: {e}"
        ))
    })?;
    let mut ctx = Ctx {
        a,
        argv,
        db,
        store,
        cid,
        exe,
        monitor_interval,
        progress: Progress::new(!a.quiet, todo.len(), total, clock.clone()),
        clock,
        signals: 0,
        bad_checks: Vec::new(),
    };
    let mut status = ExitStatus::Success;
    let mut without_load = 0usize;
    for (i, p) in todo.iter().enumerate() {
        let end = match one_run(&mut ctx, p, i + 1, out) {
            Ok(end) => end,
            Err(e) => {
                // The campaign cannot go on (no RT privilege, a load that cannot start, …):
                // its record says so; the loads of this run are already stopped.
                ctx.progress.clear();
                let ended = rtscope_core::civil::rfc3339(ctx.clock.wall());
                let _ = ctx
                    .store
                    .finish_campaign(ctx.cid, RunStatus::Failed, &ended);
                return Err(e);
            }
        };
        ctx.progress.run_done(super::expand::estimate(p));
        without_load += usize::from(end.load_failed);
        status = with_run(status, &end);
        // A signal after the last run was measured (while its loads stopped) interrupts
        // nothing: the campaign is complete.
        let last = i + 1 == todo.len();
        if end.signal.is_some() || (ctx.signals > 0 && !last) {
            return finish(
                &mut ctx,
                &c,
                RunStatus::Interrupted,
                ExitStatus::Interrupted,
                out,
            );
        }
    }
    if without_load > 0 {
        writeln!(out, "{}", without_load_line(without_load))?;
        return finish(&mut ctx, &c, RunStatus::Failed, ExitStatus::Usage, out);
    }
    finish(&mut ctx, &c, RunStatus::Complete, status, out)
}

/// The campaign's exit status after run `end`: a failed record or load is a usage failure
/// (2), which a limit (1) never lowers.
fn with_run(status: ExitStatus, end: &RunEnd) -> ExitStatus {
    if end.record_failed || end.load_failed {
        ExitStatus::Usage
    } else if end.limits_failed && status == ExitStatus::Success {
        ExitStatus::LimitExceeded
    } else {
        status
    }
}

/// `campaign NAME (SOURCE): N runs to do (M done before), about T`.
fn announce(
    c: &Campaign,
    todo: usize,
    done: usize,
    total: Duration,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let before = if done == 0 {
        String::new()
    } else {
        format!(" ({done} done before)")
    };
    writeln!(
        out,
        "campaign {} ({}): {todo} run{} to do{before}, about {}",
        c.name,
        c.source,
        if todo == 1 { "" } else { "s" },
        super::progress::human(total)
    )?;
    out.flush()
}

/// The campaign's failure when `n` runs were measured without their load.
fn without_load_line(n: usize) -> String {
    format!(
        "{n} run{} measured without {} load (tagged {}): the campaign failed",
        if n == 1 { "" } else { "s" },
        if n == 1 { "its" } else { "their" },
        super::one_run::LOAD_FAILED_TAG
    )
}

fn begin(
    store: &mut Store,
    c: &Campaign,
    argv: &[String],
    now: SystemTime,
) -> Result<CampaignId, UsageError> {
    store
        .begin_campaign(&NewCampaign {
            name: c.name.clone(),
            source: c.source.clone(),
            definition: c.text.clone(),
            started: rtscope_core::civil::rfc3339(now),
            planned_runs: c.runs.len() as u32,
            command_line: argv.to_vec(),
        })
        .map_err(UsageError::from_error)
}

/// The campaign to resume and the plan positions already completed.
fn resume(store: &mut Store, c: &Campaign) -> Result<(CampaignId, Vec<usize>), UsageError> {
    let err = |e: rtscope_store::StoreError| UsageError::from_error(e);
    let Some(prev) = store.campaign_by_name(&c.name).map_err(err)? else {
        return Err(UsageError::new(format!(
            "no campaign named '{}' to resume in {}",
            c.name,
            store.path().display()
        ))
        .hint("run it without --resume first; `rtscope runs` lists the recorded runs"));
    };
    if prev.status == RunStatus::Complete || prev.status == RunStatus::Running {
        return Err(UsageError::new(format!(
            "campaign '{}' (started {}) is {}: nothing to resume",
            c.name, prev.started, prev.status
        ))
        .hint("drop --resume to run it again"));
    }
    if prev.definition != c.text || prev.planned_runs as usize != c.runs.len() {
        return Err(UsageError::new(format!(
            "campaign '{}' has changed since it was interrupted (its definition or run count differs)",
            c.name
        ))
        .hint("resume with the same campaign file and options, or drop --resume to start it afresh"));
    }
    let done = store
        .campaign_runs(prev.id)
        .map_err(err)?
        .into_iter()
        .filter(|r| r.status == RunStatus::Complete)
        .map(|r| r.seq as usize)
        .collect();
    store.resume_campaign(prev.id).map_err(err)?;
    Ok((prev.id, done))
}

fn finish(
    ctx: &mut Ctx,
    c: &Campaign,
    state: RunStatus,
    status: ExitStatus,
    out: &mut dyn Write,
) -> Result<ExitStatus, RunError> {
    ctx.progress.clear();
    let ended = rtscope_core::civil::rfc3339(ctx.clock.wall());
    if let Err(e) = ctx.store.finish_campaign(ctx.cid, state, &ended) {
        {
            use std::io::Write as _;
            let _ = writeln!(
                std::io::stderr(),
                "error: the campaign's end could not be recorded: {e}"
            );
        };
        return Ok(ExitStatus::Usage);
    }
    writeln!(
        out,
        "campaign {} {state}; recorded in {}",
        c.name,
        ctx.db.display()
    )?;
    if state == RunStatus::Interrupted {
        writeln!(
            out,
            "continue it with: rtscope run {} --resume",
            resume_args(ctx.a)
        )?;
    }
    writeln!(
        out,
        "report: rtscope report --campaign {}",
        super::loads::quote(&c.name)
    )?;
    Ok(status)
}

fn resume_args(a: &CampaignOptions) -> String {
    let mut v = Vec::new();
    if let Some(f) = &a.file {
        v.push(super::loads::quote(&f.display().to_string()));
    }
    if let Some(p) = &a.preset {
        v.push(format!("--preset {}", super::loads::quote(p)));
    }
    for (flag, val) in [
        ("--duration", a.duration.clone()),
        ("--loops", a.loops.map(|l| l.to_string())),
        ("--repeats", a.repeats.map(|r| r.to_string())),
        ("--name", a.name.clone()),
        ("--until-tail", a.until_tail.clone()),
        ("--db", a.db.as_ref().map(|d| d.display().to_string())),
    ] {
        if let Some(v2) = val {
            v.push(format!("{flag} {}", super::loads::quote(&v2)));
        }
    }
    for t in &a.tags {
        v.push(format!("--tag {}", super::loads::quote(t)));
    }
    v.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn end(limits_failed: bool, load_failed: bool, record_failed: bool) -> RunEnd {
        RunEnd {
            signal: None,
            load_failed,
            limits_failed,
            record_failed,
        }
    }

    #[test]
    fn a_failed_load_or_record_is_2_and_a_limit_1_never_lowering_a_2() {
        let s = ExitStatus::Success;
        assert_eq!(with_run(s, &end(false, false, false)), ExitStatus::Success);
        assert_eq!(
            with_run(s, &end(true, false, false)),
            ExitStatus::LimitExceeded
        );
        assert_eq!(with_run(s, &end(true, true, false)), ExitStatus::Usage);
        assert_eq!(with_run(s, &end(false, false, true)), ExitStatus::Usage);
        let s = with_run(s, &end(false, true, false));
        assert_eq!(with_run(s, &end(true, false, false)), ExitStatus::Usage);
        assert_eq!(with_run(s, &end(false, false, false)), ExitStatus::Usage);
        let s = ExitStatus::LimitExceeded;
        assert_eq!(
            with_run(s, &end(false, false, false)),
            ExitStatus::LimitExceeded
        );
    }
}
