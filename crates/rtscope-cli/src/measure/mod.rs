//! `rtscope measure`: the native front end.

pub mod json;
pub mod limits;
mod recording;
pub mod table;

use crate::checks::cpu_list;
use crate::cli::{ClockArg, MeasureArgs, PolicyArg};
use crate::exit::{ExitStatus, UsageError};
use crate::record::{RecordSpec, Recording};
use crate::session::{self, Event};
use crate::sysinfo::{self, SysInfo};
use anyhow::Context;
use limits::{Check, Limit};
use rtscope_core::{Nanos, Stats};
use rtscope_engine::{
    knobs::DmaLatencyGuard, sys, ClockKind, CpuSet, Policy, Run, RunConfig, RunResult, SleepMode,
    ThreadSpec,
};
use std::io::{IsTerminal, Write};

/// Default run length when neither --duration nor --loops is given.
pub const DEFAULT_DURATION: Nanos = Nanos::from_secs(60);

fn dur(text: &str, flag: &str, default_unit: &str) -> Result<Nanos, UsageError> {
    Nanos::parse_with_default_unit(text, default_unit)
        .map_err(|e| UsageError::new(format!("invalid value for '{flag}': {e}")))
}

fn policy(a: &MeasureArgs, interval: Nanos) -> Result<Policy, UsageError> {
    Ok(match a.policy {
        PolicyArg::Fifo => Policy::Fifo,
        PolicyArg::Rr => Policy::Rr,
        PolicyArg::Other => Policy::Other,
        PolicyArg::Batch => Policy::Batch,
        PolicyArg::Idle => Policy::Idle,
        PolicyArg::Deadline => {
            let period = a
                .dl_period
                .as_deref()
                .map(|t| dur(t, "--dl-period", "us"))
                .transpose()?
                .unwrap_or(interval);
            let deadline = a
                .dl_deadline
                .as_deref()
                .map(|t| dur(t, "--dl-deadline", "us"))
                .transpose()?
                .unwrap_or(period);
            let runtime = a
                .dl_runtime
                .as_deref()
                .map(|t| dur(t, "--dl-runtime", "us"))
                .transpose()?
                .ok_or_else(|| {
                    UsageError::new(
                        "'--policy deadline' needs '--dl-runtime' (e.g. --dl-runtime 100us)",
                    )
                })?;
            if runtime.0 < 1024 || runtime > deadline || deadline > period {
                return Err(UsageError::new(format!("invalid SCHED_DEADLINE parameters: need 1024ns <= runtime ({runtime}) <= deadline ({deadline}) <= period ({period})")));
            }
            Policy::Deadline {
                runtime,
                deadline,
                period,
            }
        }
    })
}

