//! `rtscope run`: campaign files, presets, overrides and `--dry-run`, through the real binary.
//! Nothing here measures: every run is a dry run or a rejected file.

use crate::common;

use common::{dump, fresh_dir, run};
use std::path::{Path, PathBuf};
use std::process::Output;

const BIN: &str = env!("CARGO_BIN_EXE_rtscope");

fn rtscope(args: &[&str]) -> Output {
    run(BIN, args)
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

/// A dry run that must succeed; returns its stdout.
fn dry(args: &[&str]) -> String {
    let mut all = vec!["run", "--dry-run"];
    all.extend_from_slice(args);
    let o = rtscope(&all);
    assert_eq!(o.status.code(), Some(0), "{}", dump(&o));
    stdout(&o)
}

/// The matrix rows of a dry run: (scenario, case, repeat) of each line starting with a seq.
fn rows(out: &str) -> Vec<(String, String, String)> {
    out.lines()
        .filter(|l| l.starts_with("  "))
        .map(str::split_whitespace)
        .filter_map(|mut w| {
            w.next()?.parse::<usize>().ok()?;
            Some((w.next()?.into(), w.next()?.into(), w.next()?.into()))
        })
        .collect()
}

/// The estimated total in seconds from `N runs, about 1m 04s`.
fn total_secs(out: &str) -> u64 {
    let line = out.lines().find(|l| l.contains(" runs, about ")).unwrap();
    let t = line
        .split("about ")
        .nth(1)
        .unwrap()
        .split(" (")
        .next()
        .unwrap();
    t.split(' ')
        .map(|part| {
            let (n, unit) = part.split_at(part.len() - 1);
            let n: u64 = n.parse().unwrap();
            n * match unit {
                "s" => 1,
                "m" => 60,
                "h" => 3600,
                _ => 86_400,
            }
        })
        .sum()
}

#[test]
fn quick_preset_is_n_n_idle_then_mixed_load_in_about_a_minute() {
    let out = dry(&["--preset", "quick"]);
    let r = rows(&out);
    assert_eq!(
        r,
        vec![
            ("N:N".into(), "idle".into(), "1/1".into()),
            ("N:N".into(), "mixed".into(), "1/1".into())
        ],
        "{out}"
    );
    assert!(out.contains("2 runs, about"), "{out}");
    let cpus = common::cpus();
    assert!(
        out.contains(&format!("{cpus} on ")),
        "one thread per CPU: {out}"
    );
    assert!(
        out.contains("built-in messaging:") && out.contains("built-in memory:"),
        "{out}"
    );
    let secs = total_secs(&out);
    assert!(
        (45..=75).contains(&secs),
        "about a minute, got {secs} s: {out}"
    );
}

#[test]
fn loadcases_preset_has_the_five_cases_of_the_study() {
    let out = dry(&["--preset", "loadcases"]);
    let cases: Vec<String> = rows(&out).into_iter().map(|r| r.1).collect();
    assert_eq!(
        cases,
        ["idle", "hackbench", "stress-m2", "stress-m4", "stress-m8"],
        "{out}"
    );
    assert!(out.contains("128-byte messages"), "{out}");
    for m in [2, 4, 8] {
        assert!(
            out.contains(&format!("{m} copy threads over 256 MiB")),
            "{out}"
        );
    }
    assert!(out.contains("5 runs, about"), "{out}");
    // The I/O and network threads are case 5's only, as in the study.
    let loads: Vec<&str> = out
        .lines()
        .filter(|l| l.trim_start().starts_with(char::is_numeric) && l.contains("N:N"))
        .map(|l| {
            l.split("  ")
                .filter(|c| !c.is_empty())
                .last()
                .unwrap()
                .trim()
        })
        .collect();
    assert_eq!(
        loads,
        ["-", "messaging", "memory", "memory", "memory, io, network"],
        "{out}"
    );
}

#[test]
fn scenarios_preset_is_three_layouts_times_ten_repeats_of_a_million_loops() {
    let out = dry(&["--preset", "scenarios"]);
    let r = rows(&out);
    assert_eq!(r.len(), 30, "{out}");
    for s in ["1:1", "N:N", "M:N"] {
        assert_eq!(r.iter().filter(|x| x.0 == s).count(), 10, "{s}: {out}");
        assert!(r.iter().any(|x| x.0 == s && x.2 == "10/10"), "{out}");
    }
    assert!(out.contains("1 on 0 "), "1:1 is one thread on CPU 0: {out}");
    let m = 4 * common::cpus();
    assert!(
        out.contains(&format!("{m} on ")),
        "M:N is 4 threads per CPU: {out}"
    );
    assert!(out.contains("1000000 loops"), "{out}");
    assert!(out.contains("30 runs, about"), "{out}");
}

#[test]
fn osadl_preset_is_the_osadl_recipe_idle_then_under_load() {
    let out = dry(&["--preset", "osadl"]);
    let cases: Vec<String> = rows(&out).into_iter().map(|r| r.1).collect();
    assert_eq!(cases, ["idle", "load"], "{out}");
    assert!(
        out.contains("100000000 loops") && out.contains("200us"),
        "{out}"
    );
    // 2 × 100 M × 200 µs = 11 h 07 min, plus the load's warm-up.
    assert_eq!(total_secs(&out) / 60, 11 * 60 + 6, "{out}");
}

#[test]
fn every_example_file_dry_runs_like_its_preset() {
    let mut seen = 0;
    for entry in std::fs::read_dir(examples()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "toml") {
            continue;
        }
        seen += 1;
        let file = dry(&[path.to_str().unwrap()]);
        let name = path.file_stem().unwrap().to_str().unwrap();
        let preset = dry(&["--preset", name]);
        let body = |s: &str| s.lines().skip(1).collect::<Vec<_>>().join("\n");
        assert_eq!(body(&file), body(&preset), "{name}");
        assert!(!rows(&file).is_empty());
    }
    assert!(seen >= 4, "examples/ holds the four presets");
}

