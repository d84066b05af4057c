//! Where a run is recorded: the options `measure`, `noise` and `respond` share.

use clap::Args;
use std::path::PathBuf;

/// `--db`, `--no-db`, `--label`, `--tag`.
#[derive(Debug, Clone, Default, Args)]
pub struct RecordArgs {
    /// The run database [default: $RTSCOPE_DB, else ./rtscope.db]
    #[arg(long, value_name = "PATH", help_heading = "Recording")]
    pub db: Option<PathBuf>,
    /// Do not record the run in the database
    #[arg(long, conflicts_with = "db", help_heading = "Recording")]
    pub no_db: bool,
    /// A name for the run, e.g. idle, hackbench or isolated
    #[arg(long, value_name = "NAME", help_heading = "Recording")]
    pub label: Option<String>,
    /// A free-form tag, e.g. --tag kernel=rt --tag board=rpi4 (repeatable)
    #[arg(long = "tag", value_name = "KEY=VALUE", help_heading = "Recording")]
    pub tags: Vec<String>,
}
