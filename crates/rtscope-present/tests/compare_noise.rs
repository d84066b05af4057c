//! `compare` on noise groups (issue 33, item 4): the noise statistics (max single gap, share
//! available, noise per second, gap percentiles) under the one verdict rule, with untested
//! cells marked, and a noise group beside a latency group refused. Synthetic noise runs with
//! known gaps, written through the real store.

use rtscope_analysis::compare::analysis::Comparison;
use rtscope_analysis::compare::group::Group;
use rtscope_analysis::compare::group::{same_kind, GroupKind};
use rtscope_analysis::compare::model::{RunData, Stat, NOISE_STATS};
use rtscope_analysis::compare::verdict::{Basis, Thresholds, Verdict};
use rtscope_store::Store;
use rtscope_testkit::synthetic::{write_run, SyntheticRun};
use rtscope_testkit::synthetic_noise::{write_noise_run, SyntheticNoise};

fn store(name: &str) -> Store {
    let path = std::env::temp_dir().join(format!(
        "rtscope-analysis-noise-{}-{name}.db",
        std::process::id()
    ));
    for ext in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{ext}", path.display()));
    }
    Store::open(&path).unwrap()
}

/// `n` noise runs on one CPU at a 1 µs threshold, run `k` with the gaps `lens` each `10 × k`
/// ns longer (so the runs of a group differ a little and two groups do not overlap).
fn noise_runs(s: &mut Store, label: &str, n: u64, lens: &[u64]) -> Vec<RunData> {
    (0..n)
        .map(|k| {
            let spec = SyntheticNoise {
                label: format!("{label}-{k}"),
                cpus: vec![1],
                threshold_ns: 1000,
                iterations: 10_000,
                gaps: vec![lens
                    .iter()
                    .enumerate()
                    .map(|(i, l)| ((i as u64 + 1) * 100_000_000, l + 10 * k))
                    .collect()],
                explain_json: None,
                tags: Vec::new(),
            };
            let id = write_noise_run(s, &spec).unwrap();
            RunData::from_detail(&s.run(id).unwrap(), None)
        })
        .collect()
}

const STATS: [Stat; 4] = [
    Stat::Max,
    Stat::Available,
    Stat::NoisePerSec,
    Stat::Quantile(0.5, "p50"),
];

fn compare(a: Vec<RunData>, b: Vec<RunData>, fail_untested: bool) -> Comparison {
    let mut t = Thresholds::parse(&[], "100ns").unwrap();
    t.fail_untested = fail_untested;
    let groups = vec![Group::new(0, "quiet", a), Group::new(1, "noisy", b)];
    assert_eq!(same_kind(&groups).unwrap(), GroupKind::Noise);
    Comparison::new(groups, &STATS, t, Stat::Max, None)
}

fn verdicts(c: &Comparison) -> Vec<(&'static str, Verdict, Basis)> {
    c.stats
        .iter()
        .map(|r| (r.stat.name(), r.changes[0].verdict, r.changes[0].basis))
        .collect()
}

#[test]
fn five_noisier_runs_regress_on_max_available_and_noise_per_second_not_on_the_loop() {
    let mut s = store("five");
    let quiet = noise_runs(&mut s, "quiet", 5, &[1200]);
    let noisy = noise_runs(&mut s, "noisy", 5, &[1200, 1500, 1800]);
    // The values are the stored data's: run 0 of the quiet group spun 435,000 ns of loop
    // gaps (1,250 each of 40..=47 ns) and one 1,200 ns gap.
    let g = Group::new(0, "quiet", quiet[..1].to_vec());
    let ppb = |noise: u64, loop_ns: u64| (noise as f64 * 1e9 / (loop_ns + noise) as f64).round();
    assert_eq!(g.merged.value(Stat::Max), Some(1200));
    assert_eq!(
        g.merged.value(Stat::Available),
        Some(ppb(1200, 435_000) as u64)
    );
    assert_eq!(
        g.merged.value(Stat::NoisePerSec),
        g.merged.value(Stat::Available)
    );
    let c = compare(quiet.clone(), noisy.clone(), false);
    use Basis::Tested;
    assert_eq!(
        verdicts(&c),
        [
            ("max", Verdict::Regression, Tested),
            ("available", Verdict::Regression, Tested),
            ("noise/s", Verdict::Regression, Tested),
            ("p50", Verdict::Same, Tested),
        ]
    );
    // The other way round, less noise is better.
    let c = compare(noisy, quiet, false);
    let v: Vec<Verdict> = verdicts(&c).iter().map(|v| v.1).collect();
    assert_eq!(
        v,
        [
            Verdict::Better,
            Verdict::Better,
            Verdict::Better,
            Verdict::Same
        ]
    );
    assert_eq!(Stat::Available.show_delta(-1_000_000), "+0.1000 pts");
}

