//! What a printed level may claim (issue 66): no level beyond what the data can say.
//!
//! - An interval is complete or the level is not given: a level whose upper bound the data do
//!   not give (an open interval), or whose bounds are not finite numbers, is not printed and
//!   not written to JSON; the reason is ([`LevelNotGiven`]).
//! - No level, estimate or bound, above [`MAX_OVER_OBSERVED`] × the largest latency observed.
//! - A per-time level ("once per hour, day, year") needs at least `1 / TIME_REACH` of that
//!   time measured: once per day needs 2.4 h, once per year 36.5 days ([`TIME_REACH`]).
//! - Levels are monotone in their rarity by construction ([`monotone`]): a rarer level (a
//!   smaller probability, a longer time) is never below a more frequent one, bounds too.
//!
//! These hold for every answer and with `--unreliable` too.

use crate::units::{span, us};
use crate::{Fitted, Level, Options};

/// No level above this many times the largest latency observed.
pub const MAX_OVER_OBSERVED: f64 = 100.0;
/// A level once per `T` needs a measured time of at least `T / TIME_REACH`.
pub const TIME_REACH: f64 = 10.0;
/// The fewest distinct values the largest observations must take for a tail to be fitted.
pub const MIN_DISTINCT: usize = 5;

/// A level asked for and not given, and why.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct LevelNotGiven {
    /// The probability per wake-up (per-probability rows), or per block.
    pub probability: f64,
    /// The time it would be exceeded once in, s (`None`: the rate is unknown).
    pub once_per_s: Option<f64>,
    /// Why (for people).
    pub why: String,
}

/// Why a level of `estimate` in `[lower, upper]` is not given (`None`: it is): `max` the largest
/// latency observed, `time` the per-time level's span and the measured time, s.
pub fn why_not(
    estimate: f64,
    lower: f64,
    upper: Option<f64>,
    max: f64,
    time: Option<(f64, f64)>,
) -> Option<String> {
    if let Some((t, measured)) = time {
        if t > TIME_REACH * measured {
            return Some(format!(
                "once per {} needs at least {} measured ({TIME_REACH:.0} × extrapolation at most); this run measured {}",
                span(t),
                span(t / TIME_REACH),
                span(measured)
            ));
        }
    }
    if !(estimate.is_finite() && lower.is_finite()) {
        return Some("its confidence interval could not be computed".into());
    }
    let Some(upper) = upper.filter(|u| u.is_finite()) else {
        return Some(
            "the data do not bound it above (an open confidence interval): no number is given"
                .into(),
        );
    };
    let cap = MAX_OVER_OBSERVED * max;
    if max > 0.0 && upper > cap {
        return Some(format!(
            "its upper bound {} is more than {MAX_OVER_OBSERVED:.0} × the largest latency observed ({}): beyond what the data can say",
            us(upper),
            us(max)
        ));
    }
    None
}

/// Makes `rows` (estimate, lower, upper), ordered from the most frequent to the rarest,
/// monotone: each row's estimate and bounds at least the previous row's (an open upper bound
/// stays open for every rarer row).
pub fn monotone(rows: &mut [(f64, f64, Option<f64>)]) {
    for i in 1..rows.len() {
        let (e, lo, hi) = rows[i - 1];
        let r = &mut rows[i];
        r.0 = r.0.max(e);
        r.1 = r.1.max(lo);
        r.2 = match (r.2, hi) {
            (Some(a), Some(b)) => Some(a.max(b)),
            _ => None,
        };
        // The bounds still hold the estimate.
        r.2 = r.2.map(|u| u.max(r.0));
        r.1 = r.1.min(r.0);
    }
}

/// How many distinct values `values` take (at most `enough` counted).
pub fn distinct(values: impl Iterator<Item = f64>, enough: usize) -> usize {
    let mut seen: Vec<u64> = Vec::new();
    for v in values {
        let b = v.to_bits();
        if !seen.contains(&b) {
            seen.push(b);
            if seen.len() >= enough {
                break;
            }
        }
    }
    seen.len()
}

