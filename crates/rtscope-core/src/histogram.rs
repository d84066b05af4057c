//! An owned histogram in the [`crate::layout`] layout, with exact min and max.

use crate::layout::{self, BUCKETS};
use crate::Nanos;

/// The percentiles rtscope reports, as (label, quantile).
pub const PERCENTILES: [(&str, f64); 7] = [
    ("p50", 0.50),
    ("p90", 0.90),
    ("p99", 0.99),
    ("p99.9", 0.999),
    ("p99.99", 0.9999),
    ("p99.999", 0.99999),
    ("p99.9999", 0.999999),
];

/// Fewer expected samples than this beyond a percentile mark it as resting on too few samples.
pub const MIN_TAIL_SAMPLES: f64 = 10.0;

/// A lossless latency histogram: the non-empty buckets of the [`layout`] (sorted by bucket
/// index, so a histogram costs memory only for the latencies that occurred) plus the exact
/// minimum and maximum.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Histogram {
    buckets: Vec<(u32, u64)>,
    total: u64,
    min: u64,
    max: u64,
}

/// One percentile of a distribution.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Percentile {
    /// Label such as `p99.9`.
    pub label: &'static str,
    /// The quantile, 0..1.
    pub quantile: f64,
    /// The value, `None` when the histogram is empty.
    pub value: Option<Nanos>,
    /// Expected number of samples above this percentile (`count × (1 − quantile)`); below
    /// [`MIN_TAIL_SAMPLES`] the percentile rests on too few samples to mean much.
    pub tail_samples: f64,
    /// The rank falls among samples the histogram could not place ([`Overflow`]): the true
    /// value is at least `value`, not equal to it.
    pub lower_bound: bool,
}

/// Samples a source counted but could not place in its histogram (cyclictest's overflows, at
/// or above its `-h` limit): only a lower bound of their values is known.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Overflow {
    /// How many samples lie beyond the histogram.
    pub count: u64,
    /// Every one of them is at least this, ns.
    pub floor: Nanos,
}

impl Overflow {
    /// The samples of a thread or run that `h` does not hold, when `samples` were counted in
    /// all. `limit` is the source's histogram limit (ns) when known; without it the floor is
    /// the histogram's maximum (every overflow lies above it). A histogram with no samples at
    /// all and no known limit says nothing: no overflow (its percentiles stay unknown).
    pub fn of(h: &Histogram, samples: u64, limit: Option<Nanos>) -> Overflow {
        let count = samples.saturating_sub(h.count());
        match (limit, h.max()) {
            (Some(l), max) => Overflow {
                count,
                floor: max.map_or(l, |m| l.max(m)),
            },
            (None, Some(max)) => Overflow { count, floor: max },
            (None, None) => Overflow::default(),
        }
    }

    /// The overflows of two sets of samples together: the floor is the lower one.
    pub fn merge(self, other: Overflow) -> Overflow {
        match (self.count, other.count) {
            (0, _) => other,
            (_, 0) => self,
            (a, b) => Overflow {
                count: a.saturating_add(b),
                floor: self.floor.min(other.floor),
            },
        }
    }
}

impl Percentile {
    /// Whether enough samples lie beyond this percentile for it to be meaningful.
    pub fn is_supported(&self) -> bool {
        self.tail_samples >= MIN_TAIL_SAMPLES
    }
}

impl Default for Histogram {
    fn default() -> Self {
        Self::new()
    }
}

impl Histogram {
    /// An empty histogram.
    pub fn new() -> Self {
        Histogram {
            buckets: Vec::new(),
            total: 0,
            min: u64::MAX,
            max: 0,
        }
    }

    /// Builds a histogram from per-bucket counts (in the layout) and the exact min and max (ns).
    /// Entries beyond the layout are ignored.
    pub fn from_parts(counts: &[u64], min: Nanos, max: Nanos) -> Self {
        let pairs = counts
            .iter()
            .take(BUCKETS)
            .enumerate()
            .filter(|(_, &c)| c > 0);
        Self::from_sparse(pairs.map(|(i, &c)| (i, c)), min, max)
    }

