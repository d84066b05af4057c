//! What makes the compared groups different systems or different measurements, apart from what
//! is being compared: checked settings of the preflight audit (governor, SMT, kernel,
//! isolcpus …, via rtscope-check) and run settings (interval, priority, threads, policy).
//! A latency difference between groups that differ here may come from these, not the kernel.

use super::group::Group;
use super::model::RunData;
use rtscope_check::{differing_settings, SettingsGroup};
use std::collections::BTreeSet;

/// A setting whose values differ between groups.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Difference {
    /// `check` (a checked system setting) or `run` (a run setting).
    pub kind: DifferenceKind,
    /// The setting: a check id (`governor`) or `interval`, `priority`, `threads`, `policy`.
    pub setting: String,
    /// Per group: its name (`A`) and the distinct values of its runs, sorted.
    pub values: Vec<(String, Vec<String>)>,
}

/// Which kind of setting differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DifferenceKind {
    /// A setting of the system, from the runs' stored preflight audits.
    Check,
    /// A setting of the measurement itself.
    Run,
    /// When the runs were measured: the groups' runs do not interleave in time.
    Time,
}

impl DifferenceKind {
    /// `check` or `run`.
    pub fn as_str(self) -> &'static str {
        match self {
            DifferenceKind::Check => "check",
            DifferenceKind::Run => "run",
            DifferenceKind::Time => "time",
        }
    }
}

/// How a run setting is read from a run.
type ReadSetting = fn(&RunData) -> String;

/// The run settings compared: name and how to read it from a run.
const RUN_SETTINGS: [(&str, ReadSetting); 4] = [
    ("interval", |r| r.run.interval.clone()),
    ("priority", |r| r.run.priority.clone()),
    ("threads", |r| r.run.threads.to_string()),
    ("policy", |r| r.run.policy.clone()),
];

/// The differences between `groups` (none with fewer than two groups). Runs without a stored
/// audit take part in the run settings only; checks no run recorded are skipped.
pub fn differences(groups: &[Group]) -> Vec<Difference> {
    if groups.len() < 2 {
        return Vec::new();
    }
    let audited: Vec<SettingsGroup> = groups
        .iter()
        .map(|g| {
            let runs = g
                .runs
                .iter()
                .filter(|r| !r.settings.is_empty())
                .map(|r| r.settings.clone())
                .collect();
            (g.name.clone(), runs)
        })
        .collect();
    let mut out: Vec<Difference> = Vec::new();
    if audited
        .iter()
        .all(|(_, runs): &SettingsGroup| !runs.is_empty())
    {
        out.extend(
            differing_settings(&audited)
                .into_iter()
                .map(|d| Difference {
                    kind: DifferenceKind::Check,
                    setting: d.check,
                    values: d.values,
                }),
        );
    }
    for (name, read) in RUN_SETTINGS {
        let values: Vec<(String, Vec<String>)> = groups
            .iter()
            .filter(|g| !g.runs.is_empty())
            .map(|g| {
                let set: BTreeSet<String> =
                    g.runs.iter().map(read).filter(|v| !v.is_empty()).collect();
                (g.name.clone(), set.into_iter().collect())
            })
            .filter(|(_, v): &(String, Vec<String>)| !v.is_empty())
            .collect();
        if values.windows(2).any(|w| w[0].1 != w[1].1) {
            out.push(Difference {
                kind: DifferenceKind::Run,
                setting: name.to_owned(),
                values,
            });
        }
    }
    out.extend(time_blocks(groups));
    out
}

/// `2026-11-22T15:23:25.975569059Z` to the second: `2026-11-22T15:23:25Z`.
fn second(t: &str) -> String {
    match t.get(..19) {
        Some(head) if t.len() > 20 => format!("{head}Z"),
        _ => t.to_string(),
    }
}

