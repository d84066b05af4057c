//! `--limit tail@…=LATENCY`: a gate on the estimate, naming which level it holds to a limit:
//!
//! - `tail@P/wakeup=LATENCY`: the latency each wake-up exceeds with probability `P`;
//! - `tail@P/episode=LATENCY`: the latency an episode's maximum exceeds, an episode starting
//!   with probability `P` per wake-up;
//! - `tail@1/hour=`, `tail@1/day=`, `tail@1/year=LATENCY`: the latency an episode exceeds once
//!   per hour, day or year of this workload (at the run's wake-up rate).
//!
//! `pwcet@P=LATENCY`, the old spelling, is `tail@P/episode` (what it always measured), kept with
//! a deprecation note. A limit passes only when an estimate was made and the upper confidence
//! bound of its level is at or below the limit; a refused estimate or an unbounded upper end
//! fails it (nothing shows the tail is below the limit), and so does an estimate printed under
//! `--assume-stationary` (its tests did not run: [`Verdict::Untested`], exit 1 like any failed
//! limit).

use crate::{Analysis, Level};
use rtscope_core::Nanos;

/// Which level a limit holds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Per {
    /// Exceeded by a wake-up with the probability.
    Wakeup(f64),
    /// Exceeded by an episode's maximum, an episode starting with the probability per wake-up.
    Episode(f64),
    /// Exceeded by an episode once per this time of the workload.
    Time(Span),
}

/// The times a per-time limit names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Span {
    /// An hour.
    Hour,
    /// A day.
    Day,
    /// A year (365.25 days).
    Year,
}

impl Span {
    /// Its length, s (one of [`crate::PER_TIME_S`]).
    pub fn seconds(self) -> f64 {
        match self {
            Span::Hour => crate::PER_TIME_S[0],
            Span::Day => crate::PER_TIME_S[1],
            Span::Year => crate::PER_TIME_S[2],
        }
    }

    /// Its word.
    pub fn word(self) -> &'static str {
        match self {
            Span::Hour => "hour",
            Span::Day => "day",
            Span::Year => "year",
        }
    }
}

/// A tail limit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TailLimit {
    /// The level.
    pub per: Per,
    /// The limit, ns.
    pub limit: Nanos,
    /// Written in the old spelling `pwcet@P=` (a note says so).
    pub deprecated: bool,
}

/// A limit that does not parse.
#[derive(Debug, thiserror::Error, PartialEq)]
#[error("'{text}' is not a tail limit: {why}\n\nhint: --limit tail@1e-9/wakeup=200us (each wake-up exceeds 200 µs with probability 1e-9 at most), tail@1e-9/episode=200us (per episode) or tail@1/day=200us (once a day of this workload)")]
pub struct LimitError {
    /// What was given.
    pub text: String,
    /// What is wrong.
    pub why: &'static str,
}

/// The note printed for the old spelling.
pub const DEPRECATED: &str = "note: pwcet@P=LATENCY is the old spelling of tail@P/episode=LATENCY (the level an episode's maximum exceeds); write that, or tail@P/wakeup=LATENCY for the level each wake-up exceeds";

impl std::str::FromStr for TailLimit {
    type Err = LimitError;

    fn from_str(text: &str) -> Result<TailLimit, LimitError> {
        let err = |why| LimitError {
            text: text.to_string(),
            why,
        };
        let t = text.trim();
        let (rest, deprecated) = match (t.strip_prefix("tail@"), t.strip_prefix("pwcet@")) {
            (Some(r), _) => (r, false),
            (None, Some(r)) => (r, true),
            (None, None) => return Err(err("it must start with tail@")),
        };
        let (level, l) = rest
            .split_once('=')
            .ok_or_else(|| err("it needs =LATENCY"))?;
        let probability = |p: &str| match p.parse::<f64>() {
            Ok(p) if p > 0.0 && p < 1.0 => Ok(p),
            Ok(_) => Err(err("the probability must lie between 0 and 1")),
            Err(_) => Err(err("the probability is not a number")),
        };
        let per = match (deprecated, level.split_once('/')) {
            (true, None) => Per::Episode(probability(level)?),
            (true, Some(_)) => return Err(err("pwcet@ takes a probability only: tail@P/wakeup")),
            (false, None) => {
                return Err(err(
                    "name the level: /wakeup, /episode, or 1/hour, 1/day, 1/year",
                ))
            }
            (false, Some(("1", span))) => Per::Time(match span {
                "hour" => Span::Hour,
                "day" => Span::Day,
                "year" => Span::Year,
                _ => return Err(err("the time is hour, day or year: tail@1/day")),
            }),
            (false, Some((p, "wakeup"))) => Per::Wakeup(probability(p)?),
            (false, Some((p, "episode"))) => Per::Episode(probability(p)?),
            (false, Some(_)) => {
                return Err(err(
                    "the level is P/wakeup, P/episode, 1/hour, 1/day or 1/year",
                ))
            }
        };
        let limit = Nanos::parse_with_default_unit(l, "us")
            .map_err(|_| err("the latency is not a duration such as 200us"))?;
        Ok(TailLimit {
            per,
            limit,
            deprecated,
        })
    }
}

