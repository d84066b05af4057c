//! The coarse tier: without tracefs, a spike is explained by what the monitors saw on its CPU
//! in the sample interval around it — interrupt and softirq counts, the busiest threads and the
//! steal time. The session feeds [`CoarseSample`]s built from its monitor readings; the
//! explainer keeps the last `capacity` of them.

use crate::model::{NotTraced, Softirq, Spike};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// A thread the monitors saw on a CPU (they do not know its priority).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CoarseThread {
    /// Its name.
    pub comm: String,
    /// Thread ID.
    pub tid: i32,
}

impl std::fmt::Display for CoarseThread {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.comm.escape_debug(), self.tid)
    }
}

/// What the monitors saw on one CPU over one interval.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CoarseSample {
    /// The CPU.
    pub cpu: usize,
    /// Interval start (ns, CLOCK_MONOTONIC).
    pub start_ns: u64,
    /// Interval end (ns, CLOCK_MONOTONIC).
    pub end_ns: u64,
    /// Interrupts taken on that CPU, by name (`/proc/interrupts` deltas).
    pub irqs: Vec<(String, u64)>,
    /// Softirqs run on that CPU (`/proc/softirqs` deltas).
    pub softirqs: Vec<(Softirq, u64)>,
    /// Steal time of that CPU (ns; `/proc/stat`).
    pub steal_ns: u64,
    /// Threads that last ran on that CPU with their CPU time in the interval (ns).
    pub threads: Vec<(CoarseThread, u64)>,
}

/// The coarse explanation of a spike.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CoarseExplanation {
    /// The spike.
    pub spike: Spike,
    /// The sample interval it fell in.
    pub start_ns: u64,
    /// End of that interval.
    pub end_ns: u64,
    /// The most frequent interrupts (up to 3).
    pub top_irqs: Vec<(String, u64)>,
    /// The most frequent softirqs (up to 3).
    pub top_softirqs: Vec<(Softirq, u64)>,
    /// Steal time in the interval (ns).
    pub steal_ns: u64,
    /// The busiest other threads (up to 3).
    pub top_threads: Vec<(CoarseThread, u64)>,
    /// Why the trace did not explain the spike, when a trace was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_traced: Option<NotTraced>,
}

/// The recent samples.
#[derive(Debug, Clone)]
pub struct CoarseContext {
    samples: VecDeque<CoarseSample>,
    capacity: usize,
}

fn top<T: Clone>(v: &[(T, u64)], n: usize) -> Vec<(T, u64)> {
    let mut v: Vec<(T, u64)> = v.iter().filter(|x| x.1 > 0).cloned().collect();
    v.sort_by_key(|x| std::cmp::Reverse(x.1));
    v.truncate(n);
    v
}

impl CoarseContext {
    /// Keeps at most `capacity` samples (all CPUs together).
    pub fn new(capacity: usize) -> CoarseContext {
        CoarseContext {
            samples: VecDeque::new(),
            capacity: capacity.max(1),
        }
    }

    /// Adds a sample.
    pub fn push(&mut self, s: CoarseSample) {
        self.samples.push_back(s);
        while self.samples.len() > self.capacity {
            self.samples.pop_front();
        }
    }

    /// Whether a sample of the spike's CPU already covers its wake-up.
    pub fn covers(&self, spike: &Spike) -> bool {
        self.samples
            .iter()
            .any(|s| s.cpu == spike.cpu && s.end_ns >= spike.wakeup_ns)
    }

    /// The explanation from the sample of the spike's CPU that contains its wake-up; `None`
    /// when no sample does. The measuring thread itself is left out of the busiest threads.
    pub fn explain(&self, spike: &Spike) -> Option<CoarseExplanation> {
        let s = self.samples.iter().find(|s| {
            s.cpu == spike.cpu && s.start_ns <= spike.wakeup_ns && spike.wakeup_ns <= s.end_ns
        })?;
        let others: Vec<(CoarseThread, u64)> = s
            .threads
            .iter()
            .filter(|t| t.0.tid != spike.tid)
            .cloned()
            .collect();
        Some(CoarseExplanation {
            spike: *spike,
            start_ns: s.start_ns,
            end_ns: s.end_ns,
            top_irqs: top(&s.irqs, 3),
            top_softirqs: top(&s.softirqs, 3),
            steal_ns: s.steal_ns,
            top_threads: top(&others, 3),
            not_traced: None,
        })
    }
}
