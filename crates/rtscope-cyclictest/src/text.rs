//! cyclictest's text formats, as pure functions of the results (byte-compatible with 2.40).

use rtscope_core::Nanos;
use rtscope_engine::{LinearResult, Sample};
use std::fmt::Write;

/// What one `T:` line shows.
#[derive(Debug, Clone, Copy)]
pub struct TLine {
    /// Thread index.
    pub index: usize,
    /// Kernel thread id (0 before start).
    pub tid: i32,
    /// Priority.
    pub prio: i32,
    /// Interval in µs.
    pub interval_us: u64,
    /// Cycles so far.
    pub cycles: u64,
    /// Minimum (`None` before the first sample).
    pub min: Option<Nanos>,
    /// Latest sample.
    pub act: Nanos,
    /// Mean in display units (cyclictest: the mean of truncated values).
    pub avg: f64,
    /// Maximum.
    pub max: Nanos,
    /// SMIs so far (`--smi`).
    pub smi: Option<u64>,
}

/// Converts ns to cyclictest's display unit (truncating).
pub fn units(v: Nanos, unit: Nanos) -> u64 {
    v.0 / unit.0
}

/// A `T:` status line (no newline). `unit` is 1 µs, or 1 ns for `-N` (wider Act/Avg).
pub fn t_line(t: &TLine, unit: Nanos) -> String {
    let min = t.min.map_or(1_000_000, |m| units(m, unit));
    let avg = if t.cycles == 0 { 0 } else { t.avg as u64 };
    let (act, max) = (units(t.act, unit), units(t.max, unit));
    let mut line = if unit.0 == 1 {
        format!(
            "T:{:2} ({:5}) P:{:2} I:{} C:{:7} Min:{:7} Act:{:8} Avg:{:8} Max:{:8}",
            t.index, t.tid, t.prio, t.interval_us, t.cycles, min, act, avg, max
        )
    } else {
        format!(
            "T:{:2} ({:5}) P:{:2} I:{} C:{:7} Min:{:7} Act:{:5} Avg:{:5} Max:{:8}",
            t.index, t.tid, t.prio, t.interval_us, t.cycles, min, act, avg, max
        )
    };
    if let Some(n) = t.smi {
        let _ = write!(line, " SMI:{n:8}");
    }
    line
}

/// The status block of SIGUSR1 (on stderr) and SIGUSR2 (in the status file): the `T:` lines
/// between `#---` rules.
pub fn current_status(lines: &[TLine], unit: Nanos) -> String {
    let rule = "#---------------------------\n";
    let mut s = format!("{rule}# cyclictest current status:\n");
    for t in lines {
        s.push_str(&t_line(t, unit));
        s.push('\n');
    }
    s.push_str(rule);
    s
}

/// One `-v` sample line.
pub fn verbose_line(out: &mut String, thread: usize, cycle: u64, value: u64) {
    let _ = writeln!(out, "{thread:8}:{cycle:8}:{value:8}");
}

/// The live status block: policy line, blank line, one `T:` line per thread.
pub fn status_block(policy_label: &str, loadavg: &str, lines: &[TLine], unit: Nanos) -> String {
    let mut s = format!("policy: {policy_label}: loadavg: {loadavg}          \n\n");
    for t in lines {
        s.push_str(&t_line(t, unit));
        s.push('\n');
    }
    s
}

/// Per-thread input of the histogram block.
pub struct HistThread<'a> {
    /// The linear histogram.
    pub linear: &'a LinearResult,
    /// Minimum (`None`: no samples).
    pub min: Option<Nanos>,
    /// Mean in display units (cyclictest: the mean of truncated values).
    pub avg: f64,
    /// Samples.
    pub cycles: u64,
    /// Maximum.
    pub max: Nanos,
    /// SMIs over the run (`--smi`).
    pub smi: Option<u64>,
}

/// The `-h`/`-H` histogram block, ending with its blank line. `sum_column` is `-H` (only with
/// more than one thread, as cyclictest); `sparse` omits empty buckets and the `# Total:` line
/// (the rt-tests 2.7+ form).
pub fn histogram_block(
    threads: &[HistThread],
    unit: Nanos,
    sum_column: bool,
    sparse: bool,
) -> String {
    let sum_column = sum_column && threads.len() > 1;
    let mut s = String::from("# Histogram\n");
    let totals = bucket_rows(&mut s, threads, sum_column, sparse);
    if !sparse {
        let t: Vec<String> = totals[..threads.len()]
            .iter()
            .map(|v| format!(" {v:09}"))
            .collect();
        let all = if sum_column {
            format!(" {:09}", totals[threads.len()])
        } else {
            String::new()
        };
        let _ = writeln!(s, "# Total:{}{all}", t.concat());
    }
    summary_lines(&mut s, threads, unit, sum_column);
    s.push('\n');
    s
}

