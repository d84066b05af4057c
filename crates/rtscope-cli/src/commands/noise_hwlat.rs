//! `rtscope noise --irqs-off`: the hardware-only mode through the kernel's hwlat tracer. The
//! plan checked the flags that have no meaning there ([`rtscope_session::plan::NoisePlan::hwlat`]);
//! the run lives in `rtscope-session::noise::hwlat`, the table and the JSON document in
//! `rtscope-present::noise::hwnoise`; this file words its errors and prints.

use crate::cli::noise::NoiseArgs;
use rtscope_common::error::{ExitStatus, UsageError};
use rtscope_present::noise::hwnoise;
use rtscope_session::noise::hwlat::{self, HwlatError, HwlatMeasured};
use rtscope_session::output::OutputFile;
use rtscope_session::plan::RunPlan;
use rtscope_trace::hwlat::HwlatConfig;
use std::io::Write;

/// The usage error of `e`, its hint as the tracer gives it.
fn usage(e: HwlatError) -> UsageError {
    let hint = e.hint().map(str::to_owned);
    let u = UsageError::new(format!("--irqs-off: {e}"));
    match hint {
        Some(h) => u.hint(h),
        None => u,
    }
}

/// Runs the hardware-only mode of `plan`.
pub fn run(
    a: &NoiseArgs,
    plan: &RunPlan,
    cfg: &HwlatConfig,
    out: &mut dyn Write,
) -> anyhow::Result<ExitStatus> {
    let Some(n) = plan.workload.noise() else {
        return Err(UsageError::new("--irqs-off: not a noise plan").into());
    };
    let json_file = OutputFile::prepare_given(a.rec.json.as_deref(), "--json")?;
    let tfs = hwlat::check().map_err(usage)?;
    if !a.rec.quiet {
        rtscope_common::error::warn(&format!(
            "noise --irqs-off: the kernel's hwlat tracer on CPUs {:?} for {}, {} us of every {} \
             us with interrupts off, threshold {} us",
            cfg.cpus,
            rtscope_core::text::short(n.config.duration),
            cfg.width_us,
            cfg.window_us,
            cfg.threshold_us
        ));
    }
    if !a.rec.no_db {
        rtscope_common::error::warn(
            "note: an --irqs-off run is not recorded in the run database (hwlat gives each \
             window's longest gap, not the gaps a noise record holds); use --json to keep it",
        );
    }
    let m = hwlat::run(&tfs, cfg, n.config.duration, &n.limits).map_err(usage)?;
    Ok(report(cfg, &m, json_file, out).map_err(|e| usage(HwlatError::Output(e)))?)
}

/// Prints the table (to stderr when the JSON goes to stdout), the limit lines, and writes the
/// JSON; a JSON file that cannot be written is reported and makes the status 2.
fn report(
    cfg: &HwlatConfig,
    m: &HwlatMeasured,
    json_file: Option<OutputFile>,
    out: &mut dyn Write,
) -> std::io::Result<ExitStatus> {
    let mut status = m.status();
    let mut text = hwnoise::table(cfg, &m.rows, &m.outcome);
    if let Some(s) = m.outcome.signal {
        text.push_str(&format!(
            "interrupted by {}: the results cover the part that ran\n",
            rtscope_common::signals::signal_name(s)
        ));
    }
    text.push_str(&rtscope_present::table::render_checks(&m.checks));
    match &json_file {
        Some(f) if f.is_stdout() => rtscope_common::error::warn(text.trim_end()),
        _ => out.write_all(text.as_bytes()).and_then(|()| out.flush())?,
    }
    if let Some(file) = json_file {
        let doc = hwnoise::document(cfg, &m.rows, &m.outcome, &m.checks, status.code());
        let body = serde_json::to_string_pretty(&doc).map_err(std::io::Error::from)? + "\n";
        if let Err(e) = file.write(body.as_bytes(), out, "--json") {
            rtscope_common::error::warn(&e.to_string());
            status = ExitStatus::Usage;
        }
    }
    Ok(status)
}
