//! The groups' tail levels compared (`compare --tail-level P`, docs/compare.md): the latency
//! exceeded with probability `P` per wake-up, estimated as `rtscope tail` does (rtscope-evt)
//! from each group's merged histogram, and judged by the one verdict rule
//! ([`Thresholds::decide_by`]) with the intervals as the test: a rise beyond the threshold
//! whose intervals do not overlap is a `REGRESSION`; overlapping intervals are `no significant
//! difference` (the two cannot be told apart); an interval the data do not bound above leaves
//! the verdict `untested`. A group whose estimate is refused gets no verdict (`n/a`), and its
//! refusal is named — unless all its runs kept raw samples (`--raw`): then it gets the
//! worst-segment envelope of `rtscope tail` (rtscope-evt's `envelope`), the largest of its runs'
//! threads' levels, and verdicts on it are untested (no stationary tail's level).
//!
//! A merged histogram keeps no time order, so its stationarity cannot be tested: every level is
//! refused (`not tested for stationarity`) unless `--assume-stationary` asks for it, and then
//! every verdict rests on that assumption (`untested`: a rise is `higher`, a fall `lower`, a
//! rise failing only with `--fail-untested`; nothing passes as tested). A heavy or unstable tail gets no level at all,
//! by the rule `rtscope tail` follows ([`rtscope_evt::far::not_estimable`], applied in
//! [`rtscope_evt::analyse`]).

use super::change::Change;
use super::group::Group;
use super::model::Merged;
use super::verdict::{delta_pct, Basis, Thresholds, Verdict};
use rtscope_evt::regimes::{regimes, Answer};
use rtscope_evt::{Level, Options, Refusal};
use rtscope_store::{Store, StoreError};

/// One group's tail at the probability.
#[derive(Debug, Clone, PartialEq)]
pub enum Side {
    /// The level with its interval.
    Level(Level),
    /// One stationary tail refused (the merged histogram keeps no time order), the worst-segment
    /// envelope of the group's `--raw` runs instead ([`envelope`]): the largest of its runs'
    /// threads' levels, where it comes from, and the merged histogram's refusals.
    Envelope {
        /// The level per wake-up.
        level: Level,
        /// `run 3, CPU 1, segment 6's values` (or `… the fit`).
        from: String,
        /// Why the merged histogram gives no level.
        refused: Vec<Refusal>,
    },
    /// No estimate, and why (`rtscope tail`'s refusals).
    Refused(Vec<Refusal>),
    /// The probability lies within the measured data: nothing to extrapolate (the percentiles
    /// of the table say it).
    Within,
}

/// The tail row of a comparison.
#[derive(Debug, Clone)]
pub struct TailRow {
    /// Exceedance probability per wake-up.
    pub probability: f64,
    /// Confidence level of the intervals.
    pub confidence: f64,
    /// Whether stationarity was assumed (`--assume-stationary`): the levels are untested.
    pub assumed_stationary: bool,
    /// Per group, in order.
    pub sides: Vec<Side>,
    /// Per candidate against the baseline (`delta` in ns; `test` is always `None`: the
    /// intervals decide).
    pub changes: Vec<Change>,
}

impl TailRow {
    /// The tail levels of `groups` at `probability` and each candidate's verdict; with
    /// `assume_stationary`, the levels of the untested histograms too (their verdicts untested).
    pub fn new(
        groups: &[Group],
        probability: f64,
        t: &Thresholds,
        assume_stationary: bool,
    ) -> TailRow {
        let o = Options {
            probabilities: vec![probability],
            assume_stationary,
            ..Options::default()
        };
        let sides: Vec<Side> = groups.iter().map(|g| side(&g.merged, &o)).collect();
        let changes = sides[1..]
            .iter()
            .map(|c| change(t, &sides[0], c, assume_stationary))
            .collect();
        TailRow {
            probability,
            confidence: o.confidence,
            assumed_stationary: assume_stationary,
            sides,
            changes,
        }
    }
}

