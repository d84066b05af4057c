//! The comparison itself, as plain data that the text and JSON renderers print.

use super::model::{Merged, RunData, Stat};
use super::verdict::{delta_pct, Thresholds, Verdict};

/// One operand: the runs a selector matched.
#[derive(Debug, Clone)]
pub struct Group {
    /// `A`, `B`, … (`A` is the baseline).
    pub name: String,
    /// The selector as typed.
    pub selector: String,
    /// The runs, in selection order.
    pub runs: Vec<RunData>,
    /// The runs merged.
    pub merged: Merged,
}

impl Group {
    /// A group of runs named by its position (0 → `A`).
    pub fn new(index: usize, selector: &str, runs: Vec<RunData>) -> Group {
        let merged = Merged::of(&runs);
        Group {
            name: group_name(index),
            selector: selector.to_string(),
            runs,
            merged,
        }
    }

    /// Distinct values of a field over the runs, in first-seen order.
    pub fn distinct(&self, field: impl Fn(&RunData) -> Option<&str>) -> Vec<String> {
        distinct(self.runs.iter().filter_map(field))
    }

    /// The smallest and largest per-run max, ns (run-to-run spread).
    pub fn run_max_spread(&self) -> Option<(u64, u64)> {
        let maxes = self.runs.iter().filter_map(|r| r.max_ns);
        Some((maxes.clone().min()?, maxes.max()?))
    }
}

fn group_name(i: usize) -> String {
    let letter = (b'A' + (i % 26) as u8) as char;
    if i < 26 {
        letter.to_string()
    } else {
        format!("{letter}{}", i / 26)
    }
}

/// One candidate's statistic against the baseline.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    /// Candidate − baseline (ns, or a count), when both are known.
    pub delta: Option<i128>,
    /// The change in % of the baseline, when the baseline is known and not 0.
    pub delta_pct: Option<f64>,
    /// The verdict.
    pub verdict: Verdict,
}

/// One statistic over all groups.
#[derive(Debug, Clone)]
pub struct StatRow {
    /// The statistic.
    pub stat: Stat,
    /// Its threshold, %.
    pub threshold_pct: f64,
    /// Its floor (ns, or a count).
    pub floor: u64,
    /// The value of each group.
    pub values: Vec<Option<u64>>,
    /// Each candidate group (2nd on) against the baseline.
    pub changes: Vec<Change>,
}

/// The load-case matrix: rows × load cases, one statistic per cell.
#[derive(Debug, Clone)]
pub struct Matrix {
    /// The cell statistic.
    pub stat: Stat,
    /// `group`, or the tag key the rows are.
    pub rows_by: String,
    /// Load cases, in first-seen order.
    pub columns: Vec<String>,
    /// Row name and one cell per column (`None`: no run, or unknown).
    pub rows: Vec<(String, Vec<Option<u64>>)>,
}

/// Everything `compare` reports.
#[derive(Debug, Clone)]
pub struct Comparison {
    /// The groups; the first is the baseline.
    pub groups: Vec<Group>,
    /// One row per statistic.
    pub stats: Vec<StatRow>,
    /// The load-case matrix, when runs carry load cases.
    pub matrix: Option<Matrix>,
    /// The thresholds used.
    pub thresholds: Thresholds,
    /// Checked system settings and run settings that differ between the groups.
    pub differences: Vec<super::differences::Difference>,
}

impl Comparison {
    /// Compares the groups on `stats`; the matrix shows `matrix_stat` by `rows_by` (a tag key,
    /// or `None` for one row per group).
    pub fn new(
        groups: Vec<Group>,
        stats: &[Stat],
        thresholds: Thresholds,
        matrix_stat: Stat,
        rows_by: Option<&str>,
    ) -> Comparison {
        let stats = stats
            .iter()
            .map(|&s| stat_row(&groups, s, &thresholds))
            .collect();
        let matrix = matrix(&groups, matrix_stat, rows_by);
        let differences = super::differences::differences(&groups);
        Comparison {
            differences,
            groups,
            stats,
            matrix,
            thresholds,
        }
    }

    /// Number of (statistic, candidate) pairs judged `REGRESSION`.
    pub fn regressions(&self) -> usize {
        self.stats
            .iter()
            .flat_map(|r| &r.changes)
            .filter(|c| c.verdict == Verdict::Regression)
            .count()
    }
}

fn stat_row(groups: &[Group], stat: Stat, t: &Thresholds) -> StatRow {
    let values: Vec<Option<u64>> = groups.iter().map(|g| g.merged.value(stat)).collect();
    let base = values[0];
    let changes = groups
        .iter()
        .zip(&values)
        .skip(1)
        .map(|(g, &cand)| {
            let supported = groups[0].merged.supports(stat) && g.merged.supports(stat);
            Change {
                delta: base.zip(cand).map(|(b, c)| c as i128 - b as i128),
                delta_pct: base.zip(cand).and_then(|(b, c)| delta_pct(b, c)),
                verdict: t.judge(stat, base, cand, supported),
            }
        })
        .collect();
    StatRow {
        stat,
        threshold_pct: t.pct(stat),
        floor: t.floor(stat),
        values,
        changes,
    }
}

fn distinct<'a>(items: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for i in items {
        if !out.iter().any(|o| o == i) {
            out.push(i.to_string());
        }
    }
    out
}

fn matrix(groups: &[Group], stat: Stat, rows_by: Option<&str>) -> Option<Matrix> {
    let mut unique: Vec<&RunData> = Vec::new();
    for r in groups.iter().flat_map(|g| &g.runs) {
        if !unique.iter().any(|u| u.id == r.id) {
            unique.push(r);
        }
    }
    let all = || unique.iter().copied();
    let columns = distinct(all().filter_map(|r| r.case.as_deref()));
    if columns.is_empty() {
        return None;
    }
    let cell = |runs: &[&RunData], case: &str| {
        let m = Merged::of(
            runs.iter()
                .copied()
                .filter(|r| r.case.as_deref() == Some(case)),
        );
        (m.samples > 0 || m.max_ns.is_some())
            .then(|| m.value(stat))
            .flatten()
    };
    let row = |name: String, runs: Vec<&RunData>| {
        let cells = columns.iter().map(|c| cell(&runs, c)).collect();
        (name, cells)
    };
    let rows = match rows_by {
        None => groups
            .iter()
            .map(|g| {
                row(
                    format!("{} {}", g.name, g.selector),
                    g.runs.iter().collect(),
                )
            })
            .collect(),
        Some(key) => {
            let values = distinct(all().map(|r| r.tag(key).unwrap_or("(none)")));
            values
                .into_iter()
                .map(|v| {
                    let runs = all()
                        .filter(|r| r.tag(key).unwrap_or("(none)") == v)
                        .collect();
                    row(v, runs)
                })
                .collect()
        }
    };
    Some(Matrix {
        stat,
        rows_by: rows_by.unwrap_or("group").to_string(),
        columns,
        rows,
    })
}
