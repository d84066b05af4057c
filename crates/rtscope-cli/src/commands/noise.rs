//! `rtscope noise`: OS noise on busy-looping CPUs. The flags are lowered once into a typed
//! plan with a noise workload ([`NoiseSpec`]), checked by [`RunPlan::build`] as measure's
//! are; the run goes through the session as measure's and respond's do (the pre-run audit,
//! the settings guard, placement, recording, signals: [`NoiseSession`]); with `--target` it
//! runs on the boards through the fleet. This file prints the table and the JSON (the loop
//! lives in `rtscope-engine::noise`, the summary and record in `rtscope-session::noise`, the
//! table, progress line and document in `rtscope-present::noise`).

use crate::cli::noise::NoiseArgs;
use crate::commands::measure::plan_error;
use crate::commands::{dur, opt_dur};
use rtscope_common::error::{ExitStatus, UsageError};
use rtscope_core::text::short;
use rtscope_core::Nanos;
use rtscope_engine::{sys, CpuSet};
use rtscope_present::noise::json::{document, DocMeta};
use rtscope_present::noise::progress::NoiseProgress;
use rtscope_present::noise::table::{counter_line, table};
use rtscope_present::table::render_checks;
use rtscope_session::noise::{self as noise, NoiseLimit, NoiseLimitError};
use rtscope_session::noise_session::{NoiseMeasured, NoiseSession};
use rtscope_session::output::{Guarded, OutputFile};
use rtscope_session::{field::Naming, plan::WorkloadSpec};
use rtscope_session::{plan::NoiseSpec, plan::PlanSpec, plan::RunPlan, SystemSettings};
use std::io::Write;

/// `--limit` in the words of this command line.
pub fn parse_limit(text: &str) -> Result<NoiseLimit, UsageError> {
    noise::parse_limit(text).map_err(|e: NoiseLimitError| {
        UsageError::new(format!("invalid value for '--limit': {e}")).hint(NoiseLimitError::HINT)
    })
}

/// `--explain DUR|off` (`None`: not given; the plan then explains by default, docs/noise.md).
fn explain(a: &NoiseArgs) -> Result<Option<Nanos>, UsageError> {
    match a.explain.as_deref().map(str::trim) {
        Some("off") if a.explain_keep.is_some() => Err(UsageError::new(
            "--explain-keep keeps explained gaps, and --explain off explains none",
        )
        .hint("drop one of them")),
        Some("off") | None => Ok(None),
        Some(t) => dur(t, "--explain", "us").map(Some),
    }
}

/// Lowers the options into the typed plan spec, with its noise workload: text is parsed here,
/// and only here; [`RunPlan::build`] checks the values as it checks measure's.
pub fn spec(a: &NoiseArgs, online: &CpuSet) -> Result<PlanSpec, UsageError> {
    let cpus = match &a.cpus {
        Some(text) => rtscope_session::cpus::cpu_list(text, online, "--cpus")?,
        None => {
            let allowed = sys::current_affinity().unwrap_or_else(|_| online.clone());
            CpuSet::from_cpus(allowed.iter().filter(|&c| online.contains(c)))
        }
    };
    let workload = NoiseSpec {
        threshold: opt_dur(a.threshold.as_deref(), "--threshold", "us")?,
        preheat: dur(&a.preheat, "--preheat", "ms")?,
        runtime: opt_dur(a.runtime.as_deref(), "--runtime", "us")?,
        period: opt_dur(a.period.as_deref(), "--period", "us")?,
        counter: a.counter,
        gap_capacity: a.gap_capacity,
        keep_gaps: a.keep_gaps,
        limits: a
            .limits
            .iter()
            .map(|l| parse_limit(l))
            .collect::<Result<_, _>>()?,
        irqs_off: a.irqs_off,
        explain_by_default: a.explain.is_none(),
    };
    Ok(PlanSpec {
        cpus: Some(cpus),
        policy: a.threads.sched.policy,
        priority: a.threads.sched.priority_or(95),
        // The loops spin; the plan's timer interval only has to fit in the run.
        interval: rtscope_session::plan::MIN_INTERVAL,
        duration: Some(dur(&a.duration, "--duration", "s")?),
        mlock: !a.threads.no_mlock,
        explain: explain(a)?,
        explain_keep: rtscope_session::plan::explain_keep(a.explain_keep)?,
        housekeeping_cpus: a
            .housekeeping
            .as_deref()
            .map(|t| rtscope_session::cpus::cpu_list(t, online, "--housekeeping"))
            .transpose()?,
        workload: WorkloadSpec::Noise(workload),
        ..PlanSpec::default()
    })
}

