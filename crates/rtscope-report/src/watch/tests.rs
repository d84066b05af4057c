use super::cells::{self, Worst};
use super::figures;
use super::*;
use crate::plot::Shape;
use rtscope_core::{Histogram, Nanos};

const S: i64 = 1_000_000_000;
const HOUR: i64 = 3600 * S;
const DAY: i64 = 24 * HOUR;
/// 2026-11-01 00:00:00 UTC.
const T0: i64 = 1_793_491_200 * S;

fn window(level: Level, start: i64, len: i64, cpu: Option<u32>, max_us: u64) -> WatchWindow {
    let mut h = Histogram::new();
    h.record_n(Nanos(5_000), 1000);
    h.record_n(Nanos(20_000), 10);
    h.record(Nanos(max_us * 1000));
    WatchWindow {
        level,
        start_ns: start,
        end_ns: start + len,
        cpu,
        histogram: h,
        missed: 0,
        spikes: u64::from(max_us >= 100),
        alert: (max_us >= 300).then(|| format!("max {max_us}.0us > 300.0us")),
        explain: None,
    }
}

/// A month of series as the daemon leaves it: 28 days kept as days, a day of hours, then an
/// hour of 1-minute windows; CPUs 0 and 1 and all. Day 10 holds a 500 µs spike on CPU 1.
fn month() -> Vec<WatchWindow> {
    let mut rows = Vec::new();
    let mut push = |level, start, len, max_us: u64| {
        rows.push(window(level, start, len, Some(0), 40));
        rows.push(window(level, start, len, Some(1), max_us));
        rows.push(window(level, start, len, None, max_us.max(40)));
    };
    for d in 0..28 {
        push(
            Level::Day,
            T0 + d * DAY,
            DAY,
            if d == 10 { 500 } else { 60 },
        );
    }
    for hr in 0..24 {
        push(Level::Hour, T0 + 28 * DAY + hr * HOUR, HOUR, 70);
    }
    for m in 0..60 {
        push(
            Level::Window,
            T0 + 29 * DAY + m * 60 * S,
            60 * S,
            80 + m as u64,
        );
    }
    rows
}

fn total(rows: &[WatchWindow], cpu: Option<u32>) -> u64 {
    rows.iter()
        .filter(|w| w.cpu == cpu)
        .map(|w| w.histogram.count())
        .sum()
}

#[test]
fn cells_at_a_resolution_keep_every_wake_up_and_coarser_rows() {
    let rows = month();
    assert_eq!(cells::resolution(&rows, MAX_COLUMNS), Level::Window);
    assert_eq!(
        cells::resolution(&rows, 60),
        Level::Hour,
        "28 + 24 + 1 hours"
    );
    assert_eq!(cells::resolution(&rows, 10), Level::Day);
    for level in [Level::Window, Level::Hour, Level::Day] {
        let shown = cells::at(&rows, level);
        for cpu in [Some(0), Some(1), None] {
            let n: u64 = shown
                .iter()
                .filter(|c| c.cpu == cpu)
                .map(|c| c.histogram.count())
                .sum();
            assert_eq!(n, total(&rows, cpu), "{level:?} {cpu:?}");
        }
        let all = cells::all_cpus(&shown).count();
        let expected = match level {
            Level::Window => 28 + 24 + 60,
            Level::Hour => 28 + 24 + 1,
            Level::Day => 28 + 2,
        };
        assert_eq!(all, expected, "{level:?}");
    }
    let hours = cells::at(&rows, Level::Hour);
    let last = cells::all_cpus(&hours).last().unwrap();
    assert_eq!(last.level, Level::Window, "the hour merged from windows");
    assert_eq!(last.start_ns, T0 + 29 * DAY);
    assert_eq!(last.histogram.max(), Some(Nanos(139_000)));
    let day10 = hours
        .iter()
        .find(|c| c.start_ns == T0 + 10 * DAY && c.cpu == Some(1));
    assert_eq!(day10.unwrap().level, Level::Day, "a day stays a day");
}

#[test]
fn the_long_term_plot_shows_each_periods_exact_maximum_and_breaks_at_gaps() {
    let mut rows = month();
    // Nothing measured on days 20-21.
    rows.retain(|w| !(w.level == Level::Day && (20..22).contains(&((w.start_ns - T0) / DAY))));
    let shown = cells::at(&rows, Level::Day);
    let p = figures::long_term(&shown);
    let max = &p.series[0];
    let nonzero: Vec<f64> = max
        .points
        .iter()
        .map(|q| q.1)
        .filter(|&v| v > 0.0)
        .collect();
    assert_eq!(nonzero.len(), 26 + 2);
    assert_eq!(nonzero[10], 500.0, "day 10's spike, exact");
    assert_eq!(
        max.points.iter().filter(|q| q.1 == 0.0).count(),
        1,
        "one break, in the gap"
    );
    assert!(max.gaps_at_zero);
    let alert = p.series.iter().find(|s| s.name == "alert").unwrap();
    assert_eq!(alert.points.len(), 1, "only day 10 breached 300 µs");
    assert_eq!(alert.points[0].1, 500.0);
}

