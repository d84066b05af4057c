//! `rtscope respond`: event response latency of IPC mechanisms and GPIO edges. The flags are
//! lowered once into a typed plan with a respond workload ([`RespondSpec`]), checked by
//! [`RunPlan::build`] as measure's are; the run goes through the session as measure's does
//! (the pre-run audit, the settings guard, limits, recording, signals: [`RespondSession`]);
//! this file prints the table and the JSON (the measuring lives in `rtscope-respond`).

use crate::cli::respond::RespondArgs;
use crate::commands::measure::plan_error;
use crate::commands::{dur, opt_dur};
use rtscope_common::error::{ExitStatus, UsageError};
use rtscope_common::limits::{self, Check};
use rtscope_core::Nanos;
use rtscope_engine::{sys, CpuSet};
use rtscope_present::respond_json;
use rtscope_present::table::render_checks;
use rtscope_respond::gpio::{self, GpioConfig, LineId, Responder};
use rtscope_respond::ipc::{IpcKind, Placement};
use rtscope_respond::record::Row;
use rtscope_respond::run as respond;
use rtscope_session::output::OutputFile;
use rtscope_session::{plan::PlanSpec, plan::RunPlan, plan::WorkloadSpec, SessionError};
use rtscope_session::{plan::RespondSpec, RespondMeasured, RespondSession, SystemSettings};
use serde_json::json;
use std::io::Write;

/// Lowers the options into the typed plan spec, with its respond workload: text is parsed
/// here, and only here; [`RunPlan::build`] checks the values as it checks measure's.
pub fn spec(a: &RespondArgs, online: &CpuSet) -> Result<PlanSpec, UsageError> {
    let workload = workload(a, online)?;
    let gpio = matches!(workload, RespondSpec::Gpio { .. });
    let default_interval = if gpio { "10ms" } else { "1ms" };
    let duration = opt_dur(a.duration.as_deref(), "--duration", "s")?;
    Ok(PlanSpec {
        threads: Some(1),
        policy: a.threads.sched.policy,
        priority: a.threads.sched.priority_or(95),
        interval: dur(
            a.interval.as_deref().unwrap_or(default_interval),
            "--interval",
            "us",
        )?,
        duration: match (duration, a.loops) {
            (None, None) => Some(Nanos::from_secs(10)),
            (d, _) => d,
        },
        loops: a.loops,
        mlock: !a.threads.no_mlock,
        latency: a.latency,
        event_above: opt_dur(a.event_above.as_deref(), "--event-above", "us")?,
        event_capacity: 10_000,
        limits: a
            .limits
            .iter()
            .map(|l| limits::parse(l))
            .collect::<Result<_, _>>()?,
        workload: WorkloadSpec::Respond(workload),
        ..PlanSpec::default()
    })
}

/// Checks that `cpu`, given to `flag`, is online and one this process may run on.
fn check_cpu(cpu: usize, flag: &str, online: &CpuSet) -> Result<(), UsageError> {
    rtscope_session::cpus::cpu_list(&cpu.to_string(), online, flag)?;
    check_affinity(cpu, flag)
}

fn check_affinity(cpu: usize, flag: &str) -> Result<(), UsageError> {
    match sys::current_affinity() {
        Ok(allowed) if !allowed.contains(cpu) => Err(UsageError::new(format!(
            "invalid value for '{flag}': CPU {cpu} is outside this process's CPU affinity ({allowed})"
        ))
        .hint("pick one of those CPUs, or widen the affinity (taskset, cpuset)")),
        _ => Ok(()),
    }
}

fn placements(a: &RespondArgs, online: &CpuSet) -> Result<Vec<Placement>, UsageError> {
    let allowed: Vec<usize> = sys::current_affinity()
        .map(|s| s.iter().collect())
        .unwrap_or_else(|_| vec![0]);
    if let Some(cpu) = a.cpu {
        check_cpu(cpu, "--cpu", online)?;
    }
    let list =
        rtscope_respond::ipc::parse_placements(&a.placement, a.cpu, &allowed).map_err(|e| {
            UsageError::new(e.to_string())
                .hint("use same, cross or SENDER:RECEIVER CPUs such as 0:1")
        })?;
    for p in &list {
        // A CPU that is not online is the plan's to refuse.
        for cpu in [p.sender, p.receiver].into_iter().flatten() {
            if online.contains(cpu) {
                check_affinity(cpu, "--placement")?;
            }
        }
    }
    Ok(list)
}