#[test]
fn one_run_each_is_untested_and_fails_only_with_fail_untested() {
    let mut s = store("one");
    let quiet = noise_runs(&mut s, "quiet", 1, &[1200]);
    let noisy = noise_runs(&mut s, "noisy", 1, &[1200, 1500, 1800]);
    let c = compare(quiet.clone(), noisy.clone(), false);
    let row = &c.stats[1];
    assert_eq!(row.stat, Stat::Available);
    assert!(row.changes[0].untested());
    assert_eq!(row.changes[0].verdict, Verdict::Higher);
    assert_eq!(c.regressions(), 0);
    let c = compare(quiet, noisy, true);
    assert_eq!(c.stats[1].changes[0].verdict, Verdict::Regression);
    assert_eq!(c.regressions(), 3);
}

#[test]
fn a_noise_group_beside_a_latency_group_is_refused_naming_both_kinds() {
    let mut s = store("mixed");
    let noise = noise_runs(&mut s, "quiet", 1, &[1200]);
    let spec = SyntheticRun {
        samples: 1000,
        monitors: false,
        ..SyntheticRun::default()
    };
    let id = write_run(&mut s, &spec).unwrap();
    let latency = vec![RunData::from_detail(&s.run(id).unwrap(), None)];
    let groups = vec![
        Group::new(0, "label:quiet-0", noise),
        Group::new(1, "label:synthetic", latency),
    ];
    let e = same_kind(&groups).unwrap_err().to_string();
    assert!(
        e.contains("A ('label:quiet-0') holds runs of kind noise"),
        "{e}"
    );
    assert!(
        e.contains("B ('label:synthetic') holds runs of kind measure"),
        "{e}"
    );
    assert!(NOISE_STATS.contains(&Stat::Available));
}

/// `runs` as an rtla import would record them: the histogram of its noises over the
/// threshold (osnoise hist: `histogram`, no runtime), or the source's per-CPU runtime and
/// noise (osnoise top: `per_cpu`).
fn as_rtla(s: &Store, runs: &[RunData], source: &str) -> Vec<RunData> {
    runs.iter()
        .map(|r| {
            let mut d = s.run(r.id).unwrap();
            d.config_json = format!(r#"{{"source": {source}}}"#);
            RunData::from_detail(&d, None)
        })
        .collect()
}

#[test]
fn rtla_imports_compare_on_what_they_hold_and_never_on_other_gaps() {
    let mut s = store("rtla");
    let quiet = noise_runs(&mut s, "quiet", 5, &[1200]);
    let noisy = noise_runs(&mut s, "noisy", 5, &[1200, 1500, 1800]);
    let hist = r#"{"histogram": "noise_over_threshold", "per_cpu": [{"noise_ns": 5000, "noise_events": 3}]}"#;
    let hist_runs = as_rtla(&s, &noisy, hist);
    // Every gap of a loop beside only the noises over the threshold: the distribution's
    // statistics are not comparable, so unknown (no verdict); max still is.
    let c = compare(quiet.clone(), hist_runs.clone(), false);
    let p50 = &c.stats[3];
    assert_eq!(
        p50.values,
        [None, None],
        "p50 of every gap vs of the noises"
    );
    assert_eq!(p50.changes[0].verdict, Verdict::Unknown);
    assert!(p50.changes[0].test.is_none());
    assert_eq!(c.stats[0].changes[0].verdict, Verdict::Regression, "max");
    // rtla hist records no runtime: the shares are unknown, not 0.
    assert_eq!(c.stats[1].values[1], None);
    assert!(rtscope_present::compare_text::render(&c).contains("not comparable"));
    // Two groups of noises over the threshold compare their percentiles.
    let c = compare(as_rtla(&s, &quiet, hist), hist_runs, false);
    assert!(c.stats[3].values.iter().all(Option::is_some));
    // rtla top's runtime and noise are the shares of its group.
    let top = r#"{"per_cpu": [{"runtime_ns": 1000000000, "noise_ns": 1000}]}"#;
    let g = Group::new(0, "top", as_rtla(&s, &quiet[..1], top));
    assert_eq!(g.merged.value(Stat::Available), Some(1000));
}
