//! The options of `rtscope report`: runs, or with `--watch` a watch series.

use clap::{Args, ValueEnum};
use std::path::PathBuf;

/// Options of `rtscope report`.
#[derive(Debug, Clone, Args)]
pub struct ReportArgs {
    /// Runs to report: ids, `last`, `campaign:NAME`, `label:TEXT` or tags (`kernel=rt`)
    /// [default: the newest run]
    #[arg(value_name = "RUN")]
    pub runs: Vec<String>,
    /// Report every run of the newest campaign with this name, in plan order
    #[arg(long, value_name = "NAME")]
    pub campaign: Option<String>,
    /// Report the newest run, or its whole campaign when it belongs to one (the default)
    #[arg(long)]
    pub last: bool,
    /// Directory to write into (created if needed)
    #[arg(
        long,
        short = 'o',
        value_name = "DIR",
        default_value = "rtscope-report"
    )]
    pub output: PathBuf,
    /// The run database [default: $RTSCOPE_DB, else ./rtscope.db]
    #[arg(long, value_name = "PATH")]
    pub db: Option<PathBuf>,
    /// Draw the CDF from raw samples where they were stored (`measure --raw`)
    #[arg(long)]
    pub raw: bool,
    /// Title of the report page [default: made from the runs]
    #[arg(long, value_name = "TEXT")]
    pub title: Option<String>,
    /// Group runs by these keys (tags such as `kernel`, or `case`, `scenario`) [default: the
    /// tags and campaign coordinates that differ among the runs]
    #[arg(long, value_name = "KEY,…", value_delimiter = ',')]
    pub group_by: Option<Vec<String>>,
    /// The key whose values make the rows of the plot grids and the per-case table [default:
    /// `case`, else `scenario`]
    #[arg(long, value_name = "KEY")]
    pub rows: Option<String>,
    /// The keys whose values make the columns (e.g. `kernel`) [default: the other keys that
    /// differ]
    #[arg(long, value_name = "KEY,…", value_delimiter = ',')]
    pub cols: Option<Vec<String>>,
    /// End the histograms' latency axis here (`400us`, `1.5ms`; a bare number is µs, OSADL's
    /// `-h400`: 400); later samples are counted at the limit [default: the largest latency]
    #[arg(long, value_name = "LATENCY")]
    pub xmax: Option<String>,
    /// Add per run and CPU the estimate of `rtscope tail` (or its refusal) with its plots; at
    /// most 16 threads
    #[arg(long)]
    pub tail: bool,
    /// Report an `rtscope watch` series instead of runs: its maximum and tail over time, a
    /// latency heat map, the worst periods with their causes and the alerts (docs/watch.md)
    #[arg(long, value_name = "SERIES", conflicts_with_all = ["runs", "campaign", "last", "raw", "group_by", "rows", "cols", "xmax", "tail"])]
    pub watch: Option<String>,
    /// With --watch: from this UTC time (`2026-11-24`, `2026-11-24 13:00`, RFC 3339 or
    /// `@UNIX_SECONDS`) [default: the series' start]
    #[arg(long, value_name = "TIME", requires = "watch")]
    pub from: Option<String>,
    /// With --watch: up to this UTC time, excluded [default: now]
    #[arg(long, value_name = "TIME", requires = "watch")]
    pub to: Option<String>,
    /// With --watch: draw one point per window, hour or day [default: the finest with at most
    /// 400 per CPU]
    #[arg(long, value_name = "LEVEL", requires = "watch")]
    pub per: Option<WatchLevel>,
}

/// The resolution of a watch report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum WatchLevel {
    /// Each measured window (`watch --window`).
    Window,
    /// Hours.
    Hour,
    /// Days.
    Day,
}