/// The levels at `(p, q, span)`: labelled with probability `p`, estimated as the level an
/// episode exceeds with probability `q` per wake-up (`q = p` per episode, `θ p` per wake-up),
/// `span` the time of a per-time row; monotone in `q` and within the rules above, the others not
/// given.
pub(crate) fn levels(
    f: Fitted,
    o: &Options,
    probs: Vec<(f64, f64, Option<f64>)>,
) -> (Vec<Level>, Vec<LevelNotGiven>) {
    let Fitted {
        tail,
        clusters: c,
        fit,
        u,
        rate,
    } = f;
    let chi2 = crate::diag::chi2_1(o.confidence);
    let probs: Vec<_> = probs
        .into_iter()
        .filter(|&(_, q, _)| q > 0.0 && q < rate)
        .collect();
    let rows: Vec<(f64, f64, Option<f64>)> = probs
        .iter()
        .map(|&(_, q, _)| {
            let (lo, hi) = crate::gpd::return_interval(&c.maxima, fit, rate, q, chi2);
            let e = u + crate::gpd::return_excess(&fit.gpd, rate, q);
            (e, u + lo, hi.map(|h| u + h))
        })
        .collect();
    let rows = monotone_by(rows, |i| probs[i].1);
    let measured = tail.rate_hz.map(|hz| tail.observations as f64 / hz);
    let (mut given, mut not_given) = (Vec::new(), Vec::new());
    for (&(p, _, span), (e, lo, hi)) in probs.iter().zip(rows) {
        let once_per_s = tail.rate_hz.map(|hz| 1.0 / (p * hz));
        let time = span.zip(measured);
        if let Some(why) = why_not(e, lo, hi, tail.max, time) {
            not_given.push(LevelNotGiven {
                probability: p,
                once_per_s,
                why,
            });
            continue;
        }
        given.push(Level {
            probability: p,
            once_per_s,
            estimate_ns: e,
            lower_ns: lo,
            upper_ns: hi,
            extrapolation: 1.0 / (p * tail.observations as f64),
            longer: o.precision.and_then(|r| crate::longer_for(e, hi?, r)),
        });
    }
    (given, not_given)
}

/// `rows` made monotone ([`monotone`]) from the largest `q(i)` to the smallest, in
/// their own order.
pub(crate) fn monotone_by(
    rows: Vec<(f64, f64, Option<f64>)>,
    q: impl Fn(usize) -> f64,
) -> Vec<(f64, f64, Option<f64>)> {
    let mut order: Vec<usize> = (0..rows.len()).collect();
    order.sort_by(|&a, &b| q(b).total_cmp(&q(a)));
    let mut sorted: Vec<_> = order.iter().map(|&i| rows[i]).collect();
    monotone(&mut sorted);
    let mut out = rows;
    for (k, &i) in order.iter().enumerate() {
        out[i] = sorted[k];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rarer_rows_are_never_below_more_frequent_ones() {
        let mut rows = [
            (50.0, 40.0, Some(60.0)),
            (37.0, 32.0, Some(43.0)),
            (70.0, 65.0, Some(90.0)),
            (80.0, 70.0, None),
            (90.0, 80.0, Some(100.0)),
        ];
        monotone(&mut rows);
        assert_eq!(rows[1], (50.0, 40.0, Some(60.0)));
        assert_eq!(rows[2], (70.0, 65.0, Some(90.0)));
        assert_eq!(rows[3], (80.0, 70.0, None));
        assert_eq!(rows[4], (90.0, 80.0, None));
    }

    #[test]
    fn a_level_beyond_the_data_is_not_given_and_says_why() {
        assert_eq!(why_not(10.0, 9.0, Some(11.0), 5.0, None), None);
        let open = why_not(10.0, 9.0, None, 5.0, None).unwrap();
        assert!(open.contains("do not bound it above"), "{open}");
        let far = why_not(10.0, 9.0, Some(600.0), 5.0, None).unwrap();
        assert!(
            far.contains("more than 100 × the largest latency observed"),
            "{far}"
        );
        let nan = why_not(10.0, f64::NAN, Some(11.0), 5.0, None).unwrap();
        assert!(nan.contains("could not be computed"), "{nan}");
        let year = why_not(10.0, 9.0, Some(11.0), 5.0, Some((365.25 * 86400.0, 467.0)));
        let year = year.unwrap();
        assert!(
            year.contains("once per 1.0 y needs at least 36.5 d measured"),
            "{year}"
        );
        assert_eq!(
            why_not(10.0, 9.0, Some(11.0), 5.0, Some((3600.0, 360.0))),
            None
        );
        assert_eq!(distinct([1.0, 1.0, 2.0, 1.0].into_iter(), 5), 2);
    }
}
