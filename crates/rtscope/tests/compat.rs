//! `rtscope cyclictest` against cyclictest 2.40, run now on this machine:
//! 1. every output passes the same grammar checkers as the real cyclictest's
//!    (tests/common/grammar/, validated by tests/grammar_reference.rs);
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
//! those of tests/grammar_reference.rs.

mod common;

use common::grammar::*;
use serde_json::Value;
use std::path::{Path, PathBuf};

// ---------------------------------------------------------------- running

/// What a finished run printed.
struct Ran {
    what: String,
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Ran {
    /// Panics unless the run exited with `code`.
    fn expect_exit(&self, code: i32) -> &Self {
        assert_eq!(
            self.code,
            Some(code),
            "`{}` exited with {:?}, expected {code}\n{}",
            self.what,
            self.code,
            self.dump()
        );
        self
    }

    fn dump(&self) -> String {
        format!(
            "--- stdout ---\n{}--- stderr ---\n{}",
            self.stdout, self.stderr
        )
    }
}

/// Runs `bin args` under the SCHED_FIFO lock.
fn run_locked(bin: &str, args: &[&str]) -> Ran {
    let out = {
        let _guard = common::rt_lock();
        common::run(bin, args)
    };
    let what = common::describe(bin, args);
    Ran {
        code: out.status.code(),
        stdout: String::from_utf8(out.stdout)
            .unwrap_or_else(|e| panic!("`{what}` printed non-UTF-8 on stdout: {e}")),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        what,
    }
}

fn rtscope_bin() -> &'static str {
    env!("CARGO_BIN_EXE_rtscope")
}

/// `rtscope cyclictest args...`, whatever its exit code.
fn rtscope_run(args: &[&str]) -> Ran {
    let full: Vec<&str> = std::iter::once("cyclictest")
        .chain(args.iter().copied())
        .collect();
    run_locked(rtscope_bin(), &full)
}

/// `rtscope cyclictest args...`, which must exit 0; returns its stdout.
fn rtscope(args: &[&str]) -> String {
    let r = rtscope_run(args);
    r.expect_exit(0);
    r.stdout
}

const CYCLICTEST: &str = "/usr/bin/cyclictest";

fn cyclictest_path() -> String {
    let path = std::env::var("CYCLICTEST").unwrap_or_else(|_| CYCLICTEST.to_string());
    assert!(
        Path::new(&path).is_file(),
        "{path} is missing: the real cyclictest is needed to compare rtscope's output with; \
         install it with `apt-get install rt-tests` (rt-tests 2.4, run as root)"
    );
    path
}

/// The real cyclictest with `args`, exactly as given; must exit 0 (it does
/// even when `-b` fires).
fn cyclictest_exact(args: &[&str]) -> Ran {
    let r = run_locked(&cyclictest_path(), args);
    r.expect_exit(0);
    r
}

/// The real cyclictest with `args` plus `--default-system`, so that it leaves
/// /dev/cpu_dma_latency alone as rtscope does by default. Returns stdout
/// without any `# /dev/cpu_dma_latency` line (2.4 prints none with
/// `--default-system`; other builds might) and stderr.
fn cyclictest(args: &[&str]) -> (String, String) {
    let mut full = args.to_vec();
    full.push("--default-system");
    let r = cyclictest_exact(&full);
    (without_dma_latency_line(&r.stdout), r.stderr)
}

fn without_dma_latency_line(text: &str) -> String {
    text.split_inclusive('\n')
        .filter(|l| !l.starts_with("# /dev/cpu_dma_latency set to "))
        .collect()
}

/// Threads `-S` starts: one per CPU available to this process.
fn cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

fn temp_path(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("rtscope-compat-{}-{name}", std::process::id()))
}

/// Reads and deletes the JSON file at `path`; returns its text and value.
fn take_json(path: &Path) -> (String, Value) {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("the JSON file {} was not written: {e}", path.display()));
    let _ = std::fs::remove_file(path);
    let value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("the JSON file does not parse: {e}\n{text}"));
    (text, value)
}

// ---------------------------------------------------------------- checking

/// Panics with the checker's message and the whole output.
fn passes<T>(what: &str, text: &str, r: Result<T, String>) -> T {
    r.unwrap_or_else(|e| {
        panic!("rtscope's output ({what}) was rejected:\n{e}\n--- output ---\n{text}")
    })
}

