//! A respond measurement end to end, for every front end (`rtscope respond` and the respond
//! scenarios of campaigns): the configured measurements run one after another until they end
//! or a stop signal (SIGINT, SIGTERM, SIGHUP) arrives, their results become [`Row`]s (what the
//! table, the JSON and the database show), and [`table`] renders them. All latencies are in
//! nanoseconds; the table prints µs.

use crate::gpio::{self, cdev::Cdev, GpioConfig, GpioRun, LineId};
use crate::ipc::{IpcConfig, IpcResult, IpcRun};
use crate::record::Row;
use crate::RespondError;
use rtscope_core::text::{columns, us, us_or_dash};
use rtscope_core::{Nanos, PERCENTILES};
use rtscope_engine::ThreadShared;
use serde_json::json;
use std::process::{Child, Command};

/// What a measurement produced.
#[derive(Debug, Default)]
pub struct Outcome {
    /// One row per mechanism and placement, or per GPIO interval and edge.
    pub rows: Vec<Row>,
    /// The stop signal that ended it early.
    pub signal: Option<i32>,
    /// A failure during the run (a system call, inconsistent event counts); the rows cover the
    /// part that ran.
    pub error: Option<String>,
}

/// Keeps SIGINT, SIGTERM and SIGHUP blocked in this thread (and the threads it starts) until
/// the process exits, so a signal ends the measurement instead of the process, also while the
/// result is written; [`wait_stop`] takes them.
pub fn hold_signals() {
    let _previous = rtscope_common::signals::block_run_signals();
}

/// Waits up to `timeout` for a stop signal held by [`hold_signals`]; returns it. Other run
/// signals (SIGUSR1/2) are taken and ignored.
pub fn wait_stop(timeout: Nanos) -> Option<i32> {
    rtscope_common::signals::wait_run_signal(timeout)
        .filter(|&s| rtscope_common::signals::is_stop_signal(s))
}

/// Runs `configs` one after another; `announce` is told of each before it starts (a closed
/// output ends the whole measurement with that error); `tick` is told every 100 ms of the
/// index of the measurement running and its receiver's live statistics (a session checkpoints
/// them).
pub fn measure_ipc(
    configs: Vec<IpcConfig>,
    announce: &mut dyn FnMut(&IpcConfig) -> std::io::Result<()>,
    tick: &mut dyn FnMut(usize, &ThreadShared),
) -> Result<Outcome, RespondError> {
    let mut o = Outcome::default();
    for (i, c) in configs.into_iter().enumerate() {
        announce(&c).map_err(RespondError::Output)?;
        let run = IpcRun::start(c)?;
        while !run.is_finished() {
            tick(i, run.live());
            if let Some(s) = wait_stop(Nanos::from_ms(100)) {
                o.signal = Some(s);
                run.stop();
                break;
            }
        }
        let r = run.finish();
        if let Some(e) = &r.error {
            o.error.get_or_insert(format!("{}: {e}", r.config.kind));
        }
        if !r.accounting_consistent() {
            o.error.get_or_insert(format!(
                "{}: the event counts disagree (sent {}, refused {}, received {}, gaps {}, overruns {})",
                r.config.kind, r.sent, r.send_failed, r.received(), r.gaps, r.overruns
            ));
        }
        o.rows.push(ipc_row(r));
        if o.signal.is_some() {
            break;
        }
    }
    Ok(o)
}

/// The row of one IPC result; `stats.missed` holds the lost events.
pub fn ipc_row(r: IpcResult) -> Row {
    let mut stats = r.stats;
    stats.missed = r.lost();
    Row {
        source: r.config.kind.name().into(),
        path: format!(
            "{} {}",
            r.config.placement.path(),
            r.config.placement.kind()
        ),
        extra: json!({
            "mechanism": r.config.kind.name(), "placement": r.config.placement.kind(),
            "sender_cpu": r.config.placement.sender, "receiver_cpu": r.config.placement.receiver,
            "interval_ns": r.config.interval.0, "burst": r.config.burst, "pacing": r.config.pacing.name(),
            "sent": r.sent,
            "send_failed": r.send_failed, "received": r.received(), "lost": r.lost(),
            "sequence_gaps": r.gaps, "wakeups": r.wakeups, "overruns": r.overruns,
            "skipped_intervals": r.skipped_intervals,
            "accounting_consistent": r.accounting_consistent(),
            "rt_tests_peer": r.config.kind.rt_tests_peer(),
            "events_above": r.events.iter().map(|e| json!({
                "seq": e.cycle, "latency_ns": e.latency.0,
                "offset_ns": e.time.0.saturating_sub(r.clock_start.0),
            })).collect::<Vec<_>>(),
        }),
        stats,
        cpu: r.config.placement.receiver,
        policy: r.config.policy.name(),
        priority: r.config.priority,
        interval_ns: r.config.interval.0,
        histogram: r.histogram,
        events: r.events,
    }
}

