//! Validates the cyclictest format grammar (tests/common/grammar/) for the
//! end-of-run reports: the `-q` summary (with its `-b` break trailer), the
//! `-h`/`-H` histograms and the `--spike` list, and `shape` comparisons:
//! 1. the reference captures (tests/reference/cyclictest-2.40/, copied from
//!    /work/shared/reference/) pass, and broken copies are rejected;
//! 2. the real /usr/bin/cyclictest, run now, passes the same checkers.
//!
//! The second group needs root (SCHED_FIFO) and rt-tests; without
//! /usr/bin/cyclictest those tests fail and say to `apt-get install rt-tests`.
//! Set CYCLICTEST=/path/to/cyclictest to use another binary.
//!
//! tests/grammar_verbose_live_json.rs covers `-v`, the live status screen
//! and `--json`.

use crate::common;

use common::cpus;
use common::grammar::*;
use common::reference::*;

// ---------------------------------------------------------------- references pass

#[test]
fn the_reference_quiet_summary_passes_the_summary_checker() {
    ok(
        "summary-q.txt",
        check_summary(&reference("summary-q.txt"), &SummaryOpts::us(2)),
    );
    let s = parse_summary(&reference("summary-q.txt"), &SummaryOpts::us(2)).unwrap();
    assert_eq!(s.threads[1].interval, 700);
    assert_eq!(s.threads[0].max, 6368);
}

#[test]
fn the_reference_nsecs_summary_passes_only_the_nsecs_summary_checker() {
    let text = reference("summary-nsecs.txt");
    ok(
        "summary-nsecs.txt",
        check_summary(&text, &SummaryOpts::ns(1)),
    );
    assert!(
        check_summary(&text, &SummaryOpts::us(1)).is_err(),
        "-N widths must not pass as µs widths"
    );
    assert!(check_summary(&reference("summary-q.txt"), &SummaryOpts::ns(2)).is_err());
}

#[test]
fn the_reference_h400_histogram_passes_the_histogram_checker() {
    let text = reference("hist-h400.txt");
    ok("hist-h400.txt", check_histogram(&text, 2, false, true));
    let opts = HistOpts {
        threads: 2,
        buckets: Some(400),
        sum_column: false,
        total_line: true,
    };
    let h = parse_histogram(&text, &opts).unwrap();
    assert_eq!(h.rows.len(), 400);
    assert_eq!(h.overflow_at[1].cycles.len(), 19);
}

#[test]
fn the_reference_big_h_histogram_passes_with_its_sum_column() {
    let text = reference("hist-H100.txt");
    ok("hist-H100.txt", check_histogram(&text, 2, true, true));
    assert!(
        check_histogram(&text, 2, false, true).is_err(),
        "the sum column must not pass as a third thread"
    );
}

#[test]
fn the_reference_histogram_with_break_trailer_passes() {
    let text = reference("hist-h100-b300.txt");
    let opts = HistOpts {
        threads: 2,
        buckets: Some(100),
        sum_column: false,
        total_line: true,
    };
    let h = parse_histogram(&text, &opts).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(h.trailer.thread_ids, Some(vec![18940, 18941]));
    assert_eq!(h.trailer.break_thread, None);
}

#[test]
fn the_reference_spike_output_passes_the_spike_checker() {
    let text = reference("spike-100.txt");
    ok("spike-100.txt", check_spikes_above(&text, 100));
    let (_, spikes) = parse_spikes(&text, Some(100)).unwrap();
    assert_eq!(
        spikes,
        vec![Spike {
            thread: 1,
            value: 162,
            ts: 2162688834
        }]
    );
}

// ---------------------------------------------------------------- broken copies rejected