    /// Builds a histogram from `(bucket index, count)` pairs, as [`Histogram::nonzero`] yields
    /// (any order; repeated indices add up; indices beyond the layout are ignored).
    pub fn from_sparse(
        pairs: impl IntoIterator<Item = (usize, u64)>,
        min: Nanos,
        max: Nanos,
    ) -> Self {
        let mut buckets: Vec<(u32, u64)> = pairs
            .into_iter()
            .filter(|&(i, c)| i < BUCKETS && c > 0)
            .map(|(i, c)| (i as u32, c))
            .collect();
        // A repeated index's counts are added up, so the order among equal indices does not
        // matter.
        buckets.sort_unstable_by_key(|&(i, _)| i);
        buckets.dedup_by(|b, a| {
            let same = a.0 == b.0;
            if same {
                a.1 += b.1;
            }
            same
        });
        let total = buckets.iter().map(|&(_, c)| c).sum();
        let (min, max) = if total > 0 {
            (min.0, max.0)
        } else {
            (u64::MAX, 0)
        };
        Histogram {
            buckets,
            total,
            min,
            max,
        }
    }

    /// Counts one sample.
    pub fn record(&mut self, v: Nanos) {
        self.record_n(v, 1);
    }

    /// Counts `n` samples of the same value.
    pub fn record_n(&mut self, v: Nanos, n: u64) {
        if n == 0 {
            return;
        }
        let idx = layout::index_of(v.0) as u32;
        match self.buckets.binary_search_by_key(&idx, |&(i, _)| i) {
            Ok(pos) => self.buckets[pos].1 += n,
            Err(pos) => self.buckets.insert(pos, (idx, n)),
        }
        self.total += n;
        self.min = self.min.min(v.0);
        self.max = self.max.max(v.0);
    }

    /// Adds every sample of `other`.
    pub fn merge(&mut self, other: &Histogram) {
        let (min, max) = (self.min.min(other.min), self.max.max(other.max));
        let pairs = self.nonzero().chain(other.nonzero()).collect::<Vec<_>>();
        *self = Histogram::from_sparse(pairs, Nanos(min), Nanos(max));
    }

    /// The samples recorded since `earlier`, an earlier snapshot of the same histogram. The
    /// extremes of the difference are bucket estimates (within 0.1 %), clamped to this
    /// histogram's exact min and max.
    pub fn since(&self, earlier: &Histogram) -> Histogram {
        let old: std::collections::HashMap<usize, u64> = earlier.nonzero().collect();
        let pairs: Vec<(usize, u64)> = self
            .nonzero()
            .map(|(i, c)| (i, c.saturating_sub(old.get(&i).copied().unwrap_or(0))))
            .filter(|&(_, c)| c > 0)
            .collect();
        let (Some(&(lo, _)), Some(&(hi, _))) = (pairs.first(), pairs.last()) else {
            return Histogram::new();
        };
        let min = layout::lowest_of(lo).clamp(self.min, self.max);
        let max = (layout::lowest_of(hi) + layout::width_of(hi) - 1).clamp(self.min, self.max);
        Histogram::from_sparse(pairs, Nanos(min), Nanos(max))
    }

    /// Number of samples.
    pub fn count(&self) -> u64 {
        self.total
    }

    /// Exact smallest sample.
    pub fn min(&self) -> Option<Nanos> {
        (self.total > 0).then_some(Nanos(self.min))
    }

    /// Exact largest sample.
    pub fn max(&self) -> Option<Nanos> {
        (self.total > 0).then_some(Nanos(self.max))
    }

