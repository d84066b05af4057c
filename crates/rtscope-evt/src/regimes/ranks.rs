//! The ranks both envelopes read (per wake-up, `envelope.rs`; per time, `per_time.rs`): each
//! segment's largest values ([`Own`]), the level a probability reaches in the worst of them
//! ([`worst`]) and its bounds at the ranks of a Poisson count of episodes.

use crate::threshold::{self, Point};
use statrs::distribution::{ChiSquared, ContinuousCDF, DiscreteCDF, Poisson};

/// An estimate, its lower bound and its upper bound (`None`: unbounded), in ns.
pub(super) type Bounds = (f64, f64, Option<f64>);

/// One segment's largest values — its wake-ups, or its blocks' maxima for the per-time levels
/// — and how many it holds: what [`worst`] and [`empirical`] read, for both.
pub(super) struct Own {
    /// Descending.
    desc: Vec<f64>,
    /// How many values the segment holds (wake-ups or blocks).
    count: u64,
    /// Its episodes per exceedance above its `theta_at`-th largest (1 with fewer): the
    /// extremal index there.
    pub(super) theta: f64,
    /// How many values one count of the bounds' Poisson stands for: the episodes' sizes there
    /// (values above that level per episode), `Σ S² / Σ S` (1 with fewer). The count of values
    /// above a level is a compound Poisson — episodes at a Poisson rate, each of its own size —
    /// whose variance is `λ E[S²]`, not the `λ E[S]²` of episodes all of the mean size `1/θ`:
    /// a run whose few long episodes hold most of its values above the level (a build's
    /// phase of stalls) gets the wider bounds its counts have.
    pub(super) weight: f64,
}

impl Own {
    /// The segment of `points` (indexed in its own order) holding `count` values: only its
    /// `keep` largest are kept (sorted), the ranks the levels and their bounds read lie among
    /// them; `θ` from the episodes above its `theta_at`-th largest, each count of the bounds
    /// standing for `1/θ` values (the blocks' maxima of the per-time levels).
    pub(super) fn of(points: &[Point], count: u64, keep: usize, theta_at: usize) -> Own {
        let mut own = Own::sorted(points, count, keep);
        if let Some(&u) = own.desc.get(theta_at) {
            let c = threshold::decluster(points, u);
            own.theta = (c.maxima.len() as f64 / c.exceedances.max(1) as f64).clamp(0.01, 1.0);
            own.weight = 1.0 / own.theta;
        }
        own
    }

    /// As [`Own::of`] for wake-ups, each count of the bounds standing for the episodes'
    /// sizes there ([`Own::weight`]): wake-ups above a level come in episodes of very
    /// different lengths (a build's phase of stalls beside single late wake-ups).
    pub(super) fn of_wakeups(points: &[Point], count: u64, keep: usize, theta_at: usize) -> Own {
        let mut own = Own::of(points, count, keep, theta_at);
        if let Some(&u) = own.desc.get(theta_at) {
            let c = threshold::decluster(points, u);
            let (s1, s2) = c.sizes.iter().fold((0.0, 0.0), |(a, b), &s| {
                let s = s as f64;
                (a + s, b + s * s)
            });
            if s1 > 0.0 {
                own.weight = (s2 / s1).max(1.0);
            }
        }
        own
    }

    fn sorted(points: &[Point], count: u64, keep: usize) -> Own {
        let mut desc: Vec<f64> = points.iter().map(|p| p.value).collect();
        if desc.len() > keep {
            desc.select_nth_unstable_by(keep, |a, b| b.total_cmp(a));
            desc.truncate(keep);
        }
        desc.sort_by(f64::total_cmp);
        desc.reverse();
        Own {
            desc,
            count,
            theta: 1.0,
            weight: 1.0,
        }
    }
}

/// The worst segment's own level at `p` (1-based; `None`: none reaches it): the largest
/// estimate, the largest lower bound (at the confidence of `chi2_lower`), the largest upper
/// bound (unbounded if any segment's is).
pub(super) fn worst(own: &[Own], p: f64, chi2: f64, chi2_lower: f64) -> Option<(usize, Bounds)> {
    let each: Vec<(usize, Bounds)> = own
        .iter()
        .enumerate()
        .filter_map(|(i, w)| Some((i + 1, empirical(w, p, chi2, chi2_lower)?)))
        .collect();
    let &(seg, (e, _, _)) = each.iter().max_by(|a, b| a.1 .0.total_cmp(&b.1 .0))?;
    let lo = each.iter().map(|w| w.1 .1).fold(f64::MIN, f64::max);
    let hi = each.iter().try_fold(e, |m, w| w.1 .2.map(|h| m.max(h)));
    Some((seg, (e, lo.min(e), hi)))
}

