//! `rtscope compare --tail-level`'s block of the text report, on known tails: a heavy tail
//! refused, the intervals' verdicts with stationarity assumed or not, a group without a
//! histogram, and raw runs compared by their worst-segment envelope (the text and the typed
//! comparison it is rendered from; the verdict rule alone is tested in rtscope-analysis's
//! compare/tail.rs).

use rtscope_analysis::compare::analysis::Comparison;
use rtscope_analysis::compare::group::Group;
use rtscope_analysis::compare::model::{RunData, Stat};
use rtscope_analysis::compare::tail::Side;
use rtscope_analysis::compare::verdict::{Basis, Thresholds, Verdict};
use rtscope_core::{Histogram, Nanos};
use rtscope_evt::gpd::Gpd;
use rtscope_evt::Refusal;
use rtscope_present::compare_text as text;

mod support;
use support::run as support_run;

/// A run of `n` wake-ups of 10 µs plus a GPD tail, as compare reads it.
fn run(id: i64, tail: Gpd, n: usize, seed: u64) -> RunData {
    let mut r = rtscope_evt::diag::generator(seed);
    let mut hist = Histogram::new();
    let mut max = 0;
    for _ in 0..n {
        let v = (10_000.0 + tail.draw(r.unit())) as u64;
        hist.record(Nanos(v));
        max = max.max(v);
    }
    support_run(id, hist, n as u64, Some(max))
}

#[test]
fn a_heavy_tail_gets_no_level_and_no_verdict_even_assumed_stationary() {
    // ξ = 0.8: the rule of `rtscope tail` (rtscope_evt::far) refuses a far-tail number.
    let heavy = Gpd {
        sigma: 2000.0,
        xi: 0.8,
    };
    let light = Gpd {
        sigma: 500.0,
        xi: 0.0,
    };
    let t = Thresholds::parse(&[], "1us").unwrap();
    let groups = vec![
        Group::new(0, "x", vec![run(0, light, 100_000, 4)]),
        Group::new(1, "y", vec![run(1, heavy, 100_000, 5)]),
    ];
    let c = Comparison::new(groups, &[], t, Stat::Max, None).with_tail_level(1e-9, true);
    let row = c.tail.as_ref().unwrap();
    assert!(matches!(row.sides[0], Side::Level(_)), "{:?}", row.sides[0]);
    let Side::Refused(why) = &row.sides[1] else {
        panic!("{:?}", row.sides[1])
    };
    assert!(
        why.iter()
            .any(|r| matches!(r, Refusal::NotEstimable { .. })),
        "{why:?}"
    );
    assert_eq!(row.changes[0].verdict, Verdict::Unknown);
    let text = text::render(&c);
    assert!(
        text.contains("not estimable from this run (observed max"),
        "{text}"
    );
    assert_eq!(c.regressions(), 0);
}

