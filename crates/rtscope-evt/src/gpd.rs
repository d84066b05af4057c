//! The generalized Pareto distribution (GPD) of the excesses `y = x − u` over a threshold `u`:
//! `P(Y ≤ y) = 1 − (1 + ξ y / σ)^(−1/ξ)` (`1 − exp(−y / σ)` at `ξ = 0`), its maximum-likelihood
//! fit and the profile-likelihood interval of a return level (Coles 2001, §4.3 and §4.3.4).
//!
//! No optimiser crate: the fit is a one-dimensional search. With `θ = ξ / σ` the likelihood
//! maximised over `ξ` for a fixed `θ` has the closed form `ξ(θ) = mean(ln(1 + θ y))` (Grimshaw
//! 1993), so the maximum-likelihood estimate is the maximum of a function of one variable,
//! found on a grid and refined by golden-section search. The profile likelihood of a return
//! level is again one-dimensional (over `ξ`). A general optimiser (argmin, a Nelder–Mead) would
//! add code to the static binary for no gain on problems of one variable.

/// A fitted or given GPD.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Gpd {
    /// Scale `σ > 0` (the unit of the data).
    pub sigma: f64,
    /// Shape `ξ`: `< 0` a bounded tail (endpoint `σ / −ξ` above the threshold), `0`
    /// exponential, `> 0` a heavy tail without an upper bound.
    pub xi: f64,
}

/// `|ξ|` below this is treated as 0 (the exponential limit) in the closed forms.
const XI_ZERO: f64 = 1e-9;
/// The shapes the fit and the profiles consider: below −1 the likelihood is unbounded (Coles
/// 2001, §4.3.3 via Smith 1985); above 3 no latency tail is plausible (no finite mean at 1).
pub const XI_RANGE: (f64, f64) = (-1.0, 3.0);

impl Gpd {
    /// `P(Y ≤ y)`.
    pub fn cdf(&self, y: f64) -> f64 {
        if y <= 0.0 {
            return 0.0;
        }
        if self.xi.abs() < XI_ZERO {
            return -(-y / self.sigma).exp_m1();
        }
        let t = 1.0 + self.xi * y / self.sigma;
        if t <= 0.0 {
            return 1.0;
        }
        1.0 - (-(t.ln()) / self.xi).exp()
    }

    /// The excess exceeded with probability `q` (0 < q ≤ 1): `F⁻¹(1 − q)`.
    pub fn excess_at(&self, q: f64) -> f64 {
        if self.xi.abs() < XI_ZERO {
            return -self.sigma * q.ln();
        }
        self.sigma / self.xi * (-self.xi * q.ln()).exp_m1()
    }

    /// One excess drawn from `u`, uniform in (0, 1].
    pub fn draw(&self, u: f64) -> f64 {
        self.excess_at(u)
    }

    /// The upper end of the support above the threshold (`None`: unbounded).
    pub fn endpoint(&self) -> Option<f64> {
        (self.xi < -XI_ZERO).then(|| self.sigma / -self.xi)
    }
}

/// The log-likelihood of excesses `y` (all > 0) under `(σ, ξ)`; −∞ outside the support.
pub fn log_likelihood(y: &[f64], sigma: f64, xi: f64) -> f64 {
    if sigma <= 0.0 || !sigma.is_finite() {
        return f64::NEG_INFINITY;
    }
    let k = y.len() as f64;
    if xi.abs() < XI_ZERO {
        return -k * sigma.ln() - y.iter().sum::<f64>() / sigma;
    }
    let mut s = 0.0;
    for &v in y {
        let t = xi * v / sigma;
        if t <= -1.0 {
            return f64::NEG_INFINITY;
        }
        s += t.ln_1p();
    }
    -k * sigma.ln() - (1.0 + 1.0 / xi) * s
}

/// The fit: parameters and the maximised log-likelihood.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fit {
    /// The estimate.
    pub gpd: Gpd,
    /// The log-likelihood at the estimate.
    pub log_likelihood: f64,
}

/// The profile over `θ = ξ / σ`: `(log-likelihood, ξ, σ)`, `None` outside the support or the
/// shape range. One pass over the excesses: with `ξ = mean ln(1 + θ y)` and `σ = ξ / θ`, the
/// log-likelihood's sum `Σ ln(1 + ξ y / σ)` is the same `Σ ln(1 + θ y)` (the fit's cost is this
/// sum, some 300 times per fit).
fn profile_theta(y: &[f64], theta: f64) -> Option<(f64, f64, f64)> {
    let k = y.len() as f64;
    let mean = y.iter().sum::<f64>() / k;
    if (theta * mean).abs() < 1e-12 {
        let (xi, sigma) = (theta * mean, mean);
        return ((XI_RANGE.0..=XI_RANGE.1).contains(&xi) && sigma > 0.0)
            .then(|| (log_likelihood(y, sigma, xi), xi, sigma));
    }
    let mut s = 0.0;
    for &v in y {
        let t = theta * v;
        if t <= -1.0 {
            return None;
        }
        s += t.ln_1p();
    }
    let xi = s / k;
    let sigma = xi / theta;
    if !(XI_RANGE.0..=XI_RANGE.1).contains(&xi) || sigma <= 0.0 || !sigma.is_finite() {
        return None;
    }
    let ll = if xi.abs() < XI_ZERO {
        log_likelihood(y, sigma, xi)
    } else {
        -k * sigma.ln() - (1.0 + 1.0 / xi) * s
    };
    Some((ll, xi, sigma))
}

