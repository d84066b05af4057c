//! The worst-segment envelope of [`super`]: per wake-up, the level of the worst of the
//! run's segments at each probability, as if every moment were like that segment — or, at
//! that probability, why none is given.
//!
//! Which segment is worst depends on the level. On a loaded VM (issue 50, a 40-minute 1 ms
//! run, its alternate minutes fitted) the segments with the most latencies above 2 ms were not
//! those with the stalls of 20–54 ms: the tail fitted on the former gave 12.6 ms at 1e-5 per
//! wake-up, where the fitted half itself held 80 wake-ups above 12.6 ms in 1.2 million, and the
//! held-out half 12 × the expected count. So the envelope has two parts:
//!
//! - **The fit**: the GPD of the episodes' maxima in the segments with the most wake-ups above
//!   the segment report's level (the worst first, one more until they hold
//!   [`EXCEEDANCES`] wake-ups above it and [`EPISODES`] episodes), converted to per wake-up by
//!   their episodes per exceedance `θ` (Coles 2001, §5.3), with its profile-likelihood
//!   interval. Where that fit is too heavy (two populations meeting at the level: a base tail
//!   and bursts), the threshold in those segments is chosen as [`crate::analyse`] chooses one.
//! - **Every segment's own values**: at a probability `p` within one segment's wake-ups
//!   (`p · N_s ≥ 1`), each segment's level is read off its values (the `⌈p N_s⌉`-th largest;
//!   bounds at the ranks of the Poisson count of its episodes at the confidence either side,
//!   the lower's at the confidence divided among the segments), and the envelope is the largest of the fit's level and every segment's: no segment
//!   of the run is worse than it says, at the stated confidence.
//!
//! Beyond one segment's wake-ups only the fit speaks, and only where the segments do not
//! contradict it: where the level some segment shows at `p = 3 / N_s` is above the fit's upper
//! bound there (even its lower bound is, the confidence divided among the segments), the fit
//! does not describe the worst segment's far tail, and no level beyond the segments is given;
//! nor more than [`REACH`] × beyond one segment (no segment showed the tail that far), nor
//! from a fit whose shape is above [`far::MAX_XI`] (the rule of [`far`]).

use super::ranks::{worst, Bounds, Own};
use super::{points_of, Segments};
use crate::threshold::{self, Clusters, Point};
use crate::{diag, far, gpd, Level, Options, Tail};

/// The fit takes the worst segments until they hold this many wake-ups above the level.
pub const EXCEEDANCES: usize = 100;
/// The fewest episodes the fit is made from.
pub const EPISODES: usize = 30;
/// No level beyond this many times one segment's wake-ups (`p · N_s ≥ 1 / REACH`).
pub const REACH: f64 = 10.0;
/// The segments are checked against the fit at the level they exceed this many times.
const CHECK_AT: f64 = 3.0;

/// The GPD fitted on the worst segments.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Fit {
    /// The segments fitted (1-based, ascending).
    pub segments: Vec<usize>,
    /// Their share of the run.
    pub share_of_run: f64,
    /// The threshold, ns.
    pub threshold_ns: f64,
    /// Wake-ups above it in those segments.
    pub exceedances: usize,
    /// Episodes (declustered) fitted.
    pub episodes: usize,
    /// The GPD of the episodes' maxima as used (the exponential for a fitted `ξ < 0`, unless
    /// bounded tails are allowed, as in [`crate::Shape`]).
    pub gpd: gpd::Gpd,
}

/// A level of the envelope and where it comes from.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct EnvelopeLevel {
    /// The level per wake-up.
    #[serde(flatten)]
    pub level: Level,
    /// The segment whose own values give it (1-based; `None`: the fit).
    pub from_segment: Option<usize>,
}

/// A probability asked for without a level, and why.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct NotGiven {
    /// The probability per wake-up.
    pub probability: f64,
    /// Why (for people).
    pub why: String,
}