#[test]
fn the_summary_checker_rejects_broken_copies() {
    let t = reference("summary-q.txt");
    let cases = vec![
        (
            "C: one column too narrow",
            mutate(&t, "C:  20000", "C: 20000"),
        ),
        (
            "Max: one column too wide",
            mutate(&t, "Max:    6368", "Max:     6368"),
        ),
        (
            "TAB instead of spaces",
            mutate(&t, "Max:    6368", "Max:\t6368"),
        ),
        ("zero-padded P:", mutate(&t, "P:90", "P:090")),
        ("TID width 4", mutate(&t, "( 8946)", "(8946)")),
        (
            "preamble missing",
            mutate(&t, "# /dev/cpu_dma_latency set to 0us\n", ""),
        ),
        (
            "second thread missing",
            mutate(
                &t,
                "T: 1 ( 8957) P:90 I:700 C:   5754 Min:     11 Act:   77 Avg:   36 Max:    6292\n",
                "",
            ),
        ),
        ("thread numbered twice", mutate(&t, "T: 1 (", "T: 0 (")),
        ("Min above Max", mutate(&t, "Min:      8", "Min:   9999")),
        ("blank line", mutate(&t, "0us\n", "0us\n\n")),
        ("no final newline", t.trim_end().to_string()),
        ("stray line", format!("{t}policy: fifo\n")),
        (
            "Thread Ids with wrong TID",
            format!("{t}# Thread Ids: 08946 08958\n"),
        ),
        (
            "Break thread without value",
            format!("{t}# Thread Ids: 08946 08957\n# Break thread: 8946\n"),
        ),
    ];
    assert_all_rejected("summary", cases, |s| check_summary(s, &SummaryOpts::us(2)));
}

#[test]
fn the_summary_checker_accepts_the_break_trailer() {
    let t = reference("summary-q.txt");
    let with = format!("{t}# Thread Ids: 08946 08957\n# Break thread: 8957\n# Break value: 6292\n");
    let s = parse_summary(&with, &SummaryOpts::us(2)).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(s.trailer.break_value, Some(6292));
    let too_big = with.replace("Break value: 6292", "Break value: 6293");
    assert!(
        check_summary(&too_big, &SummaryOpts::us(2)).is_err(),
        "break value above Max"
    );
}

#[test]
fn the_histogram_checker_rejects_broken_copies() {
    let t = reference("hist-h400.txt");
    let cases = vec![
        (
            "space instead of TAB",
            mutate(&t, "000013 004376\t000861", "000013 004376 000861"),
        ),
        (
            "TAB after the index",
            mutate(&t, "000013 004376", "000013\t004376"),
        ),
        (
            "count padded to 5",
            mutate(&t, "000013 004376", "000013 04376"),
        ),
        (
            "count changed (Total mismatch)",
            mutate(&t, "000013 004376", "000013 004377"),
        ),
        ("row missing", mutate(&t, "000200 000000\t000000\n", "")),
        (
            "Total not 9 digits",
            mutate(&t, "# Total: 000019994", "# Total: 19994"),
        ),
        (
            "Max Latencies line missing",
            mutate(&t, "# Max Latencies: 04139 04515\n", ""),
        ),
        (
            "overflow count vs cycle list",
            mutate(
                &t,
                "# Histogram Overflows: 00006",
                "# Histogram Overflows: 00007",
            ),
        ),
        (
            "cycle numbers not increasing",
            mutate(&t, "05778 06123", "06123 05778"),
        ),
        (
            "trailing blank line missing",
            t.trim_end().to_string() + "\n",
        ),
        (
            "Min not matching lowest bucket",
            mutate(&t, "# Min Latencies: 00008", "# Min Latencies: 00007"),
        ),
        (
            "Avg above Max",
            mutate(&t, "# Avg Latencies: 00020", "# Avg Latencies: 09999"),
        ),
        ("header missing", mutate(&t, "# Histogram\n", "")),
        (
            "thread line renumbered",
            mutate(&t, "# Thread 1:", "# Thread 2:"),
        ),
    ];
    assert_all_rejected("hist-h400", cases, |s| {
        let opts = HistOpts {
            threads: 2,
            buckets: Some(400),
            sum_column: false,
            total_line: true,
        };
        parse_histogram(s, &opts).map(|_| ())
    });
}

