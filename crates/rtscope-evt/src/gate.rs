//! `--limit tail@…=LATENCY`: a gate on the estimate, naming which level it holds to a limit:
//!
//! - `tail@P/wakeup=LATENCY`: the latency each wake-up exceeds with probability `P`;
//! - `tail@P/episode=LATENCY`: the latency an episode's maximum exceeds, an episode starting
//!   with probability `P` per wake-up;
//! - `tail@1/minute=`, `tail@1/hour=`, `tail@1/day=`, `tail@1/year=LATENCY`: the latency
//!   exceeded once per that time of this workload, from the first answer that gives it, named in
//!   the verdict ([`Used`]): the estimate's episode level (at the run's wake-up rate) when the
//!   estimate is accepted; else the worst-segment envelope per time (a 1 s block's maximum above
//!   it once per that time of the worst segment: [`crate::regimes::per_time`]); else the run's
//!   own values (the level episodes exceeded at that rate in the run, within it only:
//!   [`crate::regimes::observed`]); else the block maxima's GEV level (the run's mix of
//!   conditions). A time none of them gives fails, and says why each did not.
//!
//! A `tail@P/wakeup` limit the estimate does not answer (refused, or no level there) reads the
//! run's own values at `P` (within the run only). Own values or block maxima whose test failed
//! are shown as [`Verdict::Untested`] naming it, never passing.
//!
//! `pwcet@P=LATENCY`, the old spelling, is `tail@P/episode` (what it always measured), kept with
//! a deprecation note. A limit passes only when an estimate was made and the upper confidence
//! bound of its level is at or below the limit; a refused estimate (with no other answer giving
//! a per-time level) or an unbounded upper end fails it (nothing shows the tail is below the limit), and so does an estimate printed under
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
    /// A minute.
    Minute,
    /// An hour.
    Hour,
    /// A day.
    Day,
    /// A year (365.25 days).
    Year,
}

impl Span {
    /// Its length, s (a minute, or one of [`crate::PER_TIME_S`]).
    pub fn seconds(self) -> f64 {
        match self {
            Span::Minute => 60.0,
            Span::Hour => crate::PER_TIME_S[0],
            Span::Day => crate::PER_TIME_S[1],
            Span::Year => crate::PER_TIME_S[2],
        }
    }

