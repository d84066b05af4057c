//! Issue 25, item 5: verdicts never gate on untested noise. The design of the seed 002:
//! two groups (`build=x`, `build=y`) × 5 load cases × 2 rounds, interleaved. Each load case
//! holds 1 run per side in each of 2 rounds, too few for the significance test (smallest p
//! 2·(1/2)² = 0.5), so every per-case cell is `untested`; the statistics rows (10 strata of 1
//! vs 1, smallest p 2/2¹⁰) are tested.

use rtscope_analysis::compare::analysis::Comparison;
use rtscope_analysis::compare::change::Change;
use rtscope_analysis::compare::group::Group;
use rtscope_analysis::compare::model::{RunData, Stat};
use rtscope_analysis::compare::verdict::{Thresholds, Verdict};
use rtscope_store::Store;
use rtscope_testkit::synthetic::{write_run, SyntheticRun};

const CASES: [&str; 5] = ["idle", "hackbench", "stress-m2", "stress-m4", "stress-m8"];
const STATS: [&str; 5] = ["p50", "p99", "p99.99", "max", "missed"];

/// The seed-002 design: for each round, each load case, build x then build y (interleaved);
/// build y's typical latency is `y_permille`/1000 of x's. `seed` offsets every run's seed.
fn design(seed: u64, y_permille: u64) -> Vec<RunData> {
    let path = std::env::temp_dir().join(format!(
        "rtscope-analysis-untested-{}-{seed}-{y_permille}.db",
        std::process::id()
    ));
    for ext in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{ext}", path.display()));
    }
    let mut store = Store::open(&path).unwrap();
    let mut out = Vec::new();
    for round in ["1", "2"] {
        for (i, case) in CASES.iter().enumerate() {
            for (build, permille) in [("x", 1000), ("y", y_permille)] {
                let base = 5_000 * (i as u64 + 1);
                let spec = SyntheticRun {
                    label: format!("{build}-{case}-{round}"),
                    cpus: 1,
                    samples: 20_000,
                    base_ns: base * permille / 1000,
                    seed: seed * 1_000 + out.len() as u64,
                    monitors: false,
                    tags: vec![
                        ("build".into(), build.into()),
                        ("round".into(), round.into()),
                        ("case".into(), (*case).into()),
                    ],
                    ..SyntheticRun::default()
                };
                let id = write_run(&mut store, &spec).unwrap();
                out.push(RunData::from_detail(&store.run(id).unwrap(), None));
            }
        }
    }
    drop(store);
    for ext in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{ext}", path.display()));
    }
    out
}

/// `build=x` against `build=y` with the default statistics and threshold (10 %, 1 µs).
fn compare(runs: &[RunData], fail_untested: bool) -> Comparison {
    let group = |i: usize, b: &str| {
        let of = runs
            .iter()
            .filter(|r| r.tag("build") == Some(b))
            .cloned()
            .collect();
        Group::new(i, &format!("build={b}"), of)
    };
    let mut t = Thresholds::parse(&[], "1us").unwrap();
    t.fail_untested = fail_untested;
    let stats = STATS.map(|s| Stat::parse(s, "--stat").unwrap());
    Comparison::new(
        vec![group(0, "x"), group(1, "y")],
        &stats,
        t,
        Stat::Max,
        None,
    )
}

fn cells(c: &Comparison) -> &[Change] {
    &c.matrix.as_ref().unwrap().verdicts[0].1
}

/// The words are symmetric and say what was tested, in every cell: an untested change beyond
/// the threshold is `lower` or `higher` by its sign (or a `REGRESSION` with `--fail-untested`),
/// never `better` or `worse`; a tested one is never `lower` or `higher`.
fn words_say_what_was_tested(c: &Comparison) {
    let all = c.stats.iter().flat_map(|r| &r.changes).chain(cells(c));
    for ch in all {
        let rise = ch.delta.is_some_and(|d| d > 0);
        match ch.verdict {
            Verdict::Lower => assert!(ch.untested() && !rise, "{ch:?}"),
            Verdict::Higher => assert!(ch.untested() && rise, "{ch:?}"),
            Verdict::Better | Verdict::Worse => assert!(!ch.untested(), "{ch:?}"),
            _ => {}
        }
    }
}

