//! `rtscope respond`: event response latency of IPC mechanisms and GPIO edges (the measuring
//! lives in `rtscope-respond`; this file parses the flags, drives the run, prints the table and
//! the JSON, and checks the limits).

use crate::cli::{BiasArg, EdgesArg, EventClockArg, PacingArg, RespondArgs, RespondPolicyArg};
use crate::commands::measure::plan_error;
use crate::commands::measure::table::render_checks;
use crate::exit::{ExitStatus, UsageError};
use rtscope_core::Nanos;
use rtscope_engine::{sys, Policy};
use rtscope_respond::gpio::{self, GpioConfig, LineId, Responder};
use rtscope_respond::ipc::{IpcConfig, IpcKind, Pacing, Placement};
use rtscope_respond::record::{RecordMeta, Row};
use rtscope_respond::run::{self as respond, Outcome};
use rtscope_session::limits::{self, Check, Limit};
use rtscope_session::output::OutputFile;
use rtscope_session::RunStatus;
use serde_json::json;
use std::io::Write;
use std::time::SystemTime;

fn dur(text: &str, flag: &str) -> Result<Nanos, UsageError> {
    Nanos::parse_with_default_unit(text, "us")
        .map_err(|e| UsageError::new(format!("invalid value for '{flag}': {e}")))
}

/// The policy, the priority (95 for fifo/rr, 0 for other unless given), the length and the
/// loops, checked with measure's validators: a priority the policy takes, no length of zero.
fn common(a: &RespondArgs) -> Result<(Policy, i32, Option<Nanos>, Option<u64>), UsageError> {
    let policy = match a.policy {
        RespondPolicyArg::Fifo => Policy::Fifo,
        RespondPolicyArg::Rr => Policy::Rr,
        RespondPolicyArg::Other => Policy::Other,
    };
    let priority = a.priority.unwrap_or(match a.policy {
        RespondPolicyArg::Fifo | RespondPolicyArg::Rr => 95,
        RespondPolicyArg::Other => 0,
    });
    rtscope_session::plan::check_priority(policy, priority).map_err(plan_error)?;
    let given = a
        .duration
        .as_deref()
        .map(|d| {
            Nanos::parse_with_default_unit(d, "s")
                .map_err(|e| UsageError::new(format!("invalid value for '--duration': {e}")))
        })
        .transpose()?;
    rtscope_session::plan::check_nonzero_length(a.loops, given).map_err(plan_error)?;
    let duration = match (given, a.loops) {
        (Some(d), _) => Some(d),
        (None, Some(_)) => None,
        (None, None) => Some(Nanos::from_secs(10)),
    };
    Ok((policy, priority, duration, a.loops))
}

/// Checks that `cpu`, given to `flag`, is online and one this process may run on.
fn check_cpu(cpu: usize, flag: &str) -> Result<(), UsageError> {
    let online = sys::online_cpus();
    rtscope_session::cpus::cpu_list(&cpu.to_string(), &online, flag)?;
    match sys::current_affinity() {
        Ok(allowed) if !allowed.contains(cpu) => Err(UsageError::new(format!(
            "invalid value for '{flag}': CPU {cpu} is outside this process's CPU affinity ({allowed})"
        ))
        .hint("pick one of those CPUs, or widen the affinity (taskset, cpuset)")),
        _ => Ok(()),
    }
}

fn placements(a: &RespondArgs) -> Result<Vec<Placement>, UsageError> {
    let allowed: Vec<usize> = sys::current_affinity()
        .map(|s| s.iter().collect())
        .unwrap_or_else(|_| vec![0]);
    if let Some(cpu) = a.cpu {
        check_cpu(cpu, "--cpu")?;
    }
    let list =
        rtscope_respond::ipc::parse_placements(&a.placement, a.cpu, &allowed).map_err(|e| {
            UsageError::new(e).hint("use same, cross or SENDER:RECEIVER CPUs such as 0:1")
        })?;
    for p in &list {
        for cpu in [p.sender, p.receiver].into_iter().flatten() {
            check_cpu(cpu, "--placement")?;
        }
    }
    Ok(list)
}

