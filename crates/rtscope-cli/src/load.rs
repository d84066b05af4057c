//! `rtscope load KIND`: runs one load standalone, through the same shepherd as a campaign, until
//! `--for` has passed, the load ends, or Ctrl-C (SIGINT), SIGTERM or SIGHUP; then prints what
//! it did.
//!
//! Exit codes: 0 done (Ctrl-C is the normal end without `--for`), 1 the load failed (ended
//! early with an error, miscompares), 2 bad option or the program is not installed,
//! 3 interrupted before `--for` ran out.

use crate::exit::{ExitStatus, UsageError};
use clap::{Args, Subcommand, ValueEnum};
use rtscope_core::Nanos;
use rtscope_load::sys::{SigSet, STOP_SIGNALS};
use rtscope_load::{LoadError, LoadReport, LoadSpec, MsgMode, MsgTransport};
use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Options of `rtscope load`.
#[derive(Debug, Clone, Args)]
pub struct LoadArgs {
    /// Stop after this long (e.g. 30s, 10m) [default: until Ctrl-C or the load ends]
    #[arg(long = "for", value_name = "DURATION", global = true)]
    pub duration: Option<String>,
    /// Time the load gets to end after SIGTERM before it is SIGKILLed
    #[arg(long, value_name = "DURATION", default_value = "2s", global = true)]
    pub grace: String,
    /// Print the report as JSON instead of a table
    #[arg(long, global = true)]
    pub json: bool,
    /// The load to run
    #[command(subcommand)]
    pub kind: LoadKind,
}

/// Tasks of the messaging load.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ModeArg {
    /// Processes (hackbench's default)
    Processes,
    /// Threads of one process (hackbench --threads)
    Threads,
}

/// The kinds of load `rtscope load` runs.
#[derive(Debug, Clone, Subcommand)]
pub enum LoadKind {
    /// Senders and receivers passing messages, like hackbench
    Messaging {
        /// Groups of senders and receivers
        #[arg(long, short = 'g', default_value_t = 10)]
        groups: u32,
        /// Senders (and receivers) per group
        #[arg(long, short = 'f', default_value_t = 20)]
        fds: u32,
        /// Message size in bytes
        #[arg(long, short = 's', default_value_t = 100)]
        size: u32,
        /// Pipes instead of socket pairs
        #[arg(long, short = 'p')]
        pipe: bool,
        /// Processes or threads
        #[arg(long, value_enum, default_value_t = ModeArg::Processes)]
        mode: ModeArg,
    },
    /// Buffer copies with verification, like stressapptest
    Memory {
        /// Copy threads [default: one per CPU]
        #[arg(long, short = 't')]
        threads: Option<u32>,
        /// Memory in MiB, shared between the threads
        #[arg(long, short = 'm', default_value_t = 256)]
        megabytes: u64,
    },
    /// Threads spinning on arithmetic
    Cpu {
        /// Threads [default: one per CPU]
        #[arg(long, short = 't')]
        threads: Option<u32>,
    },
    /// Writes and fsyncs files in a scratch directory
    Io {
        /// Writer threads
        #[arg(long, short = 't', default_value_t = 1)]
        threads: u32,
        /// Where the scratch directory is made [default: the temp directory]
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
        /// File size in MiB per write-fsync cycle
        #[arg(long, default_value_t = 64)]
        file_mb: u64,
    },
    /// TCP round trips over loopback
    Network {
        /// Connections
        #[arg(long, short = 't', default_value_t = 1)]
        threads: u32,
        /// Message size in bytes
        #[arg(long, short = 's', default_value_t = 1024)]
        size: u32,
    },
    /// Any program, e.g. `rtscope load external -- hackbench -l 100000`
    External {
        /// The program and its arguments (after `--`)
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, required = true)]
        command: Vec<String>,
    },
}

impl LoadKind {
    /// The spec these options describe.
    pub fn to_spec(&self) -> LoadSpec {
        let cpus = || std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
        match self.clone() {
            LoadKind::Messaging {
                groups,
                fds,
                size,
                pipe,
                mode,
            } => LoadSpec::Messaging {
                groups,
                fds,
                size,
                transport: if pipe {
                    MsgTransport::Pipe
                } else {
                    MsgTransport::Socket
                },
                mode: match mode {
                    ModeArg::Processes => MsgMode::Processes,
                    ModeArg::Threads => MsgMode::Threads,
                },
            },
            LoadKind::Memory { threads, megabytes } => LoadSpec::Memory {
                threads: threads.unwrap_or_else(cpus),
                megabytes,
            },
            LoadKind::Cpu { threads } => LoadSpec::Cpu {
                threads: threads.unwrap_or_else(cpus),
            },
            LoadKind::Io {
                threads,
                dir,
                file_mb,
            } => LoadSpec::Io {
                threads,
                dir,
                file_mb,
            },
            LoadKind::Network { threads, size } => LoadSpec::Network { threads, size },
            LoadKind::External { mut command } => LoadSpec::External {
                program: command.remove(0),
                args: command,
            },
        }
    }
}