/// One row per bucket (`sparse`: the non-empty ones), each thread's count and with
/// `sum_column` their sum; returns each thread's total and, last, the sum of all.
fn bucket_rows(s: &mut String, threads: &[HistThread], sum_column: bool, sparse: bool) -> Vec<u64> {
    let buckets = threads.first().map_or(0, |t| t.linear.counts.len());
    let mut totals = vec![0u64; threads.len() + 1];
    for i in 0..buckets {
        let row: Vec<u64> = threads.iter().map(|t| t.linear.counts[i]).collect();
        let all: u64 = row.iter().sum();
        for (j, c) in row.iter().enumerate() {
            totals[j] += c;
        }
        totals[threads.len()] += all;
        if sparse && all == 0 {
            continue;
        }
        let cols: Vec<String> = row.iter().map(|c| format!("{c:06}")).collect();
        let _ = write!(s, "{i:06} {}", cols.join("\t"));
        if sum_column {
            let _ = write!(s, "\t{all:06}");
        }
        s.push('\n');
    }
    totals
}

/// The `# Min/Avg/Max Latencies`, overflow and SMI lines under the buckets.
fn summary_lines(s: &mut String, threads: &[HistThread], unit: Nanos, sum_column: bool) {
    let extra = |v: u64| {
        if sum_column {
            format!(" {v:05}")
        } else {
            String::new()
        }
    };
    let col = |f: &dyn Fn(&HistThread) -> u64| {
        threads
            .iter()
            .map(|t| format!(" {:05}", f(t)))
            .collect::<String>()
    };
    let _ = writeln!(
        s,
        "# Min Latencies:{}",
        col(&|t| t.min.map_or(1_000_000, |m| units(m, unit)))
    );
    let _ = writeln!(
        s,
        "# Avg Latencies:{}",
        col(&|t| if t.cycles == 0 { 0 } else { t.avg as u64 })
    );
    let maxmax = threads
        .iter()
        .map(|t| units(t.max, unit))
        .max()
        .unwrap_or(0);
    let _ = writeln!(
        s,
        "# Max Latencies:{}{}",
        col(&|t| units(t.max, unit)),
        extra(maxmax)
    );
    let all_over: u64 = threads.iter().map(|t| t.linear.overflows).sum();
    let _ = writeln!(
        s,
        "# Histogram Overflows:{}{}",
        col(&|t| t.linear.overflows),
        extra(all_over)
    );
    s.push_str("# Histogram Overflow at cycle number:\n");
    for (i, t) in threads.iter().enumerate() {
        let _ = write!(s, "# Thread {i}:");
        for c in &t.linear.overflow_cycles {
            let _ = write!(s, " {c:05}");
        }
        let kept = t.linear.overflow_cycles.len() as u64;
        if kept < t.linear.overflows {
            let _ = write!(s, " # {:05} others", t.linear.overflows - kept);
        }
        s.push('\n');
    }
    if threads.iter().any(|t| t.smi.is_some()) {
        s.push_str("# SMIs:");
        for t in threads {
            let _ = write!(s, " {:05}", t.smi.unwrap_or(0));
        }
        s.push('\n');
    }
}

/// The `-b` trailer: thread ids, and the break thread's id and value when it fired.
pub fn break_trailer(tids: &[i32], fired: Option<(i32, u64)>) -> String {
    let mut s = String::from("# Thread Ids:");
    for t in tids {
        let _ = write!(s, " {t:05}");
    }
    s.push('\n');
    if let Some((tid, value)) = fired {
        let _ = writeln!(s, "# Break thread: {tid}\n# Break value: {value}");
    }
    s
}

