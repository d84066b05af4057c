//! The options of `rtscope tail`.

use clap::Args;
use std::path::PathBuf;

/// Options of `rtscope tail`.
#[derive(Debug, Clone, Args)]
pub struct TailArgs {
    /// Run id, or `last`
    pub run: String,
    /// Only the thread that measured this CPU [default: every thread]
    #[arg(long, value_name = "N")]
    pub cpu: Option<u32>,
    /// Exceedance probabilities, each giving a level per wake-up and one per episode
    /// (repeatable or comma-separated) [default: 1e-6, 1e-7, …, 1e-12; once an hour, a day, a
    /// year and ten years of episodes at the run's rate are always added]
    #[arg(long = "probability", short = 'p', value_name = "P", value_delimiter = ',', value_parser = probability)]
    pub probabilities: Vec<f64>,
    /// Two-sided confidence level of the intervals
    #[arg(long, value_name = "LEVEL", default_value_t = 0.95, value_parser = probability)]
    pub confidence: f64,
    /// Extrapolate a bounded tail (fitted shape ξ < 0) as fitted, instead of the conservative
    /// exponential tail (docs/worst-case.md: a light tail fitted with ξ < 0 extrapolates too
    /// low)
    #[arg(long)]
    pub allow_bounded: bool,
    /// How long must I measure: per level, how many times this run's length would bring the
    /// upper bound within PCT of the estimate (e.g. 10%; a rough guide, docs/worst-case.md)
    #[arg(long, value_name = "PCT", value_parser = percent)]
    pub precision: Option<f64>,
    /// Print the estimate of a refused fit too, labelled UNRELIABLE (a --limit still fails on
    /// it; a heavy or unstable tail gets no number even so)
    #[arg(long)]
    pub unreliable: bool,
    /// Print the estimate of a histogram (a run without --raw, an imported cyclictest
    /// histogram), whose stationarity tests cannot run, labelled UNTESTED; a --limit never
    /// passes on it (exit 1)
    #[arg(long)]
    pub assume_stationary: bool,
    /// Exit 1 when the upper confidence bound of the named level is above LATENCY, or when no
    /// answer gives it: `tail@1e-9/wakeup=200us` (each wake-up), `tail@1e-9/episode=200us`
    /// (per episode), `tail@1/day=200us` (once a day of this workload; also 1/minute, 1/hour,
    /// 1/year: from the estimate, else the worst-segment envelope or the block maxima, named);
    /// `pwcet@P=` is the old spelling of `tail@P/episode=` (repeatable)
    #[arg(long = "limit", value_name = "tail@LEVEL=LATENCY")]
    pub limits: Vec<String>,
    /// Print JSON instead of text
    #[arg(long)]
    pub json: bool,
    /// The run database [default: $RTSCOPE_DB, else ./rtscope.db]
    #[arg(long, value_name = "PATH")]
    pub db: Option<PathBuf>,
}

/// A number refused by [`probability`] or [`percent`] (the text given): clap's usage error
/// (exit 2) says it after the option's name. (Written by hand: the CLI links no thiserror.)
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum NumberError {
    /// Not a number strictly between 0 and 1.
    NotProbability(String),
    /// Not a number above 0, with or without `%`.
    NotPercent(String),
}

impl std::fmt::Display for NumberError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NumberError::NotProbability(t) => write!(
                f,
                "'{t}' is not a probability: give a number between 0 and 1, e.g. 1e-9"
            ),
            NumberError::NotPercent(t) => write!(f, "'{t}' is not a percentage: give e.g. 10%"),
        }
    }
}

impl std::error::Error for NumberError {}

/// A probability strictly between 0 and 1.
pub(crate) fn probability(text: &str) -> Result<f64, NumberError> {
    match text.trim().parse::<f64>() {
        Ok(p) if p > 0.0 && p < 1.0 => Ok(p),
        _ => Err(NumberError::NotProbability(text.to_string())),
    }
}

/// A percentage above 0: `10%` or `10` is 0.1.
fn percent(text: &str) -> Result<f64, NumberError> {
    match text.trim().trim_end_matches('%').parse::<f64>() {
        Ok(p) if p > 0.0 && p.is_finite() => Ok(p / 100.0),
        _ => Err(NumberError::NotPercent(text.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probabilities_and_percentages_parse_and_a_bad_one_says_what_to_give() {
        assert_eq!(probability(" 1e-9 "), Ok(1e-9));
        assert_eq!(percent("10%"), Ok(0.1));
        assert_eq!(percent("5"), Ok(0.05));
        for bad in ["0", "1", "x", "-0.5"] {
            assert_eq!(
                probability(bad).unwrap_err().to_string(),
                format!("'{bad}' is not a probability: give a number between 0 and 1, e.g. 1e-9")
            );
        }
        assert_eq!(
            percent("0%").unwrap_err().to_string(),
            "'0%' is not a percentage: give e.g. 10%"
        );
        // Through clap: a usage error (exit 2) naming the option.
        let e = <crate::cli::Cli as clap::Parser>::try_parse_from([
            "rtscope", "tail", "last", "-p", "2",
        ])
        .unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(
            e.to_string()
                .contains("invalid value '2' for '--probability <P>': '2' is not a probability"),
            "{e}"
        );
    }
}
