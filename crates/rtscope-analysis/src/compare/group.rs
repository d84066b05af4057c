//! A group of runs: one operand of a comparison.

use super::model::{Merged, RunData};

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

/// Distinct values in first-seen order.
pub(crate) fn distinct<'a>(items: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for i in items {
        if !out.iter().any(|o| o == i) {
            out.push(i.to_string());
        }
    }
    out
}
