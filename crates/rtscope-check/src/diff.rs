//! Which checked settings differ between groups of runs, for `rtscope compare`: a run records
//! its audit's `(check id, setting)` pairs; two groups whose runs disagree on a comparable
//! setting (governor, SMT, kernel, isolcpus, …) measured different systems, and the comparison
//! says so before anyone reads a latency difference as a kernel's merit.

use crate::CheckId;
use std::collections::BTreeSet;

impl CheckId {
    /// Whether runs that differ in this setting measured differently configured systems.
    /// Thermal readings change from minute to minute and are not compared.
    pub fn comparable(self) -> bool {
        !matches!(self, CheckId::Thermal)
    }
}

/// A check whose setting differs between groups.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SettingDifference {
    /// The check id (`governor`, `smt`, …).
    pub check: String,
    /// Per group (in the order given): its name and the distinct settings its runs recorded,
    /// sorted; `(not recorded)` for runs without the check.
    pub values: Vec<(String, Vec<String>)>,
}

/// The `(check id, setting)` pairs one run recorded.
pub type RunSettings = Vec<(String, String)>;

/// A group of runs to compare: its name and its runs' settings.
pub type SettingsGroup = (String, Vec<RunSettings>);

/// What a run without the check (or with an unreadable setting) shows.
pub const NOT_RECORDED: &str = "(not recorded)";

/// The comparable checks whose settings differ between `groups`: each group is a name and its
/// runs, each run its recorded `(check id, setting)` pairs. A check differs when the groups'
/// sets of settings are not all equal. Checks no run recorded and unknown ids are skipped;
/// checks are returned in [`CheckId::ALL`] order.
pub fn differing_settings(groups: &[SettingsGroup]) -> Vec<SettingDifference> {
    let mut out = Vec::new();
    for check in CheckId::ALL.iter().filter(|c| c.comparable()) {
        let id = check.id();
        let recorded = groups
            .iter()
            .flat_map(|(_, runs)| runs)
            .any(|run| run.iter().any(|(c, _)| c == id));
        if !recorded {
            continue;
        }
        let values: Vec<(String, Vec<String>)> = groups
            .iter()
            .map(|(name, runs)| {
                let set: BTreeSet<String> = runs
                    .iter()
                    .map(|run| {
                        run.iter()
                            .find(|(c, _)| c == id)
                            .map_or_else(|| NOT_RECORDED.to_owned(), |(_, s)| s.clone())
                    })
                    .collect();
                (name.clone(), set.into_iter().collect())
            })
            .collect();
        if values.windows(2).any(|w| w[0].1 != w[1].1) {
            out.push(SettingDifference {
                check: id.to_owned(),
                values,
            });
        }
    }
    out
}

impl crate::Audit {
    /// The `(check id, setting)` pairs a run records (checks whose setting could be read).
    pub fn settings(&self) -> Vec<(String, String)> {
        self.findings
            .iter()
            .filter_map(|f| Some((f.check.id().to_owned(), f.setting.clone()?)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    #[test]
    fn finds_the_settings_that_differ() {
        let stock = vec![
            run(&[
                ("governor", "performance"),
                ("smt", "on"),
                ("thermal", "max 51.0 °C"),
            ]),
            run(&[
                ("governor", "performance"),
                ("smt", "on"),
                ("thermal", "max 55.0 °C"),
            ]),
        ];
        let rt = vec![run(&[
            ("governor", "powersave"),
            ("smt", "on"),
            ("preempt_rt", "6.12 PREEMPT_RT"),
        ])];
        let d = differing_settings(&[("stock".into(), stock), ("rt".into(), rt)]);
        let ids: Vec<&str> = d.iter().map(|x| x.check.as_str()).collect();
        assert_eq!(
            ids,
            ["preempt_rt", "governor"],
            "thermal is not compared, smt agrees"
        );
        assert_eq!(
            d[0].values[0],
            ("stock".to_owned(), vec![NOT_RECORDED.to_owned()])
        );
        assert_eq!(
            d[1].values[1],
            ("rt".to_owned(), vec!["powersave".to_owned()])
        );
    }

    #[test]
    fn equal_groups_and_unknown_ids_give_nothing() {
        let a = vec![run(&[("smt", "off"), ("nonsense", "1")])];
        let b = vec![run(&[("smt", "off"), ("nonsense", "2")])];
        assert!(differing_settings(&[("a".into(), a), ("b".into(), b)]).is_empty());
        assert!(differing_settings(&[]).is_empty());
    }
}