/// Runs one GPIO measurement on the character devices; with `responder_cmd`, that program
/// (run by `sh -c`) is the responder and is stopped with SIGTERM at the end. `tick` is told
/// every 100 ms that the measurement goes on (its rows are known only at its end).
pub fn measure_gpio(
    c: GpioConfig,
    responder_cmd: Option<&str>,
    announce: &mut dyn FnMut(&GpioConfig) -> std::io::Result<()>,
    tick: &mut dyn FnMut(),
) -> Result<Outcome, RespondError> {
    // Everything that can be refused is refused before the responder program starts.
    c.validate()?;
    check_lines(&c)?;
    let mut child = match responder_cmd {
        Some(cmd) => Some(start_responder(cmd, &c.input)?),
        None => None,
    };
    let started = announce(&c)
        .map_err(RespondError::Output)
        .and_then(|()| GpioRun::start(&mut Cdev, c.clone()));
    let run = match started {
        Ok(r) => r,
        Err(e) => {
            stop_child(child.as_mut());
            return Err(e);
        }
    };
    let mut signal = None;
    while !run.is_finished() {
        tick();
        if let Some(s) = wait_stop(Nanos::from_ms(100)) {
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
                histogram: i.histogram.clone(),
                extra: json!({"mode": r.mode.name(), "interval": i.interval.name(), "edge": i.edge.name(), "lines": lines}),
                cpu: c.responder_cpu,
                policy: c.policy.name(),
                priority: c.priority,
                interval_ns: if c.stimulus.is_some() { c.interval.0 } else { 0 },
                events: Vec::new(),
            }
        })
        .collect();
    Ok(Outcome {
        rows,
        signal,
        error: r.error,
    })
}

/// Resolves every line of `c` on its chip (a missing chip or line is refused with the lines
/// there are), without requesting any.
pub fn check_lines(c: &GpioConfig) -> Result<(), RespondError> {
    let external = match &c.responder {
        gpio::Responder::External { stimulus_watch } => stimulus_watch.as_ref(),
        gpio::Responder::Own => None,
    };
    let lines = [Some(&c.input), c.stimulus.as_ref(), c.response.as_ref()];
    for line in lines
        .into_iter()
        .chain([c.watch.as_ref(), external])
        .flatten()
    {
        gpio::cdev::line_in_use(line)?;
    }
    Ok(())
}

fn start_responder(cmd: &str, input: &LineId) -> Result<Child, RespondError> {
    // Not with the run's signals held: a shell that keeps the mask (bash) would pass SIGTERM
    // blocked to the responder.
    let child = rtscope_common::signals::unblocked_in_child(&mut Command::new("sh"))
        .args(["-c", cmd])
        .spawn()
        .map_err(|source| RespondError::Responder {
            command: cmd.to_string(),
            source,
        })?;
    // Give the program up to 5 s to request its input line.
    for _ in 0..50 {
        if gpio::cdev::line_in_use(input).unwrap_or(false) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    Ok(child)
}

fn stop_child(child: Option<&mut Child>) {
    if let Some(c) = child {
        if let Ok(pid) = i32::try_from(c.id()) {
            // SAFETY: kill with the pid of our own (not yet reaped) child and SIGTERM; no pointers.
            unsafe { libc::kill(pid, libc::SIGTERM) };
        }
        let _ = c.wait();
    }
}

/// The result table: events, lost, min, mean, p50 … p99.99 and max in µs, with its footnotes.
pub fn table(rows: &[Row]) -> String {
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
            us_or_dash(has.then_some(r.stats.min)),
            r.stats
                .mean_ns()
                .map_or("-".into(), |m| format!("{:.1}", m / 1000.0)),
        ];
        for p in r.histogram.percentiles().iter().take(5) {
            let star = if p.is_supported() { "" } else { "*" };
            c.push(p.value.map_or("-".into(), |v| format!("{}{star}", us(v))));
        }
        c.push(us_or_dash(has.then_some(r.stats.max)));
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

/// What each thread index of a respond run is, for the run's `config_json` (`rows`).
pub fn rows_json(rows: &[Row]) -> serde_json::Value {
    rows.iter()
        .enumerate()
        .map(|(i, r)| json!({"thread": i, "source": r.source, "path": r.path}))
        .collect()
}
