//! The data of the tail's figures (`rtscope report --tail`, docs/report.md): the
//! threshold-stability path, the QQ points of the fit and the return levels, observed and
//! fitted. Pure functions of a [`Tail`] and its [`Analysis`]: the report only draws them, so
//! what it draws is what `rtscope tail` prints.

use crate::gpd::{self, Gpd};
use crate::threshold::{self, Candidate};
use crate::{Analysis, Shape, Tail};

/// Most observed points drawn in the QQ and return-level plots: every one of the largest
/// [`TOP_POINTS`] and evenly spaced ones below (a thousand points add nothing to the eye).
pub const MAX_POINTS: usize = 300;
/// The largest cluster maxima always drawn.
pub const TOP_POINTS: usize = 100;
/// Points of the fitted return-level curve.
const CURVE_POINTS: usize = 48;

/// One candidate threshold of the stability plot: the shape estimate and its interval.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct StabilityPoint {
    /// Threshold, ns.
    pub threshold_ns: f64,
    /// `ξ̂`.
    pub xi: f64,
    /// Half the width of its interval, `1.96 (1 + ξ̂)/√clusters` (as `rtscope tail` prints).
    pub half_width: f64,
}

/// What the tail's figures draw for one thread (the default: nothing, a refusal before a fit).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Figures {
    /// The fitted candidates, lowest threshold first.
    pub stability: Vec<StabilityPoint>,
    /// The chosen threshold, ns (`None`: none was stable).
    pub chosen_ns: Option<f64>,
    /// (GPD quantile, observed cluster maximum), ns, ascending (empty without a model).
    pub qq: Vec<(f64, f64)>,
    /// (exceedance probability per wake-up, latency ns) of the observed cluster maxima,
    /// smallest first (empty without a model).
    pub observed: Vec<(f64, f64)>,
    /// (exceedance probability per wake-up, latency ns) of the fitted tail, from the threshold's
    /// rate down to the smallest level's probability (empty without levels).
    pub curve: Vec<(f64, f64)>,
}

/// The shape estimate of a candidate with the half width of its interval (`None`: not fitted).
pub fn xi_interval(c: &Candidate) -> Option<(f64, f64)> {
    Some((c.fit?.xi, 1.96 * c.xi_se?))
}

/// The stability path of an analysis: every fitted candidate.
pub fn stability_path(a: &Analysis) -> Vec<StabilityPoint> {
    let mut out = Vec::new();
    for c in &a.stability {
        if let Some((xi, half_width)) = xi_interval(c) {
            out.push(StabilityPoint {
                threshold_ns: c.threshold,
                xi,
                half_width,
            });
        }
    }
    out
}

/// The excesses `maxima` sorted, each drawn one as `point(i, k, y)` (the `i`-th smallest `y`
/// of `k`): all when at most [`MAX_POINTS`], else every one of the largest [`TOP_POINTS`] and
/// evenly spaced ones below.
fn thinned(maxima: &[f64], point: &dyn Fn(usize, usize, f64) -> (f64, f64)) -> Vec<(f64, f64)> {
    let mut y = maxima.to_vec();
    y.sort_by(f64::total_cmp);
    let k = y.len();
    let step = if k <= MAX_POINTS {
        1
    } else {
        (k - TOP_POINTS).div_ceil(MAX_POINTS - TOP_POINTS)
    };
    let mut out = Vec::new();
    for (i, &v) in y.iter().enumerate() {
        if i % step == 0 || i + TOP_POINTS >= k {
            out.push(point(i, k, v));
        }
    }
    out
}

/// The QQ points of excesses `maxima` over `u` against `g`: the `i`-th smallest of `k` against
/// the GPD quantile at `(i + ½)/k`, both as latencies (`u` added), ns.
pub fn qq_points(maxima: &[f64], g: &Gpd, u: f64) -> Vec<(f64, f64)> {
    thinned(maxima, &|i, k, y| {
        let q = 1.0 - (i as f64 + 0.5) / k as f64;
        (u + g.excess_at(q), u + y)
    })
}

/// The observed return levels: the `i`-th largest of `k` cluster maxima (excesses over `u`,
/// `rate` clusters per wake-up) is exceeded with probability `rate · i/(k + 1)` per wake-up.
/// Smallest first, ns.
pub fn observed_levels(maxima: &[f64], rate: f64, u: f64) -> Vec<(f64, f64)> {
    thinned(maxima, &|i, k, y| {
        (rate * (k - i) as f64 / (k + 1) as f64, u + y)
    })
}

/// The fitted return levels `u + d(p)` ([`gpd::return_excess`], the levels' own formula) at
/// [`CURVE_POINTS`] probabilities evenly spaced on a log scale from `rate` down to `p_min`, ns.
pub fn level_curve(g: &Gpd, u: f64, rate: f64, p_min: f64) -> Vec<(f64, f64)> {
    let (a, b) = (rate.ln(), p_min.ln());
    let mut out = Vec::with_capacity(CURVE_POINTS);
    for i in 0..CURVE_POINTS {
        let p = (a + (b - a) * i as f64 / (CURVE_POINTS - 1) as f64).exp();
        out.push((p, u + gpd::return_excess(g, rate, p)));
    }
    out
}