#[test]
fn command_line_overrides_change_the_plan() {
    let out = dry(&[
        "--preset",
        "scenarios",
        "--duration",
        "2s",
        "--repeats",
        "1",
    ]);
    let r = rows(&out);
    assert_eq!(r.len(), 3, "{out}");
    assert!(r.iter().all(|x| x.2 == "1/1"), "{out}");
    assert!(
        !out.contains("1000000 loops"),
        "--duration replaces loops: {out}"
    );
    assert!(out.contains(" 2s "), "{out}");
    assert_eq!(total_secs(&out), 6, "{out}");

    let out = dry(&[
        "--preset",
        "quick",
        "--loops",
        "1000",
        "--name",
        "smoke",
        "--tag",
        "board=rpi4",
    ]);
    assert!(out.starts_with("Campaign smoke (preset quick)"), "{out}");
    assert!(out.contains("tags: board=rpi4"), "{out}");
    assert!(out.contains("1000 loops") && !out.contains("25s "), "{out}");
}

/// Writes `text` as a campaign file, runs it, and checks exit 2 with `error: PATH:LOC: MSG`.
fn rejected(name: &str, text: &str, loc: &str, msg: &str) -> String {
    rejected_with(name, text, loc, msg, None)
}

fn rejected_with(name: &str, text: &str, loc: &str, msg: &str, path: Option<&str>) -> String {
    let dir = fresh_dir(&format!("campaign-{name}"));
    let file = dir.join(format!("{name}.toml"));
    std::fs::write(&file, text).unwrap();
    let f = file.to_str().unwrap();
    let mut cmd = std::process::Command::new(BIN);
    cmd.args(["run", "--dry-run", f]);
    if let Some(p) = path {
        cmd.env("PATH", p);
    }
    let o = cmd.output().unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{}", dump(&o));
    let want = format!("error: {f}:{loc}: {msg}");
    assert!(err.contains(&want), "want `{want}` in:\n{err}");
    assert!(
        o.stdout.is_empty(),
        "nothing is planned or started: {}",
        dump(&o)
    );
    err
}

const TAIL: &str = "\n[[scenario]]\nname = \"N:N\"\n\n[[load_case]]\nname = \"idle\"\n";

#[test]
fn an_unknown_key_is_located_and_the_likely_key_suggested() {
    let err = rejected(
        "unknown",
        &format!("[campaign]\nname = \"x\"\n\n[measure]\n  intervall = \"100us\"\n{TAIL}"),
        "5:3",
        "unknown key 'intervall' in [measure]",
    );
    assert!(err.contains("hint: did you mean 'interval'?"), "{err}");
    assert!(
        err.contains("keys: threads, threads_per_cpu, cpus, interval"),
        "{err}"
    );
}

#[test]
fn a_value_of_the_wrong_type_is_located_and_named() {
    rejected(
        "type",
        &format!("[campaign]\nrepeats = \"ten\"\n{TAIL}"),
        "2:11",
        "invalid value for 'repeats': string \"ten\", expected a whole number",
    );
}

#[test]
fn a_duration_that_cannot_parse_is_located_with_examples() {
    let err = rejected(
        "duration",
        &format!("[measure]\nduration = \"10 parsecs\"\n{TAIL}"),
        "2:12",
        "invalid duration '10 parsecs' for 'duration'",
    );
    assert!(err.contains("hint: write a number with a unit") && err.contains("\"30s\""));
}