fn assert_same_shape(what: &str, rtscope: &str, cyclictest: &str) {
    if let Err(e) = same_shape(rtscope, cyclictest) {
        panic!(
            "{what}: rtscope's output (left) does not have the shape of cyclictest's (right):\n{e}\n\
             --- rtscope ---\n{rtscope}--- cyclictest ---\n{cyclictest}"
        );
    }
}

/// A `-q` summary without the preamble (rtscope's default).
fn summary_opts(threads: usize, nsecs: bool) -> SummaryOpts {
    SummaryOpts {
        nsecs,
        threads: Some(threads),
        preamble: Some(false),
    }
}

/// A Debian 2.4 histogram of `threads` columns and `buckets` rows.
fn hist_opts(threads: usize, buckets: usize, sum_column: bool) -> HistOpts {
    HistOpts {
        threads,
        buckets: Some(buckets),
        sum_column,
        total_line: true,
    }
}

/// `text` without the `# Thread N: <cycle numbers>` overflow lists: which
/// samples overflow differs from run to run (and between programs), so the
/// number of cycle numbers on those lines differs legitimately.
fn without_overflow_lists(text: &str) -> String {
    text.split_inclusive('\n')
        .filter(|l| !l.starts_with("# Thread ") || l.starts_with("# Thread Ids:"))
        .collect()
}

/// The [`shape`] of `text` with runs of lines of the same shape collapsed
/// into one: for lists whose length differs legitimately (spike lines).
fn collapsed_shape(text: &str) -> String {
    let s = shape(text);
    let mut lines: Vec<&str> = s.split('\n').collect();
    lines.dedup();
    lines.join("\n")
}

/// Per-thread `# Total:` + `# Histogram Overflows:` (the samples a thread took).
fn samples_per_thread(h: &Histogram, threads: usize) -> Vec<u64> {
    let total = h
        .total
        .as_ref()
        .expect("a Debian 2.4 histogram has `# Total:`");
    (0..threads)
        .map(|j| total.values[j] + h.overflows.values[j])
        .collect()
}

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

// ---------------------------------------------------------------- -q summary

#[test]
fn the_quiet_summary_passes_the_summary_checker_and_has_cyclictests_shape() {
    let args = ["-l200", "-m", "-S", "-p90", "-i200", "-q"];
    let r = rtscope_run(&args);
    r.expect_exit(0);
    assert!(
        r.stderr.is_empty(),
        "a plain -q run prints nothing on stderr:\n{}",
        r.dump()
    );
    let s = passes(
        "-q",
        &r.stdout,
        parse_summary(&r.stdout, &summary_opts(cpus(), false)),
    );
    for t in &s.threads {
        assert_eq!(
            t.cycles, 200,
            "every thread runs its full loop count\n{}",
            r.stdout
        );
    }
    if cpus() > 1 {
        assert_eq!(
            s.threads[1].interval, 700,
            "-S keeps the 500 µs distance\n{}",
            r.stdout
        );
    }
    let (c, _) = cyclictest(&args);
    assert_same_shape("-q", &r.stdout, &c);
}

#[test]
fn the_nsecs_summary_passes_the_nsecs_summary_checker_and_has_cyclictests_shape() {
    let args = ["-l200", "-m", "-S", "-p90", "-i200", "-N", "-q"];
    let out = rtscope(&args);
    passes(
        "-N -q",
        &out,
        check_summary(&out, &summary_opts(cpus(), true)),
    );
    let (c, _) = cyclictest(&args);
    assert_same_shape("-N -q", &out, &c);
}

// ---------------------------------------------------------------- histograms

#[test]
fn the_histogram_passes_the_histogram_checker_and_has_cyclictests_shape() {
    let args = ["-l200", "-m", "-S", "-p90", "-i200", "-h100", "-q"];
    let out = rtscope(&args);
    let h = passes(
        "-h100",
        &out,
        parse_histogram(&out, &hist_opts(cpus(), 100, false)),
    );
    assert_eq!(
        samples_per_thread(&h, cpus()),
        vec![200; cpus()],
        "Total + Overflows is the loop count of every thread\n{out}"
    );
    let (c, _) = cyclictest(&args);
    assert_same_shape(
        "-h100",
        &without_overflow_lists(&out),
        &without_overflow_lists(&c),
    );
}