/// Groups of two runs or more measured in separate blocks of time (each group's first and last
/// start do not overlap any other's): a drift of the machine between the blocks (load,
/// temperature) is then confounded with what is compared, whatever a test says.
fn time_blocks(groups: &[Group]) -> Option<Difference> {
    let spans: Vec<(String, String, String)> = groups
        .iter()
        .map(|g| {
            let started = g.runs.iter().map(|r| r.started.clone());
            let (first, last) = (started.clone().min()?, started.max()?);
            (g.runs.len() >= 2 && !first.is_empty()).then(|| (g.name.clone(), first, last))
        })
        .collect::<Option<_>>()?;
    let apart = spans
        .iter()
        .enumerate()
        .all(|(i, a)| spans[i + 1..].iter().all(|b| a.2 < b.1 || b.2 < a.1));
    (groups.len() >= 2 && apart).then(|| Difference {
        kind: DifferenceKind::Time,
        setting: "start".into(),
        values: spans
            .into_iter()
            .map(|(g, first, last)| (g, vec![format!("{} … {}", second(&first), second(&last))]))
            .collect(),
    })
}

/// `governor differs: A performance, B powersave` (values of a group joined with `/`).
pub fn describe(d: &Difference) -> String {
    let parts: Vec<String> = d
        .values
        .iter()
        .map(|(g, v)| format!("{g} {}", v.join(" / ")))
        .collect();
    format!("{} differs: {}", d.setting, parts.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::model::{RunSettings, Totals};
    use rtscope_store::RunStatus;

    fn run(id: i64, interval: &str, governor: Option<&str>) -> RunData {
        RunData {
            id,
            label: None,
            status: RunStatus::Complete,
            tags: Vec::new(),
            kernel: None,
            campaign: None,
            case: None,
            scenario: None,
            started: format!("2026-11-22T03:00:{id:02}Z"),
            totals: Totals::default(),
            run: RunSettings {
                interval: interval.into(),
                priority: "90".into(),
                threads: 2,
                policy: "fifo".into(),
            },
            settings: governor
                .map(|g| vec![("governor".into(), g.into()), ("smt".into(), "off".into())])
                .unwrap_or_default(),
            kind: rtscope_store::RunKind::Measure,
            noise: None,
            noises_only: false,
        }
    }

    #[test]
    fn names_differing_checked_and_run_settings() {
        let a = Group::new(
            0,
            "kernel=stock",
            vec![
                run(1, "1ms", Some("performance")),
                run(2, "1ms", Some("performance")),
            ],
        );
        let b = Group::new(1, "kernel=rt", vec![run(3, "200us", Some("powersave"))]);
        let d = differences(&[a, b]);
        let text: Vec<String> = d
            .iter()
            .map(|d| format!("{} {}", d.kind.as_str(), describe(d)))
            .collect();
        assert_eq!(
            text,
            [
                "check governor differs: A performance, B powersave",
                "run interval differs: A 1ms, B 200us"
            ]
        );
    }

    #[test]
    fn groups_measured_in_separate_blocks_of_time_are_named() {
        let a = Group::new(0, "a", vec![run(1, "1ms", None), run(2, "1ms", None)]);
        let b = Group::new(1, "b", vec![run(3, "1ms", None), run(4, "1ms", None)]);
        let d = differences(&[a, b]);
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].kind, DifferenceKind::Time);
        let interleaved = Group::new(0, "a", vec![run(1, "1ms", None), run(4, "1ms", None)]);
        let other = Group::new(1, "b", vec![run(2, "1ms", None), run(3, "1ms", None)]);
        assert!(differences(&[interleaved, other]).is_empty());
    }

    #[test]
    fn runs_without_an_audit_compare_run_settings_only() {
        let a = Group::new(0, "a", vec![run(1, "1ms", None)]);
        let b = Group::new(1, "b", vec![run(2, "1ms", Some("powersave"))]);
        assert!(differences(&[a.clone(), b]).is_empty());
        assert!(
            differences(&[a]).is_empty(),
            "one group: nothing to compare"
        );
    }
}
