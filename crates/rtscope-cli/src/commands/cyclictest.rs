//! `rtscope cyclictest ARGS` and the `cyclictest` symlink (rtscope-cyclictest): the arguments
//! are cyclictest's, parsed by its getopt-compatible parser, not by clap.

use rtscope_common::error::ExitStatus;
use std::io::Write;

/// Runs `rtscope cyclictest`; `cmdline` is the whole command line as typed (for JSON).
pub fn run(args: &[String], cmdline: &str, out: &mut dyn Write) -> anyhow::Result<ExitStatus> {
    rtscope_cyclictest::run(args, cmdline, out).map_err(crate::lift)
}
