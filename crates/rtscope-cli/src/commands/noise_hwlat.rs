//! `rtscope noise --irqs-off`: the hardware-only mode through the kernel's hwlat tracer (the
//! run, the table and the JSON live in `rtscope-session::noise::hwlat`; this file checks the
//! flags that have no meaning there, drives the run and prints).

use crate::cli::{CounterArg, NoiseArgs, NoisePolicyArg};
use rtscope_common::error::{ExitStatus, UsageError};
use rtscope_core::Nanos;
use rtscope_engine::noise::NoiseConfig;
use rtscope_session::noise::hwlat;
use rtscope_session::noise::{self as noise, NoiseLimit};
use rtscope_session::output::OutputFile;
use rtscope_trace::hwlat::HwlatConfig;
use std::io::Write;

/// hwlat's own default width and window: half of every second with interrupts off.
const DEFAULT_WIDTH: Nanos = Nanos::from_ms(500);
const DEFAULT_WINDOW: Nanos = Nanos::from_secs(1);

/// Options of the busy loop in user space that mean nothing when the kernel spins.
fn refuse_user_loop_options(a: &NoiseArgs) -> Result<(), UsageError> {
    let given = [
        (a.explain.is_some(), "--explain"),
        (a.counter != CounterArg::Auto, "--counter"),
        (a.policy != NoisePolicyArg::Other, "--policy"),
        (a.priority.is_some(), "--priority"),
        (a.housekeeping.is_some(), "--housekeeping"),
    ];
    match given.iter().find(|(g, _)| *g) {
        Some((_, flag)) => Err(UsageError::new(format!(
            "{flag} cannot be used with --irqs-off: with --irqs-off the kernel's hwlat thread \
             spins with interrupts off (its own policy and counter, no trace to explain: a gap \
             there is the hardware, firmware, the hypervisor or an NMI)\n\nhint: leave out \
             {flag}, or --irqs-off for the busy loop in user space"
        ))),
        None => Ok(()),
    }
}

/// Runs the hardware-only mode.
pub fn run(a: &NoiseArgs, c: &NoiseConfig, out: &mut dyn Write) -> anyhow::Result<ExitStatus> {
    refuse_user_loop_options(a)?;
    let limits: Vec<NoiseLimit> = a
        .limits
        .iter()
        .map(|l| noise::parse_limit(l))
        .collect::<Result<_, _>>()?;
    if limits.iter().any(|l| matches!(l, NoiseLimit::Available(_))) {
        return Err(UsageError::new(
            "--limit available=... cannot be checked with --irqs-off: the hwlat tracer reports \
             each window's longest gap, not the time lost in all of them\n\nhint: use --limit \
             max_single=DUR, or leave out --irqs-off",
        )
        .into());
    }
    let json_file = OutputFile::prepare_given(a.json.as_deref(), "--json")?;
    let tfs = hwlat::check().map_err(UsageError::new)?;
    let us = |n: Nanos| n.0.div_ceil(1000).max(1);
    let cfg = HwlatConfig {
        cpus: c.cpus.clone(),
        width_us: us(a.runtime.as_ref().map_or(DEFAULT_WIDTH, |_| c.runtime)),
        window_us: us(a.period.as_ref().map_or(DEFAULT_WINDOW, |_| c.period)),
        threshold_us: us(c.threshold.requested()),
    };
    if !a.quiet {
        rtscope_common::error::warn(&format!(
            "noise --irqs-off: the kernel's hwlat tracer on CPUs {:?} for {}, {} us of every {} \
             us with interrupts off, threshold {} us",
            cfg.cpus,
            rtscope_core::text::short(c.duration),
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
    Ok(hwlat::run(&tfs, &cfg, c.duration, &limits, json_file, out)?)
}
