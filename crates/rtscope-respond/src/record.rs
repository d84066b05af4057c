//! What a respond measurement reports: one [`Row`] per IPC mechanism on a placement, or per
//! GPIO interval for one edge direction. The session (rtscope-session's `respond`) records
//! each row as one "thread" of a run of kind `respond`, so `rtscope runs`, `report`, `export`
//! and `compare` read it like a measure run.

use rtscope_core::{Histogram, Stats};
use rtscope_engine::Sample;

/// One reported row.
#[derive(Debug, Clone)]
pub struct Row {
    /// `eventfd`, `timestamp-to-wakeup` …
    pub source: String,
    /// `0→1 cross`, `rising` …
    pub path: String,
    /// The receiver's / responder's CPU, when pinned.
    pub cpu: Option<usize>,
    /// Its policy name (`fifo`, `other` …).
    pub policy: &'static str,
    /// Its priority.
    pub priority: i32,
    /// Time between events or stimulus periods (ns; 0 for an external stimulus).
    pub interval_ns: u64,
    /// Statistics; `missed` holds the lost events.
    pub stats: Stats,
    /// The lossless histogram.
    pub histogram: Histogram,
    /// Kept slow events (`cycle` is the sequence number, `time` on CLOCK_MONOTONIC).
    pub events: Vec<Sample>,
    /// What the JSON shows besides the statistics (counts, placement, lines).
    pub extra: serde_json::Value,
}