#[test]
fn the_same_kernel_twice_never_fails_on_untested_load_cases() {
    let mut untested_rises = 0;
    for seed in 1..=6 {
        let runs = design(seed, 1000);
        let c = compare(&runs, false);
        let m = c.matrix.as_ref().unwrap();
        assert_eq!(m.columns, CASES);
        for ch in cells(&c) {
            assert!(
                ch.untested(),
                "seed {seed}: every load case is untested: {ch:?}"
            );
            assert_ne!(ch.verdict, Verdict::Regression, "seed {seed}: {ch:?}");
            assert_eq!(ch.test.as_ref().unwrap().sizes, [(1, 1), (1, 1)]);
            untested_rises += usize::from(ch.untested_rise());
        }
        for r in &c.stats {
            let ch = &r.changes[0];
            assert!(!ch.untested(), "seed {seed}: {} is tested", r.stat.name());
            assert_eq!(ch.test.as_ref().unwrap().sizes, [(1, 1); 10]);
        }
        assert!(c.case_regressions().is_empty(), "seed {seed}");
        assert_eq!(c.regressions(), 0, "seed {seed}: {}", text(&c));
        words_say_what_was_tested(&c);
        let out = text(&c);
        let verdict_row = out
            .lines()
            .find(|l| l.starts_with("B vs A ") && !l.contains("tested within"))
            .unwrap();
        assert_eq!(
            verdict_row.matches("(untested)").count(),
            5,
            "seed {seed}: {out}"
        );
        assert!(out.contains("verdict: no regression against A"), "{out}");

        // --fail-untested: every untested rise of a load case fails, and only those.
        let strict = compare(&runs, true);
        let rises: Vec<&str> = m
            .columns
            .iter()
            .zip(cells(&c))
            .filter(|(_, ch)| ch.untested_rise())
            .map(|(case, _)| case.as_str())
            .collect();
        let failed = strict.case_regressions();
        match rises.as_slice() {
            [] => assert!(failed.is_empty()),
            r => assert_eq!(
                failed,
                [("B".to_string(), r.iter().map(|s| s.to_string()).collect())]
            ),
        }
        for ch in cells(&strict).iter().filter(|ch| ch.untested_rise()) {
            assert_eq!(ch.verdict, Verdict::Regression);
            assert!(ch.label(false).starts_with("REGRESSION (untested)"));
        }
        words_say_what_was_tested(&strict);
    }
    // The design does produce noise beyond the threshold (the failing gate).
    assert!(untested_rises > 0);
}

#[test]
fn a_clear_rise_on_enough_runs_is_a_regression_regardless() {
    for seed in 1..=3 {
        let runs = design(seed, 1600);
        let c = compare(&runs, false);
        for stat in ["p50", "p99"] {
            let row = c.stats.iter().find(|r| r.stat.name() == stat).unwrap();
            let ch = &row.changes[0];
            assert_eq!(
                ch.verdict,
                Verdict::Regression,
                "seed {seed} {stat}: {ch:?}"
            );
            assert!(!ch.untested());
            assert!(ch.test.as_ref().unwrap().significant());
        }
        assert!(c.regressions() >= 2);
        // The load cases stay untested: higher, reported, not failing.
        for ch in cells(&c) {
            assert!(ch.untested());
            assert_ne!(ch.verdict, Verdict::Regression);
        }
        words_say_what_was_tested(&c);
    }
}

#[test]
fn missed_deadlines_compare_as_a_rate_whatever_the_run_length() {
    let mut runs = design(9, 1000);
    for r in &mut runs {
        // Build y's runs twice as long with twice the misses: the same 1 % of deadlines.
        let (missed, samples) = if r.tag("build") == Some("y") {
            (2_020, 199_980)
        } else {
            (1_010, 99_990)
        };
        r.totals.missed = missed;
        r.totals.deadlines = missed + samples;
    }
    let c = compare(&runs, false);
    let row = c.stats.iter().find(|r| r.stat.is_rate()).unwrap();
    assert_eq!(row.values, [Some(10_000_000), Some(10_000_000)]);
    assert_eq!(row.stat.show(row.values[0]), "1.00%");
    assert_eq!(row.stat.unit(), "ppb");
    let ch = &row.changes[0];
    assert_eq!((ch.delta, ch.verdict), (Some(0), Verdict::Same));
}

fn text(c: &Comparison) -> String {
    rtscope_present::compare_text::render(c)
}
