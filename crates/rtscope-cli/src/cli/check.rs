//! The options of `rtscope check`.

use super::fleet::FleetArgs;
use clap::Args;
use std::path::PathBuf;

/// Options of `rtscope check`.
#[derive(Debug, Clone, Args)]
pub struct CheckArgs {
    /// CPUs the measurement will use, as for `measure --cpus`: `2-3`, `1,3`, `!0` [default:
    /// every online CPU]
    #[arg(long, short = 'c', value_name = "LIST")]
    pub cpus: Option<String>,
    /// Real-time priority the measurement will use: RT tasks at it or above on a measured CPU
    /// are bad
    #[arg(long, short = 'p', default_value_t = 90, value_parser = clap::value_parser!(u32).range(1..=99))]
    pub priority: u32,
    /// Print JSON instead of the table
    #[arg(long)]
    pub json: bool,
    /// Read /proc and /sys under this directory instead of / (fixture trees)
    #[arg(long, value_name = "DIR", hide = true, default_value = "/")]
    pub root: PathBuf,
    /// Runs on boards over ssh
    #[command(flatten)]
    pub fleet: FleetArgs,
}
