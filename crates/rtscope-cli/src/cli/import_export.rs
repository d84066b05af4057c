//! `rtscope import` and `rtscope export`: their flags.

use crate::cli::values::{one_of, Named};
use clap::{Args, ValueEnum};
use rtscope_import::ImportFormat;
use std::path::PathBuf;

/// The formats `rtscope import` reads.
const FORMATS: [Named<ImportFormat>; 9] = [
    (
        ImportFormat::CyclictestHist,
        "cyclictest-hist",
        "cyclictest `-h`/`-H` histogram text (with or without empty buckets and `# Total:`)",
    ),
    (
        ImportFormat::CyclictestVerbose,
        "cyclictest-verbose",
        "cyclictest `-v` verbose output (`thread:cycle:latency` lines)",
    ),
    (
        ImportFormat::CyclictestJson,
        "cyclictest-json",
        "cyclictest `--json` output",
    ),
    (
        ImportFormat::Jitterdebugger,
        "jitterdebugger",
        "A jitterdebugger output directory (results.json and samples.raw)",
    ),
    (
        ImportFormat::StressNg,
        "stress-ng",
        "A stress-ng `--cyclic` log",
    ),
    (
        ImportFormat::CyclictestSummary,
        "cyclictest-summary",
        "cyclictest's summary without a histogram: `-q`, a live status, `--spike` output",
    ),
    (
        ImportFormat::Oslat,
        "oslat",
        "oslat `--json` output (busy-loop gaps), recorded as a run of kind `noise`",
    ),
    (
        ImportFormat::RtlaOsnoiseTop,
        "rtla-osnoise-top",
        "`rtla osnoise top` (or `rtla hwnoise`) text, recorded as a run of kind `noise`",
    ),
    (
        ImportFormat::RtlaOsnoiseHist,
        "rtla-osnoise-hist",
        "`rtla osnoise hist` text (noises over the threshold), recorded as a run of kind `noise`",
    ),
];

/// Options of `rtscope import`.
#[derive(Debug, Clone, Args)]
pub struct ImportArgs {
    /// Files (or jitterdebugger directories) to import, one run each
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// The format [default: detected from the content]
    #[arg(long, value_parser = one_of(FORMATS))]
    pub format: Option<ImportFormat>,
    /// The run database [default: $RTSCOPE_DB, else ./rtscope.db]
    #[arg(long, value_name = "PATH")]
    pub db: Option<PathBuf>,
    /// A label for the imported runs [default: the file name]
    #[arg(long, value_name = "NAME")]
    pub label: Option<String>,
    /// A tag for the imported runs (repeatable)
    #[arg(long = "tag", value_name = "KEY=VALUE")]
    pub tags: Vec<String>,
    /// Print JSON (the new run ids) instead of text
    #[arg(long)]
    pub json: bool,
}

/// Formats `rtscope export` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ExportFormat {
    /// CSV files, one per table.
    Csv,
    /// One JSON document.
    Json,
    /// Parquet files, one per table.
    Parquet,
    /// node_exporter textfile `rtscope-BOARD[-LABEL].prom` (docs/fleet.md)
    Prometheus,
    /// LAVA test-case signals `run-ID.lava.txt`
    Lava,
    /// KernelCI KCIDB test objects `run-ID.kcidb.json`
    Kcidb,
    /// JUnit XML `run-ID.junit.xml` (GitLab, Jenkins)
    Junit,
}

/// Options of `rtscope export`.
#[derive(Debug, Clone, Args)]
pub struct ExportArgs {
    /// Run id, or `last`
    pub run: String,
    /// Directory to write into (created if needed)
    #[arg(long, short = 'o', value_name = "DIR", default_value = ".")]
    pub output: PathBuf,
    /// Formats to write (repeatable or comma-separated)
    #[arg(
        long,
        short = 'f',
        value_enum,
        value_delimiter = ',',
        default_value = "csv,json,parquet"
    )]
    pub format: Vec<ExportFormat>,
    /// A limit checked besides the run's own --limit options (prometheus, lava, kcidb, junit)
    #[arg(long = "limit", value_name = "STAT=VALUE")]
    pub limits: Vec<String>,
    /// Also the histogram as the studies tabulate it: one row per microsecond of latency, one
    /// count column per CPU, then `all` (`run-ID-histogram-wide.csv`; docs/export.md)
    #[arg(long)]
    pub wide: bool,
    /// KCIDB origin: the submitting CI system's name
    #[arg(long, value_name = "NAME", default_value = "rtscope")]
    pub kcidb_origin: String,
    /// KCIDB build id (ORIGIN:ID) of the kernel tested [default: ORIGIN:BOARD]
    #[arg(long, value_name = "ID")]
    pub kcidb_build_id: Option<String>,
    /// The run database [default: $RTSCOPE_DB, else ./rtscope.db]
    #[arg(long, value_name = "PATH")]
    pub db: Option<PathBuf>,
}
