//! Whether two groups of runs differ beyond run-to-run noise: a two-sided Mann–Whitney U test
//! on one statistic per run (each run's max, p99, …), stratified (van Elteren's test) when the
//! groups hold runs of several scenarios or load cases.
//!
//! Merging the runs of a group into one histogram answers "what did the group see", but not
//! "would another set of repeats see the same": two groups measured on the same kernel can
//! differ by 20 % in their merged max while their per-run maxima interleave. The test ranks
//! every run's value of both groups together; when the ranks of one group are not shifted
//! against the other's (two-sided p ≥ [`ALPHA`]), the change is noise.
//!
//! Exact p-values (the distribution of U counted by recursion, ties given mid-ranks) for up to
//! [`EXACT_MAX`] runs per group, else the normal approximation with the tie correction. With
//! α = 0.05 a test needs at least 4 runs per group (4 vs 4: the smallest two-sided p is
//! 2/70 ≈ 0.029); with fewer, no difference can be significant, and the test cannot decide
//! ([`Test::decidable`]: the verdict is *untested*).
//!
//! Runs of different scenarios or load cases are not exchangeable: pooling them lets a level
//! difference between scenarios, or load that changed between two campaigns, pass for a
//! difference between groups. [`van_elteren`] ranks the runs within each stratum (runs equal in
//! scenario and load case) and sums the strata's U statistics with van Elteren's weights
//! 1/(Nₛ + 1) (van Elteren 1960; Lehmann, *Nonparametrics*, 1975, §3.3): each stratum compares
//! like with like, and the strata's evidence adds up (3 strata of 3 vs 3 runs can reach
//! p = 2/20³, one stratum of 3 vs 3 only 0.1). With one stratum it is the Mann–Whitney test.

/// The significance level: a change is significant when the two-sided p-value is below it.
pub const ALPHA: f64 = 0.05;
/// Largest group for which the exact distribution of U is counted.
pub const EXACT_MAX: usize = 40;

/// Largest number of points of the exact distribution of the stratified statistic (the product
/// of the strata's n1·n2 + 1); beyond it the normal approximation is used.
const EXACT_POINTS: usize = 200_000;

/// The outcome of a (stratified) Mann–Whitney U test.
#[derive(Debug, Clone, PartialEq)]
pub struct Test {
    /// U of the candidate group (the number of (baseline, candidate) pairs in which the
    /// candidate's value is higher, ties counting ½), summed over the strata (the test itself
    /// weights each stratum's U by 1/(Nₛ + 1)).
    pub u: f64,
    /// The two-sided p-value.
    pub p: f64,
    /// The smallest two-sided p-value this design can give (all strata fully separated in the
    /// same direction): when it is not below [`ALPHA`], no outcome can be significant.
    pub min_p: f64,
    /// Runs of (baseline, candidate) in each stratum tested.
    pub sizes: Vec<(usize, usize)>,
}

impl Test {
    /// Whether the difference is significant at [`ALPHA`].
    pub fn significant(&self) -> bool {
        self.p < ALPHA
    }

    /// Whether the design has enough runs for any outcome to be significant at [`ALPHA`].
    pub fn decidable(&self) -> bool {
        self.min_p < ALPHA
    }

    /// The runs per side for messages: `1 per side`, `2 vs 3`, with `× 5 strata` when the
    /// strata are alike, else each stratum's (`1 vs 1, 2 vs 1`).
    pub fn runs_text(&self) -> String {
        let one = |&(a, b): &(usize, usize)| {
            if a == b {
                format!("{a} per side")
            } else {
                format!("{a} vs {b}")
            }
        };
        match self.sizes.as_slice() {
            [s] => one(s),
            [s, rest @ ..] if rest.iter().all(|r| r == s) => {
                format!("{} × {} strata", one(s), self.sizes.len())
            }
            all => all.iter().map(one).collect::<Vec<_>>().join(", "),
        }
    }
}

