//! The README's short commands run as written: each command line listed here must appear
//! verbatim in a ```sh block of README.md (so the README cannot drift from this test), and is
//! run with `sh -c` in a scratch directory with the built `rtscope` first on PATH, as the
//! README's set-up puts it there. Long runs (hours, campaigns), root-only set-up (`ln -s` into
//! /usr/local/bin) and hardware (GPIO) are left out; the inputs the import line names are the
//! reference captures, copied under the names the README uses.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

/// README command lines that finish in seconds, in the order they are run.
const SHORT: &[&str] = &[
    "rtscope import hist-h400.txt cyclictest.json verbose.txt jitterdebugger-out/ stress-ng.log",
    "rtscope runs",
    "rtscope runs show last",
    "rtscope tail last",
    "rtscope export last -o out/ -f csv,json,parquet",
    r#"python3 -c 'import glob, pandas as pd; print(pd.read_parquet(glob.glob("out/run-*-series.parquet")[0]))'"#,
    "rtscope run examples/loadcases.toml --dry-run",
    // Exit 1 when a check is bad (docs/check.md): this VM's kernel is not PREEMPT_RT.
    "rtscope check --json",
    "rtscope compare kernel=stock kernel=rt",
    "rtscope noise --cpus 0 -D 2s --no-db",
];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The command lines of the README's ```sh blocks, trailing `# comments` removed.
fn sh_lines(readme: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut inside = false;
    for line in readme.lines() {
        match line.trim_start() {
            "```sh" => inside = true,
            "```" => inside = false,
            l if inside && !l.starts_with('#') && !l.is_empty() => {
                out.push(without_comment(l).trim_end().to_string());
            }
            _ => {}
        }
    }
    out
}

/// `l` up to a `#` that follows a space outside quotes (a shell comment).
fn without_comment(l: &str) -> &str {
    let (mut quote, mut prev) = (None, ' ');
    for (i, c) in l.char_indices() {
        match (quote, c) {
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, '#') if prev.is_whitespace() => return &l[..i],
            _ => {}
        }
        prev = c;
    }
    l
}

#[test]
fn the_readmes_short_commands_run_as_written() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let lines = sh_lines(&readme);
    for cmd in SHORT {
        assert!(
            lines.iter().any(|l| l == cmd),
            "not in README.md as written: {cmd}\n{lines:#?}"
        );
    }
    let dir = common::fresh_dir("readme");
    let fixtures = root().join("crates/rtscope/tests/fixtures/import");
    for (from, to) in [
        ("hist-h400.txt", "hist-h400.txt"),
        ("out.json", "cyclictest.json"),
        ("verbose-head100.txt", "verbose.txt"),
        ("stress-ng-cyclic.txt", "stress-ng.log"),
        ("results.json", "jitterdebugger-out/results.json"),
    ] {
        std::fs::create_dir_all(dir.join(to).parent().unwrap()).unwrap();
        std::fs::copy(fixtures.join(from), dir.join(to)).unwrap();
    }
    std::os::unix::fs::symlink(root().join("examples"), dir.join("examples")).unwrap();
    // Two runs tagged as the compare line expects (kernel=stock, kernel=rt).
    let bin = Path::new(env!("CARGO_BIN_EXE_rtscope"));
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let sh = |cmd: &str| {
        let o = Command::new("sh")
            .args(["-c", cmd])
            .current_dir(&dir)
            .env("PATH", &path)
            .env_remove("RTSCOPE_DB")
            .output()
            .unwrap();
        // check and compare exit 1 for a bad check or a regression (their documented verdicts).
        let verdict = cmd.starts_with("rtscope check") || cmd.starts_with("rtscope compare");
        let ok = if verdict { 0..=1 } else { 0..=0 };
        let code = o.status.code().unwrap_or(-1);
        assert!(ok.contains(&code), "`{cmd}`\n{}", common::dump(&o));
        assert!(
            !String::from_utf8_lossy(&o.stderr).contains("panicked"),
            "{cmd}"
        );
    };
    for cmd in SHORT {
        if cmd.starts_with("python3") && !rtscope_testkit::python3_imports("pandas, pyarrow") {
            // The other lines still run: only this one needs the tool.
            rtscope_testkit::skip_or_fail(format!(
                "`{cmd}` needs python3 with pandas and pyarrow: run `pip install pandas pyarrow`"
            ));
            continue;
        }
        sh(cmd);
        if cmd.starts_with("rtscope import") {
            sh("rtscope runs tag 1 kernel=stock && rtscope runs tag 2 kernel=rt");
        }
    }
}