/// Point `i` of [`maximise`]'s grid of `steps + 1` points over `[lo, hi]`.
fn grid_point(lo: f64, hi: f64, steps: usize, i: usize) -> f64 {
    lo + (hi - lo) / steps as f64 * i as f64
}

/// Maximises `f` over `[lo, hi]`: the best point of a grid of `steps + 1` points, then golden
/// section between its neighbours. Returns `(argmax, max)`; `None` if `f` is −∞ everywhere.
pub fn maximise(f: &dyn Fn(f64) -> f64, lo: f64, hi: f64, steps: usize) -> Option<(f64, f64)> {
    let h = (hi - lo) / steps as f64;
    let (mut best, mut best_v) = (lo, f64::NEG_INFINITY);
    for i in 0..=steps {
        let x = grid_point(lo, hi, steps, i);
        let v = f(x);
        if v > best_v {
            (best, best_v) = (x, v);
        }
    }
    if !best_v.is_finite() {
        return None;
    }
    let (mut a, mut b) = ((best - h).max(lo), (best + h).min(hi));
    let g = (5f64.sqrt() - 1.0) / 2.0;
    let (mut c, mut d) = (b - g * (b - a), a + g * (b - a));
    let (mut fc, mut fd) = (f(c), f(d));
    for _ in 0..60 {
        if fc >= fd {
            (b, d, fd) = (d, c, fc);
            c = b - g * (b - a);
            fc = f(c);
        } else {
            (a, c, fc) = (c, d, fd);
            d = a + g * (b - a);
            fd = f(d);
        }
    }
    let (x, v) = if fc >= fd { (c, fc) } else { (d, fd) };
    Some(if v >= best_v { (x, v) } else { (best, best_v) })
}

/// The maximum-likelihood fit of excesses `y` (all > 0, at least 2). `None` when no parameter
/// in the shape range has a finite likelihood (all excesses equal, say).
pub fn fit(y: &[f64]) -> Option<Fit> {
    if y.len() < 2 {
        return None;
    }
    let ymax = y.iter().cloned().fold(0.0, f64::max);
    if ymax <= 0.0 {
        return None;
    }
    // θ = (e^t − 1) / ymax maps t ∈ ℝ onto the support θ > −1/ymax, and t = 0 is θ = 0.
    let theta = |t: f64| t.exp_m1() / ymax;
    let f = |t: f64| profile_theta(y, theta(t)).map_or(f64::NEG_INFINITY, |p| p.0);
    let (t, ll) = maximise(&f, -30.0, 15.0, 180)?;
    let (_, xi, sigma) = profile_theta(y, theta(t))?;
    Some(Fit {
        gpd: Gpd { sigma, xi },
        log_likelihood: ll,
    })
}

/// The exponential fit (`ξ = 0`): `σ̂` the mean excess.
pub fn fit_exponential(y: &[f64]) -> Option<Fit> {
    let mean = y.iter().sum::<f64>() / y.len() as f64;
    (mean > 0.0).then(|| Fit {
        gpd: Gpd {
            sigma: mean,
            xi: 0.0,
        },
        log_likelihood: log_likelihood(y, mean, 0.0),
    })
}

/// A return level's excess `d = z − u` for a per-observation exceedance rate `rate` of the
/// threshold and a target probability `p` per observation: `σ/ξ ((rate/p)^ξ − 1)`.
pub fn return_excess(g: &Gpd, rate: f64, p: f64) -> f64 {
    g.excess_at(p / rate)
}

/// The profile log-likelihood of the return excess `d` (with `L = ln(rate / p) > 0`): the
/// likelihood maximised over `ξ` with `σ = d ξ / (e^(ξ L) − 1)`.
///
/// Only whether it reaches `cut` is asked: the point of the maximiser's grid nearest `probe` (the
/// fit's shape) is tried first, and if it reaches the cut so does the maximum, which is at least
/// every grid point's value: the same answer as the whole maximisation, at one likelihood instead
/// of some 140 for every excess inside the interval.
fn profile_return_reaches(
    y: &[f64],
    d: f64,
    l: f64,
    shapes: (f64, f64),
    probe: f64,
    cut: f64,
) -> bool {
    let f = |xi: f64| {
        let sigma = if xi.abs() < XI_ZERO {
            d / l
        } else {
            d * xi / (xi * l).exp_m1()
        };
        log_likelihood(y, sigma, xi)
    };
    if shapes.0 == shapes.1 {
        return f(shapes.0) >= cut;
    }
    const STEPS: usize = 80;
    let h = (shapes.1 - shapes.0) / STEPS as f64;
    let i = ((probe - shapes.0) / h).round().clamp(0.0, STEPS as f64) as usize;
    if f(grid_point(shapes.0, shapes.1, STEPS, i)) >= cut {
        return true;
    }
    maximise(&f, shapes.0, shapes.1, STEPS).is_some_and(|m| m.1 >= cut)
}