/// Tests `base` against `cand` within each stratum (one value per run, each stratum holding at
/// least one run per side) and combines the strata with van Elteren's weights; `None` when no
/// stratum has runs on both sides.
pub fn van_elteren(strata: &[(Vec<f64>, Vec<f64>)]) -> Option<Test> {
    let strata: Vec<&(Vec<f64>, Vec<f64>)> = strata
        .iter()
        .filter(|(b, c)| !b.is_empty() && !c.is_empty())
        .collect();
    if strata.is_empty() {
        return None;
    }
    let weight = |b: &[f64], c: &[f64]| 1.0 / (b.len() + c.len() + 1) as f64;
    let us: Vec<f64> = strata.iter().map(|(b, c)| u_of(b, c)).collect();
    let weighted: f64 = strata
        .iter()
        .zip(&us)
        .map(|((b, c), u)| weight(b, c) * u)
        .sum();
    let points: f64 = strata
        .iter()
        .map(|(b, c)| (b.len() * c.len() + 1) as f64)
        .product();
    let exact = points <= EXACT_POINTS as f64
        && strata
            .iter()
            .all(|(b, c)| b.len() <= EXACT_MAX && c.len() <= EXACT_MAX);
    let p = if exact {
        let dist = stratified_distribution(
            strata
                .iter()
                .map(|(b, c)| (weight(b, c), u_distribution(b.len(), c.len()))),
        );
        two_sided(&dist, weighted)
    } else {
        stratified_normal_p(&strata, weighted)
    };
    // The extreme arrangement has probability Π 1/C(Nₛ, n1ₛ) = Π 1/Σ counts.
    let min_p: f64 = 2.0
        * strata
            .iter()
            .map(|(b, c)| 1.0 / binomial(b.len() + c.len(), b.len()))
            .product::<f64>();
    Some(Test {
        u: us.iter().sum(),
        p: p.min(1.0),
        min_p: min_p.min(1.0),
        sizes: strata.iter().map(|(b, c)| (b.len(), c.len())).collect(),
    })
}

/// C(n, k) as f64.
fn binomial(n: usize, k: usize) -> f64 {
    (1..=k).map(|i| (n - k + i) as f64 / i as f64).product()
}

/// U of the candidate: pairs in which its value is higher, ties counting ½.
fn u_of(base: &[f64], cand: &[f64]) -> f64 {
    cand.iter()
        .map(|&c| {
            base.iter()
                .map(|&b| match c.partial_cmp(&b) {
                    Some(std::cmp::Ordering::Greater) => 1.0,
                    Some(std::cmp::Ordering::Equal) => 0.5,
                    _ => 0.0,
                })
                .sum::<f64>()
        })
        .sum()
}

/// The distribution of Σ wₛ·Uₛ over independent strata: (value, probability), sorted by value.
fn stratified_distribution(strata: impl Iterator<Item = (f64, Vec<f64>)>) -> Vec<(f64, f64)> {
    let mut dist = vec![(0.0, 1.0)];
    for (w, counts) in strata {
        let total: f64 = counts.iter().sum();
        let mut next: Vec<(f64, f64)> = Vec::with_capacity(dist.len() * counts.len());
        for &(v, p) in &dist {
            for (k, c) in counts.iter().enumerate().filter(|(_, c)| **c > 0.0) {
                next.push((v + w * k as f64, p * c / total));
            }
        }
        next.sort_by(|a, b| a.0.total_cmp(&b.0));
        dist.clear();
        for (v, p) in next {
            match dist.last_mut() {
                Some(last) if (v - last.0).abs() < 1e-9 => last.1 += p,
                _ => dist.push((v, p)),
            }
        }
    }
    dist
}

/// Twice the smaller tail of `dist` at `x`.
fn two_sided(dist: &[(f64, f64)], x: f64) -> f64 {
    let lower: f64 = dist
        .iter()
        .filter(|(v, _)| *v <= x + 1e-9)
        .map(|d| d.1)
        .sum();
    let upper: f64 = dist
        .iter()
        .filter(|(v, _)| *v >= x - 1e-9)
        .map(|d| d.1)
        .sum();
    2.0 * lower.min(upper)
}

/// Two-sided p-value of the weighted sum from the normal approximation, each stratum's
/// variance tie-corrected.
fn stratified_normal_p(strata: &[&(Vec<f64>, Vec<f64>)], u: f64) -> f64 {
    let (mut mean, mut var) = (0.0, 0.0);
    for (b, c) in strata {
        let w = 1.0 / (b.len() + c.len() + 1) as f64;
        mean += w * (b.len() * c.len()) as f64 / 2.0;
        var += w * w * u_variance(b, c);
    }
    if var <= 0.0 {
        return 1.0;
    }
    let z = (u - mean).abs() / var.sqrt();
    2.0 * (1.0 - phi(z))
}

/// Tests `base` against `cand` (one value per run); `None` when a group has fewer than two
/// values.
pub fn mann_whitney(base: &[f64], cand: &[f64]) -> Option<Test> {
    if base.len() < 2 || cand.len() < 2 {
        return None;
    }
    van_elteren(&[(base.to_vec(), cand.to_vec())])
}

/// Two-sided exact p-value: twice the smaller tail of the distribution of U under the null
/// hypothesis (all orderings of the n1 + n2 values equally likely).
#[cfg(test)]
fn exact_p(u: f64, n1: usize, n2: usize) -> f64 {
    two_sided(
        &stratified_distribution(std::iter::once((1.0, u_distribution(n1, n2)))),
        u,
    )
}

