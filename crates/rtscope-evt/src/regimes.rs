//! Answers for a run whose tail changes while it runs (load regimes, bursts): they do not assume
//! that one stationary tail exists, so they stand where [`crate::analyse`] refuses that claim.
//!
//! - The segment report ([`Segments`]): the run cut into [`SEGMENTS`] equal parts and the
//!   wake-ups above one level counted in each — how much the rate of large latencies changed,
//!   and which segments hold most of them.
//! - The worst-segment envelope ([`Envelope`], [`envelope`]): every segment's tail
//!   fitted on its own wake-ups, and at each probability the level of the worst of them, as if
//!   every moment were like it: a conservative level per wake-up for the conditions the run
//!   saw, given no further than the segments' data reach; and per time ([`per_time`]): the
//!   level a 1 s block's maximum exceeds once per minute or 10 minutes of the worst segment,
//!   read off the segments' block maxima the same way, for times within one segment.
//! - Block maxima ([`BlockMaxima`]): the GEV of the largest latency of each 1 s block (1 min on
//!   long runs), whose levels say how high a latency goes once per hour or day of this mix of
//!   conditions, checked on held-out blocks (fitted on alternate blocks, counted on the others).
//!
//! - The run's own values ([`observed`]): levels within the run (the `⌈pN⌉`-th largest
//!   wake-up, the `k`-th largest episode once per minute), bounded by the Poisson count of
//!   its episodes, tested for one rate of episodes through the run; never beyond the run.
//!
//! Each needs the wake-ups in time order (raw samples) and the run's wake-up rate.

pub mod block_tests;
mod envelope;
pub mod observed;
pub mod per_time;
mod ranks;

use crate::threshold::Point;
use crate::{far, gev, Options, Tail};
pub use envelope::Envelope;
use statrs::distribution::{ChiSquared, ContinuousCDF};

/// The run is cut into this many segments.
pub const SEGMENTS: usize = 10;
/// The segments holding at least this share of the large latencies are named.
const HOLD_SHARE: f64 = 0.8;
/// The envelope needs this many wake-ups above the segments' level in the whole run.
const ENVELOPE_EXCEEDANCES: usize = 100;
/// The fewest blocks a GEV is fitted to: 30 exact maxima above the lowest censoring (70 %).
pub const MIN_BLOCKS: usize = 100;
/// One-minute blocks from this many one-second blocks on (200 minutes: 200 blocks of a minute).
const MINUTE_BLOCKS_FROM: usize = 12_000;

/// What the run supports beyond one stationary tail (`None` in [`crate::Analysis::regimes`]: not
/// asked, or the input has no time order or no wake-up rate).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Regimes {
    /// The segment report.
    pub segments: Answer<Segments>,
    /// The worst-segment envelope.
    pub envelope: Answer<Envelope>,
    /// Block maxima.
    pub blocks: Answer<BlockMaxima>,
    /// The run's own values: levels within the run, no model of the tail ([`observed`]).
    pub observed: Answer<observed::Observed>,
}

impl Regimes {
    /// Whether the worst-segment envelope gives at least one level (per wake-up or per time).
    pub fn envelope_gives_a_level(&self) -> bool {
        self.envelope
            .given()
            .is_some_and(|e| !e.levels.is_empty() || !e.per_time.levels.is_empty())
    }

    /// Whether the block maxima give levels whose tests all passed.
    pub fn tested_block_levels(&self) -> bool {
        self.blocks
            .given()
            .is_some_and(|b| b.tested && !b.levels.is_empty())
    }
}

/// An answer, or why it was not given.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "kebab-case", tag = "outcome")]
pub enum Answer<T> {
    /// Given.
    Given(T),
    /// Not given, and why (for people).
    NotGiven {
        /// Why.
        why: String,
    },
}

impl<T> Answer<T> {
    /// The answer when given.
    pub fn given(&self) -> Option<&T> {
        match self {
            Answer::Given(t) => Some(t),
            Answer::NotGiven { .. } => None,
        }
    }
}

