//! `rtscope cyclictest` against cyclictest 2.40, run now on this machine, for
//! the `--json` file, the `--latency` (/dev/cpu_dma_latency) preamble and the
//! front end reached through a symlink named `cyclictest`:
//! 1. every output passes the same grammar checkers as the real cyclictest's
//!    (tests/common/grammar/, validated by tests/grammar_*.rs);
//! 2. it has the same shape as the real cyclictest's output for the same
//!    arguments, apart from the documented differences
//!    (docs/cyclictest-differences.md);
//! 3. its numbers agree with each other (loop counts, histogram totals,
//!    JSON vs text).
//!
//! Needs root (SCHED_FIFO). The shape comparisons also need the real
//! cyclictest: without /usr/bin/cyclictest they fail and say to
//! `apt-get install rt-tests`. Set CYCLICTEST=/path/to/cyclictest to use
//! another binary. Every run is short (tens of ms) and holds
//! `common::rt_lock()`, so SCHED_FIFO runs do not overlap, not even with
//! those of other test binaries (tests/grammar_*.rs, the other compat_*.rs).
//!
//! tests/compat_text.rs covers the text outputs.

use crate::common;

use common::compat::*;
use common::grammar::*;
use common::{cpus, temp_path};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The `thread` entries of a cyclictest JSON value, in order.
fn json_threads(v: &Value) -> Vec<&Value> {
    let n = v["num_threads"].as_u64().expect("num_threads is a number") as usize;
    (0..n)
        .map(|t| {
            let e = &v["thread"][t.to_string()];
            assert!(e.is_object(), "no thread \"{t}\" in the JSON");
            e
        })
        .collect()
}

/// Sum of the counts of a JSON thread's `histogram` map.
fn json_hist_sum(thread: &Value) -> u64 {
    thread["histogram"]
        .as_object()
        .expect("histogram is an object")
        .values()
        .map(|c| c.as_u64().expect("bucket count is a number"))
        .sum()
}

/// cyclictest's part of a `--json` file: every extra key (rtscope's
/// additions) at the top level and in the thread entries is removed with its
/// value, and so is `cmdline:` (rtscope writes the command line as typed,
/// which differs from cyclictest's by design). The comma of an entry that
/// became the last of its object is dropped.
fn cyclictest_keys_only(text: &str) -> String {
    let mut kept: Vec<&str> = Vec::new();
    let mut skip_until: Option<String> = None;
    for line in text.lines() {
        if let Some(close) = &skip_until {
            if line.trim_end_matches(',') == close {
                skip_until = None;
            }
            continue;
        }
        let body = line.trim_start_matches(' ');
        let indent = line.len() - body.len();
        let known = match indent {
            2 => JSON_ROOT_KEYS,
            6 => JSON_THREAD_KEYS,
            _ => {
                kept.push(line);
                continue;
            }
        };
        let entry = body.strip_prefix('"').and_then(|b| b.split_once("\": "));
        match entry {
            Some((key, value)) if !known.contains(&key) || key == "cmdline:" => {
                let value = value.trim_end_matches(',');
                if value == "{" || value == "[" {
                    let closer = if value == "{" { '}' } else { ']' };
                    skip_until = Some(format!("{}{closer}", " ".repeat(indent)));
                }
            }
            _ => kept.push(line),
        }
    }
    let mut out = String::new();
    for (i, line) in kept.iter().enumerate() {
        let closes_next = kept
            .get(i + 1)
            .is_some_and(|n| n.trim_start().starts_with('}'));
        let line = if closes_next {
            line.strip_suffix(',').unwrap_or(line)
        } else {
            line
        };
        out.push_str(line);
        out.push('\n');
    }
    out
}

