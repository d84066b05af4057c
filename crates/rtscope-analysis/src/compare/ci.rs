//! A comparison's verdicts as lab CI test cases (`rtscope compare … --ci-output`): one per
//! statistic of every candidate group against the baseline (failed on a `REGRESSION`) and one
//! per load case in which a candidate regresses or rises on too few runs to test (passed
//! unless `--fail-untested`). Pass or fail is the verdict of the one rule
//! (`Thresholds::decide`); rtscope-formats writes the cases as JUnit, LAVA or KCIDB.

use crate::compare::analysis::Comparison;
use crate::compare::model::Stat;
use crate::compare::verdict::Verdict;
use rtscope_formats::compare::Case;

/// The verdicts of `c`.
pub fn cases(c: &Comparison) -> Vec<Case> {
    let base = &c.groups[0].selector;
    let mut out = Vec::new();
    for row in &c.stats {
        for (i, ch) in row.changes.iter().enumerate() {
            // Latencies in µs; the missed-deadline rate (ppb) in % of the deadlines; a noise
            // group's share available in % (its value is the share lost, in ppb).
            let (unit, scale) = match row.stat {
                Stat::NoisePerSec => ("us/s", 1000.0),
                s if s.is_rate() => ("%", 1e7),
                _ => ("us", 1000.0),
            };
            let value = row.values.get(i + 1).copied().flatten();
            let shown = |v: u64| match row.stat {
                Stat::Available => 100.0 - v as f64 / scale,
                _ => v as f64 / scale,
            };
            let delta = ch
                .delta_pct
                .map_or_else(String::new, |p| format!(" ({p:+.1}%)"));
            out.push(Case {
                candidate: c.groups[i + 1].selector.clone(),
                stat: row.stat.name().into(),
                passed: ch.verdict != Verdict::Regression,
                value: value.map(|v| (shown(v), unit)),
                message: format!(
                    "{}: {} against {base} {}{delta}: {}",
                    row.stat.name(),
                    row.stat.show(value),
                    row.stat.show(row.values.first().copied().flatten()),
                    ch.label(true)
                ),
            });
        }
    }
    // Load cases of the matrix: each regression, and each rise the test could not decide
    // (failing only with --fail-untested), with the verdict as the text prints it.
    if let Some(m) = &c.matrix {
        for (g, (_, cells)) in c.groups[1..].iter().zip(&m.verdicts) {
            let candidate = g.selector.clone();
            for (lc, ch) in m.columns.iter().zip(cells) {
                let failing = ch.verdict == Verdict::Regression;
                if !failing && !ch.untested_rise() {
                    continue;
                }
                out.push(Case {
                    message: format!(
                        "load case {lc}: {} of {candidate} against {base}: {}",
                        m.stat.name(),
                        ch.label(true)
                    ),
                    candidate: candidate.clone(),
                    stat: format!("case {lc}"),
                    passed: !failing,
                    value: None,
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::group::Group;
    use crate::compare::model::RunData;
    use crate::compare::verdict::Thresholds;
    use rtscope_store::Store;
    use rtscope_testkit::synthetic::{write_run, SyntheticRun};

    /// Kernel `a` 5 µs in both load cases; kernel `b` twice that in `idle`, half in `load`: one
    /// run per kernel and case, so every verdict is untested.
    fn comparison(fail_untested: bool) -> Comparison {
        let path = std::env::temp_dir().join(format!(
            "rtscope-analysis-ci-cases-{}-{fail_untested}.db",
            std::process::id()
        ));
        let _ = std::fs::remove_file(&path);
        let mut store = Store::open(&path).unwrap();
        let mut group = |kernel: &str, cases: [(&str, u64); 2]| {
            let runs = cases.map(|(case, base_ns)| {
                let spec = SyntheticRun {
                    label: format!("{kernel}-{case}"),
                    cpus: 1,
                    samples: 5_000,
                    base_ns,
                    seed: base_ns,
                    monitors: false,
                    tags: vec![
                        ("kernel".into(), kernel.into()),
                        ("case".into(), case.into()),
                    ],
                    ..SyntheticRun::default()
                };
                let id = write_run(&mut store, &spec).unwrap();
                RunData::from_detail(&store.run(id).unwrap(), None)
            });
            runs.to_vec()
        };
        let a = group("a", [("idle", 5_000), ("load", 5_001)]);
        let b = group("b", [("idle", 10_000), ("load", 2_500)]);
        drop(store);
        let _ = std::fs::remove_file(&path);
        let mut t = Thresholds::parse(&[], "1us").unwrap();
        t.fail_untested = fail_untested;
        let groups = vec![Group::new(0, "kernel=a", a), Group::new(1, "kernel=b", b)];
        Comparison::new(groups, &[Stat::Max], t, Stat::Max, None)
    }

    /// An untested rise passes with its words (`higher (untested)`), failing only with
    /// `--fail-untested`; an untested fall is no case of its own and never fails.
    #[test]
    fn untested_rises_pass_unless_asked_and_falls_never_fail() {
        let c = comparison(false);
        let all = cases(&c);
        let idle = all
            .iter()
            .find(|c| c.stat == "case idle")
            .expect("the rise");
        assert!(idle.passed);
        assert!(
            idle.message.ends_with("higher (untested, n=1 per side)"),
            "{idle:?}"
        );
        assert!(all.iter().all(|c| c.stat != "case load"), "{all:?}");
        assert!(all.iter().all(|c| c.passed), "{all:?}");
        let strict = cases(&comparison(true));
        let idle = strict.iter().find(|c| c.stat == "case idle").unwrap();
        assert!(!idle.passed);
        assert!(
            idle.message
                .ends_with("REGRESSION (untested, n=1 per side)"),
            "{idle:?}"
        );
        assert!(strict.iter().all(|c| c.stat != "case load"), "{strict:?}");
        for word in ["worse", "undecided"] {
            assert!(
                all.iter().chain(&strict).all(|c| !c.message.contains(word)),
                "{word}"
            );
        }
    }
}