fn usage_from(e: LoadError) -> anyhow::Error {
    let mut u = UsageError::new(e.to_string());
    if let Some(h) = e.hint() {
        u = u.hint(h);
    }
    u.into()
}

fn duration(flag: &str, text: &str) -> anyhow::Result<Duration> {
    Nanos::parse_with_default_unit(text, "s")
        .map(|n| Duration::from_nanos(n.as_ns()))
        .map_err(|e| {
            UsageError::new(format!("{flag}: {e}"))
                .hint(format!("write e.g. `{flag} 30s`"))
                .into()
        })
}

/// Runs `rtscope load`.
pub fn run(a: &LoadArgs, out: &mut dyn Write) -> anyhow::Result<ExitStatus> {
    let spec = a.kind.to_spec();
    let limit = a
        .duration
        .as_deref()
        .map(|d| duration("--for", d))
        .transpose()?;
    let grace = duration("--grace", &a.grace)?;
    rtscope_load::validate(&spec).map_err(usage_from)?;
    let exe = std::env::current_exe()
        .map_err(|e| anyhow::anyhow!("cannot find the rtscope executable: {e}"))?;
    let signals = SigSet::of(&STOP_SIGNALS);
    signals.block();
    let result = supervise(&spec, &exe, limit, grace, &signals);
    while signals.wait(Duration::ZERO).is_some() {} // a second Ctrl-C must not kill the report
    signals.unblock();
    let (reports, interrupted) = result?;
    if a.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&reports)?)?;
    } else {
        write_table(out, &reports)?;
    }
    Ok(if reports.iter().any(|r| r.status == "failed") {
        ExitStatus::LimitExceeded
    } else if interrupted && limit.is_some() {
        ExitStatus::Interrupted
    } else {
        ExitStatus::Success
    })
}

/// Starts the load and waits for the end; returns the reports and whether a signal ended it.
fn supervise(
    spec: &LoadSpec,
    exe: &std::path::Path,
    limit: Option<Duration>,
    grace: Duration,
    signals: &SigSet,
) -> anyhow::Result<(Vec<LoadReport>, bool)> {
    let mut loads = rtscope_load::start(std::slice::from_ref(spec), exe).map_err(usage_from)?;
    let until = limit.map(|l| Instant::now() + l);
    eprintln!(
        "rtscope load: {} running (pid {:?}){}",
        spec.name(),
        loads.pids(),
        if limit.is_some() {
            ""
        } else {
            "; Ctrl-C stops it"
        }
    );
    let mut interrupted = false;
    loop {
        if signals.wait(Duration::from_millis(50)).is_some() {
            interrupted = true;
            break;
        }
        if until.is_some_and(|u| Instant::now() >= u) {
            break;
        }
        let ended = loads.poll();
        for e in &ended {
            eprintln!(
                "rtscope load: {} (pid {}) ended: {}",
                e.name, e.pid, e.status
            );
        }
        if !ended.is_empty() {
            break; // one load per command: nothing left to run
        }
    }
    Ok((loads.stop(grace), interrupted))
}

fn number(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

/// The reports as a table: one row per metric.
pub fn write_table(out: &mut dyn Write, reports: &[LoadReport]) -> std::io::Result<()> {
    writeln!(
        out,
        "{:<12} {:<9} {:>9}  {:<16} {:>18}  unit",
        "load", "status", "ran (s)", "metric", "value"
    )?;
    for r in reports {
        let ran = format!("{:.2}", r.ran_ns as f64 / 1e9);
        let mut first = true;
        for m in &r.metrics {
            let (n, s, t) = if first {
                (&r.name[..], &r.status[..], &ran[..])
            } else {
                ("", "", "")
            };
            first = false;
            writeln!(
                out,
                "{n:<12} {s:<9} {t:>9}  {:<16} {:>18}  {}",
                m.name,
                number(m.value),
                m.unit
            )?;
        }
        if first {
            writeln!(out, "{:<12} {:<9} {ran:>9}", r.name, r.status)?;
        }
        writeln!(out, "command: {}", r.command_line.join(" "))?;
        if let Some(e) = &r.error {
            writeln!(out, "error: {e}")?;
        }
    }
    Ok(())
}
