//! The fleet options shared by `measure`, `run` and `check`.

use clap::Args;
use std::path::PathBuf;

/// Runs on boards over ssh (`measure`, `run`, `check`; docs/fleet.md).
#[derive(Debug, Clone, Args)]
pub struct FleetArgs {
    /// Run on this board over ssh instead of here (repeatable): a board of targets.toml, every
    /// board with a tag KEY=VALUE, `all`, or [user@]host[:port]; runs are merged here tagged
    /// board=NAME
    #[arg(long = "target", value_name = "BOARD", help_heading = "Fleet")]
    pub targets: Vec<String>,
    /// The boards file [default: $RTSCOPE_TARGETS, else ./targets.toml]
    #[arg(long, value_name = "FILE", help_heading = "Fleet")]
    pub targets_file: Option<PathBuf>,
    /// Boards run at the same time with --target, each over one ssh connection [default: every
    /// board, at most 16]
    #[arg(long, value_name = "N", help_heading = "Fleet",
          value_parser = clap::value_parser!(u16).range(1..=256))]
    pub target_jobs: Option<u16>,
}