fn not<T>(why: impl Into<String>) -> Answer<T> {
    Answer::NotGiven { why: why.into() }
}

/// The wake-ups above one level per segment of the run.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Segments {
    /// The level, ns: a round latency near the run's 99.9th percentile (its 99th on short runs).
    pub level_ns: f64,
    /// Wake-ups per segment (the last holds the rest too).
    pub wakeups_per_segment: u64,
    /// Seconds per segment at the run's rate.
    pub seconds_per_segment: f64,
    /// Wake-ups above the level in each segment, in time order.
    pub counts: Vec<u64>,
    /// The largest count over the smallest (`None`: some segment has none).
    pub change: Option<f64>,
    /// The fewest segments (1-based, ascending) that hold at least 80 % of the wake-ups above.
    pub holding: Vec<usize>,
    /// The share of them those segments hold.
    pub holding_share: f64,
    /// The p-value of "every segment has the same rate" (χ² of the counts; clusters make it
    /// smaller than for independent wake-ups, so a small one is a hint, not a proof).
    pub same_rate_p: f64,
}

/// A per-time level of the block maxima.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct TimeLevel {
    /// Exceeded by one block in this many seconds on average (an hour, a day, a year).
    pub once_per_s: f64,
    /// The probability per block.
    pub per_block: f64,
    /// Estimate, ns.
    pub estimate_ns: f64,
    /// Lower confidence bound, ns.
    pub lower_ns: f64,
    /// Upper confidence bound, ns (`None`: the data do not bound it).
    pub upper_ns: Option<f64>,
    /// How far beyond the run: the time over the run's length.
    pub extrapolation: f64,
}

/// The held-out check of the block maxima: fitted on the even blocks, counted on the odd ones.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct HeldOut {
    /// Blocks fitted.
    pub fitted: usize,
    /// Blocks counted.
    pub checked: usize,
    /// The probability per block of the level checked.
    pub per_block: f64,
    /// The level the fit on the fitted blocks gives there, ns.
    pub level_ns: f64,
    /// Blocks counted above it expected.
    pub expected: f64,
    /// Blocks counted above it.
    pub observed: usize,
}

impl HeldOut {
    /// Observed over expected.
    pub fn ratio(&self) -> f64 {
        self.observed as f64 / self.expected
    }
}

/// The GEV of the block maxima and its per-time levels.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct BlockMaxima {
    /// The block's length, s.
    pub block_s: f64,
    /// Blocks fitted.
    pub blocks: usize,
    /// The fit (left-censored below a quantile of the block maxima: [`gev::choose`]).
    pub gev: gev::Gev,
    /// The share of the block maxima censored.
    pub censored_share: f64,
    /// Once per hour, day and year of this workload.
    pub levels: Vec<TimeLevel>,
    /// The held-out check (`None`: too few blocks for a level with five expected in the half).
    pub held_out: Option<HeldOut>,
    /// The fit's tests ([`block_tests`]): a per-time gate passes on these levels only when every
    /// one passed.
    pub tests: Vec<block_tests::BlockTest>,
    /// Whether every test passed.
    pub tested: bool,
    /// The times asked for without a level, and why (an open interval, beyond 100 × the
    /// observed maximum or beyond [`crate::bounds::TIME_REACH`] × the measured time).
    pub not_given: Vec<per_time::TimeNotGiven>,
}

/// The answers of `tail` (ordered, with a rate), `None` when it has no order or rate.
pub fn regimes(tail: &Tail, o: &Options) -> Option<Regimes> {
    let hz = tail.rate_hz.filter(|&h| h > 0.0 && tail.ordered)?;
    let segments = segments(tail, hz);
    let envelope = match &segments {
        Answer::Given(s) => envelope(tail, s, o),
        Answer::NotGiven { why } => not(why.clone()),
    };
    let observed = match &segments {
        Answer::Given(s) => Answer::Given(observed::observed(tail, s, hz, o)),
        Answer::NotGiven { why } => not(why.clone()),
    };
    Some(Regimes {
        segments,
        envelope,
        blocks: blocks(tail, hz, o),
        observed,
    })
}