/// A group's tail level at the single probability of `o`, from its merged histogram (the runs'
/// wake-ups as one sample; a histogram keeps no time order, so the tests that need it are
/// untested, as for `rtscope tail` on a run without `--raw`).
pub fn side(m: &Merged, o: &Options) -> Side {
    let placed = m.totals.hist.count();
    let refused = |why: Refusal| Side::Refused(vec![why]);
    if m.missing_hist || placed == 0 {
        return refused(Refusal::NoDistribution);
    }
    if let Some(floor_ns) = m.overflow_floor {
        let count = m.totals.samples.saturating_sub(placed);
        return refused(Refusal::BeyondHistogram { count, floor_ns });
    }
    let bins: Vec<(u64, u64, u64)> = m
        .totals
        .hist
        .buckets()
        .map(|(lo, w, c)| (lo.0, w.0, c))
        .collect();
    let Some(tail) = rtscope_evt::input::from_bins(&bins, None, None) else {
        return refused(Refusal::NoDistribution);
    };
    let a = rtscope_evt::analyse(&tail, o, false);
    if !a.accepted() && !a.assumed_stationary {
        return Side::Refused(a.refusals);
    }
    // The level per wake-up (a merged histogram has no episodes to tell apart: the same number
    // as per episode, θ = 1).
    a.wakeup_levels
        .into_iter()
        .next()
        .map_or(Side::Within, Side::Level)
}

impl Side {
    /// The level, of a stationary tail or an envelope.
    pub fn level(&self) -> Option<&Level> {
        match self {
            Side::Level(l) | Side::Envelope { level: l, .. } => Some(l),
            Side::Refused(_) | Side::Within => None,
        }
    }
}

impl TailRow {
    /// Each refused group whose runs all kept raw samples (`--raw`) gets the worst-segment
    /// envelope at the row's probability, as `rtscope tail` answers where one stationary tail is
    /// refused; the verdicts are judged again (untested where an envelope is in them).
    pub fn with_envelopes(
        mut self,
        store: &Store,
        groups: &[Group],
        t: &Thresholds,
    ) -> Result<TailRow, StoreError> {
        for (side, g) in self.sides.iter_mut().zip(groups) {
            if let Side::Refused(refused) = side {
                if let Some((level, from)) = envelope(store, g, self.probability)? {
                    let refused = std::mem::take(refused);
                    *side = Side::Envelope {
                        level,
                        from,
                        refused,
                    };
                }
            }
        }
        self.changes = self.sides[1..]
            .iter()
            .map(|c| change(t, &self.sides[0], c, self.assumed_stationary))
            .collect();
        Ok(self)
    }
}

/// The worst-segment envelope of group `g` at `p`: of every thread of every run, the level of
/// the highest estimate (its bounds the largest of all: the worst is not known to be that one),
/// and where it comes from. `None` when some run has no raw samples or no thread gives a level.
pub fn envelope(store: &Store, g: &Group, p: f64) -> Result<Option<(Level, String)>, StoreError> {
    let o = Options {
        probabilities: vec![p],
        regimes: true,
        ..Options::default()
    };
    let mut all = Vec::new();
    for r in &g.runs {
        let detail = store.run(r.id)?;
        if detail.raw_samples == 0 {
            return Ok(None);
        }
        for t in &detail.threads {
            let Ok(tail) = rtscope_evt::input::from_store(store, &detail, t) else {
                return Ok(None);
            };
            let Some(Answer::Given(e)) = regimes(&tail, &o).map(|r| r.envelope) else {
                continue;
            };
            let who = t
                .cpu
                .map_or(format!("thread {}", t.thread), |c| format!("CPU {c}"));
            for w in e.levels {
                let from = w
                    .from_segment
                    .map_or("the fit".to_string(), |s| format!("segment {s}'s values"));
                all.push((w.level, format!("run {}, {who}, {from}", r.id)));
            }
        }
    }
    let Some(i) =
        (0..all.len()).max_by(|&a, &b| all[a].0.estimate_ns.total_cmp(&all[b].0.estimate_ns))
    else {
        return Ok(None);
    };
    let lower = all.iter().map(|l| l.0.lower_ns).fold(f64::MIN, f64::max);
    let upper = all
        .iter()
        .try_fold(0.0, |m: f64, l| l.0.upper_ns.map(|u| m.max(u)));
    let (mut level, from) = all.swap_remove(i);
    level.lower_ns = lower.min(level.estimate_ns);
    level.upper_ns = upper;
    Ok(Some((level, from)))
}