#[test]
fn known_tails_give_the_expected_verdicts() {
    let light = Gpd {
        sigma: 500.0,
        xi: 0.0,
    };
    let heavy = Gpd {
        sigma: 2000.0,
        xi: 0.0,
    };
    let mut t = Thresholds::parse(&[], "1us").unwrap();
    let group =
        |i: usize, g: Gpd, seed: u64| Group::new(i, "x", vec![run(i as i64, g, 200_000, seed)]);
    let groups = || vec![group(0, light, 1), group(1, heavy, 2), group(2, light, 3)];
    // A merged histogram is not tested for stationarity: no level, no verdict, by default.
    let c = Comparison::new(groups(), &[Stat::Max], t.clone(), Stat::Max, None)
        .with_tail_level(1e-9, false);
    let row = c.tail.as_ref().unwrap();
    for s in &row.sides {
        assert!(
            matches!(s, Side::Refused(r) if matches!(r[..], [Refusal::NotTested { tests: 4 }])),
            "{s:?}"
        );
    }
    assert!(row.changes.iter().all(|c| c.verdict == Verdict::Unknown));
    let text = text::render(&c);
    assert!(
        text.contains("REFUSED: not tested for stationarity — no estimate"),
        "{text}"
    );
    // Assumed stationary: the levels, labelled, and verdicts that rest on the assumption.
    t.fail_untested = true;
    let c = Comparison::new(groups(), &[Stat::Max], t.clone(), Stat::Max, None)
        .with_tail_level(1e-9, true);
    let row = c.tail.as_ref().unwrap();
    for s in &row.sides {
        assert!(matches!(s, Side::Level(_)), "{s:?}");
    }
    // The true levels at 1e-9: 10 µs + σ ln(1e9), 20.4 µs and 51.4 µs, in the intervals.
    for (side, truth) in row.sides.iter().zip([20_362.0, 51_447.0, 20_362.0]) {
        let Side::Level(l) = side else { unreachable!() };
        assert!(l.lower_ns < truth && truth < l.upper_ns.unwrap(), "{l:?}");
    }
    // The heavier tail is a regression (untested: it fails with --fail-untested only); the
    // same tail again is not.
    assert_eq!(row.changes[0].verdict, Verdict::Regression);
    assert_eq!(row.changes[0].basis, Basis::Untested);
    assert!(matches!(
        row.changes[1].verdict,
        Verdict::Same | Verdict::Higher | Verdict::Lower
    ));
    assert!(c.regressions() >= 1);
    let text = text::render(&c);
    assert!(
        text.contains("REGRESSION (untested: stationarity assumed, not tested)"),
        "{text}"
    );
    assert!(text.contains("UNTESTED: stationarity assumed"), "{text}");
    assert!(text.contains("B on tail@1e-9"), "{text}");
    assert!(!text.contains("C on tail@1e-9"), "{text}");
    // What compare's JSON document (rtscope-present) writes, on the typed row.
    assert_eq!(row.changes[0].verdict.word(), "REGRESSION");
    assert!(row.assumed_stationary);
    assert_eq!(c.groups[1].name, "B");
    assert_eq!(row.sides.len(), c.groups.len());
    // Without --fail-untested the rise is higher, and nothing fails.
    t.fail_untested = false;
    let c = Comparison::new(groups(), &[Stat::Max], t.clone(), Stat::Max, None)
        .with_tail_level(1e-9, true);
    assert_eq!(c.tail.as_ref().unwrap().changes[0].verdict, Verdict::Higher);
    assert_eq!(c.regressions(), 0);
    // A group with nothing to fit (a summary without histogram) is refused: no verdict.
    let empty = Group::new(1, "y", vec![support_run(9, Histogram::new(), 1000, None)]);
    let c = Comparison::new(vec![group(0, light, 1), empty], &[], t, Stat::Max, None)
        .with_tail_level(1e-9, true);
    let row = c.tail.as_ref().unwrap();
    assert!(matches!(&row.sides[1], Side::Refused(r) if r[0] == Refusal::NoDistribution));
    assert_eq!(row.changes[0].verdict, Verdict::Unknown);
    let text = text::render(&c);
    assert!(
        text.contains("REFUSED: the run kept no histogram"),
        "{text}"
    );
    assert!(
        text.contains("n/a: no verdict on a refused estimate"),
        "{text}"
    );
    assert_eq!(c.regressions(), 0);
}

/// A `--raw` run of 20,000 wake-ups at 1 kHz in a real store: about 10 µs, one in 100 of
/// 30–50 µs, and in its third of ten segments one in 20 of 2–3 ms (or none with `raw`
/// false: the histogram only).
fn recorded(store: &mut rtscope_store::Store, spikes: bool, raw: bool, seed: u64) -> RunData {
    use rtscope_store::{codec, Checkpoint, NewRun, RawChunk, RunKind, ThreadInfo, ThreadStats};
    let mut r = rtscope_evt::diag::generator(seed);
    let v: Vec<u64> = (0..20_000u64)
        .map(|i| {
            let u = r.unit();
            if spikes && (4000..6000).contains(&i) && u < 0.05 {
                2_000_000 + (1e6 * r.unit()) as u64
            } else if u > 0.99 {
                30_000 + (20e3 * r.unit()) as u64
            } else {
                10_000 + (1e3 * r.unit()) as u64
            }
        })
        .collect();
    let mut hist = Histogram::new();
    v.iter().for_each(|&x| hist.record(Nanos(x)));
    let id = store
        .begin_run(&NewRun {
            kind: RunKind::Measure,
            label: None,
            tags: vec![],
            started: "2026-11-27T14:00:00Z".into(),
            started_unix_ns: 1,
            pid: std::process::id(),
            tool_version: "test".into(),
            command_line_json: "[]".into(),
            config_json: "{}".into(),
            environment: vec![],
            threads: vec![ThreadInfo {
                thread: 0,
                cpu: Some(0),
                policy: "fifo".into(),
                priority: 95,
                interval_ns: 1_000_000,
            }],
        })
        .unwrap();
    let samples: Vec<codec::RawSample> = (0..)
        .zip(&v)
        .map(|(i, &l)| (i, l, i * 1_000_000 + l))
        .collect();
    let cp = Checkpoint {
        progress_ns: 20_000_000_000,
        at_unix_ns: 1,
        threads: vec![ThreadStats {
            thread: 0,
            tid: 1,
            figures: rtscope_store::SampleFigures {
                samples: v.len() as u64,
                min_ns: hist.min().map(|n| n.0),
                mean_ns: None,
                max_ns: hist.max().map(|n| n.0),
                max_cycle: None,
                max_offset_ns: None,
            },
            missed: 0,
            raw_dropped: 0,
            histogram: &hist,
        }],
        samples: if raw {
            vec![RawChunk {
                thread: 0,
                first_cycle: 0,
                count: v.len() as u64,
                data: codec::encode_samples(&samples, 1_000_000),
            }]
        } else {
            vec![]
        },
        ..Checkpoint::default()
    };
    store
        .finish_run(
            id,
            &cp,
            rtscope_store::RunStatus::Complete,
            "2026-11-27T14:00:20Z",
            0,
        )
        .unwrap();
    let max = hist.max().map(|n| n.0);
    support_run(id, hist, v.len() as u64, max)
}

