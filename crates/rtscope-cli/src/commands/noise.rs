//! `rtscope noise`: OS noise on busy-looping CPUs (the loop lives in `rtscope-engine::noise`,
//! the checks, summary, limits and record in `rtscope-session::noise`; this file parses the
//! flags, drives the run, prints the table and the JSON).

use crate::cli::{NoiseArgs, NoisePolicyArg};
use crate::commands::measure::plan_error;
use rtscope_common::error::{ExitStatus, UsageError};
use rtscope_core::text::short;
use rtscope_core::Nanos;
use rtscope_engine::noise::{NoiseConfig, NoiseRun, Threshold};
use rtscope_engine::{sys, CpuSet, Policy};
use rtscope_session::noise::json::{document, DocMeta};
use rtscope_session::noise::run::{
    config_json, counter_line, drive, raised_threshold_note, render_checks, table, Outcome,
};
use rtscope_session::noise::{
    self as noise, CpuNoise, NoiseExplainer, NoiseLimit, NoiseMeta, NoiseRecorder,
};
use rtscope_session::output::{Guarded, OutputFile};
use rtscope_store::RunStatus;
use std::io::Write;

fn dur(text: &str, flag: &str, unit: &str) -> Result<Nanos, UsageError> {
    Nanos::parse_with_default_unit(text, unit)
        .map_err(|e| UsageError::new(format!("invalid value for '{flag}': {e}")))
}

/// `--explain DUR|off`; by default [`noise::default_explain`] (every gap from the gap
/// threshold where tracefs is usable); where it is not, off with the reason and the fix said at
/// the start (docs/noise.md).
fn explain_threshold(a: &NoiseArgs, c: &NoiseConfig) -> Result<Option<Nanos>, UsageError> {
    match a.explain.as_deref().map(str::trim) {
        Some("off") if a.explain_keep.is_some() => Err(UsageError::new(
            "--explain-keep keeps explained gaps, and --explain off explains none",
        )
        .hint("drop one of them")),
        Some("off") => Ok(None),
        Some(t) => dur(t, "--explain", "us").map(Some),
        None => match noise::default_explain(c) {
            Ok(t) => Ok(Some(t)),
            Err(why) => {
                if !a.quiet {
                    rtscope_common::error::warn(&format!("explain: off — {why}"));
                }
                Ok(None)
            }
        },
    }
}

/// The checked configuration of the run.
fn config(a: &NoiseArgs, online: &CpuSet) -> Result<NoiseConfig, UsageError> {
    let cpus = match &a.cpus {
        Some(text) => rtscope_session::cpus::cpu_list(text, online, "--cpus")?,
        None => {
            let allowed = sys::current_affinity().unwrap_or_else(|_| online.clone());
            CpuSet::from_cpus(allowed.iter().filter(|&c| online.contains(c)))
        }
    };
    let (policy, default_prio) = match a.policy {
        NoisePolicyArg::Other => (Policy::Other, 0),
        NoisePolicyArg::Fifo => (Policy::Fifo, 95),
        NoisePolicyArg::Rr => (Policy::Rr, 95),
    };
    noise::check_sizes(
        a.gap_capacity,
        a.keep_gaps,
        cpus.len(),
        noise::mem_available(std::path::Path::new("/")),
    )?;
    let priority = a.priority.unwrap_or(default_prio);
    rtscope_session::plan::check_priority(policy, priority).map_err(plan_error)?;
    let c = NoiseConfig {
        cpus: cpus.iter().collect(),
        policy,
        priority,
        threshold: match &a.threshold {
            Some(t) => Threshold::Given(dur(t, "--threshold", "us")?),
            None => Threshold::Default(noise::DEFAULT_THRESHOLD),
        },
        preheat: dur(&a.preheat, "--preheat", "ms")?,
        runtime: match &a.runtime {
            Some(t) => dur(t, "--runtime", "us")?,
            None => noise::DEFAULT_RUNTIME,
        },
        period: match &a.period {
            Some(t) => dur(t, "--period", "us")?,
            None => noise::DEFAULT_PERIOD,
        },
        duration: dur(&a.duration, "--duration", "s")?,
        gap_capacity: a.gap_capacity.max(1),
        mlock: !a.no_mlock,
        prefault_stack: 32 * 1024,
        counter: a.counter.into(),
        smi_files: noise::smi_files(std::path::Path::new("/"), &cpus.iter().collect::<Vec<_>>()),
    };
    noise::check(&c, online)?;
    Ok(c)
}

