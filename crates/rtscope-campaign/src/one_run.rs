//! One run of a campaign, whatever its workload (timer wake-ups or a respond scenario): start
//! its loads, let them settle, audit, measure with monitors and recording, stop the loads,
//! store what they did; the exit code of every run is computed here, once.

use super::expand::PlannedRun;
use super::progress::Progress;
use super::progress::{us, Current};
use super::until_tail::watch::Watch;
use super::CampaignOptions;
use rtscope_common::clock::{Clock, SharedClock};
use rtscope_common::error::UsageError;
use rtscope_core::{Histogram, Nanos, Stats};
use rtscope_engine::{Run, RunResult};
use rtscope_load::LoadReport;
use rtscope_session::noise_session::{NoiseMeasured, NoiseSession};
use rtscope_session::record::{self, RecordSpec};
use rtscope_session::RunError;
use rtscope_session::{
    plan::ConfigDoc, preflight, Event, Measured, Recorded, Session, SystemSettings,
};
use rtscope_session::{plan::Workload, RecordOutcome, RespondMeasured, RespondSession};
use rtscope_store::{CampaignId, Store};
use rtscope_store::{CampaignRun, LoadMetric, LoadRow, RunId};
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The tag of a run whose load failed to start, exited early with an error or lost its
/// supervisor: its value names the loads (`load_failed=messaging,false`).
pub const LOAD_FAILED_TAG: &str = "load_failed";

/// Grace period between SIGTERM and SIGKILL for loads at the end of a run. A load that stops
/// in time costs nothing of it; a slow stop is not a failure: a messaging load of hundreds of
/// threads on 2 CPUs beside `stress-ng --cpu 4 --io 2 --vm 1` needed more than 2 s (the old
/// value) to get each thread scheduled once, and was SIGKILLed and reported as failed. A
/// second Ctrl-C skips the grace period.
const LOAD_GRACE: Duration = Duration::from_secs(10);

/// How often the control thread checkpoints and redraws the progress.
const TICK: Nanos = Nanos::from_secs(1);

/// How one run ended.
pub(super) struct RunEnd {
    pub(super) signal: Option<i32>,
    /// A load failed (to start, early, or its supervisor was lost): the run was not under load.
    pub(super) load_failed: bool,
    pub(super) limits_failed: bool,
    pub(super) record_failed: bool,
}

/// The state shared by the runs of a campaign.
pub(super) struct Ctx<'a> {
    pub(super) a: &'a CampaignOptions,
    pub(super) argv: &'a [String],
    pub(super) db: PathBuf,
    pub(super) store: Store,
    pub(super) cid: CampaignId,
    pub(super) exe: PathBuf,
    pub(super) monitor_interval: Option<Duration>,
    pub(super) progress: Progress,
    /// The time of the campaign's pacing, progress and stamps (a fake one in tests).
    pub(super) clock: SharedClock,
    pub(super) signals: u32,
    /// The checks the previous run's preflight audit found bad (printed when they change).
    pub(super) bad_checks: Vec<String>,
}

/// The preflight audit of run `p`, before its measurement starts: stored with the run; its bad
/// verdicts go to stderr when they differ from the previous run's (not 50 times the same).
fn audit(ctx: &mut Ctx, p: &PlannedRun, number: usize) -> Vec<rtscope_store::CheckRow> {
    let audit = preflight::audit(&p.plan);
    let bad: Vec<String> = audit
        .findings
        .iter()
        .filter(|f| f.verdict == rtscope_check::Verdict::Bad)
        .map(|f| f.check.id().to_owned())
        .collect();
    if bad != ctx.bad_checks {
        for line in preflight::bad_lines(&audit) {
            rtscope_common::error::warn(&format!("[{number}] {line}"));
        }
        ctx.bad_checks = bad;
    }
    preflight::rows(&audit)
}

