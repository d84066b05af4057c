//! `rtscope man`: prints one man page, or writes every page, from the clap definition
//! (generation in the `rtscope-manual` crate).

use crate::cli::man::ManArgs;
use rtscope_common::error::ExitStatus;
use std::io::Write;

/// What the pages need besides the clap command.
pub fn inputs() -> rtscope_manual::Inputs<'static> {
    rtscope_manual::Inputs {
        cyclictest_usage: rtscope_ctopts::help::USAGE,
        date: "",
    }
}

/// Runs `rtscope man`.
pub fn run(a: &ManArgs, out: &mut dyn Write) -> anyhow::Result<ExitStatus> {
    let cmd = crate::cli::command();
    if let Some(dir) = &a.dir {
        let files = rtscope_manual::write_pages(&cmd, dir, inputs())?;
        writeln!(
            out,
            "{} man pages written to {}",
            files.len(),
            dir.display()
        )?;
        return Ok(ExitStatus::Success);
    }
    let path: Vec<&str> = a.command.iter().map(String::as_str).collect();
    let page =
        rtscope_manual::page(&cmd, &path, inputs()).map_err(|e| crate::usage(e.to_string()))?;
    out.write_all(page.roff.as_bytes())?;
    out.flush()?;
    Ok(ExitStatus::Success)
}
