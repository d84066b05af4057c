//! Strata: the runs of two groups matched like with like before they are tested.
//!
//! A group often holds runs of several scenarios (1:1, N:N, M:N) or load cases. Their levels
//! differ by far more than the kernels do, so a test that pools them ranks scenarios, not
//! groups. The keys that take more than one value *within* a group — the campaign scenario, the
//! load case, and any other tag but `repeat`, `campaign` and an outcome (`until_tail`) — make
//! the strata; runs equal in every key form one stratum, strata are matched between the groups
//! by their values, and a stratum found in one group only is reported and left out of the test.

use super::group::{distinct, Group};
use super::model::{per_run, RunData, Stat};
use super::significance::{van_elteren, Test};
use rtscope_report::group::Key;

/// A stratum key's value for a run (`-` when absent); keys are the report's grouping keys.
fn value(key: &Key, r: &RunData) -> String {
    let v = match key {
        Key::Scenario => r.scenario.as_deref().or(r.tag("scenario")),
        Key::Case => r.case.as_deref(),
        Key::Tag(t) => r.tag(t),
    };
    v.unwrap_or("-").to_string()
}

/// The keys that take more than one value within some group: scenario, then other tags in
/// first-seen order, then the load case; a key equal to an earlier one in every run is left
/// out (its strata would be named twice: `eventfd 1->1 same · eventfd 1->1 same`).
pub fn keys(groups: &[Group]) -> Vec<Key> {
    let mut candidates = vec![Key::Scenario];
    for (k, _) in groups.iter().flat_map(|g| &g.runs).flat_map(|r| &r.tags) {
        let plain = !["repeat", "campaign", "scenario", "case"].contains(&k.as_str())
            && !rtscope_common::names::OUTCOME_TAGS.contains(&k.as_str());
        if plain && !candidates.contains(&Key::Tag(k.clone())) {
            candidates.push(Key::Tag(k.clone()));
        }
    }
    candidates.push(Key::Case);
    let varying: Vec<Key> = candidates
        .into_iter()
        .filter(|k| {
            groups.iter().any(|g| {
                let first = g.runs.first().map(|r| value(k, r));
                g.runs.iter().any(|r| Some(value(k, r)) != first)
            })
        })
        .collect();
    let runs = || groups.iter().flat_map(|g| &g.runs);
    // A key that holds an earlier key's value in every run names the same strata twice (a
    // respond mechanism is both its `mechanism` tag and its load case): kept once.
    let mut kept: Vec<Key> = Vec::new();
    for k in varying {
        if !kept
            .iter()
            .any(|e| runs().all(|r| value(e, r) == value(&k, r)))
        {
            kept.push(k);
        }
    }
    kept
}

/// A stratum's name: its values joined with ` · ` (`N:N · idle`), `all` without keys.
pub fn label(keys: &[Key], r: &RunData) -> String {
    if keys.is_empty() {
        return "all".into();
    }
    keys.iter()
        .map(|k| value(k, r))
        .collect::<Vec<_>>()
        .join(" · ")
}

/// The runs of a baseline and a candidate, matched by stratum.
#[derive(Debug, Clone, Default)]
pub struct Pairing<'a> {
    /// Strata with runs on both sides: name, baseline runs, candidate runs.
    pub matched: Vec<(String, Vec<&'a RunData>, Vec<&'a RunData>)>,
    /// Strata with baseline runs only.
    pub only_base: Vec<String>,
    /// Strata with candidate runs only.
    pub only_cand: Vec<String>,
}

impl<'a> Pairing<'a> {
    /// Matches `base` and `cand` runs by their stratum under `keys`.
    pub fn new(keys: &[Key], base: &[&'a RunData], cand: &[&'a RunData]) -> Pairing<'a> {
        let mut p = Pairing::default();
        let names = |runs: &[&RunData]| {
            let all: Vec<String> = runs.iter().map(|r| label(keys, r)).collect();
            distinct(all.iter().map(String::as_str))
        };
        let (nb, nc) = (names(base), names(cand));
        let of = |runs: &[&'a RunData], n: &str| -> Vec<&'a RunData> {
            runs.iter()
                .copied()
                .filter(|r| label(keys, r) == n)
                .collect()
        };
        for n in &nb {
            if nc.contains(n) {
                p.matched.push((n.clone(), of(base, n), of(cand, n)));
            } else {
                p.only_base.push(n.clone());
            }
        }
        p.only_cand = nc.into_iter().filter(|n| !nb.contains(n)).collect();
        p
    }

    /// The stratified test of `stat`'s per-run values (runs where it is unknown left out).
    pub fn test(&self, stat: Stat) -> Option<Test> {
        let strata: Vec<(Vec<f64>, Vec<f64>)> = self
            .matched
            .iter()
            .map(|(_, b, c)| {
                (
                    per_run(b.iter().copied(), stat),
                    per_run(c.iter().copied(), stat),
                )
            })
            .collect();
        van_elteren(&strata)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::model::tests_support::run;

    #[test]
    fn how_a_run_ended_is_no_stratum() {
        let tagged = |id, tags: &[(&str, &str)]| {
            let mut r = run(id, rtscope_core::Histogram::new(), 0, None);
            r.tags = tags.iter().map(|&(k, v)| (k.into(), v.into())).collect();
            r
        };
        let a = Group::new(
            0,
            "kernel=std",
            vec![
                tagged(1, &[("host", "x"), ("until_tail", "narrow")]),
                tagged(2, &[("host", "y"), ("until_tail", "refused")]),
            ],
        );
        let b = Group::new(1, "kernel=rt", vec![tagged(3, &[("until_tail", "wide")])]);
        assert_eq!(keys(&[a, b]), vec![Key::Tag("host".into())]);
    }
}
