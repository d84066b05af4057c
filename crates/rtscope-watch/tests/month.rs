//! Ten simulated days (and a month, for the disk budget) of a watch through the real store (SQLite on disk): windows of two CPUs
//! and "all" every minute, the retention applied after each hour of them with the windows'
//! own time as "now" (the fake clock), checked against what went in: every wake-up kept until
//! its age expires it, merged levels covering exactly their spans, the worst latency and its
//! explanation carried up, and the database within its disk budget throughout.

use rtscope_core::{Histogram, Nanos};
use rtscope_store::watch::{Level, WatchWindow};
use rtscope_store::Store;
use rtscope_watch::retention::Retention;
use std::path::PathBuf;

const MIN: i64 = 60_000_000_000;
const HOUR: i64 = 60 * MIN;
const DAY: i64 = 24 * HOUR;
/// 2026-11-01T00:00:00Z.
const T0: i64 = 1_793_491_200_000_000_000;

fn db(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("rtscope-watch-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d.join("watch.db")
}

/// The windows of minute `m`: CPUs 0 and 1 and all; 50 wake-ups each from a seeded generator,
/// one spike of `1 ms + m ns` on CPU 1 every 1,000th minute.
fn minute(m: i64) -> Vec<WatchWindow> {
    let mut rng = rtscope_core::rng::XorShift64::new(m as u64 + 1);
    let mut rows: Vec<WatchWindow> = (0..2u32)
        .map(|cpu| {
            let mut h = Histogram::new();
            for _ in 0..50 {
                h.record(Nanos(2_000 + rng.below(8_000) as u64));
            }
            if cpu == 1 && m % 1000 == 999 {
                h.record(Nanos(1_000_000 + m as u64));
            }
            WatchWindow {
                level: Level::Window,
                start_ns: T0 + m * MIN,
                end_ns: T0 + (m + 1) * MIN,
                cpu: Some(cpu),
                spikes: h.count_at_or_above(Nanos::from_us(100)),
                missed: u64::from(m % 7 == 0),
                explain: (cpu == 1 && m % 1000 == 999).then(|| format!("{{\"minute\":{m}}}")),
                alert: None,
                histogram: h,
            }
        })
        .collect();
    let mut all = rows[0].clone();
    all.cpu = None;
    rtscope_store::watch::merge_into(&mut all, &rows[1]);
    rows.push(all);
    rows
}

fn kept(store: &Store, level: Level) -> Vec<WatchWindow> {
    store.windows(1, level, i64::MIN, i64::MAX).unwrap()
}

#[test]
fn days_of_windows_are_merged_into_hours_and_days_and_every_wake_up_is_accounted_for() {
    let path = db("month");
    let mut store = Store::open(&path).unwrap();
    let (series, resumed) = store.open_series("press-7", Some("h"), T0, "{}").unwrap();
    assert_eq!((series, resumed), (1, false));
    let r = Retention {
        windows: Nanos::from_secs(86_400),
        hours: Nanos::from_secs(3 * 86_400),
        max_age: Nanos::from_secs(7 * 86_400),
        budget: 256 << 20,
    };
    let days = 10;
    for hour in 0..days * 24 {
        let rows: Vec<WatchWindow> = (hour * 60..(hour + 1) * 60).flat_map(minute).collect();
        store.add_windows(series, &rows).unwrap();
        r.apply(&mut store, series, T0 + (hour + 1) * HOUR).unwrap();
    }
    let now = T0 + days * DAY;
    let (w, h, d) = (
        kept(&store, Level::Window),
        kept(&store, Level::Hour),
        kept(&store, Level::Day),
    );
    // Measured windows: the last day; hours: the 2 days before; days: back to 7 days ago.
    assert_eq!(
        w.len() as i64,
        24 * 60 * 3,
        "one day of minutes, 3 rows each"
    );
    assert_eq!(w.first().unwrap().start_ns, now - DAY);
    assert_eq!(h.len() as i64, 2 * 24 * 3);
    assert_eq!(
        (h.first().unwrap().start_ns, h.last().unwrap().end_ns),
        (now - 3 * DAY, now - DAY)
    );
    assert!(d
        .iter()
        .all(|x| x.start_ns % DAY == T0 % DAY && x.end_ns <= now - 3 * DAY));
    assert_eq!(d.len(), 4 * 3, "4 days of 3 rows");
    assert_eq!(
        d.first().unwrap().start_ns,
        now - 7 * DAY,
        "older days expired"
    );
    // Every wake-up from 7 days ago on is in exactly one row per CPU.
    let first = (now - 7 * DAY - T0) / MIN;
    let expect: u64 = (first..days * 24 * 60)
        .map(|m| minute(m)[1].histogram.count())
        .sum();
    let got: u64 = [&w, &h, &d]
        .iter()
        .flat_map(|l| l.iter())
        .filter(|x| x.cpu == Some(1))
        .map(|x| x.histogram.count())
        .sum();
    assert_eq!(got, expect);
    let missed: u64 = [&w, &h, &d]
        .iter()
        .flat_map(|l| l.iter())
        .filter(|x| x.cpu.is_none())
        .map(|x| x.missed)
        .sum();
    assert_eq!(
        missed,
        (first..days * 24 * 60).filter(|m| m % 7 == 0).count() as u64 * 2
    );
    // The worst of a merged day is the spike of its minute, with that minute's explanation.
    let spiky = d
        .iter()
        .find(|x| x.cpu == Some(1) && x.histogram.max() > Some(Nanos::from_ms(1)))
        .unwrap();
    let m = spiky.histogram.max().unwrap().0 - 1_000_000;
    assert_eq!(m % 1000, 999);
    assert_eq!(
        spiky.explain.as_deref(),
        Some(format!("{{\"minute\":{m}}}").as_str())
    );
    assert_eq!(spiky.start_ns, T0 + (m as i64 * MIN) / DAY * DAY);
    let list = store.watch_series().unwrap();
    assert_eq!(
        list[0].windows,
        [w.len() as u64, h.len() as u64, d.len() as u64]
    );
}

#[test]
fn the_database_stays_within_its_disk_budget_and_the_file_stops_growing() {
    let path = db("budget");
    let mut store = Store::open(&path).unwrap();
    let (series, _) = store.open_series("s", None, T0, "{}").unwrap();
    let budget = 1 << 20;
    let r = Retention {
        budget,
        ..Retention::default()
    };
    let mut sizes = Vec::new();
    // A month (31 days) of minutes with the default retention (windows merged into hours after
    // 2 days) under a 1 MB budget.
    for hour in 0..31 * 24 {
        let rows: Vec<WatchWindow> = (hour * 60..(hour + 1) * 60).flat_map(minute).collect();
        store.add_windows(series, &rows).unwrap();
        let done = r.apply(&mut store, series, T0 + (hour + 1) * HOUR).unwrap();
        assert!(
            store.used_bytes().unwrap() <= budget,
            "hour {hour}: {done:?}"
        );
        sizes.push(std::fs::metadata(&path).unwrap().len());
    }
    // Deleting reached the budget early; from then on the file reuses its pages.
    let trimmed = kept(&store, Level::Window);
    assert!(
        trimmed.first().unwrap().start_ns > T0,
        "the oldest windows went"
    );
    assert_eq!(
        trimmed.last().unwrap().end_ns,
        T0 + 31 * DAY,
        "the newest stay"
    );
    let late = &sizes[sizes.len() / 2..];
    assert!(
        late.iter().max().unwrap() - late.iter().min().unwrap() < budget / 4,
        "{late:?}"
    );
}

#[test]
fn a_restart_within_a_window_adds_to_its_row_and_resumes_the_series() {
    let path = db("resume");
    let mut store = Store::open(&path).unwrap();
    let (s, _) = store.open_series("s", None, T0, "{}").unwrap();
    let mut a = minute(0);
    let b = minute(0);
    a.truncate(1);
    store.add_windows(s, &a).unwrap();
    drop(store);
    let mut store = Store::open(&path).unwrap();
    assert_eq!(
        store.open_series("s", None, T0 + MIN, "{\"v\":2}").unwrap(),
        (s, true)
    );
    store.add_windows(s, &b[..1]).unwrap();
    let w = kept(&store, Level::Window);
    assert_eq!(w.len(), 1);
    assert_eq!(w[0].histogram.count(), 100);
    assert_eq!(store.watch_series().unwrap()[0].resumed, 1);
}

/// A window whose worst wake-up got no explanation stores the reason's JSON name in its
/// row's `explain` object (and in the all-CPUs row when it is that row's maximum), beside its
/// worst wake-up; an explanation that comes later replaces it; rows stored before reasons
/// were (no `unexplained` key) read back unchanged.
#[test]
fn a_window_not_explained_stores_its_reason_and_an_explanation_replaces_it() {
    use rtscope_explain::unexplained::Unexplained;
    let path = db("unexplained");
    let mut store = Store::open(&path).unwrap();
    let (s, _) = store.open_series("s", None, T0, "{}").unwrap();
    let mut rows = minute(999);
    let max = rows[1].histogram.max().unwrap().0;
    rows[1].explain = Some(format!(
        r#"{{"worst":{{"latency_ns":{max},"at_unix_ns":7}}}}"#
    ));
    let old = minute(1999);
    store.add_windows(s, &rows).unwrap();
    store.add_windows(s, &old).unwrap();
    let why = Unexplained::OutOfWindow.name();
    store
        .unexplained_window(s, T0 + 999 * MIN, 1, max, why)
        .unwrap();
    let json = |w: &WatchWindow| -> serde_json::Value {
        serde_json::from_str(w.explain.as_deref().unwrap_or("null")).unwrap()
    };
    let w = kept(&store, Level::Window);
    let at = |m: i64, cpu: Option<u32>| {
        w.iter()
            .find(|r| r.start_ns == T0 + m * MIN && r.cpu == cpu)
            .unwrap()
    };
    let cpu1 = json(at(999, Some(1)));
    assert_eq!(cpu1["unexplained"], why, "{cpu1}");
    assert_eq!(
        cpu1["worst"]["latency_ns"], max,
        "the worst is kept: {cpu1}"
    );
    assert_eq!(json(at(999, None))["unexplained"], why, "its maximum");
    assert_eq!(
        at(999, Some(0)).explain,
        None,
        "another CPU's row is not touched"
    );
    let back = Unexplained::from_name(cpu1["unexplained"].as_str().unwrap());
    assert_eq!(back, Some(Unexplained::OutOfWindow));
    // An older row has no reason: read back as stored.
    assert_eq!(
        at(1999, Some(1)).explain.as_deref(),
        Some("{\"minute\":1999}")
    );
    // A late explanation replaces the reason.
    store
        .explain_window(
            s,
            T0 + 999 * MIN,
            1,
            max,
            "{\"charges\":[]}",
            Some(rtscope_store::watch::Culprit {
                name: "thread x",
                ns: 9,
                pids: &[1],
                line: Some("thread x:1:nice0 (90 %)"),
            }),
        )
        .unwrap();
    let w = kept(&store, Level::Window);
    let v: serde_json::Value = serde_json::from_str(
        w.iter()
            .find(|r| r.start_ns == T0 + 999 * MIN && r.cpu == Some(1))
            .and_then(|r| r.explain.as_deref())
            .unwrap(),
    )
    .unwrap();
    assert!(v.get("unexplained").is_none(), "{v}");
    assert_eq!(v["cause"], "thread x:1:nice0 (90 %)", "{v}");
    assert_eq!(v["explained"]["charges"], serde_json::json!([]), "{v}");
}