/// Pins the control thread to the housekeeping CPUs: `--housekeeping`, else the online CPUs
/// not measured (none left: it stays where it is). Returns the CPUs it was pinned to.
fn housekeeping(
    a: &NoiseArgs,
    c: &NoiseConfig,
    online: &CpuSet,
) -> Result<Option<CpuSet>, UsageError> {
    let hk = match &a.housekeeping {
        Some(text) => rtscope_session::cpus::cpu_list(text, online, "--housekeeping")?,
        None => CpuSet::from_cpus(online.iter().filter(|cpu| !c.cpus.contains(cpu))),
    };
    if hk.is_empty() {
        return Ok(None);
    }
    sys::set_affinity_current(&hk).map_err(|e| {
        UsageError::new(format!(
            "cannot pin rtscope's control thread to CPUs {hk}: {e}"
        ))
    })?;
    Ok(Some(hk))
}

/// Runs `rtscope noise`. The run is recorded as `measure` records its runs: its row as the
/// loops start, checkpoints while they spin, the end whatever ended them (a closed or full
/// stdout, a second signal, a locked database lose no run).
pub fn run(
    a: &NoiseArgs,
    command_line: Vec<String>,
    out: &mut dyn Write,
) -> anyhow::Result<ExitStatus> {
    // Before any thread starts (the trace reader, the loops): a signal is taken by the run's
    // control (the first stops the loops, another changes nothing) or by nobody.
    rtscope_common::signals::hold_signals();
    let online = sys::online_cpus();
    let c = config(a, &online)?;
    if a.irqs_off {
        return super::noise_hwlat::run(a, &c, out);
    }
    a.rec.check()?;
    let keep = rtscope_session::plan::explain_keep(a.explain_keep)?;
    let limits: Vec<NoiseLimit> = a
        .limits
        .iter()
        .map(|l| noise::parse_limit(l))
        .collect::<Result<_, _>>()?;
    let tags = a.rec.tag_pairs()?;
    let store = a.rec.open_store()?;
    let json_file = OutputFile::prepare_given(a.json.as_deref(), "--json")?;
    let hk = housekeeping(a, &c, &online)?;
    if let Some(note) = noise::rt_throttle_note(&c, std::path::Path::new("/")) {
        rtscope_common::error::warn(&note);
    }
    let explain =
        explain_threshold(a, &c)?.map(|t| NoiseExplainer::start(t, &c.cpus, hk.as_ref(), keep));
    if let (Some(x), false) = (&explain, a.quiet) {
        rtscope_common::error::warn(&x.tier_line());
    }
    let run = NoiseRun::start(c.clone()).map_err(UsageError::from_error)?;
    let config = config_json(&run, a.keep_gaps);
    let mut meta = NoiseMeta {
        label: a.rec.label.clone(),
        tags,
        command_line,
        config_json: config.to_string(),
        started: run.started(),
        ended: run.started(),
        clock_start: run.clock_start(),
        policy: c.policy.name(),
        priority: c.priority,
        period: c.period,
    };
    let mut recorder = store
        .map(|s| NoiseRecorder::begin(s, &meta, &c.cpus, a.keep_gaps))
        .transpose()?;
    announce(a, &c, &run, hk.as_ref());
    let o = drive(run, explain, a.keep_gaps, recorder.as_mut());
    meta.ended = o.ended;
    // The store keeps the steal time and SMIs of the run with its settings.
    let mut stored = config.clone();
    stored["platform"] = o.platform.stored(&c.cpus);
    meta.config_json = stored.to_string();
    // A closed stdout loses the text, never the run nor the exit code.
    let mut out = Guarded::new(out);
    let status = match finish(&config, &limits, &o, &meta, json_file, &mut out) {
        Ok(status) => out.verdict(status, "the results", " (the run is still recorded)"),
        // The run is recorded all the same, with the exit code it ends with.
        Err(e) => {
            rtscope_common::error::warn(&rtscope_common::error::render(
                e.chain().map(|c| c.to_string()),
            ));
            ExitStatus::Usage
        }
    };
    Ok(match recorder {
        Some(r) => save(r, &meta, &o, status, &mut out),
        None => status,
    })
}

