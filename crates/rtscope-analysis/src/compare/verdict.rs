//! The verdict rule: when a change of a statistic is noise, an improvement, or a regression.
//!
//! For every statistic lower is better. With Δ = candidate − baseline, the threshold rule
//! ([`Thresholds::judge`]) gives:
//! * `same`: |Δ| is at most the floor (`--min-delta` for latencies, 0 for `missed`), or at
//!   most the threshold (`--threshold`, in % of the baseline);
//! * `better`: lower by more than both;
//! * `REGRESSION`: higher by more than both;
//! * `worse`: higher by more than both, but the percentile rests on fewer than 10 expected
//!   samples beyond it in one of the groups, so it is reported and does not fail;
//! * `n/a`: a value is unknown (e.g. percentiles of an import without a histogram).
//!
//! Then the significance test of the per-run values (a two-sided Mann–Whitney U test,
//! stratified by scenario, load case and tags, see [`super::significance`]) decides a change
//! beyond the threshold, in ONE function, [`Thresholds::decide`], used for every cell
//! (statistics rows, per-case matrix, JSON, CI outputs):
//! * the test can decide ([`Basis::Tested`]): a significant change keeps its verdict
//!   (`better`, `worse`, `REGRESSION`), else it is `no significant difference` (run-to-run
//!   noise, never fails);
//! * the groups hold fewer runs than the test needs to reach p < 0.05 whatever the values, or
//!   no stratum in common ([`Basis::Untested`], shown `(untested)` on every such cell): the
//!   threshold alone judges it, and the words say only the direction, the same both ways: a
//!   fall is `lower`, a rise `higher` — never `better` or `worse`, which only a test decides.
//!   A rise does not fail unless `--fail-untested` makes it a `REGRESSION`; a fall never
//!   fails;
//! * `--threshold-only`: the threshold is the test asked for, and its verdict stands (`better`,
//!   `REGRESSION`).

use super::model::Stat;
use super::significance::Test;
use rtscope_common::error::UsageError;
use rtscope_core::Nanos;
use std::fmt;

/// The outcome for one statistic of one candidate group. [`Verdict::word`] is its only string
/// form: text, matrix cells, JSON and CI outputs all print it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Improved beyond the threshold and the floor.
    Better,
    /// Within the threshold or the floor.
    Same,
    /// Worse beyond both and significant (or `--threshold-only`), but not failing: a percentile
    /// on too few samples.
    Worse,
    /// Worse beyond both: fails the comparison.
    Regression,
    /// A value is unknown.
    Unknown,
    /// Beyond the threshold on the merged runs, but the per-run values of the two groups
    /// overlap (not significant at 5 %).
    NotSignificant,
    /// Lower beyond the threshold on the merged runs, with too few runs for the significance
    /// test to decide: not called better. Never a rise; never fails.
    Lower,
    /// Higher beyond the threshold on the merged runs, with too few runs for the significance
    /// test to decide: not called worse, and not failing (`--fail-untested` makes it a
    /// [`Verdict::Regression`]). Never a fall.
    Higher,
}

impl Verdict {
    /// The word printed and written to JSON (the one string form of the verdict).
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Better => "better",
            Verdict::Same => "same",
            Verdict::Worse => "worse",
            Verdict::Regression => "REGRESSION",
            Verdict::Unknown => "n/a",
            Verdict::NotSignificant => "no significant difference",
            Verdict::Lower => "lower",
            Verdict::Higher => "higher",
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.word())
    }
}

/// What a verdict rests on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Basis {
    /// The significance test can decide: its design can reach p < 0.05.
    Tested,
    /// Fewer runs than the test needs (or no stratum with runs on both sides): the threshold
    /// alone judged it. Every such cell is marked `untested`.
    Untested,
}

impl Basis {
    /// The basis of a verdict given its test (`None`: no stratum with runs on both sides).
    pub fn of(test: Option<&Test>) -> Basis {
        match test {
            Some(t) if t.decidable() => Basis::Tested,
            _ => Basis::Untested,
        }
    }

    /// Whether the verdict is untested.
    pub fn untested(self) -> bool {
        self == Basis::Untested
    }
}

