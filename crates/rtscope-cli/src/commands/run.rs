//! `rtscope run`: a campaign (rtscope-campaign).

use crate::cli::RunArgs;
use crate::commands::measure::monitor_interval;
use crate::exit::ExitStatus;
use rtscope_campaign::CampaignOptions;
use std::io::Write;

/// Runs `rtscope run`.
pub fn run(a: &RunArgs, argv: &[String], out: &mut dyn Write) -> anyhow::Result<ExitStatus> {
    if !a.fleet.targets.is_empty() && !a.dry_run {
        let file = a.file.as_deref();
        return crate::commands::fleet::remote(&a.fleet, argv, file, a.db.as_deref(), out);
    }
    let opts = CampaignOptions {
        file: a.file.clone(),
        preset: a.preset.clone(),
        dry_run: a.dry_run,
        resume: a.resume,
        duration: a.duration.clone(),
        loops: a.loops,
        repeats: a.repeats,
        name: a.name.clone(),
        tags: a.tags.clone(),
        monitor_interval: monitor_interval(&a.monitor_interval, "--monitor-interval")?,
        db: a.db.clone(),
        quiet: a.quiet,
        explain: a.explain.clone(),
    };
    rtscope_campaign::run(&opts, argv, out).map_err(crate::lift)
}