#[test]
fn the_big_h_histogram_of_two_threads_has_cyclictests_sum_column_and_shape() {
    let args = ["-l200", "-m", "-S", "-p90", "-i200", "-H100", "-q"];
    let out = rtscope(&args);
    passes(
        "-H100 -S",
        &out,
        parse_histogram(&out, &hist_opts(cpus(), 100, true)),
    );
    if cpus() > 1 {
        assert!(
            out.lines()
                .nth(1)
                .is_some_and(|row| row.matches('\t').count() == cpus()),
            "one TAB per thread: the sum column follows the last thread\n{out}"
        );
    }
    let (c, _) = cyclictest(&args);
    assert_same_shape(
        "-H100",
        &without_overflow_lists(&out),
        &without_overflow_lists(&c),
    );
}

#[test]
fn the_big_h_histogram_of_one_thread_has_no_sum_column_like_cyclictest_2_4() {
    let args = ["-l200", "-m", "-t1", "-p90", "-i200", "-H50", "-q"];
    let out = rtscope(&args);
    passes("-H50 -t1", &out, check_histogram(&out, 1, true, true));
    assert!(!out.contains('\t'), "no sum column for one thread\n{out}");
    let (c, _) = cyclictest(&args);
    assert_same_shape(
        "-H50 -t1",
        &without_overflow_lists(&out),
        &without_overflow_lists(&c),
    );
}

#[test]
fn the_overflow_list_is_truncated_after_h_cycles_with_an_others_count() {
    // -N makes the buckets 1 ns wide: every sample overflows -h3, and only
    // the first 3 cycle numbers are listed, then ` # NNNNN others`.
    let args = ["-l100", "-m", "-t1", "-p90", "-i200", "-N", "-h3", "-q"];
    let out = rtscope(&args);
    let h = passes(
        "-N -h3",
        &out,
        parse_histogram(&out, &hist_opts(1, 3, false)),
    );
    assert_eq!(h.overflow_at[0].cycles, vec![0, 1, 2], "{out}");
    assert_eq!(h.overflow_at[0].others, Some(97), "{out}");
    assert!(
        out.contains("# Thread 0: 00000 00001 00002 # 00097 others\n"),
        "{out}"
    );
    assert_eq!(samples_per_thread(&h, 1), vec![100], "{out}");
    // Both lists are truncated, so they have the same shape: no stripping.
    let (c, _) = cyclictest(&args);
    assert_same_shape("-N -h3", &out, &c);
}

#[test]
fn distance_with_a_histogram_warns_on_stderr_and_the_break_trailer_lists_thread_ids() {
    let args = [
        "-d0", "-h100", "-b", "2000", "-l200", "-m", "-S", "-p90", "-i200", "-q",
    ];
    let r = rtscope_run(&args);
    let h = passes(
        "-d0 -h100 -b 2000",
        &r.stdout,
        parse_histogram(&r.stdout, &hist_opts(cpus(), 100, false)),
    );
    // A 2 ms latency is rare but possible on a busy VM; then -b fires.
    r.expect_exit(if h.trailer.break_thread.is_some() {
        1
    } else {
        0
    });
    let ids = h.trailer.thread_ids.as_ref().unwrap_or_else(|| {
        panic!(
            "-b prints `# Thread Ids:` after the histogram\n{}",
            r.dump()
        )
    });
    assert_eq!(ids.len(), cpus(), "{}", r.dump());
    assert!(
        r.stderr
            .contains("WARN: distance is ignored and set to 0, if histogram enabled\n"),
        "{}",
        r.dump()
    );
    // Merged as `2>&1` would put it (see reference hist-h100-b300.txt).
    let merged = format!("{}{}", r.stderr, r.stdout);
    passes(
        "-d0 -h100 -b 2000 with stderr",
        &merged,
        check_histogram(&merged, cpus(), false, true),
    );
}

#[test]
fn hist_sparse_prints_the_upstream_histogram_form() {
    let out = rtscope(&[
        "-l200",
        "-m",
        "-S",
        "-p90",
        "-i200",
        "--hist-sparse",
        "-h100",
        "-q",
    ]);
    passes(
        "--hist-sparse -h100",
        &out,
        check_histogram(&out, cpus(), false, false),
    );
    let opts = HistOpts {
        threads: cpus(),
        buckets: Some(100),
        sum_column: false,
        total_line: false,
    };
    let h = passes("--hist-sparse", &out, parse_histogram(&out, &opts));
    assert!(h.total.is_none() && !out.contains("# Total:"), "{out}");
    assert!(
        check_histogram(&out, cpus(), false, true).is_err(),
        "the sparse form must not pass as the Debian 2.4 form\n{out}"
    );
    let in_range: u64 = h.rows.iter().map(|r| r.2.iter().sum::<u64>()).sum();
    let overflows: u64 = h.overflows.values.iter().sum();
    assert_eq!(
        in_range + overflows,
        200 * cpus() as u64,
        "rows + overflows hold every sample\n{out}"
    );
}