/// Thresholds: a default percentage, per-statistic overrides and the absolute floor.
#[derive(Debug, Clone, PartialEq)]
pub struct Thresholds {
    /// Default threshold, % of the baseline.
    pub default_pct: f64,
    /// Per-statistic thresholds, % (`--threshold max=20%`).
    pub per_stat: Vec<(&'static str, f64)>,
    /// Changes of a latency up to this are noise, ns.
    pub min_delta_ns: u64,
    /// Judge by the threshold and the floor alone, without the significance test (a gate on
    /// single runs, `--threshold-only`).
    pub threshold_only: bool,
    /// Fail on a rise beyond the threshold that the test could not decide (`--fail-untested`);
    /// by default it is `higher`, reported and not failing.
    pub fail_untested: bool,
}

impl Thresholds {
    /// Builds the thresholds from `--threshold` values (`10%`, `10`, `max=20%`) and
    /// `--min-delta` (`1us`; a bare number is µs).
    pub fn parse(thresholds: &[String], min_delta: &str) -> Result<Thresholds, UsageError> {
        let mut t = Thresholds {
            default_pct: 10.0,
            per_stat: Vec::new(),
            min_delta_ns: Nanos::parse_with_default_unit(min_delta, "us")
                .map_err(|e| {
                    UsageError::new(format!(
                        "invalid value '{min_delta}' for '--min-delta': {e}"
                    ))
                    .hint("give a latency such as 1us, 500ns or 2 (µs)")
                })?
                .0,
            threshold_only: false,
            fail_untested: false,
        };
        for text in thresholds {
            match text.split_once('=') {
                Some((stat, pct)) => {
                    let stat = Stat::parse(stat, "--threshold")?;
                    t.per_stat.push((stat.name(), pct_of(pct, text)?));
                }
                None => t.default_pct = pct_of(text, text)?,
            }
        }
        Ok(t)
    }

    /// The threshold (%) of a statistic.
    pub fn pct(&self, stat: Stat) -> f64 {
        self.per_stat
            .iter()
            .rev()
            .find(|(n, _)| *n == stat.name())
            .map_or(self.default_pct, |&(_, p)| p)
    }

    /// The absolute floor of a statistic (ns, or a count).
    pub fn floor(&self, stat: Stat) -> u64 {
        if stat.is_rate() || stat.is_share() {
            0
        } else {
            self.min_delta_ns
        }
    }

    /// Judges a candidate value against the baseline; `supported` is false when a percentile
    /// rests on too few samples in either group.
    pub fn judge(
        &self,
        stat: Stat,
        base: Option<u64>,
        cand: Option<u64>,
        supported: bool,
    ) -> Verdict {
        let (Some(b), Some(c)) = (base, cand) else {
            return Verdict::Unknown;
        };
        self.judge_by(self.pct(stat), self.floor(stat), b, c, supported)
    }

    /// [`Thresholds::judge`] of a latency that is no statistic of the table (a tail level):
    /// the default threshold and `--min-delta`.
    pub fn judge_latency(&self, base: u64, cand: u64) -> Verdict {
        self.judge_by(self.default_pct, self.min_delta_ns, base, cand, true)
    }

    fn judge_by(&self, pct: f64, floor: u64, b: u64, c: u64, supported: bool) -> Verdict {
        let delta = c.abs_diff(b);
        let beyond_pct = match delta_pct(b, c) {
            Some(p) => p.abs() > pct,
            None => delta > 0,
        };
        if delta <= floor || !beyond_pct {
            Verdict::Same
        } else if c < b {
            Verdict::Better
        } else if supported {
            Verdict::Regression
        } else {
            Verdict::Worse
        }
    }
}

impl Thresholds {
    /// THE verdict rule for every cell: the threshold rule's verdict `threshold` and the
    /// significance test of the cell's per-run values (`None`: no stratum with runs on both
    /// sides) give the verdict and what it rests on. See the module documentation.
    pub fn decide(&self, threshold: Verdict, test: Option<&Test>) -> (Verdict, Basis) {
        let basis = Basis::of(test);
        let significant = test.is_some_and(|t| t.significant());
        (self.decide_by(threshold, basis, significant), basis)
    }

