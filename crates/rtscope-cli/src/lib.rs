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

pub mod cli;
pub mod commands;
pub mod exit;
pub mod manual;

use clap::Parser;
use rtscope_common::error::{ExitStatus, UsageError};
use std::io::Write;

/// Runs rtscope with the process arguments (`argv[0]` included) and returns the exit status.
/// Arguments are bytes on Linux: clap reads them as `OsString`s, so a path option takes any
/// file name; an argument that is not UTF-8 where text is needed is a usage error, never a
/// panic. Errors are printed to stderr as `error: …`, the `caused by:` chain, then `hint:`.
pub fn main_with_args(argv: Vec<std::ffi::OsString>) -> ExitStatus {
    // First of all, before the options are parsed and before any thread starts: a stop signal
    // in the first instants waits for the command's control loop (exit 3, its run kept as
    // interrupted) instead of killing the process by its default action with nothing
    // recorded; a command that takes no run's signals gives them back once it is known
    // (`takes_run_signals`).
    rtscope_common::signals::hold_signals();
    // Before any database opens: SQLite's memory from the global allocator, which keeps what
    // is freed, not the C library's (musl's hands it back with a munmap, a TLB-flush interrupt
    // on the measured CPUs; rtscope_store::sqlite_alloc).
    rtscope_store::sqlite_alloc::use_global_allocator();
    let stdout = std::io::stdout();
    // Every command writes standard output through the one rule of `exit::StdoutGuard`: a
    // closed pipe keeps the command's own exit code and prints nothing, any other failure is
    // printed once; what is still buffered is flushed by the verdict, through the same rule.
    let mut out = exit::StdoutGuard::new(stdout.lock());
    let result = dispatch(&argv, &mut out);
    let (status, message) = out.verdict(result);
    if let Some(m) = message {
        let _ = writeln!(std::io::stderr(), "{m}");
    }
    status
}

fn invoked_as_cyclictest(argv0: &str) -> bool {
    std::path::Path::new(argv0)
        .file_name()
        .is_some_and(|n| n == "cyclictest")
}

/// Whether `rtscope cyclictest …` can skip clap: its options are cyclictest's, passed through
/// as they are, so clap only builds the command tree of every subcommand to hand them on —
/// about 500 KiB of heap and a few hundred KiB of code made resident, a quarter of the
/// process's peak RSS against cyclictest's (issue 68 item 5, BENCHMARKS.md). Whatever clap
/// would read itself (the global `--follow-symlinks`, `--`, an argument that is not UTF-8)
/// still goes through clap, so both paths mean the same.
fn cyclictest_without_clap(argv_os: &[std::ffi::OsString]) -> bool {
    argv_os.get(1).is_some_and(|a| a == "cyclictest")
        && argv_os[2..].iter().all(|a| {
            a.to_str()
                .is_some_and(|s| s != "--" && !s.starts_with("--follow-symlinks"))
        })
}

/// Where cyclictest's own options start when rtscope runs as cyclictest without clap: after
/// the program's name when it is `cyclictest` (the symlink), after `rtscope cyclictest` when
/// clap would read nothing of the rest ([`cyclictest_without_clap`]); `None`: clap parses.
fn cyclictest_options(argv_os: &[std::ffi::OsString]) -> Option<usize> {
    if argv_os
        .first()
        .is_some_and(|a| invoked_as_cyclictest(&a.to_string_lossy()))
    {
        return Some(1);
    }
    cyclictest_without_clap(argv_os).then_some(2)
}