    /// Its word.
    pub fn word(self) -> &'static str {
        match self {
            Span::Minute => "minute",
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
#[error("'{text}' is not a tail limit: {why}\n\nhint: --limit tail@1e-9/wakeup=200us (each wake-up exceeds 200 µs with probability 1e-9 at most), tail@1e-9/episode=200us (per episode) or tail@1/day=200us (once a day of this workload; also 1/minute, 1/hour, 1/year)")]
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
                    "name the level: /wakeup, /episode, or 1/minute, 1/hour, 1/day, 1/year",
                ))
            }
            (false, Some(("1", span))) => Per::Time(match span {
                "minute" => Span::Minute,
                "hour" => Span::Hour,
                "day" => Span::Day,
                "year" => Span::Year,
                _ => return Err(err("the time is minute, hour, day or year: tail@1/day")),
            }),
            (false, Some((p, "wakeup"))) => Per::Wakeup(probability(p)?),
            (false, Some((p, "episode"))) => Per::Episode(probability(p)?),
            (false, Some(_)) => {
                return Err(err(
                    "the level is P/wakeup, P/episode, 1/minute, 1/hour, 1/day or 1/year",
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

/// Which answer a verdict used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Used {
    /// The estimate of one stationary tail (accepted): its per-wake-up or per-episode level, or
    /// per time the episode level once per that time.
    Estimate,
    /// The worst-segment envelope per time ([`crate::regimes::per_time`]).
    Envelope,
    /// The block maxima's GEV ([`crate::regimes::BlockMaxima`]): the run's mix of conditions.
    BlockMaxima,
    /// The run's own values ([`crate::regimes::observed`]): within the run, no model of the tail.
    Observed,
}

impl Used {
    /// Its words.
    pub fn words(self) -> &'static str {
        match self {
            Used::Estimate => "the estimate (one stationary tail)",
            Used::Envelope => "the worst-segment envelope per time (a 1 s block's maximum)",
            Used::BlockMaxima => {
                "the block maxima's GEV (a 1 s block's maximum, the run's mix of conditions)"
            }
            Used::Observed => {
                "the run's own values (within the run, no model of the tail; tested: one rate of episodes)"
            }
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
        /// The answer whose level it is.
        used: Used,
    },
    /// The upper bound is above the limit, or unbounded (`None`).
    Exceeded {
        /// Upper confidence bound, ns.
        upper_ns: Option<f64>,
        /// The answer whose level it is.
        used: Used,
    },
    /// No answer gives the level: refused, `P` within the data (no extrapolated level), a
    /// per-time level no answer gives, or a run whose wake-up rate is unknown.
    NoEstimate {
        /// Why (for people).
        why: String,
    },
    /// An estimate whose stationarity was assumed, not tested (`--assume-stationary`), or a
    /// level of the block maxima whose GEV failed a test: shown, never passing.
    Untested {
        /// Upper confidence bound, ns (`None`: unbounded).
        upper_ns: Option<f64>,
        /// The failed test, for people (`None`: stationarity assumed with --assume-stationary).
        #[serde(skip_serializing_if = "Option::is_none")]
        why: Option<String>,
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

    /// The level of `a`'s estimate this limit holds (`None`: not estimated).
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
                why: None,
            };
        }
        let against = |upper: Option<f64>, used| match upper {
            Some(u) if u <= self.limit.0 as f64 => Verdict::Pass { upper_ns: u, used },
            upper_ns => Verdict::Exceeded { upper_ns, used },
        };
        if let (true, Some(l)) = (a.accepted(), level) {
            return against(l.upper_ns, Used::Estimate);
        }
        let near = |x: f64, y: f64| (x / y - 1.0).abs() < 1e-9;
        let dropped = a.not_given.iter().find(|n| match self.per {
            Per::Wakeup(p) | Per::Episode(p) => near(n.probability, p),
            Per::Time(s) => n.once_per_s.is_some_and(|o| near(o, s.seconds())),
        });
        let mut why = vec![match (a.accepted(), dropped) {
            (true, Some(n)) => format!("the estimate gives no level there: {}", n.why),
            (true, None) => {
                "the estimate has no level there (none is given within the measured data)"
                    .to_string()
            }
            (false, Some(n)) => format!(
                "the estimate (one stationary tail) was refused, and would give no level there: {}",
                n.why
            ),
            (false, None) => "the estimate (one stationary tail) was refused".to_string(),
        }];
        if let Per::Wakeup(p) = self.per {
            if let Some(v) = observed_wakeup(a, p, &mut why, against) {
                return v;
            }
        }
        if let Per::Time(s) = self.per {
            match per_time(a, s.seconds(), &mut why) {
                Some((upper, Used::Observed)) if !observed_tested(a) => {
                    return Verdict::Untested {
                        upper_ns: upper,
                        why: Some(observed_failed(a)),
                    }
                }
                Some((upper, Used::BlockMaxima)) if !blocks_tested(a) => {
                    return Verdict::Untested {
                        upper_ns: upper,
                        why: Some(blocks_failed(a)),
                    }
                }
                Some((upper, used)) => return against(upper, used),
                None if a.regimes.is_none() => why.push(
                    "no answer per time (no raw samples in time order, or the run's wake-up rate is unknown)".into(),
                ),
                None => {}
            }
        }
        Verdict::NoEstimate {
            why: why.join("; "),
        }
    }
}

/// The verdict of the run's own values at `p` per wake-up (`None`: not given, why pushed).
fn observed_wakeup(
    a: &Analysis,
    p: f64,
    why: &mut Vec<String>,
    against: impl Fn(Option<f64>, Used) -> Verdict,
) -> Option<Verdict> {
    use crate::regimes::Answer;
    let near = |x: f64| (x / p - 1.0).abs() < 1e-9;
    match &a.regimes.as_ref()?.observed {
        Answer::Given(o) => {
            if let Some(l) = o.levels.iter().find(|l| near(l.probability)) {
                if !o.tested {
                    return Some(Verdict::Untested {
                        upper_ns: Some(l.upper_ns),
                        why: Some(observed_failed(a)),
                    });
                }
                return Some(against(Some(l.upper_ns), Used::Observed));
            }
            let n = o.not_given.iter().find(|n| n.probability.is_some_and(near));
            why.push(match n {
                Some(n) => format!("the run's own values: {}", n.why),
                None => "the run's own values were not asked for this probability".into(),
            });
        }
        Answer::NotGiven { why: w } => why.push(format!("no run's own values: {w}")),
    }
    None
}

