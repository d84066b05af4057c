//! Grouping runs by what differs among them: the tags and campaign coordinates (scenario, load
//! case) that take more than one value over the selected runs. Repeats (runs equal in every
//! key) form one group; runs of different kernels or load cases never merge.
//!
//! A group is named by its values, tags as `key=value` and campaign coordinates bare:
//! `kernel=rt · N:N · stress-m4`.

use crate::model::RunData;

/// What runs can be grouped by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Key {
    /// A campaign's scenario.
    Scenario,
    /// The load case (campaign or `case` tag).
    Case,
    /// A tag (other than `case`).
    Tag(String),
}

impl Key {
    /// Parses a `--group-by` name: `scenario`, `case`, or a tag key.
    pub fn parse(name: &str) -> Key {
        match name.trim() {
            "scenario" => Key::Scenario,
            "case" | "load_case" => Key::Case,
            other => Key::Tag(other.to_string()),
        }
    }

    /// The name users type.
    pub fn name(&self) -> &str {
        match self {
            Key::Scenario => "scenario",
            Key::Case => "case",
            Key::Tag(t) => t,
        }
    }

    /// The value of this key for a run (`-` when absent).
    pub fn value(&self, run: &RunData) -> String {
        let v = match self {
            Key::Scenario => run
                .campaign
                .as_ref()
                .map(|(_, r)| r.scenario.clone())
                .unwrap_or_default(),
            Key::Case => run.case(),
            Key::Tag(t) => run.tag(t).unwrap_or_default().to_string(),
        };
        if v.is_empty() {
            "-".into()
        } else {
            v
        }
    }

    /// The value as shown in a group name: `key=value` for tags, bare for coordinates.
    pub fn show(&self, run: &RunData) -> String {
        match self {
            Key::Tag(t) => format!("{t}={}", self.value(run)),
            _ => self.value(run),
        }
    }
}

/// Tags that only number repeats of one measurement (a campaign's `repeat`, the `round` tag
/// docs/compare.md recommends): the default grouping never splits runs by them, so their runs
/// form one group whose spread is drawn. The one list of them (`compare` reads it too, through
/// `rtscope_analysis::select::is_repeat_key`).
pub const REPEAT_KEYS: &[&str] = &["repeat", "round", "rep", "iteration"];

/// Whether tag `key` only numbers repeats ([`REPEAT_KEYS`]).
pub fn is_repeat_key(key: &str) -> bool {
    REPEAT_KEYS.contains(&key.trim())
}

/// Every key that takes more than one value over `runs`: scenario, then tags in first-seen
/// order (except tags that number repeats, [`REPEAT_KEYS`], and outcome tags,
/// [`rtscope_common::names::OUTCOME_TAGS`]), then the load case (so names read
/// `kernel=rt · idle`).
pub fn differing(runs: &[RunData]) -> Vec<Key> {
    let mut candidates = vec![Key::Scenario];
    for r in runs {
        for (k, _) in &r.detail.summary.tags {
            let key = Key::parse(k);
            // A tag that numbers repeats, or says how a run ended, never makes a group.
            let outcome = rtscope_common::names::OUTCOME_TAGS.contains(&k.as_str());
            if !candidates.contains(&key) && key != Key::Case && !is_repeat_key(k) && !outcome {
                candidates.push(key);
            }
        }
    }
    candidates.push(Key::Case);
    candidates
        .into_iter()
        .filter(|k| {
            let first = runs.first().map(|r| k.value(r));
            runs.iter().any(|r| Some(k.value(r)) != first)
        })
        .collect()
}

/// Runs grouped by keys.
#[derive(Debug, Clone)]
pub struct Grouping {
    /// The keys the groups differ in.
    pub keys: Vec<Key>,
    /// The groups, in order of first appearance.
    pub groups: Vec<Group>,
    /// The key chosen for the rows of grids and tables (`--rows`), as an index into `keys`.
    pub rows: Option<usize>,
}

