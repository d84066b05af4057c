//! What a load is and what it reports.

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
    /// `ok`, `failed` (exited early or non-zero, could not start) or `killed`.
    pub status: String,
    /// What went wrong, if anything (exit status, stderr tail, miscompares).
    pub error: Option<String>,
    /// What it counted; for an external tool, its exit status and output size.
    pub metrics: Vec<Metric>,
}