/// Runs `p` (the `number`th run to do), whatever its workload: loads started and settled,
/// the pre-run audit, the settings guard, the measurement (a timer [`Session`] or a
/// [`RespondSession`]), loads stopped, the run recorded with its exit code and filed into the
/// campaign with its loads.
pub(super) fn one_run(
    ctx: &mut Ctx,
    p: &PlannedRun,
    number: usize,
    out: &mut dyn Write,
) -> Result<RunEnd, RunError> {
    let loads = match start_loads(ctx, p, number, out)? {
        Ok(loads) => loads,
        Err(end) => return Ok(end),
    };
    let checks = audit(ctx, p, number);
    let settings = SystemSettings::apply(&p.plan)?;
    let spec = RecordSpec {
        kind: rtscope_store::RunKind::Measure,
        label: Some(p.label.clone()),
        tags: p.tags.iter().map(|(k, v)| format!("{k}={v}")).collect(),
        command_line: ctx.argv.to_vec(),
        config_json: serde_json::to_string(&ConfigDoc::of(&p.plan))?,
        monitor_interval: ctx.monitor_interval,
        checks,
        raw: p.plan.config.sample_ring.is_some(),
    };
    let mut m = match p.plan.workload {
        Workload::Timer => timer(ctx, (p, number), settings, spec, (loads.as_ref(), out))?,
        Workload::Respond(_) => respond(ctx, p, settings, spec)?,
        Workload::Noise(_) => noise(ctx, (p, number), settings, spec)?,
    };
    if m.interrupted() {
        ctx.signals += 1;
    }
    let reports = loads.map(|l| stop_loads(ctx, l)).unwrap_or_default();
    let failed = m.limits_failed();
    let load_failed = failed_loads(&reports);
    let code = if !load_failed.is_empty() || m.run_error().is_some() {
        2
    } else if failed {
        1
    } else if m.interrupted() {
        3
    } else {
        0
    };
    let rec = m.finish(code);
    let record_failed = rec.failed;
    if let Some(id) = m.run_id() {
        if !m.filed_at_start() {
            add_to_campaign(ctx, p, id)?;
        }
        file_loads(ctx, id, &reports);
    }
    writeln!(out, "{}", result_line(&m.head(number, p), &reports, failed))?;
    if let Some(w) = m.take_watch() {
        let line = w.finish(&mut ctx.store, m.interrupted());
        writeln!(out, "[{number}] {}: {line}", p.label)?;
    }
    if let Some(e) = m.run_error() {
        rtscope_common::error::warn(&format!(
            "[{number}] {}: error during the run: {e}",
            p.label
        ));
    }
    if let Some(line) = rec.line.filter(|_| record_failed) {
        rtscope_common::error::warn(&line);
    }
    out.flush()?;
    Ok(RunEnd {
        signal: m.signal(),
        load_failed: !load_failed.is_empty(),
        limits_failed: failed,
        record_failed,
    })
}

/// A measured run of either workload, before its end is recorded.
enum Done {
    /// With the `until_tail` checks of the run, when it has them.
    Timer(Box<Session>, Box<Measured>, Option<Box<Watch>>),
    Respond(Box<RespondSession>, Box<RespondMeasured>),
    Noise(Box<NoiseSession>, Box<NoiseMeasured>),
}

impl Done {
    /// The run's `until_tail` checks, to finish once its end is recorded.
    fn take_watch(&mut self) -> Option<Box<Watch>> {
        match self {
            Done::Timer(_, _, w) => w.take(),
            Done::Respond(..) | Done::Noise(..) => None,
        }
    }

    fn interrupted(&self) -> bool {
        match self {
            Done::Timer(_, m, _) => m.interrupted(),
            Done::Respond(_, m) => m.interrupted(),
            Done::Noise(_, m) => m.interrupted(),
        }
    }

    /// The signal that ended the run early (a closed output counts as SIGPIPE).
    fn signal(&self) -> Option<i32> {
        match self {
            Done::Timer(_, m, _) => m.signal.or(m.output_error.as_ref().map(|_| libc::SIGPIPE)),
            Done::Respond(_, m) => m.outcome.signal,
            Done::Noise(_, m) => m.outcome.signal,
        }
    }

    fn limits_failed(&self) -> bool {
        match self {
            Done::Timer(_, m, _) => m.limits_failed(),
            Done::Respond(_, m) => m.limits_failed(),
            Done::Noise(_, m) => m.limits_failed(),
        }
    }