fn ipc_spec(a: &RespondArgs, list: &str, online: &CpuSet) -> Result<RespondSpec, UsageError> {
    let kinds: Vec<IpcKind> = if list.trim() == "all" {
        IpcKind::ALL.to_vec()
    } else {
        list.split(',')
            .map(|k| {
                IpcKind::parse(k).ok_or_else(|| {
                    UsageError::new(format!("unknown IPC mechanism '{}'", k.trim())).hint(
                        "use eventfd, pipe, futex, mqueue, signal, sysvsem, unix-dgram or all",
                    )
                })
            })
            .collect::<Result<_, _>>()?
    };
    Ok(RespondSpec::Ipc {
        kinds,
        placements: placements(a, online)?,
        burst: a.burst,
        pacing: a.pacing,
    })
}

/// The GPIO wiring; its timing and scheduling are the plan's.
fn gpio_spec(a: &RespondArgs, input: &str, online: &CpuSet) -> Result<RespondSpec, UsageError> {
    if let Some(cpu) = a.cpu {
        check_cpu(cpu, "--cpu", online)?;
    }
    let chip = a.chip.as_deref();
    let line = |t: &Option<String>| -> Result<Option<LineId>, UsageError> {
        t.as_deref()
            .map(|t| LineId::parse(t, chip).map_err(|e| UsageError::new(e.to_string())))
            .transpose()
    };
    let options = gpio::InputOptions {
        bias: a.bias,
        debounce: opt_dur(a.debounce.as_deref(), "--debounce", "us")?,
        clock: a.event_clock,
        edges: a.edges,
        kernel_buffer: a.event_buffer,
    };
    let responder = match &a.responder_cmd {
        Some(_) => Responder::External {
            stimulus_watch: line(&a.stimulus_watch)?,
        },
        None => Responder::Own,
    };
    let wiring = GpioConfig {
        stimulus: line(&a.stimulus)?,
        input: LineId::parse(input, chip).map_err(|e| UsageError::new(e.to_string()))?,
        response: line(&a.response)?,
        watch: line(&a.watch)?,
        responder,
        options,
        // The plan's: replaced when it is built.
        interval: Nanos::ZERO,
        count: None,
        duration: None,
        policy: rtscope_engine::Policy::Other,
        priority: 0,
        responder_cpu: a.cpu,
        stimulus_cpu: None,
    };
    Ok(RespondSpec::Gpio {
        wiring: Box::new(wiring),
        responder_cmd: a.responder_cmd.clone(),
    })
}

/// What the flags ask to measure: IPC pairs or GPIO edges, never both.
fn workload(a: &RespondArgs, online: &CpuSet) -> Result<RespondSpec, UsageError> {
    match (&a.ipc, &a.input) {
        (Some(_), Some(_)) => Err(UsageError::new(
            "give either --ipc or a GPIO --input, not both",
        )),
        (Some(_), None) if a.responder_cmd.is_some() => Err(UsageError::new(
            "'--responder-cmd' answers GPIO edges: it cannot be used with --ipc",
        )),
        (Some(list), None) => ipc_spec(a, list, online),
        (None, Some(input)) => gpio_spec(a, input, online),
        (None, None) => Err(UsageError::new("nothing to measure").hint(
            "use --ipc eventfd (or all), or a GPIO --input LINE; see rtscope respond --help",
        )),
    }
}

/// Checks the whole invocation before anything starts (no database, no memory lock, no
/// cpu_dma_latency request, no responder program for a refused one): the label and tags, then
/// the plan, as measure checks its own.
pub fn plan(a: &RespondArgs, online: &CpuSet) -> Result<RunPlan, UsageError> {
    a.rec.check()?;
    RunPlan::build(&spec(a, online)?, online).map_err(plan_error)
}

