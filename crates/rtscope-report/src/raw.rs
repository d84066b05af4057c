//! Exact CDF points from raw samples in bounded memory: `report --raw` of a run of any length.
//!
//! The samples are streamed twice (the caller reads them from the store one chunk at a time):
//! the first pass counts them into a lossless histogram per thread, which says in which bucket
//! each of the at most [`MAX_CDF_POINTS`] plotted ranks lies; the second pass keeps the exact
//! values (each with its count) of those buckets only, and the value at each rank is read off
//! them. Memory: one histogram per line and at most [`MAX_EXACT_VALUES`] distinct values in
//! all, whatever the number of samples. A bucket whose distinct values would exceed its share
//! of that budget is drawn at the bucket's midpoint instead (within 0.05 %, as the histogram).

use crate::scale::MAX_CDF_POINTS;
use rtscope_core::{Histogram, Nanos};
use std::collections::BTreeMap;

/// A raw sample as stored: (cycle, latency ns, ns from the run's start).
pub type RawSample = (u64, u64, u64);

/// A decimated scatter: per thread, (ns from the start, latency ns) points.
pub type Scatter = Vec<Vec<(u64, u64)>>;

/// Distinct exact values (ns) kept over all lines of one run during the second pass
/// (≈ 48 bytes each in memory: at most ≈ 25 MiB).
pub const MAX_EXACT_VALUES: usize = 1 << 19;

/// The exact CDF points of a run's raw samples, as `(latency µs, fraction ≤)`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RawCdf {
    /// Per thread (index = thread number); empty for a thread without raw samples.
    pub threads: Vec<Vec<(f64, f64)>>,
    /// Over all threads.
    pub all: Vec<(f64, f64)>,
}

/// A histogram bucket holding one or more plotted ranks.
#[derive(Debug)]
struct Target {
    lo: u64,
    /// Exclusive.
    hi: u64,
    /// Samples in lower buckets.
    before: u64,
    /// Exact values seen in the bucket, with their counts; `None` once over budget.
    values: Option<BTreeMap<u64, u64>>,
}

/// The second pass of one line: the plotted ranks and the buckets holding them.
#[derive(Debug)]
struct Exact {
    hist: Histogram,
    ranks: Vec<(u64, usize)>,
    targets: Vec<Target>,
    budget: usize,
}

impl Exact {
    fn new(hist: Histogram, budget: usize) -> Exact {
        let n = hist.count();
        let step = n.div_ceil(MAX_CDF_POINTS as u64).max(1);
        let mut want: Vec<u64> = (0..n).step_by(step as usize).collect();
        if n > 0 && want.last() != Some(&(n - 1)) {
            want.push(n - 1);
        }
        let mut ranks = Vec::with_capacity(want.len());
        let mut targets: Vec<Target> = Vec::new();
        let mut before = 0;
        let mut next = want.iter().peekable();
        for (lo, width, c) in hist.buckets() {
            while let Some(&&r) = next.peek() {
                if r >= before + c {
                    break;
                }
                if targets.last().is_none_or(|t| t.lo != lo.0) {
                    targets.push(Target {
                        lo: lo.0,
                        hi: lo.0.saturating_add(width.0),
                        before,
                        values: Some(BTreeMap::new()),
                    });
                }
                ranks.push((r, targets.len() - 1));
                next.next();
            }
            before += c;
        }
        Exact {
            hist,
            ranks,
            targets,
            budget,
        }
    }

    fn observe(&mut self, v: u64) {
        let i = self.targets.partition_point(|t| t.lo <= v);
        let Some(t) = i.checked_sub(1).map(|i| &mut self.targets[i]) else {
            return;
        };
        if v >= t.hi {
            return;
        }
        if let Some(map) = &mut t.values {
            match map.get_mut(&v) {
                Some(c) => *c += 1,
                None if self.budget > 0 => {
                    self.budget -= 1;
                    map.insert(v, 1);
                }
                None => {
                    self.budget += map.len();
                    t.values = None;
                }
            }
        }
    }

    /// The value at 0-based rank `r` of target `t`: exact, else the bucket's midpoint.
    fn value(&self, r: u64, t: &Target) -> u64 {
        let mid = || {
            let (min, max) = (self.hist.min(), self.hist.max());
            let m = t.lo + (t.hi - t.lo - 1) / 2;
            m.clamp(min.map_or(0, |x| x.0), max.map_or(u64::MAX, |x| x.0))
        };
        let Some(map) = &t.values else { return mid() };
        let mut seen = t.before;
        for (&v, &c) in map {
            seen += c;
            if seen > r {
                return v;
            }
        }
        mid() // the second pass saw fewer samples than the first
    }

