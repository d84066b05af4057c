//! The options of `rtscope runs` and its actions.

use clap::{Args, Subcommand};
use std::path::PathBuf;

/// Options of `rtscope runs`.
#[derive(Debug, Clone, Args)]
pub struct RunsArgs {
    /// The run database [default: $RTSCOPE_DB, else ./rtscope.db]
    #[arg(long, value_name = "PATH", global = true)]
    pub db: Option<PathBuf>,
    /// Print JSON instead of text
    #[arg(long, global = true)]
    pub json: bool,
    /// What to do [default: list]
    #[command(subcommand)]
    pub action: Option<RunsAction>,
}

/// `rtscope runs` actions.
#[derive(Debug, Clone, Subcommand)]
pub enum RunsAction {
    /// List the runs, newest first
    List,
    /// Show one run in full: settings, per-thread statistics, environment
    Show {
        /// Run id, or `last`
        run: String,
    },
    /// Why the worst wake-ups of a run recorded with --explain were late
    Explain {
        /// Run id, or `last`
        run: String,
        /// Print the spikes' kernel stacks as folded stacks (`task;outermost;…;function NS`,
        /// weighted by the nanoseconds charged to the task) for flamegraph.pl or inferno
        #[arg(long, conflicts_with = "json")]
        folded: bool,
    },
    /// Set or remove tags of a run
    Tag {
        /// Run id, or `last`
        run: String,
        /// KEY=VALUE tags to set
        tags: Vec<String>,
        /// Tag keys to remove
        #[arg(long, value_name = "KEY")]
        remove: Vec<String>,
    },
    /// Delete runs and everything recorded with them
    Delete {
        /// Run ids, or `last`
        #[arg(required = true)]
        runs: Vec<String>,
    },
    /// Import the runs of another database (by UUID: merging twice adds nothing)
    Merge {
        /// The database to import from (upgraded to this schema version first)
        other: PathBuf,
        /// KEY=VALUE tag set on every imported run, e.g. --tag board=rpi4 (repeatable)
        #[arg(long = "tag", value_name = "KEY=VALUE")]
        tags: Vec<String>,
    },
}
