//! The run's own values ([`Observed`]): levels within the run, read off its wake-ups and its
//! episodes, needing no model of the far tail (issue 66 item 4).
//!
//! - **Per wake-up**, at each asked probability `p` with `p · N ≥ 1`: the `⌈p N⌉`-th largest
//!   wake-up of the whole run; its bounds at the ranks of the Poisson count of the episodes
//!   above that level (`λ = p N θ`, `θ` the episodes per exceedance there, each episode
//!   `1/θ` wake-ups), as each segment's own values in the envelope ([`super::ranks`]). Where
//!   even no episode at all is not unlikely enough, the upper bound's rank is beyond the
//!   maximum: the level is not given (too few episodes), never an open bound.
//! - **Per time**, once per minute, 10 minutes, hour while the run holds [`MIN_TIMES`] of them:
//!   the `k`-th largest episode maximum (episodes above the segment report's level), `k` the
//!   run's length over the time, bounds at the ranks of a Poisson count of mean `k`.
//! - **The test**: the episodes must come at one rate through the run — the run's
//!   [`super::SEGMENTS`] segments' counts of episodes above the highest given level that at
//!   least [`super::SEGMENTS`] episodes exceed (else the segment report's level), against equal
//!   rates (χ² dispersion). Passed: the levels are tested and a gate may pass on them; failed:
//!   they are shown UNTESTED and no gate passes.
//!
//! It promises the rate held in this run, at its conditions; beyond the run nothing is said.

use super::ranks::{count_above, count_below, empirical, Own};
use super::{same_rate_p, Segments, SEGMENTS};
use crate::threshold;
use crate::{diag, Options, Tail};

/// A per-time level needs the run to hold this many of its times (so that its interval closes).
pub const MIN_TIMES: f64 = 5.0;
/// The times asked for per time, s.
const TIMES_S: [f64; 4] = [60.0, 600.0, 3600.0, 86_400.0];

/// A level per wake-up read off the run.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ObservedLevel {
    /// Exceedance probability per wake-up.
    pub probability: f64,
    /// The time between exceedances at the run's rate, s.
    pub once_per_s: f64,
    /// The rank of the estimate among the run's wake-ups, from the largest (1).
    pub rank: u64,
    /// The estimate, ns: the `rank`-th largest wake-up.
    pub estimate_ns: f64,
    /// Lower confidence bound, ns.
    pub lower_ns: f64,
    /// Upper confidence bound, ns.
    pub upper_ns: f64,
    /// Episodes per exceedance of the estimate (the extremal index there).
    pub extremal_index: f64,
    /// Episodes expected above the level in the run (`p N θ`).
    pub episodes: f64,
}

/// A level per time read off the run's episodes.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ObservedTime {
    /// Exceeded by one episode once per this many seconds.
    pub once_per_s: f64,
    /// How many times the run holds (its rank among the episodes' maxima).
    pub times_in_run: f64,
    /// The estimate, ns.
    pub estimate_ns: f64,
    /// Lower confidence bound, ns.
    pub lower_ns: f64,
    /// Upper confidence bound, ns.
    pub upper_ns: f64,
}

/// A level asked for and not given, and why.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ObservedNotGiven {
    /// The probability per wake-up (`None`: a per-time level).
    pub probability: Option<f64>,
    /// The time (`None`: a per-wake-up level).
    pub once_per_s: Option<f64>,
    /// Why (for people).
    pub why: String,
}

/// The test of equal rates of episodes through the run.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SameRate {
    /// The level the episodes exceed, ns.
    pub level_ns: f64,
    /// Episodes above it per segment, in time order.
    pub counts: Vec<u64>,
    /// The p-value of "every segment has the same rate of episodes" (χ² dispersion).
    pub p: f64,
    /// Whether it passed (p ≥ α).
    pub passed: bool,
}

