//! `compare`'s significance test on synthetic stores: runs of several scenarios are compared
//! like with like (van Elteren's stratified test), and too few runs give an `untested` verdict
//! of the threshold, in words that say only the direction (`higher`, `lower`), a rise failing
//! only with `--fail-untested` (or `--threshold-only`).

use rtscope_analysis::compare::analysis::Comparison;
use rtscope_analysis::compare::group::Group;
use rtscope_analysis::compare::model::{RunData, Stat};
use rtscope_analysis::compare::significance::mann_whitney;
use rtscope_analysis::compare::verdict::{Thresholds, Verdict};
use rtscope_store::Store;
use rtscope_testkit::synthetic::{write_run, SyntheticRun};

/// Synthetic runs read back: one per `(kernel, scenario, typical latency ns)`, each with its
/// own seed (1 CPU, 20,000 samples: fast).
fn runs(name: &str, specs: &[(&str, &str, u64)]) -> Vec<RunData> {
    let path =
        std::env::temp_dir().join(format!("rtscope-analysis-{}-{name}.db", std::process::id()));
    for ext in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{ext}", path.display()));
    }
    let mut store = Store::open(&path).unwrap();
    let out = specs
        .iter()
        .enumerate()
        .map(|(i, &(kernel, scenario, base_ns))| {
            let spec = SyntheticRun {
                label: format!("{kernel}-{scenario}-{i}"),
                cpus: 1,
                samples: 20_000,
                base_ns,
                seed: 7 * i as u64 + 3,
                monitors: false,
                tags: vec![
                    ("kernel".into(), kernel.into()),
                    ("scenario".into(), scenario.into()),
                ],
                ..SyntheticRun::default()
            };
            let id = write_run(&mut store, &spec).unwrap();
            RunData::from_detail(&store.run(id).unwrap(), None)
        })
        .collect();
    drop(store);
    let _ = std::fs::remove_file(&path);
    out
}

/// Groups `a` and `b` by the `kernel` tag and compares them on p50, p99 and max, with no
/// threshold (every change is beyond it: only the test decides) unless `threshold_only`.
fn compare(runs: &[RunData], threshold_only: bool) -> Comparison {
    let group = |i: usize, k: &str| {
        let of: Vec<RunData> = runs
            .iter()
            .filter(|r| r.tag("kernel") == Some(k))
            .cloned()
            .collect();
        Group::new(i, &format!("kernel={k}"), of)
    };
    let mut t = Thresholds::parse(&["0%".into()], "0").unwrap();
    t.threshold_only = threshold_only;
    let stats = ["p50", "p99", "max"].map(|s| Stat::parse(s, "--stat").unwrap());
    Comparison::new(
        vec![group(0, "a"), group(1, "b")],
        &stats,
        t,
        Stat::Max,
        None,
    )
}

fn verdict(c: &Comparison, stat: &str) -> Verdict {
    let row = c.stats.iter().find(|r| r.stat.name() == stat).unwrap();
    row.changes[0].verdict
}

/// Three scenarios whose levels differ 4× and 16×, in a different mix per group (A mostly
/// fast runs, B mostly slow ones), all from one distribution per scenario: pooled, the runs of
/// B rank higher; matched by scenario, nothing differs. A scenario only B has is reported and
/// left out.
#[test]
fn same_distribution_in_another_scenario_mix_is_no_significant_difference() {
    let mut specs = Vec::new();
    for (scenario, base, n_a, n_b) in [
        ("1:1", 5_000, 5, 1),
        ("N:N", 20_000, 2, 2),
        ("M:N", 80_000, 1, 5),
    ] {
        specs.extend(std::iter::repeat_n(("a", scenario, base), n_a));
        specs.extend(std::iter::repeat_n(("b", scenario, base), n_b));
    }
    specs.push(("b", "only-b", 500_000));
    let runs = runs("mix", &specs);
    let c = compare(&runs, false);
    assert_eq!(c.strata_keys.len(), 1, "stratified by scenario");
    let s = &c.strata[0];
    assert_eq!(s.matched.len(), 3);
    assert_eq!(s.only_cand, ["only-b"]);
    for stat in ["p50", "p99", "max"] {
        assert_eq!(verdict(&c, stat), Verdict::NotSignificant, "{stat}");
        let test = c
            .stats
            .iter()
            .find(|r| r.stat.name() == stat)
            .unwrap()
            .changes[0]
            .test
            .clone()
            .unwrap();
        assert!(test.decidable() && !test.significant(), "{stat}: {test:?}");
    }
    // The peer: pooling the same runs (scenarios mixed, `only-b` excluded) calls the
    // mix a difference.
    let p50 = |k: &str| -> Vec<f64> {
        let runs = runs
            .iter()
            .filter(|r| r.tag("kernel") == Some(k) && r.tag("scenario") != Some("only-b"));
        rtscope_analysis::compare::model::per_run(runs, Stat::parse("p50", "").unwrap())
    };
    assert!(mann_whitney(&p50("a"), &p50("b")).unwrap().significant());
}

