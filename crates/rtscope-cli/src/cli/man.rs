//! The options of `rtscope man` and `rtscope completions`: the pages and scripts generated
//! from this definition.

use clap::{Args, ValueEnum};
use std::path::PathBuf;

/// The shells `rtscope completions` writes for: those of the Linux systems rtscope runs on (the
/// .debs install these three). Not clap_complete's whole `Shell`: its Elvish and PowerShell
/// generators would cost the x86-64 binary's size budget for shells no board runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CompletionShell {
    /// bash (bash-completion).
    Bash,
    /// zsh.
    Zsh,
    /// fish.
    Fish,
}

/// Options of `rtscope man`.
#[derive(Debug, Clone, Args)]
pub struct ManArgs {
    /// The subcommand whose page to print, e.g. `measure` or `runs show` [default: rtscope(1)]
    #[arg(value_name = "SUBCOMMAND", conflicts_with = "dir")]
    pub command: Vec<String>,
    /// Write every page (rtscope.1, rtscope-measure.1 …) into this directory instead
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}
