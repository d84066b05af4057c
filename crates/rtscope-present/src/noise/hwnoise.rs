//! `rtscope noise --irqs-off`'s text and document: the table labelled as the kernel's hwlat
//! tracer's measurement and the JSON document (schema `rtscope.hwnoise/1`) of what
//! `rtscope_session::noise::hwlat::run` measured.

use rtscope_session::noise::hwlat::{HwlatOutcome, HwlatRow, Sample};
use rtscope_session::noise::NoiseCheck;
use rtscope_trace::hwlat::HwlatConfig;
use serde::Serialize;

/// The table, labelled as the kernel's measurement.
pub fn table(cfg: &HwlatConfig, rows: &[HwlatRow], o: &HwlatOutcome) -> String {
    let opt = |v: Option<u64>| v.map_or("-".to_string(), |v| v.to_string());
    let mut s = format!(
        "measured by the kernel's hwlat tracer (per-CPU mode, interrupts off): {} us of every \
         {} us, threshold {} us\n{:>4} {:>8} {:>8} {:>9} {:>10} {:>10} {:>6} {:>6}\n",
        cfg.width_us,
        cfg.window_us,
        cfg.threshold_us,
        "CPU",
        "WINDOWS",
        "SAMPLES",
        "GAPS>THR",
        "MAX INNER",
        "MAX OUTER",
        "NMI",
        "SMI"
    );
    for r in rows {
        let us = |v: Option<u64>| v.map_or("-".to_string(), |v| format!("{v}us"));
        s.push_str(&format!(
            "{:>4} {:>8} {:>8} {:>9} {:>10} {:>10} {:>6} {:>6}\n",
            r.cpu,
            r.windows,
            r.samples,
            opt(r.gaps_over_threshold),
            us(r.max_inner_us),
            us(r.max_outer_us),
            r.nmis,
            opt(r.smis)
        ));
    }
    s.push_str(
        "SAMPLES are windows with a gap over the threshold (hwlat reports each window's longest); \
         INNER is a gap between two clock reads, OUTER between two iterations. With interrupts \
         off such a gap is the hardware, the firmware (SMI), the hypervisor or an NMI.\n",
    );
    if let Some(why) = &o.smi_unavailable {
        s.push_str(&format!("SMI: {why}\n"));
    }
    s
}

/// The document's schema.
pub const SCHEMA: &str = "rtscope.hwnoise/1";

/// The JSON document (`rtscope.hwnoise/1`).
#[derive(Serialize)]
pub struct Document<'a> {
    schema: &'static str,
    tool: &'static str,
    measured_by: &'static str,
    config: &'a HwlatConfig,
    ran_ns: u64,
    cpus: &'a [HwlatRow],
    samples: &'a [Sample],
    smi_unavailable: &'a Option<String>,
    limits: &'a [NoiseCheck],
    interrupted: bool,
    exit_code: i32,
}

/// The document of a run.
pub fn document<'a>(
    cfg: &'a HwlatConfig,
    rows: &'a [HwlatRow],
    o: &'a HwlatOutcome,
    limits: &'a [NoiseCheck],
    exit_code: i32,
) -> Document<'a> {
    Document {
        schema: SCHEMA,
        tool: concat!("rtscope ", env!("CARGO_PKG_VERSION")),
        measured_by: "kernel hwlat tracer, per-CPU mode",
        config: cfg,
        ran_ns: o.ran.0,
        cpus: rows,
        samples: &o.samples,
        smi_unavailable: &o.smi_unavailable,
        limits,
        interrupted: o.signal.is_some(),
        exit_code,
    }
}
