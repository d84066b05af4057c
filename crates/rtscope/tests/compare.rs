//! `rtscope compare`: groups of runs chosen by id, label and tags in a temporary database
//! (imports of the cyclictest histogram fixtures, whose statistics are known, and short real
//! `measure` runs), the verdict and exit code, thresholds, the load-case matrix and `--json`.
//!
//! Known fixture values: hist-h100-b300.txt has p50 15 µs and max 168 µs; hist-H100.txt has
//! p50 18 µs and max 528 µs.

use crate::common;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Output;

const BASE: &str = "hist-h100-b300.txt";
const WORSE: &str = "hist-H100.txt";

fn rtscope(args: &[&str]) -> Output {
    common::run(env!("CARGO_BIN_EXE_rtscope"), args)
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A fresh database for one test.
fn db(name: &str) -> PathBuf {
    common::fresh_dir(&format!("compare-{name}")).join("rtscope.db")
}

/// Imports one fixture with a label and tags.
fn import(db: &Path, fixture: &str, label: &str, tags: &[&str]) {
    let file = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/import")
        .join(fixture);
    let mut args = vec!["import", "--db", db.to_str().unwrap(), "--label", label];
    for t in tags {
        args.extend(["--tag", t]);
    }
    args.push(file.to_str().unwrap());
    let o = rtscope(&args);
    assert_eq!(o.status.code(), Some(0), "{}", common::dump(&o));
}

/// `rtscope compare --db DB ARGS…`.
fn compare(db: &Path, args: &[&str]) -> Output {
    let mut all = vec!["compare", "--db", db.to_str().unwrap()];
    all.extend_from_slice(args);
    rtscope(&all)
}

/// `compare --json`, parsed; asserts the exit code.
fn compare_json(db: &Path, args: &[&str], code: i32) -> Value {
    let mut all = args.to_vec();
    all.push("--json");
    let o = compare(db, &all);
    assert_eq!(o.status.code(), Some(code), "{}", common::dump(&o));
    serde_json::from_slice(&o.stdout).expect("compare --json prints JSON")
}

fn run_ids(doc: &Value) -> Vec<Vec<i64>> {
    doc["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            g["run_ids"]
                .as_array()
                .unwrap()
                .iter()
                .map(|i| i.as_i64().unwrap())
                .collect()
        })
        .collect()
}

/// Runs 1 (base, kernel=a) and 2 (worse, kernel=b).
fn two_runs(name: &str) -> PathBuf {
    let d = db(name);
    import(&d, BASE, "base", &["kernel=a"]);
    import(&d, WORSE, "cand", &["kernel=b"]);
    d
}

#[test]
fn groups_are_chosen_by_id_label_and_tag_filter() {
    let d = two_runs("select");
    import(&d, BASE, "base", &["kernel=a"]);
    let doc = compare_json(&d, &["1", "cand", "--no-fail"], 0);
    assert_eq!(run_ids(&doc), vec![vec![1], vec![2]]);
    let doc = compare_json(&d, &["base", "label:cand", "--no-fail"], 0);
    assert_eq!(run_ids(&doc), vec![vec![1, 3], vec![2]]);
    let doc = compare_json(&d, &["kernel=b", "kernel=a"], 0);
    assert_eq!(run_ids(&doc), vec![vec![2], vec![1, 3]]);
    assert_eq!(doc["groups"][1]["selector"], "kernel=a");
    assert_eq!(doc["groups"][1]["labels"], serde_json::json!(["base"]));
}

