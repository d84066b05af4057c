//! `rtscope respond`: event response latency of IPC mechanisms and GPIO edges (the measuring
//! lives in `rtscope-respond`; this file parses the flags, drives the run, prints the table and
//! the JSON, and checks the limits).

use crate::cli::{BiasArg, EdgesArg, EventClockArg, RespondArgs, RespondPolicyArg};
use crate::commands::measure::table::render_checks;
use crate::exit::{ExitStatus, UsageError};
use anyhow::Context;
use rtscope_core::text::{columns, us};
use rtscope_core::{Histogram, Nanos, Stats, PERCENTILES};
use rtscope_engine::{sys, Policy};
use rtscope_respond::control::StopSignals;
use rtscope_respond::gpio::{self, cdev::Cdev, GpioConfig, GpioRun, LineId, Responder};
use rtscope_respond::ipc::{IpcConfig, IpcKind, IpcRun, Placement};
use rtscope_respond::record::RecordMeta;
use rtscope_session::limits::{self, Check, Limit};
use rtscope_session::{record, RunStatus};
use serde_json::json;
use std::io::Write;
use std::time::SystemTime;

/// One row of the result table (and of the JSON).
struct Row {
    source: String,
    path: String,
    stats: Stats,
    hist: Histogram,
    extra: serde_json::Value,
    /// Receiver / responder CPU, policy, priority and interval (ns), for the database.
    cpu: Option<usize>,
    policy: &'static str,
    priority: i32,
    interval_ns: u64,
    events: Vec<rtscope_engine::Sample>,
}

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
    let signals = StopSignals::block();
    let mlocked = !a.no_mlock;
    if mlocked {
        sys::mlockall().map_err(rtscope_engine::EngineError::Mlock)?;
    }
    let (started, clock_start) = (SystemTime::now(), sys::now(libc::CLOCK_MONOTONIC));
    let result = match (&a.ipc, &a.input) {
        (Some(_), Some(_)) => {
            Err(UsageError::new("give either --ipc or a GPIO --input, not both").into())
        }
        (Some(list), None) => run_ipc(a, list, &signals, out),
        (None, Some(input)) => run_gpio(a, input, &signals, out),
        (None, None) => Err(UsageError::new("nothing to measure")
            .hint("use --ipc eventfd (or all), or a GPIO --input LINE; see rtscope respond --help")
            .into()),
    };
    if mlocked {
        sys::munlockall();
    }
    let (rows, signal, error) = result?;
    let meta = RecordMeta {
        label: a.label.clone(),
        tags,
        command_line: command_line.clone(),
        config_json: config_json(a, &rows).to_string(),
        started,
        ended: SystemTime::now(),
        clock_start,
    };
    let status = finish(a, &limits, &rows, signal, error, command_line, out)?;
    Ok(store.map_or(status, |s| {
        save(s, &meta, &rows, signal.is_some(), status, out)
    }))
}