fn ipc_configs(a: &RespondArgs, list: &str) -> Result<Vec<IpcConfig>, UsageError> {
    let (policy, priority, duration, loops) = common(a)?;
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
    let interval = dur(a.interval.as_deref().unwrap_or("1ms"), "--interval")?;
    rtscope_session::plan::check_interval(interval).map_err(plan_error)?;
    let most = rtscope_respond::ipc::MAX_BURST;
    if a.burst == 0 || a.burst > most {
        return Err(UsageError::new(format!(
            "invalid value '{}' for '--burst': use 1..={most} events per interval",
            a.burst
        )));
    }
    if a.pacing == PacingArg::Handshake && a.burst != 1 {
        return Err(UsageError::new(
            "'--burst' cannot be used with '--pacing handshake': it sends one event per ready token",
        ));
    }
    let event_threshold = a
        .event_above
        .as_deref()
        .map(|d| dur(d, "--event-above"))
        .transpose()?;
    let mut out = Vec::new();
    for kind in kinds {
        for p in placements(a)? {
            let mut c = IpcConfig::new(kind);
            (c.placement, c.policy, c.priority) = (p, policy, priority);
            (c.interval, c.burst, c.loops, c.duration) = (interval, a.burst, loops, duration);
            (c.event_threshold, c.event_capacity) = (event_threshold, 10_000);
            c.pacing = match a.pacing {
                PacingArg::Timer => Pacing::Timer,
                PacingArg::Handshake => Pacing::Handshake,
            };
            c.validate().map_err(UsageError::from_error)?;
            out.push(c);
        }
    }
    Ok(out)
}

fn gpio_config(a: &RespondArgs, input: &str) -> Result<GpioConfig, UsageError> {
    let (policy, priority, duration, loops) = common(a)?;
    if let Some(cpu) = a.cpu {
        check_cpu(cpu, "--cpu")?;
    }
    let chip = a.chip.as_deref();
    let line = |t: &Option<String>| -> Result<Option<LineId>, UsageError> {
        t.as_deref()
            .map(|t| LineId::parse(t, chip).map_err(|e| UsageError::new(e.to_string())))
            .transpose()
    };
    let options = gpio::InputOptions {
        bias: match a.bias {
            BiasArg::AsIs => gpio::Bias::AsIs,
            BiasArg::PullUp => gpio::Bias::PullUp,
            BiasArg::PullDown => gpio::Bias::PullDown,
            BiasArg::Disabled => gpio::Bias::Disabled,
        },
        debounce: a
            .debounce
            .as_deref()
            .map(|d| dur(d, "--debounce"))
            .transpose()?,
        clock: match a.event_clock {
            EventClockArg::Monotonic => gpio::EventClock::Monotonic,
            EventClockArg::Realtime => gpio::EventClock::Realtime,
            EventClockArg::Hte => gpio::EventClock::Hte,
        },
        edges: match a.edges {
            EdgesArg::Rising => gpio::EdgeSelect::Rising,
            EdgesArg::Falling => gpio::EdgeSelect::Falling,
            EdgesArg::Both => gpio::EdgeSelect::Both,
        },
        kernel_buffer: a.event_buffer,
    };
    let responder = match &a.responder_cmd {
        Some(_) => Responder::External {
            stimulus_watch: line(&a.stimulus_watch)?,
        },
        None => Responder::Own,
    };
    Ok(GpioConfig {
        stimulus: line(&a.stimulus)?,
        input: line(&Some(input.to_string()))?.expect("given"),
        response: line(&a.response)?,
        watch: line(&a.watch)?,
        responder,
        options,
        interval: {
            let i = dur(a.interval.as_deref().unwrap_or("10ms"), "--interval")?;
            rtscope_session::plan::check_interval(i).map_err(plan_error)?;
            i
        },
        count: loops,
        duration: if loops.is_some() && a.duration.is_none() {
            None
        } else {
            duration
        },
        policy,
        priority,
        responder_cpu: a.cpu,
        stimulus_cpu: None,
    })
}

/// What a checked invocation measures.
enum Work {
    Ipc(Vec<IpcConfig>),
    Gpio(Box<GpioConfig>),
}

