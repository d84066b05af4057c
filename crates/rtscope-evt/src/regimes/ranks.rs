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
    /// Its episodes per exceedance above its `theta_at`-th largest (1 with fewer): how many
    /// values one Poisson count of episodes stands for.
    pub(super) theta: f64,
}

impl Own {
    /// The segment of `points` (indexed in its own order) holding `count` values: only its
    /// `keep` largest are kept (sorted), the ranks the levels and their bounds read lie among
    /// them; `θ` from the episodes above its `theta_at`-th largest.
    pub(super) fn of(points: &[Point], count: u64, keep: usize, theta_at: usize) -> Own {
        let mut desc: Vec<f64> = points.iter().map(|p| p.value).collect();
        if desc.len() > keep {
            desc.select_nth_unstable_by(keep, |a, b| b.total_cmp(a));
            desc.truncate(keep);
        }
        desc.sort_by(f64::total_cmp);
        desc.reverse();
        let theta = desc.get(theta_at).map_or(1.0, |&u| {
            let c = threshold::decluster(points, u);
            (c.maxima.len() as f64 / c.exceedances.max(1) as f64).clamp(0.01, 1.0)
        });
        Own { desc, count, theta }
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
/// `λ = p N_s θ` episodes of `1/θ` values each, in values: the `r`-th largest is above the true
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
    let lambda = expected * w.theta;
    // Past the values kept the level is below them all: no lower bound but 0.
    let lo = at(count_above(lambda, chi2_lower) as f64 / w.theta).unwrap_or(0.0);
    let hi = count_below(lambda, chi2).and_then(|k| at(k as f64 / w.theta));
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