    /// The non-empty buckets as `(bucket index, count)`, by ascending index.
    pub fn nonzero(&self) -> impl Iterator<Item = (usize, u64)> + '_ {
        self.buckets.iter().map(|&(i, c)| (i as usize, c))
    }

    /// The non-empty buckets as `(lowest ns, width ns, count)`.
    pub fn buckets(&self) -> impl Iterator<Item = (Nanos, Nanos, u64)> + '_ {
        self.nonzero()
            .map(|(i, c)| (Nanos(layout::lowest_of(i)), Nanos(layout::width_of(i)), c))
    }

    /// The value at quantile `q` (0..=1) by the nearest-rank rule: the smallest sample `x` such
    /// that at least `q × count` samples are `<= x` (rank `max(1, ceil(q × count))`). The value
    /// reported is the midpoint of the bucket holding that sample, clamped to the exact min and
    /// max, so it is within 0.05 % of the true order statistic (exact below 2,048 ns).
    pub fn value_at_quantile(&self, q: f64) -> Option<Nanos> {
        if self.total == 0 {
            return None;
        }
        Some(self.value_at_rank(rank_of(q, self.total)))
    }

    /// The value at quantile `q` with the rank taken over all samples: the histogram's and
    /// `over`'s. A rank that falls among the overflows gives their floor, flagged as a lower
    /// bound (`true`); `None` without any sample.
    pub fn value_over_all(&self, q: f64, over: Overflow) -> Option<(Nanos, bool)> {
        let total = self.total.saturating_add(over.count);
        if total == 0 {
            return None;
        }
        let rank = rank_of(q, total);
        if rank > self.total {
            return Some((over.floor, true));
        }
        Some((self.value_at_rank(rank), false))
    }

    /// The sample of 1-based `rank` (at most the count): its bucket's midpoint, clamped to the
    /// exact min and max.
    fn value_at_rank(&self, rank: u64) -> Nanos {
        let mut seen = 0u64;
        for (i, c) in self.nonzero() {
            seen += c;
            if seen >= rank {
                let mid = layout::lowest_of(i) + (layout::width_of(i) - 1) / 2;
                return Nanos(mid.clamp(self.min, self.max));
            }
        }
        Nanos(self.max)
    }

    /// All of [`PERCENTILES`] in one pass.
    pub fn percentiles(&self) -> Vec<Percentile> {
        self.percentiles_over_all(Overflow::default())
    }

    /// All of [`PERCENTILES`], ranked over the histogram's samples and `over`'s
    /// ([`Histogram::value_over_all`]): those that fall among the overflows are lower bounds.
    pub fn percentiles_over_all(&self, over: Overflow) -> Vec<Percentile> {
        PERCENTILES
            .iter()
            .map(|&(label, q)| self.percentile_over_all(label, q, over))
            .collect()
    }

    /// One percentile (`label`, quantile `q`) ranked over all samples, as
    /// [`Histogram::percentiles_over_all`].
    pub fn percentile_over_all(&self, label: &'static str, q: f64, over: Overflow) -> Percentile {
        let total = self.total.saturating_add(over.count);
        let v = self.value_over_all(q, over);
        Percentile {
            label,
            quantile: q,
            value: v.map(|v| v.0),
            tail_samples: total as f64 * (1.0 - q),
            lower_bound: v.is_some_and(|v| v.1),
        }
    }

    /// The mean of the samples after truncating each to whole `unit`s (cyclictest's average of
    /// truncated µs values), in `unit`s. Each bucket contributes its midpoint clamped to the exact
    /// min and max, so the result always lies between `min / unit` and `max / unit` (truncated).
    pub fn mean_truncated(&self, unit: Nanos) -> Option<f64> {
        if self.total == 0 || unit.0 == 0 {
            return None;
        }
        let sum: u128 = self
            .nonzero()
            .map(|(i, c)| {
                let mid = (layout::lowest_of(i) + (layout::width_of(i) - 1) / 2)
                    .clamp(self.min, self.max);
                u128::from(mid / unit.0) * u128::from(c)
            })
            .sum();
        Some(sum as f64 / self.total as f64)
    }

    /// Number of samples `>= threshold`, counted by bucket (exact below 2,048 ns; above, a bucket
    /// straddling the threshold is counted as above when its lowest value is >= the threshold).
    pub fn count_at_or_above(&self, threshold: Nanos) -> u64 {
        let first = layout::index_of(threshold.0);
        let start = if layout::lowest_of(first) < threshold.0 {
            first + 1
        } else {
            first
        };
        self.nonzero()
            .filter(|&(i, _)| i >= start)
            .map(|(_, c)| c)
            .sum()
    }
}

