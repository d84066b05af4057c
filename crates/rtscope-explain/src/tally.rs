//! Time by kernel function and by folded stack over many spikes: each spike's charged time
//! ([`charged_ns`]) under the function its stack or handler names ([`function_of`]) and under
//! its whole folded stack ([`FoldedTable`]), bounded, never dropped. Pure data, no I/O.

use crate::folded::{FoldedStack, FoldedTable};
use crate::model::Attribution;
use crate::stack::{charged_ns, function_of, FunctionTime};
use std::collections::BTreeMap;

/// The most functions a [`FunctionTable`] keeps by name; later new ones are summed as
/// [`OTHER_FUNCTIONS`].
pub const MAX_FUNCTIONS: usize = 256;

/// The row of the functions beyond [`MAX_FUNCTIONS`].
pub const OTHER_FUNCTIONS: &str = "(other functions)";

/// Time by kernel function over every traced spike of a run (not only the kept worst ones),
/// bounded: [`MAX_FUNCTIONS`] names, the rest summed in one row, never dropped; and the same
/// time by folded stack ([`FoldedTable`]), for a flame graph of every spike.
#[derive(Debug, Clone, Default)]
pub struct FunctionTable {
    rows: BTreeMap<String, (u64, u64)>,
    stacks: FoldedTable,
}

impl FunctionTable {
    /// Counts `a`'s [`charged_ns`] under its [`function_of`] and its folded stack (a spike
    /// with neither a stack nor a leading handler, or whose stack's task was charged nothing,
    /// is not counted).
    pub fn add(&mut self, a: &Attribution) {
        let ns = charged_ns(a);
        let Some(f) = function_of(a).filter(|_| ns > 0) else {
            return;
        };
        let key = if self.rows.contains_key(f) || self.rows.len() < MAX_FUNCTIONS {
            f
        } else {
            OTHER_FUNCTIONS
        };
        let e = self.rows.entry(key.to_string()).or_default();
        e.0 = e.0.saturating_add(ns);
        e.1 += 1;
        self.stacks.add(a, ns);
    }

    /// The rows, largest time first (ties by name).
    pub fn rows(&self) -> Vec<FunctionTime> {
        let mut v: Vec<FunctionTime> = self
            .rows
            .iter()
            .map(|(function, &(ns, spikes))| FunctionTime {
                function: function.clone(),
                ns,
                spikes,
            })
            .collect();
        v.sort_by(|a, b| b.ns.cmp(&a.ns).then(a.function.cmp(&b.function)));
        v
    }

    /// The folded stacks of the spikes counted, in name order.
    pub fn stacks(&self) -> Vec<FoldedStack> {
        self.stacks.rows()
    }
}

/// Sums `attributions`' charged time by the function their stack or handler names
/// ([`function_of`], [`charged_ns`]), largest first (ties by name); spikes with neither are
/// left out (they are counted by the caller's coverage).
pub fn by_function<'a>(
    attributions: impl IntoIterator<Item = &'a Attribution>,
) -> Vec<FunctionTime> {
    let mut t = FunctionTable::default();
    for a in attributions {
        t.add(a);
    }
    t.rows()
}

/// Folded stacks for a flame graph of `attributions` ([`crate::folded`]): root first, each
/// weighted by its [`charged_ns`]; equal stacks summed, in name order.
pub fn folded_weights<'a>(
    attributions: impl IntoIterator<Item = &'a Attribution>,
) -> Vec<FoldedStack> {
    let mut t = FunctionTable::default();
    for a in attributions {
        t.add(a);
    }
    t.stacks()
}