/// Runs equal in every key.
#[derive(Debug, Clone)]
pub struct Group {
    /// `kernel=rt · idle`, or empty when there is one group.
    pub name: String,
    /// Each key's value (as [`Key::value`]), in the order of [`Grouping::keys`].
    pub values: Vec<String>,
    /// Indices of its runs in the slice grouped.
    pub runs: Vec<usize>,
}

impl Grouping {
    /// Groups `runs` by `keys` (or, when `None`, by the keys that differ).
    pub fn new(runs: &[RunData], keys: Option<&[Key]>) -> Grouping {
        let keys = keys.map_or_else(|| differing(runs), <[Key]>::to_vec);
        let mut groups: Vec<Group> = Vec::new();
        for (i, r) in runs.iter().enumerate() {
            let values: Vec<String> = keys.iter().map(|k| k.value(r)).collect();
            match groups.iter_mut().find(|g| g.values == values) {
                Some(g) => g.runs.push(i),
                None => {
                    let shown: Vec<String> = keys.iter().map(|k| k.show(r)).collect();
                    groups.push(Group {
                        name: shown.join(" · "),
                        values,
                        runs: vec![i],
                    });
                }
            }
        }
        Grouping {
            keys,
            groups,
            rows: None,
        }
    }

    /// Groups `runs` for a grid with `rows` as the row key and `cols` as the column keys
    /// (`--rows case --cols kernel`); `keys` (`--group-by`) or else the keys that differ fill
    /// in what is not given. The columns keep their order, the row key comes last.
    pub fn arranged(
        runs: &[RunData],
        keys: Option<&[Key]>,
        rows: Option<&Key>,
        cols: Option<&[Key]>,
    ) -> Grouping {
        let mut chosen: Vec<Key> = match (keys, cols) {
            (Some(k), _) => k.to_vec(),
            (None, Some(c)) => c.to_vec(),
            (None, None) => differing(runs),
        };
        for c in cols.unwrap_or_default() {
            if !chosen.contains(c) {
                chosen.push(c.clone());
            }
        }
        let row = rows.cloned().or_else(|| {
            // Only columns given: the rows are the load case or scenario that differs.
            let auto = differing(runs);
            [Key::Case, Key::Scenario]
                .into_iter()
                .find(|k| auto.contains(k) && !chosen.contains(k))
                .filter(|_| cols.is_some())
        });
        if let Some(r) = &row {
            chosen.retain(|k| k != r);
            chosen.push(r.clone());
        }
        let mut g = Grouping::new(runs, Some(&chosen));
        g.rows = row.and_then(|r| g.keys.iter().position(|k| *k == r));
        g
    }

    /// The name of run `i` in legends and titles: its group's name, with `#k` for the k-th
    /// repeat of a group of several runs; the run's own name when the runs do not differ.
    pub fn run_name(&self, runs: &[RunData], i: usize) -> String {
        let Some(g) = self.groups.iter().find(|g| g.runs.contains(&i)) else {
            return runs[i].name();
        };
        if g.name.is_empty() {
            return runs[i].name();
        }
        match g.runs.iter().position(|&j| j == i) {
            Some(k) if g.runs.len() > 1 => format!("{} #{}", g.name, k + 1),
            _ => g.name.clone(),
        }
    }

    /// Whether some group holds more than one run (repeats).
    pub fn has_repeats(&self) -> bool {
        self.groups.iter().any(|g| g.runs.len() > 1)
    }

    /// The index of the key that lays out rows (load case, else scenario) when another key
    /// makes the columns.
    pub fn row_key(&self) -> Option<usize> {
        if self.keys.len() < 2 {
            return None;
        }
        if self.rows.is_some() {
            return self.rows;
        }
        let pos = |k: &Key| self.keys.iter().position(|x| x == k);
        pos(&Key::Case).or_else(|| pos(&Key::Scenario))
    }