#[test]
fn a_worse_candidate_is_a_regression_and_exits_1() {
    let d = two_runs("regression");
    // One run per side: no test can decide, so the threshold's rise is reported as higher and
    // marked untested; it fails the gate only with --fail-untested.
    let o = compare(&d, &["base", "cand"]);
    assert_eq!(o.status.code(), Some(0), "{}", common::dump(&o));
    let text = stdout(&o);
    let max = text.lines().find(|l| l.starts_with("max ")).unwrap();
    assert!(max.ends_with("higher (untested, n=1 per side)"), "{text}");
    assert!(text.contains("untested: B on p50, p99, max"), "{text}");
    assert!(text.contains("verdict: no regression against A"), "{text}");
    let o = compare(&d, &["base", "cand", "--fail-untested"]);
    assert_eq!(o.status.code(), Some(1), "{}", common::dump(&o));
    let text = stdout(&o);
    let max = text.lines().find(|l| l.starts_with("max ")).unwrap();
    assert!(
        max.ends_with("REGRESSION (untested, n=1 per side)"),
        "{text}"
    );
    let o = compare(&d, &["base", "cand", "--threshold-only"]);
    assert_eq!(o.status.code(), Some(1), "{}", common::dump(&o));
    let text = stdout(&o);
    let max = text.lines().find(|l| l.starts_with("max ")).unwrap();
    assert!(max.contains("168.0us") && max.contains("528.0us"), "{text}");
    // The threshold decides and fails; the cell still says the test could not.
    assert!(
        max.contains("+214.3%") && max.ends_with("REGRESSION (untested, n=1 per side)"),
        "{text}"
    );
    assert!(
        text.contains("verdict: REGRESSION against A: B on p50, p99, max"),
        "{text}"
    );
    // The other way round, the candidate is better.
    let o = compare(&d, &["cand", "base", "--threshold-only"]);
    assert_eq!(o.status.code(), Some(0), "{}", common::dump(&o));
    assert!(stdout(&o).contains("verdict: no regression against A"));
}

#[test]
fn identical_groups_pass_with_exit_0() {
    let d = two_runs("identical");
    import(&d, WORSE, "again", &[]);
    let doc = compare_json(&d, &["cand", "again"], 0);
    for s in doc["statistics"].as_array().unwrap() {
        let verdict = &s["changes"][0]["verdict"];
        assert!(verdict == "same" || verdict == "n/a", "{s}");
    }
    assert_eq!(doc["verdict"], "ok");
}

#[test]
fn thresholds_and_the_noise_floor_decide_the_exit_code() {
    let d = two_runs("thresholds");
    let code = |args: &[&str]| {
        // Single runs: the threshold rule as a CI gate.
        let mut all = vec!["base", "cand", "--stat", "max", "--threshold-only"];
        all.extend_from_slice(args);
        compare(&d, &all).status.code()
    };
    assert_eq!(code(&[]), Some(1));
    assert_eq!(code(&["--threshold", "max=300%"]), Some(0));
    assert_eq!(
        code(&["--threshold", "300", "--threshold", "max=200%"]),
        Some(1)
    );
    assert_eq!(code(&["--min-delta", "400us"]), Some(0));
    assert_eq!(code(&["--no-fail"]), Some(0));
}

#[test]
fn the_load_case_matrix_has_a_row_per_kernel_and_a_column_per_case() {
    let d = db("matrix");
    import(&d, BASE, "a-idle", &["kernel=a", "case=idle"]);
    import(&d, WORSE, "a-load", &["kernel=a", "case=load"]);
    import(&d, WORSE, "b-idle", &["kernel=b", "case=idle"]);
    import(&d, BASE, "b-load", &["kernel=b", "case=load"]);
    // One run per kernel and case: the case that rose is an untested rise (higher, not
    // failing), the one that fell lower; with --fail-untested the rise fails...
    let by_kernel = |extra: &[&str]| {
        let mut args = vec!["kernel=a", "kernel=b", "--rows", "kernel"];
        args.extend_from_slice(extra);
        compare(&d, &args)
    };
    let says = |o: &Output, code: i32, want: &str| {
        assert_eq!(o.status.code(), Some(code), "{}", common::dump(o));
        assert!(stdout(o).contains(want), "{}", stdout(o));
    };
    says(&by_kernel(&[]), 0, "higher (untested)  lower (untested)");
    says(
        &by_kernel(&["--fail-untested"]),
        1,
        "REGRESSION (untested)  lower (untested)",
    );
    // ... and the threshold alone says the same, with better for the better case.
    let o = by_kernel(&["--threshold-only"]);
    let text = stdout(&o);
    let squeeze = |l: &str| l.split_whitespace().collect::<Vec<_>>().join(" ");
    let lines: Vec<String> = text.lines().map(squeeze).collect();
    let at = lines
        .iter()
        .position(|l| l == "kernel idle load")
        .expect(&text);
    assert_eq!(lines[at + 2], "a 168.0us 528.0us", "{text}");
    assert_eq!(lines[at + 3], "b 528.0us 168.0us", "{text}");
    // B is worse in one load case and better in the other: the per-case verdicts say so, and
    // the regression in one case fails the comparison.
    assert_eq!(
        lines[at + 4],
        "B vs A REGRESSION (untested) better (untested)",
        "{text}"
    );
    assert!(text.contains("B on max in idle"), "{text}");
    let args = [
        "kernel=a",
        "kernel=b",
        "--matrix",
        "p50",
        "--threshold-only",
    ];
    let doc = compare_json(&d, &args, 1);
    let m = &doc["matrix"];
    assert_eq!(m["rows_by"], "group");
    assert_eq!(m["columns"], serde_json::json!(["idle", "load"]));
    let cells = m["verdicts"][0]["cells"].as_array().unwrap();
    let words: Vec<&Value> = cells.iter().map(|c| &c["verdict"]).collect();
    assert_eq!(words, ["REGRESSION", "better"]);
    assert!(cells.iter().all(|c| c["untested"] == true), "{m}");
    // Percentiles are bucket midpoints, within 0.05 % of the sample.
    let cells = m["rows"][0]["cells"].as_array().unwrap();
    for (cell, want) in cells.iter().zip([15_000.0, 18_000.0]) {
        assert!((cell.as_f64().unwrap() / want - 1.0).abs() < 5e-4, "{m}");
    }
}