/// The worst segment's level at each probability.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Envelope {
    /// Wake-ups per segment.
    pub wakeups_per_segment: u64,
    /// The smallest probability a level is given at: `1 / (REACH · wake-ups per segment)`.
    pub smallest_probability: f64,
    /// The fit on the worst segments (`None`: too few episodes there).
    pub fit: Option<Fit>,
    /// Why the fit gives no level beyond one segment (`None`: it does).
    pub fit_refused: Option<String>,
    /// Levels per wake-up at the asked probabilities.
    pub levels: Vec<EnvelopeLevel>,
    /// The probabilities asked for without a level, and why.
    pub not_given: Vec<NotGiven>,
    /// The same envelope per time: the level a 1 s block's maximum exceeds once per minute,
    /// 10 minutes, … of the worst segment at that time.
    pub per_time: super::per_time::TimeEnvelope,
}

/// The fit's parts for its levels.
struct Fitted {
    fit: Fit,
    used: gpd::Fit,
    clusters: Clusters,
    wakeups: u64,
}

/// The envelope of `tail` cut as `s` says.
pub fn envelope(tail: &Tail, s: &Segments, o: &Options) -> Envelope {
    let n_s = s.wakeups_per_segment;
    let fitted = fit(tail, s, o);
    let chi2 = diag::chi2_1(o.confidence);
    let chi2_lower = diag::chi2_1(1.0 - (1.0 - o.confidence) / s.counts.len() as f64);
    // The ranks read: up to the largest probability's count `E` and its lower bound's margin,
    // `z √(E / θ)` with `θ ≥ 0.01` and `z < 4`.
    let e_max = o.probabilities.iter().copied().fold(0.0, f64::max) * n_s as f64;
    let keep = (e_max + 40.0 * e_max.sqrt()).ceil() as usize + 2 * EXCEEDANCES;
    let own: Vec<Own> = (0..s.counts.len())
        .map(|i| own_values(tail, s, i, keep))
        .collect();
    let at = |p: f64| fitted.as_ref().ok().map(|f| fit_level(f, p, chi2));
    let fit_refused = match &fitted {
        Err(why) => Some(why.clone()),
        Ok(f) => contradicted(f, &own, CHECK_AT / n_s as f64, chi2, chi2_lower),
    };
    let smallest = 1.0 / (REACH * n_s as f64);
    let (mut levels, mut not_given) = (Vec::new(), Vec::new());
    for &p in &o.probabilities {
        let within = p * n_s as f64 >= 1.0;
        let why = why_not(p, smallest, n_s, within, &fit_refused);
        let level = |(e, lo, hi): Bounds, from_segment| EnvelopeLevel {
            level: Level {
                probability: p,
                once_per_s: tail.rate_hz.map(|hz| 1.0 / (p * hz)),
                estimate_ns: e,
                lower_ns: lo,
                upper_ns: hi,
                extrapolation: 1.0 / (p * n_s as f64),
                longer: None,
            },
            from_segment,
        };
        // Only the levels given are computed (a profile interval each).
        let given = why.is_none();
        let from_fit = (given && (fit_refused.is_none() || within))
            .then(|| at(p))
            .flatten();
        let from_own = (given && within)
            .then(|| worst(&own, p, chi2, chi2_lower))
            .flatten();
        match (why, from_fit, from_own) {
            (Some(why), _, _) => not_given.push(NotGiven {
                probability: p,
                why,
            }),
            (None, Some(f), Some((seg, w))) => levels.push(if w.0 > f.0 {
                level(larger(w, f, fit_refused.is_none()), Some(seg))
            } else {
                level(larger(f, w, fit_refused.is_none()), None)
            }),
            (None, Some(f), None) => levels.push(level(f, None)),
            (None, None, Some((seg, w))) => levels.push(level(w, Some(seg))),
            (None, None, None) => not_given.push(NotGiven {
                probability: p,
                why: "no segment's values nor a fit give it".into(),
            }),
        }
    }
    let (levels, dropped) = bounded(levels, tail.max);
    not_given.extend(dropped);
    let (fit, fit_refused) = match fitted {
        Ok(f) => (Some(f.fit), fit_refused),
        Err(why) => (None, Some(why)),
    };
    Envelope {
        per_time: super::per_time::per_time(tail, s, chi2, chi2_lower),
        wakeups_per_segment: n_s,
        smallest_probability: smallest,
        fit,
        fit_refused,
        levels,
        not_given,
    }
}