fn config_json(a: &RespondArgs, rows: &[Row]) -> serde_json::Value {
    json!({
        "policy": format!("{:?}", a.policy).to_lowercase(), "priority": a.priority,
        "mlock": !a.no_mlock, "loops": a.loops, "duration": a.duration,
        "interval": a.interval, "burst": a.burst, "placement": a.placement,
        "ipc": a.ipc, "input": a.input, "stimulus": a.stimulus, "response": a.response,
        "watch": a.watch, "responder_cmd": a.responder_cmd,
        "rows": rows.iter().enumerate().map(|(i, r)| json!({"thread": i, "source": r.source, "path": r.path})).collect::<Vec<_>>(),
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
    let recs: Vec<rtscope_respond::record::Row> = rows
        .iter()
        .map(|r| rtscope_respond::record::Row {
            source: r.source.clone(),
            path: r.path.clone(),
            cpu: r.cpu,
            policy: r.policy,
            priority: r.priority,
            interval_ns: r.interval_ns,
            stats: r.stats,
            histogram: r.hist.clone(),
            events: r.events.clone(),
        })
        .collect();
    let run_status = if interrupted {
        RunStatus::Interrupted
    } else {
        RunStatus::Complete
    };
    match rtscope_respond::record::record(&mut store, meta, &recs, run_status, status.code()) {
        Ok(id) => {
            let _ = writeln!(out, "recorded as run {id} in {}", store.path().display());
            status
        }
        Err(e) => {
            {
                use std::io::Write as _;
                let _ = writeln!(
                    std::io::stderr(),
                    "error: the run could not be recorded: {e}"
                );
            };
            ExitStatus::Usage
        }
    }
}

type Outcome = (Vec<Row>, Option<i32>, Option<String>);

fn run_ipc(
    a: &RespondArgs,
    list: &str,
    signals: &StopSignals,
    out: &mut dyn Write,
) -> anyhow::Result<Outcome> {
    let configs = ipc_configs(a, list)?;
    let (mut rows, mut signal, mut error) = (Vec::new(), None, None);
    for c in configs {
        if !a.quiet {
            writeln!(
                out,
                "# {} {} ({}) ...",
                c.kind,
                c.placement.path(),
                c.placement.kind()
            )?;
            out.flush()?;
        }
        let run = IpcRun::start(c).context("cannot start the IPC measurement")?;
        while !run.is_finished() {
            if let Some(s) = signals.wait(Nanos::from_ms(100)) {
                signal = Some(s);
                run.stop();
                break;
            }
        }
        let r = run.finish();
        if let Some(e) = &r.error {
            error.get_or_insert(format!("{}: {e}", r.kind));
        }
        if !r.accounting_consistent() {
            error.get_or_insert(format!(
                "{}: the event counts disagree (sent {}, refused {}, received {}, gaps {}, overruns {})",
                r.kind, r.sent, r.send_failed, r.received(), r.gaps, r.overruns
            ));
        }
        let mut stats = r.stats;
        stats.missed = r.lost();
        rows.push(Row {
            source: r.kind.name().into(),
            path: format!("{} {}", r.placement.path(), r.placement.kind()),
            extra: json!({
                "mechanism": r.kind.name(), "placement": r.placement.kind(),
                "sender_cpu": r.placement.sender, "receiver_cpu": r.placement.receiver,
                "interval_ns": r.interval.0, "burst": r.burst, "sent": r.sent,
                "send_failed": r.send_failed, "received": r.received(), "lost": r.lost(),
                "sequence_gaps": r.gaps, "wakeups": r.wakeups, "overruns": r.overruns,
                "skipped_intervals": r.skipped_intervals,
                "accounting_consistent": r.accounting_consistent(),
                "rt_tests_peer": r.kind.rt_tests_peer(),
                "events_above": r.events.iter().map(|e| json!({
                    "seq": e.cycle, "latency_ns": e.latency.0,
                    "offset_ns": e.time.0.saturating_sub(r.clock_start.0),
                })).collect::<Vec<_>>(),
            }),
            stats,
            hist: r.histogram,
            cpu: r.placement.receiver,
            policy: r.policy.name(),
            priority: r.priority,
            interval_ns: r.interval.0,
            events: r.events,
        });
        if signal.is_some() {
            break;
        }
    }
    Ok((rows, signal, error))
}

fn run_gpio(
    a: &RespondArgs,
    input: &str,
    signals: &StopSignals,
    out: &mut dyn Write,
) -> anyhow::Result<Outcome> {
    let c = gpio_config(a, input)?;
    let mut child = match &a.responder_cmd {
        Some(cmd) => Some(start_responder(cmd, &c.input)?),
        None => None,
    };
    if !a.quiet {
        writeln!(out, "# gpio {} ...", c.mode().name())?;
        out.flush()?;
    }
    let run = GpioRun::start(&mut Cdev, c.clone()).map_err(|e| UsageError::new(e.to_string()));
    let run = match run {
        Ok(r) => r,
        Err(e) => {
            stop_child(child.as_mut());
            return Err(e.into());
        }
    };
    let mut signal = None;
    while !run.is_finished() {
        if let Some(s) = signals.wait(Nanos::from_ms(100)) {
            signal = Some(s);
            run.stop();
            break;
        }
    }
    let r = run.finish();
    stop_child(child.as_mut());
    let lines = json!({
        "stimulus_edges": r.stimulus_edges,
        "input": {"rising": r.input.rising, "falling": r.input.falling, "lost": r.input.lost, "last_level": r.input.last_level},
        "watch": {"rising": r.watch.rising, "falling": r.watch.falling, "lost": r.watch.lost, "last_level": r.watch.last_level},
    });
    let lost = r.input.lost + r.watch.lost;
    let rows = r
        .intervals
        .iter()
        .map(|i| {
            let mut stats = i.stats;
            stats.missed = lost;
            Row {
                source: i.interval.name().into(),
                path: i.edge.name().into(),
                stats,
                hist: i.histogram.clone(),
                extra: json!({"mode": r.mode.name(), "interval": i.interval.name(), "edge": i.edge.name(), "lines": lines}),
                cpu: c.responder_cpu,
                policy: c.policy.name(),
                priority: c.priority,
                interval_ns: if c.stimulus.is_some() { c.interval.0 } else { 0 },
                events: Vec::new(),
            }
        })
        .collect();
    Ok((rows, signal, r.error))
}

fn start_responder(cmd: &str, input: &LineId) -> anyhow::Result<std::process::Child> {
    let child = std::process::Command::new("sh")
        .args(["-c", cmd])
        .spawn()
        .with_context(|| format!("cannot start --responder-cmd '{cmd}'"))?;
    // Give the program up to 5 s to request its input line.
    for _ in 0..50 {
        if gpio::cdev::line_in_use(input).unwrap_or(false) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    Ok(child)
}

fn stop_child(child: Option<&mut std::process::Child>) {
    if let Some(c) = child {
        if let Ok(pid) = i32::try_from(c.id()) {
            // SAFETY: kill with the pid of our own child and SIGTERM; no pointers.
            unsafe { libc::kill(pid, libc::SIGTERM) };
        }
        let _ = c.wait();
    }
}

fn render(rows: &[Row]) -> String {
    let mut head: Vec<String> = ["source", "path", "events", "lost", "min", "mean"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    head.extend(PERCENTILES.iter().take(5).map(|(l, _)| l.to_string()));
    head.push("max".into());
    let mut cells = vec![head];
    for r in rows {
        let has = r.stats.count > 0;
        let mut c = vec![
            r.source.clone(),
            r.path.clone(),
            r.stats.count.to_string(),
            r.stats.missed.to_string(),
        ];
        c.push(if has { us(r.stats.min) } else { "-".into() });
        c.push(
            r.stats
                .mean_ns()
                .map_or("-".into(), |m| format!("{:.1}", m / 1000.0)),
        );
        for p in r.hist.percentiles().iter().take(5) {
            let star = if p.is_supported() { "" } else { "*" };
            c.push(p.value.map_or("-".into(), |v| format!("{}{star}", us(v))));
        }
        c.push(if has { us(r.stats.max) } else { "-".into() });
        cells.push(c);
    }
    let mut s = columns(&cells, 2);
    s.push_str("latencies in us; lost = events sent but never received (queue full or dropped by the kernel)\n");
    let skipped: u64 = rows
        .iter()
        .filter_map(|r| r.extra["skipped_intervals"].as_u64())
        .sum();
    if skipped > 0 {
        s.push_str(&format!("{skipped} sending intervals skipped: the sender was held off past them (the JSON has them per row)\n"));
    }
    if cells.iter().flatten().any(|c| c.ends_with('*')) {
        s.push_str("* fewer than 10 samples lie beyond this percentile: measure longer for a meaningful value\n");
    }
    s
}

fn finish(
    a: &RespondArgs,
    limits: &[Limit],
    rows: &[Row],
    signal: Option<i32>,
    error: Option<String>,
    command_line: Vec<String>,
    out: &mut dyn Write,
) -> anyhow::Result<ExitStatus> {
    let checks: Vec<Check> = rows
        .iter()
        .flat_map(|r| {
            limits::check(
                limits,
                &format!("{} {}", r.source, r.path),
                &r.stats,
                &r.hist,
            )
        })
        .collect();
    let status = if signal.is_some() {
        ExitStatus::Interrupted
    } else if error.is_some() {
        ExitStatus::Usage
    } else if checks.iter().any(|c| !c.passed) {
        ExitStatus::LimitExceeded
    } else {
        ExitStatus::Success
    };
    let mut text = render(rows);
    if let Some(s) = signal {
        text.push_str(&format!(
            "interrupted by {}: the results cover the part that ran\n",
            StopSignals::name(s)
        ));
    }
    if let Some(e) = &error {
        text.push_str(&format!("error during the run: {e}\n"));
    }
    text.push_str(&render_checks(&checks));
    if let Some(path) = &a.json {
        let doc = json!({
            "schema": "rtscope.respond/1",
            "tool": {"name": "rtscope", "version": env!("CARGO_PKG_VERSION"), "command_line": command_line},
            "config": config_json(a, rows),
            "results": rows.iter().map(|r| {
                let mut v = serde_json::to_value(crate::commands::measure::json::series(&r.stats, &r.hist, None)).unwrap_or_default();
                if let (Some(m), Some(e)) = (v.as_object_mut(), r.extra.as_object()) {
                    m.insert("source".into(), json!(r.source));
                    m.insert("path".into(), json!(r.path));
                    m.extend(e.clone());
                }
                v
            }).collect::<Vec<_>>(),
            "limits": checks.iter().map(crate::commands::measure::json::LimitJson::from).collect::<Vec<_>>(),
            "interrupted": signal.map(StopSignals::name),
            "error": error,
            "exit_code": status.code(),
        });
        write_new_file(path, &(serde_json::to_string_pretty(&doc)? + "\n"))?;
    }
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(status)
}

/// Writes `body` to `path`, refusing to follow a symlink there.
fn write_new_file(path: &std::path::Path, body: &str) -> anyhow::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .map_err(|e| {
            UsageError::new(format!(
                "cannot write the JSON file '{}' (--json): {e}",
                path.display()
            ))
        })?;
    f.write_all(body.as_bytes())?;
    Ok(())
}