/// The figures' data of `a`, the analysis of `tail`.
pub fn figures(tail: &Tail, a: &Analysis) -> Figures {
    let mut f = Figures {
        stability: stability_path(a),
        chosen_ns: a.model.as_ref().map(|m| m.threshold_ns),
        qq: Vec::new(),
        observed: Vec::new(),
        curve: Vec::new(),
    };
    let Some(m) = &a.model else {
        return f;
    };
    let c = threshold::decluster(&tail.points, m.threshold_ns);
    // The levels' GPD: the exponential instead of a negative shape, as `analyse` chose.
    let g = match m.shape {
        Shape::Gpd => Some(m.gpd),
        Shape::Exponential => gpd::fit_exponential(&c.maxima).map(|e| e.gpd),
    };
    let Some(g) = g else {
        return f;
    };
    f.qq = qq_points(&c.maxima, &g, m.threshold_ns);
    f.observed = observed_levels(&c.maxima, m.cluster_rate, m.threshold_ns);
    let p_min = a
        .levels
        .iter()
        .map(|l| l.probability)
        .fold(f64::NAN, f64::min);
    if p_min.is_finite() {
        f.curve = level_curve(&g, m.threshold_ns, m.cluster_rate, p_min);
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{analyse, Options};

    /// 20 µs plus a GPD of shape 0.1.
    fn heavy_tail(n: usize, seed: u64) -> Tail {
        let g = Gpd {
            sigma: 1000.0,
            xi: 0.1,
        };
        Tail::with_gpd_tail(20_000.0, g, n, seed)
    }

    #[test]
    fn the_figures_draw_what_the_analysis_says() {
        let tail = heavy_tail(20_000, 5);
        let a = analyse(&tail, &Options::default(), false);
        assert!(a.accepted(), "{:?}", a.refusals);
        let f = figures(&tail, &a);
        let m = a.model.as_ref().unwrap();
        // The stability path is the table `rtscope tail` prints, row by row.
        let who = crate::words::Who {
            run: "1".into(),
            thread: 0,
            cpu: Some(0),
            shared_cpu: false,
        };
        let text = crate::render::text(&who, &a);
        let fitted = a.stability.iter().filter(|c| c.fit.is_some()).count();
        assert!(fitted > 2);
        assert_eq!(f.stability.len(), fitted);
        for s in &f.stability {
            let row = format!("ξ = {:+.3} ± {:.3}", s.xi, s.half_width);
            assert!(text.contains(&row), "{row} not in\n{text}");
        }
        assert_eq!(f.chosen_ns, Some(m.threshold_ns));
        // The curve starts at the threshold and passes through every level's estimate.
        assert!((f.curve[0].1 - m.threshold_ns).abs() < 1e-6);
        assert_eq!(m.shape, Shape::Gpd);
        let g = m.gpd;
        for l in &a.levels {
            let at = m.threshold_ns + gpd::return_excess(&g, m.cluster_rate, l.probability);
            assert!((at - l.estimate_ns).abs() < 1e-6 * l.estimate_ns);
        }
        let last = f.curve.last().unwrap();
        let smallest = a.levels.iter().map(|l| l.probability).fold(1.0, f64::min);
        assert!((last.0 / smallest - 1.0).abs() < 1e-9);
        // The observed points are the cluster maxima (thinned), the largest last, at the
        // smallest probability; the QQ points lie near y = x for a good fit.
        assert_eq!(f.observed.len(), f.qq.len());
        assert!(f.observed.len() <= MAX_POINTS.min(m.clusters) && f.observed.len() > 100);
        assert!(f.observed.windows(2).all(|w| w[0].0 > w[1].0));
        assert_eq!(f.observed.last().unwrap().1, tail.max);
        let median = f.qq[f.qq.len() / 2];
        assert!((median.0 / median.1 - 1.0).abs() < 0.05, "{median:?}");
    }

    #[test]
    fn the_points_are_plotting_positions() {
        let g = Gpd {
            sigma: 2.0,
            xi: 0.0,
        };
        let qq = qq_points(&[3.0, 1.0, 2.0, 4.0], &g, 10.0);
        let obs: Vec<f64> = qq.iter().map(|p| p.1).collect();
        assert_eq!(obs, vec![11.0, 12.0, 13.0, 14.0]);
        // The median's quantile, −2 ln(1 − 0.375) for the second smallest of four.
        assert!((qq[1].0 - (10.0 - 2.0 * 0.625f64.ln())).abs() < 1e-12);
        let lv = observed_levels(&[3.0, 1.0, 2.0, 4.0], 0.01, 10.0);
        assert_eq!(lv[0], (0.01 * 4.0 / 5.0, 11.0));
        assert_eq!(lv[3], (0.01 / 5.0, 14.0));
        // Thinning keeps the top 100 and evenly spaced ones below, at most MAX_POINTS.
        let many: Vec<f64> = (1..=5000).map(f64::from).collect();
        let qq = qq_points(&many, &g, 0.0);
        assert!(qq.len() <= MAX_POINTS && qq.len() > MAX_POINTS - 10);
        assert_eq!(qq.last().unwrap().1, 5000.0);
        assert_eq!(qq[qq.len() - TOP_POINTS].1, 4901.0);
    }

    #[test]
    fn a_refusal_before_a_fit_has_nothing_to_draw() {
        let a = Analysis::refused(10, 5.0, crate::Refusal::NoDistribution, &Options::default());
        let tail = heavy_tail(10, 1);
        let f = figures(&tail, &a);
        assert!(f.stability.is_empty() && f.qq.is_empty() && f.curve.is_empty());
        assert_eq!(f.chosen_ns, None);
    }
}
