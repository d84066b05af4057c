//! `rtscope respond`: event response latency of IPC mechanisms and GPIO edges (the measuring
//! lives in `rtscope-respond`; this file parses the flags, drives the run, prints the table and
//! the JSON, and checks the limits).

use crate::cli::{BiasArg, EdgesArg, EventClockArg, RespondArgs, RespondPolicyArg};
use crate::commands::measure::table::render_checks;
use crate::exit::{ExitStatus, UsageError};
use rtscope_core::Nanos;
use rtscope_engine::{sys, Policy};
use rtscope_respond::gpio::{self, GpioConfig, LineId, Responder};
use rtscope_respond::ipc::{IpcConfig, IpcKind, Placement};
use rtscope_respond::record::{RecordMeta, Row};
use rtscope_respond::run::{self as respond, Outcome};
use rtscope_session::limits::{self, Check, Limit};
use rtscope_session::output::OutputFile;
use rtscope_session::{record, RunStatus};
use serde_json::json;
use std::io::Write;
use std::time::SystemTime;

fn dur(text: &str, flag: &str) -> Result<Nanos, UsageError> {
    Nanos::parse_with_default_unit(text, "us")
        .map_err(|e| UsageError::new(format!("invalid value for '{flag}': {e}")))
}

fn common(a: &RespondArgs) -> Result<(Policy, Option<Nanos>, Option<u64>), UsageError> {
    let policy = match a.policy {
        RespondPolicyArg::Fifo => Policy::Fifo,
        RespondPolicyArg::Rr => Policy::Rr,
        RespondPolicyArg::Other => Policy::Other,
    };
    let duration = match (&a.duration, a.loops) {
        (Some(d), _) => Some(
            Nanos::parse_with_default_unit(d, "s")
                .map_err(|e| UsageError::new(format!("invalid value for '--duration': {e}")))?,
        ),
        (None, Some(_)) => None,
        (None, None) => Some(Nanos::from_secs(10)),
    };
    Ok((policy, duration, a.loops))
}

fn placements(a: &RespondArgs) -> Result<Vec<Placement>, UsageError> {
    let allowed: Vec<usize> = sys::current_affinity()
        .map(|s| s.iter().collect())
        .unwrap_or_else(|_| vec![0]);
    rtscope_respond::ipc::parse_placements(&a.placement, a.cpu, &allowed)
        .map_err(|e| UsageError::new(e).hint("use same, cross or SENDER:RECEIVER CPUs such as 0:1"))
}

fn ipc_configs(a: &RespondArgs, list: &str) -> Result<Vec<IpcConfig>, UsageError> {
    let (policy, duration, loops) = common(a)?;
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
    let event_threshold = a
        .event_above
        .as_deref()
        .map(|d| dur(d, "--event-above"))
        .transpose()?;
    let mut out = Vec::new();
    for kind in kinds {
        for p in placements(a)? {
            let mut c = IpcConfig::new(kind);
            (c.placement, c.policy, c.priority) = (p, policy, a.priority);
            (c.interval, c.burst, c.loops, c.duration) = (interval, a.burst, loops, duration);
            (c.event_threshold, c.event_capacity) = (event_threshold, 10_000);
            out.push(c);
        }
    }
    Ok(out)
}

fn gpio_config(a: &RespondArgs, input: &str) -> Result<GpioConfig, UsageError> {
    let (policy, duration, loops) = common(a)?;
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
        interval: dur(a.interval.as_deref().unwrap_or("10ms"), "--interval")?,
        count: loops,
        duration: if loops.is_some() && a.duration.is_none() {
            None
        } else {
            duration
        },
        policy,
        priority: a.priority,
        responder_cpu: a.cpu,
        stimulus_cpu: None,
    })
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
    let limits: Vec<Limit> = a
        .limits
        .iter()
        .map(|l| limits::parse(l))
        .collect::<Result<_, _>>()?;
    let tags = a
        .tags
        .iter()
        .map(|t| record::parse_tag(t))
        .collect::<Result<Vec<_>, _>>()?;
    let store = if a.no_db {
        None
    } else {
        Some(record::open(
            &a.db.clone().unwrap_or_else(record::default_db),
        )?)
    };
    let json_file = a
        .json
        .as_deref()
        .map(|p| OutputFile::prepare(p, "--json"))
        .transpose()?;
    respond::hold_signals();
    let mlocked = !a.no_mlock;
    if mlocked {
        sys::mlockall().map_err(rtscope_engine::EngineError::Mlock)?;
    }
    let (started, clock_start) = (SystemTime::now(), sys::now(libc::CLOCK_MONOTONIC));
    let result = measure(a, out);
    if mlocked {
        sys::munlockall();
    }
    let o = result?;
    let meta = RecordMeta {
        label: a.label.clone(),
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

/// Runs the IPC or GPIO measurement the flags ask for.
fn measure(a: &RespondArgs, out: &mut dyn Write) -> anyhow::Result<Outcome> {
    let mut announce = |what: String| -> std::io::Result<()> {
        if !a.quiet {
            writeln!(out, "# {what} ...")?;
            out.flush()?;
        }
        Ok(())
    };
    let measured = match (&a.ipc, &a.input) {
        (Some(_), Some(_)) => {
            return Err(UsageError::new("give either --ipc or a GPIO --input, not both").into())
        }
        (Some(list), None) => respond::measure_ipc(ipc_configs(a, list)?, &mut |c| {
            announce(format!(
                "{} {} ({})",
                c.kind,
                c.placement.path(),
                c.placement.kind()
            ))
        }),
        (None, Some(input)) => respond::measure_gpio(
            gpio_config(a, input)?,
            a.responder_cmd.as_deref(),
            &mut |c| announce(format!("gpio {}", c.mode().name())),
        ),
        (None, None) => return Err(UsageError::new("nothing to measure")
            .hint("use --ipc eventfd (or all), or a GPIO --input LINE; see rtscope respond --help")
            .into()),
    };
    measured.map_err(|e| match e {
        rtscope_respond::RespondError::Output(io) => io.into(),
        e => UsageError::from_error(e).into(),
    })
}

fn config_json(a: &RespondArgs, rows: &[Row]) -> serde_json::Value {
    json!({
        "policy": format!("{:?}", a.policy).to_lowercase(), "priority": a.priority,
        "mlock": !a.no_mlock, "loops": a.loops, "duration": a.duration,
        "interval": a.interval, "burst": a.burst, "placement": a.placement,
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
        rtscope_session::output::warn(&e);
        status = ExitStatus::Usage;
    }
    Ok(status)
}
