//! The goodness-of-fit bootstrap of binned data is calibrated: at the true model its p-values
//! are uniform (so about 5 % of them fall at or below 0.05), and it still rejects a sample the
//! model does not fit. Seeded and fixed: the same counts on every machine.
//!
//! The p-values come from `replicates + 1` ranks, `(c + 1) / (replicates + 1)`: with 99
//! replicates `p ≤ 0.05` has probability exactly 5 % under the model.

use rtscope_evt::diag::{generator, goodness_of_fit, rebin, Bins};
use rtscope_evt::gpd::{self, Gpd};

/// The first data seed (the bootstrap's seeds are 0, 1, …).
const SEED_BASE: u64 = 190_000;

/// Per simulated fit: excesses of `truth` over `u`, binned by `bins` as a histogram records
/// them and spread as the input spreads them, fitted, and tested by the bootstrap of `bins`;
/// the count of fits whose KS and AD p-values are at or below 0.05, of `fits`.
fn rejected_at_5_percent(bins: Bins, u: f64, truth: Gpd, fits: u64) -> (usize, usize, usize) {
    let (mut ks, mut ad, mut done) = (0, 0, 0);
    for seed in 0..fits {
        let mut r = generator(SEED_BASE + seed);
        let mut y: Vec<f64> = (0..120).map(|_| truth.draw(r.unit())).collect();
        rebin(&mut y, u, bins);
        let f = gpd::fit(&y).expect("a GPD sample fits");
        let g = goodness_of_fit(&y, &f, 99, seed, Some((u, bins)));
        ks += usize::from(g.ks_p <= 0.05);
        ad += usize::from(g.ad_p <= 0.05);
        done += 1;
    }
    (ks, ad, done)
}

#[test]
fn at_the_true_model_rtscope_buckets_give_uniform_p_values() {
    // rtscope's own buckets around 1 ms: 512 ns wide below 1,048,576 ns, 1,024 ns above, on a
    // tail whose scale is 3 µs: the sample spans two bucket widths, the case the widest-bucket
    // re-binning got wrong (p = 1.0 every time).
    let truth = Gpd {
        sigma: 3000.0,
        xi: 0.1,
    };
    let (ks, ad, n) = rejected_at_5_percent(Bins::Layout, 1_046_000.0, truth, 500);
    eprintln!("p ≤ 0.05: KS {ks}, AD {ad} of {n}");
    assert_eq!(n, 500);
    assert!((15..=35).contains(&ks), "KS: {ks} of 500 at or below 0.05");
    assert!((15..=35).contains(&ad), "AD: {ad} of 500 at or below 0.05");
}

#[test]
fn binned_data_of_two_populations_fail_the_fit() {
    // Half near the threshold, half 20 µs above it: no GPD has that shape; binned at 1 µs the
    // bootstrap still rejects it (the smallest p-value 99 replicates give, 0.01).
    let u = 10_400.0;
    let bins = Bins::Step { width: 1000.0 };
    let mut r = generator(5);
    let mut y: Vec<f64> = (0..120)
        .map(|i| {
            let e = -r.unit().ln();
            if i % 2 == 0 {
                1000.0 * e
            } else {
                20_000.0 + 500.0 * e
            }
        })
        .collect();
    rebin(&mut y, u, bins);
    let f = gpd::fit(&y).expect("a fit");
    let g = goodness_of_fit(&y, &f, 99, 1, Some((u, bins)));
    assert!(g.ks_p <= 0.01 && g.ad_p <= 0.01, "{g:?}");
}

#[test]
fn at_the_true_model_cyclictest_bins_give_uniform_p_values() {
    // 1 µs bins (cyclictest's) on a tail whose scale is 3 µs: coarse binning, ties in most
    // bins. 5 % of 500 is 25; ± 2 % is 15..=35.
    let truth = Gpd {
        sigma: 3000.0,
        xi: 0.1,
    };
    let (ks, ad, n) = rejected_at_5_percent(Bins::Step { width: 1000.0 }, 10_400.0, truth, 500);
    eprintln!("p ≤ 0.05: KS {ks}, AD {ad} of {n}");
    assert_eq!(n, 500);
    assert!((15..=35).contains(&ks), "KS: {ks} of 500 at or below 0.05");
    assert!((15..=35).contains(&ad), "AD: {ad} of 500 at or below 0.05");
}