    fn points(&self) -> Vec<(f64, f64)> {
        let n = self.hist.count().max(1) as f64;
        self.ranks
            .iter()
            .map(|&(r, t)| {
                let v = self.value(r, &self.targets[t]);
                (v as f64 / 1000.0, (r + 1) as f64 / n)
            })
            .collect()
    }
}

/// The exact CDF points of the raw samples of `threads` (thread numbers), read by `each`:
/// called with a thread and a sink, it hands every raw latency (ns) of that thread to the sink,
/// a chunk at a time. It is called twice per thread.
pub fn raw_cdf<E>(
    threads: &[u32],
    mut each: impl FnMut(u32, &mut dyn FnMut(&[u64])) -> Result<(), E>,
) -> Result<RawCdf, E> {
    let mut hists = Vec::with_capacity(threads.len());
    let mut all = Histogram::new();
    for &t in threads {
        let mut h = Histogram::new();
        each(t, &mut |chunk| {
            chunk.iter().for_each(|&v| h.record(Nanos(v)))
        })?;
        all.merge(&h);
        hists.push(h);
    }
    let share = MAX_EXACT_VALUES / (threads.len() + 1);
    let mut all = Exact::new(all, share);
    let mut out = RawCdf {
        threads: Vec::new(),
        all: Vec::new(),
    };
    for (&t, h) in threads.iter().zip(hists) {
        let mut one = Exact::new(h, share);
        each(t, &mut |chunk| {
            for &v in chunk {
                one.observe(v);
                all.observe(v);
            }
        })?;
        let slot = t as usize;
        if out.threads.len() <= slot {
            out.threads.resize(slot + 1, Vec::new());
        }
        out.threads[slot] = one.points();
    }
    out.all = all.points();
    Ok(out)
}

/// Both raw views of a run — the exact CDF ([`raw_cdf`]) and the decimated per-sample
/// scatter ([`Decimator`]) — from raw samples `(cycle, latency ns, ns from the
/// start)` that `each` streams per thread (three passes); memory stays bounded whatever the
/// run's length. The scatter is indexed like `threads`.
pub fn views<E>(
    threads: &[u32],
    mut each: impl FnMut(u32, &mut dyn FnMut(&[RawSample])) -> Result<(), E>,
) -> Result<(RawCdf, Scatter), E> {
    let cdf = raw_cdf(threads, |t, sink| {
        each(t, &mut |chunk| {
            sink(&chunk.iter().map(|s| s.1).collect::<Vec<u64>>());
        })
    })?;
    let columns = columns_per_thread(threads.len());
    let mut scatter = Vec::with_capacity(threads.len());
    for &t in threads {
        let mut d = Decimator::new(columns);
        each(t, &mut |chunk| chunk.iter().for_each(|s| d.push(s.2, s.1)))?;
        scatter.push(d.points());
    }
    Ok((cdf, scatter))
}

/// [`raw_cdf`] of samples already in memory (index = thread).
pub fn raw_cdf_of(raw: &[Vec<u64>]) -> RawCdf {
    let threads: Vec<u32> = (0..raw.len() as u32).collect();
    let r: Result<RawCdf, std::convert::Infallible> = raw_cdf(&threads, |t, sink| {
        sink(&raw[t as usize]);
        Ok(())
    });
    r.unwrap_or_else(|e| match e {})
}

/// Columns a raw scatter is cut into per panel; each keeps its largest and smallest sample.
pub const SCATTER_COLUMNS: usize = 300;

/// Columns each thread's scatter keeps when `threads` threads share a panel.
pub fn columns_per_thread(threads: usize) -> usize {
    (SCATTER_COLUMNS / threads.max(1)).max(20)
}

/// Decimates a stream of samples for the scatter: consecutive samples are cut into columns
/// that keep their smallest and largest sample (so every maximum is drawn); when the columns
/// reach `columns`, neighbours merge and the width doubles. Memory: at most 2 × `columns`
/// points, whatever the run's length.
#[derive(Debug)]
pub struct Decimator {
    target: usize,
    per: u64,
    in_current: u64,
    current: Option<[(u64, u64); 2]>,
    done: Vec<[(u64, u64); 2]>,
}

impl Decimator {
    /// A decimator keeping `columns` / 2 to `columns` columns (at least one).
    pub fn new(columns: usize) -> Decimator {
        Decimator {
            target: (columns / 2).max(1),
            per: 1,
            in_current: 0,
            current: None,
            done: Vec::new(),
        }
    }

    /// Adds the sample at `at` ns from the start with latency `lat` ns.
    pub fn push(&mut self, at: u64, lat: u64) {
        let c = self.current.get_or_insert([(at, lat), (at, lat)]);
        if lat < c[0].1 {
            c[0] = (at, lat);
        }
        if lat > c[1].1 {
            c[1] = (at, lat);
        }
        self.in_current += 1;
        if self.in_current < self.per {
            return;
        }
        self.done.extend(self.current.take());
        self.in_current = 0;
        if self.done.len() >= 2 * self.target {
            self.done = self.done.chunks(2).map(merge).collect();
            self.per *= 2;
        }
    }