#[test]
fn bad_selectors_and_options_exit_2_naming_them() {
    let d = two_runs("bad");
    let o = compare(&d, &["base", "nosuch"]);
    assert_eq!(o.status.code(), Some(2), "{}", common::dump(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no run matches 'nosuch'"));
    for (opt, val) in [
        ("--threshold", "ten"),
        ("--stat", "p42"),
        ("--min-delta", "x"),
    ] {
        let o = compare(&d, &["base", "cand", opt, val]);
        assert_eq!(o.status.code(), Some(2), "{}", common::dump(&o));
        assert!(
            String::from_utf8_lossy(&o.stderr).contains(opt),
            "{}",
            common::dump(&o)
        );
    }
}

#[test]
fn json_has_the_documented_fields() {
    let d = two_runs("json");
    let doc = compare_json(&d, &["base", "cand", "--threshold-only"], 1);
    assert_eq!(doc["schema"], "rtscope.compare/3");
    assert_eq!(doc["baseline"], "A");
    assert_eq!(doc["exit_code"], 1);
    assert_eq!(doc["verdict"], "regression");
    assert_eq!(doc["thresholds"]["min_delta_ns"], 1000);
    let max = doc["statistics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["stat"] == "max")
        .unwrap();
    assert_eq!(
        max["values"],
        serde_json::json!({"A": 168_000, "B": 528_000})
    );
    assert_eq!(max["changes"][0]["delta"], 360_000);
    assert_eq!(max["changes"][0]["verdict"], "REGRESSION");
    assert_eq!(max["changes"][0]["threshold_verdict"], "REGRESSION");
    assert_eq!(max["changes"][0]["untested"], true);
    assert_eq!(doc["groups"][0]["samples"], 10_000);
    assert_eq!(doc["strata"]["keys"], serde_json::json!([]));
    let doc = compare_json(&d, &["base", "cand"], 0);
    let max = &doc["statistics"][3]["changes"][0];
    assert_eq!(max["verdict"], "higher");
    assert_eq!(max["untested"], true);
    assert_eq!(doc["statistics"][4]["unit"], "ppb");
    assert_eq!(max["mann_whitney"]["decidable"], false);
    assert_eq!(max["mann_whitney"]["strata"], serde_json::json!([[1, 1]]));
    assert!(doc["matrix"].is_null());
}

#[test]
fn plot_writes_one_curve_per_group_and_names_an_unwritable_path() {
    let d = two_runs("plot");
    let dir = d.with_file_name("overlay");
    let o = compare(
        &d,
        &["base", "cand", "--plot", dir.to_str().unwrap(), "--no-fail"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", common::dump(&o));
    for name in ["compare-tail", "compare-exceedance"] {
        let svg = std::fs::read_to_string(dir.join(format!("{name}.svg"))).unwrap();
        assert!(svg.contains("<svg") && svg.trim_end().ends_with("</svg>"));
        assert!(
            svg.contains("A base (1 run)") && svg.contains("B cand (1 run)"),
            "{svg}"
        );
        let png = std::fs::read(dir.join(format!("{name}.png"))).unwrap();
        assert!(
            png.starts_with(b"\x89PNG") && png.len() > 10_000,
            "{name}.png"
        );
    }
    let o = compare(&d, &["base", "cand", "--plot", "/proc/nonexistent/dir"]);
    assert_eq!(o.status.code(), Some(2), "{}", common::dump(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("/proc/nonexistent/dir"));
}

/// The text example in docs/compare.md is the real output of the command it shows.
#[test]
fn the_documented_example_is_current() {
    let d = db("docs");
    import(&d, BASE, "stock-idle", &["kernel=stock", "case=idle"]);
    import(&d, WORSE, "stock-load", &["kernel=stock", "case=load"]);
    import(&d, BASE, "rt-idle", &["kernel=rt", "case=idle"]);
    import(&d, BASE, "rt-load", &["kernel=rt", "case=load"]);
    let cmd = "rtscope compare kernel=rt kernel=stock --stat p99,max --rows kernel";
    let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/compare.md");
    let docs = std::fs::read_to_string(docs).unwrap();
    let start = docs
        .find(&format!("$ {cmd}\n"))
        .expect("the example in docs/compare.md");
    let block = &docs[start..];
    let block = &block[block.find('\n').unwrap() + 1..block.find("```").unwrap()];
    let args: Vec<&str> = cmd.split(' ').skip(2).collect();
    let o = compare(&d, &args);
    assert_eq!(o.status.code(), Some(0), "{}", common::dump(&o));
    assert_eq!(stdout(&o), block, "update the example in docs/compare.md");
}

/// Two short real runs per kernel tag, one idle and one "load" case (labels only: no load is
/// started), compared by kernel.
#[test]
fn real_runs_compare_by_kernel_with_the_matrix() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    let d = db("measure");
    let _rt = common::rt_lock();
    for (kernel, case) in [("a", "idle"), ("a", "load"), ("b", "idle"), ("b", "load")] {
        let (k, c) = (format!("kernel={kernel}"), format!("case={case}"));
        let args = [
            "measure",
            "-q",
            "--duration",
            "300ms",
            "--db",
            d.to_str().unwrap(),
        ];
        let o = rtscope(&[&args[..], &["--tag", k.as_str(), "--tag", c.as_str()]].concat());
        assert_eq!(o.status.code(), Some(0), "{}", common::dump(&o));
    }
    let o = compare(&d, &["kernel=a", "kernel=b", "--rows", "kernel"]);
    let text = stdout(&o);
    assert_eq!(
        o.status.code() == Some(1),
        text.contains("REGRESSION"),
        "{text}"
    );
    assert!(text.contains("max/run"), "{text}");
    let squeeze: Vec<String> = text
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    assert!(squeeze.contains(&"kernel idle load".to_string()), "{text}");
    let same = compare(&d, &["kernel=a", "kernel=a"]);
    assert_eq!(same.status.code(), Some(0), "{}", common::dump(&same));
}

/// `n` synthetic runs per (kernel tag, typical latency) in a fresh database.
fn synthetic_db(name: &str, groups: &[(&str, u64)], n: u64) -> PathBuf {
    use rtscope_testkit::synthetic::{write_run, SyntheticRun};
    let d = db(name);
    let mut store = rtscope_store::Store::open(&d).unwrap();
    for (g, &(kernel, base_ns)) in groups.iter().enumerate() {
        for k in 0..n {
            let spec = SyntheticRun {
                label: format!("{kernel}-{k}"),
                cpus: 1,
                samples: 20_000,
                base_ns,
                seed: 100 * g as u64 + k + 1,
                monitors: false,
                tags: vec![("kernel".into(), kernel.into())],
                ..SyntheticRun::default()
            };
            write_run(&mut store, &spec).unwrap();
        }
    }
    d
}

/// The verdict of `stat` for group B in a `--json` document.
fn verdict_of<'a>(doc: &'a Value, stat: &str) -> &'a str {
    let row = doc["statistics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["stat"] == stat)
        .unwrap_or_else(|| panic!("no {stat} in {doc}"));
    row["changes"][0]["verdict"].as_str().unwrap()
}

/// Five runs per group drawn from one distribution (different seeds): with no threshold at all,
/// every difference of the merged statistics is beyond it, and only the per-run test can tell
/// that it is noise.
#[test]
fn groups_from_one_distribution_differ_not_significantly() {
    let d = synthetic_db("same-dist", &[("a", 5_000), ("b", 5_000)], 5);
    let args = [
        "kernel=a",
        "kernel=b",
        "--threshold",
        "0%",
        "--min-delta",
        "0",
    ];
    let doc = compare_json(&d, &args, 0);
    for stat in ["p50", "p99", "max"] {
        let v = verdict_of(&doc, stat);
        assert!(
            v == "no significant difference" || v == "same",
            "{stat}: {v}"
        );
    }
    assert_eq!(verdict_of(&doc, "max"), "no significant difference");
    let p = doc["statistics"][0]["changes"][0]["mann_whitney"]["p"]
        .as_f64()
        .unwrap();
    assert!(p >= 0.05, "{p}");
    let text = stdout(&compare(&d, &args));
    assert!(text.contains("no significant difference"), "{text}");
    assert!(text.contains("Mann-Whitney"), "{text}");
}

/// A group whose every run is 50 % slower is a significant regression.
#[test]
fn a_shifted_group_is_a_significant_regression() {
    let d = synthetic_db("shifted", &[("a", 5_000), ("b", 7_500)], 5);
    let doc = compare_json(&d, &["kernel=a", "kernel=b"], 1);
    assert_eq!(verdict_of(&doc, "p50"), "REGRESSION");
    assert_eq!(verdict_of(&doc, "p99"), "REGRESSION");
    let p = doc["statistics"][0]["changes"][0]["mann_whitney"]["p"]
        .as_f64()
        .unwrap();
    assert!(p < 0.05, "{p}");
    // The other way round, better.
    let doc = compare_json(&d, &["kernel=b", "kernel=a"], 0);
    assert_eq!(verdict_of(&doc, "p99"), "better");
}

/// Groups measured with different intervals: compare warns, naming the setting.
#[test]
fn groups_with_different_settings_are_warned_about() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    let d = db("settings");
    let _rt = common::rt_lock();
    for (label, interval) in [("fast", "500"), ("slow", "1000")] {
        let o = rtscope(&[
            "measure",
            "-q",
            "--duration",
            "200ms",
            "--interval",
            interval,
            "--label",
            label,
            "--db",
            d.to_str().unwrap(),
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", common::dump(&o));
    }
    let o = compare(&d, &["fast", "slow", "--no-fail"]);
    let text = stdout(&o);
    assert!(
        text.contains("run setting interval differs: A 500.0us, B 1.00ms"),
        "{text}"
    );
    let doc = compare_json(&d, &["fast", "slow", "--no-fail"], 0);
    let diffs = doc["differences"].as_array().unwrap();
    assert!(
        diffs
            .iter()
            .any(|x| x["setting"] == "interval" && x["kind"] == "run"),
        "{doc}"
    );
    let doc = compare_json(&d, &["fast", "fast"], 0);
    let same = doc["differences"].as_array().unwrap();
    assert!(same.iter().all(|x| x["kind"] != "run"), "{doc}");
}

/// Issue 25's seed-002 design in a fresh database: for each of 2 rounds and 5 load cases, a run
/// of `build=x` then one of `build=y` (interleaved); y's typical latency is `y_permille`/1000
/// of x's.
fn seed_002_db(name: &str, seed: u64, y_permille: u64) -> PathBuf {
    use rtscope_testkit::synthetic::{write_run, SyntheticRun};
    let d = db(name);
    let mut store = rtscope_store::Store::open(&d).unwrap();
    let mut n = 0;
    for round in ["1", "2"] {
        for (i, case) in ["idle", "hackbench", "stress-m2", "stress-m4", "stress-m8"]
            .into_iter()
            .enumerate()
        {
            for (build, permille) in [("x", 1000), ("y", y_permille)] {
                n += 1;
                let spec = SyntheticRun {
                    label: format!("{build}-{case}-{round}"),
                    cpus: 1,
                    samples: 20_000,
                    base_ns: 5_000 * (i as u64 + 1) * permille / 1000,
                    seed: seed * 1_000 + n,
                    monitors: false,
                    tags: vec![
                        ("build".into(), build.into()),
                        ("round".into(), round.into()),
                        ("case".into(), case.into()),
                    ],
                    ..SyntheticRun::default()
                };
                write_run(&mut store, &spec).unwrap();
            }
        }
    }
    d
}

/// Every verdict cell of a `--json` document: statistics rows, then the load-case matrix.
fn verdict_cells(doc: &Value) -> Vec<&Value> {
    let stats = doc["statistics"].as_array().unwrap().iter();
    let cells = doc["matrix"]["verdicts"].as_array().unwrap().iter();
    stats
        .flat_map(|s| s["changes"].as_array().unwrap())
        .chain(cells.flat_map(|v| v["cells"].as_array().unwrap()))
        .collect()
}

/// The same kernel twice (seed 002's design, one distribution): no load case holds enough runs
/// for the test, so every per-case cell is untested and none fails the gate; `--fail-untested`
/// fails exactly when some load case rose beyond the threshold; an untested cell says `higher`
/// or `lower` by its sign, never `better` or `worse`.
#[test]
fn the_same_kernel_twice_passes_and_marks_every_load_case_untested() {
    let mut strict_failures = 0;
    for seed in 1..=4 {
        let d = seed_002_db(&format!("seed002-{seed}"), seed, 1000);
        let junit = d.with_file_name("compare.xml");
        let ci = format!("junit={}", junit.display());
        let o = compare(&d, &["build=x", "build=y", "--ci-output", &ci]);
        assert_eq!(o.status.code(), Some(0), "{}", common::dump(&o));
        let text = stdout(&o);
        let row = text
            .lines()
            .find(|l| l.starts_with("B vs A ") && !l.contains("tested within"))
            .unwrap();
        assert_eq!(row.matches("(untested)").count(), 5, "{text}");
        assert!(!row.contains("REGRESSION"), "{text}");
        let xml = std::fs::read_to_string(&junit).unwrap();
        assert!(xml.contains(r#"failures="0""#), "{xml}");

        let doc = compare_json(&d, &["build=x", "build=y"], 0);
        let m = &doc["matrix"]["verdicts"][0]["cells"];
        for cell in m.as_array().unwrap() {
            assert_eq!(cell["untested"], true, "seed {seed}: {cell}");
            assert_eq!(
                cell["mann_whitney"]["strata"],
                serde_json::json!([[1, 1], [1, 1]])
            );
        }
        let mut untested_rise = false;
        for cell in verdict_cells(&doc) {
            let rise = cell["delta"].as_i64().is_some_and(|d| d > 0);
            let wrong = if rise { "lower" } else { "higher" };
            assert_ne!(cell["verdict"], wrong, "seed {seed}: {cell}");
            if cell["untested"] == true {
                assert_ne!(cell["verdict"], "better", "seed {seed}: {cell}");
                assert_ne!(cell["verdict"], "worse", "seed {seed}: {cell}");
            }
            untested_rise |= cell["untested"] == true && cell["threshold_verdict"] == "REGRESSION";
        }

        let strict = compare(&d, &["build=x", "build=y", "--fail-untested"]);
        let code = i32::from(untested_rise);
        assert_eq!(
            strict.status.code(),
            Some(code),
            "{}",
            common::dump(&strict)
        );
        if untested_rise {
            assert!(stdout(&strict).contains("REGRESSION (untested)"));
            strict_failures += 1;
        }
    }
    assert!(
        strict_failures > 0,
        "the design crosses the threshold on noise"
    );
}

/// Every run of build y 60 % slower in seed 002's design: the statistics rows hold 10 strata
/// of 1 vs 1, enough for the test, so the rise is a tested REGRESSION and exits 1 without
/// --fail-untested.
#[test]
fn a_clear_rise_on_enough_runs_fails_without_fail_untested() {
    let d = seed_002_db("seed002-shift", 1, 1600);
    let doc = compare_json(&d, &["build=x", "build=y"], 1);
    for stat in ["p50", "p99"] {
        assert_eq!(verdict_of(&doc, stat), "REGRESSION", "{stat}");
    }
    assert_eq!(doc["statistics"][0]["changes"][0]["untested"], false);
    let o = compare(&d, &["build=x", "build=y"]);
    assert!(stdout(&o).contains("verdict: REGRESSION against A: B on p50"));
}

/// `--tail-level`: the merged histograms are not tested for stationarity, so by default each
/// group is refused and gets no verdict; `--assume-stationary` shows the levels and verdicts
/// that rest on the assumption (untested), a regression only with the intervals apart.
#[test]
fn tail_levels_are_refused_untested_and_compared_only_under_assumed_stationarity() {
    let d = synthetic_db("tail-level", &[("a", 5_000), ("b", 20_000)], 2);
    let o = compare(
        &d,
        &["kernel=a", "kernel=b", "--tail-level", "1e-7", "--json"],
    );
    let doc: Value = serde_json::from_slice(&o.stdout).expect("JSON");
    let tail = &doc["tail"];
    assert_eq!(tail["probability"], 1e-7, "{tail}");
    assert_eq!(tail["assumed_stationary"], false, "{tail}");
    for g in tail["groups"].as_array().unwrap() {
        assert!(g["level"].is_null(), "{g}");
        let reasons = g["refusals"].as_array().unwrap();
        assert!(reasons.iter().any(|r| r["reason"] == "not-tested"), "{g}");
    }
    assert_eq!(tail["changes"][0]["verdict"], "n/a", "{tail}");
    assert_eq!(o.status.code(), Some(0), "no verdict, nothing fails");
    let text = stdout(&compare(
        &d,
        &["kernel=a", "kernel=b", "--tail-level", "1e-7"],
    ));
    assert!(
        text.contains("REFUSED: not tested for stationarity — no estimate"),
        "{text}"
    );
    // Assumed: a level with its estimate, or a refusal for another reason, or neither.
    let o = compare(
        &d,
        &[
            "kernel=a",
            "kernel=b",
            "--tail-level",
            "1e-7",
            "--assume-stationary",
            "--json",
        ],
    );
    let doc: Value = serde_json::from_slice(&o.stdout).expect("JSON");
    let tail = &doc["tail"];
    assert_eq!(tail["assumed_stationary"], true, "{tail}");
    let groups = tail["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 2);
    let refused = |g: &Value| !g["refusals"].as_array().unwrap().is_empty();
    for g in groups {
        let level = g["level"]["estimate_ns"].is_number();
        assert!(level != refused(g) || g["level"].is_null(), "{g}");
    }
    let change = &tail["changes"][0];
    if groups.iter().any(|g| g["level"].is_null()) {
        assert_eq!(change["verdict"], "n/a", "{tail}");
    } else {
        // Both levels: the verdict rests on the assumption.
        assert_eq!(change["untested"], true, "{tail}");
    }
    if change["verdict"] == "REGRESSION" {
        let (a, b) = (&groups[0], &groups[1]);
        assert!(
            b["level"]["lower_ns"].as_f64() > a["level"]["upper_ns"].as_f64(),
            "{tail}"
        );
    }
    let regressions = doc["regressions"].as_u64().unwrap();
    assert_eq!(o.status.code(), Some(if regressions > 0 { 1 } else { 0 }));
    // The text names the row, and without the option there is none.
    let text = stdout(&compare(
        &d,
        &["kernel=a", "kernel=b", "--tail-level", "1e-7"],
    ));
    assert!(
        text.contains("tail level: the latency exceeded with probability 1e-7"),
        "{text}"
    );
    let plain = compare_json(&d, &["kernel=a", "kernel=a"], 0);
    assert!(plain["tail"].is_null());
    let bad = compare(&d, &["kernel=a", "kernel=b", "--tail-level", "2"]);
    assert_eq!(bad.status.code(), Some(2));
}
