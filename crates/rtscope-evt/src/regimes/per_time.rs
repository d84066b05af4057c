//! The worst-segment envelope per time: the level the largest latency of a 1 s block exceeds
//! once per minute, 10 minutes, hour or day of the worst conditions the run saw — the per-time
//! counterpart of the per-wake-up envelope (`envelope.rs`), read the same way by the same
//! code ([`super::ranks::Own`], [`super::ranks::worst`]) from each segment's block maxima
//! instead of its wake-ups.
//!
//! "Once per `T`" means what the block maxima's GEV level means ([`super::TimeLevel`]): a block
//! of 1 s exceeds the level with probability `q = 1 s / T`, so one block in `T` is above it — the
//! two answers are comparable, the GEV's for the run's mix of conditions, this one for its worst
//! segment at that time. Each segment's level is its `⌈q B_s⌉`-th largest block maximum (`B_s`
//! its blocks); the bounds are at the ranks of the Poisson count of its episodes of high blocks
//! at the confidence either side (consecutive high blocks are one episode: a load regime raises
//! every block it spans), the lower bound's at the confidence divided among the segments; the
//! envelope is the largest of every segment's.
//!
//! A time longer than one segment is not given: no segment's blocks show a level that rare, and
//! nothing says the worst segment's conditions last longer than the segment they were seen in —
//! the run's mix lasts, which the block maxima's GEV answers for where it is given. No fit of the
//! worst segments' block maxima extends it: on the runs of issue 50 they are far too heavy
//! (GEV ξ = +1.10 over the whole run), and a segment holds too few blocks for a fit of its own.

use super::ranks::{worst, Own};
use super::{Segments, TimeLevel, SEGMENTS};
use crate::threshold::Point;
use crate::units::span;
use crate::Tail;

/// The times asked for, s: a minute, 10 minutes, an hour, a day.
pub const SPANS_S: [f64; 4] = [60.0, 600.0, 3600.0, 86_400.0];

/// The meaning of the per-time envelope's levels, for the JSON.
pub const DEFINITION: &str = "the level the largest latency of a 1 s block exceeds once per once_per_s seconds (probability per_block = 1 s / once_per_s per block) in the worst segment at that time, as if every moment were like it: that segment's ceil(per_block x its blocks)-th largest block maximum; bounds at the ranks of a Poisson count of its episodes of high blocks either side (the lower bound's confidence divided among the segments); given only for times within one segment's length";

/// A per-time level of the envelope and the segment it comes from.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct EnvelopeTimeLevel {
    /// The level (`extrapolation`: the time over the run's length).
    #[serde(flatten)]
    pub level: TimeLevel,
    /// The segment whose block maxima give the estimate (1-based).
    pub from_segment: usize,
}

/// A time asked for without a level, and why.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct TimeNotGiven {
    /// The time, s.
    pub once_per_s: f64,
    /// Why (for people).
    pub why: String,
}

/// The worst segment's per-time levels.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct TimeEnvelope {
    /// What the levels mean ([`DEFINITION`]).
    pub definition: &'static str,
    /// The block's length, s.
    pub block_s: f64,
    /// The fewest blocks a segment holds (a block belongs to the segment it starts in).
    pub blocks_per_segment: u64,
    /// The levels at the times of [`SPANS_S`] within one segment.
    pub levels: Vec<EnvelopeTimeLevel>,
    /// The times without a level, and why.
    pub not_given: Vec<TimeNotGiven>,
}

/// Each segment's block maxima (a block in the segment it starts in), as points in the
/// segment's own block order.
fn segment_blocks(tail: &Tail, s: &Segments) -> Vec<Vec<Point>> {
    let per_block = tail.rate_hz.map_or(0, |hz| (hz.round() as u64).max(1));
    let mut each = vec![Vec::new(); SEGMENTS];
    for (j, &value) in tail.block_maxima.iter().enumerate() {
        let i = ((j as u64 * per_block) / s.wakeups_per_segment.max(1)) as usize;
        let seg: &mut Vec<Point> = &mut each[i.min(SEGMENTS - 1)];
        seg.push(Point {
            index: Some(seg.len() as u64),
            value,
        });
    }
    each
}

