//! The threshold: candidates, declustering and the stability rule.
//!
//! Candidates are the values exceeded by `k_max`, `0.8 k_max`, `0.8² k_max`, … observations
//! (`k_max` = a tenth of the run, at most [`MAX_EXCEEDANCES`]) down to the minimum number of
//! cluster maxima. At each, exceedances close in time are merged into clusters (runs
//! declustering with the run length chosen by Ferro & Segers' (2003) intervals estimator of the
//! extremal index `θ`) and the GPD is fitted to the cluster maxima. The chosen threshold is the
//! lowest whose shape estimate `ξ̂` agrees with the estimate at every higher candidate within
//! 1.96 of that candidate's standard error `(1 + ξ̂)/√k` (Coles 2001, §4.3.4: above a valid
//! threshold the shape is constant, so the estimates should not drift; the higher thresholds,
//! with fewer exceedances, are the noisier ones).

use crate::gpd::{self, Gpd};

/// At most this many exceedances at the lowest candidate threshold (the cost of the
/// bootstrap grows with it; a tenth of a run of 100,000 wake-ups already is this many).
pub const MAX_EXCEEDANCES: usize = 10_000;
/// Ratio between neighbouring candidates' exceedance counts.
const STEP: f64 = 0.8;

/// One observation above the floor: its index in the run (`None` for binned data, which keep
/// no order) and value (ns).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    /// Position in the run, 0-based.
    pub index: Option<u64>,
    /// Value, ns.
    pub value: f64,
}

/// The exceedances of a threshold merged into clusters.
#[derive(Debug, Clone, PartialEq)]
pub struct Clusters {
    /// Exceedances before declustering.
    pub exceedances: usize,
    /// The excess of each cluster maximum over the threshold, in time order.
    pub maxima: Vec<f64>,
    /// The index of each cluster's first exceedance (empty for binned data).
    pub starts: Vec<u64>,
    /// How many exceedances each cluster holds, in time order (each 1 for binned data).
    pub sizes: Vec<u64>,
    /// Gaps between clusters less the run length, in observations (empty for binned data).
    pub gaps: Vec<f64>,
    /// The extremal index estimate (1 for binned data: no order, no clusters).
    pub extremal_index: f64,
    /// The run length: exceedances at most this many wake-ups apart are one cluster (0 for
    /// binned data).
    pub run_length: f64,
}

/// Ferro & Segers' (2003) intervals estimator of the extremal index from inter-exceedance
/// times.
fn extremal_index(t: &[f64]) -> f64 {
    if t.is_empty() {
        return 1.0;
    }
    let m = t.len() as f64;
    let tmax = t.iter().cloned().fold(0.0, f64::max);
    let theta = if tmax <= 2.0 {
        let s: f64 = t.iter().sum();
        2.0 * s * s / (m * t.iter().map(|v| v * v).sum::<f64>())
    } else {
        let s: f64 = t.iter().map(|v| v - 1.0).sum();
        2.0 * s * s / (m * t.iter().map(|v| (v - 1.0) * (v - 2.0)).sum::<f64>())
    };
    if theta.is_finite() {
        theta.clamp(1.0 / (m + 1.0), 1.0)
    } else {
        1.0
    }
}

/// The exceedances of `u` among `points` (in index order for ordered data), declustered.
pub fn decluster(points: &[Point], u: f64) -> Clusters {
    let above: Vec<&Point> = points.iter().filter(|p| p.value > u).collect();
    let k = above.len();
    if above.iter().any(|p| p.index.is_none()) {
        return Clusters {
            exceedances: k,
            maxima: above.iter().map(|p| p.value - u).collect(),
            starts: Vec::new(),
            sizes: vec![1; k],
            gaps: Vec::new(),
            extremal_index: 1.0,
            run_length: 0.0,
        };
    }
    let idx: Vec<u64> = above.iter().map(|p| p.index.unwrap_or(0)).collect();
    let t: Vec<f64> = idx.windows(2).map(|w| (w[1] - w[0]) as f64).collect();
    let theta = extremal_index(&t);
    // The C − 1 largest gaps separate C clusters; gaps up to the C-th largest stay inside.
    let c = ((theta * k as f64).floor() as usize).max(1);
    let mut sorted = t.clone();
    sorted.sort_by(f64::total_cmp);
    sorted.reverse();
    let run = if c > sorted.len() { 0.0 } else { sorted[c - 1] };
    let (mut maxima, mut starts, mut gaps) = (Vec::new(), Vec::new(), Vec::new());
    let mut sizes: Vec<u64> = Vec::new();
    let mut current = f64::NEG_INFINITY;
    for (i, p) in above.iter().enumerate() {
        if i == 0 || t[i - 1] > run {
            if i > 0 {
                maxima.push(current - u);
                gaps.push(t[i - 1] - run);
            }
            starts.push(idx[i]);
            sizes.push(1);
            current = p.value;
        } else {
            current = current.max(p.value);
            *sizes.last_mut().expect("a cluster started") += 1;
        }
    }
    if k > 0 {
        maxima.push(current - u);
    }
    Clusters {
        exceedances: k,
        maxima,
        starts,
        sizes,
        gaps,
        extremal_index: theta,
        run_length: run,
    }
}