/// Why the level at `p` is not given: beyond the reach of a segment of `n_s` wake-ups
/// (`smallest`), or, outside a segment's own values (`within`), the fit's refusal.
fn why_not(
    p: f64,
    smallest: f64,
    n_s: u64,
    within: bool,
    fit_refused: &Option<String>,
) -> Option<String> {
    if p < smallest {
        return Some(format!(
            "a level exceeded once in {:.0e} wake-ups lies more than {REACH:.0} × beyond one segment's {n_s} wake-ups, where no segment showed the tail (measure {:.0} × longer)",
            1.0 / p,
            (smallest / p).ceil()
        ));
    }
    if within {
        return None;
    }
    fit_refused.clone()
}

/// `levels` made monotone in the probability by construction (a level at a smaller `p` never
/// below one at a larger `p`, bounds too: [`crate::bounds::monotone`]), then those
/// [`crate::bounds::why_not`] refuses taken out, with why (`max` the run's largest latency).
fn bounded(mut levels: Vec<EnvelopeLevel>, max: f64) -> (Vec<EnvelopeLevel>, Vec<NotGiven>) {
    let probs: Vec<f64> = levels.iter().map(|l| l.level.probability).collect();
    let rows = levels
        .iter()
        .map(|l| (l.level.estimate_ns, l.level.lower_ns, l.level.upper_ns))
        .collect();
    for (l, (e, lo, hi)) in levels
        .iter_mut()
        .zip(crate::bounds::monotone_by(rows, |i| probs[i]))
    {
        (l.level.estimate_ns, l.level.lower_ns, l.level.upper_ns) = (e, lo, hi);
    }
    let (mut given, mut not_given) = (Vec::new(), Vec::new());
    for l in levels {
        let v = &l.level;
        match crate::bounds::why_not(v.estimate_ns, v.lower_ns, v.upper_ns, max, None) {
            Some(why) => not_given.push(NotGiven {
                probability: v.probability,
                why,
            }),
            None => given.push(l),
        }
    }
    (given, not_given)
}

/// Why the fit `f` is not extrapolated beyond one segment: some segment's level at `p` (even
/// its lower bound, at the confidence of `chi2_lower`) above the fit's upper bound there.
fn contradicted(f: &Fitted, own: &[Own], p: f64, chi2: f64, chi2_lower: f64) -> Option<String> {
    let (_, _, hi) = fit_level(f, p, chi2);
    let (seg, (_, lo, _)) = worst(own, p, chi2, chi2_lower)?;
    let hi = hi.filter(|&hi| lo > hi)?;
    Some(format!(
        "segment {seg} contradicts the fit: the level it exceeds {CHECK_AT:.0} times ({} at least) is above the fit's upper bound there ({}), so the fit does not describe its far tail",
        crate::units::us(lo),
        crate::units::us(hi)
    ))
}

/// `a`'s estimate with the larger of both bounds. Where one upper bound is open (a segment's
/// values too few to bound the level from above) and the fit is `trusted` (no segment
/// contradicts it), the other bounds it, when at or above the estimate: the fit is what speaks
/// where a segment's values do not.
fn larger(a: Bounds, b: Bounds, trusted: bool) -> Bounds {
    let upper = match (a.2, b.2) {
        (Some(x), Some(y)) => Some(x.max(y)),
        (Some(x), None) | (None, Some(x)) if trusted => Some(x).filter(|&u| u >= a.0),
        _ => None,
    };
    (a.0, a.1.max(b.1), upper)
}