/// A candidate's level against the baseline's: the threshold on the estimates, then the
/// intervals in place of the significance test; `assumed`: the levels' stationarity was
/// assumed, not tested, so the verdict is untested whatever the intervals say.
pub fn change(t: &Thresholds, base: &Side, cand: &Side, assumed: bool) -> Change {
    let (Some(b), Some(c)) = (base.level(), cand.level()) else {
        return Change {
            delta: None,
            delta_pct: None,
            verdict: Verdict::Unknown,
            basis: Basis::Tested,
            threshold_verdict: Verdict::Unknown,
            test: None,
        };
    };
    let (bn, cn) = (b.estimate_ns.round() as u64, c.estimate_ns.round() as u64);
    let threshold = t.judge_latency(bn, cn);
    // Unbounded above on either side: no rise can be told from the baseline's interval, and
    // no fall from the candidate's: the data cannot decide (measure longer).
    // An envelope is no stationary tail's level: its verdicts are untested too.
    let envelope = matches!(base, Side::Envelope { .. }) || matches!(cand, Side::Envelope { .. });
    let basis = match (b.upper_ns, c.upper_ns) {
        (Some(_), Some(_)) if !assumed && !envelope => Basis::Tested,
        _ => Basis::Untested,
    };
    let apart = disjoint(b, c);
    Change {
        delta: Some(i128::from(cn) - i128::from(bn)),
        delta_pct: delta_pct(bn, cn),
        verdict: t.decide_by(threshold, basis, apart),
        basis,
        threshold_verdict: threshold,
        test: None,
    }
}

/// Whether two levels' intervals do not overlap (an unbounded upper end reaches everything).
pub fn disjoint(a: &Level, b: &Level) -> bool {
    let above = |x: &Level, y: &Level| x.lower_ns > y.upper_ns.unwrap_or(f64::INFINITY);
    above(a, b) || above(b, a)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn level(estimate_ns: f64, lower_ns: f64, upper_ns: Option<f64>) -> Side {
        Side::Level(Level {
            probability: 1e-9,
            once_per_s: None,
            estimate_ns,
            lower_ns,
            upper_ns,
            extrapolation: 1e4,
            longer: None,
        })
    }

    #[test]
    fn the_intervals_decide_beyond_the_threshold() {
        let mut t = Thresholds::parse(&[], "1us").unwrap();
        let base = level(50_000.0, 45_000.0, Some(60_000.0));
        let v = |t: &Thresholds, c: &Side| change(t, &base, c, false).verdict;
        use Verdict::*;
        // Apart: a rise is a regression, a fall better.
        assert_eq!(
            v(&t, &level(80_000.0, 70_000.0, Some(95_000.0))),
            Regression
        );
        assert_eq!(v(&t, &level(20_000.0, 15_000.0, Some(30_000.0))), Better);
        // Overlapping: not distinguishable; within the threshold: same.
        assert_eq!(
            v(&t, &level(65_000.0, 55_000.0, Some(80_000.0))),
            NotSignificant
        );
        assert_eq!(v(&t, &level(52_000.0, 47_000.0, Some(58_000.0))), Same);
        // Unbounded above: untested, a rise higher (not failing) unless --fail-untested.
        let open = level(80_000.0, 58_000.0, None);
        let ch = change(&t, &base, &open, false);
        assert_eq!((ch.verdict, ch.basis), (Higher, Basis::Untested));
        assert!(ch.untested_rise());
        t.fail_untested = true;
        assert_eq!(v(&t, &open), Regression);
        // A refusal on either side is no verdict.
        let refused = Side::Refused(vec![Refusal::NoStableThreshold]);
        assert_eq!(v(&t, &refused), Unknown);
        assert_eq!(change(&t, &refused, &base, false).verdict, Unknown);
        assert_eq!(v(&t, &Side::Within), Unknown);
        // Stationarity assumed: even intervals apart are an untested verdict (a rise higher,
        // a regression only with --fail-untested; a fall lower, never better).
        t.fail_untested = false;
        let apart = level(80_000.0, 70_000.0, Some(95_000.0));
        let ch = change(&t, &base, &apart, true);
        assert_eq!((ch.verdict, ch.basis), (Higher, Basis::Untested));
        let below = level(20_000.0, 15_000.0, Some(30_000.0));
        assert_eq!(change(&t, &base, &below, true).verdict, Lower);
        t.fail_untested = true;
        assert_eq!(change(&t, &base, &apart, true).verdict, Regression);
    }
}