impl std::fmt::Display for TailLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.per {
            Per::Wakeup(p) => write!(f, "tail@{p:e}/wakeup"),
            Per::Episode(p) => write!(f, "tail@{p:e}/episode"),
            Per::Time(s) => write!(f, "tail@1/{}", s.word()),
        }
    }
}

/// The verdict of one limit on one analysis.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "kebab-case", tag = "verdict")]
pub enum Verdict {
    /// The upper bound is at or below the limit.
    Pass {
        /// Upper confidence bound, ns.
        upper_ns: f64,
    },
    /// The upper bound is above the limit, or unbounded (`None`).
    Exceeded {
        /// Upper confidence bound, ns.
        upper_ns: Option<f64>,
    },
    /// No estimate: refused, `P` within the data (no extrapolated level), or a per-time level of
    /// a run whose wake-up rate is unknown.
    NoEstimate,
    /// An estimate whose stationarity was assumed, not tested (`--assume-stationary`): shown,
    /// never passing.
    Untested {
        /// Upper confidence bound, ns (`None`: unbounded).
        upper_ns: Option<f64>,
    },
}

impl TailLimit {
    /// The per-wake-up probability an analysis must be asked for to check this limit (`None`
    /// for a per-time limit: those levels are always there when the rate is known).
    pub fn probability(&self) -> Option<f64> {
        match self.per {
            Per::Wakeup(p) | Per::Episode(p) => Some(p),
            Per::Time(_) => None,
        }
    }

    /// The level of `a` this limit holds (`None`: not estimated).
    pub fn level<'a>(&self, a: &'a Analysis) -> Option<&'a Level> {
        let near = |x: f64, y: f64| (x / y - 1.0).abs() < 1e-9;
        match self.per {
            Per::Wakeup(p) => a.wakeup_levels.iter().find(|l| near(l.probability, p)),
            Per::Episode(p) => a.levels.iter().find(|l| near(l.probability, p)),
            Per::Time(s) => a
                .levels
                .iter()
                .find(|l| l.once_per_s.is_some_and(|o| near(o, s.seconds()))),
        }
    }

    /// Checks `a` (which must have been made with this limit's probability among its own).
    pub fn check(&self, a: &Analysis) -> Verdict {
        let level = self.level(a);
        if let (true, Some(l)) = (a.assumed_stationary, level) {
            return Verdict::Untested {
                upper_ns: l.upper_ns,
            };
        }
        if !a.accepted() {
            return Verdict::NoEstimate;
        }
        match level {
            None => Verdict::NoEstimate,
            Some(l) => match l.upper_ns {
                Some(u) if u <= self.limit.0 as f64 => Verdict::Pass { upper_ns: u },
                upper_ns => Verdict::Exceeded { upper_ns },
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_name_their_level_and_bad_ones_name_the_fix() {
        let l: TailLimit = "tail@1e-9/wakeup=200us".parse().unwrap();
        assert_eq!(l.per, Per::Wakeup(1e-9));
        assert_eq!(l.limit, Nanos(200_000));
        assert!(!l.deprecated);
        assert_eq!(l.to_string(), "tail@1e-9/wakeup");
        let l: TailLimit = "tail@1e-6/episode=50".parse().unwrap();
        assert_eq!((l.per, l.limit), (Per::Episode(1e-6), Nanos(50_000)));
        let l: TailLimit = "tail@1/day=1ms".parse().unwrap();
        assert_eq!((l.per, l.probability()), (Per::Time(Span::Day), None));
        assert_eq!(l.to_string(), "tail@1/day");
        // The old spelling: the episode level, marked deprecated.
        let l: TailLimit = "pwcet@1e-9=200us".parse().unwrap();
        assert_eq!(l.per, Per::Episode(1e-9));
        assert!(l.deprecated);
        assert_eq!(l.to_string(), "tail@1e-9/episode");
        for bad in [
            "max=200us",
            "tail@1e-9=1us",
            "tail@2/wakeup=1us",
            "tail@x/episode=1us",
            "tail@1/week=1us",
            "tail@1e-9/cluster=1us",
            "tail@1e-9/wakeup",
            "tail@1e-9/wakeup=fast",
            "pwcet@2=1us",
            "pwcet@1e-9/wakeup=1us",
        ] {
            let e = bad.parse::<TailLimit>().unwrap_err();
            assert!(e.to_string().contains("hint: --limit tail@"), "{e}");
        }
    }
}
