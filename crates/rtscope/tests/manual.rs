//! The man pages and completions cover the whole command line (generated from cli.rs).

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
    let cmd = rtscope_cli::cli::command();
    let pages = rtscope_manual::pages(&cmd, rtscope_cli::manual::inputs());
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
    let cmd = rtscope_cli::cli::command();
    let p = rtscope_manual::page(&cmd, &["cyclictest"], rtscope_cli::manual::inputs()).unwrap();
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
    let cmd = rtscope_cli::cli::command();
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
