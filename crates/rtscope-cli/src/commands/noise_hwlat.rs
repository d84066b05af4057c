//! `rtscope noise --irqs-off`: the hardware-only mode through the kernel's hwlat tracer. The
//! plan checked the flags that have no meaning there ([`rtscope_session::plan::NoisePlan::hwlat`]);
//! the run, the table and the JSON live in `rtscope-session::noise::hwlat`; this file words
//! its errors and prints.

use crate::cli::noise::NoiseArgs;
use rtscope_common::error::{ExitStatus, UsageError};
use rtscope_session::noise::hwlat::{self, HwlatError};
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
    let status = hwlat::run(&tfs, cfg, n.config.duration, &n.limits, json_file, out);
    Ok(status.map_err(usage)?)
}
