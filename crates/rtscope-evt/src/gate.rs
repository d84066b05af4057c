//! `--limit pwcet@P=LATENCY`: a gate on the estimate. It passes only when an estimate was made
//! and the upper confidence bound of the latency exceeded with probability `P` per wake-up is
//! at or below the limit; a refused estimate or an unbounded upper end fails it (nothing shows
//! the tail is below the limit), and so does an estimate printed under `--assume-stationary`
//! (its tests did not run: [`Verdict::Untested`], exit 1 like any failed limit).

use crate::Analysis;
use rtscope_core::Nanos;

/// A pWCET limit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PwcetLimit {
    /// Exceedance probability per wake-up.
    pub probability: f64,
    /// The limit, ns.
    pub limit: Nanos,
}

/// A limit that does not parse.
#[derive(Debug, thiserror::Error, PartialEq)]
#[error("'{text}' is not a tail limit: {why}\n\nhint: --limit pwcet@1e-9=200us (the latency exceeded with probability 1e-9 per wake-up must stay at or below 200 µs)")]
pub struct LimitError {
    /// What was given.
    pub text: String,
    /// What is wrong.
    pub why: &'static str,
}

impl std::str::FromStr for PwcetLimit {
    type Err = LimitError;

    fn from_str(text: &str) -> Result<PwcetLimit, LimitError> {
        let err = |why| LimitError {
            text: text.to_string(),
            why,
        };
        let rest = text
            .trim()
            .strip_prefix("pwcet@")
            .ok_or_else(|| err("it must start with pwcet@"))?;
        let (p, l) = rest
            .split_once('=')
            .ok_or_else(|| err("it needs =LATENCY"))?;
        let probability: f64 = p
            .parse()
            .map_err(|_| err("the probability is not a number"))?;
        if !(probability > 0.0 && probability < 1.0) {
            return Err(err("the probability must lie between 0 and 1"));
        }
        let limit = Nanos::parse_with_default_unit(l, "us")
            .map_err(|_| err("the latency is not a duration such as 200us"))?;
        Ok(PwcetLimit { probability, limit })
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
    /// No estimate: refused, or `P` lies within the data (no extrapolated level).
    NoEstimate,
    /// An estimate whose stationarity was assumed, not tested (`--assume-stationary`): shown,
    /// never passing.
    Untested {
        /// Upper confidence bound, ns (`None`: unbounded or `P` within the data).
        upper_ns: Option<f64>,
    },
}

impl PwcetLimit {
    /// Checks `a` (which must have been made with this limit's probability among its own).
    pub fn check(&self, a: &Analysis) -> Verdict {
        let level = a
            .levels
            .iter()
            .find(|l| (l.probability / self.probability - 1.0).abs() < 1e-9);
        if a.assumed_stationary {
            return Verdict::Untested {
                upper_ns: level.and_then(|l| l.upper_ns),
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
    fn limits_parse_and_bad_ones_name_the_fix() {
        let l: PwcetLimit = "pwcet@1e-9=200us".parse().unwrap();
        assert_eq!(l.probability, 1e-9);
        assert_eq!(l.limit, Nanos(200_000));
        assert_eq!(
            "pwcet@1e-6=50".parse::<PwcetLimit>().unwrap().limit,
            Nanos(50_000)
        );
        for bad in [
            "max=200us",
            "pwcet@2=1us",
            "pwcet@x=1us",
            "pwcet@1e-9",
            "pwcet@1e-9=fast",
        ] {
            let e = bad.parse::<PwcetLimit>().unwrap_err();
            assert!(e.to_string().contains("hint: --limit pwcet@"), "{e}");
        }
    }
}
