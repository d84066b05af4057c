//! Whether two groups of runs differ beyond run-to-run noise: a two-sided Mann–Whitney U test
//! on one statistic per run (each run's max, p99, …).
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
//! 2/70 ≈ 0.029); with fewer, no difference can be significant.

/// The significance level: a change is significant when the two-sided p-value is below it.
pub const ALPHA: f64 = 0.05;
/// Largest group for which the exact distribution of U is counted.
pub const EXACT_MAX: usize = 40;

/// The outcome of a Mann–Whitney U test.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Test {
    /// U of the candidate group (the number of (baseline, candidate) pairs in which the
    /// candidate's value is higher, ties counting ½).
    pub u: f64,
    /// The two-sided p-value.
    pub p: f64,
}

impl Test {
    /// Whether the difference is significant at [`ALPHA`].
    pub fn significant(&self) -> bool {
        self.p < ALPHA
    }
}

/// Tests `base` against `cand` (one value per run); `None` when a group has fewer than two
/// values.
pub fn mann_whitney(base: &[f64], cand: &[f64]) -> Option<Test> {
    let (n1, n2) = (base.len(), cand.len());
    if n1 < 2 || n2 < 2 {
        return None;
    }
    let u: f64 = cand
        .iter()
        .map(|&c| {
            base.iter()
                .map(|&b| match c.partial_cmp(&b) {
                    Some(std::cmp::Ordering::Greater) => 1.0,
                    Some(std::cmp::Ordering::Equal) => 0.5,
                    _ => 0.0,
                })
                .sum::<f64>()
        })
        .sum();
    let p = if n1 <= EXACT_MAX && n2 <= EXACT_MAX {
        exact_p(u, n1, n2)
    } else {
        normal_p(u, base, cand)
    };
    Some(Test { u, p: p.min(1.0) })
}

/// Two-sided exact p-value: twice the smaller tail of the distribution of U under the null
/// hypothesis (all orderings of the n1 + n2 values equally likely).
fn exact_p(u: f64, n1: usize, n2: usize) -> f64 {
    let counts = u_distribution(n1, n2);
    let total: f64 = counts.iter().sum();
    // Mid-ranks make U a multiple of ½: compare in halves.
    let lower: f64 = counts
        .iter()
        .enumerate()
        .filter(|(k, _)| (*k as f64) <= u + 1e-9)
        .map(|(_, c)| c)
        .sum();
    let upper: f64 = counts
        .iter()
        .enumerate()
        .filter(|(k, _)| (*k as f64) >= u - 1e-9)
        .map(|(_, c)| c)
        .sum();
    2.0 * lower.min(upper) / total
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
fn normal_p(u: f64, base: &[f64], cand: &[f64]) -> f64 {
    let (n1, n2) = (base.len() as f64, cand.len() as f64);
    let n = n1 + n2;
    let mut all: Vec<f64> = base.iter().chain(cand).copied().collect();
    all.sort_by(|a, b| a.total_cmp(b));
    let mut ties = 0.0;
    let mut i = 0;
    while i < all.len() {
        let j = all[i..].iter().take_while(|&&v| v == all[i]).count();
        let t = j as f64;
        ties += t * t * t - t;
        i += j;
    }
    let mean = n1 * n2 / 2.0;
    let var = n1 * n2 / 12.0 * ((n + 1.0) - ties / (n * (n - 1.0)));
    if var <= 0.0 {
        return 1.0;
    }
    let z = ((u - mean).abs() - 0.5).max(0.0) / var.sqrt();
    2.0 * (1.0 - phi(z))
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