    /// A failure during a respond run (the rows cover the part that ran).
    fn run_error(&self) -> Option<&str> {
        match self {
            Done::Timer(..) | Done::Noise(..) => None,
            Done::Respond(_, m) => m.outcome.error.as_deref(),
        }
    }

    /// Whether the run was filed into the campaign when it started (a timer run is recorded
    /// and a noise run are recorded from their start; a respond run at its end).
    fn filed_at_start(&self) -> bool {
        matches!(self, Done::Timer(..) | Done::Noise(..))
    }

    fn run_id(&self) -> Option<RunId> {
        match self {
            Done::Timer(s, _, _) => s.run_id(),
            Done::Respond(s, _) => s.run_id(),
            Done::Noise(s, _) => s.run_id(),
        }
    }

    fn finish(&mut self, code: i32) -> RecordOutcome {
        match self {
            Done::Timer(s, m, _) => s.finish(m, code),
            Done::Respond(s, m) => s.finish(m, code, respond_config_json(&m.outcome.rows)),
            Done::Noise(s, m) => s.finish(m, code),
        }
    }

    /// The result line's head: `[3] label: N samples, …` or `[3] label: N eventfd events, …`.
    fn head(&self, number: usize, p: &PlannedRun) -> String {
        match self {
            Done::Timer(_, m, _) => timer_head(number, p, &m.result),
            Done::Respond(_, m) => respond_head(number, p, &m.outcome.rows),
            Done::Noise(_, m) => noise_head(number, p, &m.rows),
        }
    }
}

/// A timer run: the session started (and filed into the campaign), driven with the progress
/// and, under `until_tail`, its checks (their lines to `out`).
fn timer(
    ctx: &mut Ctx,
    (p, number): (&PlannedRun, usize),
    settings: SystemSettings,
    spec: RecordSpec,
    (loads, out): (Option<&rtscope_load::RunningLoads>, &mut dyn Write),
) -> Result<Done, RunError> {
    let recorded = Recorded {
        store: Some(record::open(&ctx.db)?),
        spec,
        checkpoint_period: Duration::ZERO,
    };
    let mut session = Session::start(p.plan.clone(), settings, recorded)?;
    if let Some(off) = &p.plan.explain_off {
        rtscope_common::error::warn(&format!("[{number}] explain: off — {off}"));
    }
    if let Some(l) = loads {
        // The shepherd is rtscope's; the loads it started keep their CPUs.
        session.pin_helper(l.shepherd_pid());
    }
    if let Some(id) = session.run_id() {
        add_to_campaign(ctx, p, id)?;
    }
    let what = format!(
        "{} / {} / repeat {} of {}",
        p.scenario, p.case, p.repeat, p.repeats
    );
    let cur = Current {
        number,
        what: &what,
        estimate: super::expand::estimate(p).saturating_sub(Duration::from_nanos(p.settle.0)),
        started: ctx.clock.now(),
    };
    let mut watch = p
        .until_tail
        .zip(session.run_id())
        .map(|(u, id)| Box::new(Watch::new(ctx.db.clone(), id, u)));
    let progress = &mut ctx.progress;
    let measured = session.drive(TICK, &mut |run: &Run, ev| {
        if ev != Event::Tick {
            return Ok(());
        }
        if let Some(line) = watch.as_mut().and_then(|w| w.tick(run)) {
            progress.clear();
            // The campaign's output is guarded: a closed stdout loses text, never the run.
            let _ = writeln!(out, "[{number}] {}: {line}", p.label).and_then(|()| out.flush());
        }
        // A failing terminal is silence, never the end of the run.
        let _ = progress.update(&cur, run);
        Ok(())
    })?;
    ctx.progress.clear();
    Ok(Done::Timer(Box::new(session), Box::new(measured), watch))
}

/// A respond run: measured to its length or the first stop signal, recorded at its end.
fn respond(
    ctx: &mut Ctx,
    p: &PlannedRun,
    settings: SystemSettings,
    mut spec: RecordSpec,
) -> Result<Done, RunError> {
    spec.kind = rtscope_store::RunKind::Respond;
    let store = Some(record::open(&ctx.db)?);
    let mut session = RespondSession::start(p.plan.clone(), settings, store, spec)?;
    let measured = session
        .drive(&mut |_| Ok(()))
        .map_err(|e| UsageError::new(format!("run {}: {e}", p.label)))?;
    Ok(Done::Respond(Box::new(session), Box::new(measured)))
}