#[test]
fn raw_runs_refused_one_stationary_tail_are_compared_by_their_worst_segment_envelope() {
    let dir = std::env::temp_dir().join(format!("rtscope-compare-env-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut store = rtscope_store::Store::open(&dir.join("rtscope.db")).unwrap();
    let quiet = recorded(&mut store, false, true, 1);
    let spiky = recorded(&mut store, true, true, 2);
    let histogram_only = recorded(&mut store, true, false, 3);
    let t = Thresholds::parse(&[], "1us").unwrap();
    let groups = vec![
        Group::new(0, "x", vec![quiet]),
        Group::new(1, "y", vec![spiky]),
        Group::new(2, "z", vec![histogram_only]),
    ];
    // 1e-3: 2 wake-ups of a segment's 2,000, read off the segments' own values.
    let c = Comparison::new(groups, &[], t, Stat::Max, None)
        .with_tail_level(1e-3, false)
        .with_tail_envelopes(&store)
        .unwrap();
    let row = c.tail.as_ref().unwrap();
    let Side::Envelope {
        level: a,
        from,
        refused,
    } = &row.sides[0]
    else {
        panic!("{:?}", row.sides[0])
    };
    assert!(from.starts_with("run 1, CPU 0, "), "{from}");
    assert!(
        refused
            .iter()
            .any(|r| matches!(r, Refusal::NotTested { .. })),
        "{refused:?}"
    );
    assert!(a.estimate_ns < 100_000.0, "{a:?}");
    let Side::Envelope { level: b, from, .. } = &row.sides[1] else {
        panic!("{:?}", row.sides[1])
    };
    // The spikes of segment 3 are the worst: the fit on it, or its own values.
    assert!(from.starts_with("run 2, CPU 0, "), "{from}");
    let said = format!("worst-segment envelope ({from}; one stationary tail refused)");
    assert!(b.estimate_ns >= 2_000_000.0, "{b:?}");
    // Not one stationary tail's level: the rise is an untested verdict.
    assert_eq!(row.changes[0].verdict, Verdict::Higher);
    assert_eq!(row.changes[0].basis, Basis::Untested);
    assert_eq!(c.regressions(), 0);
    // Without raw samples the merged histogram's refusal stands.
    assert!(
        matches!(&row.sides[2], Side::Refused(_)),
        "{:?}",
        row.sides[2]
    );
    assert_eq!(row.changes[1].verdict, Verdict::Unknown);
    let text = text::render(&c);
    assert!(text.contains(&said), "{text}");
    assert!(
        text.contains("higher (untested: a worst-segment envelope, not one stationary tail)"),
        "{text}"
    );
    // What compare's JSON document (rtscope-present) writes as each group's envelope.
    let row = c.tail.as_ref().unwrap();
    assert!(
        matches!(&row.sides[1], Side::Envelope { from, .. } if said.contains(from.as_str())),
        "{:?}",
        row.sides[1]
    );
    assert!(
        !matches!(&row.sides[2], Side::Envelope { .. }),
        "{:?}",
        row.sides[2]
    );
    let _ = std::fs::remove_dir_all(&dir);
}
