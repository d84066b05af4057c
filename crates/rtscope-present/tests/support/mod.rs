//! What several of these test files build: a complete run as compare reads it.

use rtscope_analysis::compare::model::{RunData, RunSettings, Totals};
use rtscope_core::Histogram;
use rtscope_store::{RunId, RunKind, RunStatus};

/// A complete run `id` of `samples` wake-ups, `hist` holding those it placed (as
/// rtscope-analysis's own tests build one).
pub fn run(id: RunId, hist: Histogram, samples: u64, max: Option<u64>) -> RunData {
    RunData {
        id,
        label: None,
        status: RunStatus::Complete,
        tags: vec![],
        kernel: None,
        campaign: None,
        case: None,
        scenario: None,
        started: String::new(),
        totals: Totals {
            min_ns: hist.min().map(|n| n.0),
            hist,
            samples,
            max_ns: max,
            sum_ns: 0.0,
            missed: 0,
            deadlines: samples,
        },
        run: RunSettings::default(),
        settings: Vec::new(),
        kind: RunKind::Measure,
        noise: None,
        noises_only: false,
    }
}
