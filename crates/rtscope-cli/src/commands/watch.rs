//! `rtscope watch`: the flags over the configuration file, then the watch loop of
//! `rtscope-watch` (docs/watch.md).

use crate::cli::watch::WatchArgs;
use rtscope_common::error::{ExitStatus, UsageError};
use rtscope_watch::config::Config;
use rtscope_watch::config::Settings;
use std::io::Write;
use std::path::Path;

/// The command line as settings (what it sets overrides the file).
fn flags(a: &WatchArgs) -> Settings {
    Settings {
        series: a.series.clone(),
        db: a.db.clone(),
        cpus: a.cpus.clone(),
        interval: a.interval.clone(),
        priority: a.priority,
        window: a.window.clone(),
        spike: a.spike.clone(),
        keep_windows: a.keep_windows.clone(),
        keep_hours: a.keep_hours.clone(),
        keep: a.keep.clone(),
        disk_budget: a.disk_budget.clone(),
        listen: a.listen.clone(),
        textfile: a.textfile.clone(),
        alert: a.alerts.clone(),
        alert_command: a.alert_command.clone(),
        housekeeping: a.housekeeping.clone(),
        explain: a.explain.then_some(true),
        explain_recorder: a.explain_recorder.map(|r| r.name().to_string()),
    }
}

/// The file (if any) overlaid by the flags, checked.
fn load(a: &WatchArgs) -> Result<Config, UsageError> {
    let file = match &a.config {
        Some(p) => Settings::read(Path::new(p))?,
        None => Settings::default(),
    };
    let host = rtscope_session::sysinfo::SysInfo::read().nodename;
    Config::build(&file.overlay(flags(a)), &host)
}

fn warn(line: &str) {
    rtscope_common::error::warn(line);
}

/// Runs `rtscope watch`.
pub fn run(a: &WatchArgs, argv: &[String], out: &mut dyn Write) -> anyhow::Result<ExitStatus> {
    // Checked and taken before the banner: a bad file, flag, path, port or a series another
    // watch holds is exit 2 at once, with nothing created.
    let ready = rtscope_watch::start::prepare(load(a)?)?;
    let first = &ready.config;
    writeln!(
        out,
        "rtscope watch: series '{}' in {}, SCHED_FIFO {} every {}, windows of {}, until stopped",
        first.series,
        first.db.display(),
        first.priority,
        first.interval,
        first.window
    )?;
    out.flush()?;
    let db = first.db.clone();
    let stopped = rtscope_watch::daemon::run(ready, &|| load(a), argv, warn)?;
    writeln!(
        out,
        "rtscope watch: stopped by signal {}: {} window row(s) written, {} reload(s)",
        stopped.signal.unwrap_or(0),
        stopped.windows,
        stopped.reloads
    )?;
    if stopped.lost > 0 {
        let why = stopped.error.map(|e| format!(": {e}")).unwrap_or_default();
        return Err(UsageError::new(format!(
            "{} window row(s) could not be written to {} and are lost{why}",
            stopped.lost,
            rtscope_core::text::escape(&db.display().to_string())
        ))
        .hint("free space on the database's file system (or give another --db); the rows written before stay in the database")
        .into());
    }
    Ok(ExitStatus::Success)
}
