//! Scales and limits shared by the figures and the modules that prepare their data.

/// Most points a CDF line is drawn with.
pub const MAX_CDF_POINTS: usize = 2000;

/// Tails longer than this ratio of max to median get a log latency axis.
pub const LOG_X_RATIO: f64 = 100.0;

/// "Nines" of a quantile: `−log10(1 − q)` (p90 → 1, p99 → 2, …).
pub fn nines(q: f64) -> f64 {
    -(1.0 - q).max(1e-12).log10()
}