#[test]
fn a_cpu_that_is_not_online_is_located() {
    let n = common::cpus();
    let err = rejected(
        "cpu",
        &format!(
            "[[scenario]]\nname = \"1:1\"\ncpus = \"{n}\"\n\n[[load_case]]\nname = \"idle\"\n"
        ),
        "3:8",
        &format!("CPU {n} is not online (online: "),
    );
    assert!(err.contains("hint: use CPUs of"), "{err}");
}

#[test]
fn a_load_that_is_not_installed_is_rejected_with_the_package_and_a_built_in_alternative() {
    let text = "[[scenario]]\nname = \"N:N\"\n\n[[load_case]]\nname = \"sat\"\n  [[load_case.load]]\n  kind = \"stressapptest\"\n";
    let err = rejected_with(
        "notinstalled",
        text,
        "7:10",
        "load 'stressapptest' is not installed",
        Some("/nonexistent"),
    );
    assert!(
        err.contains("hint: apt install stressapptest, or use kind = \"memory\" (built-in)"),
        "{err}"
    );
    rejected(
        "external",
        "[[scenario]]\nname = \"N:N\"\n\n[[load_case]]\nname = \"x\"\nload = [{ kind = \"external\", program = \"rtscope-no-such-tool\" }]\n",
        "6:40",
        "load 'rtscope-no-such-tool' is not installed",
    );
}

#[test]
fn duplicate_names_are_located_at_the_second() {
    rejected(
        "dupscenario",
        "[[scenario]]\nname = \"A\"\n\n[[scenario]]\nname = \"A\"\n\n[[load_case]]\nname = \"idle\"\n",
        "5:8",
        "duplicate scenario name 'A'",
    );
    rejected(
        "dupcase",
        "[[scenario]]\nname = \"A\"\n\n[[load_case]]\nname = \"idle\"\n[[load_case]]\nname = \"idle\"\n",
        "7:8",
        "duplicate load case name 'idle'",
    );
}

#[test]
fn an_empty_matrix_is_rejected() {
    rejected(
        "noscenario",
        "[campaign]\nname = \"x\"\n\n[[load_case]]\nname = \"idle\"\n",
        "1:1",
        "the campaign has no [[scenario]]: the run matrix is empty",
    );
    rejected(
        "norepeats",
        &format!("[campaign]\nrepeats = 0\n{TAIL}"),
        "2:11",
        "repeats = 0 leaves the run matrix empty",
    );
}

#[test]
fn keys_that_do_not_fit_the_load_kind_are_located() {
    rejected(
        "kindkey",
        "[[scenario]]\nname = \"A\"\n\n[[load_case]]\nname = \"x\"\n  [[load_case.load]]\n  kind = \"cpu\"\n  megabytes = 64\n",
        "8:15",
        "'megabytes' does not apply to kind = \"cpu\"",
    );
    rejected(
        "kind",
        "[[scenario]]\nname = \"A\"\n\n[[load_case]]\nname = \"x\"\n  [[load_case.load]]\n  kind = \"mem\"\n",
        "7:10",
        "unknown load kind 'mem'",
    );
}

#[test]
fn a_missing_file_names_the_path_and_a_preset_cannot_be_misspelt() {
    let o = rtscope(&["run", "--dry-run", "/nonexistent/quick.toml"]);
    assert_eq!(o.status.code(), Some(2), "{}", dump(&o));
    let err = stderr(&o);
    assert!(
        err.contains("cannot read campaign file '/nonexistent/quick.toml'"),
        "{err}"
    );
    assert!(err.contains("--preset quick"), "{err}");
    let o = rtscope(&["run", "--preset", "quik"]);
    assert_eq!(o.status.code(), Some(2), "{}", dump(&o));
    assert!(
        stderr(&o).contains("[possible values: quick, scenarios, loadcases, osadl, respond-ipc]"),
        "{}",
        dump(&o)
    );
}

#[test]
fn a_dry_run_prints_the_exact_external_command_line_and_the_limits() {
    let dir = fresh_dir("campaign-external-dry");
    let file = dir.join("ext.toml");
    let text = "[measure]\nduration = 3\nlimits = [\"max=100us\", \"missed=0\"]\n\n[[scenario]]\nname = \"N:N\"\n\n[[load_case]]\nname = \"spin\"\nload = [{ kind = \"external\", program = \"/bin/sh\", args = [\"-c\", \"while :; do :; done\"] }]\n";
    std::fs::write(&file, text).unwrap();
    let out = dry(&[file.to_str().unwrap()]);
    assert!(
        out.contains("    /bin/sh -c 'while :; do :; done'\n"),
        "{out}"
    );
    assert!(out.contains("Limits of N:N: max=100us, missed=0"), "{out}");
    assert!(out.contains("1 run, about 5s"), "3 s + 2 s warm-up: {out}");
}