/// The per-time envelope of `tail` cut as `s` says, its bounds at `chi2` (`chi2_lower` for the
/// lower bound, the confidence divided among the segments).
pub fn per_time(tail: &Tail, s: &Segments, chi2: f64, chi2_lower: f64) -> TimeEnvelope {
    let blocks = segment_blocks(tail, s);
    let own: Vec<Own> = blocks
        .iter()
        .map(|b| Own::of(b, b.len() as u64, b.len(), (b.len() / 10).max(10)))
        .collect();
    let fewest = blocks.iter().map(Vec::len).min().unwrap_or(0) as u64;
    let block_s = 1.0;
    let run_s = tail.block_maxima.len() as f64 * block_s;
    let (mut levels, mut not_given) = (Vec::new(), Vec::new());
    for once_per_s in SPANS_S {
        let q = block_s / once_per_s;
        let within = fewest > 0 && q * fewest as f64 >= 1.0;
        let found = within.then(|| worst(&own, q, chi2, chi2_lower)).flatten();
        match found {
            Some((from_segment, (e, lo, hi))) => levels.push(EnvelopeTimeLevel {
                level: TimeLevel {
                    once_per_s,
                    per_block: q,
                    estimate_ns: e,
                    lower_ns: lo,
                    upper_ns: hi,
                    extrapolation: once_per_s / run_s.max(block_s),
                },
                from_segment,
            }),
            None => not_given.push(TimeNotGiven {
                once_per_s,
                why: why_not(once_per_s, fewest as f64 * block_s, run_s),
            }),
        }
    }
    // Monotone in the time by construction, and no open interval or level beyond the data.
    let times: Vec<f64> = levels.iter().map(|l| l.level.once_per_s).collect();
    let rows = levels
        .iter()
        .map(|l| (l.level.estimate_ns, l.level.lower_ns, l.level.upper_ns))
        .collect();
    for (l, (e, lo, hi)) in levels
        .iter_mut()
        .zip(crate::bounds::monotone_by(rows, |i| -times[i]))
    {
        (l.level.estimate_ns, l.level.lower_ns, l.level.upper_ns) = (e, lo, hi);
    }
    levels.retain(|l| {
        let v = &l.level;
        match crate::bounds::why_not(v.estimate_ns, v.lower_ns, v.upper_ns, tail.max, None) {
            Some(why) => {
                not_given.push(TimeNotGiven {
                    once_per_s: v.once_per_s,
                    why,
                });
                false
            }
            None => true,
        }
    });
    not_given.sort_by(|a, b| a.once_per_s.total_cmp(&b.once_per_s));
    TimeEnvelope {
        definition: DEFINITION,
        block_s,
        blocks_per_segment: fewest,
        levels,
        not_given,
    }
}

/// A time of [`SPANS_S`] in words: "minute", "10 minutes", "hour", "day" (others as
/// [`span`] says them).
pub fn words(t: f64) -> String {
    match t {
        60.0 => "minute".into(),
        600.0 => "10 minutes".into(),
        3600.0 => "hour".into(),
        86_400.0 => "day".into(),
        t => span(t),
    }
}

