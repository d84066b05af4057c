//! `rtscope measure`: the native front end. Its options become a [`PlanSpec`]; the run is a
//! [`Session`]; this module prints the headline (rtscope-present's), the progress line, the table and the JSON.

pub mod ci;
pub mod metrics;

use crate::cli::measure::MeasureArgs;
use crate::commands::{dur, opt_dur};
use rtscope_common::error::{ExitStatus, UsageError};
use rtscope_common::limits;
use rtscope_core::{Nanos, Stats};
use rtscope_engine::{sys, CpuSet, Run};
use rtscope_present::{measure_json as json, table};
use rtscope_session::cpus::cpu_list;
use rtscope_session::output::{Guarded, OutputFile};
use rtscope_session::record::RecordSpec;
use rtscope_trace::tracefs::StackChoice;

use rtscope_session::{
    field::Naming, plan::ConfigDoc, plan::PlanError, plan::PlanSpec, plan::RunPlan, Event,
    Measured, Recorded, Session, SystemSettings,
};
use std::io::{IsTerminal, Write};

/// A plan error in the command line's words.
pub fn plan_error(e: PlanError) -> UsageError {
    e.usage(Naming::Flags)
}

/// Lowers the options into the typed plan spec: text is parsed here, and only here.
pub fn spec(a: &MeasureArgs, online: &CpuSet) -> Result<PlanSpec, UsageError> {
    Ok(PlanSpec {
        cpus: a
            .cpus
            .as_deref()
            .map(|t| cpu_list(t, online, "--cpus"))
            .transpose()?,
        threads: a.threads,
        policy: a.sched.policy,
        priority: a.sched.priority_or(90),
        priospread: a.priospread,
        dl_runtime: opt_dur(a.dl_runtime.as_deref(), "--dl-runtime", "us")?,
        dl_deadline: opt_dur(a.dl_deadline.as_deref(), "--dl-deadline", "us")?,
        dl_period: opt_dur(a.dl_period.as_deref(), "--dl-period", "us")?,
        interval: dur(&a.interval, "--interval", "us")?,
        distance: dur(&a.distance, "--distance", "us")?,
        duration: opt_dur(a.duration.as_deref(), "--duration", "s")?,
        loops: a.loops,
        clock: a.clock,
        relative: a.relative,
        mlock: !a.no_mlock,
        latency: a.latency,
        event_above: opt_dur(a.event_above.as_deref(), "--event-above", "us")?,
        event_capacity: a.event_capacity,
        housekeeping_prio: match a.housekeeping_prio.as_str() {
            "off" => None,
            p => Some(
                p.parse()
                    .ok()
                    .filter(|p| (1..=98).contains(p))
                    .ok_or_else(|| {
                        UsageError::new(format!("--housekeeping-prio: '{p}' is not 1-98 or 'off'"))
                    })?,
            ),
        },
        explain: opt_dur(a.explain.as_deref(), "--explain", "us")?,
        explain_keep: rtscope_session::plan::explain_keep(a.explain_keep)?,
        // Off unless asked for: the late-only stacks cost a prompt wake-up (docs/explain.md);
        // the tier line says "kernel stacks off".
        explain_stacks: a.explain_stacks.unwrap_or(StackChoice::Off),
        // The flight recorder's source (tracefs unless asked): the tier line names the one that ran.
        explain_recorder: a.explain_recorder.unwrap_or_default(),
        explain_off: None,
        housekeeping_cpus: a
            .housekeeping
            .as_deref()
            .map(|t| cpu_list(t, online, "--housekeeping"))
            .transpose()?,
        raw: a.raw,
        limits: a
            .limits
            .iter()
            .map(|l| limits::parse(l))
            .collect::<Result<Vec<_>, _>>()?,
        workload: rtscope_session::plan::WorkloadSpec::Timer,
    })
}

/// Validates the options and builds the run plan.
pub fn plan(a: &MeasureArgs, online: &CpuSet) -> Result<RunPlan, UsageError> {
    RunPlan::build(&spec(a, online)?, online).map_err(plan_error)
}

/// `measure`'s arguments lowered once, at the top: every option parsed and every file
/// opened or checked before anything is set or started; the run reads only this.
struct Lowered {
    plan: RunPlan,
    /// The control loop's tick (`--series-interval`).
    tick: Nanos,
    json_file: Option<OutputFile>,
    store: Option<rtscope_store::Store>,
    textfile: Option<rtscope_formats::metrics_file::MetricsFile>,
    /// What records the run (the audit's rows are added once it ran).
    record: RecordSpec,
    quiet: bool,
}

