//! `--limit STAT=VALUE`: CI gates on any statistic, checked per thread and over all threads.

use crate::error::UsageError;
use rtscope_core::{Histogram, Nanos, Overflow, Stats};

/// A statistic a limit can apply to.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Stat {
    /// The maximum.
    Max,
    /// The mean.
    Mean,
    /// A percentile (quantile 0..1) with its label.
    Quantile(f64, &'static str),
    /// Missed periods (a count, not a latency).
    Missed,
}

/// One parsed limit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limit {
    /// What is limited.
    pub stat: Stat,
    /// The largest allowed value: ns for latencies, a count for `missed`.
    pub value: u64,
}

/// One checked limit on one scope.
#[derive(Debug, Clone, PartialEq)]
pub struct Check {
    /// The statistic's name (`max`, `p99.99`, `missed`).
    pub stat: String,
    /// `cpu 1`, `thread 3` or `all`.
    pub scope: String,
    /// The limit (ns, or a count).
    pub limit: u64,
    /// The measured value (ns, or a count).
    pub value: u64,
    /// Whether the value is within the limit.
    pub passed: bool,
}

impl Stat {
    /// The name users type.
    pub fn name(&self) -> &'static str {
        match self {
            Stat::Max => "max",
            Stat::Mean => "mean",
            Stat::Quantile(_, l) => l,
            Stat::Missed => "missed",
        }
    }

    /// The value (ns, or a count) and whether it is only a lower bound: a percentile ranked
    /// over all `stats.count` samples falls among samples `hist` could not hold (an import's
    /// overflows).
    fn value(&self, stats: &Stats, hist: &Histogram) -> (u64, bool) {
        match self {
            Stat::Max => (stats.max.0, false),
            Stat::Mean => (stats.mean_ns().unwrap_or(0.0).round() as u64, false),
            Stat::Quantile(q, _) => hist
                .value_over_all(*q, Overflow::of(hist, stats.count, None))
                .map_or((0, false), |(v, bound)| (v.0, bound)),
            Stat::Missed => (stats.missed, false),
        }
    }
}

/// Parses `STAT=VALUE` (`max=100us`, `p99.99=50us`, `missed=0`). A bare latency number is µs.
pub fn parse(text: &str) -> Result<Limit, UsageError> {
    let bad = |why: &str| {
        UsageError::new(format!("invalid value '{text}' for '--limit': {why}")).hint("use STAT=VALUE with STAT one of max, mean, p50, p90, p99, p99.9, p99.99, p99.999, p99.9999, missed; e.g. --limit max=100us --limit p99.99=50us")
    };
    let (stat, value) = text.split_once('=').ok_or_else(|| bad("missing '='"))?;
    let stat = match stat.trim() {
        "max" => Stat::Max,
        "mean" | "avg" => Stat::Mean,
        "missed" => Stat::Missed,
        other => rtscope_core::PERCENTILES
            .iter()
            .find(|(l, _)| *l == other)
            .map(|&(l, q)| Stat::Quantile(q, l))
            .ok_or_else(|| bad(&format!("unknown statistic '{other}'")))?,
    };
    let value = if stat == Stat::Missed {
        value
            .trim()
            .parse()
            .map_err(|_| bad("missed takes a count"))?
    } else {
        Nanos::parse_with_default_unit(value, "us")
            .map_err(|e| bad(&e.to_string()))?
            .0
    };
    Ok(Limit { stat, value })
}

/// Checks every limit against one scope.
pub fn check(limits: &[Limit], scope: &str, stats: &Stats, hist: &Histogram) -> Vec<Check> {
    limits
        .iter()
        .map(|l| {
            let (value, lower_bound) = l.stat.value(stats, hist);
            // No sample proves nothing: a gate never passes on an empty run, nor on a lower
            // bound (the true percentile may be anything above it).
            Check {
                stat: l.stat.name().to_string(),
                scope: scope.to_string(),
                limit: l.value,
                value,
                passed: stats.count > 0 && value <= l.value && !lower_bound,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_limits() {
        assert_eq!(
            parse("max=100us").unwrap(),
            Limit {
                stat: Stat::Max,
                value: 100_000
            }
        );
        assert_eq!(parse("p99.99=50").unwrap().value, 50_000);
        assert_eq!(
            parse("missed=0").unwrap(),
            Limit {
                stat: Stat::Missed,
                value: 0
            }
        );
        assert_eq!(parse("p99=1.5ms").unwrap().value, 1_500_000);
        for bad in ["max", "p42=1us", "max=fast", "missed=1us"] {
            assert!(
                parse(bad).unwrap_err().to_string().contains("--limit"),
                "{bad}"
            );
        }
    }

    #[test]
    fn checks_against_values() {
        let mut h = Histogram::new();
        h.record_n(Nanos(10_000), 99);
        h.record(Nanos(200_000));
        let s = Stats {
            count: 100,
            min: Nanos(10_000),
            max: Nanos(200_000),
            sum_ns: 1_190_000,
            ..Stats::default()
        };
        let c = check(
            &[parse("max=100us").unwrap(), parse("p99=20us").unwrap()],
            "all",
            &s,
            &h,
        );
        assert!(!c[0].passed);
        assert!(c[1].passed);
    }

    #[test]
    fn a_percentile_among_an_imports_overflows_never_passes() {
        // 99 samples at 10 µs kept, 1 more counted beyond the histogram (an overflow).
        let mut h = Histogram::new();
        h.record_n(Nanos(10_000), 99);
        let s = Stats {
            count: 100,
            min: Nanos(10_000),
            max: Nanos(900_000),
            ..Stats::default()
        };
        let c = check(&[parse("p99.9=1000us").unwrap()], "all", &s, &h);
        assert!(!c[0].passed, "only a lower bound (10 µs) is known");
        assert_eq!(c[0].value, 10_000);
        let c = check(&[parse("p99=20us").unwrap()], "all", &s, &h);
        assert!(c[0].passed, "rank 99 of 100 is a kept sample");
    }
}