#[test]
fn the_sum_column_checks_reject_broken_copies() {
    let t = reference("hist-H100.txt");
    let cases = vec![
        (
            "row sum wrong",
            mutate(
                &t,
                "000013 000008\t002493\t002501",
                "000013 000008\t002493\t002502",
            ),
        ),
        (
            "row sum missing",
            mutate(&t, "000013 000008\t002493\t002501", "000013 000008\t002493"),
        ),
        (
            "Total sum wrong",
            mutate(&t, "000004996 000009994", "000004996 000009993"),
        ),
        (
            "overall max wrong",
            mutate(&t, "00168 00528 00528", "00168 00528 00168"),
        ),
        (
            "overall max missing",
            mutate(&t, "00168 00528 00528", "00168 00528"),
        ),
        (
            "Min got an extra value",
            mutate(
                &t,
                "# Min Latencies: 00010 00008",
                "# Min Latencies: 00010 00008 00008",
            ),
        ),
        (
            "overflow total wrong",
            mutate(&t, "00002 00004 00006", "00002 00004 00007"),
        ),
    ];
    assert_all_rejected("hist-H100", cases, |s| check_histogram(s, 2, true, true));
}

#[test]
fn the_break_trailer_checks_reject_broken_copies() {
    let t = reference("hist-h100-b300.txt");
    let cases = vec![
        (
            "one thread id",
            mutate(&t, "# Thread Ids: 18940 18941", "# Thread Ids: 18940"),
        ),
        (
            "thread id not zero padded",
            mutate(&t, "# Thread Ids: 18940 18941", "# Thread Ids: 18940 941"),
        ),
        (
            "Break thread without value",
            format!("{t}# Break thread: 18940\n"),
        ),
        (
            "Break thread unknown",
            format!("{t}# Break thread: 1\n# Break value: 300\n"),
        ),
        (
            "no blank line before ids",
            mutate(&t, "\n\n# Thread Ids", "\n# Thread Ids"),
        ),
    ];
    assert_all_rejected("hist-h100-b300", cases, |s| {
        check_histogram(s, 2, false, true)
    });
}

#[test]
fn the_upstream_histogram_layout_is_told_apart_from_debian() {
    // Upstream >= 2.7: only non-empty buckets, no `# Total:`.
    let debian = reference("hist-H100.txt");
    let sparse: String = debian
        .lines()
        .filter(|l| !l.starts_with("# Total:"))
        .filter(|l| !(l.starts_with("0000") && l.ends_with("\t000000")))
        .map(|l| format!("{l}\n"))
        .collect();
    ok("upstream layout", check_histogram(&sparse, 2, true, false));
    assert!(
        check_histogram(&sparse, 2, true, true).is_err(),
        "sparse rows must not pass as 2.4 layout"
    );
    assert!(
        check_histogram(&debian, 2, true, false).is_err(),
        "empty buckets must not pass as upstream layout"
    );
}

#[test]
fn the_spike_checker_rejects_broken_copies() {
    let t = reference("spike-100.txt");
    let cases = vec![
        (
            "Spike: width 7",
            mutate(&t, "Spike:     162", "Spike:    162"),
        ),
        (
            "TS: width 11",
            mutate(&t, "TS:   2162688834", "TS:  2162688834"),
        ),
        ("count line missing", mutate(&t, "spikes = 1\n", "")),
        ("count wrong", mutate(&t, "spikes = 1", "spikes = 2")),
        (
            "blank line before spikes missing",
            mutate(&t, "162\n\nT: 1 Spike", "162\nT: 1 Spike"),
        ),
        (
            "spike above the thread's Max",
            mutate(&t, "Spike:     162", "Spike:     999"),
        ),
        (
            "spike below the trigger",
            mutate(&t, "Spike:     162", "Spike:      99"),
        ),
        (
            "spike for a missing thread",
            mutate(&t, "T: 1 Spike", "T: 2 Spike"),
        ),
        ("final blank line missing", t.trim_end().to_string() + "\n"),
    ];
    assert_all_rejected("spike-100", cases, |s| check_spikes_above(s, 100));
}

// ---------------------------------------------------------------- shape

