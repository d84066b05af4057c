//! What a load is and what it reports.

use crate::LoadError;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// Messaging over socket pairs or pipes (like hackbench).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MsgTransport {
    /// `socketpair(AF_UNIX, SOCK_STREAM)` (hackbench's default).
    Socket,
    /// `pipe(2)` (hackbench `--pipe`).
    Pipe,
}

/// Whether messaging tasks are threads or processes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MsgMode {
    /// One process, many threads (hackbench `--threads`).
    Threads,
    /// Many processes (hackbench `--process`, its default).
    Processes,
}

/// One load of a load case. Serialised as JSON with a `kind` tag; the same JSON is what the
/// store records and what the load worker process is started with.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum LoadSpec {
    /// Like hackbench: `groups` groups of `fds` senders and `fds` receivers; every sender
    /// sends `size`-byte messages to every receiver of its group, round after round, until
    /// the load is stopped.
    Messaging {
        /// Groups (hackbench `-g`, default 10).
        groups: u32,
        /// Senders and receivers per group (hackbench `-f`, default 20).
        fds: u32,
        /// Message size in bytes (hackbench `-s`, default 100).
        size: u32,
        /// Socket pairs or pipes.
        transport: MsgTransport,
        /// Threads or processes.
        mode: MsgMode,
    },
    /// Like stressapptest: `threads` threads copy buffers (of `megabytes` MiB in total)
    /// filled with a pattern, and verify every copy; reports bandwidth and miscompares.
    Memory {
        /// Copy threads (stressapptest `-m`).
        threads: u32,
        /// Memory in MiB shared between the threads (stressapptest `-M`).
        megabytes: u64,
    },
    /// `threads` threads each spinning on arithmetic.
    Cpu {
        /// Threads.
        threads: u32,
    },
    /// `threads` threads each writing `file_mb` MiB files with `fsync` in a scratch directory
    /// created under `dir` and removed at the end.
    Io {
        /// Threads.
        threads: u32,
        /// Where the scratch directory is made (default: the system temp directory).
        dir: Option<PathBuf>,
        /// File size in MiB per write-fsync cycle.
        file_mb: u64,
    },
    /// `threads` TCP connections over loopback, each streaming `size`-byte messages to an
    /// echo peer and reading them back.
    Network {
        /// Connections (each with a client and a server thread).
        threads: u32,
        /// Message size in bytes.
        size: u32,
    },
    /// An external program (`hackbench`, `stress-ng`, `stressapptest`, …), started with
    /// `args` and stopped at the end of the run; its exact command line is recorded.
    External {
        /// The program, found on `PATH` unless it contains a `/`.
        program: String,
        /// Its arguments.
        args: Vec<String>,
    },
}

/// One thing a load counted, e.g. (`messages`, 1.2e6, `messages`) or (`bandwidth`, 5300,
/// `MB/s`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Metric {
    /// Name, e.g. `messages`, `bytes`, `copies`, `miscompares`, `fsyncs`, `ops`.
    pub name: String,
    /// Value.
    pub value: f64,
    /// Unit, e.g. `messages`, `bytes`, `MB/s`, `ops`.
    pub unit: String,
}

pub(crate) use rtscope_core::LoadStatus;

/// [`LoadStatus`] in the shepherd's JSON reports: its name (`ok`, `failed`, …).
mod status_json {
    use super::LoadStatus;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(s: &LoadStatus, to: S) -> Result<S::Ok, S::Error> {
        to.serialize_str(s.as_str())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(from: D) -> Result<LoadStatus, D::Error> {
        let s = String::deserialize(from)?;
        LoadStatus::parse(&s)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown load status {s:?}")))
    }
}

/// What one load did during a run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LoadReport {
    /// Short name for tables, e.g. `messaging`, `memory`, `hackbench`.
    pub name: String,
    /// The spec it was started from.
    pub spec: LoadSpec,
    /// The exact command line that was executed (argv).
    pub command_line: Vec<String>,
    /// How long it ran, in nanoseconds.
    pub ran_ns: u64,
    /// How it ended.
    #[serde(with = "status_json")]
    pub status: LoadStatus,
    /// What went wrong, if anything (exit status, stderr tail, miscompares).
    pub error: Option<String>,
    /// What it counted; for an external tool, its exit status and output size.
    pub metrics: Vec<Metric>,
    /// For an external tool: the last few KiB of what it printed (stdout, then stderr); for a
    /// built-in load: its worker's stderr, when it wrote any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tail: Option<String>,
}

impl Metric {
    /// A metric `name` = `value` `unit`.
    pub fn new(name: &str, value: f64, unit: &str) -> Metric {
        Metric {
            name: name.to_string(),
            value,
            unit: unit.to_string(),
        }
    }
}

impl LoadReport {
    /// The metric called `name`, if the load reported one.
    pub fn metric(&self, name: &str) -> Option<f64> {
        self.metrics
            .iter()
            .find(|m| m.name == name)
            .map(|m| m.value)
    }
}

impl LoadSpec {
    /// The kind tag: `messaging`, `memory`, `cpu`, `io`, `network` or `external`.
    pub fn kind(&self) -> &'static str {
        match self {
            LoadSpec::Messaging { .. } => "messaging",
            LoadSpec::Memory { .. } => "memory",
            LoadSpec::Cpu { .. } => "cpu",
            LoadSpec::Io { .. } => "io",
            LoadSpec::Network { .. } => "network",
            LoadSpec::External { .. } => "external",
        }
    }

    /// A short name for tables: the kind, or an external program's file name.
    pub fn name(&self) -> String {
        match self {
            LoadSpec::External { program, .. } => std::path::Path::new(program)
                .file_name()
                .map_or_else(|| program.clone(), |n| n.to_string_lossy().into_owned()),
            other => other.kind().to_string(),
        }
    }

    /// Checks the values (counts at least 1, sizes in range); does not look for programs (see
    /// [`crate::validate`]).
    pub fn check(&self) -> Result<(), LoadError> {
        let kind = self.kind();
        let positive = |field: &'static str, v: u64, max: u64| {
            if v == 0 || v > max {
                return Err(LoadError::BadSpec {
                    kind,
                    field,
                    value: v.to_string(),
                    expected: format!("allowed: 1 to {max}"),
                });
            }
            Ok(())
        };
        match self {
            LoadSpec::Messaging {
                groups, fds, size, ..
            } => {
                positive("groups", *groups as u64, 1000)?;
                positive("fds", *fds as u64, 1000)?;
                positive("groups × fds", *groups as u64 * *fds as u64, 4096)?;
                positive("size", *size as u64, 1 << 20)
            }
            LoadSpec::Memory { threads, megabytes } => {
                positive("threads", *threads as u64, 1024)?;
                positive("megabytes", *megabytes, 1 << 20)
            }
            LoadSpec::Cpu { threads } => positive("threads", *threads as u64, 1024),
            LoadSpec::Io {
                threads, file_mb, ..
            } => {
                positive("threads", *threads as u64, 1024)?;
                positive("file_mb", *file_mb, 1 << 20)
            }
            LoadSpec::Network { threads, size } => {
                positive("threads", *threads as u64, 1024)?;
                positive("size", *size as u64, 1 << 24)
            }
            LoadSpec::External { program, .. } if program.is_empty() => Err(LoadError::BadSpec {
                kind,
                field: "program",
                value: "\"\"".into(),
                expected: "name the program to run".into(),
            }),
            LoadSpec::External { .. } => Ok(()),
        }
    }
}