impl SameRate {
    /// The test in words with its p-value.
    pub fn words(&self) -> String {
        format!(
            "episodes above {} at one rate through the run's {} segments (χ² p = {:.3})",
            crate::units::us(self.level_ns),
            self.counts.len(),
            self.p
        )
    }
}

/// The run's own values.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Observed {
    /// Wake-ups in the run.
    pub wakeups: u64,
    /// The run's length at its rate, s.
    pub run_s: f64,
    /// The episodes' threshold of the per-time levels, ns.
    pub threshold_ns: f64,
    /// Episodes above it.
    pub episodes: usize,
    /// The extremal index above it (episodes per exceedance).
    pub extremal_index: f64,
    /// Wake-ups above it per episode (`1 / θ`).
    pub wakeups_per_episode: f64,
    /// The run length: exceedances at most this many wake-ups apart are one episode.
    pub run_length: f64,
    /// Levels per wake-up.
    pub levels: Vec<ObservedLevel>,
    /// Levels per time.
    pub per_time: Vec<ObservedTime>,
    /// The levels asked for and not given.
    pub not_given: Vec<ObservedNotGiven>,
    /// The stationarity test of the episodes.
    pub test: SameRate,
    /// Whether the test passed: a gate passes on these levels only then.
    pub tested: bool,
}

/// The run's own values of `tail` (its segments `s`, its rate `hz`).
pub fn observed(tail: &Tail, s: &Segments, hz: f64, o: &Options) -> Observed {
    let n = tail.observations;
    let chi2 = diag::chi2_1(o.confidence);
    let (mut levels, mut not_given) = (Vec::new(), Vec::new());
    for &p in &o.probabilities {
        match per_wakeup(tail, p, hz, chi2) {
            Ok(l) => levels.push(l),
            Err(why) => not_given.push(ObservedNotGiven {
                probability: Some(p),
                once_per_s: None,
                why,
            }),
        }
    }
    let u = s.level_ns;
    let c = threshold::decluster(&tail.points, u);
    let mut maxima: Vec<f64> = c.maxima.iter().map(|m| m + u).collect();
    maxima.sort_by(|a, b| b.total_cmp(a));
    let run_s = n as f64 / hz;
    let mut per_time = Vec::new();
    for t in TIMES_S {
        match time_level(&maxima, run_s, t, chi2) {
            Ok(l) => per_time.push(l),
            Err(why) => not_given.push(ObservedNotGiven {
                probability: None,
                once_per_s: Some(t),
                why,
            }),
        }
    }
    let given = levels.iter().map(|l| l.estimate_ns);
    let test = same_rate(
        tail,
        s,
        given.chain(per_time.iter().map(|l| l.estimate_ns)),
        o,
    );
    Observed {
        wakeups: n,
        run_s,
        threshold_ns: u,
        episodes: c.maxima.len(),
        extremal_index: c.extremal_index,
        wakeups_per_episode: c.exceedances as f64 / c.maxima.len().max(1) as f64,
        run_length: c.run_length,
        levels,
        per_time,
        not_given,
        tested: test.passed,
        test,
    }
}

/// The level per wake-up at `p`, or why not.
fn per_wakeup(tail: &Tail, p: f64, hz: f64, chi2: f64) -> Result<ObservedLevel, String> {
    let n = tail.observations;
    let expected = p * n as f64;
    if expected < 1.0 {
        return Err(format!(
            "beyond the run (p × {n} wake-ups = {expected:.2} < 1): this answer never extrapolates"
        ));
    }
    let rank = expected.ceil() as usize;
    let keep = (expected + 40.0 * expected.sqrt()).ceil() as usize + 200;
    let own = Own::of_wakeups(&tail.points, n, keep, rank - 1);
    let Some((e, lo, hi)) = empirical(&own, p, chi2, chi2) else {
        return Err("below every wake-up kept".into());
    };
    let lambda = expected * own.theta;
    let Some(hi) = hi else {
        return Err(format!(
            "too few episodes above it ({lambda:.1} expected, {:.1} wake-ups each, whose sizes make the count as uncertain as {:.1} episodes'): its upper bound is beyond the run's maximum; measure longer",
            1.0 / own.theta,
            expected / own.weight
        ));
    };
    Ok(ObservedLevel {
        probability: p,
        once_per_s: 1.0 / (p * hz),
        rank: rank as u64,
        estimate_ns: e,
        lower_ns: lo,
        upper_ns: hi,
        extremal_index: own.theta,
        episodes: lambda,
    })
}

