//! The options of `rtscope run`.

use crate::cli::fleet::FleetArgs;
use crate::cli::measure::EXPLAIN_RECORDER;
use crate::cli::values::one_of;
use clap::Args;
use rtscope_trace::explain::RecorderChoice;
use std::path::PathBuf;

/// Options of `rtscope run`.
#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// The campaign file (TOML); see examples/ and docs/campaigns.md
    #[arg(value_name = "CAMPAIGN.toml", conflicts_with = "preset")]
    pub file: Option<PathBuf>,
    /// A built-in campaign instead of a file: quick, scenarios, loadcases, osadl or respond-ipc
    #[arg(long, value_name = "NAME",
          value_parser = clap::builder::PossibleValuesParser::new(rtscope_campaign::presets::NAMES))]
    pub preset: Option<String>,
    /// Print the run matrix, the total time and what each run starts, then exit
    #[arg(long)]
    pub dry_run: bool,
    /// Continue the last interrupted run of this campaign with the runs not yet done
    #[arg(long)]
    pub resume: bool,
    /// Measure each run for this long instead of the campaign's length (e.g. 5s, 10m)
    #[arg(long, value_name = "DURATION", conflicts_with = "loops")]
    pub duration: Option<String>,
    /// Measure each run for this many loops instead of the campaign's length
    #[arg(long, value_name = "N")]
    pub loops: Option<u64>,
    /// Repeat each scenario × load case this many times instead of the campaign's repeats
    #[arg(long, value_name = "N")]
    pub repeats: Option<u32>,
    /// Name the campaign (default: the file's `name`, or the preset's)
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// Tag every run KEY=VALUE (repeatable), on top of the campaign's tags
    #[arg(long = "tag", value_name = "KEY=VALUE")]
    pub tags: Vec<String>,
    /// Sample the system monitors this often (0 turns them off)
    #[arg(long, value_name = "DURATION", default_value = "1s")]
    pub monitor_interval: String,
    /// Explain every wake-up at or above this latency, or `off` [default: the campaign's
    /// `explain`, else 100us where tracefs is usable] (docs/explain.md)
    #[arg(long, value_name = "DUR|off")]
    pub explain: Option<String>,
    /// Where the flight recorder takes the spikes' events from [default: tracefs;
    /// docs/explain.md, "The eBPF flight recorder"]
    #[arg(long, value_name = "RECORDER", value_parser = one_of(EXPLAIN_RECORDER))]
    pub explain_recorder: Option<RecorderChoice>,
    /// Measure each timer run until its tail estimate is precise enough, instead of the
    /// campaign's `until_tail`: `probability=1e-9,precision=10%,max_duration=2h`, or `off`
    /// (docs/campaigns.md)
    #[arg(long, value_name = "RULE|off")]
    pub until_tail: Option<String>,
    /// The run database [default: $RTSCOPE_DB, else ./rtscope.db]
    #[arg(long, value_name = "PATH")]
    pub db: Option<PathBuf>,
    /// No progress display
    #[arg(long, short)]
    pub quiet: bool,
    /// Runs on boards over ssh
    #[command(flatten)]
    pub fleet: FleetArgs,
    /// Also write the runs recorded as lava, kcidb or junit to FILE (`-`: stdout), repeatable
    #[arg(long, value_name = "FORMAT=FILE", help_heading = "Fleet")]
    pub ci_output: Vec<String>,
}