/// The fit's level per wake-up at `p` (the episode level at `θ p`).
fn fit_level(f: &Fitted, p: f64, chi2: f64) -> Bounds {
    let c = &f.clusters;
    let u = f.fit.threshold_ns;
    let rate = c.maxima.len() as f64 / f.wakeups as f64;
    let theta = c.maxima.len() as f64 / c.exceedances.max(1) as f64;
    let q = (theta * p).min(rate * 0.999_999);
    let e = u + gpd::return_excess(&f.used.gpd, rate, q);
    let (lo, hi) = gpd::return_interval(&c.maxima, &f.used, rate, q, chi2);
    (e, (u + lo).min(e), hi.map(|h| (u + h).max(e)))
}

/// The fit on the worst segments, or why there is none.
fn fit(tail: &Tail, s: &Segments, o: &Options) -> Result<Fitted, String> {
    let k = s.counts.len();
    let mut order: Vec<usize> = (0..k).collect();
    order.sort_by(|&a, &b| s.counts[b].cmp(&s.counts[a]).then(a.cmp(&b)));
    // The worst segments, one more at a time, until they hold enough wake-ups above the level
    // and enough episodes (a burst is one episode however many wake-ups it spans).
    let mut u = s.level_ns;
    let (mut chosen, mut points, mut wakeups, mut c) = (Vec::new(), Vec::new(), 0, None);
    for m in 1..=k {
        chosen = order[..m].to_vec();
        chosen.sort_unstable();
        (points, wakeups) = points_of(tail, s, &chosen);
        let d = threshold::decluster(&points, u);
        let enough = d.exceedances >= EXCEEDANCES && d.maxima.len() >= EPISODES;
        c = Some(d);
        if enough {
            break;
        }
    }
    let mut c = c.ok_or("no segments")?;
    if c.maxima.len() < EPISODES {
        return Err(format!(
            "{} episodes above {} in the whole run, {EPISODES} needed for a fit",
            c.maxima.len(),
            crate::units::us(u)
        ));
    }
    let heavy = |c: &Clusters| {
        let fit = gpd::fit(&c.maxima)?;
        let (used, _, _) = crate::shape_of(&c.maxima, fit, o.allow_bounded);
        Some((used, used.gpd.xi > far::MAX_XI))
    };
    let (mut used, mut too_heavy) =
        heavy(&c).ok_or("the worst segments' excesses do not fit a GPD")?;
    if too_heavy {
        // At the segments' level two populations can meet (the base's tail and a burst's),
        // which no one GPD fits (ξ 0.6–0.9 on a burst process, 31 of 40 runs): the threshold
        // in those segments as `analyse` chooses one, the lowest with a stable shape above it.
        let mut desc: Vec<f64> = points.iter().map(|p| p.value).collect();
        desc.sort_by(f64::total_cmp);
        desc.reverse();
        let candidates = threshold::candidates(&desc, wakeups, EPISODES);
        let table = threshold::stability(&points, &candidates, EPISODES);
        if let Some(i) = threshold::choose(&table) {
            let above = threshold::decluster(&points, table[i].threshold);
            if let Some((f, h)) = heavy(&above) {
                (u, c, used, too_heavy) = (table[i].threshold, above, f, h);
            }
        }
    }
    if too_heavy {
        return Err(format!(
            "the worst segments' tail is too heavy to extrapolate (ξ = {:+.2} > {})",
            used.gpd.xi,
            far::MAX_XI
        ));
    }
    Ok(Fitted {
        fit: Fit {
            segments: chosen.iter().map(|i| i + 1).collect(),
            share_of_run: wakeups as f64 / tail.observations as f64,
            threshold_ns: u,
            exceedances: c.exceedances,
            episodes: c.maxima.len(),
            gpd: used.gpd,
        },
        used,
        clusters: c,
        wakeups,
    })
}

/// Segment `i`'s wake-ups among the run's largest.
fn own_values(tail: &Tail, s: &Segments, i: usize, keep: usize) -> Own {
    let (points, wakeups): (Vec<Point>, u64) = points_of(tail, s, &[i]);
    Own::of_wakeups(&points, wakeups, keep, EXCEEDANCES)
}

