//! The options of `rtscope cyclictest`: cyclictest's own, parsed by rtscope-ctopts.

use clap::Args;

/// Options of `rtscope cyclictest`.
#[derive(Debug, Clone, Args)]
pub struct CyclictestArgs {
    /// cyclictest options.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
    pub args: Vec<String>,
}