/// The profile-likelihood confidence interval of the return excess at probability `p` per
/// observation: the excesses `d` whose profile log-likelihood is within `chi2 / 2` of the
/// maximum (`chi2` the χ²₁ quantile of the confidence level). The upper end is `None` when the
/// profile stays above the cut up to 10⁶ times the estimate (the data do not bound it). A fit
/// with `ξ` exactly 0 is the exponential model: its profile keeps `ξ = 0`.
pub fn return_interval(y: &[f64], fit: &Fit, rate: f64, p: f64, chi2: f64) -> (f64, Option<f64>) {
    let shapes = if fit.gpd.xi == 0.0 {
        (0.0, 0.0)
    } else {
        XI_RANGE
    };
    let l = (rate / p).ln();
    let d_hat = return_excess(&fit.gpd, rate, p);
    let cut = fit.log_likelihood - chi2 / 2.0;
    let below = |d: f64| !profile_return_reaches(y, d, l, shapes, fit.gpd.xi, cut);
    // Lower end: between a tiny excess (far below the cut) and the estimate.
    let lower = bisect_log(&below, d_hat * 1e-9, d_hat, true);
    // Upper end: double until the profile falls below the cut.
    let mut hi = d_hat * 2.0;
    while !below(hi) {
        if hi > d_hat * 1e6 {
            return (lower, None);
        }
        hi *= 2.0;
    }
    (lower, Some(bisect_log(&below, hi / 2.0, hi, false)))
}

/// Bisection in log space for the boundary of `below` between `a` and `b`; `below(a)` is
/// `below_at_a`, `below(b)` the opposite.
fn bisect_log(below: &dyn Fn(f64) -> bool, a: f64, b: f64, below_at_a: bool) -> f64 {
    let (mut a, mut b) = (a.ln(), b.ln());
    for _ in 0..50 {
        let m = (a + b) / 2.0;
        if below(m.exp()) == below_at_a {
            a = m;
        } else {
            b = m;
        }
        if (b - a).abs() < 1e-7 {
            break;
        }
    }
    ((a + b) / 2.0).exp()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(g: &Gpd, n: usize, seed: u64) -> Vec<f64> {
        let mut r = crate::diag::generator(seed);
        (0..n).map(|_| g.draw(r.unit())).collect()
    }

    #[test]
    fn cdf_and_excess_are_inverse() {
        for xi in [-0.4, 0.0, 0.3] {
            let g = Gpd { sigma: 2.0, xi };
            for q in [0.5, 1e-3, 1e-9] {
                let y = g.excess_at(q);
                assert!(
                    (1.0 - g.cdf(y) - q).abs() < 1e-9 * q.max(1e-6) * 1e3,
                    "{xi} {q}"
                );
            }
        }
    }

    #[test]
    fn the_fit_recovers_known_parameters() {
        for (xi, seed) in [(-0.3, 1), (0.0, 2), (0.2, 3)] {
            let truth = Gpd { sigma: 1000.0, xi };
            let y = sample(&truth, 5000, seed);
            let f = fit(&y).expect("fits");
            assert!((f.gpd.xi - xi).abs() < 0.06, "ξ {} vs {xi}", f.gpd.xi);
            assert!(
                (f.gpd.sigma / 1000.0 - 1.0).abs() < 0.08,
                "σ {}",
                f.gpd.sigma
            );
            // The estimate is a maximum: nearby parameters are less likely.
            for (ds, dx) in [(1.01, 0.0), (0.99, 0.0), (1.0, 0.01), (1.0, -0.01)] {
                let near = log_likelihood(&y, f.gpd.sigma * ds, f.gpd.xi + dx);
                assert!(near <= f.log_likelihood + 1e-6);
            }
        }
    }

    #[test]
    fn the_interval_holds_the_estimate_and_widens_with_extrapolation() {
        let y = sample(
            &Gpd {
                sigma: 1.0,
                xi: 0.1,
            },
            300,
            9,
        );
        let f = fit(&y).unwrap();
        let mut last = 0.0;
        for p in [1e-2, 1e-4, 1e-6] {
            let d = return_excess(&f.gpd, 1.0, p);
            let (lo, hi) = return_interval(&y, &f, 1.0, p, 3.841);
            let hi = hi.unwrap_or(f64::INFINITY);
            assert!(lo < d && d < hi, "{lo} {d} {hi}");
            assert!(hi / lo > last, "relative width grows");
            last = hi / lo;
        }
    }

    #[test]
    fn a_constant_sample_does_not_fit() {
        assert!(fit(&[]).is_none());
        assert!(fit(&[0.0, 0.0, 0.0]).is_none());
    }
}