impl Lowered {
    fn of(a: &MeasureArgs, command_line: &[String]) -> anyhow::Result<Lowered> {
        let online = sys::online_cpus();
        let plan = plan(a, &online)?;
        a.rec.check()?;
        let tick = series_interval(a)?;
        let monitor_interval = monitor_interval(&a.monitor_interval, "--monitor-interval")?;
        let textfile = metrics_file(a)?;
        // Before the cpu_dma_latency request and the threads, which the audit would otherwise
        // see.
        let kind = rtscope_store::RunKind::Measure;
        let (json_file, store, mut record) = a.rec.prepare(&plan, kind, command_line.to_vec())?;
        record.config_json = serde_json::to_string(&ConfigDoc::of(&plan))?;
        record.monitor_interval = monitor_interval;
        record.raw = a.raw;
        Ok(Lowered {
            plan,
            tick,
            json_file,
            store,
            textfile,
            record,
            quiet: a.rec.quiet,
        })
    }
}

/// Runs `rtscope measure`; with `--target`, the boards that recorded no run are added to
/// `missing`.
pub fn run(
    a: &MeasureArgs,
    command_line: Vec<String>,
    out: &mut dyn Write,
    missing: &mut Vec<rtscope_formats::missing::MissingBoard>,
) -> anyhow::Result<ExitStatus> {
    if !a.fleet.targets.is_empty() {
        return on_targets(a, &command_line, out, missing);
    }
    // Before any thread starts: a signal is taken by the control loop or by nobody.
    rtscope_common::signals::hold_signals();
    let Lowered {
        plan,
        tick,
        json_file,
        store,
        mut textfile,
        record,
        quiet,
    } = Lowered::of(a, &command_line)?;
    let settings = SystemSettings::apply(&plan)?;
    // A closed stdout (`| head -1`) loses the text, never the run nor the exit code.
    let mut streams = Streams {
        json_on_stdout: json_file.as_ref().is_some_and(OutputFile::is_stdout),
        stdout: Guarded::new(out),
        stderr: Guarded::new(std::io::stderr()),
    };
    writeln!(streams.human(), "{}", table::headline(&plan))?;
    streams.human().flush()?;
    let recorded = Recorded {
        store,
        spec: record,
        checkpoint_period: std::time::Duration::ZERO,
    };
    let mut session = Session::start(plan, settings, recorded)?;
    rtscope_common::error::warn(&format!("rtscope: {}", session.placement_line()));
    if let Some(line) = session.explain_line() {
        rtscope_common::error::warn(&format!("rtscope: {line}"));
    }
    let mut progress = Progress::new(!quiet, session.plan().config.duration);
    let measured = session.drive(tick, &mut |run: &Run, ev| {
        if let (Some(m), Event::Tick) = (textfile.as_mut(), ev) {
            metrics::update(m, run);
        }
        progress.update(run, ev);
        Ok(())
    })?;
    progress.clear();
    if let Some(m) = textfile.as_mut() {
        metrics::finish(m, &measured.result, measured.signal.is_some());
    }
    conclude(&mut session, &measured, command_line, json_file, streams)
}

/// `measure --target`: the run on the boards, through the fleet.
fn on_targets(
    a: &MeasureArgs,
    command_line: &[String],
    out: &mut dyn Write,
    missing: &mut Vec<rtscope_formats::missing::MissingBoard>,
) -> anyhow::Result<ExitStatus> {
    if a.metrics_file.is_some() || a.rec.no_db || a.rec.json.is_some() {
        return Err(crate::usage(
            "--metrics-file, --json and --no-db cannot be used with --target: export the merged runs",
        ));
    }
    let db = a.rec.db.as_deref();
    crate::commands::fleet::remote(&a.fleet, command_line, None, db, out, missing)
}

/// `--metrics-file`, checked before the run.
fn metrics_file(
    a: &MeasureArgs,
) -> Result<Option<rtscope_formats::metrics_file::MetricsFile>, UsageError> {
    a.metrics_file
        .as_deref()
        .map(|p| {
            rtscope_formats::metrics_file::MetricsFile::new(
                p,
                &a.rec.tags,
                a.rec.label.as_deref(),
                &a.limits,
            )
        })
        .transpose()
        .map_err(|e| UsageError::new(format!("--metrics-file: {e}")))
}

/// Where the human text goes: stdout, or stderr when the JSON goes to stdout.
struct Streams<'o> {
    stdout: Guarded<&'o mut dyn Write>,
    stderr: Guarded<std::io::Stderr>,
    json_on_stdout: bool,
}

impl Streams<'_> {
    fn human(&mut self) -> &mut dyn Write {
        if self.json_on_stdout {
            &mut self.stderr
        } else {
            &mut self.stdout
        }
    }
}

