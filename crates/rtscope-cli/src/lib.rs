//! rtscope-cli: rtscope's front ends.
//!
//! * [`measure`]: the native `rtscope measure`, with percentiles, missed periods, CI limits and
//!   a versioned JSON schema;
//! * [`cyclictest`]: `rtscope cyclictest` and the `cyclictest` symlink, option- and
//!   format-compatible with cyclictest 2.x;
//! * [`exit`]: the exit codes every front end uses.
//!
//! The binary calls [`main_with_args`] and nothing else.

#![warn(missing_docs)]

pub mod campaign;
pub mod checks;
pub mod cli;
pub mod compare;
pub mod cyclictest;
pub mod environment;
pub mod exit;
pub mod export;
pub mod import;
pub mod load;
pub mod manual;
pub mod measure;
pub mod monitoring;
pub mod record;
pub mod report;
pub mod respond;
pub mod runs;
pub mod select;
pub mod session;
pub mod sysinfo;

use clap::Parser;
use exit::{ExitStatus, UsageError};
use std::io::Write;

/// Runs rtscope with the process arguments (`argv[0]` included) and returns the exit status.
/// Errors are printed to stderr as `error: …` (with a `hint:` where there is one).
pub fn main_with_args(argv: Vec<String>) -> ExitStatus {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let result = dispatch(&argv, &mut out);
    match result {
        Ok(s) => s,
        Err(e) if exit::is_broken_pipe(&e) => ExitStatus::Success,
        Err(e) => {
            let _ = out.flush();
            report_error(&e);
            ExitStatus::Usage
        }
    }
}

fn report_error(e: &anyhow::Error) {
    let mut msg = format!("error: {e}");
    for cause in e.chain().skip(1) {
        msg.push_str(&format!("\n  caused by: {cause}"));
    }
    eprintln!("{msg}");
}

fn invoked_as_cyclictest(argv0: &str) -> bool {
    std::path::Path::new(argv0)
        .file_name()
        .is_some_and(|n| n == "cyclictest")
}

fn dispatch(argv: &[String], out: &mut dyn Write) -> anyhow::Result<ExitStatus> {
    match argv.get(1).map(String::as_str) {
        Some("__load") => return Ok(hidden_status(rtscope_load::worker_main(&argv[2..]))),
        Some("__shepherd") => return Ok(hidden_status(rtscope_load::shepherd_main(&argv[2..]))),
        _ => {}
    }
    if argv.first().is_some_and(|a| invoked_as_cyclictest(a)) {
        return cyclictest::run(&argv[1..], &argv.join(" "), out);
    }
    let cli = match cli::Cli::try_parse_from(argv) {
        Ok(c) => c,
        Err(e)
            if matches!(
                e.kind(),
                clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion
            ) =>
        {
            write!(out, "{e}")?;
            return Ok(ExitStatus::Success);
        }
        Err(e) => {
            let _ = e.print();
            return Ok(ExitStatus::Usage);
        }
    };
    match cli.command {
        cli::Command::Measure(a) => measure::run(&a, argv.to_vec(), out),
        cli::Command::Cyclictest { args } => cyclictest::run(&args, &argv.join(" "), out),
        cli::Command::Runs(a) => runs::run(&a, out),
        cli::Command::Import(a) => import::run(&a, out),
        cli::Command::Export(a) => export::run(&a, out),
        cli::Command::Respond(a) => respond::run(&a, argv.to_vec(), out),
        cli::Command::Run(a) => campaign::run(&a, argv, out),
        cli::Command::Load(a) => load::run(&a, out),
        cli::Command::Compare(a) => compare::run(&a, out),
        cli::Command::Report(a) => report::run(&a, out),
        cli::Command::Completions { shell } => {
            clap_complete::generate(shell, &mut cli::command(), "rtscope", out);
            Ok(ExitStatus::Success)
        }
        cli::Command::Man(a) => manual::run(&a, out),
    }
}

/// The exit status of the hidden `__load` / `__shepherd` entry points (0, 1 or 2).
fn hidden_status(code: i32) -> ExitStatus {
    match code {
        0 => ExitStatus::Success,
        1 => ExitStatus::LimitExceeded,
        _ => ExitStatus::Usage,
    }
}

/// Converts a usage error into the anyhow error the front ends return.
pub fn usage(msg: impl Into<String>) -> anyhow::Error {
    UsageError::new(msg).into()
}