/// A noise run: the loops started (the run recorded from its start and filed into the
/// campaign), measured to its length or the first stop signal.
fn noise(
    ctx: &mut Ctx,
    (p, number): (&PlannedRun, usize),
    settings: SystemSettings,
    mut spec: RecordSpec,
) -> Result<Done, RunError> {
    spec.kind = rtscope_store::RunKind::Noise;
    let store = Some(record::open(&ctx.db)?);
    let mut session = NoiseSession::start(p.plan.clone(), settings, store, spec)
        .map_err(|e| UsageError::new(format!("run {}: {e}", p.label)))?;
    if let Some(off) = &p.plan.explain_off {
        rtscope_common::error::warn(&format!("[{number}] explain: off — {off}"));
    }
    for note in session.notes(rtscope_session::field::Naming::Keys) {
        rtscope_common::error::warn(&format!("[{number}] {note}"));
    }
    if let Some(id) = session.run_id() {
        add_to_campaign(ctx, p, id)?;
    }
    let measured = session.drive(&mut |_| {});
    Ok(Done::Noise(Box::new(session), Box::new(measured)))
}

/// The head of a noise run's result line: over its CPUs, the longest gap, the least time
/// available and the gaps over the threshold.
fn noise_head(number: usize, p: &PlannedRun, rows: &[rtscope_session::noise::CpuNoise]) -> String {
    let max = rows.iter().filter_map(|r| r.max_single_ns).max();
    let available = rows
        .iter()
        .filter_map(|r| r.available_percent)
        .reduce(f64::min);
    let gaps: u64 = rows.iter().map(|r| r.gaps_over_threshold).sum();
    format!(
        "[{number}] {}: noise on {} CPU(s), longest gap {}, available {}, {gaps} gaps over the threshold",
        p.label,
        rows.len(),
        us(max.map(Nanos)),
        available.map_or("unknown".into(), |a| format!("{a:.3}%"))
    )
}

/// A respond run's settings as recorded: its mechanism, placement and counts (the first
/// row's), and what each thread index is.
fn respond_config_json(rows: &[rtscope_respond::record::Row]) -> String {
    let x = rows
        .first()
        .map_or(serde_json::Value::Null, |r| r.extra.clone());
    serde_json::json!({
        "respond": x["mechanism"], "placement": x["placement"],
        "sender_cpu": x["sender_cpu"], "receiver_cpu": x["receiver_cpu"],
        "interval_ns": x["interval_ns"], "burst": x["burst"], "sent": x["sent"],
        "send_failed": x["send_failed"], "lost": x["lost"],
        "rows": rtscope_respond::run::rows_json(rows),
    })
    .to_string()
}

/// Starts the loads of `p`, waits for each to work (crate::load_wait, said when it takes more
/// than a second) and for them to settle: `Ok(Err(end))` when a stop signal came first (the
/// loads are stopped and the run is not measured).
pub(super) fn start_loads(
    ctx: &mut Ctx,
    p: &PlannedRun,
    number: usize,
    out: &mut dyn Write,
) -> Result<Result<Option<rtscope_load::RunningLoads>, RunEnd>, RunError> {
    let mut loads = if p.loads.is_empty() {
        None
    } else {
        Some(rtscope_load::start(&p.loads, &ctx.exe).map_err(|e| {
            UsageError::new(format!("cannot start the loads of run {}: {e}", p.label))
        })?)
    };
    let waited = match loads.as_mut() {
        Some(l) => {
            let names: Vec<String> = p.loads.iter().map(rtscope_load::LoadSpec::name).collect();
            let head = format!("[{number}] {}", p.label);
            let most = Duration::from_nanos(p.load_start.0);
            super::load_wait::wait_for_loads(l, (&names, most), &head, &*ctx.clock, out)?
        }
        None => None,
    };
    let Some(sig) = waited.or_else(|| settle(p.settle, &*ctx.clock)) else {
        return Ok(Ok(loads));
    };
    ctx.signals += 1;
    if let Some(l) = loads {
        stop_loads(ctx, l);
    }
    writeln!(out, "[{number}] {}: interrupted before measuring", p.label)?;
    Ok(Err(RunEnd {
        signal: Some(sig),
        load_failed: false,
        limits_failed: false,
        record_failed: false,
    }))
}

