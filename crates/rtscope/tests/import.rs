//! `rtscope import`: the reference captures of cyclictest (histogram, `-v`, `--json`),
//! jitterdebugger and stress-ng (copies in tests/fixtures/import/), and fresh runs of the real
//! cyclictest, imported into a temporary database and read back with `rtscope runs show --json`;
//! each imported statistic is compared with values parsed here, independently, from the source.
//! Broken inputs must exit 2 with a message naming the file and the place, never a panic.

use crate::common;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Output;

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/import")
        .join(name)
}

/// A fresh directory for one test.
fn dir(name: &str) -> PathBuf {
    common::fresh_dir(&format!("import-{name}"))
}

fn rtscope(args: &[&str]) -> Output {
    common::run(env!("CARGO_BIN_EXE_rtscope"), args)
}

fn dump(o: &Output) -> String {
    common::dump(o)
}

/// Imports `files` into `db` with `--json`; returns the printed array.
fn import(db: &Path, files: &[&Path], extra: &[&str]) -> Vec<Value> {
    let mut args = vec!["import", "--db", db.to_str().unwrap(), "--json"];
    args.extend_from_slice(extra);
    args.extend(files.iter().map(|f| f.to_str().unwrap()));
    let o = rtscope(&args);
    assert_eq!(o.status.code(), Some(0), "{}", dump(&o));
    assert!(!text(&o.stderr).contains("panicked"), "{}", dump(&o));
    serde_json::from_slice::<Value>(&o.stdout)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

/// `rtscope runs show N --json`.
fn show(db: &Path, run: &Value) -> Value {
    let o = rtscope(&[
        "runs",
        "--db",
        db.to_str().unwrap(),
        "show",
        &run.to_string(),
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", dump(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// Imports one file and reads its run back.
fn import_one(name: &str, file: &Path) -> Value {
    let db = dir(name).join("r.db");
    let r = import(&db, &[file], &[]);
    assert_eq!(r.len(), 1);
    show(&db, &r[0]["run"])
}

/// Per thread: (samples, min µs, max µs, mean µs).
type Expected = Vec<(u64, u64, u64, f64)>;

/// Compares the imported threads with `want`; means within `tolerance` µs.
fn assert_threads(run: &Value, want: &Expected, tolerance: f64) {
    let threads = run["thread_stats"].as_array().unwrap();
    assert_eq!(threads.len(), want.len(), "{run}");
    for (t, &(n, min, max, mean)) in threads.iter().zip(want) {
        let got = (
            t["samples"].as_u64(),
            t["min_ns"].as_u64(),
            t["max_ns"].as_u64(),
        );
        assert_eq!(
            got,
            (Some(n), Some(min * 1000), Some(max * 1000)),
            "thread {}",
            t["thread"]
        );
        let m = t["mean_ns"].as_f64().unwrap() / 1000.0;
        assert!(
            (m - mean).abs() <= tolerance,
            "thread {} mean {m} vs {mean}",
            t["thread"]
        );
    }
    let total: u64 = want.iter().map(|w| w.0).sum();
    assert_eq!(run["samples"].as_u64(), Some(total));
    assert_eq!(run["kind"], "import");
    assert_eq!(run["status"], "complete");
}

// ------------------------------------------------------------ independent parsers

/// cyclictest histogram text: per thread (samples, min, max, mean): samples are the rows'
/// sum plus the overflows; the mean is exact from the rows when nothing overflowed, else the
/// trailer's truncated average.
fn expected_from_histogram(text: &str) -> Expected {
    let trailer = |label: &str| -> Vec<u64> {
        let line = text
            .lines()
            .find(|l| l.starts_with(label))
            .unwrap_or_else(|| panic!("{label}"));
        line[label.len()..]
            .split_whitespace()
            .map(|v| v.parse().unwrap())
            .collect()
    };
    let (min, avg, max, over) = (
        trailer("# Min Latencies:"),
        trailer("# Avg Latencies:"),
        trailer("# Max Latencies:"),
        trailer("# Histogram Overflows:"),
    );
    let n = min.len();
    let (mut count, mut sum) = (vec![0u64; n], vec![0u64; n]);
    for line in text
        .lines()
        .filter(|l| l.starts_with(|c: char| c.is_ascii_digit()))
    {
        let v: Vec<u64> = line
            .split_whitespace()
            .map(|x| x.parse().unwrap())
            .collect();
        for t in 0..n {
            count[t] += v[1 + t];
            sum[t] += v[0] * v[1 + t];
        }
    }
    (0..n)
        .map(|t| {
            let mean = if over[t] == 0 {
                sum[t] as f64 / count[t] as f64
            } else {
                avg[t] as f64
            };
            (count[t] + over[t], min[t], max[t], mean)
        })
        .collect()
}

/// cyclictest `-v` lines: exact per-thread statistics.
fn expected_from_verbose(text: &str) -> Expected {
    let mut per: Vec<Vec<u64>> = Vec::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split(':').map(str::trim).collect();
        if f.len() == 3
            && f.iter()
                .all(|x| !x.is_empty() && x.bytes().all(|b| b.is_ascii_digit()))
        {
            let t: usize = f[0].parse().unwrap();
            if per.len() <= t {
                per.resize(t + 1, Vec::new());
            }
            per[t].push(f[2].parse().unwrap());
        }
    }
    per.iter()
        .map(|v| {
            let sum: u64 = v.iter().sum();
            let (lo, hi) = (*v.iter().min().unwrap(), *v.iter().max().unwrap());
            (v.len() as u64, lo, hi, sum as f64 / v.len() as f64)
        })
        .collect()
}

/// cyclictest `--json`: (cycles, min, max, avg) per thread.
fn expected_from_json(text: &str) -> Expected {
    let doc: Value = serde_json::from_str(text).unwrap();
    let threads = doc["thread"].as_object().unwrap();
    (0..threads.len())
        .map(|i| {
            let t = &threads[&i.to_string()];
            let n = |k: &str| t[k].as_u64().unwrap();
            (n("cycles"), n("min"), n("max"), t["avg"].as_f64().unwrap())
        })
        .collect()
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap()
}

// ------------------------------------------------------------ reference captures

#[test]
fn each_reference_histogram_imports_with_the_statistics_of_its_trailer() {
    for name in ["hist-h400.txt", "hist-H100.txt", "hist-h100-b300.txt"] {
        let file = fixture(name);
        let run = import_one(name, &file);
        assert_threads(&run, &expected_from_histogram(&read(&file)), 1e-9);
        assert_eq!(run["config"]["source"]["format"], "cyclictest-hist");
    }
    // Hard figures from hist-h400.txt: # Total 19994 + 6 overflows, max 4139 µs.
    let run = import_one("h400-again", &fixture("hist-h400.txt"));
    let t0 = &run["thread_stats"][0];
    assert_eq!(t0["samples"], 20000);
    assert_eq!(t0["max_ns"], 4_139_000);
    assert_eq!(
        run["config"]["source"]["overflows"],
        serde_json::json!([6, 19])
    );
    assert_eq!(run["config"]["source"]["histogram_size_us"], 400);
}

#[test]
fn the_debian_and_the_upstream_sparse_histogram_forms_import_alike() {
    let full = import_one("debian", &fixture("hist-h400.txt"));
    let sparse_file = fixture("hist-h400-upstream-sparse.txt");
    assert!(!read(&sparse_file).contains("# Total:"));
    let sparse = import_one("upstream", &sparse_file);
    // Alike except the floor of the overflows: the sparse form does not say its -h limit, so
    // the bound is the histogram's top (lower, still true) instead of 400 µs.
    let strip = |run: &Value| {
        let mut t = run["thread_stats"].clone();
        for t in t.as_array_mut().unwrap() {
            let bounds = t
                .as_object_mut()
                .unwrap()
                .remove("percentiles_lower_bound_ns");
            for v in bounds.unwrap().as_object().unwrap().values() {
                assert!(v.as_u64().unwrap() <= 400_000);
            }
        }
        t
    };
    assert_eq!(strip(&full), strip(&sparse));
    assert_eq!(full["percentiles_ns"], sparse["percentiles_ns"]);
    assert_eq!(sparse["config"]["source"]["histogram_size_us"], Value::Null);
}

#[test]
fn the_verbose_capture_imports_with_exact_statistics() {
    let file = fixture("verbose-head100.txt");
    let run = import_one("verbose", &file);
    let want = expected_from_verbose(&read(&file));
    assert_eq!(want[0].0, 94);
    assert_threads(&run, &want, 1e-9);
}

#[test]
fn the_cyclictest_json_captures_import_with_their_cycles_min_max_and_mean() {
    for name in ["out.json", "out-hist.json"] {
        let file = fixture(name);
        let run = import_one(name, &file);
        // avg has two decimals; the importer's mean is exact when nothing overflowed.
        assert_threads(&run, &expected_from_json(&read(&file)), 0.005);
        assert_eq!(
            run["started"],
            if name == "out.json" {
                "2026-11-22T01:41:18.000000000Z"
            } else {
                "2026-11-22T01:41:24.000000000Z"
            }
        );
        assert_eq!(run["measured_ns"], 4_000_000_000u64);
        assert_eq!(run["environment"]["uname.release"], "6.18.44-fc-v657");
        assert_eq!(run["thread_stats"][1]["priority"], 90);
        assert_eq!(run["thread_stats"][1]["interval_ns"], 200_000);
        assert_eq!(run["thread_stats"][1]["cpu"], 1);
    }
    let hist = import_one("json-hist", &fixture("out-hist.json"));
    let t0 = &hist["thread_stats"][0];
    assert!(t0["percentiles_ns"]["p50"].as_u64().is_some(), "{t0}");
    let plain = import_one("json-plain", &fixture("out.json"));
    assert_eq!(
        plain["percentiles_ns"]["p50"],
        Value::Null,
        "no histogram without -h"
    );
}

#[test]
fn a_jitterdebugger_directory_made_from_the_reference_files_imports() {
    let d = dir("jd-src");
    std::fs::copy(fixture("results.json"), d.join("results.json")).unwrap();
    std::fs::copy(fixture("samples.raw.first1000"), d.join("samples.raw")).unwrap();
    let run = import_one("jd", &d);
    let doc: Value = serde_json::from_str(&read(&fixture("results.json"))).unwrap();
    let want: Expected = (0..2)
        .map(|i| {
            let t = &doc["cpu"][i.to_string()];
            let n = |k: &str| t[k].as_u64().unwrap();
            (n("count"), n("min"), n("max"), t["avg"].as_f64().unwrap())
        })
        .collect();
    assert_eq!(want[0].0, 24911);
    assert_threads(&run, &want, 1e-9);
    assert_eq!(run["config"]["source"]["format"], "jitterdebugger");
    assert_eq!(run["config"]["source"]["samples_raw_records"], 1000);
    assert_eq!(
        run["thread_stats"][0]["interval_ns"], 200_000,
        "inferred from the wake-up times"
    );
    assert!(run["series_points"].as_u64().unwrap() >= 2, "{run}");
    assert_eq!(run["environment"]["uname.release"], "6.18.44-fc-v657");
}

#[test]
fn the_stress_ng_log_imports_its_summary_statistics_without_a_histogram() {
    let db = dir("stress").join("r.db");
    let file = fixture("stress-ng-cyclic.txt");
    let o = rtscope(&[
        "import",
        "--db",
        db.to_str().unwrap(),
        file.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", dump(&o));
    let out = text(&o.stdout);
    assert!(
        out.starts_with(&format!(
            "imported {} as run 1 (stress-ng, 1 thread, 10000 samples)",
            file.display()
        )),
        "{out}"
    );
    assert!(text(&o.stderr).contains("no histogram"), "{}", dump(&o));
    let run = show(&db, &Value::from(1));
    let t = &run["thread_stats"][0];
    assert_eq!(
        (
            t["samples"].as_u64(),
            t["min_ns"].as_u64(),
            t["max_ns"].as_u64()
        ),
        (Some(10000), Some(10855), Some(854_110))
    );
    assert_eq!(t["mean_ns"].as_f64(), Some(24451.04));
    assert_eq!(t["percentiles_ns"]["p50"], Value::Null);
    let source = &run["config"]["source"]["instances"][0];
    assert_eq!(source["percentiles_ns"]["99.90"], 116_052);
    assert_eq!(
        (t["policy"].as_str(), t["interval_ns"].as_u64()),
        (Some("deadline"), Some(100_000))
    );
}

#[test]
fn several_files_import_as_several_runs_with_the_label_and_tags() {
    let db = dir("several").join("r.db");
    let files = [fixture("hist-H100.txt"), fixture("out.json")];
    let r = import(
        &db,
        &[&files[0], &files[1]],
        &["--label", "old board", "--tag", "kernel=4.19-rt"],
    );
    assert_eq!(r.len(), 2);
    assert_eq!(
        (r[0]["run"].as_i64(), r[1]["run"].as_i64()),
        (Some(1), Some(2))
    );
    assert_eq!(
        (r[0]["format"].as_str(), r[1]["format"].as_str()),
        (Some("cyclictest-hist"), Some("cyclictest-json"))
    );
    assert_eq!(
        (r[0]["threads"].as_u64(), r[0]["samples"].as_u64()),
        (Some(2), Some(10000))
    );
    let run = show(&db, &r[1]["run"]);
    assert_eq!(run["label"], "old board");
    assert_eq!(run["tags"]["kernel"], "4.19-rt");
    let cmd = run["command_line"].as_array().unwrap();
    assert!(cmd.iter().any(|a| a == "import"), "{cmd:?}");
    assert!(run["config"]["source"]["path"]
        .as_str()
        .unwrap()
        .ends_with("out.json"));
}

// ------------------------------------------------------------ the real cyclictest

fn real_cyclictest(name: &str, args: &[&str]) -> (PathBuf, String) {
    let d = dir(name);
    let (stdout, _) = common::reference::cyclictest(args);
    let file = d.join(format!("{name}.txt"));
    std::fs::write(&file, &stdout).unwrap();
    (file, stdout)
}

#[test]
fn a_real_cyclictest_histogram_imports_with_matching_statistics() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    let args = ["-l2000", "-m", "-S", "-p90", "-i200", "-h400", "-q"];
    let (mut file, mut out) = real_cyclictest("real-h", &args);
    for _ in 1..common::reference::PEER_ATTEMPTS {
        if !common::reference::starved_peer_histogram(&out) {
            break;
        }
        (file, out) = real_cyclictest("real-h", &args);
    }
    let run = import_one("real-h-db", &file);
    assert_threads(&run, &expected_from_histogram(&out), 1e-9);
}

#[test]
fn a_real_cyclictest_verbose_run_imports_with_matching_statistics() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    let args = ["-l2000", "-m", "-p90", "-i200", "-t2", "-q", "-v"];
    let (mut file, mut out) = real_cyclictest("real-v", &args);
    // A thread that never woke prints no sample line (starved, as in starved_peer_json).
    for _ in 1..common::reference::PEER_ATTEMPTS {
        if expected_from_verbose(&out).len() == 2 {
            break;
        }
        (file, out) = real_cyclictest("real-v", &args);
    }
    let run = import_one("real-v-db", &file);
    assert_threads(&run, &expected_from_verbose(&out), 1e-6);
    assert_eq!(
        run["thread_stats"][1]["interval_ns"], 700_000,
        "from the T: line"
    );
}

#[test]
fn a_real_cyclictest_json_file_imports_with_matching_statistics() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    let d = dir("real-json");
    let json = d.join("out.json");
    let arg = format!("--json={}", json.display());
    for _ in 0..common::reference::PEER_ATTEMPTS {
        common::reference::cyclictest(&[
            "-l2000", "-m", "-S", "-p90", "-i200", "-h400", "-q", &arg,
        ]);
        if !common::reference::starved_peer_json(&read(&json)) {
            break;
        }
    }
    let run = import_one("real-json-db", &json);
    assert_threads(&run, &expected_from_json(&read(&json)), 0.005);
}

// ------------------------------------------------------------ bad input

/// Imports `file` expecting exit 2 and an error naming `names` and `place`.
fn refused(file: &Path, names: &str, place: &str) -> String {
    let db = file.with_extension("db");
    let o = rtscope(&[
        "import",
        "--db",
        db.to_str().unwrap(),
        file.to_str().unwrap(),
    ]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{}", dump(&o));
    assert!(!err.contains("panicked"), "{err}");
    assert!(err.contains(names), "{names:?} not named in {err:?}");
    assert!(err.contains(place), "{place:?} not in {err:?}");
    assert!(!db.exists(), "nothing may be written for a bad file");
    err
}

#[test]
fn malformed_and_truncated_files_exit_2_naming_the_file_and_the_place() {
    let d = dir("bad");
    let hist = read(&fixture("hist-h400.txt")).replacen("000013 004376", "000013 0043x6", 1);
    std::fs::write(d.join("bad-row.txt"), hist).unwrap();
    refused(
        &d.join("bad-row.txt"),
        "bad-row.txt",
        "line 16: count 1 is '0043x6'",
    );

    let cut = read(&fixture("hist-h400.txt"));
    std::fs::write(d.join("cut-hist.txt"), &cut[..cut.find("# Min").unwrap()]).unwrap();
    refused(&d.join("cut-hist.txt"), "cut-hist.txt", "truncated");

    let json = read(&fixture("out-hist.json"));
    std::fs::write(d.join("half.json"), &json[..json.len() / 2]).unwrap();
    let e = refused(&d.join("half.json"), "half.json", "line 146, column 14");
    assert!(e.contains("truncated"), "{e}");

    let jd = dir("bad-jd");
    std::fs::copy(fixture("results.json"), jd.join("results.json")).unwrap();
    let raw = std::fs::read(fixture("samples.raw.first1000")).unwrap();
    std::fs::write(jd.join("samples.raw"), &raw[..raw.len() - 5]).unwrap();
    refused(
        &jd,
        "samples.raw",
        "27995 bytes is not a whole number of 28-byte records",
    );

    std::fs::write(d.join("empty.txt"), "").unwrap();
    refused(&d.join("empty.txt"), "empty.txt", "the file is empty");

    let garbage: Vec<u8> = (0..4096u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    std::fs::write(d.join("garbage.bin"), garbage).unwrap();
    refused(&d.join("garbage.bin"), "garbage.bin", "binary data");
}

#[test]
fn garbage_forced_through_every_format_is_refused_without_a_panic() {
    let d = dir("forced");
    let garbage: Vec<u8> = (0..4096u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 11) as u8)
        .collect();
    let file = d.join("garbage.bin");
    std::fs::write(&file, garbage).unwrap();
    for format in [
        "cyclictest-hist",
        "cyclictest-verbose",
        "cyclictest-json",
        "stress-ng",
    ] {
        let o = rtscope(&[
            "import",
            "--db",
            d.join("r.db").to_str().unwrap(),
            "--format",
            format,
            file.to_str().unwrap(),
        ]);
        assert_eq!(o.status.code(), Some(2), "{format}: {}", dump(&o));
        let err = text(&o.stderr);
        assert!(
            err.contains("garbage.bin") && !err.contains("panicked"),
            "{format}: {err}"
        );
    }
}

#[test]
fn unknown_content_is_refused_with_the_formats_and_the_format_option() {
    let d = dir("unknown");
    let file = d.join("notes.txt");
    std::fs::write(&file, "measured on Tuesday: looked fine\n").unwrap();
    let e = refused(
        &file,
        "notes.txt",
        "cyclictest-hist, cyclictest-verbose, cyclictest-json, cyclictest-summary, jitterdebugger, stress-ng, oslat, rtla-osnoise-top, rtla-osnoise-hist",
    );
    assert!(e.contains("--format"), "{e}");
}

#[test]
fn one_bad_file_among_several_imports_none_of_them() {
    let d = dir("mixed");
    std::fs::write(d.join("empty.txt"), "").unwrap();
    let db = d.join("r.db");
    let o = rtscope(&[
        "import",
        "--db",
        db.to_str().unwrap(),
        fixture("out.json").to_str().unwrap(),
        d.join("empty.txt").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", dump(&o));
    assert!(
        text(&o.stderr).contains("1 of 2 inputs could not be imported"),
        "{}",
        dump(&o)
    );
    assert!(!db.exists());
}
