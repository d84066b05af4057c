//! `rtscope report --watch`: a real watch's windows, plus a month of older days and hours and
//! their explanations written through the store as the daemon's retention leaves them, drawn
//! into a report that Chromium opens; its numbers checked against the database's rows.

use crate::common;
use crate::common::browser::{chromium, png_facts, rendered_dom};
use crate::watch::{until, windows, Watch};
use rtscope_core::{Histogram, Nanos};
use rtscope_store::watch::{Level, WatchWindow};
use rtscope_store::Store;
use std::path::Path;

const S: i64 = 1_000_000_000;
const DAY: i64 = 86_400 * S;

fn rtscope(args: &[&str]) -> std::process::Output {
    common::run(env!("CARGO_BIN_EXE_rtscope"), args)
}

/// A day (or hour) row of CPU 0 (the only one measured) as the daemon's roll-up leaves it: 86,400
/// wake-ups around 6 µs and one of `max_us`, explained as `culprit`'s.
fn old_rows(level: Level, start: i64, len: i64, max_us: u64, culprit: &str) -> Vec<WatchWindow> {
    let mut h = Histogram::new();
    h.record_n(Nanos(6_000), 86_400);
    h.record(Nanos(max_us * 1000));
    let explain = format!(
        r#"{{"worst":{{"latency_ns":{},"at_unix_ns":{}}},"culprit":"{culprit}","culprit_ns":{}}}"#,
        max_us * 1000,
        start + len / 2,
        max_us * 900
    );
    vec![WatchWindow {
        level,
        start_ns: start,
        end_ns: start + len,
        cpu: Some(0),
        histogram: h,
        missed: 0,
        spikes: 1,
        alert: (max_us > 400).then(|| format!("max {max_us}.0us > 400.0us")),
        explain: Some(explain),
    }]
}

/// Runs a real watch on CPU 0 for three 1-second windows, then adds 20 days before it.
fn month_db(dir: &Path) -> std::path::PathBuf {
    let db = dir.join("w.db");
    let mut w = Watch::start(&[
        "--series",
        "board<1>",
        "--db",
        db.to_str().unwrap(),
        "--cpus",
        "0",
        "--window",
        "1s",
        "--interval",
        "1ms",
    ]);
    until(&mut w, "three windows", || windows(&db).len() >= 3);
    w.signal(libc::SIGTERM);
    let o = w.finish();
    assert_eq!(o.status.code(), Some(0), "{}", common::dump(&o));
    let mut store = Store::open(&db).unwrap();
    let series = store.watch_series().unwrap()[0].id;
    let first = windows(&db).iter().map(|x| x.start_ns).min().unwrap();
    let today = first.div_euclid(DAY) * DAY;
    let mut rows = Vec::new();
    for d in 1..=20 {
        let (max, who) = if d == 7 {
            (900, "culprit:183")
        } else {
            (50 + d as u64, "ksoftirqd/0")
        };
        rows.extend(old_rows(Level::Day, today - d * DAY, DAY, max, who));
    }
    store.add_windows(series, &rows).unwrap();
    db
}