#[test]
fn cyclictest_keys_only_removes_rtscopes_additions_and_the_cmdline_and_nothing_else() {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/reference/cyclictest-2.40/out.json");
    let reference = std::fs::read_to_string(&path).expect("reference out.json");
    let stripped = cyclictest_keys_only(&reference);
    assert_eq!(
        stripped,
        reference
            .lines()
            .filter(|l| !l.contains("\"cmdline:\""))
            .map(|l| format!("{l}\n"))
            .collect::<String>(),
        "cyclictest's own file only loses its cmdline"
    );
    let with_extras = reference
        .replacen(
            "      \"node\": -1\n",
            "      \"node\": -1,\n      \"missed_periods\": 0,\n      \"percentiles_ns\": {\n        \"p50\": 5\n      },\n      \"overflows\": 0\n",
            2,
        )
        .replace(
            "    }\n  }\n}\n",
            "    }\n  },\n  \"rtscope\": {\n    \"version\": \"0.1.0\"\n  }\n}\n",
        );
    assert_ne!(with_extras, reference);
    assert_eq!(cyclictest_keys_only(&with_extras), stripped);
}

// ---------------------------------------------------------------- --json

#[test]
fn the_json_file_has_cyclictests_keys_then_rtscopes_and_cyclictests_shape() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    let path = temp_path("out.json");
    let arg = format!("--json={}", path.display());
    let out = rtscope(&["-l200", "-m", "-S", "-p90", "-i200", "-q", &arg]);
    passes(
        "-q next to --json",
        &out,
        check_summary(&out, &summary_opts(cpus(), false)),
    );
    let (text, v) = take_json(&path);
    passes("--json", &text, check_json(&text, false));
    for key in JSON_ROOT_KEYS {
        assert!(v.get(key).is_some(), "no {key:?} in the JSON\n{text}");
    }
    assert_eq!(v["num_threads"], cpus(), "{text}");
    assert_eq!(v["return_code"], 0, "{text}");
    assert!(v["rtscope"].is_object(), "no `rtscope` object\n{text}");
    for (t, thread) in json_threads(&v).into_iter().enumerate() {
        for key in JSON_THREAD_KEYS {
            assert!(thread.get(key).is_some(), "thread {t}: no {key:?}\n{text}");
        }
        assert_eq!(thread["cycles"], 200, "thread {t}: full loop count\n{text}");
        assert!(
            thread["missed_periods"].is_u64(),
            "thread {t}: `missed_periods` is a count\n{text}"
        );
        check_percentiles(t, thread, &text);
    }
    let c_text = peer_json(&["-l200", "-m", "-S", "-p90", "-i200", "-q"]);
    assert_same_shape(
        "--json without rtscope's extra keys and cmdline",
        &cyclictest_keys_only(&text),
        &cyclictest_keys_only(&c_text),
    );
}

/// `percentiles_ns`: an object of `pNN` keys whose values do not decrease
/// with the percentile and do not exceed `max_ns`.
fn check_percentiles(t: usize, thread: &Value, text: &str) {
    let p = thread["percentiles_ns"]
        .as_object()
        .unwrap_or_else(|| panic!("thread {t}: `percentiles_ns` is an object\n{text}"));
    let mut points: Vec<(f64, u64)> = p
        .iter()
        .map(|(k, v)| {
            let at = k.strip_prefix('p').and_then(|n| n.parse::<f64>().ok());
            let at = at.unwrap_or_else(|| panic!("thread {t}: percentile key {k:?}\n{text}"));
            (at, v.as_u64().expect("percentile in ns"))
        })
        .collect();
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    assert!(
        points.iter().any(|p| p.0 == 50.0) && points.iter().any(|p| p.0 == 99.0),
        "thread {t}: p50 and p99 are listed\n{text}"
    );
    assert!(
        points.windows(2).all(|w| w[0].1 <= w[1].1),
        "thread {t}: percentiles must not decrease: {points:?}"
    );
    let max_ns = thread["max_ns"].as_u64().expect("max_ns");
    assert!(
        points.iter().all(|p| p.1 <= max_ns),
        "thread {t}: a percentile above max_ns {max_ns}: {points:?}"
    );
}

