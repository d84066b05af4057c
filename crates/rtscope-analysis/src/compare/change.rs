//! One candidate's statistic against the baseline: its change and verdict, as every
//! comparison row (statistics, the matrix, the tail level) carries it.

use super::significance::Test;
use super::verdict::{Basis, Verdict};

/// One candidate's statistic against the baseline.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    /// Candidate − baseline (ns, or a count), when both are known.
    pub delta: Option<i128>,
    /// The change in % of the baseline, when the baseline is known and not 0.
    pub delta_pct: Option<f64>,
    /// The verdict ([`Thresholds::decide`]).
    pub verdict: Verdict,
    /// Whether the significance test could decide it; an untested verdict is the threshold's.
    pub basis: Basis,
    /// The verdict of the threshold rule alone (what `--threshold-only` decides).
    pub threshold_verdict: Verdict,
    /// The (stratified) Mann–Whitney U test of the per-run values, when some stratum holds a
    /// run with a known value on both sides.
    pub test: Option<Test>,
}

impl Change {
    /// The verdict as people read it, in every text output: the word, and `(untested)` on a
    /// verdict the test could not decide; `runs` adds the runs per side
    /// (`higher (untested, n=1 per side × 2 strata)`).
    pub fn label(&self, runs: bool) -> String {
        let word = self.verdict.word();
        if !self.untested() {
            return word.to_string();
        }
        match (&self.test, runs) {
            (Some(t), true) => format!("{word} (untested, n={})", t.runs_text()),
            (None, true) => format!("{word} (untested, no stratum in common)"),
            (_, false) => format!("{word} (untested)"),
        }
    }

    /// Whether the verdict is known and rests on fewer runs than the significance test needs.
    pub fn untested(&self) -> bool {
        self.basis.untested() && self.verdict != Verdict::Unknown
    }

    /// Whether this is a rise beyond the threshold judged without the test: it fails only with
    /// `--fail-untested` (or `--threshold-only`).
    pub fn untested_rise(&self) -> bool {
        self.basis.untested() && self.threshold_verdict == Verdict::Regression
    }
}