/// The loads that failed (to start, early, or lost their supervisor): a run measured without
/// its load is not "under load".
pub(super) fn failed_loads(reports: &[LoadReport]) -> Vec<String> {
    reports
        .iter()
        .filter(|r| r.status == rtscope_core::LoadStatus::Failed)
        .map(|r| r.name.clone())
        .collect()
}

/// Records the loads' reports with run `id` and tags it when a load failed.
pub(super) fn file_loads(ctx: &mut Ctx, id: RunId, reports: &[LoadReport]) {
    let rows: Vec<LoadRow> = reports.iter().map(load_row).collect();
    if let Err(e) = ctx.store.set_loads(id, &rows) {
        rtscope_common::error::warn(&format!(
            "error: the loads of run {id} could not be recorded: {e}"
        ));
    }
    let failed = failed_loads(reports);
    if !failed.is_empty() {
        let names = failed.join(",");
        if let Err(e) = ctx.store.set_tag(id, LOAD_FAILED_TAG, Some(&names)) {
            rtscope_common::error::warn(&format!("error: run {id} could not be tagged: {e}"));
        }
    }
}

pub(super) fn add_to_campaign(ctx: &mut Ctx, p: &PlannedRun, id: RunId) -> Result<(), UsageError> {
    ctx.store
        .add_campaign_run(
            ctx.cid,
            &CampaignRun {
                seq: p.seq as u32,
                run_id: id,
                scenario: p.scenario.clone(),
                load_case: p.case.clone(),
                repeat: p.repeat,
                status: rtscope_store::RunStatus::Running,
            },
        )
        .map_err(UsageError::from_error)
}

/// Waits `d` for the loads to settle; returns the stop signal that ended the wait early.
pub(super) fn settle(d: Nanos, clock: &dyn Clock) -> Option<i32> {
    let end = clock.now() + Duration::from_nanos(d.0);
    loop {
        let left = end.saturating_duration_since(clock.now());
        if left.is_zero() {
            return None;
        }
        match clock.wait_signal(left.min(Duration::from_millis(200))) {
            Some(s) if rtscope_common::signals::is_stop_signal(s) => return Some(s),
            _ => {}
        }
    }
}

/// Says that a second stop signal ends the loads at once.
fn skipping_grace() {
    rtscope_common::error::warn(
        "rtscope: second stop signal: the loads are killed now, without their grace period",
    );
}

/// The loads' grace period: none once a second signal came (or comes now).
fn grace(ctx: &mut Ctx) -> Duration {
    if let Some(s) = rtscope_common::signals::wait_run_signal(Nanos::ZERO) {
        if rtscope_common::signals::is_stop_signal(s) {
            ctx.signals += 1;
        }
    }
    // A second stop signal may have been taken elsewhere: by the spikes' analysis at the end of
    // the run, which it cut.
    if ctx
        .signals
        .max(rtscope_common::signals::stop_signals_taken())
        >= 2
    {
        Duration::ZERO
    } else {
        LOAD_GRACE
    }
}

/// Stops the loads with the grace period; a SIGINT or SIGTERM meanwhile makes the supervisor
/// SIGKILL them at once (the second Ctrl-C of a campaign).
pub(super) fn stop_loads(ctx: &mut Ctx, loads: rtscope_load::RunningLoads) -> Vec<LoadReport> {
    let grace = grace(ctx);
    if grace.is_zero() {
        skipping_grace();
        return loads.stop(grace);
    }
    let shepherd = loads.shepherd_pid() as libc::pid_t;
    let done = Arc::new(AtomicBool::new(false));
    let watcher = {
        let done = Arc::clone(&done);
        std::thread::spawn(move || {
            while !done.load(Ordering::Acquire) {
                match rtscope_common::signals::wait_run_signal(Nanos::from_ms(20)) {
                    Some(s) if rtscope_common::signals::is_stop_signal(s) => {
                        // The pid is our child's; stop() may reap it just before `done` is
                        // set, and only a wrap-around of the pid space in that window could
                        // make it another's.
                        rtscope_load::sys::kill(shepherd, libc::SIGTERM);
                        skipping_grace();
                        return true;
                    }
                    _ => {}
                }
            }
            false
        })
    };
    let reports = loads.stop(grace);
    done.store(true, Ordering::Release);
    if watcher.join().unwrap_or(false) {
        ctx.signals += 1;
    }
    reports
}