/// Number of orderings giving U = k, for k in 0..=n1·n2 (f64: C(80, 40) exceeds u64).
fn u_distribution(n1: usize, n2: usize) -> Vec<f64> {
    // f[i][j] over U: f(i, j) = f(i − 1, j) shifted by j + f(i, j − 1).
    let max = n1 * n2;
    let mut prev: Vec<Vec<f64>> = (0..=n2).map(|_| vec![1.0]).collect();
    for i in 1..=n1 {
        let mut row: Vec<Vec<f64>> = Vec::with_capacity(n2 + 1);
        row.push(vec![1.0]);
        for j in 1..=n2 {
            let mut v = vec![0.0; i * j + 1];
            for (k, c) in prev[j].iter().enumerate() {
                v[k + j] += c;
            }
            for (k, c) in row[j - 1].iter().enumerate() {
                v[k] += c;
            }
            row.push(v);
        }
        prev = row;
    }
    let mut out = prev.pop().unwrap_or_default();
    out.resize(max + 1, 0.0);
    out
}

/// Two-sided p-value from the normal approximation with continuity and tie corrections.
#[cfg(test)]
fn normal_p(u: f64, base: &[f64], cand: &[f64]) -> f64 {
    let var = u_variance(base, cand);
    let mean = (base.len() * cand.len()) as f64 / 2.0;
    if var <= 0.0 {
        return 1.0;
    }
    let z = ((u - mean).abs() - 0.5).max(0.0) / var.sqrt();
    2.0 * (1.0 - phi(z))
}

/// The variance of U under the null hypothesis, corrected for ties.
fn u_variance(base: &[f64], cand: &[f64]) -> f64 {
    let (n1, n2) = (base.len() as f64, cand.len() as f64);
    let n = n1 + n2;
    let mut all: Vec<f64> = base.iter().chain(cand).copied().collect();
    all.sort_by(f64::total_cmp);
    let mut ties = 0.0;
    let mut i = 0;
    while i < all.len() {
        let j = all[i..].iter().take_while(|&&v| v == all[i]).count();
        let t = j as f64;
        ties += t * t * t - t;
        i += j;
    }
    n1 * n2 / 12.0 * ((n + 1.0) - ties / (n * (n - 1.0)))
}

/// The standard normal CDF (Abramowitz & Stegun 7.1.26 for erf, error below 1.5e-7).
fn phi(z: f64) -> f64 {
    let x = z / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.327_591_1 * x.abs());
    let poly = t
        * (0.254_829_592
            + t * (-0.284_496_736
                + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    let erf = 1.0 - poly * (-x * x).exp();
    let erf = if x < 0.0 { -erf } else { erf };
    0.5 * (1.0 + erf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_the_exact_distribution() {
        // n1 = n2 = 2: U ∈ {0, 1, 2, 2, 3, 4} over the 6 orderings.
        assert_eq!(u_distribution(2, 2), vec![1.0, 1.0, 2.0, 1.0, 1.0]);
        let d = u_distribution(4, 4);
        assert_eq!(d.iter().sum::<f64>(), 70.0);
        // Four runs per group fully separated: p = 2/70.
        let t = mann_whitney(&[1.0, 2.0, 3.0, 4.0], &[5.0, 6.0, 7.0, 8.0]).unwrap();
        assert_eq!(t.u, 16.0);
        assert!((t.p - 2.0 / 70.0).abs() < 1e-12 && t.significant());
        // Three per group can never be significant at 5 %.
        let t = mann_whitney(&[1.0, 2.0, 3.0], &[5.0, 6.0, 7.0]).unwrap();
        assert!((t.p - 0.1).abs() < 1e-12 && !t.significant());
        // Interleaved values: not significant.
        let t = mann_whitney(&[1.0, 3.0, 5.0, 7.0], &[2.0, 4.0, 6.0, 8.0]).unwrap();
        assert!(t.p > 0.5, "{t:?}");
        assert!(mann_whitney(&[1.0], &[2.0, 3.0]).is_none());
    }

    #[test]
    fn normal_approximation_agrees_with_the_exact_p() {
        let base: Vec<f64> = (0..30).map(|i| i as f64).collect();
        let cand: Vec<f64> = (0..30).map(|i| i as f64 + 9.5).collect();
        let u = mann_whitney(&base, &cand).unwrap().u;
        let exact = exact_p(u, 30, 30);
        let approx = normal_p(u, &base, &cand);
        assert!((exact - approx).abs() < 0.01, "{exact} vs {approx}");
        let big: Vec<f64> = (0..50).map(|i| i as f64 * 2.0).collect();
        let same: Vec<f64> = (0..50).map(|i| i as f64 * 2.0 + 1.0).collect();
        assert!(!mann_whitney(&big, &same).unwrap().significant());
    }
}