/// Checks the whole invocation before anything starts (no database, no loops): the label and
/// tags, then the plan.
pub fn plan(a: &NoiseArgs, online: &CpuSet) -> Result<RunPlan, UsageError> {
    a.rec.check()?;
    RunPlan::build(&spec(a, online)?, online).map_err(plan_error)
}

/// Runs `rtscope noise`. The run is recorded as `measure` records its runs: its row as the
/// loops start, checkpoints while they spin, the end whatever ended them (a closed or full
/// stdout, a second signal, a locked database lose no run).
pub fn run(
    a: &NoiseArgs,
    command_line: Vec<String>,
    out: &mut dyn Write,
) -> anyhow::Result<ExitStatus> {
    if !a.fleet.targets.is_empty() {
        return on_targets(a, &command_line, out);
    }
    // Before any thread starts (the trace reader, the loops): a signal is taken by the run's
    // control (the first stops the loops, another changes nothing) or by nobody.
    rtscope_common::signals::hold_signals();
    let online = sys::online_cpus();
    let plan = plan(a, &online)?;
    if let Some(hw) = plan.workload.noise().and_then(|n| n.hwlat.clone()) {
        return super::noise_hwlat::run(a, &plan, &hw, out);
    }
    if let (Some(why), false) = (&plan.explain_off, a.rec.quiet) {
        rtscope_common::error::warn(&format!("explain: off — {why}"));
    }
    // Before the loops, which the audit would otherwise see.
    let (json_file, store, spec) =
        a.rec
            .prepare(&plan, rtscope_store::RunKind::Noise, command_line)?;
    let settings = SystemSettings::apply(&plan)?;
    let mut session = NoiseSession::start(plan, settings, store, spec).map_err(|e| match e {
        rtscope_session::SessionError::Engine(e) => UsageError::from_error(e).into(),
        e => anyhow::Error::from(e),
    })?;
    announce(a, &session);
    session.announce_analysis(!a.rec.quiet);
    let duration = session
        .plan()
        .workload
        .noise()
        .map_or(Nanos::ZERO, |n| n.config.duration);
    let mut progress = NoiseProgress::new(!a.rec.quiet, duration);
    let m = session.drive(&mut |run| progress.update(run));
    progress.clear();
    // A closed stdout loses the text, never the run nor the exit code.
    let mut out = Guarded::new(out);
    let status = match finish(&m, json_file, &mut out) {
        Ok(status) => out.verdict(status, "the results", " (the run is still recorded)"),
        // The run is recorded all the same, with the exit code it ends with.
        Err(e) => {
            rtscope_common::error::warn(&rtscope_common::error::render(
                e.chain().map(|c| c.to_string()),
            ));
            ExitStatus::Usage
        }
    };
    let rec = session.finish(&m, status.code());
    Ok(super::recorded(rec, status, &mut out))
}

/// `noise --target`: the run on the boards, through the fleet (their runs merged here).
fn on_targets(
    a: &NoiseArgs,
    command_line: &[String],
    out: &mut dyn Write,
) -> anyhow::Result<ExitStatus> {
    if a.rec.no_db || a.rec.json.is_some() {
        return Err(UsageError::new(
            "--json and --no-db cannot be used with --target: the boards' runs are merged into the database here",
        )
        .hint("export the merged runs (rtscope export)")
        .into());
    }
    let db = a.rec.db.as_deref();
    let mut missing = Vec::new();
    crate::commands::fleet::remote(&a.fleet, command_line, None, db, out, &mut missing)
}