/// After the run: the table, the JSON, the record's end and the exit status. A failure to
/// write what the user asked for (other than a closed pipe) is never a success.
fn conclude(
    session: &mut Session,
    measured: &Measured,
    command_line: Vec<String>,
    json_file: Option<OutputFile>,
    mut streams: Streams,
) -> anyhow::Result<ExitStatus> {
    let placed = session.placement().doc(session.plan().explain.is_some());
    let (mut status, text, json) = report(
        session.plan(),
        measured,
        command_line,
        json_file.is_some().then_some(placed),
    )?;
    streams.human().write_all(text.as_bytes())?;
    streams.human().flush()?;
    if let (Some(file), Some(body)) = (json_file, json) {
        if let Err(e) = file.write(body.as_bytes(), &mut streams.stdout, "--json") {
            rtscope_common::error::warn(&e.to_string());
            status = ExitStatus::Usage;
        }
    }
    // A closed pipe is the reader's choice; any other failure (a full disk, /dev/full, EIO)
    // lost the results the user asked for: not a success (issue 26, N11).
    let status = streams
        .stdout
        .verdict(status, "the results", " (the run is still recorded)");
    let rec = session.finish(measured, status.code());
    match rec.line {
        Some(line) if rec.failed => rtscope_common::error::warn(&line),
        Some(line) => writeln!(streams.human(), "{line}")?,
        None => {}
    }
    Ok(if rec.failed {
        ExitStatus::Usage
    } else {
        status
    })
}

fn series_interval(a: &MeasureArgs) -> Result<Nanos, UsageError> {
    let d = dur(&a.series_interval, "--series-interval", "s")?;
    if d < Nanos::from_ms(10) || d > Nanos::from_secs(1) {
        return Err(UsageError::new(format!("invalid value '{}' for '--series-interval': use 10ms..1s (checkpoints are written at least once a second)", a.series_interval)));
    }
    Ok(d)
}

/// Parses a monitor interval: `0` turns monitors off; otherwise 100ms..1h.
pub fn monitor_interval(text: &str, flag: &str) -> Result<Option<std::time::Duration>, UsageError> {
    let d = dur(text, flag, "s")?;
    if d.0 == 0 {
        return Ok(None);
    }
    if d < Nanos::from_ms(100) || d > Nanos::from_secs(3600) {
        return Err(UsageError::new(format!(
            "invalid value '{text}' for '{flag}': use 100ms..1h, or 0 to turn the monitors off"
        )));
    }
    Ok(Some(std::time::Duration::from_nanos(d.0)))
}

/// The exit status, the table (with the interruption line and the limit checks) and the JSON
/// document when asked for; nothing is written here.
fn report(
    plan: &RunPlan,
    m: &Measured,
    command_line: Vec<String>,
    json_with: Option<rtscope_session::placement::PlacementDoc>,
) -> anyhow::Result<(ExitStatus, String, Option<String>)> {
    let (r, signal, checks) = (&m.result, m.signal, &m.checks);
    let total_stats = r.total_stats();
    let total_hist = r.total_histogram();
    let failed = checks.iter().any(|c| !c.passed);
    let status = if failed {
        ExitStatus::LimitExceeded
    } else if m.interrupted() {
        ExitStatus::Interrupted
    } else {
        ExitStatus::Success
    };
    let mut text = table::of_run(r, &total_stats, &total_hist);
    let cut_by = signal
        .map(rtscope_common::signals::signal_name)
        .or_else(|| {
            m.output_error
                .as_ref()
                .map(|e| format!("an output error ({e})"))
        });
    if let Some(by) = &cut_by {
        text.push_str(&format!(
            "interrupted by {by} after {:.3}s: the results cover the part that ran\n",
            r.ended
                .duration_since(r.started)
                .unwrap_or_default()
                .as_secs_f64()
        ));
    }
    if total_stats.count == 0 && !checks.is_empty() {
        text.push_str("no samples: every limit fails\n");
    }
    text.push_str(&table::render_checks(checks));
    if let Some(x) = &m.explain {
        text.push('\n');
        text.push_str(&rtscope_explain::render::summary(x, r.clock_start.0, 10));
    }
    let json = if let Some(placed) = json_with {
        let mut doc = json::document(
            plan,
            r,
            signal,
            status.code(),
            command_line,
            checks,
            &total_stats,
            &total_hist,
        );
        doc.explain = m.explain.clone();
        doc.housekeeping = Some(placed);
        Some(serde_json::to_string_pretty(&doc)? + "\n")
    } else {
        None
    };
    Ok((status, text, json))
}

/// The progress line on a terminal (stderr), or a status line a minute in logs.
struct Progress {
    enabled: bool,
    tty: bool,
    duration: Option<Nanos>,
    ticks: u64,
    shown: bool,
}

impl Progress {
    fn new(enabled: bool, duration: Option<Nanos>) -> Self {
        Progress {
            enabled,
            tty: std::io::stderr().is_terminal(),
            duration,
            ticks: 0,
            shown: false,
        }
    }

