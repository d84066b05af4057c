//! The options of `rtscope load`, and the load spec they describe.

use crate::cli::values::{one_of, Named};
use clap::{Args, Subcommand};
use rtscope_load::{LoadSpec, MsgMode, MsgTransport};
use std::path::PathBuf;

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
const MODES: [Named<MsgMode>; 2] = [
    (
        MsgMode::Processes,
        "processes",
        "Processes (hackbench's default)",
    ),
    (
        MsgMode::Threads,
        "threads",
        "Threads of one process (hackbench --threads)",
    ),
];

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
        #[arg(long, value_parser = one_of(MODES), default_value = "processes")]
        mode: MsgMode,
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
                mode,
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