/// The round latency at or above `v` of 1, 2, 3 or 5 × 10ⁿ ns.
pub fn round_up(v: f64) -> f64 {
    let e = 10f64.powf(v.log10().floor());
    [1.0, 2.0, 3.0, 5.0, 10.0]
        .iter()
        .map(|m| m * e)
        .find(|&r| r >= v)
        .unwrap_or(10.0 * e)
}

/// The level the segments count: exceeded by a thousandth of the run (at least 200 wake-ups, at
/// most a hundredth), or the round latency nearest it whose count is within a factor of 2.
fn level_of(tail: &Tail) -> Option<f64> {
    let n = tail.observations as usize;
    let mut desc: Vec<f64> = tail.points.iter().map(|p| p.value).collect();
    desc.sort_by(f64::total_cmp);
    desc.reverse();
    let k = (n / 1000)
        .max(200.min(n / 100))
        .min(desc.len().saturating_sub(1));
    if k < 20 {
        return None;
    }
    let exact = desc[k];
    // The round values either side, each by how far its count is from k (a ratio); the lower
    // only where every value above it was kept.
    let up = round_up(exact);
    let down = round_up(exact / 10.0 * 0.999_999);
    let down = [1.0, 2.0, 3.0, 5.0, 10.0]
        .iter()
        .map(|m| m * 10f64.powf(exact.log10().floor()))
        .filter(|&r| r <= exact)
        .fold(down, f64::max);
    let lowest_kept = desc.last().copied().unwrap_or(0.0);
    let off = |r: f64| {
        let kept = desc.iter().take_while(|&&v| v > r).count().max(1) as f64;
        (kept / k as f64).ln().abs()
    };
    let mut best = (2f64.ln(), exact);
    for r in [up, down] {
        if r > lowest_kept && off(r) <= best.0 {
            best = (off(r), r);
        }
    }
    Some(best.1)
}

fn segments(tail: &Tail, hz: f64) -> Answer<Segments> {
    let n = tail.observations;
    if n < (SEGMENTS * 100) as u64 {
        return not(format!(
            "{n} wake-ups: too few to cut into {SEGMENTS} segments"
        ));
    }
    let Some(level) = level_of(tail) else {
        return not("too few large latencies to count per segment");
    };
    let per = n / SEGMENTS as u64;
    let mut counts = vec![0u64; SEGMENTS];
    for p in tail.points.iter().filter(|p| p.value > level) {
        let i = p.index.unwrap_or(0) / per;
        counts[(i as usize).min(SEGMENTS - 1)] += 1;
    }
    let total: u64 = counts.iter().sum();
    let (lo, hi) = (counts.iter().min(), counts.iter().max());
    let change = match (lo, hi) {
        (Some(&lo), Some(&hi)) if lo > 0 => Some(hi as f64 / lo as f64),
        _ => None,
    };
    let mut order: Vec<usize> = (0..SEGMENTS).collect();
    order.sort_by(|&a, &b| counts[b].cmp(&counts[a]).then(a.cmp(&b)));
    let (mut holding, mut held) = (Vec::new(), 0u64);
    for i in order {
        if held as f64 >= HOLD_SHARE * total as f64 {
            break;
        }
        held += counts[i];
        holding.push(i + 1);
    }
    holding.sort_unstable();
    Answer::Given(Segments {
        level_ns: level,
        wakeups_per_segment: per,
        seconds_per_segment: per as f64 / hz,
        same_rate_p: same_rate_p(&counts),
        counts,
        change,
        holding,
        holding_share: held as f64 / total.max(1) as f64,
    })
}

/// The χ² dispersion test of equal rates: `Σ (c − c̄)² / c̄` against χ² with `K − 1` degrees.
fn same_rate_p(counts: &[u64]) -> f64 {
    let mean = counts.iter().sum::<u64>() as f64 / counts.len() as f64;
    if mean <= 0.0 {
        return 1.0;
    }
    let x: f64 = counts
        .iter()
        .map(|&c| (c as f64 - mean).powi(2) / mean)
        .sum();
    let chi = ChiSquared::new((counts.len() - 1) as f64).expect("segments > 1");
    1.0 - chi.cdf(x)
}

