//! `rtscope cyclictest` against cyclictest 2.40, run now on this machine, for
//! the text outputs: the `-q` summary, the `-h`/`-H` histograms, the `-b`
//! trailer, `-v` sample lines, `--spike` lists and the live status screen.
//! 1. every output passes the same grammar checkers as the real cyclictest's
//!    (tests/common/grammar/, validated by tests/grammar_*.rs);
//! 2. it has the same shape as the real cyclictest's output for the same
//!    arguments, apart from the documented differences
//!    (docs/cyclictest-differences.md);
//! 3. its numbers agree with each other (loop counts, histogram totals).
//!
//! Needs root (SCHED_FIFO). The shape comparisons also need the real
//! cyclictest: without /usr/bin/cyclictest they fail and say to
//! `apt-get install rt-tests`. Set CYCLICTEST=/path/to/cyclictest to use
//! another binary. Every run is short (tens of ms) and holds
//! `common::rt_lock()`, so SCHED_FIFO runs do not overlap, not even with
//! those of other test binaries (tests/grammar_*.rs, the other compat_*.rs).
//!
//! tests/compat_json.rs covers `--json`, `--latency` and the `cyclictest`
//! symlink.

use crate::common;

use common::compat::*;
use common::grammar::*;
use common::{cpus, temp_path};

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

// ---------------------------------------------------------------- -q summary

#[test]
fn the_quiet_summary_passes_the_summary_checker_and_has_cyclictests_shape() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    let args = ["-l200", "-m", "-S", "-p90", "-i200", "-q"];
    let r = rtscope_run(&args);
    r.expect_exit(0);
    // rtscope_run adds --default-system; cyclictest's notice of it is all there is.
    assert_eq!(
        r.stderr,
        "WARN: not setting cpu_dma_latency from cyclictest\n",
        "a plain -q run prints nothing else on stderr:\n{}",
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
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
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
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
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
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
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
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
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
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
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
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    let args = [
        "-d0", "-h100", "-b", "2000", "-l200", "-m", "-S", "-p90", "-i200", "-q",
    ];
    let r = rtscope_run(&args);
    let h = passes(
        "-d0 -h100 -b 2000",
        &r.stdout,
        parse_histogram(&r.stdout, &hist_opts(cpus(), 100, false)),
    );
    // A 2 ms latency is rare but possible on a busy VM; then -b fires, and the exit stays 0 as
    // cyclictest's (a_break_that_fires_prints_cyclictests_trailer_and_exits_0_as_cyclictest).
    r.expect_exit(0);
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
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
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

/// Issue 51: a fired `-b` exits 0 with `return_code` 0, as cyclictest does (a CI harness that
/// runs `-b` failed on rtscope's 1); the break is in the trailer and JSON's `rtscope.break`.
#[test]
fn a_break_that_fires_prints_cyclictests_trailer_and_exits_0_as_cyclictest() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    let args = ["-b1", "-l200", "-m", "-S", "-p90", "-i200", "-q"];
    let json = temp_path("break.json");
    let json_arg = format!("--json={}", json.display());
    let mut with_json = args.to_vec();
    with_json.push(&json_arg);
    let r = rtscope_run(&with_json);
    r.expect_exit(0);
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
    // json_avg_lies_between_min_and_max_with_one_sample in compat_json.rs).
    let (text, v) = take_json(&json);
    assert_eq!(v["return_code"], 0, "{text}");
    assert_eq!(v["rtscope"]["break"]["thread_id"], tid, "{text}");
    assert_eq!(v["rtscope"]["break"]["value"], value, "{text}");
    // The real cyclictest on the same arguments: the same exit code (its helper requires 0)
    // and text of the same shape.
    let (c, _) = cyclictest(&args);
    assert_same_shape("-b1", &r.stdout, &c);
}

// ---------------------------------------------------------------- -v, --spike

#[test]
fn verbose_output_passes_the_verbose_checker_with_and_without_q() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
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
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
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
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
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

// ---------------------------------------------------------------- live status

#[test]
fn the_live_status_screen_passes_the_live_status_checker_and_has_cyclictests_shape() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    let args = ["-l300", "-m", "-S", "-p90", "-i200"];
    let r = {
        let _guard = common::rt_lock();
        let ours = [&["cyclictest"][..], &args[..], &["--default-system"][..]].concat();
        common::run(rtscope_bin(), &ours)
    };
    assert_eq!(r.status.code(), Some(0), "{r:?}");
    let bytes = r.stdout;
    passes(
        "live status",
        &String::from_utf8_lossy(&bytes),
        check_live_status(&bytes, cpus()),
    );
    let live = parse_live_status(&bytes, cpus(), false).expect("checked above");
    assert!(!live.preamble, "no preamble with --default-system");
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