    /// Shows the progress; a failing stderr is silence, never the end of the run.
    fn update(&mut self, run: &Run, ev: Event) {
        if !self.enabled || ev != Event::Tick {
            return;
        }
        self.ticks += 1;
        if !self.tty && self.ticks % 60 != 0 {
            return;
        }
        let s = run
            .threads()
            .iter()
            .fold(Stats::default(), |acc, t| acc.merge(&t.stats()));
        let total = self
            .duration
            .map_or(String::new(), |d| format!("/{:.0}s", d.as_secs_f64()));
        let line = format!(
            "[{}s{total}] samples {} max {} missed {}",
            self.ticks, s.count, s.max, s.missed
        );
        let mut e = std::io::stderr();
        let r = if self.tty {
            self.shown = true;
            write!(e, "\r\x1b[2K{line}")
        } else {
            writeln!(e, "{line}")
        };
        if r.and_then(|()| e.flush()).is_err() {
            self.enabled = false;
        }
    }

    fn clear(&mut self) {
        if self.shown {
            let _ = write!(std::io::stderr(), "\r\x1b[2K");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `measure`'s arguments as clap parses them, or its error.
    fn parse(args: &[&str]) -> Result<MeasureArgs, clap::Error> {
        let all = [&["rtscope", "measure"][..], args].concat();
        match <crate::cli::Cli as clap::Parser>::try_parse_from(all)?.command {
            crate::cli::Command::Measure(a) => Ok(*a),
            c => panic!("{c:?}"),
        }
    }

    fn stacks(args: &[&str]) -> StackChoice {
        let a = parse(args).unwrap_or_else(|e| panic!("{args:?}: {e}"));
        let online = CpuSet::from_cpus([0, 1]);
        spec(&a, &online).unwrap().explain_stacks
    }

    #[test]
    fn explain_stacks_is_parsed_into_the_trace_crates_choice_and_is_off_unless_asked() {
        assert_eq!(stacks(&[]), StackChoice::Off);
        assert_eq!(stacks(&["--explain", "100us"]), StackChoice::Off);
        for (word, choice) in [
            ("auto", StackChoice::Auto),
            ("on", StackChoice::On),
            ("off", StackChoice::Off),
        ] {
            let args = ["--explain", "100us", "--explain-stacks", word];
            assert_eq!(stacks(&args), choice, "{word}");
        }
    }

    #[test]
    fn a_bad_explain_stacks_value_is_a_usage_error_naming_the_accepted_ones() {
        // `every` is noise's choice alone: measure does not offer it.
        for bad in ["bogus", "every", "ON"] {
            let e = parse(&["--explain", "100us", "--explain-stacks", bad]).unwrap_err();
            assert_eq!(e.kind(), clap::error::ErrorKind::InvalidValue, "{bad}");
            assert_eq!(e.exit_code(), 2, "{bad}");
            let text = e.to_string();
            assert!(
                text.contains(&format!("invalid value '{bad}' for '--explain-stacks"))
                    && text.contains("[possible values: auto, on, off]"),
                "{text}"
            );
        }
    }

    #[test]
    fn explain_recorder_is_parsed_needs_explain_and_names_the_accepted_ones() {
        use rtscope_trace::explain::RecorderChoice;
        let recorder = |args: &[&str]| parse(args).unwrap().explain_recorder;
        assert_eq!(recorder(&["--explain", "100us"]), None);
        let a = parse(&["--explain", "100us"]).unwrap();
        let online = CpuSet::from_cpus([0, 1]);
        let planned = spec(&a, &online).unwrap().explain_recorder;
        assert_eq!(planned, RecorderChoice::Tracefs, "tracefs unless asked");
        for (word, choice) in [
            ("tracefs", RecorderChoice::Tracefs),
            ("ebpf", RecorderChoice::Bpf),
            ("auto", RecorderChoice::Auto),
        ] {
            let args = ["--explain", "100us", "--explain-recorder", word];
            assert_eq!(recorder(&args), Some(choice), "{word}");
            let a = parse(&args).unwrap();
            let online = CpuSet::from_cpus([0, 1]);
            let planned = spec(&a, &online).unwrap().explain_recorder;
            assert_eq!(planned, choice, "the plan carries {word}");
        }
        let e = parse(&["--explain-recorder", "ebpf"]).unwrap_err();
        assert_eq!(e.kind(), clap::error::ErrorKind::MissingRequiredArgument);
        let e = parse(&["--explain", "100us", "--explain-recorder", "bpf"]).unwrap_err();
        assert!(
            e.to_string()
                .contains("[possible values: tracefs, ebpf, auto]"),
            "{e}"
        );
    }
}