#[test]
fn the_heat_map_covers_each_periods_wake_ups_once() {
    let rows = month();
    let shown = cells::at(&rows, Level::Hour);
    let p = figures::heat_map(&shown);
    assert!(p.series.iter().all(|s| s.shape == Shape::Cells));
    assert!(p.series.iter().all(|s| s.points.len() % 2 == 0));
    // Each column's cells stack without overlap from the lowest bin to the highest.
    let columns = cells::all_cpus(&shown).count();
    let mut spans: std::collections::BTreeMap<i64, Vec<(f64, f64)>> = Default::default();
    for s in &p.series {
        for c in s.points.chunks(2) {
            spans
                .entry((c[0].0 * 1e3) as i64)
                .or_default()
                .push((c[0].1, c[1].1));
        }
    }
    assert_eq!(spans.len(), columns);
    for v in spans.values_mut() {
        v.sort_by(|a, b| a.0.total_cmp(&b.0));
        for pair in v.windows(2) {
            assert!(pair[0].1 <= pair[1].0 + 1e-9, "{pair:?}");
        }
    }
    // 1000 of 1011 wake-ups (98.9 %) at 5 µs: the darkest step; a single 500 µs: < 0.1 %.
    let darkest = p.series.iter().find(|s| s.name == "≥ 10 %").unwrap();
    assert!(darkest
        .points
        .chunks(2)
        .all(|c| c[0].1 <= 5.0 && c[1].1 >= 5.0));
    let day10 = ((T0 + 10 * DAY) as f64 / 1e9 * 1e3) as i64;
    let top_of_day10 = spans[&day10].iter().map(|s| s.1).fold(0.0, f64::max);
    assert!((500.0..560.0).contains(&top_of_day10), "{top_of_day10}");
}

#[test]
fn spikes_are_grouped_by_their_largest_cause() {
    let mut rows = month();
    // A worst wake-up not explained carries its reason's JSON name, as the watch stores it.
    let explain = |at: i64, us: u64, culprit: Option<&str>| {
        let c = culprit.map_or(r#"null,"unexplained":"out_of_window""#.to_string(), |c| {
            format!("\"{c}\"")
        });
        format!(
            r#"{{"worst":{{"latency_ns":{},"at_unix_ns":{at}}},"culprit":{c},"culprit_ns":{}}}"#,
            us * 1000,
            us * 900
        )
    };
    for (i, w) in rows.iter_mut().filter(|w| w.cpu == Some(1)).enumerate() {
        let culprit = match i % 3 {
            0 => Some("culprit:183"),
            1 => Some("ksoftirqd/1"),
            _ => None,
        };
        let us = w.histogram.max().unwrap().0 / 1000;
        w.explain = Some(explain(w.start_ns + S, us, culprit));
    }
    let shown = cells::at(&rows, Level::Day);
    let p = figures::spikes(&shown).expect("worst wake-ups known");
    let names: Vec<&str> = p.series.iter().map(|s| s.name.as_str()).collect();
    // The legend says why, in the words the terminal and the JSON's name use.
    let why = format!(
        "not explained: {}",
        rtscope_explain::unexplained::Unexplained::OutOfWindow.describe()
    );
    assert_eq!(names, ["culprit:183", "ksoftirqd/1", why.as_str()]);
    assert!(why.contains("out of the trace window"), "{why}");
    let n: usize = p.series.iter().map(|s| s.points.len()).sum();
    assert_eq!(
        n,
        cells::at(&rows, Level::Day)
            .iter()
            .filter(|c| c.cpu == Some(1))
            .count()
    );
    assert_eq!(
        Worst::parse(&explain(7, 500, Some("x"))),
        Some(Worst {
            latency: Nanos(500_000),
            at_ns: 7,
            culprit: Some("x".into()),
            culprit_ns: Some(450_000),
            culprit_pids: Vec::new(),
            cause: None,
        })
    );
    // A thread cause is its command, its PIDs beside it: one colour per command, the PIDs in
    // the tables.
    let grouped = r#"{"worst":{"latency_ns":9,"at_unix_ns":1},"culprit":"thread sh","culprit_ns":8,"culprit_pids":[811,812]}"#;
    let w = Worst::parse(grouped).unwrap();
    assert_eq!(w.culprit.as_deref(), Some("thread sh"));
    assert_eq!(
        w.culprit_text().as_deref(),
        Some("thread sh (2 PIDs: 811, 812)")
    );
    // A row stored since the cause rule: the table prints its line, not the largest cause.
    let ruled = r#"{"worst":{"latency_ns":9,"at_unix_ns":1},"culprit":"thread sh","culprit_ns":4,"culprit_pids":[811],"cause":"2 threads (88 % together, largest sh:811:fifo50 44 %)"}"#;
    let w = Worst::parse(ruled).unwrap();
    assert_eq!(
        w.cause_text().as_deref(),
        Some("2 threads (88 % together, largest sh:811:fifo50 44 %)")
    );
    assert_eq!(
        Worst::parse(grouped).unwrap().cause_text().as_deref(),
        Some("thread sh (2 PIDs: 811, 812)"),
        "older rows: the largest cause"
    );
    assert_eq!(Worst::parse("{}"), None);
    assert_eq!(Worst::parse("not json"), None);
}