fn envelope(tail: &Tail, s: &Segments, o: &Options) -> Answer<Envelope> {
    let total: u64 = s.counts.iter().sum();
    if (total as usize) < ENVELOPE_EXCEEDANCES {
        return not(format!(
            "{total} wake-ups above {} in the whole run, {ENVELOPE_EXCEEDANCES} needed",
            crate::units::us(s.level_ns)
        ));
    }
    Answer::Given(envelope::envelope(tail, s, o))
}

/// The points of segments `chosen` (0-based, ascending), one segment after the other (their
/// gaps closed), and how many wake-ups they hold.
pub(crate) fn points_of(tail: &Tail, s: &Segments, chosen: &[usize]) -> (Vec<Point>, u64) {
    let per = s.wakeups_per_segment;
    let last = SEGMENTS as u64 - 1;
    let mut points = Vec::new();
    let mut wakeups = 0u64;
    for &i in chosen {
        let from = i as u64 * per;
        let to = if i as u64 == last {
            tail.observations
        } else {
            (i as u64 + 1) * per
        };
        points.extend(tail.points.iter().filter_map(|p| {
            let at = p.index?;
            (from..to).contains(&at).then(|| Point {
                index: Some(wakeups + at - from),
                value: p.value,
            })
        }));
        wakeups += to - from;
    }
    (points, wakeups)
}

/// The blocks' maxima: one-second ones, or one-minute ones of a run of 200 minutes or more.
fn block_series(seconds: &[f64]) -> (f64, Vec<f64>) {
    if seconds.len() < MINUTE_BLOCKS_FROM {
        return (1.0, seconds.to_vec());
    }
    let minutes = seconds
        .chunks_exact(60)
        .map(|c| c.iter().copied().fold(f64::MIN, f64::max))
        .collect();
    (60.0, minutes)
}

fn blocks(tail: &Tail, hz: f64, o: &Options) -> Answer<BlockMaxima> {
    let (block_s, x) = block_series(&tail.block_maxima);
    if x.len() < MIN_BLOCKS {
        return not(format!(
            "{} blocks of 1 s, {MIN_BLOCKS} needed (measure at least {MIN_BLOCKS} s at {hz:.0} wake-ups per second)",
            x.len()
        ));
    }
    let Some((sample, fit)) = gev::choose(&x) else {
        return not("the block maxima do not fit a GEV (too many of them equal)");
    };
    if fit.gev.xi > far::MAX_XI {
        return not(format!(
            "the block maxima's tail is too heavy to bound beyond the data (GEV ξ = {:+.2} > {}; largest block maximum {})",
            fit.gev.xi,
            far::MAX_XI,
            crate::units::us(x.iter().copied().fold(0.0, f64::max))
        ));
    }
    let chi2 = crate::diag::chi2_1(o.confidence);
    let run_s = x.len() as f64 * block_s;
    let spans = &crate::PER_TIME_S[..3];
    let rows: Vec<(f64, f64, Option<f64>)> = spans
        .iter()
        .map(|&span| {
            let q = block_s / span;
            let (lower, upper) = gev::level_interval(&sample, &fit, q, chi2);
            (fit.gev.level(q), lower, upper)
        })
        .collect();
    let rows = crate::bounds::monotone_by(rows, |i| -spans[i]);
    let (mut levels, mut not_given) = (Vec::new(), Vec::new());
    for (&span, (e, lower, upper)) in spans.iter().zip(rows) {
        let time = Some((span, run_s));
        if let Some(why) = crate::bounds::why_not(e, lower, upper, tail.max, time) {
            not_given.push(per_time::TimeNotGiven {
                once_per_s: span,
                why,
            });
            continue;
        }
        levels.push(TimeLevel {
            once_per_s: span,
            per_block: block_s / span,
            estimate_ns: e,
            lower_ns: lower,
            upper_ns: upper,
            extrapolation: span / run_s,
        });
    }
    let tests = block_tests::tests(&x, &sample, &fit, o.alpha);
    Answer::Given(BlockMaxima {
        block_s,
        blocks: x.len(),
        gev: fit.gev,
        censored_share: sample.censored as f64 / x.len() as f64,
        levels,
        held_out: held_out(&x),
        tested: tests.iter().all(block_tests::BlockTest::passed),
        tests,
        not_given,
    })
}