/// Whether `a`'s own values passed their test.
fn observed_tested(a: &Analysis) -> bool {
    let o = a.regimes.as_ref().and_then(|r| r.observed.given());
    o.is_some_and(|o| o.tested)
}

/// The own values' failed test in words.
fn observed_failed(a: &Analysis) -> String {
    let o = a.regimes.as_ref().and_then(|r| r.observed.given());
    match o {
        Some(o) => format!(
            "the run's own values are untested: failed: {}",
            o.test.words()
        ),
        None => "the run's own values are untested".into(),
    }
}

/// Whether `a`'s block maxima passed every test of their fit.
fn blocks_tested(a: &Analysis) -> bool {
    let blocks = a.regimes.as_ref().and_then(|r| r.blocks.given());
    blocks.is_some_and(|b| b.tested)
}

/// The block maxima's tests that did not pass, in words with their p-values.
fn blocks_failed(a: &Analysis) -> String {
    let blocks = a.regimes.as_ref().and_then(|r| r.blocks.given());
    let failed: Vec<String> = blocks
        .map(|b| b.tests.as_slice())
        .unwrap_or_default()
        .iter()
        .filter(|t| !t.passed())
        .map(|t| match &t.outcome {
            crate::Outcome::Fail { p, .. } => format!("failed: {} (p = {p:.3})", t.test.question()),
            crate::Outcome::Untested { why } => format!("not run: {} ({why})", t.test.question()),
            crate::Outcome::Pass { .. } => String::new(),
        })
        .collect();
    format!("the block maxima's GEV is untested: {}", failed.join("; "))
}

