//! A group of runs: one operand of a comparison.

use super::model::{Merged, RunData};
use rtscope_common::error::UsageError;
use rtscope_store::RunKind;

/// What a group's runs measured: wake-up latency, or OS noise (a busy loop's gaps).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupKind {
    /// Wake-up latency (`measure`, `cyclictest`, `import`, `respond`, …).
    Latency,
    /// OS noise (`noise`, oslat imports).
    Noise,
}

impl GroupKind {
    fn of(kind: RunKind) -> GroupKind {
        if kind == RunKind::Noise {
            GroupKind::Noise
        } else {
            GroupKind::Latency
        }
    }
}

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
        let maxes = self.runs.iter().filter_map(|r| r.totals.max_ns);
        Some((maxes.clone().min()?, maxes.max()?))
    }
}

/// The kind all groups share; a noise group beside a latency group (or a group holding
/// both) is refused: a gap of a busy loop is not a wake-up latency.
pub fn same_kind(groups: &[Group]) -> Result<GroupKind, UsageError> {
    let mut first: Option<(&Group, RunKind)> = None;
    for g in groups {
        for r in &g.runs {
            let Some((f, k)) = first else {
                first = Some((g, r.kind));
                continue;
            };
            if GroupKind::of(k) != GroupKind::of(r.kind) {
                let side = |g: &Group, k: RunKind| {
                    format!(
                        "{} ('{}') holds runs of kind {}",
                        g.name,
                        g.selector,
                        k.as_str()
                    )
                };
                return Err(UsageError::new(format!(
                    "cannot compare noise runs with latency runs: {}, {} (run {})",
                    side(f, k),
                    side(g, r.kind),
                    r.id
                ))
                .hint("a noise run holds a busy loop's gaps, not wake-up latencies: compare like with like"));
            }
        }
    }
    Ok(first.map_or(GroupKind::Latency, |(_, k)| GroupKind::of(k)))
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