/// Fitted on the even blocks, counted on the odd: the level at the smallest of 0.1, 0.01 and
/// 0.001 per block that five or more odd blocks are expected to exceed.
pub fn held_out(x: &[f64]) -> Option<HeldOut> {
    let even: Vec<f64> = x.iter().step_by(2).copied().collect();
    let odd: Vec<f64> = x.iter().skip(1).step_by(2).copied().collect();
    let q = [1e-3, 1e-2, 1e-1]
        .into_iter()
        .find(|q| q * odd.len() as f64 >= 5.0)?;
    let (_, fit) = gev::choose(&even)?;
    let level = fit.gev.level(q);
    Some(HeldOut {
        fitted: even.len(),
        checked: odd.len(),
        per_block: q,
        level_ns: level,
        expected: q * odd.len() as f64,
        observed: odd.iter().filter(|&&v| v > level).count(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_levels_are_one_two_three_or_five() {
        assert_eq!(round_up(430_000.0), 500_000.0);
        assert_eq!(round_up(500_000.0), 500_000.0);
        assert_eq!(round_up(2_100.0), 3_000.0);
        assert_eq!(round_up(6_000.0), 10_000.0);
    }

    #[test]
    fn the_segments_count_where_the_large_latencies_are() {
        // 100,000 wake-ups of about 10 µs; in segments 3 and 7 one in 30 is a spike of 30 µs
        // or more (a Pareto), elsewhere one in 2,000.
        let mut r = crate::diag::generator(11);
        let v: Vec<f64> = (0..100_000)
            .map(|i| {
                let every = if matches!(i / 10_000, 2 | 6) {
                    30.0
                } else {
                    2000.0
                };
                if r.unit() * every < 1.0 {
                    30_000.0 / r.unit().sqrt()
                } else {
                    10_000.0 * (1.0 + 0.1 * r.unit())
                }
            })
            .collect();
        let tail = Tail::ordered(&v, Some(1000.0));
        let Answer::Given(s) = segments(&tail, 1000.0) else {
            panic!("no segments")
        };
        assert_eq!(
            round_up(s.level_ns),
            s.level_ns,
            "a round level: {}",
            s.level_ns
        );
        let quiet = s
            .counts
            .iter()
            .enumerate()
            .filter(|(i, _)| !matches!(i, 2 | 6));
        let most = quiet.map(|(_, &c)| c).max().unwrap();
        assert!(
            s.counts[2] > 10 * most && s.counts[6] > 10 * most,
            "{:?}",
            s.counts
        );
        assert_eq!(s.holding, vec![3, 7]);
        assert!(s.holding_share >= 0.8);
        assert!(s.same_rate_p < 1e-9);
        assert_eq!(s.seconds_per_segment, 10.0);
        assert_eq!(
            s.counts.iter().sum::<u64>() as usize,
            v.iter().filter(|&&x| x > s.level_ns).count()
        );
    }

    #[test]
    fn the_held_out_check_counts_the_other_blocks() {
        let g = gev::Gev {
            mu: 100.0,
            sigma: 10.0,
            xi: 0.1,
        };
        let mut r = crate::diag::generator(4);
        let x: Vec<f64> = (0..2000).map(|_| g.level(r.unit())).collect();
        let h = held_out(&x).unwrap();
        assert_eq!((h.fitted, h.checked, h.per_block), (1000, 1000, 1e-2));
        assert_eq!(h.expected, 10.0);
        assert_eq!(
            h.observed,
            x.iter()
                .skip(1)
                .step_by(2)
                .filter(|&&v| v > h.level_ns)
                .count()
        );
        assert!(held_out(&x[..40]).is_none());
    }
}