fn dispatch<W: Write>(
    argv_os: &[std::ffi::OsString],
    guard: &mut exit::StdoutGuard<W>,
) -> anyhow::Result<ExitStatus> {
    // The command line as text, for the run's record and the remote boards; a non-UTF-8 byte
    // shows as U+FFFD there (the options themselves are parsed from the bytes below).
    let argv: Vec<String> = argv_os
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let argv = argv.as_slice();
    if matches!(
        argv.get(1).map(String::as_str),
        Some("__load" | "__shepherd")
    ) {
        // The load workers keep the signals' default actions (their supervisor ends them).
        rtscope_common::signals::release_signals();
    }
    match argv.get(1).map(String::as_str) {
        Some("__load") => return Ok(hidden_status(rtscope_load::worker_main(&argv[2..]))),
        Some("__shepherd") => return Ok(hidden_status(rtscope_load::shepherd_main(&argv[2..]))),
        _ => {}
    }
    if let Some(from) = cyclictest_options(argv_os) {
        exit::require_utf8(argv_os, "cyclictest's options")?;
        return commands::cyclictest::run(&argv[from..], &argv.join(" "), guard.streaming());
    }
    let cli = match cli::Cli::try_parse_from(argv_os) {
        Ok(c) => c,
        Err(e)
            if matches!(
                e.kind(),
                clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion
            ) =>
        {
            write!(guard, "{e}")?;
            return Ok(ExitStatus::Success);
        }
        Err(e) => {
            let _ = e.print();
            return Ok(ExitStatus::Usage);
        }
    };
    if !takes_run_signals(&cli.command) {
        rtscope_common::signals::release_signals();
    }
    rtscope_common::outfile::set_follow_symlinks(cli.follow_symlinks);
    // The measurements stream: told of a closed pipe, they stop their live output there.
    if matches!(
        cli.command,
        cli::Command::Measure(_)
            | cli::Command::Cyclictest(_)
            | cli::Command::Respond(_)
            | cli::Command::Noise(_)
            | cli::Command::Run(_)
            | cli::Command::Watch(_)
    ) {
        guard.streaming();
    }
    let out: &mut dyn Write = guard;
    match cli.command {
        cli::Command::Measure(a) => commands::measure::ci::measure_with_ci(&a, argv, out),
        cli::Command::Cyclictest(a) => commands::cyclictest::run(&a.args, &argv.join(" "), out),
        cli::Command::Runs(a) => commands::runs::run(&a, out),
        cli::Command::Import(a) => commands::import::run(&a, out),
        cli::Command::Export(a) => commands::export::run(&a, out),
        cli::Command::Respond(a) => commands::respond::run(&a, argv.to_vec(), out),
        cli::Command::Noise(a) => commands::noise::run(&a, argv.to_vec(), out),
        cli::Command::Run(a) => {
            commands::fleet::with_ci(&a.ci_output, a.db.as_deref(), out, |o, missing| {
                commands::run::run(&a, argv, o, missing)
            })
        }
        cli::Command::Watch(a) => commands::watch::run(&a, argv, out),
        cli::Command::Load(a) => commands::load::run(&a, out),
        cli::Command::Compare(a) => commands::compare::run(&a, out),
        cli::Command::Report(a) => commands::report::run(&a, out),
        cli::Command::Tail(a) => commands::tail::run(&a, out),
        cli::Command::Check(a) => commands::check::run(&a, argv, out),
        cli::Command::Completions { shell } => {
            use clap_complete::shells::{Bash, Fish, Zsh};
            let (mut cmd, bin) = (cli::command(), "rtscope");
            // Into memory first: clap_complete panics when its writer fails (a full disk, a
            // pipe closed by `head`); a write error here takes the one path of every other
            // output (a closed pipe is the quiet exit, any other error exit 2).
            let mut script = Vec::new();
            match shell {
                cli::man::CompletionShell::Bash => {
                    clap_complete::generate(Bash, &mut cmd, bin, &mut script)
                }
                cli::man::CompletionShell::Zsh => {
                    clap_complete::generate(Zsh, &mut cmd, bin, &mut script)
                }
                cli::man::CompletionShell::Fish => {
                    clap_complete::generate(Fish, &mut cmd, bin, &mut script)
                }
            }
            out.write_all(&script)?;
            out.flush()?;
            Ok(ExitStatus::Success)
        }
        cli::Command::Man(a) => manual::run(&a, out),
    }
}

/// Whether `command` takes the run's signals (SIGINT, SIGTERM, SIGHUP) in its control loop,
/// where a stop ends it with its run kept as interrupted: those stay held from the start of
/// the process ([`rtscope_common::signals::hold_signals`]); every other command gives them
/// back to their default action once parsed (a Ctrl-C ends `runs` or `report` at once, as
/// before). `cyclictest` invoked by that name takes them too.
fn takes_run_signals(command: &cli::Command) -> bool {
    matches!(
        command,
        cli::Command::Measure(_)
            | cli::Command::Cyclictest(_)
            | cli::Command::Respond(_)
            | cli::Command::Noise(_)
            | cli::Command::Run(_)
            | cli::Command::Watch(_)
            | cli::Command::Load(_)
    )
}

/// The exit status of the hidden `__load` / `__shepherd` entry points (0, 1 or 2).
fn hidden_status(code: i32) -> ExitStatus {
    match code {
        0 => ExitStatus::Success,
        1 => ExitStatus::LimitExceeded,
        _ => ExitStatus::Usage,
    }
}

/// A library front end's error as the top level's, its cause kept whole (a closed pipe is
/// still an `io::Error` for [`exit::is_broken_pipe`]).
pub fn lift(e: rtscope_session::RunError) -> anyhow::Error {
    use rtscope_session::RunError;
    match e {
        RunError::Session(e) => e.into(),
        RunError::Usage(e) => e.into(),
        RunError::Io(e) => e.into(),
        RunError::Json(e) => e.into(),
        RunError::Store(e) => e.into(),
    }
}

/// [`lift`] for an export's error.
pub fn lift_export(e: rtscope_export::ExportError) -> anyhow::Error {
    use rtscope_export::ExportError;
    match e {
        ExportError::Usage(e) => e.into(),
        ExportError::Io(e) => e.into(),
        ExportError::Json(e) => e.into(),
        ExportError::Store(e) => e.into(),
    }
}

/// Converts a usage error into the anyhow error the front ends return.
pub fn usage(msg: impl Into<String>) -> anyhow::Error {
    UsageError::new(msg).into()
}

#[cfg(test)]
mod cyclictest_fast_path_tests {
    use super::cyclictest_without_clap;
    use std::ffi::OsString;

    fn args(a: &[&str]) -> Vec<OsString> {
        a.iter().map(OsString::from).collect()
    }

    #[test]
    fn cyclictest_options_skip_clap() {
        assert!(cyclictest_without_clap(&args(&["rtscope", "cyclictest"])));
        let a = args(&[
            "rtscope",
            "cyclictest",
            "-m",
            "-t1",
            "-p80",
            "-h400",
            "--help",
        ]);
        assert!(cyclictest_without_clap(&a));
    }

    #[test]
    fn what_clap_reads_goes_through_clap() {
        assert!(!cyclictest_without_clap(&args(&["rtscope", "measure"])));
        assert!(!cyclictest_without_clap(&args(&["rtscope"])));
        let a = args(&["rtscope", "cyclictest", "--follow-symlinks", "-t1"]);
        assert!(!cyclictest_without_clap(&a));
        assert!(!cyclictest_without_clap(&args(&[
            "rtscope",
            "cyclictest",
            "--",
            "-t1"
        ])));
        assert!(!cyclictest_without_clap(&args(&[
            "rtscope",
            "--follow-symlinks",
            "cyclictest"
        ])));
    }
}
