//! `export --wide`: the histogram as the studies tabulate it — one row per microsecond of
//! latency, one count column per CPU (cyclictest's `-h` layout, seed 001's table), from the
//! run's lossless histograms.

use crate::table::{int, Table};
use crate::tables::RunData;
use rtscope_core::Histogram;

/// Rows at most: latencies from 0 to 99,999 µs; the samples beyond go to the last row, whose
/// `latency_us` is the bound (`100000`: "100 ms or more"), as cyclictest's histogram counts
/// its overflows apart.
pub const MAX_US: u64 = 100_000;

/// The wide histogram of `d`: `latency_us`, then one column per thread named by its CPU
/// (`cpu0`, or `thread3` for a thread not pinned to one), then `all`. A sample lands in the
/// row of its latency's whole microsecond; a bucket of the histogram wider than 1 µs (above
/// the histogram's exact range) is counted in the row of its lower bound, so that no sample is
/// spread over rows it may not belong to.
pub fn histogram_wide(d: &RunData) -> Table {
    let mut cols: Vec<(String, Vec<u64>)> = Vec::new();
    let mut top = 0;
    for t in &d.detail.threads {
        let name = t
            .cpu
            .map_or(format!("thread{}", t.thread), |c| format!("cpu{c}"));
        let bins = bins(&t.histogram);
        top = top.max(bins.len());
        cols.push((name, bins));
    }
    let all = bins(&d.detail.summary.histogram);
    top = top.max(all.len());
    cols.push(("all".into(), all));
    let mut t = Table::new("histogram-wide").int("latency_us", (0..top as u64).map(int));
    for (name, mut v) in cols {
        v.resize(top, 0);
        t = t.int(name, v.into_iter().map(int));
    }
    t
}

/// Per whole microsecond, the count (at most [`MAX_US`] + 1 rows, the last one every sample
/// beyond); empty for an empty histogram.
fn bins(h: &Histogram) -> Vec<u64> {
    let mut v: Vec<u64> = Vec::new();
    for (lo, _, n) in h.buckets() {
        let us = (lo.0 / 1_000).min(MAX_US) as usize;
        if v.len() <= us {
            v.resize(us + 1, 0);
        }
        v[us] += n;
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtscope_core::Nanos;

    #[test]
    fn samples_land_in_their_whole_microsecond_and_the_far_tail_in_the_last_row() {
        let mut h = Histogram::new();
        for ns in [0, 999, 1_000, 1_999, 5_500, 250_000_000] {
            h.record(Nanos(ns));
        }
        let b = bins(&h);
        assert_eq!(b.len(), MAX_US as usize + 1);
        assert_eq!(&b[..6], &[2, 2, 0, 0, 0, 1]);
        assert_eq!(b[MAX_US as usize], 1);
        assert_eq!(b.iter().sum::<u64>(), 6);
    }
}
