//! What a window's worst wake-up was charged to, as the watch keeps it for its row, its
//! alert and /metrics: the largest categories, the threads of one command together, with
//! their PIDs. A leaf: the explainer fills it, the ledger of asked wake-ups carries it.

use rtscope_core::Nanos;

/// Causes kept per explained wake-up.
pub const MAX_CAUSES: usize = 3;
/// PIDs listed per cause; the others are counted.
pub const MAX_PIDS: usize = 4;

/// What a wake-up was charged to: a category, the threads of one command together.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cause {
    /// The category's label, a thread named by its command (`thread culprit`), escaped.
    pub name: String,
    /// The PIDs of its threads, largest charge first (at most [`MAX_PIDS`]; none for a cause
    /// that is no thread).
    pub pids: Vec<i32>,
    /// PIDs beyond the list.
    pub more_pids: usize,
    /// The time charged to it.
    pub time: Nanos,
}

impl Cause {
    /// The name with its PIDs, for people: `thread culprit (PID 4711)`, `thread stress-ng (3
    /// PIDs: 811, 812, 815)`, `irq eth0 (irq 24)`.
    pub fn text(&self) -> String {
        let list: Vec<String> = self.pids.iter().map(i32::to_string).collect();
        let more = match self.more_pids {
            0 => String::new(),
            n => format!(" +{n} more"),
        };
        match self.pids.len() + self.more_pids {
            0 => self.name.clone(),
            1 => format!("{} (PID {})", self.name, list.join(", ")),
            n => format!("{} ({n} PIDs: {}{more})", self.name, list.join(", ")),
        }
    }
}