#[test]
fn a_watch_report_draws_the_series_and_renders_in_chromium() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    let rt = common::rt_lock();
    let dir = common::fresh_dir("report-watch");
    let db = month_db(&dir);
    drop(rt); // the rest reads the database: no SCHED_FIFO thread
    let out = dir.join("report");
    let (db_s, out_s) = (db.to_str().unwrap(), out.to_str().unwrap());
    let o = rtscope(&["report", "--watch", "board<1>", "--db", db_s, "-o", out_s]);
    assert_eq!(o.status.code(), Some(0), "{}", common::dump(&o));
    // Every row of the database is a line of watch.csv with its exact maximum (days and
    // windows at resolution "window": 20 + 3 or more, of CPU 0).
    let store = Store::open(&db).unwrap();
    let sid = store.watch_series().unwrap()[0].id;
    let mut rows = Vec::new();
    for level in [Level::Window, Level::Hour, Level::Day] {
        rows.extend(store.windows(sid, level, i64::MIN, i64::MAX).unwrap());
    }
    let csv = std::fs::read_to_string(out.join("watch.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + rows.len(), "{csv}");
    for r in &rows {
        let cpu = r.cpu.map_or("all".into(), |c| c.to_string());
        let key = format!("{},{},{},{cpu},", r.start_ns, r.end_ns, r.level.name());
        let line = csv.lines().find(|l| l.starts_with(&key)).expect(&key);
        let max: f64 = line.split(',').nth(7).unwrap().parse().unwrap();
        let want = r.histogram.max().unwrap().0 as f64 / 1e3;
        assert!((max - want).abs() < 1e-3, "{line}: max {want}");
    }
    let day7 = csv.lines().filter(|l| l.contains(",culprit:183,")).count();
    assert_eq!(day7, 1, "day 7's cause");
    // Chromium opens the page without a console error and finds every figure and the cause.
    let Some(dom) = rendered_dom(&out.join("report.html"), "chromium-watch") else {
        return;
    };
    for id in ["watch-max", "watch-heatmap", "watch-spikes"] {
        assert!(dom.contains(&format!("id=\"fig-{id}\"")), "{id} missing");
    }
    assert_eq!(dom.matches("<svg").count(), 3, "one CPU: no per-CPU figure");
    assert!(dom.contains("board&lt;1&gt;"), "the series name, escaped");
    assert!(dom.contains("culprit:183"), "day 7's worst wake-up's cause");
    assert!(dom.contains("max 900.0us &gt; 400.0us"), "day 7's alert");
    let shot = dir.join("watch.png");
    let arg = format!("--screenshot={}", shot.display());
    let Some(_) = chromium(
        &out.join("report.html"),
        &[&arg, "--window-size=1280,2400"],
        "chromium-watch-shot",
    ) else {
        return;
    };
    let (w, h, colours, ink) = png_facts(&shot);
    assert_eq!((w, h), (1280, 2400));
    assert!(colours > 20 && ink > 0.05, "{colours} colours, {ink} ink");
}

#[test]
fn a_watch_report_takes_a_period_and_refuses_bad_input_with_a_hint() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    let rt = common::rt_lock();
    let dir = common::fresh_dir("report-watch-period");
    let db = month_db(&dir);
    drop(rt); // the rest reads the database: no SCHED_FIFO thread
    let db_s = db.to_str().unwrap();
    let first = windows(&db).iter().map(|x| x.start_ns).min().unwrap();
    let today = first.div_euclid(DAY) * DAY;
    let day = |d: i64| format!("@{}", (today - d * DAY) / S);
    let out = dir.join("period");
    let out_s = out.to_str().unwrap();
    let (from, to) = (day(10), day(5));
    let o = rtscope(&[
        "report", "--watch", "board<1>", "--db", db_s, "-o", out_s, "--from", &from, "--to", &to,
        "--per", "day",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", common::dump(&o));
    let csv = std::fs::read_to_string(out.join("watch.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + 5, "days 10..6:\n{csv}");
    assert!(csv.lines().skip(1).all(|l| l.contains(",day,")));
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("drawn per</th><td class=\"t\">day"));
    for (args, says) in [
        (vec!["--watch", "nope"], "no watch series named 'nope'"),
        (
            vec!["--watch", "board<1>", "--from", "yesterday"],
            "--from 'yesterday': not a time",
        ),
        (
            vec![
                "--watch",
                "board<1>",
                "--from",
                "2026-11-02",
                "--to",
                "2026-11-01",
            ],
            "--from is not before --to",
        ),
        (
            vec!["--watch", "board<1>", "--to", "@1000"],
            "no window in the period",
        ),
        (vec!["--watch", "board<1>", "--last"], "cannot be used with"),
    ] {
        let mut a = vec!["report", "--db", db_s, "-o", out_s];
        a.extend(&args);
        let o = rtscope(&a);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", common::dump(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
    let o = rtscope(&["report", "--db", db_s, "-o", out_s, "--watch", "nope"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("board<1>") || err.contains("board\\x3c1"),
        "names the series: {err}"
    );
}

/// 14 days of hours from `start`: 3,600 wake-ups each around 6 µs, the hour's worst drawn
/// from `worst_us` plus up to 30 µs.
fn hours(start: i64, worst_us: u64, seed: u64) -> Vec<WatchWindow> {
    let mut rng = rtscope_core::rng::XorShift64::new(seed);
    (0..14 * 24)
        .map(|i| {
            let mut h = Histogram::new();
            h.record_n(Nanos(6_000), 3_599);
            h.record(Nanos((worst_us + rng.below(30) as u64) * 1000));
            WatchWindow {
                level: Level::Hour,
                start_ns: start + i * 3600 * S,
                end_ns: start + (i + 1) * 3600 * S,
                cpu: Some(0),
                histogram: h,
                missed: 0,
                spikes: 0,
                alert: None,
                explain: None,
            }
        })
        .collect()
}

#[test]
fn compare_judges_two_periods_of_a_watch_series_hour_by_hour() {
    let dir = common::fresh_dir("compare-watch");
    let db = dir.join("w.db");
    let mut store = Store::open(&db).unwrap();
    let (sid, _) = store.open_series("board", Some("vm"), 0, "{}").unwrap();
    // 2026-11-01 .. 11-15 before the update, 11-15 .. 11-29 after: the worst wake-up of an
    // hour rose from 50-79 µs to 90-119 µs; the hours before 11-15 on the control series too.
    let t0 = 1_793_491_200 * S;
    let mut rows = hours(t0, 50, 1);
    rows.extend(hours(t0 + 14 * DAY, 90, 2));
    store.add_windows(sid, &rows).unwrap();
    drop(store);
    let db_s = db.to_str().unwrap();
    let before = "watch:board@2026-11-01..2026-11-15";
    let after = "watch:board@2026-11-15..";
    let o = rtscope(&["compare", "--db", db_s, before, after, "--json"]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "a regression: {}",
        common::dump(&o)
    );
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let groups = doc["groups"].as_array().unwrap();
    assert_eq!(groups[0]["run_ids"].as_array().unwrap().len(), 336);
    assert_eq!(groups[1]["run_ids"].as_array().unwrap().len(), 336);
    let text = serde_json::to_string(&doc).unwrap();
    assert!(
        text.contains("REGRESSION") || text.contains("regression"),
        "{text}"
    );
    // The same two weeks against themselves (split in two halves): no regression.
    let o = rtscope(&[
        "compare",
        "--db",
        db_s,
        "watch:board@2026-11-01..2026-11-08",
        "watch:board@2026-11-08..2026-11-15",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", common::dump(&o));
    for (sel, says) in [
        ("watch:nope", "no watch series named 'nope'"),
        ("watch:board@2026-11-01", "expected SERIES@FROM..TO"),
        ("watch:board@2027-01-01..", "no window in the period"),
    ] {
        let o = rtscope(&["compare", "--db", db_s, before, sel]);
        assert_eq!(o.status.code(), Some(2), "{sel}: {}", common::dump(&o));
        assert!(
            String::from_utf8_lossy(&o.stderr).contains(says),
            "{sel}: {}",
            common::dump(&o)
        );
    }
}
