//! The options of `rtscope compare`.

use clap::Args;
use std::path::PathBuf;

/// Options of `rtscope compare`.
#[derive(Debug, Clone, Args)]
pub struct CompareArgs {
    /// Groups of runs, the first is the baseline: run id, `last`, label, campaign:NAME (or a
    /// campaign's name), tags such as kernel=rt,case=idle, or the hours of a watch series'
    /// period, watch:SERIES@FROM..TO
    #[arg(required = true, num_args = 2.., value_name = "SELECTOR")]
    pub selectors: Vec<String>,
    /// The run database [default: $RTSCOPE_DB, else ./rtscope.db]
    #[arg(long, value_name = "PATH")]
    pub db: Option<PathBuf>,
    /// Statistics to compare (repeatable or comma-separated): min, mean, p50, p90, p99, p99.9,
    /// p99.99, p99.999, p99.9999, max, missed; for noise runs also available and noise/s. A list
    /// given is always compared as given [default: p50,p99,p99.99,max,missed; noise groups: max,
    /// available, noise/s, p50, p99, p99.99]
    #[arg(long = "stat", value_name = "STAT", value_delimiter = ',')]
    pub stats: Option<Vec<String>>,
    /// A candidate statistic higher than the baseline's by more than this % (and by more than
    /// --min-delta) is a regression; STAT=PCT sets one statistic's threshold (repeatable)
    /// [default: 10%]
    #[arg(long = "threshold", value_name = "[STAT=]PCT", value_delimiter = ',')]
    pub thresholds: Vec<String>,
    /// Latency changes up to this are noise, whatever their % (a bare number is µs)
    #[arg(long, value_name = "DUR", default_value = "1us")]
    pub min_delta: String,
    /// Judge by --threshold and --min-delta alone, without the significance test; a rise beyond
    /// them fails (by default runs with repeats are tested, and a rise on too few runs to test
    /// is `higher (untested)` and does not fail)
    #[arg(long)]
    pub threshold_only: bool,
    /// Fail also on a rise beyond the threshold that rests on too few runs for the significance
    /// test (a cell marked untested): `REGRESSION (untested)` instead of `higher (untested)`; a
    /// fall (`lower (untested)`) never fails
    #[arg(long)]
    pub fail_untested: bool,
    /// Also compare the latency exceeded with this probability per wake-up (e.g. 1e-9), as
    /// `rtscope tail` estimates it; a refused estimate gets no verdict
    #[arg(long, value_name = "P", value_parser = crate::cli::tail::probability)]
    pub tail_level: Option<f64>,
    /// With --tail-level: show the levels of the merged histograms, whose stationarity cannot
    /// be tested (no time order), labelled UNTESTED; their verdicts are untested (a rise is
    /// `higher`, failing only with --fail-untested)
    #[arg(long, requires = "tail_level")]
    pub assume_stationary: bool,
    /// The statistic in the cells of the load-case matrix
    #[arg(long, value_name = "STAT", default_value = "max")]
    pub matrix: String,
    /// Rows of the load-case matrix: the values of this tag (e.g. kernel) [default: one row per
    /// group]
    #[arg(long, value_name = "TAGKEY")]
    pub rows: Option<String>,
    /// Also write the groups' distributions overlaid (tail latency and exceedance, SVG and
    /// PNG) into this directory
    #[arg(long, value_name = "DIR")]
    pub plot: Option<PathBuf>,
    /// Print JSON (schema rtscope.compare/3) instead of text
    #[arg(long)]
    pub json: bool,
    /// Exit 0 even when a candidate regresses (report only)
    #[arg(long)]
    pub no_fail: bool,
    /// Also write the verdicts as lava, kcidb or junit to FILE (`-`: stdout), repeatable
    #[arg(long, value_name = "FORMAT=FILE")]
    pub ci_output: Vec<String>,
}
