//! The comparison itself, as plain data that the text and JSON renderers print.

use super::change::Change;
use super::group::{distinct, Group};
use super::model::{Merged, RunData, Stat};
use super::significance::Test;
use super::strata::Pairing;
use super::verdict::{delta_pct, Thresholds, Verdict};
use rtscope_report::group::Key;
use rtscope_store::RunKind;

/// How a candidate's runs were matched with the baseline's.
#[derive(Debug, Clone)]
pub struct StrataSummary {
    /// The candidate group's name.
    pub group: String,
    /// Strata with runs on both sides, and their runs (baseline, candidate).
    pub matched: Vec<(String, usize, usize)>,
    /// Strata only the baseline has (left out of the test).
    pub only_base: Vec<String>,
    /// Strata only the candidate has (left out of the test).
    pub only_cand: Vec<String>,
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
    /// Each candidate group's verdict against A per load case (`Unknown` where a group has no
    /// run of the case), decided by the same rule as the statistics rows.
    pub verdicts: Vec<(String, Vec<Change>)>,
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
    /// The keys the runs are stratified by for the test (empty: one stratum).
    pub strata_keys: Vec<Key>,
    /// Per candidate, how its runs matched the baseline's.
    pub strata: Vec<StrataSummary>,
    /// The tail levels at a probability (`--tail-level`; `None`: not asked).
    pub tail: Option<super::tail::TailRow>,
    /// Every run compared is a `respond` run: its missed deadlines are events lost (named
    /// `lost`, [`Comparison::stat_name`]).
    pub events: bool,
    /// Every run's load case is its respond mechanism (runs of several mechanisms split into
    /// one operand each): the matrix's columns are mechanisms ([`Comparison::case_word`]).
    pub mechanisms: bool,
    /// Kernel functions whose charged time changed ([`Comparison::with_functions`]; `None`:
    /// not asked, or no run explained).
    pub functions: Option<super::functions::FunctionComparison>,
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
        let keys = super::strata::keys(&groups);
        let stats = stats
            .iter()
            .map(|&s| stat_row(&groups, s, &thresholds, &keys))
            .collect();
        let matrix = matrix(&groups, matrix_stat, rows_by, &thresholds, &keys);
        let differences = super::differences::differences(&groups);
        let mut all = groups.iter().flat_map(|g| &g.runs).peekable();
        let events = all.peek().is_some() && all.all(|r| r.kind == RunKind::Respond);
        let mechanisms = events
            && groups
                .iter()
                .flat_map(|g| &g.runs)
                .all(|r| r.case.is_some() && r.case.as_deref() == r.tag("mechanism"));
        let strata = groups[1..]
            .iter()
            .map(|g| {
                let p = pairing(&keys, &groups[0].runs, &g.runs);
                StrataSummary {
                    group: g.name.clone(),
                    matched: p
                        .matched
                        .iter()
                        .map(|(n, b, c)| (n.clone(), b.len(), c.len()))
                        .collect(),
                    only_base: p.only_base,
                    only_cand: p.only_cand,
                }
            })
            .collect();
        Comparison {
            differences,
            strata_keys: keys,
            strata,
            groups,
            stats,
            matrix,
            thresholds,
            tail: None,
            events,
            mechanisms,
            functions: None,
        }
    }

    /// The name a statistic is shown by: `lost` for [`Stat::Missed`] of respond runs (an
    /// event is lost, not late: no deadline is missed), else [`Stat::name`].
    pub fn stat_name(&self, stat: Stat) -> &'static str {
        match stat {
            Stat::Missed if self.events => "lost",
            _ => stat.name(),
        }
    }

    /// What the matrix's columns are: `mechanism` when each operand is one mechanism of a
    /// respond run (its load case), else `load case` (a respond campaign's load cases too).
    pub fn case_word(&self) -> &'static str {
        if self.mechanisms {
            "mechanism"
        } else {
            "load case"
        }
    }

    /// Adds the groups' tail levels at `probability` and their verdicts ([`super::tail`]);
    /// `assume_stationary` shows the levels of the untested histograms, verdicts untested.
    pub fn with_tail_level(mut self, probability: f64, assume_stationary: bool) -> Comparison {
        self.tail = Some(super::tail::TailRow::new(
            &self.groups,
            probability,
            &self.thresholds,
            assume_stationary,
        ));
        self
    }

    /// Adds the comparison by kernel function from what each run stored about kernel stacks
    /// (`stacks`, by run id: [`super::load::stacks`]); informative, it never changes the
    /// verdict.
    pub fn with_functions(
        mut self,
        stacks: &std::collections::HashMap<rtscope_store::RunId, super::functions::RunStacks>,
    ) -> Comparison {
        self.functions =
            super::functions::FunctionComparison::new(&self.groups, stacks, &self.strata_keys);
        self
    }

    /// The tail row's refused groups answered by the worst-segment envelope of their `--raw`
    /// runs ([`super::tail::TailRow::with_envelopes`]); nothing without a tail row.
    pub fn with_tail_envelopes(
        mut self,
        store: &rtscope_store::Store,
    ) -> Result<Comparison, rtscope_store::StoreError> {
        if let Some(row) = self.tail.take() {
            self.tail = Some(row.with_envelopes(store, &self.groups, &self.thresholds)?);
        }
        Ok(self)
    }

    /// The candidates' tail changes whose verdict satisfies `pred`, by group name, and the
    /// row's name (`tail@1e-9`).
    pub fn tail_where(&self, pred: fn(&Change) -> bool) -> (String, Vec<&str>) {
        let Some(t) = &self.tail else {
            return (String::new(), Vec::new());
        };
        let names = self.groups[1..]
            .iter()
            .zip(&t.changes)
            .filter(|(_, c)| pred(c))
            .map(|(g, _)| g.name.as_str())
            .collect();
        (format!("tail@{:e}", t.probability), names)
    }

    /// Number of (statistic, candidate) pairs judged `REGRESSION`, plus the (load case,
    /// candidate) cells of the matrix judged so: a regression in one load case fails the
    /// comparison even when the merged groups look better.
    pub fn regressions(&self) -> usize {
        let stats = self
            .stats
            .iter()
            .flat_map(|r| &r.changes)
            .filter(|c| c.verdict == Verdict::Regression)
            .count();
        stats
            + self
                .tail_where(|c| c.verdict == Verdict::Regression)
                .1
                .len()
            + self
                .case_regressions()
                .iter()
                .map(|(_, c)| c.len())
                .sum::<usize>()
    }

    /// For each candidate group with a regression in some load case of the matrix: its name
    /// and those load cases.
    pub fn case_regressions(&self) -> Vec<(String, Vec<String>)> {
        self.cases_where(|c| c.verdict == Verdict::Regression)
    }

    /// For each candidate group with some load case of the matrix whose verdict satisfies
    /// `pred`: its name and those load cases.
    pub fn cases_where(&self, pred: impl Fn(&Change) -> bool) -> Vec<(String, Vec<String>)> {
        let Some(m) = &self.matrix else {
            return Vec::new();
        };
        self.groups[1..]
            .iter()
            .zip(&m.verdicts)
            .filter_map(|(g, (_, cells))| {
                let cases: Vec<String> = m
                    .columns
                    .iter()
                    .zip(cells)
                    .filter(|(_, v)| pred(v))
                    .map(|(c, _)| c.clone())
                    .collect();
                (!cases.is_empty()).then(|| (g.name.clone(), cases))
            })
            .collect()
    }
}