/// The nearest rank of quantile `q` among `total` (> 0) samples: `max(1, ceil(q × total))`.
fn rank_of(q: f64, total: u64) -> u64 {
    ((q.clamp(0.0, 1.0) * total as f64).ceil() as u64).clamp(1, total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_rank_over_the_overflows_too_and_bound_those_among_them() {
        // 985 samples at 1,000 ns and 5 at 2,000 ns kept (exact below 2,048 ns), 10 overflows
        // at or above a 4,000 ns limit.
        let mut h = Histogram::new();
        h.record_n(Nanos(1000), 985);
        h.record_n(Nanos(2000), 5);
        let over = Overflow::of(&h, 1000, Some(Nanos(4000)));
        assert_eq!(over.count, 10);
        // p99: rank 990 of all 1,000 samples is 2,000 ns; over the 990 kept ones only it would
        // be rank 981, 1,000 ns: too low.
        assert_eq!(h.value_over_all(0.99, over), Some((Nanos(2000), false)));
        assert_eq!(h.value_at_quantile(0.99), Some(Nanos(1000)));
        // p99.9: rank 999 is an overflow: at least the limit, flagged.
        assert_eq!(h.value_over_all(0.999, over), Some((Nanos(4000), true)));
        let ps = h.percentiles_over_all(over);
        assert_eq!(
            ps.iter()
                .filter(|p| p.lower_bound)
                .map(|p| p.label)
                .collect::<Vec<_>>(),
            ["p99.9", "p99.99", "p99.999", "p99.9999"]
        );
        assert_eq!(ps[0].tail_samples, 500.0, "tail over all 1000 samples");
        // Without a known limit the floor is the kept maximum; without overflows nothing changes.
        assert_eq!(Overflow::of(&h, 1000, None).floor, h.max().unwrap());
        assert_eq!(
            h.percentiles_over_all(Overflow::of(&h, 990, None)),
            h.percentiles()
        );
        assert_eq!(
            Overflow::of(&Histogram::new(), 5, None),
            Overflow::default()
        );
    }

    fn exact_quantile(sorted: &[u64], q: f64) -> u64 {
        let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
        sorted[rank - 1]
    }

    #[test]
    fn percentiles_match_exact_order_statistics_within_precision() {
        // A deterministic, heavy-tailed pseudo-random sample set.
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut values = Vec::new();
        for _ in 0..200_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let base = 5_000 + x % 30_000;
            let tail = if x % 997 == 0 {
                (x >> 20) % 5_000_000
            } else {
                0
            };
            values.push(base + tail);
        }
        let mut h = Histogram::new();
        for &v in &values {
            h.record(Nanos(v));
        }
        values.sort_unstable();
        for (label, q) in PERCENTILES {
            let exact = exact_quantile(&values, q) as f64;
            let got = h.value_at_quantile(q).unwrap().0 as f64;
            assert!(
                (got - exact).abs() <= exact * 0.0005 + 0.5,
                "{label}: {got} vs {exact}"
            );
        }
        assert_eq!(h.min(), Some(Nanos(values[0])));
        assert_eq!(h.max(), Some(Nanos(*values.last().unwrap())));
        assert_eq!(h.count(), values.len() as u64);
    }

    #[test]
    fn empty_histogram_has_no_values() {
        let h = Histogram::new();
        assert_eq!(h.value_at_quantile(0.5), None);
        assert_eq!(h.min(), None);
        assert!(h.percentiles().iter().all(|p| p.value.is_none()));
    }

    #[test]
    fn merge_and_sparse_round_trip() {
        let mut a = Histogram::new();
        let mut b = Histogram::new();
        a.record_n(Nanos(100), 3);
        b.record(Nanos(9_000_000));
        a.merge(&b);
        assert_eq!(a.count(), 4);
        assert_eq!(a.max(), Some(Nanos(9_000_000)));
        let c = Histogram::from_sparse(a.nonzero(), a.min().unwrap(), a.max().unwrap());
        assert_eq!(a, c);
        assert_eq!(a.count_at_or_above(Nanos(101)), 1);
        assert_eq!(a.count_at_or_above(Nanos(100)), 4);
    }

    #[test]
    fn truncated_mean_stays_within_truncated_extremes() {
        let mut h = Histogram::new();
        h.record_n(Nanos(11_860), 3);
        assert_eq!(h.mean_truncated(Nanos(1000)), Some(11.0));
        h.record(Nanos(14_999));
        assert_eq!(h.mean_truncated(Nanos(1000)), Some(47.0 / 4.0));
    }

    #[test]
    fn since_keeps_only_the_new_samples() {
        let mut h = Histogram::new();
        h.record_n(Nanos(100), 5);
        let before = h.clone();
        h.record_n(Nanos(100), 2);
        h.record(Nanos(50_000));
        let d = h.since(&before);
        assert_eq!(d.count(), 3);
        assert_eq!(d.min(), Some(Nanos(100)));
        assert_eq!(d.max(), Some(Nanos(50_000)));
        assert_eq!(h.since(&h).count(), 0);
    }

    #[test]
    fn tail_support_is_flagged() {
        let mut h = Histogram::new();
        h.record_n(Nanos(10), 1000);
        let p = h.percentiles();
        assert!(p[2].is_supported()); // p99: 10 samples beyond
        assert!(!p[3].is_supported()); // p99.9: 1 sample beyond
    }
}