/// Checks the whole invocation before anything starts (no database, no memory lock, no
/// cpu_dma_latency request, no responder program for a refused one), with measure's
/// validators for the label and tags, the policy and priority, the length and the CPUs.
fn work(a: &RespondArgs) -> Result<Work, UsageError> {
    a.rec.check()?;
    match (&a.ipc, &a.input) {
        (Some(_), Some(_)) => Err(UsageError::new(
            "give either --ipc or a GPIO --input, not both",
        )),
        (Some(_), None) if a.responder_cmd.is_some() => Err(UsageError::new(
            "'--responder-cmd' answers GPIO edges: it cannot be used with --ipc",
        )),
        (Some(list), None) => Ok(Work::Ipc(ipc_configs(a, list)?)),
        (None, Some(input)) => {
            let c = gpio_config(a, input)?;
            c.validate().map_err(UsageError::from_error)?;
            Ok(Work::Gpio(Box::new(c)))
        }
        (None, None) => Err(UsageError::new("nothing to measure").hint(
            "use --ipc eventfd (or all), or a GPIO --input LINE; see rtscope respond --help",
        )),
    }
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
    let work = work(a)?;
    let limits: Vec<Limit> = a
        .limits
        .iter()
        .map(|l| limits::parse(l))
        .collect::<Result<_, _>>()?;
    let tags = a.rec.tag_pairs()?;
    let store = a.rec.open_store()?;
    let json_file = a
        .json
        .as_deref()
        .map(|p| OutputFile::prepare(p, "--json"))
        .transpose()?;
    respond::hold_signals();
    let dma = hold_latency(a, out)?;
    let mlocked = !a.no_mlock;
    if mlocked {
        sys::mlockall().map_err(rtscope_engine::EngineError::Mlock)?;
    }
    let (started, clock_start) = (SystemTime::now(), sys::now(libc::CLOCK_MONOTONIC));
    let result = measure(a, work, out);
    drop(dma);
    if mlocked {
        sys::munlockall();
    }
    let o = result?;
    let meta = RecordMeta {
        label: a.rec.label.clone(),
        tags,
        command_line: command_line.clone(),
        config_json: config_json(a, &o.rows).to_string(),
        started,
        ended: SystemTime::now(),
        clock_start,
    };
    let status = finish(a, &limits, &o, json_file, command_line, out)?;
    Ok(store.map_or(status, |s| {
        save(s, &meta, &o.rows, o.signal.is_some(), status, out)
    }))
}

/// The engine's PM QoS guard, as measure's, for `--latency`: held until the measurement ends,
/// restored by the kernel when it is dropped or the process dies.
fn hold_latency(
    a: &RespondArgs,
    out: &mut dyn Write,
) -> Result<Option<rtscope_engine::knobs::DmaLatencyGuard>, UsageError> {
    let Some(us) = a.latency else {
        return Ok(None);
    };
    let d = rtscope_engine::knobs::DmaLatencyGuard::set(us).map_err(|e| {
        UsageError::from_error(e)
            .hint("--latency needs root (or write access to /dev/cpu_dma_latency)")
    })?;
    if !a.quiet {
        let was = d
            .previous_us
            .map_or("unknown".into(), |p| format!("{p} us"));
        let _ = writeln!(out, "# cpu_dma_latency held at {us} us (was {was})");
    }
    Ok(Some(d))
}

/// Runs the IPC or GPIO measurement the flags ask for.
fn measure(a: &RespondArgs, work: Work, out: &mut dyn Write) -> anyhow::Result<Outcome> {
    let mut announce = |what: String| -> std::io::Result<()> {
        if !a.quiet {
            writeln!(out, "# {what} ...")?;
            out.flush()?;
        }
        Ok(())
    };
    let measured = match work {
        Work::Ipc(configs) => respond::measure_ipc(configs, &mut |c| {
            announce(format!(
                "{} {} ({}, {} pacing)",
                c.kind,
                c.placement.path(),
                c.placement.kind(),
                c.pacing.name()
            ))
        }),
        Work::Gpio(c) => respond::measure_gpio(*c, a.responder_cmd.as_deref(), &mut |c| {
            announce(format!("gpio {}", c.mode().name()))
        }),
    };
    measured.map_err(|e| match e {
        rtscope_respond::RespondError::Output(io) => io.into(),
        e => UsageError::from_error(e).into(),
    })
}