/// The level episodes exceed once per `t` s of a run of `run_s`, from its episodes' maxima
/// (descending), or why not.
fn time_level(desc: &[f64], run_s: f64, t: f64, chi2: f64) -> Result<ObservedTime, String> {
    let k = run_s / t;
    if k < MIN_TIMES {
        return Err(format!(
            "the run holds {k:.1} of them, {MIN_TIMES} needed (measure at least {:.0} s)",
            MIN_TIMES * t
        ));
    }
    let at = |r: u64| desc.get((r.max(1) - 1) as usize).copied();
    let Some(e) = at(k.ceil() as u64) else {
        return Err(format!(
            "{} episodes above the threshold, fewer than the {k:.0} times",
            desc.len()
        ));
    };
    let lo = at(count_above(k, chi2)).unwrap_or(0.0).min(e);
    let hi = count_below(k, chi2).and_then(at).ok_or_else(|| {
        "too few episodes: the upper bound is beyond the run's maximum; measure longer".to_string()
    })?;
    Ok(ObservedTime {
        once_per_s: t,
        times_in_run: k,
        estimate_ns: e,
        lower_ns: lo,
        upper_ns: hi.max(e),
    })
}

/// The test of equal episode rates per segment at the highest of `levels` that at least
/// [`SEGMENTS`] episodes exceed (else the segments' level).
fn same_rate(
    tail: &Tail,
    s: &Segments,
    levels: impl Iterator<Item = f64>,
    o: &Options,
) -> SameRate {
    let mut levels: Vec<f64> = levels.collect();
    levels.sort_by(|a, b| b.total_cmp(a));
    levels.push(s.level_ns);
    let per = s.wakeups_per_segment.max(1);
    for (i, &u) in levels.iter().enumerate() {
        let c = threshold::decluster(&tail.points, u);
        if c.starts.len() < SEGMENTS && i + 1 < levels.len() {
            continue;
        }
        let counts = counts_of(&c.starts, per);
        let p = same_rate_p(&counts);
        return SameRate {
            level_ns: u,
            counts,
            p,
            passed: p >= o.alpha,
        };
    }
    unreachable!("the segments' level is always tried")
}

/// Episodes starting in each segment of `per` wake-ups.
fn counts_of(starts: &[u64], per: u64) -> Vec<u64> {
    let mut counts = vec![0u64; SEGMENTS];
    for &at in starts {
        counts[((at / per) as usize).min(SEGMENTS - 1)] += 1;
    }
    counts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn episodes_are_counted_per_segment() {
        assert_eq!(counts_of(&[0, 5, 10, 95, 99], 10), {
            let mut c = vec![0; SEGMENTS];
            c[0] = 2;
            c[1] = 1;
            c[9] = 2;
            c
        });
    }

    #[test]
    fn per_time_needs_enough_times() {
        let desc: Vec<f64> = (1..=100).rev().map(f64::from).collect();
        assert!(time_level(&desc, 120.0, 60.0, 3.84).is_err());
        let l = time_level(&desc, 600.0, 60.0, 3.84).expect("ten minutes");
        assert_eq!(l.estimate_ns, 91.0);
        assert!(l.lower_ns <= l.estimate_ns && l.estimate_ns <= l.upper_ns);
        assert!(l.upper_ns.is_finite() && l.lower_ns.is_finite());
    }
}