/// Validates the options and builds the run configuration and the limits.
pub fn plan(a: &MeasureArgs, online: &CpuSet) -> Result<(RunConfig, Vec<Limit>), UsageError> {
    let cpus = match &a.cpus {
        Some(t) => cpu_list(t, online, "--cpus")?,
        None => online.clone(),
    };
    let n = a.threads.unwrap_or(cpus.len());
    let max = crate::checks::max_threads();
    if n == 0 || n > max {
        return Err(UsageError::new(format!(
            "invalid value '{n}' for '--threads': use 1..{max}"
        )));
    }
    let interval = dur(&a.interval, "--interval", "us")?;
    if interval.0 == 0 {
        return Err(UsageError::new(
            "invalid value for '--interval': the interval must be greater than 0",
        ));
    }
    let distance = dur(&a.distance, "--distance", "us")?;
    let pol = policy(a, interval)?;
    if pol.is_realtime_priority() && !(1..=99).contains(&a.priority) {
        return Err(UsageError::new(format!(
            "invalid value '{}' for '--priority': {} needs 1..99",
            a.priority,
            pol.name()
        )));
    }
    // The kernel refuses SCHED_DEADLINE for a thread whose affinity is narrower than its root
    // domain, so deadline threads are not pinned.
    let deadline = matches!(pol, Policy::Deadline { .. });
    if deadline && a.cpus.is_some() {
        return Err(UsageError::new("'--cpus' cannot be combined with '--policy deadline': the kernel does not allow pinning SCHED_DEADLINE threads").hint("use --threads N to choose how many deadline threads run; isolate CPUs with cpusets for deadline tasks"));
    }
    let threads = (0..n)
        .map(|i| ThreadSpec {
            affinity: (!deadline).then(|| CpuSet::from_cpus([cpus.nth_cyclic(i)])),
            policy: pol,
            priority: if a.priospread && pol.is_realtime_priority() {
                (a.priority - i as i32).max(1)
            } else {
                a.priority
            },
            interval: interval + Nanos(distance.0 * i as u64),
        })
        .collect();
    let mut c = RunConfig::new(threads);
    c.clock = if a.clock == ClockArg::Realtime {
        ClockKind::Realtime
    } else {
        ClockKind::Monotonic
    };
    c.sleep = if a.relative {
        SleepMode::Relative
    } else {
        SleepMode::Absolute
    };
    c.loops = a.loops;
    c.duration = match (&a.duration, a.loops) {
        (Some(d), _) => Some(dur(d, "--duration", "s")?).filter(|d| d.0 > 0),
        (None, Some(_)) => None,
        (None, None) => Some(DEFAULT_DURATION),
    };
    c.mlock = !a.no_mlock;
    c.event_threshold = a
        .event_above
        .as_deref()
        .map(|t| dur(t, "--event-above", "us"))
        .transpose()?;
    c.event_capacity = a.event_capacity;
    if a.raw {
        // Room for four checkpoint periods (at most 1 s each) of samples, at least 64 Ki.
        let fastest = c
            .threads
            .iter()
            .map(|t| t.interval.0)
            .min()
            .unwrap_or(1)
            .max(1);
        c.sample_ring = Some(((4_000_000_000 / fastest) as usize).max(1 << 16));
    }
    let limits = a
        .limits
        .iter()
        .map(|l| limits::parse(l))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((c, limits))
}