#[test]
fn shape_erases_numbers_and_padding_but_keeps_layout() {
    let a = "T: 0 ( 8946) P:90 I:200 C:  20000 Min:      8 Act:   12 Avg:   24 Max:    6368\n";
    let b = "T:10 (12345) P: 5 I:1000 C:      7 Min:1000000 Act:    0 Avg:    0 Max:       0\n";
    assert_eq!(shape(a), "T:N (N) P:N I:N C:N Min:N Act:N Avg:N Max:N\n");
    ok("shape", same_shape(a, b));
    assert_eq!(shape("000013 004376\t000861\n"), "N N\tN\n");
    assert_eq!(shape("       0:       1:     117\n"), "N:N:N\n");
    assert_eq!(shape("      \"node\": -1,\n"), "      \"node\":N,\n");
    assert_eq!(shape("\x1b[4Apolicy"), "\x1b[NApolicy");
    assert!(same_shape("000013 004376\t000861\n", "000013 004376 000861\n").is_err());
    assert!(same_shape("a\nb\n", "a\n").is_err());
}

#[test]
fn shapes_of_the_reference_histograms_differ_only_in_row_count() {
    let a = reference("hist-h400.txt");
    let b = reference("hist-h100-b300.txt");
    let rows_a: Vec<String> = shape(&a)
        .lines()
        .filter(|l| l.starts_with('N'))
        .map(String::from)
        .collect();
    let rows_b: Vec<String> = shape(&b)
        .lines()
        .filter(|l| l.starts_with('N'))
        .map(String::from)
        .collect();
    assert_eq!((rows_a.len(), rows_b.len()), (400, 100));
    assert_eq!(rows_a[0], rows_b[0]);
    assert_eq!(rows_a[0], "N N\tN");
}

// ---------------------------------------------------------------- real cyclictest

#[test]
fn real_cyclictest_quiet_summary_passes_the_summary_checker() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    let (out, _) = cyclictest(&["-l200", "-m", "-S", "-p90", "-i200", "-q"]);
    passes("-q", &out, check_summary(&out, &SummaryOpts::us(cpus())));
    let s = parse_summary(&out, &SummaryOpts::us(cpus())).unwrap();
    assert_eq!(
        s.threads[0].cycles, 200,
        "-l200 stops when thread 0 reaches 200"
    );
    if cpus() > 1 {
        assert_eq!(s.threads[1].interval, 700, "-S keeps the 500 µs distance");
    }
}

#[test]
fn real_cyclictest_nsecs_summary_passes_the_nsecs_summary_checker() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    let (out, _) = cyclictest(&["-l200", "-m", "-S", "-p90", "-i200", "-N", "-q"]);
    passes("-N -q", &out, check_summary(&out, &SummaryOpts::ns(cpus())));
}

#[test]
fn real_cyclictest_low_priority_summary_pads_p_to_two_columns() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    let (out, _) = cyclictest(&["-l50", "-m", "-t1", "-p5", "-i200", "-q"]);
    passes("-p5 -q", &out, check_summary(&out, &SummaryOpts::us(1)));
    assert!(out.contains(" P: 5 "), "P:%2d pads with a space: {out}");
}

#[test]
fn real_cyclictest_histogram_passes_the_histogram_checker() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    let (out, _) = cyclictest(&["-l200", "-m", "-S", "-p90", "-i200", "-h100", "-q"]);
    let opts = HistOpts {
        threads: cpus(),
        buckets: Some(100),
        sum_column: false,
        total_line: true,
    };
    passes("-h100", &out, parse_histogram(&out, &opts).map(|_| ()));
}

#[test]
fn real_cyclictest_big_h_histogram_passes_with_its_sum_column() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    let (out, _) = cyclictest(&["-l200", "-m", "-S", "-p90", "-i200", "-H100", "-q"]);
    let opts = HistOpts {
        threads: cpus(),
        buckets: Some(100),
        sum_column: true,
        total_line: true,
    };
    passes("-H100", &out, parse_histogram(&out, &opts).map(|_| ()));
}

#[test]
fn real_cyclictest_big_h_with_one_thread_has_no_sum_column() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    let (out, _) = cyclictest(&["-l200", "-m", "-t1", "-p90", "-i200", "-H50", "-q"]);
    passes("-H50 -t1", &out, check_histogram(&out, 1, true, true));
    assert!(
        !out.contains('\t'),
        "cyclictest 2.4 prints no sum column for one thread"
    );
}