/// The level of a segment's values exceeded with probability `p` per value (a wake-up, or a
/// block), read off them (`None`: below them all, or `p` beyond its count `N_s`): the
/// `⌈p N_s⌉`-th largest. Its bounds are the values at the ranks of a Poisson count of
/// `λ = p N_s / w` of `w` values each (`w` = [`Own::weight`], `1/θ` were every episode of the
/// mean size), in values: the `r`-th largest is above the true
/// level exactly when `r` or more values are, so the lower bound is at the smallest count `k`
/// with `P(N ≥ k) ≤ α`, the upper at the largest with `P(N < k) ≤ α` (`α` the one-sided share
/// of `z² = chi2`, `chi2_lower` for the lower bound) — exact where counts are small (a segment's
/// blocks once per minute: `λ` = 2), where a normal approximation put the lower bound too high
/// (the truth below it in 4 of 40 runs of the burst process). The upper is unbounded when no
/// count is that unlikely (its rank above the largest), the lower 0 when its rank is past the
/// values kept.
pub(super) fn empirical(w: &Own, p: f64, chi2: f64, chi2_lower: f64) -> Option<Bounds> {
    let expected = p * w.count as f64;
    if expected < 1.0 {
        return None;
    }
    let at = |r: f64| w.desc.get((r.ceil() as usize).max(1) - 1).copied();
    let e = at(expected)?;
    let lambda = expected / w.weight;
    // Past the values kept the level is below them all: no lower bound but 0.
    let lo = at(count_above(lambda, chi2_lower) as f64 * w.weight).unwrap_or(0.0);
    let hi = count_below(lambda, chi2).and_then(|k| at(k as f64 * w.weight));
    Some((e, lo.min(e), hi.map(|h| h.max(e))))
}

/// The one-sided share of a two-sided interval whose `z² = chi2`.
fn one_sided(chi2: f64) -> f64 {
    let chi = ChiSquared::new(1.0).expect("one degree of freedom");
    (1.0 - chi.cdf(chi2)) / 2.0
}

/// The smallest count `k` of a Poisson of mean `lambda` with `P(N ≥ k) ≤ α` (`α` of `chi2`).
pub(super) fn count_above(lambda: f64, chi2: f64) -> u64 {
    let (alpha, n) = (
        one_sided(chi2),
        Poisson::new(lambda.max(1e-9)).expect("λ > 0"),
    );
    let mut k = lambda.floor() as u64;
    // P(N ≥ k) = 1 − P(N ≤ k − 1).
    while k == 0 || 1.0 - n.cdf(k - 1) > alpha {
        k += 1;
    }
    k
}

/// The largest count `k ≥ 1` of a Poisson of mean `lambda` with `P(N < k) ≤ α` (`None`: even
/// `P(N = 0)` is more likely).
pub(super) fn count_below(lambda: f64, chi2: f64) -> Option<u64> {
    let (alpha, n) = (
        one_sided(chi2),
        Poisson::new(lambda.max(1e-9)).expect("λ > 0"),
    );
    let mut k = 0;
    while n.cdf(k) <= alpha {
        k += 1;
    }
    (k >= 1).then_some(k)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 300 kept values 300, 299, … of a run of 100,000, θ 0.5, each count of the bounds
    /// standing for `weight` values.
    fn own(weight: f64) -> Own {
        Own {
            desc: (1..=300).rev().map(f64::from).collect(),
            count: 100_000,
            theta: 0.5,
            weight,
        }
    }

    #[test]
    fn episodes_of_unequal_sizes_widen_the_bounds_not_the_estimate() {
        // 60 wake-ups above the level at 6e-4: as 30 episodes of 2 (weight 2), or with one
        // episode holding 30 of them and 30 alone (weight (30² + 30) / 60 = 15.5).
        let (e2, lo2, hi2) = empirical(&own(2.0), 6e-4, 3.84, 3.84).expect("a level");
        let (e15, lo15, hi15) = empirical(&own(15.5), 6e-4, 3.84, 3.84).expect("a level");
        assert_eq!(e2, 241.0);
        assert_eq!(e15, e2);
        let (hi2, hi15) = (hi2.expect("bounded"), hi15.expect("bounded"));
        assert!(lo15 < lo2 && lo2 < e2, "lower {lo15} < {lo2} < {e2}");
        assert!(hi15 > hi2 && hi2 > e2, "upper {hi15} > {hi2} > {e2}");
        // 30 equal episodes: a Poisson of 30 is at least 20 with 97.5 % (its 2.5 % point
        // 19.7): the upper bound at about rank 2 × 20.
        assert!((255.0..=265.0).contains(&hi2), "upper {hi2}");
    }
}