/// Every scenario 60 % slower in B: a regression, although each scenario holds only 3 runs per
/// side (no single scenario could be significant; together they are).
#[test]
fn a_shift_in_every_stratum_is_a_regression() {
    let mut specs = Vec::new();
    for (scenario, base) in [("1:1", 5_000), ("N:N", 20_000), ("M:N", 80_000)] {
        for _ in 0..3 {
            specs.push(("a", scenario, base));
            specs.push(("b", scenario, base * 8 / 5));
        }
    }
    let runs = runs("shift", &specs);
    let c = compare(&runs, false);
    for stat in ["p50", "p99"] {
        assert_eq!(verdict(&c, stat), Verdict::Regression, "{stat}");
    }
    let test = c.stats[0].changes[0].test.clone().unwrap();
    assert_eq!(test.sizes, [(3, 3); 3]);
    assert!(test.p < 0.001, "{test:?}");
    assert!(c.regressions() > 0);
}

/// One run per side: the test cannot decide, so a rise beyond the threshold is `higher
/// (untested)` and does not fail; `--fail-untested` makes it a failing `REGRESSION (untested)`,
/// and `--threshold-only` gives the threshold's verdicts without the test.
#[test]
fn one_run_per_side_is_an_untested_rise_that_fails_only_when_asked() {
    let runs = runs("single", &[("a", "1:1", 5_000), ("b", "1:1", 10_000)]);
    let c = compare(&runs, false);
    for stat in ["p50", "p99", "max"] {
        assert_eq!(verdict(&c, stat), Verdict::Higher, "{stat}");
        let ch = &c
            .stats
            .iter()
            .find(|r| r.stat.name() == stat)
            .unwrap()
            .changes[0];
        assert_eq!(ch.threshold_verdict, Verdict::Regression, "{stat}");
        assert!(ch.untested() && ch.untested_rise(), "{stat}");
        assert!(ch.test.as_ref().is_some_and(|t| !t.decidable()), "{stat}");
    }
    assert_eq!(c.regressions(), 0);
    let text = rtscope_present::compare_text::render(&c);
    assert!(text.contains("higher (untested, n=1 per side)"), "{text}");
    assert!(text.contains("verdict: no regression against A"), "{text}");
    assert!(text.contains("untested: B on p50, p99, max"), "{text}");
    assert!(!text.contains("worse"), "{text}");

    let mut strict = compare(&runs, false);
    strict.thresholds.fail_untested = true;
    let strict = Comparison::new(
        strict.groups,
        &["p50", "p99", "max"].map(|s| Stat::parse(s, "").unwrap()),
        strict.thresholds,
        Stat::Max,
        None,
    );
    assert_eq!(verdict(&strict, "p99"), Verdict::Regression);
    assert_eq!(strict.regressions(), 3);
    let text = rtscope_present::compare_text::render(&strict);
    assert!(
        text.contains("REGRESSION (untested, n=1 per side)"),
        "{text}"
    );

    let gate = compare(&runs, true);
    assert_eq!(verdict(&gate, "p99"), Verdict::Regression);
    assert!(gate.regressions() > 0);
}

/// One run per side the other way round: the fall is `lower (untested)`, the word of the rise
/// mirrored — not `better`, which only a test decides — and it never fails, with
/// `--fail-untested` too.
#[test]
fn one_run_per_side_is_an_untested_fall_that_never_fails() {
    let runs = runs("fall", &[("a", "1:1", 10_000), ("b", "1:1", 5_000)]);
    for fail_untested in [false, true] {
        let mut c = compare(&runs, false);
        c.thresholds.fail_untested = fail_untested;
        let c = Comparison::new(
            c.groups,
            &["p50", "p99", "max"].map(|s| Stat::parse(s, "").unwrap()),
            c.thresholds,
            Stat::Max,
            None,
        );
        for stat in ["p50", "p99", "max"] {
            assert_eq!(verdict(&c, stat), Verdict::Lower, "{stat}");
        }
        assert_eq!(c.regressions(), 0);
        let text = rtscope_present::compare_text::render(&c);
        assert!(text.contains("lower (untested, n=1 per side)"), "{text}");
        assert!(
            !text.contains("better") && !text.contains("untested: B"),
            "{text}"
        );
    }
}