pub(super) fn load_row(r: &LoadReport) -> LoadRow {
    LoadRow {
        name: r.name.clone(),
        spec_json: serde_json::to_string(&r.spec).unwrap_or_default(),
        command_line: r.command_line.clone(),
        status: r.status,
        error: r.error.clone(),
        ran_ns: r.ran_ns,
        metrics: r
            .metrics
            .iter()
            .map(|m| LoadMetric {
                name: m.name.clone(),
                value: m.value,
                unit: m.unit.clone(),
            })
            .collect(),
    }
}

/// The head of a timer run's result line.
fn timer_head(number: usize, p: &PlannedRun, r: &RunResult) -> String {
    let (s, h): (Stats, Histogram) = (r.total_stats(), r.total_histogram());
    format!(
        "[{number}] {}: {} samples, p99 {}, p99.9 {}, max {}, missed {}",
        p.label,
        s.count,
        us(h.value_at_quantile(0.99)),
        us(h.value_at_quantile(0.999)),
        us((s.count > 0).then_some(s.max)),
        s.missed
    )
}

/// The head of a respond run's result line (its first row: one mechanism on one placement).
fn respond_head(number: usize, p: &PlannedRun, rows: &[rtscope_respond::record::Row]) -> String {
    let Some(r) = rows.first() else {
        return format!("[{number}] {}: no events", p.label);
    };
    let h = &r.histogram;
    format!(
        "[{number}] {}: {} {} events, p50 {}, p99 {}, max {}, lost {}",
        p.label,
        r.stats.count,
        r.source,
        us(h.value_at_quantile(0.5)),
        us(h.value_at_quantile(0.99)),
        us(h.max()),
        r.stats.missed
    )
}

/// A run's result line: its head, what each load did, and whether a limit was exceeded.
fn result_line(head: &str, reports: &[LoadReport], failed: bool) -> String {
    let mut line = head.to_string();
    for l in reports {
        let did = l
            .metrics
            .iter()
            .take(2)
            .map(|m| format!("{} {}", rtscope_core::text::count(m.value), m.unit))
            .collect::<Vec<_>>()
            .join(", ");
        line.push_str(&format!("; {} {} ({did})", l.name, l.status));
        if let Some(e) = &l.error {
            line.push_str(&format!(": {e}"));
        }
    }
    if failed {
        line.push_str("; LIMIT EXCEEDED");
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtscope_common::clock::FakeClock;

    #[test]
    fn settling_waits_its_whole_time_in_short_waits_when_no_stop_comes() {
        let clock = FakeClock::new();
        // A user signal (a status request) does not end the settling.
        clock.signal_at(Duration::from_millis(700), libc::SIGUSR1);
        assert_eq!(settle(Nanos::from_ms(1100), &clock), None);
        assert_eq!(clock.elapsed(), Duration::from_millis(1100));
        // Never a wait over 200 ms: a late signal is seen at once, whatever the settle time.
        assert!(clock
            .waits()
            .iter()
            .all(|w| *w <= Duration::from_millis(200)));
        assert_eq!(settle(Nanos::ZERO, &clock), None);
        assert_eq!(clock.elapsed(), Duration::from_millis(1100));
    }

    #[test]
    fn a_stop_signal_ends_the_settling_at_once() {
        let clock = FakeClock::new();
        clock.signal_at(Duration::from_millis(2345), libc::SIGTERM);
        assert_eq!(settle(Nanos::from_secs(30), &clock), Some(libc::SIGTERM));
        assert_eq!(clock.elapsed(), Duration::from_millis(2345));
    }
}
