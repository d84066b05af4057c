//! A thread of a recorded run as a [`Tail`]: its raw samples in time order when the run was
//! recorded with `--raw` (exact values, so every test can run), otherwise its lossless
//! histogram (an imported cyclictest histogram, a run without `--raw`).
//!
//! Binned values: a bin's count is spread evenly over its width (`lo + w (i + ½) / c` for the
//! `i`-th of `c` values), the width being the bin's own or, when every bin in the tail starts
//! at a multiple of a coarser step (cyclictest's 1 µs bins stored at `k × 1000` ns), that
//! step: cyclictest truncates a latency to its bin's lower µs. A histogram keeps no order, so
//! independence and identical distribution cannot be tested and clusters cannot be found
//! (extremal index 1); the report says so.

use crate::diag::Bins;
use crate::threshold::{Point, MAX_EXCEEDANCES};
use crate::{analyse, Analysis, Options, Refusal, Tail};
use rtscope_store::{RunDetail, Store, ThreadRow};

/// Why a thread cannot be analysed.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] rtscope_store::StoreError),
    /// The histogram does not hold the tail.
    #[error("thread {thread}: {count} samples lie beyond the histogram's range (at least {floor_ns} ns), so its tail is unknown")]
    Overflow {
        /// Thread.
        thread: u32,
        /// Samples beyond.
        count: u64,
        /// Their floor.
        floor_ns: u64,
    },
    /// Nothing recorded.
    #[error("thread {thread} has no samples")]
    Empty {
        /// Thread.
        thread: u32,
    },
}

/// Analyses thread `t` of run `detail`: a histogram with overflows and a run without any
/// distribution are refusals (named), not errors; only the store's failures are.
pub fn analyse_thread(
    store: &Store,
    detail: &RunDetail,
    t: &ThreadRow,
    o: &Options,
    unreliable: bool,
) -> Result<Analysis, InputError> {
    read_and_analyse(store, detail, t, o, unreliable).map(|(a, _)| a)
}

/// [`analyse_thread`] with the tail it read (`None`: refused without one), which the report's
/// figures need ([`crate::figure::figures`]).
pub fn read_and_analyse(
    store: &Store,
    detail: &RunDetail,
    t: &ThreadRow,
    o: &Options,
    unreliable: bool,
) -> Result<(Analysis, Option<Tail>), InputError> {
    match from_store(store, detail, t) {
        Ok(tail) => Ok((analyse(&tail, o, unreliable), Some(tail))),
        Err(InputError::Overflow {
            count, floor_ns, ..
        }) => {
            let max = t.figures.max_ns.unwrap_or(floor_ns) as f64;
            let why = Refusal::BeyondHistogram { count, floor_ns };
            let mut a = Analysis::refused(t.figures.samples, max, why, o);
            a.rate_hz = (t.interval_ns > 0).then(|| 1e9 / t.interval_ns as f64);
            Ok((a, None))
        }
        Err(InputError::Empty { .. }) => {
            let max = t.figures.max_ns.unwrap_or(0) as f64;
            let why = Refusal::NoDistribution;
            let mut a = Analysis::refused(t.figures.samples, max, why, o);
            a.rate_hz = (t.interval_ns > 0).then(|| 1e9 / t.interval_ns as f64);
            Ok((a, None))
        }
        Err(e) => Err(e),
    }
}

/// How many of the largest observations to keep: a tenth of the run, at most the most the
/// threshold search uses, plus one (the value the lowest candidate threshold sits on).
fn keep(n: u64) -> u64 {
    (n / 10).min(MAX_EXCEEDANCES as u64) + 1
}

/// Reads thread `t` of run `detail` (raw samples when it has them).
pub fn from_store(store: &Store, detail: &RunDetail, t: &ThreadRow) -> Result<Tail, InputError> {
    let rate_hz = (t.interval_ns > 0).then(|| 1e9 / t.interval_ns as f64);
    if detail.raw_samples > 0 {
        return from_raw(store, detail, t, rate_hz);
    }
    let over = detail.overflow(t);
    if over.count > 0 {
        return Err(InputError::Overflow {
            thread: t.thread,
            count: over.count,
            floor_ns: over.floor.0,
        });
    }
    let bins: Vec<(u64, u64, u64)> = t
        .histogram
        .buckets()
        .map(|(lo, w, c)| (lo.0, w.0, c))
        .collect();
    // An import's values are its source's bins: cyclictest's µs (at k × 1000 ns) unless it
    // wrote nanoseconds, which every bin then says by not sitting on a µs.
    let step = (detail.summary.kind == rtscope_store::RunKind::Import).then_some(1000);
    from_bins(&bins, step, rate_hz).ok_or(InputError::Empty { thread: t.thread })
}