// ---------------------------------------------------------------- -b

#[test]
fn a_break_that_fires_prints_cyclictests_trailer_and_exits_1() {
    let args = ["-b1", "-l200", "-m", "-S", "-p90", "-i200", "-q"];
    let json = temp_path("break.json");
    let json_arg = format!("--json={}", json.display());
    let mut with_json = args.to_vec();
    with_json.push(&json_arg);
    let r = rtscope_run(&with_json);
    r.expect_exit(1);
    let s = passes(
        "-b1",
        &r.stdout,
        parse_summary(&r.stdout, &summary_opts(cpus(), false)),
    );
    let (Some(tid), Some(value)) = (s.trailer.break_thread, s.trailer.break_value) else {
        panic!("a 1 µs break must fire\n{}", r.dump());
    };
    // Parsed only, not checked with check_json: with one sample per thread
    // rtscope's JSON avg exceeds max (see
    // json_avg_lies_between_min_and_max_with_one_sample).
    let (text, v) = take_json(&json);
    assert_eq!(v["return_code"], 1, "{text}");
    assert_eq!(v["rtscope"]["break"]["thread_id"], tid, "{text}");
    assert_eq!(v["rtscope"]["break"]["value"], value, "{text}");
    // cyclictest exits 0 here, by design rtscope exits 1; the text is alike.
    let (c, _) = cyclictest(&args);
    assert_same_shape("-b1", &r.stdout, &c);
}

// ---------------------------------------------------------------- -v, --spike

#[test]
fn verbose_output_passes_the_verbose_checker_with_and_without_q() {
    let args = ["-v", "-l50", "-a0", "-t1", "-p90", "-i200"];
    let out = rtscope(&args);
    let v = passes("-v", &out, parse_verbose(&out));
    let cycles: Vec<u64> = v.samples.iter().map(|s| s.1).collect();
    assert_eq!(
        cycles,
        (0..50).collect::<Vec<u64>>(),
        "every sample is printed, in order\n{out}"
    );
    assert!(v.samples.iter().all(|s| s.0 == 0), "{out}");
    assert!(v.summary.is_empty(), "no `T:` line without -q\n{out}");

    let mut quiet = args.to_vec();
    quiet.push("-q");
    let out = rtscope(&quiet);
    let v = passes("-v -q", &out, parse_verbose(&out));
    assert_eq!(v.samples.len(), 50, "{out}");
    assert_eq!(v.summary.len(), 1, "-q adds the final `T:` line\n{out}");
    let t = &v.summary[0];
    let lat: Vec<i64> = v.samples.iter().map(|s| s.2).collect();
    assert_eq!(t.cycles, 50, "{out}");
    assert_eq!(
        (t.min, t.max, t.act),
        (
            *lat.iter().min().unwrap(),
            *lat.iter().max().unwrap(),
            *lat.last().unwrap()
        ),
        "Min/Max/Act of the `T:` line vs the sample lines\n{out}"
    );
}

#[test]
fn verbose_preamble_lines_are_cyclictests() {
    // cyclictest 2.40 prints `Thread N using cpu C.` only for `-a <list>`
    // (not for no -a, a bare -a or -S), and prints `Using N cpus.` a first
    // time while parsing the options when -v comes before `-a <list>`.
    for args in [
        &["-v", "-l3", "-a0", "-t1", "-p90", "-i200"][..],
        &["-v", "-l3", "-t1", "-p90", "-i200"][..],
        &["-v", "-l3", "-S", "-p90", "-i200"][..],
    ] {
        let preamble = |text: &str| -> String {
            text.split_inclusive('\n')
                .filter(|l| !l.starts_with(' ') && !l.starts_with("T:"))
                .collect()
        };
        let out = preamble(&rtscope(args));
        let (c, _) = cyclictest(args);
        assert_eq!(out, preamble(&c), "{}", args.join(" "));
    }
}