/// One candidate threshold of the stability table.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Candidate {
    /// Threshold, ns.
    pub threshold: f64,
    /// Exceedances.
    pub exceedances: usize,
    /// Cluster maxima fitted.
    pub clusters: usize,
    /// The fit (`None`: none found).
    pub fit: Option<Gpd>,
    /// Standard error of `ξ̂`, `(1 + ξ̂)/√clusters` (asymptotic, for `ξ > −0.5`).
    pub xi_se: Option<f64>,
    /// The modified scale `σ − ξ u`, constant above a valid threshold too.
    pub sigma_star: Option<f64>,
}

/// The candidate thresholds of `values_desc` (every value above the floor, descending) of a
/// run of `observations`: the values exceeded by `k_max · 0.8^j` observations (`k_max` a
/// tenth of the run, at most [`MAX_EXCEEDANCES`]), down to `min_clusters`.
pub fn candidates(values_desc: &[f64], observations: u64, min_clusters: usize) -> Vec<f64> {
    let k_max = values_desc
        .len()
        .saturating_sub(1)
        .min(MAX_EXCEEDANCES)
        .min((observations / 10) as usize);
    let mut out: Vec<f64> = Vec::new();
    let mut k = k_max as f64;
    while k.round() as usize >= min_clusters {
        let u = values_desc[k.round() as usize];
        if out.last() != Some(&u) {
            out.push(u);
        }
        k *= STEP;
    }
    out
}

/// Fits every candidate.
pub fn stability(points: &[Point], thresholds: &[f64], min_clusters: usize) -> Vec<Candidate> {
    thresholds
        .iter()
        .map(|&u| {
            let c = decluster(points, u);
            let fit = (c.maxima.len() >= min_clusters)
                .then(|| gpd::fit(&c.maxima))
                .flatten();
            Candidate {
                threshold: u,
                exceedances: c.exceedances,
                clusters: c.maxima.len(),
                fit: fit.map(|f| f.gpd),
                xi_se: fit.map(|f| (1.0 + f.gpd.xi).max(0.0) / (c.maxima.len() as f64).sqrt()),
                sigma_star: fit.map(|f| f.gpd.sigma - f.gpd.xi * u),
            }
        })
        .collect()
}

/// The rule: the lowest fitted candidate whose `ξ̂` is within 1.96 standard errors of every
/// higher fitted candidate's (by the higher one's error), with at least two higher candidates
/// to confirm it. `None` when no candidate is stable.
pub fn choose(table: &[Candidate]) -> Option<usize> {
    let fitted: Vec<(usize, f64, f64)> = table
        .iter()
        .enumerate()
        .filter_map(|(i, c)| Some((i, c.fit?.xi, c.xi_se?)))
        .collect();
    (0..fitted.len().saturating_sub(2))
        .find(|&a| {
            fitted[a + 1..]
                .iter()
                .all(|&(_, xi, se)| (xi - fitted[a].1).abs() <= 1.96 * se.max(1e-9))
        })
        .map(|a| fitted[a].0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ordered(values: &[f64]) -> Vec<Point> {
        values
            .iter()
            .enumerate()
            .map(|(i, &v)| Point {
                index: Some(i as u64),
                value: v,
            })
            .collect()
    }

    #[test]
    fn neighbouring_exceedances_form_one_cluster() {
        // Bursts of three at 100, 200, …: each burst one cluster keeping its maximum (the
        // intervals estimator, made for random gaps, gives θ ≈ 0.62 on these regular ones).
        let mut v = vec![0.0; 1000];
        for b in 1..10 {
            for (j, x) in [5.0, 9.0, 6.0].iter().enumerate() {
                v[b * 100 + j] = *x;
            }
        }
        let c = decluster(&ordered(&v), 1.0);
        assert_eq!(c.exceedances, 27);
        assert_eq!(c.maxima, vec![8.0; 9]);
        assert_eq!(c.starts, (1..10).map(|b| b * 100).collect::<Vec<u64>>());
        assert_eq!(c.sizes, vec![3; 9]);
        assert!(c.extremal_index < 1.0);
        // Isolated exceedances stay alone.
        let c = decluster(
            &ordered(&[0.0, 3.0, 0.0, 0.0, 4.0, 0.0, 0.0, 0.0, 2.0]),
            1.0,
        );
        assert_eq!(c.maxima, vec![2.0, 3.0, 1.0]);
    }

    #[test]
    fn candidates_step_down_to_the_minimum() {
        let desc: Vec<f64> = (0..1001).rev().map(f64::from).collect();
        let c = candidates(&desc, 10_010, 100);
        assert_eq!(c.first(), Some(&0.0));
        assert_eq!(c.len(), 11); // 1000, 800, 640, …, 107
        assert!(c.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn the_rule_takes_the_lowest_stable_candidate() {
        let cand = |xi: f64, se: f64| Candidate {
            threshold: 0.0,
            exceedances: 0,
            clusters: 0,
            fit: Some(Gpd { sigma: 1.0, xi }),
            xi_se: Some(se),
            sigma_star: None,
        };
        // The first drifts away from the others; from the second on they agree.
        let t = [
            cand(0.5, 0.05),
            cand(0.0, 0.05),
            cand(0.02, 0.06),
            cand(-0.03, 0.08),
        ];
        assert_eq!(choose(&t), Some(1));
        let drifting = [cand(0.0, 0.01), cand(0.2, 0.01), cand(0.4, 0.01)];
        assert_eq!(choose(&drifting), None);
        assert_eq!(choose(&[]), None);
    }
}