#[test]
fn the_page_escapes_the_databases_texts_and_the_files_are_made() {
    let mut rows = month();
    let hostile = "<script>alert(1)</script>";
    for w in rows.iter_mut().filter(|w| w.cpu == Some(1)) {
        w.explain = Some(format!(
            r#"{{"worst":{{"latency_ns":500000,"at_unix_ns":{}}},"culprit":"{hostile}","culprit_ns":1}}"#,
            w.start_ns
        ));
    }
    rows[5].alert = Some(hostile.into());
    let data = WatchData {
        series: rtscope_store::watch::SeriesSummary {
            id: 1,
            name: format!("board {hostile}"),
            host: Some(hostile.into()),
            created_ns: T0,
            resumed: 2,
            windows: [180, 72, 84],
            span_ns: Some((T0, T0 + 30 * DAY)),
            max_ns: Some(500_000),
            alerts: 1,
        },
        windows: rows,
        period: None,
    };
    let files = build(&data, &WatchOptions::default()).unwrap();
    let names: Vec<&str> = files.iter().map(|f| f.name.as_str()).collect();
    for n in [
        "report.html",
        "watch.csv",
        "watch-max.svg",
        "watch-max.png",
        "watch-cpus.svg",
        "watch-heatmap.svg",
        "watch-spikes.svg",
    ] {
        assert!(names.contains(&n), "{n} in {names:?}");
    }
    for f in files
        .iter()
        .filter(|f| f.name.ends_with(".svg") || f.name.ends_with(".html"))
    {
        let text = String::from_utf8_lossy(&f.bytes);
        assert!(!text.contains("<script"), "{} holds the raw text", f.name);
    }
    let html = String::from_utf8_lossy(&files[0].bytes);
    assert!(html.contains("&lt;script&gt;"));
    assert!(html.contains("drawn per</th><td class=\"t\">window"));
    let csv = String::from_utf8_lossy(&files[1].bytes);
    assert_eq!(csv.lines().count(), 1 + 3 * (28 + 24 + 60));
}

#[test]
fn a_worst_wake_up_not_explained_shows_its_stored_reason_in_the_table_and_the_csv() {
    use rtscope_explain::unexplained::Unexplained;
    let mut rows = vec![
        window(Level::Window, T0, 60 * S, Some(1), 900),
        window(Level::Window, T0 + 60 * S, 60 * S, Some(1), 800),
        window(Level::Window, T0 + 120 * S, 60 * S, Some(1), 700),
        window(Level::Window, T0 + 180 * S, 60 * S, Some(1), 40),
    ];
    // The worst wake-up's time unknown: no `worst`, only the reason.
    rows[0].explain = Some(r#"{"unexplained":"worst_unknown"}"#.into());
    rows[1].explain = Some(format!(
        r#"{{"worst":{{"latency_ns":800000,"at_unix_ns":{}}},"unexplained":"lost_events"}}"#,
        T0 + 61 * S
    ));
    // Stored before reasons were (or without --explain): said so, not guessed.
    rows[2].explain = Some(format!(
        r#"{{"worst":{{"latency_ns":700000,"at_unix_ns":{}}}}}"#,
        T0 + 121 * S
    ));
    let shown = cells::at(&rows, Level::Window);
    let why: Vec<Option<&str>> = shown.iter().map(|c| c.why_not_explained()).collect();
    assert_eq!(
        why,
        [
            Some(Unexplained::WorstUnknown.describe()),
            Some(Unexplained::LostEvents.describe()),
            Some("reason not recorded (no --explain, or stored before reasons were)"),
            Some("below --spike"),
        ]
    );
    assert_eq!(shown[1].unexplained, Some(Unexplained::LostEvents));
    let csv = cells::csv(&shown);
    let last: Vec<&str> = csv.lines().map(|l| l.rsplit(',').next().unwrap()).collect();
    assert_eq!(
        last,
        ["not_explained", "worst_unknown", "lost_events", "", ""]
    );
    let data = WatchData {
        series: rtscope_store::watch::SeriesSummary {
            id: 1,
            name: "b".into(),
            host: None,
            created_ns: T0,
            resumed: 0,
            windows: [4, 0, 0],
            span_ns: Some((T0, T0 + 240 * S)),
            max_ns: Some(900_000),
            alerts: 0,
        },
        windows: rows,
        period: None,
    };
    let files = build(&data, &WatchOptions::default()).unwrap();
    let html = String::from_utf8_lossy(&files[0].bytes);
    let lost = format!(
        "not explained: {}",
        crate::escape::escape(Unexplained::LostEvents.describe())
    );
    assert!(html.contains(&lost), "{lost} in the worst periods' table");
    let spikes = files.iter().find(|f| f.name == "watch-spikes.svg").unwrap();
    let svg = String::from_utf8_lossy(&spikes.bytes);
    assert!(
        svg.contains("not explained: events lost"),
        "the legend says why"
    );
}