fn config_json(a: &RespondArgs, rows: &[Row]) -> serde_json::Value {
    json!({
        "policy": format!("{:?}", a.policy).to_lowercase(),
        "priority": common(a).map(|c| c.1).unwrap_or_default(),
        "mlock": !a.no_mlock, "cpu_dma_latency_us": a.latency, "loops": a.loops,
        "duration": a.duration, "interval": a.interval, "burst": a.burst,
        "pacing": format!("{:?}", a.pacing).to_lowercase(), "placement": a.placement,
        "ipc": a.ipc, "input": a.input, "stimulus": a.stimulus, "response": a.response,
        "watch": a.watch, "responder_cmd": a.responder_cmd,
        "rows": respond::rows_json(rows),
    })
}

/// Records the run; a database failure is reported and turns the exit code into 2.
fn save(
    mut store: rtscope_store::Store,
    meta: &RecordMeta,
    rows: &[Row],
    interrupted: bool,
    status: ExitStatus,
    out: &mut dyn Write,
) -> ExitStatus {
    let run_status = if interrupted {
        RunStatus::Interrupted
    } else {
        RunStatus::Complete
    };
    match rtscope_respond::record::record(&mut store, meta, rows, run_status, status.code()) {
        Ok(id) => {
            let _ = writeln!(out, "recorded as run {id} in {}", store.path().display());
            status
        }
        Err(e) => {
            rtscope_session::output::warn(&format!("error: the run could not be recorded: {e}"));
            ExitStatus::Usage
        }
    }
}

/// Prints the table (to stderr when the JSON goes to stdout), writes the JSON, checks the
/// limits; a JSON file that cannot be written at the end is reported and makes the exit code 2.
fn finish(
    a: &RespondArgs,
    limits: &[Limit],
    o: &Outcome,
    json_file: Option<OutputFile>,
    command_line: Vec<String>,
    out: &mut dyn Write,
) -> anyhow::Result<ExitStatus> {
    let checks: Vec<Check> = o
        .rows
        .iter()
        .flat_map(|r| {
            limits::check(
                limits,
                &format!("{} {}", r.source, r.path),
                &r.stats,
                &r.histogram,
            )
        })
        .collect();
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
        let name = sys::signal_name(s);
        text.push_str(&format!(
            "interrupted by {name}: the results cover the part that ran\n"
        ));
    }
    if let Some(e) = &o.error {
        text.push_str(&format!("error during the run: {e}\n"));
    }
    text.push_str(&render_checks(&checks));
    let Some(file) = json_file else {
        out.write_all(text.as_bytes())?;
        out.flush()?;
        return Ok(status);
    };
    if file.is_stdout() {
        rtscope_session::output::warn(text.trim_end());
    } else {
        out.write_all(text.as_bytes())?;
        out.flush()?;
    }
    let doc = json!({
        "schema": "rtscope.respond/1",
        "tool": {"name": "rtscope", "version": env!("CARGO_PKG_VERSION"), "command_line": command_line},
        "config": config_json(a, &o.rows),
        "results": o.rows.iter().map(|r| {
            let mut v = serde_json::to_value(crate::commands::measure::json::series(&r.stats, &r.histogram, None)).unwrap_or_default();
            if let (Some(m), Some(e)) = (v.as_object_mut(), r.extra.as_object()) {
                m.insert("source".into(), json!(r.source));
                m.insert("path".into(), json!(r.path));
                m.extend(e.clone());
            }
            v
        }).collect::<Vec<_>>(),
        "limits": checks.iter().map(crate::commands::measure::json::LimitJson::from).collect::<Vec<_>>(),
        "interrupted": o.signal.map(sys::signal_name),
        "error": o.error,
        "exit_code": status.code(),
    });
    let body = serde_json::to_string_pretty(&doc)? + "\n";
    if let Err(e) = file.write(body.as_bytes(), out, "--json") {
        rtscope_session::output::warn(&e.to_string());
        status = ExitStatus::Usage;
    }
    Ok(status)
}