/// The run's settings on stderr (unless `-q`), and always the notes on settings rtscope chose
/// or the kernel imposes: a setting is never silent.
fn announce(a: &NoiseArgs, s: &NoiseSession) {
    let (Some(n), Some(run)) = (s.plan().workload.noise(), s.run()) else {
        return;
    };
    let c = &n.config;
    if !a.rec.quiet {
        let hk = s.placement().cpus();
        rtscope_common::error::warn(&format!(
            "noise: CPUs {} for {}, spinning {} of every {}, threshold {}, policy {} priority {}{}",
            CpuSet::from_cpus(c.cpus.iter().copied()),
            short(c.duration),
            short(c.runtime),
            short(c.period),
            short(run.threshold()),
            c.policy.name(),
            c.priority,
            hk.map_or(String::new(), |h| format!(
                ", rtscope's own thread on CPUs {h}"
            )),
        ));
    }
    for note in s.notes(Naming::Flags) {
        rtscope_common::error::warn(&note);
    }
    if !a.rec.quiet {
        if let Some(line) = s.explain_line() {
            rtscope_common::error::warn(&line);
        }
        let auto = a.counter == rtscope_engine::noise::CounterChoice::Auto;
        let not_raw = rtscope_session::noise::run::raw_counter_note(auto, run);
        rtscope_common::error::warn(&counter_line(run, not_raw.as_deref()));
    }
}

/// Prints the table (to stderr when the JSON goes to stdout), writes the JSON, checks the
/// limits; a JSON file that cannot be written is reported and makes the exit code 2.
fn finish(
    m: &NoiseMeasured,
    json_file: Option<OutputFile>,
    out: &mut Guarded<&mut dyn Write>,
) -> anyhow::Result<ExitStatus> {
    let o = &m.outcome;
    let mut status = ExitStatus::of_run(o.signal.is_some(), m.limits_failed());
    let mut text = table(&m.rows, Naming::Flags) + &o.platform.notes();
    // Below a real-time policy every normal thread's time is noise: say so beside the total.
    if let Some(hint) = m.config["policy"]
        .as_str()
        .and_then(|p| noise::policy_hint(p, Naming::Flags))
    {
        text.push_str(&hint);
        text.push('\n');
    }
    if let Some(s) = o.signal {
        text.push_str(&format!(
            "interrupted by {}: the results cover the part that ran\n",
            rtscope_common::signals::signal_name(s)
        ));
    }
    if let Some(cut) = &o.analysis_cut {
        text.push_str(&cut.line());
    }
    if let Some(x) = &o.explained {
        text.push_str(&rtscope_explain::render::summary_of(
            x,
            m.meta.clock_start.0,
            10,
            rtscope_explain::render::Subject::Gaps,
        ));
        text.push_str(&noise::class_line(&x.class_totals()));
        text.push_str(&noise::interference_table(&x.interference));
        text.push_str(&noise::class_histogram_table(&x.class_histograms));
    }
    text.push_str(&render_checks(&m.checks));
    super::print_text(&text, json_file.as_ref(), out)?;
    let Some(file) = json_file else {
        return Ok(status);
    };
    let body = document(
        o,
        &m.rows,
        &DocMeta {
            command_line: &m.meta.command_line,
            config: &m.config,
            clock_start: m.meta.clock_start.0,
            limits: &m.checks,
            // The code the run ends with: a stdout the table was lost on makes it 2.
            exit_code: out.status_after(status).code(),
        },
    )?;
    if let Err(e) = file.write(&body, out, "--json") {
        rtscope_common::error::warn(&e.to_string());
        status = ExitStatus::Usage;
    }
    Ok(status)
}
