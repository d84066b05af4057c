//! `rtscope run`: a campaign (rtscope-campaign).

use crate::cli::run::RunArgs;
use crate::commands::measure::monitor_interval;
use rtscope_campaign::CampaignOptions;
use rtscope_common::error::ExitStatus;
use std::io::Write;

/// Runs `rtscope run`; with `--target`, the boards that recorded no run are added to
/// `missing`.
pub fn run(
    a: &RunArgs,
    argv: &[String],
    out: &mut dyn Write,
    missing: &mut Vec<rtscope_formats::missing::MissingBoard>,
) -> anyhow::Result<ExitStatus> {
    if !a.fleet.targets.is_empty() && !a.dry_run {
        let file = a.file.as_deref();
        let db = a.db.as_deref();
        return crate::commands::fleet::remote(&a.fleet, argv, file, db, out, missing);
    }
    let resumed;
    let a = if a.resume && !a.dry_run {
        resumed = as_started(a)?;
        &resumed
    } else {
        a
    };
    let opts = options(a)?;
    let status = rtscope_campaign::run(&opts, argv, out).map_err(crate::lift)?;
    if !a.dry_run && !a.quiet {
        answer(a.db.as_deref(), out)?;
    }
    Ok(status)
}

/// The answer first, on the terminal too: per load case (or group) of the campaign just run,
/// its worst wake-up, p99.99, missed deadlines and the worst spike's cause (a culprit only with
/// half of the spike, else its group or the spread, every share given:
/// `rtscope_explain::cause`), then each case against the first — the report's headline
/// (`rtscope_report::headline`). Nothing when the database cannot be read back (the
/// campaign's own lines said where it is).
fn answer(db: Option<&std::path::Path>, out: &mut dyn Write) -> std::io::Result<()> {
    let Ok(store) = super::open_db(db) else {
        return Ok(());
    };
    let Ok(ids) = rtscope_analysis::select::last_with_campaign(&store) else {
        return Ok(());
    };
    let Ok(bundles) = store.bundles(&ids, false) else {
        return Ok(());
    };
    let runs: Vec<rtscope_report::model::RunData> = bundles
        .into_iter()
        .map(rtscope_report::model::RunData::from)
        .collect();
    for line in rtscope_report::headline::lines(&runs) {
        writeln!(out, "answer: {line}")?;
    }
    Ok(())
}

fn options(a: &RunArgs) -> anyhow::Result<CampaignOptions> {
    Ok(CampaignOptions {
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
        explain_recorder: a.explain_recorder,
        until_tail: a.until_tail.clone(),
    })
}

/// `--resume` keeps the options the campaign was started with (issue 26: `run FILE
/// --duration 10s`, Ctrl-C, `run FILE --resume` measured the remaining runs 60 s each): an
/// option not given now is taken from the start's command line; one given differently is a
/// contradiction, refused.
fn as_started(a: &RunArgs) -> anyhow::Result<RunArgs> {
    let Some(argv) = rtscope_campaign::started_command_line(&options(a)?).map_err(crate::lift)?
    else {
        return Ok(a.clone());
    };
    let Ok(crate::cli::Cli {
        command: crate::cli::Command::Run(first),
        ..
    }) = <crate::cli::Cli as clap::Parser>::try_parse_from(&argv)
    else {
        return Ok(a.clone());
    };
    let mut merged = a.clone();
    keep("--duration", &mut merged.duration, &first.duration)?;
    keep("--loops", &mut merged.loops, &first.loops)?;
    keep("--repeats", &mut merged.repeats, &first.repeats)?;
    keep("--explain", &mut merged.explain, &first.explain)?;
    let (now, started) = (&mut merged.explain_recorder, &first.explain_recorder);
    keep("--explain-recorder", now, started)?;
    keep("--until-tail", &mut merged.until_tail, &first.until_tail)?;
    let mut tags = (!a.tags.is_empty()).then(|| a.tags.clone());
    keep(
        "--tag",
        &mut tags,
        &(!first.tags.is_empty()).then(|| first.tags.clone()),
    )?;
    merged.tags = tags.unwrap_or_default();
    let default_interval = "1s";
    let mut interval = (a.monitor_interval != default_interval).then(|| a.monitor_interval.clone());
    let started =
        (first.monitor_interval != default_interval).then(|| first.monitor_interval.clone());
    keep("--monitor-interval", &mut interval, &started)?;
    merged.monitor_interval = interval.unwrap_or_else(|| default_interval.into());
    Ok(merged)
}

/// `now` becomes `started` when not given; given differently, it is refused.
fn keep<T: Clone + PartialEq + std::fmt::Debug>(
    flag: &str,
    now: &mut Option<T>,
    started: &Option<T>,
) -> Result<(), rtscope_common::error::UsageError> {
    match (now.as_ref(), started) {
        (None, _) => {
            now.clone_from(started);
            Ok(())
        }
        (Some(n), Some(s)) if n == s => Ok(()),
        (Some(n), s) => Err(rtscope_common::error::UsageError::new(format!(
            "{flag} {n:?} contradicts the campaign being resumed, which was started with {}",
            s.as_ref().map_or_else(|| format!("no {flag}"), |s| format!("{flag} {s:?}"))
        ))
        .hint(format!(
            "drop {flag} to resume the campaign as it was started, or drop --resume to start it afresh"
        ))),
    }
}
