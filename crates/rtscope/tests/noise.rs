//! `rtscope noise` through the real binary: bad input (exit 2, the option named, nothing
//! recorded), a limit (exit 1), SIGINT (exit 3, the results and the record kept), and the
//! summary's arithmetic checked against the gaps and histogram in the JSON. SCHED_OTHER and no
//! memory lock, so the runs behave the same with or without privileges.

use crate::common::{dump, now_ns, run, show_last, temp_path};
use std::process::{Command, Stdio};
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_rtscope");

fn noise(args: &[&str]) -> std::process::Output {
    let mut all = vec!["noise", "--no-mlock", "-q"];
    all.extend_from_slice(args);
    run(BIN, &all)
}

fn json(path: &std::path::Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn bad_noise_settings_exit_2_naming_the_option_and_record_nothing() {
    let db = temp_path("noise-bad.db");
    let _ = std::fs::remove_file(&db);
    let cases: [(&[&str], &str); 6] = [
        (&["--threshold", "0"], "'--threshold': it must be above 0"),
        (
            &["--threshold", "2s"],
            "'--threshold': 2s is not below the period (1s)",
        ),
        (&["--runtime", "2s"], "'--runtime'"),
        (&["--runtime", "20ms", "--period", "10ms"], "'--runtime'"),
        (&["--cpus", "4095"], "'--cpus'"),
        (&["--limit", "max=1us"], "'--limit'"),
    ];
    for (args, want) in cases {
        let mut all = args.to_vec();
        all.extend(["--db", db.to_str().unwrap()]);
        let o = noise(&all);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", dump(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(want), "{args:?}: {err}");
        assert!(!db.exists(), "{args:?} created the database");
    }
}

#[test]
fn a_noise_limit_fails_with_exit_1_and_the_summary_adds_up() {
    let out = temp_path("noise-limit.json");
    let before = now_ns();
    let o = noise(&[
        "--cpus",
        "0",
        "-D",
        "300ms",
        "--no-db",
        "--limit",
        "max_single=1ns",
        "--json",
        out.to_str().unwrap(),
    ]);
    // Two clock readings are never 1 ns or less apart: the limit fails for certain.
    assert_eq!(o.status.code(), Some(1), "{}", dump(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("limit FAIL: CPU 0 max_single"), "{text}");
    // The loops ran at SCHED_OTHER (the default): every normal thread counts as noise, and the
    // text says so; the noise total carries its unit.
    assert!(
        text.contains("hint: the loops ran at SCHED_OTHER (--policy other)"),
        "{text}"
    );
    let row = text.lines().nth(1).unwrap_or_default();
    assert!(
        row.split_whitespace()
            .nth(2)
            .is_some_and(|c| c.ends_with("us") || c.ends_with("ms") || c.ends_with('s')),
        "{text}"
    );
    for col in [
        "RUNTIME",
        "NOISE",
        "AVAILABLE",
        "MAX SINGLE",
        "GAPS>THR",
        "ITER/S",
        "RESOLUTION",
        "STEAL",
        "SMI",
    ] {
        assert!(text.contains(col), "{text}");
    }
    let doc = json(&out);
    assert_eq!(doc["schema"], "rtscope.noise/1");
    assert_eq!(doc["exit_code"], 1);
    let cpu = &doc["cpus"][0];
    let s = &cpu["summary"];
    assert_eq!(s["cpu"], 0);
    let hist_total: u64 = cpu["histogram"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b[1].as_u64().unwrap())
        .sum();
    assert_eq!(hist_total, s["iterations"].as_u64().unwrap());
    let gaps = cpu["gaps"].as_array().unwrap();
    // The gaps on the clock of the caller: the run started after `before`, and every gap
    // ended before rtscope exited.
    let start = doc["clock_start_ns"].as_u64().unwrap();
    let after = now_ns();
    assert!(before < start && start < after, "{before} {start} {after}");
    assert!(gaps.iter().all(|g| start
        + g["offset_ns"].as_u64().unwrap()
        + g["duration_ns"].as_u64().unwrap()
        < after));
    let kept = s["gaps_over_threshold"].as_u64().unwrap()
        - s["gaps_dropped"].as_u64().unwrap()
        - s["gaps_not_kept"].as_u64().unwrap();
    assert_eq!(gaps.len() as u64, kept);
    assert!(gaps
        .iter()
        .all(|g| g["duration_ns"].as_u64().unwrap() > 1000));
    if s["gaps_dropped"] == 0 && s["gaps_not_kept"] == 0 {
        let sum: u64 = gaps
            .iter()
            .map(|g| g["duration_ns"].as_u64().unwrap())
            .sum();
        assert_eq!(sum, s["noise_ns"].as_u64().unwrap());
    }
    let (runtime, noise) = (
        s["runtime_ns"].as_u64().unwrap(),
        s["noise_ns"].as_u64().unwrap(),
    );
    let available = 100.0 * (runtime - noise) as f64 / runtime as f64;
    // serde_json's float parsing may be 1 ulp off the printed value.
    assert!((s["available_percent"].as_f64().unwrap() - available).abs() < 1e-9);
    assert!(s["resolution_ns"].as_u64().unwrap() >= 1);
    // The loops ran with the threshold the config states: given, or the default (1 us unless
    // the pre-heat's resolution raised it), and each loop's pre-heat resolution is there.
    let config = &doc["config"];
    assert_eq!(config["threshold_rule"], "default", "{config}");
    assert_eq!(config["threshold_requested_ns"], 1000, "{config}");
    assert!(config["threshold_ns"].as_u64().unwrap() >= 1000, "{config}");
    assert!(
        config["resolution_ns"][0].as_u64().unwrap() >= 1,
        "{config}"
    );
    // Below the kernel: steal time is read on every Linux (0 on bare metal, in 10 ms ticks);
    // an SMI count, or the reason there is none, named in the text and the JSON.
    assert_eq!(s["steal_ns"].as_u64().unwrap() % 10_000_000, 0, "{s}");
    match doc["smi_unavailable"].as_str() {
        Some(why) => {
            assert!(why.starts_with("no SMI counter"), "{why}");
            assert!(s["smis"].is_null(), "{s}");
            assert!(text.contains(&format!("SMI: {why}")), "{text}");
        }
        None => assert!(s["smis"].is_u64(), "{s}"),
    }
    let _ = std::fs::remove_file(out);
}

#[test]
fn sigint_ends_a_noise_run_with_exit_3_and_records_it_interrupted() {
    let db = temp_path("noise-int.db");
    let out = temp_path("noise-int.json");
    let _ = std::fs::remove_file(&db);
    let child = Command::new(BIN)
        .args([
            "noise",
            "--no-mlock",
            "-q",
            "--cpus",
            "0",
            "-D",
            "60s",
            "--db",
        ])
        .arg(&db)
        .arg("--json")
        .arg(&out)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    // SAFETY: kill with our own child's pid and SIGINT.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let t0 = std::time::Instant::now();
    let o = child.wait_with_output().unwrap();
    // A liveness bound far below the 60 s run, not a speed.
    assert!(t0.elapsed() < Duration::from_secs(45));
    assert_eq!(o.status.code(), Some(3), "{}", dump(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("interrupted by SIGINT"), "{text}");
    let doc = json(&out);
    assert_eq!(doc["interrupted"], "SIGINT");
    assert!(doc["cpus"][0]["summary"]["iterations"].as_u64().unwrap() > 0);
    let run = show_last(&db);
    let run = if run.get("run").is_some() {
        &run["run"]
    } else {
        &run
    };
    let flat = run.to_string();
    assert!(flat.contains("\"noise\""), "{flat}");
    assert!(flat.contains("\"interrupted\""), "{flat}");
    let _ = std::fs::remove_file(db);
    let _ = std::fs::remove_file(out);
}

/// `rtscope noise` on CPU 0 for 1 s with `args`.
pub(crate) fn one_second_on_cpu_0(args: &[&str]) -> std::process::Output {
    let mut all = vec!["--cpus", "0", "-D", "1s"];
    all.extend_from_slice(args);
    noise(&all)
}

#[test]
fn a_threshold_the_loop_cannot_resolve_is_refused_naming_the_resolution() {
    let db = temp_path("noise-res.db");
    let _ = std::fs::remove_file(&db);
    // No two clock readings are 1 ns apart: the loop's resolution is above any 1 ns threshold,
    // and every iteration would count as noise.
    let o = one_second_on_cpu_0(&["--threshold", "1ns", "--db", db.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", dump(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("'--threshold': 1ns is not above the loop's resolution on CPU 0"),
        "{err}"
    );
    assert!(err.contains("hint: use --threshold"), "{err}");
    // The database was opened before the loops' pre-heat found the resolution: it holds no run.
    if db.exists() {
        let o = run(BIN, &["runs", "--db", db.to_str().unwrap(), "--json"]);
        assert_eq!(
            String::from_utf8_lossy(&o.stdout).trim(),
            "[]",
            "{}",
            dump(&o)
        );
    }
    let _ = std::fs::remove_file(db);
}

#[test]
fn only_the_longest_gaps_are_kept_and_the_rest_counted() {
    let out = temp_path("noise-keep.json");
    let db = temp_path("noise-keep.db");
    let _ = std::fs::remove_file(&db);
    // A threshold below most iterations' cost on any machine would be refused; 1 us over a
    // second of a shared machine's noise gives some gaps, and --keep-gaps 3 keeps the longest.
    let o = one_second_on_cpu_0(&[
        "--threshold",
        "1us",
        "--keep-gaps",
        "3",
        "--db",
        db.to_str().unwrap(),
        "--json",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", dump(&o));
    let doc = json(&out);
    let s = &doc["cpus"][0]["summary"];
    let gaps = doc["cpus"][0]["gaps"].as_array().unwrap();
    let (over, dropped, not_kept) = (
        s["gaps_over_threshold"].as_u64().unwrap(),
        s["gaps_dropped"].as_u64().unwrap(),
        s["gaps_not_kept"].as_u64().unwrap(),
    );
    assert_eq!(gaps.len() as u64, (over - dropped).min(3), "{s}");
    assert_eq!(not_kept, over - dropped - gaps.len() as u64, "{s}");
    // The longest gap is among the kept ones (unless the ring dropped it), and they are in
    // time order.
    let longest = gaps
        .iter()
        .map(|g| g["duration_ns"].as_u64().unwrap())
        .max();
    if dropped == 0 && over > 0 {
        assert_eq!(longest, s["max_single_ns"].as_u64(), "{s}");
    }
    let offsets: Vec<u64> = gaps
        .iter()
        .map(|g| g["offset_ns"].as_u64().unwrap())
        .collect();
    assert!(offsets.windows(2).all(|w| w[0] <= w[1]), "{offsets:?}");
    let text = String::from_utf8_lossy(&o.stdout);
    if not_kept > 0 {
        assert!(
            text.contains(&format!(
                "{not_kept} shorter gaps over the threshold were counted but not kept"
            )),
            "{text}"
        );
    }
    // The database keeps the same gaps as events.
    let run = show_last(&db);
    let flat = run.to_string();
    assert!(flat.contains("\"noise\""), "{flat}");
    let _ = std::fs::remove_file(out);
    let _ = std::fs::remove_file(db);
}