/// The run's settings on stderr (unless `-q`), and always the note that the default threshold
/// was raised: a setting rtscope chose is never silent.
fn announce(a: &NoiseArgs, c: &NoiseConfig, run: &NoiseRun, hk: Option<&CpuSet>) {
    if !a.quiet {
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
    if let Some(note) = raised_threshold_note(c, run.threshold(), run.resolutions()) {
        rtscope_common::error::warn(&note);
    }
    if !a.quiet {
        rtscope_common::error::warn(&counter_line(
            a.counter == crate::cli::CounterArg::Auto,
            run,
        ));
    }
}

/// Prints the table (to stderr when the JSON goes to stdout), writes the JSON, checks the
/// limits; a JSON file that cannot be written is reported and makes the exit code 2.
fn finish(
    config: &serde_json::Value,
    limits: &[NoiseLimit],
    o: &Outcome,
    meta: &NoiseMeta,
    json_file: Option<OutputFile>,
    out: &mut Guarded<&mut dyn Write>,
) -> anyhow::Result<ExitStatus> {
    let rows: Vec<CpuNoise> = o.rows();
    let checks = noise::check_limits(limits, &rows);
    let mut status = ExitStatus::of_run(o.signal.is_some(), checks.iter().any(|c| !c.passed));
    let mut text = table(&rows) + &o.platform.notes();
    if let Some(s) = o.signal {
        text.push_str(&format!(
            "interrupted by {}: the results cover the part that ran\n",
            rtscope_common::signals::signal_name(s)
        ));
    }
    if let Some(x) = &o.explained {
        text.push_str(&rtscope_explain::render::summary_of(
            x,
            meta.clock_start.0,
            10,
            rtscope_explain::render::Subject::Gaps,
        ));
        text.push_str(&noise::class_line(&x.class_totals()));
        text.push_str(&noise::interference_table(&x.interference));
        text.push_str(&noise::class_histogram_table(&x.class_histograms));
    }
    text.push_str(&render_checks(&checks));
    let Some(file) = json_file else {
        out.write_all(text.as_bytes())?;
        out.flush()?;
        return Ok(status);
    };
    if file.is_stdout() {
        rtscope_common::error::warn(text.trim_end());
    } else {
        out.write_all(text.as_bytes())?;
        out.flush()?;
    }
    let body = document(
        o,
        &rows,
        &DocMeta {
            command_line: &meta.command_line,
            config,
            clock_start: meta.clock_start.0,
            limits: &checks,
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

/// Writes the end of the recorded run; a database failure is reported and turns the exit
/// code into 2.
fn save(
    recorder: NoiseRecorder,
    meta: &NoiseMeta,
    o: &Outcome,
    status: ExitStatus,
    out: &mut dyn Write,
) -> ExitStatus {
    let run_status = if o.signal.is_some() {
        RunStatus::Interrupted
    } else {
        RunStatus::Complete
    };
    let path = recorder.path().to_path_buf();
    match recorder.finish(
        meta,
        &o.threads,
        &o.gaps,
        o.explained.as_ref(),
        (run_status, status.code()),
    ) {
        Ok(id) => {
            let _ = writeln!(out, "recorded as run {id} in {}", path.display());
            let _ = out.flush();
            status
        }
        Err(e) => {
            rtscope_common::error::warn(&format!("error: {e}"));
            ExitStatus::Usage
        }
    }
}