/// Runs `rtscope measure`.
pub fn run(
    a: &MeasureArgs,
    command_line: Vec<String>,
    out: &mut dyn Write,
) -> anyhow::Result<ExitStatus> {
    let online = sys::online_cpus();
    let (config, limits) = plan(a, &online)?;
    let main_cpus = a
        .main_cpus
        .as_deref()
        .map(|t| cpu_list(t, &online, "--main-cpus"))
        .transpose()?;
    let tick = series_interval(a)?;
    let monitor_interval = monitor_interval(&a.monitor_interval, "--monitor-interval")?;
    let store = recording::open_store(a)?;
    let _dma = a.latency.map(DmaLatencyGuard::set).transpose()?;
    writeln!(out, "{}", headline(&config, a.latency))?;
    out.flush()?;
    let run = Run::start(config.clone())?;
    if let Some(m) = &main_cpus {
        sys::set_affinity_current(m)
            .with_context(|| format!("cannot pin the main thread to CPUs {m} (--main-cpus)"))?;
    }
    let config_json = serde_json::to_string(&config_doc(&config, a.latency))?;
    let spec = RecordSpec {
        kind: "measure",
        label: a.label.clone(),
        tags: a.tags.clone(),
        command_line: command_line.clone(),
        config_json,
        monitor_interval,
    };
    let mut rec = Recording::begin(store, spec, &config, &run, std::time::Duration::ZERO)?;
    let mut progress = Progress::new(!a.quiet, config.duration);
    let outcome = session::drive(run, tick, |run, ev| {
        if ev == Event::Tick {
            rec.tick(run);
        }
        progress.update(run, ev)
    })?;
    progress.clear();
    let r = &outcome.result;
    let status = report(a, &config, &limits, r, outcome.signal, command_line, out)?;
    let (line, failed) = rec.finish(r, outcome.signal.is_some(), status.code());
    if let Some(line) = line {
        writeln!(out, "{line}")?;
    }
    Ok(if failed { ExitStatus::Usage } else { status })
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

fn headline(c: &RunConfig, latency: Option<i32>) -> String {
    let t = &c.threads[0];
    let cpus = c.pinned_cpus();
    let length = match (c.duration, c.loops) {
        (Some(d), Some(l)) => format!("{d} or {l} loops"),
        (Some(d), None) => d.to_string(),
        (None, Some(l)) => format!("{l} loops"),
        (None, None) => "until stopped".into(),
    };
    let sleep = if c.sleep == SleepMode::Absolute {
        "absolute"
    } else {
        "relative"
    };
    let clock = if c.clock == ClockKind::Monotonic {
        "CLOCK_MONOTONIC"
    } else {
        "CLOCK_REALTIME"
    };
    let dma = latency.map_or("cpu_dma_latency untouched".to_string(), |l| {
        format!("cpu_dma_latency={l}us")
    });
    let sched = match t.policy {
        Policy::Deadline {
            runtime,
            deadline,
            period,
        } => {
            format!("SCHED_DEADLINE runtime {runtime} deadline {deadline} period {period}")
        }
        p => format!("SCHED_{} prio {}", p.name().to_uppercase(), t.priority),
    };
    let place = if cpus.is_empty() {
        "unpinned".to_string()
    } else {
        format!("on CPUs {cpus}")
    };
    format!(
        "rtscope measure: {} thread{} {place}, {sched}, interval {}, {length}, {sleep} clock_nanosleep on {clock}, mlock {}, {dma}",
        c.threads.len(),
        if c.threads.len() == 1 { "" } else { "s" },
        t.interval,
        if c.mlock { "on" } else { "off" }
    )
}

fn report(
    a: &MeasureArgs,
    c: &RunConfig,
    limits: &[Limit],
    r: &RunResult,
    signal: Option<i32>,
    command_line: Vec<String>,
    out: &mut dyn Write,
) -> anyhow::Result<ExitStatus> {
    let total_stats = r.total_stats();
    let total_hist = r.total_histogram();
    let offset = |s: &Stats| Nanos(s.max_time.0.saturating_sub(r.clock_start.0));
    let mut rows: Vec<table::Row> = r
        .threads
        .iter()
        .map(|t| table::Row {
            label: t.index.to_string(),
            cpu: t.cpu.map_or("-".into(), |c| c.to_string()),
            stats: &t.stats,
            hist: &t.histogram,
            max_at: (t.stats.count > 0).then(|| offset(&t.stats)),
        })
        .collect();
    rows.push(table::Row {
        label: "all".into(),
        cpu: "-".into(),
        stats: &total_stats,
        hist: &total_hist,
        max_at: (total_stats.count > 0).then(|| offset(&total_stats)),
    });
    let mut checks: Vec<Check> = Vec::new();
    for t in &r.threads {
        let scope = t.cpu.map_or(format!("thread {}", t.index), |cpu| {
            if r.threads.len() == c.threads.len() && a.threads.is_none() {
                format!("cpu {cpu}")
            } else {
                format!("thread {} (cpu {cpu})", t.index)
            }
        });
        checks.extend(limits::check(limits, &scope, &t.stats, &t.histogram));
    }
    checks.extend(limits::check(limits, "all", &total_stats, &total_hist));
    let failed = checks.iter().any(|c| !c.passed);
    let status = if failed {
        ExitStatus::LimitExceeded
    } else if signal.is_some() {
        ExitStatus::Interrupted
    } else {
        ExitStatus::Success
    };
    let mut text = table::render(&rows);
    if let Some(s) = signal {
        text.push_str(&format!(
            "interrupted by {} after {:.3}s: the results cover the part that ran\n",
            signame(s),
            r.ended
                .duration_since(r.started)
                .unwrap_or_default()
                .as_secs_f64()
        ));
    }
    text.push_str(&table::render_checks(&checks));
    if let Some(path) = &a.json {
        let doc = document(
            c,
            a.latency,
            r,
            signal,
            status,
            command_line,
            &checks,
            &total_stats,
            &total_hist,
        );
        let body = serde_json::to_string_pretty(&doc)? + "\n";
        std::fs::write(path, body).map_err(|e| {
            UsageError::new(format!(
                "cannot write the JSON file '{}' (--json): {e}",
                path.display()
            ))
        })?;
    }
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(status)
}

fn signame(s: i32) -> &'static str {
    if s == libc::SIGINT {
        "SIGINT"
    } else {
        "SIGTERM"
    }
}