    /// [`Thresholds::decide`] with the evidence given directly: what the verdict rests on and
    /// whether the difference is significant (a rank test's p < 0.05, or two tail levels'
    /// intervals that do not overlap).
    pub fn decide_by(&self, threshold: Verdict, basis: Basis, significant: bool) -> Verdict {
        let beyond = matches!(
            threshold,
            Verdict::Better | Verdict::Worse | Verdict::Regression
        );
        match basis {
            _ if !beyond || self.threshold_only => threshold,
            Basis::Tested if significant => threshold,
            Basis::Tested => Verdict::NotSignificant,
            Basis::Untested => match threshold {
                Verdict::Better => Verdict::Lower,
                Verdict::Regression if self.fail_untested => Verdict::Regression,
                _ => Verdict::Higher,
            },
        }
    }
}

/// The change in % of the baseline, `None` when the baseline is 0.
pub fn delta_pct(base: u64, cand: u64) -> Option<f64> {
    (base > 0).then(|| (cand as f64 - base as f64) / base as f64 * 100.0)
}

fn pct_of(text: &str, whole: &str) -> Result<f64, UsageError> {
    let t = text.trim();
    t.strip_suffix('%')
        .unwrap_or(t)
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|p| p.is_finite() && *p >= 0.0)
        .ok_or_else(|| {
            UsageError::new(format!(
                "invalid value '{whole}' for '--threshold': '{t}' is not a percentage"
            ))
            .hint("use PCT or STAT=PCT, e.g. --threshold 10% --threshold max=20%")
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn judges_by_threshold_and_floor() {
        let t = Thresholds::parse(&["10%".into(), "max=50".into()], "1us").unwrap();
        let p99 = Stat::parse("p99", "").unwrap();
        let max = Stat::Max;
        assert_eq!(
            t.judge(p99, Some(10_000), Some(10_900), true),
            Verdict::Same
        );
        assert_eq!(
            t.judge(p99, Some(10_000), Some(12_000), true),
            Verdict::Regression
        );
        assert_eq!(
            t.judge(p99, Some(10_000), Some(12_000), false),
            Verdict::Worse
        );
        assert_eq!(
            t.judge(p99, Some(10_000), Some(8_000), true),
            Verdict::Better
        );
        assert_eq!(t.judge(p99, Some(2_000), Some(2_900), true), Verdict::Same);
        assert_eq!(
            t.judge(max, Some(10_000), Some(14_000), true),
            Verdict::Same
        );
        assert_eq!(
            t.judge(Stat::Missed, Some(0), Some(1), true),
            Verdict::Regression
        );
        assert_eq!(t.judge(max, None, Some(1), true), Verdict::Unknown);
        assert!(Thresholds::parse(&["ten".into()], "1us").is_err());
        assert!(Thresholds::parse(&["p42=5%".into()], "1us").is_err());
        assert!(Thresholds::parse(&[], "fast").is_err());
    }

    #[test]
    fn one_rule_decides_every_cell_with_symmetric_words_where_no_test_decided() {
        use super::super::significance::mann_whitney;
        let shifted = mann_whitney(&[1.0, 2.0, 3.0, 4.0], &[5.0, 6.0, 7.0, 8.0]).unwrap();
        let mixed = mann_whitney(&[1.0, 3.0, 5.0, 7.0], &[2.0, 4.0, 6.0, 8.0]).unwrap();
        let single = mann_whitney(&[1.0, 2.0], &[5.0, 6.0]).unwrap();
        let mut t = Thresholds::parse(&[], "1us").unwrap();
        use Verdict::*;
        let d = |t: &Thresholds, v, test| t.decide(v, test).0;
        for (threshold, test, want) in [
            (Regression, Some(&shifted), Regression),
            (Regression, Some(&mixed), NotSignificant),
            (Regression, Some(&single), Higher),
            (Regression, None, Higher),
            (Worse, Some(&single), Higher),
            (Worse, Some(&shifted), Worse),
            (Better, Some(&single), Lower),
            (Better, None, Lower),
            (Better, Some(&shifted), Better),
            (Better, Some(&mixed), NotSignificant),
            (Same, Some(&single), Same),
            (Unknown, None, Unknown),
        ] {
            assert_eq!(d(&t, threshold, test), want, "{threshold:?} {test:?}");
        }
        assert_eq!(t.decide(Same, Some(&single)).1, Basis::Untested);
        assert_eq!(t.decide(Same, Some(&mixed)).1, Basis::Tested);
        t.fail_untested = true;
        assert_eq!(d(&t, Regression, Some(&single)), Regression);
        assert_eq!(d(&t, Worse, Some(&single)), Higher);
        // A fall never fails, --fail-untested or not.
        assert_eq!(d(&t, Better, Some(&single)), Lower);
        assert_eq!(d(&t, Regression, Some(&mixed)), NotSignificant);
        t.fail_untested = false;
        t.threshold_only = true;
        assert_eq!(d(&t, Regression, Some(&mixed)), Regression);
        assert_eq!(d(&t, Better, None), Better);
        assert_eq!(Regression.to_string(), "REGRESSION");
        assert_eq!((Lower.word(), Higher.word()), ("lower", "higher"));
    }
}