#[test]
fn spike_output_passes_the_spike_checker_and_has_cyclictests_shape() {
    let args = ["-l200", "-m", "-S", "-p90", "-i200", "-q", "--spike=1"];
    let out = rtscope(&args);
    let (threads, spikes) = passes("--spike=1", &out, parse_spikes(&out, Some(1)));
    assert!(!spikes.is_empty(), "samples above 1 µs are spikes\n{out}");
    for t in &threads {
        assert_eq!(t.cycles, 200, "{out}");
    }
    // Both list their spikes (how many differs from run to run) with the
    // same line shape: compare with each list collapsed to one line.
    let (c, _) = cyclictest(&args);
    assert_eq!(
        collapsed_shape(&out),
        collapsed_shape(&c),
        "--spike=1: rtscope (left) vs cyclictest (right)\n--- rtscope ---\n{out}--- cyclictest ---\n{c}"
    );
}

// ---------------------------------------------------------------- --json

#[test]
fn the_json_file_has_cyclictests_keys_then_rtscopes_and_cyclictests_shape() {
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
    let c_path = temp_path("cyclictest.json");
    let c_arg = format!("--json={}", c_path.display());
    cyclictest(&["-l200", "-m", "-S", "-p90", "-i200", "-q", &c_arg]);
    let (c_text, _) = take_json(&c_path);
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

// ---------------------------------------------------------------- live status

#[test]
fn the_live_status_screen_passes_the_live_status_checker_and_has_cyclictests_shape() {
    let args = ["-l300", "-m", "-S", "-p90", "-i200"];
    let r = {
        let _guard = common::rt_lock();
        common::run(rtscope_bin(), &[&["cyclictest"][..], &args[..]].concat())
    };
    assert_eq!(r.status.code(), Some(0), "{r:?}");
    let bytes = r.stdout;
    passes(
        "live status",
        &String::from_utf8_lossy(&bytes),
        check_live_status(&bytes, cpus()),
    );
    let live = parse_live_status(&bytes, cpus(), false).expect("checked above");
    assert!(!live.preamble, "no preamble without --latency");
    assert!(live.rest.is_empty(), "nothing after the last frame");
    let last = live.frames.last().expect("at least one frame");
    assert!(
        last.iter().all(|t| t.cycles == 300),
        "the last frame shows every thread's full loop count: {last:?}"
    );
    // The number of frames differs (rtscope redraws every 100 ms,
    // cyclictest every 10 ms); compare the first and the last frame.
    let text = String::from_utf8(bytes).expect("UTF-8");
    let (c, _) = cyclictest(&args);
    let esc = format!("\x1b[{}A", cpus() + 2);
    let first = |s: &str| s.split(esc.as_str()).next().unwrap_or("").to_string();
    let last = |s: &str| s.rsplit(esc.as_str()).next().unwrap_or("").to_string();
    assert_same_shape("first live frame", &first(&text), &first(&c));
    assert_same_shape("last live frame", &last(&text), &last(&c));
}

// ---------------------------------------------------------------- --latency

#[test]
fn latency_zero_prints_cyclictests_dma_latency_preamble() {
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
    let plain = rtscope(&args[..args.len() - 1]);
    assert!(
        !plain.contains("cpu_dma_latency"),
        "without --latency rtscope neither writes nor mentions it\n{plain}"
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
    let link = Symlink::new();
    let path = temp_path("symlink.json");
    let arg = format!("--json={}", path.display());
    let args = ["-l50", "-m", "-S", "-p90", "-i200", "-q"];
    let mut with_json = args.to_vec();
    with_json.push(&arg);
    let r = run_locked(&link.path(), &with_json);
    r.expect_exit(0);
    let s = passes(
        "symlink -q",
        &r.stdout,
        parse_summary(&r.stdout, &summary_opts(cpus(), false)),
    );
    assert!(s.threads.iter().all(|t| t.cycles == 50), "{}", r.stdout);
    let (text, v) = take_json(&path);
    passes("symlink --json", &text, check_json(&text, false));
    let cmdline = v["cmdline:"].as_str().expect("cmdline: is a string");
    assert_eq!(
        cmdline,
        format!("{} {}", link.path(), with_json.join(" ")),
        "the command line as typed"
    );
    assert_same_shape("symlink vs subcommand", &r.stdout, &rtscope(&args));
}