/// The runs of a baseline and a candidate matched by stratum.
fn pairing<'a>(keys: &[Key], base: &'a [RunData], cand: &'a [RunData]) -> Pairing<'a> {
    let refs = |runs: &'a [RunData]| runs.iter().collect::<Vec<_>>();
    Pairing::new(keys, &refs(base), &refs(cand))
}

/// Whether the groups' histograms hold the same gaps for `stat` (a statistic of the
/// distribution compares every gap of a loop only with every gap, an rtla osnoise hist
/// import's noises over the threshold only with such noises).
fn comparable(merged: &[&Merged], stat: Stat) -> bool {
    !stat.of_distribution() || merged.iter().all(|m| m.gaps == merged[0].gaps)
}

fn stat_row(groups: &[Group], stat: Stat, t: &Thresholds, keys: &[Key]) -> StatRow {
    let merged: Vec<&Merged> = groups.iter().map(|g| &g.merged).collect();
    let same = comparable(&merged, stat);
    let values: Vec<Option<u64>> = groups
        .iter()
        .map(|g| g.merged.value(stat).filter(|_| same))
        .collect();
    let base = values[0];
    let changes = groups
        .iter()
        .zip(&values)
        .skip(1)
        .map(|(g, &cand)| {
            let supported = groups[0].merged.supports(stat) && g.merged.supports(stat);
            let test = same
                .then(|| pairing(keys, &groups[0].runs, &g.runs).test(stat))
                .flatten();
            change(t, t.judge(stat, base, cand, supported), base, cand, test)
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

/// A change with its verdict, decided by [`Thresholds::decide`] (the one rule for every cell).
fn change(
    t: &Thresholds,
    verdict: Verdict,
    base: Option<u64>,
    cand: Option<u64>,
    test: Option<Test>,
) -> Change {
    let (decided, basis) = t.decide(verdict, test.as_ref());
    Change {
        delta: base.zip(cand).map(|(b, c)| c as i128 - b as i128),
        delta_pct: base.zip(cand).and_then(|(b, c)| delta_pct(b, c)),
        verdict: decided,
        basis,
        threshold_verdict: verdict,
        test,
    }
}

fn matrix(
    groups: &[Group],
    stat: Stat,
    rows_by: Option<&str>,
    t: &Thresholds,
    keys: &[Key],
) -> Option<Matrix> {
    // A run selected by two groups counts once; a respond run's mechanisms share its id and
    // are told apart by their load case (each its own column).
    let mut unique: Vec<&RunData> = Vec::new();
    for r in groups.iter().flat_map(|g| &g.runs) {
        if !unique.iter().any(|u| u.id == r.id && u.case == r.case) {
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
        (m.totals.samples > 0 || m.totals.max_ns.is_some())
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
    let verdicts = case_verdicts(groups, stat, &columns, t, keys);
    Some(Matrix {
        stat,
        rows_by: rows_by.unwrap_or("group").to_string(),
        columns,
        rows,
        verdicts,
    })
}

/// Each candidate group against A, per load case: the threshold rule on the case's merged
/// runs, and the significance test on its per-run values (stratified by the other keys).
fn case_verdicts(
    groups: &[Group],
    stat: Stat,
    cases: &[String],
    t: &Thresholds,
    keys: &[Key],
) -> Vec<(String, Vec<Change>)> {
    let of_case = |g: &Group, case: &str| -> Vec<RunData> {
        g.runs
            .iter()
            .filter(|r| r.case.as_deref() == Some(case))
            .cloned()
            .collect()
    };
    groups[1..]
        .iter()
        .map(|g| {
            let cells = cases
                .iter()
                .map(|case| {
                    let (a, b) = (of_case(&groups[0], case), of_case(g, case));
                    if a.is_empty() || b.is_empty() {
                        return change(t, Verdict::Unknown, None, None, None);
                    }
                    let (ma, mb) = (Merged::of(&a), Merged::of(&b));
                    if !comparable(&[&ma, &mb], stat) {
                        return change(t, Verdict::Unknown, None, None, None);
                    }
                    let (va, vb) = (ma.value(stat), mb.value(stat));
                    let supported = ma.supports(stat) && mb.supports(stat);
                    let test = pairing(keys, &a, &b).test(stat);
                    change(t, t.judge(stat, va, vb, supported), va, vb, test)
                })
                .collect();
            (format!("{} vs A", g.name), cells)
        })
        .collect()
}