/// Runs `rtscope respond`.
pub fn run(
    a: &RespondArgs,
    command_line: Vec<String>,
    out: &mut dyn Write,
) -> anyhow::Result<ExitStatus> {
    if let Some(chip) = &a.list_lines {
        let text = gpio::cdev::list_lines(chip).map_err(|e| UsageError::new(e.to_string()))?;
        out.write_all(text.as_bytes())?;
        return Ok(ExitStatus::Success);
    }
    // Before any thread starts: a stop signal is taken by the measurement or by nobody.
    rtscope_common::signals::hold_signals();
    let online = sys::online_cpus();
    let plan = plan(a, &online)?;
    // Before the cpu_dma_latency request and the threads, which the audit would otherwise see.
    let kind = rtscope_store::RunKind::Respond;
    let (json_file, store, spec) = a.rec.prepare(&plan, kind, command_line.clone())?;
    let settings = apply_settings(a, &plan, out)?;
    let priority = plan.config.threads[0].priority;
    let mut session = RespondSession::start(plan, settings, store, spec)?;
    let measured = session
        .drive(&mut |what| {
            if !a.rec.quiet {
                writeln!(out, "# {what} ...")?;
                out.flush()?;
            }
            Ok(())
        })
        .map_err(|e| -> anyhow::Error {
            match e {
                rtscope_respond::RespondError::Output(io) => io.into(),
                e => UsageError::from_error(e).into(),
            }
        })?;
    let status = finish(a, priority, &measured, json_file, command_line, out)?;
    let config = config_json(a, priority, &measured.outcome.rows).to_string();
    let rec = session.finish(&measured, status.code(), config);
    Ok(super::recorded(rec, status, out))
}

/// The settings guard, as measure's: the `--latency` PM QoS request, held until the session
/// ends (restored by the kernel when it is dropped or the process dies).
fn apply_settings(
    a: &RespondArgs,
    plan: &RunPlan,
    out: &mut dyn Write,
) -> anyhow::Result<SystemSettings> {
    let settings = SystemSettings::apply(plan).map_err(|e| match e {
        SessionError::Setting(e) => UsageError::from_error(e)
            .hint("--latency needs root (or write access to /dev/cpu_dma_latency)")
            .into(),
        e => anyhow::Error::from(e),
    })?;
    if let (Some(us), false) = (settings.dma_latency_us(), a.rec.quiet) {
        let was = settings
            .dma_previous_us()
            .map_or("unknown".into(), |p| format!("{p} us"));
        let _ = writeln!(out, "# cpu_dma_latency held at {us} us (was {was})");
    }
    Ok(settings)
}

fn config_json(a: &RespondArgs, priority: i32, rows: &[Row]) -> serde_json::Value {
    json!({
        "policy": a.threads.sched.policy.name(),
        "priority": priority,
        "mlock": !a.threads.no_mlock, "cpu_dma_latency_us": a.latency, "loops": a.loops,
        "duration": a.duration, "interval": a.interval, "burst": a.burst,
        "pacing": format!("{:?}", a.pacing).to_lowercase(), "placement": a.placement,
        "ipc": a.ipc, "input": a.input, "stimulus": a.stimulus, "response": a.response,
        "watch": a.watch, "responder_cmd": a.responder_cmd,
        "rows": respond::rows_json(rows),
    })
}

/// Prints the table (to stderr when the JSON goes to stdout), writes the JSON, checks the
/// limits; a JSON file that cannot be written at the end is reported and makes the exit code 2.
fn finish(
    a: &RespondArgs,
    priority: i32,
    m: &RespondMeasured,
    json_file: Option<OutputFile>,
    command_line: Vec<String>,
    out: &mut dyn Write,
) -> anyhow::Result<ExitStatus> {
    let (o, checks): (_, &[Check]) = (&m.outcome, &m.checks);
    let mut status = if o.signal.is_some() {
        ExitStatus::Interrupted
    } else if o.error.is_some() {
        ExitStatus::Usage
    } else if checks.iter().any(|c| !c.passed) {
        ExitStatus::LimitExceeded
    } else {
        ExitStatus::Success
    };
    let mut text = respond::table(&o.rows);
    if let Some(s) = o.signal {
        let name = rtscope_common::signals::signal_name(s);
        text.push_str(&format!(
            "interrupted by {name}: the results cover the part that ran\n"
        ));
    }
    if let Some(e) = &o.error {
        text.push_str(&format!("error during the run: {e}\n"));
    }
    text.push_str(&render_checks(checks));
    super::print_text(&text, json_file.as_ref(), out)?;
    let Some(file) = json_file else {
        return Ok(status);
    };
    let end = respond_json::Ending {
        signal: o.signal,
        error: o.error.as_deref(),
        exit_code: status.code(),
    };
    let config = config_json(a, priority, &o.rows);
    let doc = respond_json::document(&command_line, config, &o.rows, checks, end);
    let body = serde_json::to_string_pretty(&doc)? + "\n";
    if let Err(e) = file.write(body.as_bytes(), out, "--json") {
        rtscope_common::error::warn(&e.to_string());
        status = ExitStatus::Usage;
    }
    Ok(status)
}
