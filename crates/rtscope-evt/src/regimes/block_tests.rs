//! The tests of the block maxima's GEV (issue 66): a per-time gate passes on its levels only
//! when every one of them passes, as the per-wake-up gates pass only on a tested estimate.
//!
//! - **Fit, held out**: the GEV fitted on the even blocks, the odd blocks above its censoring
//!   level compared with it (Kolmogorov–Smirnov of their probability transforms against the
//!   uniform; the fit saw none of them, so the ordinary KS distribution holds).
//! - **Same tail**: the block maxima of the run's two halves (two-sample KS).
//! - **Same rate**: the blocks above the 90th percentile of all block maxima, counted in each of
//!   the run's [`SEGMENTS`] segments (χ² of equal rates).
//! - **Independence**: the block maxima in time order (Ljung–Box, 10 lags).
//! - **Bounded tail** (for `ξ < 0` with the upper end within [`BOUND_MATTERS`] × the largest
//!   block maximum): a GEV with `ξ < 0` makes a level near the largest block maximum the end of
//!   the tail; that is an assumption, tested by the likelihood ratio of `ξ = 0` (a Gumbel tail,
//!   unbounded): it passes only when the ratio rejects the Gumbel.
//!
//! Enough blocks is the rule before any fit ([`super::MIN_BLOCKS`]).

use super::SEGMENTS;
use crate::{diag, gev, Outcome};
use statrs::distribution::{ChiSquared, ContinuousCDF};

/// The bounded-tail test runs when the GEV's upper end lies within this many times the largest
/// block maximum.
pub const BOUND_MATTERS: f64 = 10.0;

/// A test of the block maxima.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum BlockTestKind {
    /// The held-out blocks against the GEV fitted on the others.
    Fit,
    /// The halves' block maxima.
    SameTail,
    /// High blocks per segment.
    SameRate,
    /// Block maxima uncorrelated in time.
    Independence,
    /// `ξ < 0` shown by the likelihood ratio of `ξ = 0`.
    Bounded,
}

impl BlockTestKind {
    /// What the test asks, for people.
    pub fn question(self) -> &'static str {
        match self {
            BlockTestKind::Fit => {
                "the held-out blocks follow the GEV fitted on the others (Kolmogorov-Smirnov)"
            }
            BlockTestKind::SameTail => {
                "both halves of the run have the same block maxima (two-sample KS)"
            }
            BlockTestKind::SameRate => {
                "high block maxima come as often in every segment of the run (chi-squared)"
            }
            BlockTestKind::Independence => {
                "block maxima are uncorrelated in time (Ljung-Box, 10 lags)"
            }
            BlockTestKind::Bounded => {
                "the bounded tail (GEV xi < 0) is shown against an unbounded one (likelihood ratio of xi = 0)"
            }
        }
    }
}

/// One test and its outcome.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct BlockTest {
    /// Which.
    pub test: BlockTestKind,
    /// The outcome.
    #[serde(flatten)]
    pub outcome: Outcome,
}

impl BlockTest {
    /// Whether it passed.
    pub fn passed(&self) -> bool {
        matches!(self.outcome, Outcome::Pass { .. })
    }
}

fn outcome(statistic: f64, p: f64, alpha: f64) -> Outcome {
    if !p.is_finite() {
        Outcome::Untested {
            why: "its p-value could not be computed".into(),
        }
    } else if p < alpha {
        Outcome::Fail { statistic, p }
    } else {
        Outcome::Pass { statistic, p }
    }
}

/// The tests of the GEV `fit` of the block maxima `x` (time order) from `sample`, each at
/// significance `alpha`.
pub fn tests(x: &[f64], sample: &gev::Sample, fit: &gev::Fit, alpha: f64) -> Vec<BlockTest> {
    let mut out = vec![BlockTest {
        test: BlockTestKind::Fit,
        outcome: held_out_fit(x, alpha),
    }];
    let (first, second) = x.split_at(x.len() / 2);
    let (d, p) = diag::ks_two_sample(first, second);
    out.push(BlockTest {
        test: BlockTestKind::SameTail,
        outcome: outcome(d, p, alpha),
    });
    let (chi, p) = same_rate(x);
    out.push(BlockTest {
        test: BlockTestKind::SameRate,
        outcome: outcome(chi, p, alpha),
    });
    let (q, p) = diag::ljung_box(x, 10);
    out.push(BlockTest {
        test: BlockTestKind::Independence,
        outcome: outcome(q, p, alpha),
    });
    // The bound matters where it lies within an order of magnitude of the data: there it
    // shapes every level given; a ξ̂ just below 0 puts it far beyond, where no level reaches.
    let largest = x.iter().copied().fold(f64::MIN, f64::max);
    let endpoint = fit.gev.mu - fit.gev.sigma / fit.gev.xi;
    if fit.gev.xi < 0.0 && endpoint <= BOUND_MATTERS * largest {
        out.push(BlockTest {
            test: BlockTestKind::Bounded,
            outcome: bounded(sample, fit, alpha),
        });
    }
    out
}