/// The upper bound of `a`'s level once per `t` s from the worst-segment envelope, else the block
/// maxima; why each did not give it pushed on `why`.
fn per_time(a: &Analysis, t: f64, why: &mut Vec<String>) -> Option<(Option<f64>, Used)> {
    use crate::regimes::Answer;
    let r = a.regimes.as_ref()?;
    let near = |x: f64| (x / t - 1.0).abs() < 1e-9;
    let when = crate::regimes::per_time::words(t);
    match &r.envelope {
        Answer::Given(e) => {
            if let Some(l) = e.per_time.levels.iter().find(|l| near(l.level.once_per_s)) {
                return Some((l.level.upper_ns, Used::Envelope));
            }
            let said = e.per_time.not_given.iter().find(|n| near(n.once_per_s));
            why.push(match said {
                Some(n) => format!("the worst-segment envelope: {}", n.why),
                None => format!(
                    "the worst-segment envelope has no level once per {when} (it gives levels once per minute, 10 minutes, hour or day, within one segment's length)"
                ),
            });
        }
        Answer::NotGiven { why: w } => why.push(format!("no worst-segment envelope: {w}")),
    }
    if let Answer::Given(o) = &r.observed {
        if let Some(l) = o.per_time.iter().find(|l| near(l.once_per_s)) {
            return Some((Some(l.upper_ns), Used::Observed));
        }
        let said = o.not_given.iter().find(|n| n.once_per_s.is_some_and(near));
        if let Some(n) = said {
            why.push(format!("the run's own values: {}", n.why));
        }
    }
    match &r.blocks {
        Answer::Given(b) => {
            if let Some(l) = b.levels.iter().find(|l| near(l.once_per_s)) {
                return Some((l.upper_ns, Used::BlockMaxima));
            }
            match b.not_given.iter().find(|n| near(n.once_per_s)) {
                Some(n) => why.push(format!("the block maxima: {}", n.why)),
                None => why.push(format!("the block maxima give no level once per {when}")),
            }
        }
        Answer::NotGiven { why: w } => why.push(format!("no block maxima: {w}")),
    }
    None
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
            "tail@1/10minutes=1us",
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

    /// A refused analysis of 6,000 s at 10 Hz whose 1 s block maxima are `block(u)` of a
    /// uniform `u`, with the answers that do not assume one tail.
    fn refused_with_regimes(block: impl Fn(f64) -> f64) -> Analysis {
        let o = crate::Options {
            regimes: true,
            ..crate::Options::default()
        };
        let mut r = crate::diag::generator(9);
        let v: Vec<f64> = (0..60_000)
            .map(|i| {
                if i % 10 == 3 {
                    block(r.unit().max(1e-9))
                } else {
                    1_000.0
                }
            })
            .collect();
        let tail = crate::Tail::ordered(&v, Some(10.0));
        let why = crate::Refusal::Failed {
            test: crate::Test::SameRate,
        };
        let mut a = Analysis::refused(60_000, tail.max, why, &o);
        a.regimes = crate::regimes::regimes(&tail, &o);
        a
    }

    #[test]
    fn a_gate_on_a_per_time_level_no_answer_gives_does_not_pass() {
        // Pareto block maxima (GEV ξ ≈ 1): the block maxima give no level.
        let a = refused_with_regimes(|u| 10_000.0 / u);
        let r = a.regimes.as_ref().unwrap();
        assert!(r.blocks.given().is_none(), "{:?}", r.blocks);
        let e = r.envelope.given().expect("an envelope");
        // Segments of 600 s: once per minute given, once per hour not.
        let minute = e.per_time.levels[0].level.upper_ns.expect("bounded");
        let t = |s: &str| s.parse::<TailLimit>().unwrap();
        // Even a limit of 1,000 s does not pass on a level no answer gives.
        for limit in ["tail@1/hour=1000s", "tail@1/day=1000s", "tail@1/year=1000s"] {
            let Verdict::NoEstimate { why } = t(limit).check(&a) else {
                panic!("{limit}: {:?}", t(limit).check(&a))
            };
            assert!(why.contains("was refused"), "{why}");
            let envelope = if limit.contains("year") {
                "the worst-segment envelope has no level once per"
            } else {
                "is longer than one segment (10 min)"
            };
            assert!(why.contains(envelope), "{why}");
            assert!(
                why.contains("no block maxima: the block maxima's tail is too heavy"),
                "{why}"
            );
        }
        // Once per minute the envelope answers, and says so: within its upper bound it passes,
        // below it it is exceeded.
        let limit = |ns: f64| t(&format!("tail@1/minute={}ns", ns.ceil() as u64));
        assert_eq!(
            limit(minute).check(&a),
            Verdict::Pass {
                upper_ns: minute,
                used: Used::Envelope
            }
        );
        assert_eq!(
            limit(minute / 2.0).check(&a),
            Verdict::Exceeded {
                upper_ns: Some(minute),
                used: Used::Envelope
            }
        );
        // The per-wake-up and per-episode gates never read the envelope: refused is refused.
        assert!(matches!(
            t("tail@1e-6/wakeup=1000s").check(&a),
            Verdict::NoEstimate { .. }
        ));
        // Without the answers in time (no raw samples), no per-time level either.
        let mut b = a.clone();
        b.regimes = None;
        let Verdict::NoEstimate { why } = limit(minute).check(&b) else {
            panic!("no regimes, yet a verdict")
        };
        assert!(why.contains("no answer per time"), "{why}");
    }

    #[test]
    fn a_per_time_gate_beyond_a_segment_reads_the_block_maxima_where_they_are_given() {
        // Exponential block maxima (GEV ξ ≈ 0): once per hour from the GEV, named.
        let a = refused_with_regimes(|u| 10_000.0 - 2_000.0 * u.ln());
        let b = a.regimes.as_ref().unwrap().blocks.given().expect("a GEV");
        let hour = b.levels.iter().find(|l| l.once_per_s == 3600.0).unwrap();
        let upper = hour.upper_ns.expect("bounded");
        let t = |ns: f64| format!("tail@1/hour={}ns", ns.ceil() as u64).parse::<TailLimit>();
        let v = t(upper).unwrap().check(&a);
        assert_eq!(
            v,
            Verdict::Pass {
                upper_ns: upper,
                used: Used::BlockMaxima
            }
        );
        let said = crate::render::limit(&t(upper).unwrap(), &v);
        assert!(said.contains("(the block maxima's GEV"), "{said}");
        assert!(matches!(
            t(upper / 2.0).unwrap().check(&a),
            Verdict::Exceeded {
                used: Used::BlockMaxima,
                ..
            }
        ));
    }
}