#[test]
fn real_cyclictest_histogram_overflow_list_is_truncated_with_others() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    // 1 ns buckets: nearly every sample overflows, and only -h cycle numbers are listed.
    let (out, _) = cyclictest(&["-l100", "-m", "-t1", "-p90", "-i200", "-N", "-h3", "-q"]);
    let opts = HistOpts {
        threads: 1,
        buckets: Some(3),
        sum_column: false,
        total_line: true,
    };
    let h = parse_histogram(&out, &opts).unwrap_or_else(|e| panic!("{e}\n{out}"));
    assert_eq!(h.overflow_at[0].cycles.len(), 3, "{out}");
    assert!(h.overflow_at[0].others.is_some(), "{out}");
}

#[test]
fn real_cyclictest_histogram_with_distance_and_breaktrace_passes() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    let (out, err) = cyclictest(&[
        "-d0", "-h100", "-b", "2000", "-l200", "-m", "-S", "-p90", "-i200", "-q",
    ]);
    let opts = HistOpts {
        threads: cpus(),
        buckets: Some(100),
        sum_column: false,
        total_line: true,
    };
    let h = parse_histogram(&out, &opts).unwrap_or_else(|e| panic!("{e}\n{out}"));
    assert!(
        h.trailer.thread_ids.is_some(),
        "-b prints `# Thread Ids:`\n{out}"
    );
    assert!(
        err.contains("WARN: distance is ignored and set to 0, if histogram enabled"),
        "stderr: {err}"
    );
    // The same text with stderr merged in front, as in hist-h100-b300.txt.
    passes(
        "-d0 -h100 -b2000 with stderr",
        &out,
        check_histogram(&format!("{err}{out}"), cpus(), false, true),
    );
}

#[test]
fn real_cyclictest_summary_with_a_fired_break_passes() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    let (out, _) = cyclictest(&["-b", "1", "-l200", "-m", "-S", "-p90", "-i200", "-q"]);
    let s = parse_summary(&out, &SummaryOpts::us(cpus())).unwrap_or_else(|e| panic!("{e}\n{out}"));
    assert!(
        s.trailer.break_thread.is_some(),
        "a 1 µs break must fire\n{out}"
    );
}

#[test]
fn real_cyclictest_spike_output_passes_the_spike_checker() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    let (out, _) = cyclictest(&["-l200", "-m", "-S", "-p90", "-i200", "-q", "--spike=1"]);
    passes("--spike=1", &out, check_spikes_above(&out, 1));
    let (_, spikes) = parse_spikes(&out, Some(1)).unwrap();
    assert!(!spikes.is_empty(), "every sample is above 1 µs\n{out}");
}

#[test]
fn real_cyclictest_without_spikes_prints_no_spike_list() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    let (out, _) = cyclictest(&[
        "-l20",
        "-m",
        "-t1",
        "-p90",
        "-i200",
        "-q",
        "--spike=1000000",
    ]);
    passes("--spike=1000000", &out, check_spikes(&out));
    passes(
        "--spike=1000000 as summary",
        &out,
        check_summary(&out, &SummaryOpts::us(1)),
    );
}

#[test]
fn two_real_cyclictest_runs_have_the_same_shape() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    // Histograms are not used here: their overflow lists vary from run to run.
    let args = ["-l200", "-m", "-S", "-p90", "-i200", "-q"];
    let (a, _) = cyclictest(&args);
    let (b, _) = cyclictest(&args);
    passes(
        "shape of two runs",
        &format!("{a}\n---\n{b}"),
        same_shape(&a, &b),
    );
    let (c, _) = cyclictest(&["-l200", "-m", "-S", "-p90", "-i200", "-N", "-q"]);
    passes(
        "µs vs ns summary shape",
        &format!("{a}\n---\n{c}"),
        same_shape(&a, &c),
    );
    let (d, _) = cyclictest(&["-l200", "-m", "-S", "-p90", "-i200", "-h60", "-q"]);
    assert!(
        same_shape(&a, &d).is_err(),
        "a summary must not have a histogram's shape"
    );
}