fn from_raw(
    store: &Store,
    detail: &RunDetail,
    t: &ThreadRow,
    rate_hz: Option<f64>,
) -> Result<Tail, InputError> {
    // The floor from the histogram (the same samples): the lowest bin that, with those above
    // it, holds `keep` samples. Without a histogram every sample is kept.
    let want = keep(t.figures.samples);
    let mut floor = 0u64;
    let mut above = 0u64;
    let bins: Vec<_> = t.histogram.buckets().collect();
    for (lo, _, c) in bins.iter().rev() {
        above += c;
        floor = lo.0;
        if above >= want {
            break;
        }
    }
    let (mut points, mut n, mut max) = (Vec::new(), 0u64, 0f64);
    // The largest of each whole second (the block maxima of `regimes`).
    let per_block = rate_hz.map_or(0, |hz| (hz.round() as u64).max(1));
    let (mut blocks, mut block_max) = (Vec::new(), f64::MIN);
    store.for_each_raw_chunk(detail.summary.id, t.thread, &mut |chunk| {
        for (_, latency, _) in chunk {
            if per_block > 0 {
                block_max = block_max.max(latency as f64);
                if (n + 1) % per_block == 0 {
                    blocks.push(block_max);
                    block_max = f64::MIN;
                }
            }
            if latency >= floor {
                points.push(Point {
                    index: Some(n),
                    value: latency as f64,
                });
            }
            max = max.max(latency as f64);
            n += 1;
        }
        Ok(())
    })?;
    if n == 0 {
        return Err(InputError::Empty { thread: t.thread });
    }
    Ok(Tail {
        observations: n,
        rate_hz,
        points,
        ordered: true,
        // A writer that fell behind dropped raw samples: the series has holes there.
        binning: (t.raw_dropped > 0).then(|| {
            format!(
                "raw samples, {} of them dropped by the writer: the time order has gaps",
                t.raw_dropped
            )
        }),
        bins: None,
        max,
        block_maxima: blocks,
    })
}

/// A tail from histogram bins `(lowest ns, width ns, count)` of rtscope's layout
/// ([`rtscope_core::layout`]) in ascending order, whose values were binned at `source_step` ns
/// by their source (cyclictest: 1000) when each bin used holds a multiple of it; `None` when
/// they hold no sample. The tail's [`Bins`] say which binning the bootstrap repeats.
pub fn from_bins(
    bins: &[(u64, u64, u64)],
    source_step: Option<u64>,
    rate_hz: Option<f64>,
) -> Option<Tail> {
    let n: u64 = bins.iter().map(|b| b.2).sum();
    bins.iter().rev().find(|b| b.2 > 0)?;
    let want = keep(n);
    let mut chosen = Vec::new();
    let mut above = 0;
    for &b in bins.iter().rev().filter(|b| b.2 > 0) {
        chosen.push(b);
        above += b.2;
        if above >= want {
            break;
        }
    }
    let widest = chosen.iter().map(|b| b.1).max().unwrap_or(1);
    let step = source_step.unwrap_or(0);
    let on_step = |&(lo, w, _): &(u64, u64, u64)| lo.div_ceil(step) * step < lo + w;
    let coarse = step > widest && chosen.iter().all(on_step);
    if coarse {
        // Each bin holds one multiple of the step: the source's bin starts there.
        for b in chosen.iter_mut() {
            b.0 = b.0.div_ceil(step) * step;
        }
    }
    // The lowest chosen bin gives only the values needed, its largest.
    let spare = above.saturating_sub(want);
    let mut points = Vec::with_capacity(want as usize);
    for (j, &(lo, w, c)) in chosen.iter().enumerate().rev() {
        let w = if coarse { step } else { w } as f64;
        let first = if j + 1 == chosen.len() { spare } else { 0 };
        for i in first..c {
            points.push(Point {
                index: None,
                value: lo as f64 + w * (i as f64 + 0.5) / c as f64,
            });
        }
    }
    let width = if coarse { step } else { widest };
    Some(Tail {
        observations: n,
        rate_hz,
        max: chosen[0].0 as f64 + if coarse { step } else { chosen[0].1 } as f64,
        points,
        ordered: false,
        block_maxima: Vec::new(),
        bins: Some(if coarse {
            Bins::Step {
                width: step as f64,
            }
        } else {
            Bins::Layout
        }),
        binning: Some(format!(
            "histogram: each bin's count spread evenly over its width ({width} ns{}); no time order",
            if coarse { ", the source's bin" } else { " at most" }
        )),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn microsecond_bins_are_spread_over_their_microsecond() {
        // cyclictest bins at 10, 11 and 12 µs, stored at k × 1000 ns with 1 ns buckets.
        let mut bins = vec![(5_000, 1, 1_000_000)];
        bins.extend([(10_000, 1, 4), (11_000, 1, 2), (12_000, 1, 1)]);
        let t = from_bins(&bins, Some(1000), Some(1000.0)).unwrap();
        assert_eq!(t.observations, 1_000_007);
        assert!(!t.ordered);
        let v: Vec<f64> = t.points.iter().map(|p| p.value).collect();
        assert_eq!(
            &v[v.len() - 7..],
            &[10_125.0, 10_375.0, 10_625.0, 10_875.0, 11_250.0, 11_750.0, 12_500.0]
        );
        assert_eq!(t.max, 13_000.0);
        assert!(t.binning.unwrap().contains("1000 ns"));
        // Of the lowest kept bin only its largest values: a tenth of the run (at most
        // 10,000) plus one in all.
        assert_eq!(v.len(), 10_001);
        assert_eq!(
            v[0],
            5_000.0 + 1000.0 * (1_000_000.0 - 9_994.0 + 0.5) / 1_000_000.0
        );
        assert!(from_bins(&[(1, 1, 0)], None, None).is_none());
        // rtscope's own buckets above 2 µs (64 ns wide at 40 µs) that do not all hold a
        // multiple of 1000: exact values binned by rtscope, spread over their own width.
        let native = [(39_936, 64, 3), (41_024, 64, 2)];
        let t = from_bins(&native, Some(1000), None).unwrap();
        assert!(t.binning.unwrap().contains("64 ns at most"));
        // The same with every bucket on a µs: an import's 40 and 41 µs bins; of 5 wake-ups
        // one is kept, the larger of the 41 µs bin's two, spread over [41, 42) µs.
        let imported = [(39_936, 64, 3), (40_960, 64, 2)];
        let t = from_bins(&imported, Some(1000), None).unwrap();
        assert_eq!(t.points.len(), 1);
        assert_eq!(t.points[0].value, 41_750.0);
        assert_eq!(t.max, 42_000.0);
    }
}