/// KS of the odd blocks above the even fit's censoring level against that fit.
fn held_out_fit(x: &[f64], alpha: f64) -> Outcome {
    let even: Vec<f64> = x.iter().step_by(2).copied().collect();
    let Some((s, f)) = gev::choose(&even) else {
        return Outcome::Untested {
            why: "the even blocks alone do not fit a GEV".into(),
        };
    };
    let g = f.gev;
    let at = g.cdf(s.at).clamp(0.0, 1.0);
    let mut u: Vec<f64> = x
        .iter()
        .skip(1)
        .step_by(2)
        .filter(|&&v| v > s.at)
        .map(|&v| ((g.cdf(v) - at) / (1.0 - at)).clamp(0.0, 1.0))
        .collect();
    if u.len() < 10 || at >= 1.0 {
        return Outcome::Untested {
            why: format!(
                "{} held-out blocks above the censoring level, 10 needed",
                u.len()
            ),
        };
    }
    u.sort_by(f64::total_cmp);
    let d = diag::ks_statistic(&u, &|v| v.clamp(0.0, 1.0));
    outcome(d, diag::kolmogorov_p(d, u.len() as f64), alpha)
}

/// χ² of equal rates of blocks above the 90th percentile across the segments.
fn same_rate(x: &[f64]) -> (f64, f64) {
    let mut s = x.to_vec();
    s.sort_by(f64::total_cmp);
    let level = s[(s.len() * 9 / 10).min(s.len() - 1)];
    let per = (x.len() / SEGMENTS).max(1);
    let mut counts = [0f64; SEGMENTS];
    for (i, &v) in x.iter().enumerate() {
        if v > level {
            counts[(i / per).min(SEGMENTS - 1)] += 1.0;
        }
    }
    let mean = counts.iter().sum::<f64>() / SEGMENTS as f64;
    if mean <= 0.0 {
        return (0.0, f64::NAN);
    }
    let chi: f64 = counts.iter().map(|c| (c - mean).powi(2) / mean).sum();
    let dist = ChiSquared::new((SEGMENTS - 1) as f64).expect("segments > 1");
    (chi, 1.0 - dist.cdf(chi))
}

/// The likelihood ratio of `ξ = 0` against the fitted `ξ < 0`: passes when it rejects `ξ = 0`.
fn bounded(sample: &gev::Sample, fit: &gev::Fit, alpha: f64) -> Outcome {
    let scale = fit.gev.sigma;
    let nll = |p: &[f64; 2]| -gev::log_likelihood(sample, p[0] * scale, p[1].exp() * scale, 0.0);
    let (_, v) = gev::nelder_mead(&nll, [fit.gev.mu / scale, 0.0], [0.3, 0.2], 2000);
    if !v.is_finite() {
        return Outcome::Untested {
            why: "the unbounded (Gumbel) fit failed".into(),
        };
    }
    let lr = (2.0 * (fit.log_likelihood + v)).max(0.0);
    let p = 1.0 - ChiSquared::new(1.0).expect("1 degree").cdf(lr);
    if p < alpha {
        Outcome::Pass { statistic: lr, p }
    } else {
        Outcome::Fail { statistic: lr, p }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gev_draws(g: gev::Gev, n: usize, seed: u64) -> Vec<f64> {
        let mut r = diag::generator(seed);
        (0..n).map(|_| g.level(r.unit().max(1e-12))).collect()
    }

    #[test]
    fn stationary_gev_blocks_pass_and_a_changed_second_half_fails() {
        let g = gev::Gev {
            mu: 100.0,
            sigma: 10.0,
            xi: 0.1,
        };
        let x = gev_draws(g, 2000, 5);
        let (s, f) = gev::choose(&x).unwrap();
        let t = tests(&x, &s, &f, 0.01);
        assert!(t.iter().all(BlockTest::passed), "{t:?}");
        // The second half's blocks 1.5 × higher: the halves and the segments fail.
        let mut y = x.clone();
        for v in y.iter_mut().skip(1000) {
            *v *= 1.5;
        }
        let (s, f) = gev::choose(&y).unwrap();
        let t = tests(&y, &s, &f, 0.01);
        let failed: Vec<_> = t.iter().filter(|b| !b.passed()).map(|b| b.test).collect();
        assert!(failed.contains(&BlockTestKind::SameTail), "{t:?}");
        assert!(failed.contains(&BlockTestKind::SameRate), "{t:?}");
    }

    #[test]
    fn a_bounded_fit_is_tested_against_the_unbounded_one() {
        // Uniform block maxima: a GEV with ξ = −1, clearly bounded.
        let mut r = diag::generator(8);
        let x: Vec<f64> = (0..2000).map(|_| 100.0 + 10.0 * r.unit()).collect();
        let (s, f) = gev::choose(&x).unwrap();
        assert!(f.gev.xi < 0.0, "{:?}", f.gev);
        let b = bounded(&s, &f, 0.01);
        assert!(matches!(b, Outcome::Pass { .. }), "{b:?}");
    }
}