    /// The distinct values of key `row` in the groups, in the order they first appear.
    pub fn row_values(&self, row: usize) -> Vec<&str> {
        let mut rows: Vec<&str> = Vec::new();
        for x in &self.groups {
            if !rows.contains(&x.values[row].as_str()) {
                rows.push(&x.values[row]);
            }
        }
        rows
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::run_with;

    #[test]
    fn groups_by_the_tags_and_cases_that_differ() {
        let runs = vec![
            run_with(1, &[("kernel", "std"), ("case", "idle"), ("host", "a")]),
            run_with(2, &[("kernel", "rt"), ("case", "idle"), ("host", "a")]),
            run_with(3, &[("kernel", "std"), ("case", "cpu"), ("host", "a")]),
            run_with(4, &[("kernel", "rt"), ("case", "cpu"), ("host", "a")]),
            run_with(
                5,
                &[
                    ("kernel", "rt"),
                    ("case", "cpu"),
                    ("host", "a"),
                    ("repeat", "2"),
                ],
            ),
        ];
        let g = Grouping::new(&runs, None);
        assert_eq!(g.keys, vec![Key::Tag("kernel".into()), Key::Case]);
        let names: Vec<&str> = g.groups.iter().map(|g| g.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "kernel=std · idle",
                "kernel=rt · idle",
                "kernel=std · cpu",
                "kernel=rt · cpu"
            ]
        );
        assert_eq!(g.groups[3].runs, vec![3, 4]);
        assert_eq!(g.run_name(&runs, 4), "kernel=rt · cpu #2");
        assert_eq!(g.row_key(), Some(1));
        // A `round` tag numbers repeats: 4 rounds of 2 kernels make 2 groups of 4 repeats.
        let rounds: Vec<RunData> = (0..8)
            .map(|i| {
                let kernel = if i % 2 == 0 { "std" } else { "rt" };
                let round = (i / 2 + 1).to_string();
                run_with(20 + i, &[("kernel", kernel), ("round", &round)])
            })
            .collect();
        let r = Grouping::new(&rounds, None);
        assert_eq!(r.keys, vec![Key::Tag("kernel".into())]);
        assert_eq!(r.groups.len(), 2);
        assert!(r.groups.iter().all(|g| g.runs.len() == 4) && r.has_repeats());
        assert!(REPEAT_KEYS.iter().all(|k| is_repeat_key(k)) && !is_repeat_key("kernel"));
        let by = Grouping::new(&runs, Some(&[Key::parse("kernel")]));
        assert_eq!(by.groups.len(), 2);
        assert_eq!(by.groups[1].runs, vec![1, 3, 4]);
        // --rows kernel --cols case: the kernels become the rows, the cases the columns.
        let t = Grouping::arranged(&runs, None, Some(&Key::parse("kernel")), Some(&[Key::Case]));
        assert_eq!(t.keys, vec![Key::Case, Key::Tag("kernel".into())]);
        assert_eq!(t.row_key(), Some(1));
        assert_eq!(t.groups[0].name, "idle · kernel=std");
        let m = crate::matrix::MaxMatrix::of(&runs, &t).unwrap();
        assert_eq!(m.rows_by, "kernel");
        assert_eq!(m.columns, ["idle", "cpu"]);
        // --cols kernel alone: rows are the load case that differs.
        let c = Grouping::arranged(&runs, None, None, Some(&[Key::parse("kernel")]));
        assert_eq!(c.row_key(), Some(1));
        assert_eq!(c.keys[1], Key::Case);
    }

    #[test]
    fn how_a_run_ended_never_makes_a_group() {
        // Repeats of one cell whose until_tail outcomes differ stay one group.
        let runs = vec![
            run_with(1, &[("case", "idle"), ("until_tail", "narrow")]),
            run_with(2, &[("case", "idle"), ("until_tail", "refused")]),
            run_with(3, &[("case", "cpu"), ("until_tail", "wide")]),
        ];
        let g = Grouping::new(&runs, None);
        assert_eq!(g.keys, vec![Key::Case]);
        assert_eq!(g.groups[0].runs, vec![0, 1]);
    }
}