/// The `--spike` list: spikes sorted by time, with the run clock in µs, and the total count.
/// Empty when there was no spike (as cyclictest).
pub fn spikes(list: &[(usize, Sample)], total: u64, unit: Nanos) -> String {
    if total == 0 {
        return String::new();
    }
    let mut s = String::from("\n");
    for (thread, e) in list {
        let _ = writeln!(
            s,
            "T:{:2} Spike:{:8}: TS: {:12}",
            thread,
            units(e.latency, unit),
            e.time.0 / 1000
        );
    }
    let _ = writeln!(s, "spikes = {total}\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tl(cycles: u64) -> TLine {
        TLine {
            index: 0,
            tid: 8946,
            prio: 90,
            interval_us: 200,
            cycles,
            min: Some(Nanos(8_900)),
            act: Nanos(12_100),
            avg: 24.7,
            max: Nanos(6_368_000),
            smi: None,
        }
    }

    #[test]
    fn the_current_status_is_the_t_lines_between_rules() {
        let lines = [tl(20000), TLine { index: 1, ..tl(7) }];
        assert_eq!(
            current_status(&lines, Nanos(1000)),
            "#---------------------------\n# cyclictest current status:\n\
             T: 0 ( 8946) P:90 I:200 C:  20000 Min:      8 Act:   12 Avg:   24 Max:    6368\n\
             T: 1 ( 8946) P:90 I:200 C:      7 Min:      8 Act:   12 Avg:   24 Max:    6368\n\
             #---------------------------\n"
        );
    }

    #[test]
    fn t_lines_match_the_reference_layout() {
        assert_eq!(
            t_line(&tl(20000), Nanos(1000)),
            "T: 0 ( 8946) P:90 I:200 C:  20000 Min:      8 Act:   12 Avg:   24 Max:    6368"
        );
        assert_eq!(
            t_line(
                &TLine {
                    avg: 24_700.0,
                    ..tl(5000)
                },
                Nanos(1)
            ),
            "T: 0 ( 8946) P:90 I:200 C:   5000 Min:   8900 Act:   12100 Avg:   24700 Max: 6368000"
        );
        let idle = TLine {
            tid: 0,
            cycles: 0,
            min: None,
            act: Nanos(0),
            max: Nanos(0),
            avg: 0.0,
            ..tl(0)
        };
        assert_eq!(
            t_line(&idle, Nanos(1000)),
            "T: 0 (    0) P:90 I:200 C:      0 Min:1000000 Act:    0 Avg:    0 Max:       0"
        );
    }

    #[test]
    fn histogram_block_has_cyclictest_layout() {
        let lin = LinearResult {
            unit: Nanos(1000),
            counts: vec![0, 3, 1],
            overflows: 2,
            overflow_cycles: vec![5, 9],
        };
        let lin2 = LinearResult {
            unit: Nanos(1000),
            counts: vec![1, 0, 0],
            overflows: 1,
            overflow_cycles: vec![],
        };
        let th = [
            HistThread {
                linear: &lin,
                min: Some(Nanos(1_000)),
                avg: 2.5,
                cycles: 6,
                max: Nanos(7_000),
                smi: None,
            },
            HistThread {
                linear: &lin2,
                min: Some(Nanos(0)),
                avg: 0.5,
                cycles: 2,
                max: Nanos(4_000),
                smi: None,
            },
        ];
        let s = histogram_block(&th, Nanos(1000), true, false);
        let want = "# Histogram\n000000 000000\t000001\t000001\n000001 000003\t000000\t000003\n000002 000001\t000000\t000001\n# Total: 000000004 000000001 000000005\n# Min Latencies: 00001 00000\n# Avg Latencies: 00002 00000\n# Max Latencies: 00007 00004 00007\n# Histogram Overflows: 00002 00001 00003\n# Histogram Overflow at cycle number:\n# Thread 0: 00005 00009\n# Thread 1: # 00001 others\n\n";
        assert_eq!(s, want);
        let sparse = histogram_block(&th[..1], Nanos(1000), false, true);
        assert!(sparse.starts_with("# Histogram\n000001 000003\n000002 000001\n# Min"));
        // --smi: cyclictest's `# SMIs:` line after the overflow cycles, before the blank line.
        let smi = [
            HistThread {
                smi: Some(3),
                ..th[0]
            },
            HistThread {
                smi: Some(0),
                ..th[1]
            },
        ];
        let s = histogram_block(&smi, Nanos(1000), true, false);
        assert!(
            s.ends_with("# Thread 1: # 00001 others\n# SMIs: 00003 00000\n\n"),
            "{s}"
        );
    }

    #[test]
    fn smi_counts_end_the_t_line_as_cyclictest_prints_them() {
        assert_eq!(
            t_line(&TLine { smi: Some(12), ..tl(20000) }, Nanos(1000)),
            "T: 0 ( 8946) P:90 I:200 C:  20000 Min:      8 Act:   12 Avg:   24 Max:    6368 SMI:      12"
        );
    }

    #[test]
    fn spike_and_break_lines() {
        let e = Sample {
            cycle: 3,
            latency: Nanos(162_400),
            time: Nanos(2_162_688_834_123),
        };
        assert_eq!(
            spikes(&[(1, e)], 1, Nanos(1000)),
            "\nT: 1 Spike:     162: TS:   2162688834\nspikes = 1\n\n"
        );
        assert_eq!(spikes(&[], 0, Nanos(1000)), "");
        assert_eq!(
            break_trailer(&[18940, 18941], Some((18941, 301))),
            "# Thread Ids: 18940 18941\n# Break thread: 18941\n# Break value: 301\n"
        );
    }
}
