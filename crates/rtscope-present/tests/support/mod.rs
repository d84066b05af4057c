//! What several of these test files build: a complete run as compare reads it.

use rtscope_analysis::compare::model::RunData;
use rtscope_core::Histogram;
use rtscope_store::RunId;

/// A complete run `id` of `samples` wake-ups, `hist` holding those it placed (as
/// rtscope-analysis's own tests build one).
pub fn run(id: RunId, hist: Histogram, samples: u64, max: Option<u64>) -> RunData {
    RunData::complete(id, hist, samples, max)
}