    /// The kept samples in time order, as (ns from the start, latency ns).
    pub fn points(mut self) -> Vec<(u64, u64)> {
        self.done.extend(self.current.take());
        let mut out = Vec::with_capacity(2 * self.done.len());
        for [lo, hi] in self.done {
            let pair = if lo.0 <= hi.0 { [lo, hi] } else { [hi, lo] };
            out.push(pair[0]);
            if pair[1] != pair[0] {
                out.push(pair[1]);
            }
        }
        out
    }
}

fn merge(pair: &[[(u64, u64); 2]]) -> [(u64, u64); 2] {
    let lo = pair.iter().map(|c| c[0]).min_by_key(|p| p.1);
    let hi = pair.iter().map(|c| c[1]).max_by_key(|p| p.1);
    [lo.unwrap_or_default(), hi.unwrap_or_default()]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The exact CDF by sorting, as the report drew it before streaming.
    fn sorted_points(raw: &[u64]) -> Vec<(f64, f64)> {
        let mut v = raw.to_vec();
        v.sort_unstable();
        let n = v.len();
        let step = n.div_ceil(MAX_CDF_POINTS).max(1);
        let mut idx: Vec<usize> = (0..n).step_by(step).collect();
        if idx.last() != Some(&(n - 1)) {
            idx.push(n - 1);
        }
        idx.iter()
            .map(|&i| (v[i] as f64 / 1000.0, (i + 1) as f64 / n as f64))
            .collect()
    }

    fn spread(n: u64, seed: u64) -> Vec<u64> {
        // Values from 1 µs to about 4 ms, many in buckets wider than 1 ns.
        (0..n)
            .map(|i| {
                1_000 + (i.wrapping_mul(2_654_435_761).wrapping_add(seed) % 4_000_000) / (1 + i % 7)
            })
            .collect()
    }

    #[test]
    fn streamed_points_equal_the_sorted_exact_cdf() {
        let a = spread(50_000, 1);
        let b = spread(7_001, 99);
        let cdf = raw_cdf_of(&[a.clone(), b.clone()]);
        assert_eq!(cdf.threads[0], sorted_points(&a));
        assert_eq!(cdf.threads[1], sorted_points(&b));
        let both: Vec<u64> = a.iter().chain(&b).copied().collect();
        assert_eq!(cdf.all, sorted_points(&both));
        assert!(cdf.all.len() <= MAX_CDF_POINTS + 1);
    }

    #[test]
    fn chunks_and_missing_threads_do_not_change_the_points() {
        let a = spread(10_000, 3);
        let threads = [2u32];
        let r: Result<RawCdf, ()> = raw_cdf(&threads, |_, sink| {
            a.chunks(333).for_each(&mut *sink);
            Ok(())
        });
        let cdf = r.unwrap();
        assert!(cdf.threads[0].is_empty() && cdf.threads[1].is_empty());
        assert_eq!(cdf.threads[2], sorted_points(&a));
        assert_eq!(raw_cdf_of(&[]), RawCdf::default());
    }

    #[test]
    fn over_budget_buckets_fall_back_to_the_midpoint_within_the_histogram_error() {
        let a = spread(20_000, 5);
        let mut one = Exact::new(
            {
                let mut h = Histogram::new();
                a.iter().for_each(|&v| h.record(Nanos(v)));
                h
            },
            10,
        );
        a.iter().for_each(|&v| one.observe(v));
        let exact = sorted_points(&a);
        let got = one.points();
        assert_eq!(got.len(), exact.len());
        for (g, e) in got.iter().zip(&exact) {
            assert_eq!(g.1, e.1);
            assert!((g.0 - e.0).abs() <= e.0 * 0.001 + 0.001, "{g:?} vs {e:?}");
        }
    }
}

#[cfg(test)]
mod decimator_tests {
    use super::Decimator;

    #[test]
    fn the_decimator_keeps_every_extreme_in_bounded_memory() {
        let mut d = Decimator::new(50);
        let n = 1_000_000u64;
        for i in 0..n {
            let lat = match i {
                777_777 => 9_000_000,
                12_345 => 1,
                _ => 5_000 + (i * 7919) % 3_000,
            };
            d.push(i * 1_000, lat);
        }
        let pts = d.points();
        assert!(pts.len() <= 2 * 50 && pts.len() >= 25, "{}", pts.len());
        assert!(
            pts.contains(&(777_777_000, 9_000_000)),
            "the maximum is kept"
        );
        assert!(pts.contains(&(12_345_000, 1)), "the minimum is kept");
        assert!(pts.windows(2).all(|w| w[0].0 <= w[1].0), "in time order");
    }
}