/// Why no level once per `t` s with segments of `segment_s` of a run of `run_s`.
fn why_not(t: f64, segment_s: f64, run_s: f64) -> String {
    if segment_s <= 0.0 {
        return "the run has no whole 1 s blocks in some segment".to_string();
    }
    format!(
        "once per {} is longer than one segment ({}): no segment's blocks show a level that rare, and nothing says the worst segment's conditions last longer than it (a run {:.0} × as long has segments that long)",
        words(t),
        span(segment_s),
        (t * SEGMENTS as f64 / run_s).ceil().max(2.0)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::regimes::{regimes, Answer};
    use crate::{diag, Options};

    /// 10 Hz wake-ups (blocks of 10) of `blocks` seconds whose block maxima are `max(j)`.
    fn run_with_block_maxima(blocks: usize, max: impl Fn(usize) -> f64) -> Tail {
        let v: Vec<f64> = (0..blocks * 10)
            .map(|i| if i % 10 == 3 { max(i / 10) } else { 1_000.0 })
            .collect();
        Tail::ordered(&v, Some(10.0))
    }

    #[test]
    fn a_known_block_max_sequence_gives_the_rank_and_level_of_its_worst_segment() {
        // 6,000 s: 10 segments of 600 blocks. Every 10th block of a segment is high, the `l`-th
        // of them 2,000 + l ns, in segment 4 3,000 + l ns (the others 1,500 ns): evenly spaced,
        // each high block its own episode (θ = 1).
        let tail = run_with_block_maxima(6000, |j| {
            let (seg, at) = (j / 600, j % 600);
            let base = if seg == 3 { 3_000.0 } else { 2_000.0 };
            if at % 10 == 0 {
                base + (at / 10) as f64
            } else {
                1_500.0
            }
        });
        let o = Options {
            regimes: true,
            ..Options::default()
        };
        let r = regimes(&tail, &o).unwrap();
        let s = r.segments.given().unwrap();
        let e = per_time(
            &tail,
            s,
            diag::chi2_1(0.95),
            diag::chi2_1(1.0 - 0.05 / 10.0),
        );
        assert_eq!(e.blocks_per_segment, 600);
        assert_eq!(e.definition, DEFINITION);
        // Once per minute: 10 of segment 4's 600 blocks above it, its 10th largest, 3,050 ns;
        // of a Poisson count of mean 10, P(N < 4) = 0.010 ≤ 2.5 % < P(N < 5) = 0.029: the upper
        // bound the 4th largest (3,056); P(N ≥ 21) = 0.0016 ≤ 0.25 % < P(N ≥ 20) = 0.0035 (the
        // 95 % divided among 10 segments): the lower the 21st largest (3,039).
        let minute = &e.levels[0];
        assert_eq!(minute.from_segment, 4);
        assert_eq!(
            (minute.level.once_per_s, minute.level.per_block),
            (60.0, 1.0 / 60.0)
        );
        assert_eq!(minute.level.estimate_ns, 3_050.0);
        assert_eq!(minute.level.upper_ns, Some(3_056.0));
        assert_eq!(minute.level.lower_ns, 3_039.0);
        // Once per 10 minutes: 1 of 600 blocks, the largest (3,059), whose upper bound the data
        // do not give (P(N = 0) = 0.37 of a mean of 1): an open interval, so no level (issue 66:
        // an interval is complete or the level is not given), and why.
        assert_eq!(e.levels.len(), 1);
        assert_eq!(e.not_given.len(), 3);
        assert_eq!(e.not_given[0].once_per_s, 600.0);
        assert!(
            e.not_given[0].why.contains("do not bound it above"),
            "{}",
            e.not_given[0].why
        );
        // An hour and a day are longer than a segment: not given, and why.
        assert_eq!(e.not_given[1].once_per_s, 3600.0);
        assert!(
            e.not_given[1]
                .why
                .contains("is longer than one segment (10 min)"),
            "{}",
            e.not_given[1].why
        );
        // The same in the envelope the run's answers carry.
        let Answer::Given(env) = &r.envelope else {
            panic!("{:?}", r.envelope)
        };
        assert_eq!(env.per_time, e);
        // And as `rtscope tail` prints it: the answer first.
        let mut text = String::new();
        crate::render::regimes_text(&mut text, &r, 0.95);
        for line in [
            "      once per minute of the worst conditions seen: above 3.0 µs  [3.0 µs .. 3.1 µs]  from segment 4's blocks",
            "      once per 10 minutes: not given: the data do not bound it above",
            "      once per hour: not given: once per hour is longer than one segment (10 min)",
        ] {
            assert!(text.contains(line), "{line}\n{text}");
        }
    }
}
