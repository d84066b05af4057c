//! `rtscope man`: prints one man page, or writes every page, from the clap definition
//! (generation in the `rtscope-manual` crate).

use crate::exit::ExitStatus;
use clap::Args;
use std::io::Write;
use std::path::PathBuf;

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

/// What the pages need besides the clap command.
pub fn inputs() -> rtscope_manual::Inputs<'static> {
    rtscope_manual::Inputs {
        cyclictest_usage: rtscope_cyclictest::USAGE,
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
    Ok(ExitStatus::Success)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    fn long_options(cmd: &clap::Command) -> BTreeSet<String> {
        cmd.get_arguments()
            .filter(|a| !a.is_hide_set())
            .filter_map(|a| a.get_long().map(|l| format!("--{l}")))
            .collect()
    }

    /// Every visible subcommand at any depth has a page naming every one of its options, the
    /// exit codes, RTSCOPE_DB, rtscope.db and a one-line NAME.
    #[test]
    fn every_subcommand_has_a_complete_page() {
        let cmd = crate::cli::command();
        let pages = rtscope_manual::pages(&cmd, super::inputs());
        let names: BTreeSet<_> = pages.iter().map(|p| p.name.clone()).collect();
        for expected in [
            "rtscope",
            "rtscope-measure",
            "rtscope-cyclictest",
            "rtscope-run",
            "rtscope-runs",
            "rtscope-runs-show",
            "rtscope-report",
            "rtscope-compare",
            "rtscope-load",
            "rtscope-load-messaging",
            "rtscope-import",
            "rtscope-export",
        ] {
            assert!(names.contains(expected), "no page {expected}: {names:?}");
        }
        let mut built = cmd.clone();
        built.build();
        for p in &pages {
            let mut sub = &built;
            for part in &p.path {
                sub = sub.find_subcommand(part).unwrap();
            }
            // roff escapes '-' as '\-'.
            let roff = p.roff.replace("\\-", "-");
            for opt in long_options(sub) {
                assert!(roff.contains(&opt), "{} lacks {opt}", p.name);
            }
            for section in [
                ".SH NAME",
                ".SH SYNOPSIS",
                ".SH \"EXIT STATUS\"",
                ".SH ENVIRONMENT",
                ".SH FILES",
                ".SH \"SEE ALSO\"",
            ] {
                assert!(p.roff.contains(section), "{} lacks {section}", p.name);
            }
            assert!(
                roff.contains("RTSCOPE_DB") && roff.contains("rtscope.db"),
                "{}",
                p.name
            );
            let name_line = roff
                .split(".SH NAME\n")
                .nth(1)
                .unwrap()
                .lines()
                .next()
                .unwrap();
            assert!(
                name_line.starts_with(&format!("{} - ", p.name)),
                "{name_line}"
            );
            assert!(
                name_line.len() <= 110,
                "NAME is one short line: {name_line}"
            );
        }
    }

    #[test]
    fn cyclictest_page_lists_cyclictests_own_options() {
        let cmd = crate::cli::command();
        let p = rtscope_manual::page(&cmd, &["cyclictest"], super::inputs()).unwrap();
        let roff = p.roff.replace("\\-", "-");
        for opt in [
            "--histogram",
            "--breaktrace",
            "--mlockall",
            "--json",
            "--db",
        ] {
            assert!(roff.contains(opt), "rtscope-cyclictest(1) lacks {opt}");
        }
    }

    #[test]
    fn completions_name_every_subcommand_and_option() {
        let cmd = crate::cli::command();
        for shell in [
            clap_complete::Shell::Bash,
            clap_complete::Shell::Zsh,
            clap_complete::Shell::Fish,
        ] {
            let text = String::from_utf8(rtscope_manual::completion(&cmd, shell)).unwrap();
            let mut stack = vec![cmd.clone()];
            while let Some(c) = stack.pop() {
                for sub in c.get_subcommands() {
                    assert!(text.contains(sub.get_name()), "{shell}: {}", sub.get_name());
                    for opt in long_options(sub) {
                        let bare = opt.trim_start_matches('-');
                        assert!(text.contains(bare), "{shell}: {} {opt}", sub.get_name());
                    }
                    stack.push(sub.clone());
                }
            }
        }
    }
}