#[test]
fn the_json_file_with_a_histogram_agrees_with_the_histogram_text() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    let path = temp_path("out-hist.json");
    let arg = format!("--json={}", path.display());
    let out = rtscope(&["-l200", "-m", "-S", "-p90", "-i200", "-h100", "-q", &arg]);
    let h = passes(
        "-h100 next to --json",
        &out,
        parse_histogram(&out, &hist_opts(cpus(), 100, false)),
    );
    let (text, v) = take_json(&path);
    passes("--json -h100", &text, check_json(&text, true));
    check_json_vs_histogram(&h, &v, 200, &format!("{out}\n{text}"));
}

/// Every thread took `loops` samples, and the JSON entry of each thread
/// matches its histogram column and trailer values.
fn check_json_vs_histogram(h: &Histogram, v: &Value, loops: u64, both: &str) {
    let threads = json_threads(v);
    assert_eq!(threads.len(), h.overflows.values.len(), "{both}");
    let total = h.total.as_ref().expect("`# Total:`");
    for (j, t) in threads.into_iter().enumerate() {
        let ctx = |what: &str| format!("thread {j}: {what}\n{both}");
        assert_eq!(
            total.values[j] + h.overflows.values[j],
            loops,
            "{}",
            ctx("Total + Overflows is the loop count")
        );
        assert_eq!(t["cycles"], loops, "{}", ctx("JSON cycles"));
        assert_eq!(
            json_hist_sum(t),
            total.values[j],
            "{}",
            ctx("JSON histogram counts vs `# Total:`")
        );
        assert_eq!(
            t["overflows"],
            h.overflows.values[j],
            "{}",
            ctx("JSON overflows vs `# Histogram Overflows:`")
        );
        assert_eq!(t["min"], h.min.values[j], "{}", ctx("JSON min"));
        assert_eq!(t["max"], h.max.values[j], "{}", ctx("JSON max"));
        let avg = t["avg"].as_f64().expect("avg is a number");
        let text_avg = h.avg.values[j] as f64;
        assert!(
            (text_avg..=text_avg + 1.0).contains(&avg),
            "{}",
            ctx(&format!("JSON avg {avg} vs `# Avg Latencies:` {text_avg}"))
        );
    }
}

#[test]
fn with_l_and_h_every_thread_takes_exactly_l_samples_in_text_and_json() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    // -h8: a few µs buckets, so some samples overflow on any machine and
    // both the in-range counts and the overflow counts are exercised.
    // cyclictest stops every thread when the first one reaches -l; rtscope
    // runs each to its full loop count.
    let path = temp_path("loops.json");
    let arg = format!("--json={}", path.display());
    let out = rtscope(&["-l300", "-m", "-S", "-p90", "-i200", "-h8", "-q", &arg]);
    let h = passes(
        "-l300 -h8",
        &out,
        parse_histogram(&out, &hist_opts(cpus(), 8, false)),
    );
    assert_eq!(samples_per_thread(&h, cpus()), vec![300; cpus()], "{out}");
    let (text, v) = take_json(&path);
    passes("-l300 -h8 --json", &text, check_json(&text, true));
    check_json_vs_histogram(&h, &v, 300, &format!("{out}\n{text}"));
}

#[test]
fn json_avg_lies_between_min_and_max_with_one_sample() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    // One sample of e.g. 11858 ns: rtscope writes min 11, max 11, avg 11.86;
    // cyclictest (mean of the µs values) writes avg 11.00.
    let path = temp_path("one.json");
    let arg = format!("--json={}", path.display());
    rtscope(&["-l1", "-m", "-t1", "-p90", "-i200", "-q", &arg]);
    let (text, v) = take_json(&path);
    let t = &v["thread"]["0"];
    let (min, max) = (t["min"].as_f64().unwrap(), t["max"].as_f64().unwrap());
    let avg = t["avg"].as_f64().unwrap();
    assert!(min <= avg && avg <= max, "{min} <= {avg} <= {max}\n{text}");
    passes("-l1 --json", &text, check_json(&text, false));
}