#[cfg(test)]
mod tests {
    use crate::regimes::{regimes, Answer};
    use crate::{gpd::Gpd, Options, Tail};

    fn envelope_of(v: &[f64], probabilities: Vec<f64>) -> super::Envelope {
        let o = Options {
            probabilities,
            regimes: true,
            ..Options::default()
        };
        let r = regimes(&Tail::ordered(v, Some(1000.0)), &o).unwrap();
        let Answer::Given(e) = r.envelope else {
            panic!("no envelope: {:?}", r.envelope)
        };
        e
    }

    #[test]
    fn the_envelope_is_never_below_a_segments_own_values_and_no_fit_they_contradict_extrapolates() {
        // 10 segments of 20,000 wake-ups of about 10 µs. Segment 3 has the most large
        // latencies (one in 50 of 600–1,000 µs; one in 2,000 elsewhere), segment 8 the largest:
        // 30 stalls of 50 ms, 500 wake-ups apart — the held-out run's pattern (issue 50).
        let mut r = crate::diag::generator(3);
        let v: Vec<f64> = (0..200_000)
            .map(|i| {
                let (seg, at) = (i / 20_000, i % 20_000);
                let every = if seg == 2 { 50.0 } else { 2000.0 };
                if seg == 7 && at % 500 == 250 && at < 15_000 {
                    50e6 + 1e3 * r.unit()
                } else if r.unit() * every < 1.0 {
                    600e3 + 400e3 * r.unit()
                } else {
                    10e3 + 1e3 * r.unit()
                }
            })
            .collect();
        let e = envelope_of(&v, vec![1e-3, 1e-5, 1e-7]);
        assert_eq!(e.wakeups_per_segment, 20_000);
        assert_eq!(e.fit.as_ref().unwrap().segments, vec![3]);
        // Within one segment (20 wake-ups of 20,000 at 1e-3): segment 8's own 20th largest.
        let l = &e.levels[0];
        assert_eq!((l.level.probability, l.from_segment), (1e-3, Some(8)));
        assert!(l.level.estimate_ns >= 50e6, "{l:?}");
        assert!(l.level.lower_ns <= l.level.estimate_ns);
        // Beyond it the fit on segment 3 (a few ms at most) is contradicted by segment 8: no
        // level, and why; beyond 10 × a segment no level at all.
        let why = e.fit_refused.as_deref().unwrap();
        assert!(why.contains("segment 8 contradicts the fit"), "{why}");
        assert_eq!(e.levels.len(), 1, "{:?}", e.levels);
        assert_eq!(e.not_given[0].probability, 1e-5);
        assert_eq!(e.not_given[0].why, why);
        assert_eq!(e.not_given[1].probability, 1e-7);
        assert!(
            e.not_given[1]
                .why
                .contains("more than 10 × beyond one segment's 20000 wake-ups"),
            "{}",
            e.not_given[1].why
        );
        assert_eq!(e.smallest_probability, 1.0 / 200_000.0);
    }

    #[test]
    fn on_one_stationary_tail_the_fit_gives_the_levels_beyond_a_segment() {
        let g = Gpd {
            sigma: 2_000.0,
            xi: 0.1,
        };
        let tail = Tail::with_gpd_tail(10_000.0, g, 200_000, 8);
        let v: Vec<f64> = tail.points.iter().map(|p| p.value).collect();
        let e = envelope_of(&v, vec![1e-5, 1e-7]);
        assert_eq!(e.fit_refused, None);
        let l = &e.levels[0];
        assert_eq!((l.level.probability, l.from_segment), (1e-5, None));
        let truth = 10_000.0 + g.excess_at(1e-5);
        assert!(
            l.level.lower_ns <= truth && l.level.upper_ns.is_some_and(|u| truth <= u),
            "{l:?} (truth {truth})"
        );
        assert_eq!(e.not_given.len(), 1);
        assert_eq!(e.not_given[0].probability, 1e-7);
    }
}