#[allow(clippy::too_many_arguments)]
fn document(
    c: &RunConfig,
    latency: Option<i32>,
    r: &RunResult,
    signal: Option<i32>,
    status: ExitStatus,
    command_line: Vec<String>,
    checks: &[Check],
    total_stats: &Stats,
    total_hist: &rtscope_core::Histogram,
) -> json::Doc {
    let offset = |s: &Stats| s.max_time.0.saturating_sub(r.clock_start.0);
    let threads = r
        .threads
        .iter()
        .map(|t| {
            let mut s = json::series(&t.stats, &t.histogram, Some(offset(&t.stats)));
            s.thread = Some(t.index);
            s.tid = Some(t.tid);
            s.cpu = t.cpu;
            s.policy = Some(t.policy.name().to_string());
            s.priority = Some(t.priority);
            s.interval_ns = Some(t.interval.0);
            s
        })
        .collect();
    json::Doc {
        schema: json::SCHEMA,
        tool: json::Tool {
            name: "rtscope",
            version: env!("CARGO_PKG_VERSION"),
        },
        command_line,
        started: sysinfo::rfc3339(r.started),
        ended: sysinfo::rfc3339(r.ended),
        duration_ns: r
            .ended
            .duration_since(r.started)
            .unwrap_or_default()
            .as_nanos() as u64,
        complete: signal.is_none(),
        interrupted_by: signal.map(|s| signame(s).to_string()),
        exit_code: status.code(),
        system: SysInfo::read(),
        config: config_doc(c, latency),
        threads,
        total: json::series(total_stats, total_hist, Some(offset(total_stats))),
        limits: checks.iter().map(json::LimitJson::from).collect(),
    }
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

    fn update(&mut self, run: &Run, ev: Event) -> std::io::Result<()> {
        if !self.enabled || ev != Event::Tick {
            return Ok(());
        }
        self.ticks += 1;
        if !self.tty && self.ticks % 60 != 0 {
            return Ok(());
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
        if self.tty {
            write!(e, "\r\x1b[2K{line}")?;
            self.shown = true;
        } else {
            writeln!(e, "{line}")?;
        }
        e.flush()
    }

    fn clear(&mut self) {
        if self.shown {
            eprint!("\r\x1b[2K");
        }
    }
}

/// The settings of a run, as JSON and the database record them.
pub(crate) fn config_doc(c: &RunConfig, latency: Option<i32>) -> json::Config {
    let t0 = &c.threads[0];
    json::Config {
        policy: t0.policy.name().to_string(),
        priority: t0.priority,
        interval_ns: t0.interval.0,
        clock: if c.clock == ClockKind::Monotonic {
            "monotonic"
        } else {
            "realtime"
        }
        .into(),
        sleep: if c.sleep == SleepMode::Absolute {
            "absolute"
        } else {
            "relative"
        }
        .into(),
        loops: c.loops,
        duration_ns: c.duration.map(|d| d.0),
        mlock: c.mlock,
        cpu_dma_latency_us: latency,
    }
}