// ---------------------------------------------------------------- --latency

#[test]
fn latency_zero_prints_cyclictests_dma_latency_preamble() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    let args = ["-l50", "-m", "-t1", "-p90", "-i200", "-q", "--latency=0"];
    let out = rtscope(&args);
    passes(
        "--latency=0",
        &out,
        check_summary(&out, &SummaryOpts::us(1)),
    );
    // Not through cyclictest(): this compares the preamble that it prints
    // when it does write /dev/cpu_dma_latency.
    let c = cyclictest_exact(&args).stdout;
    assert_eq!(
        out.lines().next(),
        Some("# /dev/cpu_dma_latency set to 0us"),
        "{out}"
    );
    assert_eq!(out.lines().next(), c.lines().next(), "first line\n{out}{c}");
    assert_same_shape("--latency=0", &out, &c);
    // rtscope() adds --default-system without --latency: then neither writes nor mentions it.
    let plain = rtscope(&args[..args.len() - 1]);
    assert!(
        !plain.contains("cpu_dma_latency"),
        "with --default-system rtscope neither writes nor mentions it\n{plain}"
    );
}

// ---------------------------------------------------------------- symlink

/// A temp dir holding a symlink named `cyclictest` to rtscope; removed on drop.
struct Symlink(PathBuf);

impl Symlink {
    fn new() -> Self {
        let dir = temp_path("symlink");
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create temp dir");
        std::os::unix::fs::symlink(rtscope_bin(), dir.join("cyclictest"))
            .expect("symlink rtscope as cyclictest");
        Symlink(dir)
    }

    fn path(&self) -> String {
        self.0.join("cyclictest").display().to_string()
    }
}

impl Drop for Symlink {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn rtscope_run_through_a_symlink_named_cyclictest_is_the_cyclictest_front_end() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    let link = Symlink::new();
    let path = temp_path("symlink.json");
    let arg = format!("--json={}", path.display());
    let args = ["-l50", "-m", "-S", "-p90", "-i200", "-q"];
    let mut with_json = args.to_vec();
    with_json.push(&arg);
    let r = run_locked(&link.path(), &with_json);
    r.expect_exit(0);
    // Through the symlink, the drop-in's default: /dev/cpu_dma_latency held at 0 and
    // cyclictest's line saying so.
    let opts = SummaryOpts {
        preamble: Some(true),
        ..summary_opts(cpus(), false)
    };
    let s = passes("symlink -q", &r.stdout, parse_summary(&r.stdout, &opts));
    assert!(s.threads.iter().all(|t| t.cycles == 50), "{}", r.stdout);
    let (text, v) = take_json(&path);
    passes("symlink --json", &text, check_json(&text, false));
    let cmdline = v["cmdline:"].as_str().expect("cmdline: is a string");
    assert_eq!(
        cmdline,
        format!("{} {}", link.path(), with_json.join(" ")),
        "the command line as typed"
    );
    let held = [&args[..], &["--latency=0"][..]].concat();
    assert_same_shape("symlink vs subcommand", &r.stdout, &rtscope(&held));
}

/// The real cyclictest's JSON file for `args`, run again while a thread of it starved
/// ([`common::reference::starved_peer_json`]: `"avg": -nan` is not JSON).
fn peer_json(args: &[&str]) -> String {
    let c_path = temp_path("cyclictest.json");
    let c_arg = format!("--json={}", c_path.display());
    let mut full = args.to_vec();
    full.push(&c_arg);
    for _ in 0..common::reference::PEER_ATTEMPTS {
        cyclictest(&full);
        let text = std::fs::read_to_string(&c_path).unwrap_or_default();
        if !common::reference::starved_peer_json(&text) {
            break;
        }
    }
    take_json(&c_path).0
}
