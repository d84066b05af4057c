//! `rtscope noise --json`: the document (schema `rtscope.noise/1`), serialized straight from the
//! run's data: a `serde_json::Value` of every gap cost about ten times the text it became, and
//! the gaps are the bulk of it (at most `--keep-gaps` per CPU, `rtscope_session::noise::kept`).

use rtscope_engine::noise::Gap;
use rtscope_explain::book::ExplainSummary;
use rtscope_explain::classes::ClassTotals;
use rtscope_session::noise::run::Outcome;
use rtscope_session::noise::{CpuNoise, NoiseCheck};
use serde::ser::{SerializeSeq, Serializer};
use serde::Serialize;

/// The document's schema.
pub const SCHEMA: &str = "rtscope.noise/1";

/// What the document says besides the run's outcome.
pub struct DocMeta<'a> {
    /// The command line.
    pub command_line: &'a [String],
    /// The configuration (`rtscope_session::noise::run::config_json`).
    pub config: &'a serde_json::Value,
    /// CLOCK_MONOTONIC at the start: gap offsets are from it.
    pub clock_start: u64,
    /// The limit verdicts.
    pub limits: &'a [NoiseCheck],
    /// The exit code the run ends with.
    pub exit_code: i32,
}

#[derive(Serialize)]
struct Tool<'a> {
    name: &'static str,
    version: &'static str,
    command_line: &'a [String],
}

#[derive(Serialize)]
struct Doc<'a> {
    schema: &'static str,
    tool: Tool<'a>,
    config: &'a serde_json::Value,
    /// CLOCK_MONOTONIC at the start, in ns: every gap's `offset_ns` is from it, so the gaps
    /// line up with traces and logs of the same clock.
    clock_start_ns: u64,
    cpus: Vec<CpuDoc<'a>>,
    limits: &'a [NoiseCheck],
    explain: Option<&'a ExplainSummary>,
    explain_classes: Option<ClassTotals>,
    /// The analysis after the loops, when a stop signal or its bound cut it (absent when it
    /// attributed every gap): `{by: "SIGTERM" | "bound", gaps, not_attributed}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    explain_cut: Option<serde_json::Value>,
    smi_unavailable: Option<&'a str>,
    interrupted: Option<String>,
    exit_code: i32,
}

#[derive(Serialize)]
struct CpuDoc<'a> {
    summary: &'a CpuNoise,
    /// `[lowest value of the bucket, count]` pairs.
    histogram: Vec<[u64; 2]>,
    gaps: Gaps<'a>,
}

/// The kept gaps as `{offset_ns, duration_ns}` objects (with `smis` where the SMI counter was
/// read after each gap), written one by one.
struct Gaps<'a> {
    gaps: &'a [Gap],
    clock_start: u64,
}

#[derive(Serialize)]
struct GapDoc {
    offset_ns: u64,
    duration_ns: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    smis: Option<u32>,
}

impl Serialize for Gaps<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.gaps.len()))?;
        for g in self.gaps {
            seq.serialize_element(&GapDoc {
                offset_ns: g.start.0.saturating_sub(self.clock_start),
                duration_ns: g.duration.0,
                smis: g.smis,
            })?;
        }
        seq.end()
    }
}

/// The document, pretty-printed, with a final newline.
pub fn document(o: &Outcome, rows: &[CpuNoise], meta: &DocMeta<'_>) -> serde_json::Result<Vec<u8>> {
    let cpus = rows
        .iter()
        .zip(&o.threads)
        .zip(&o.gaps)
        .map(|((summary, t), gaps)| CpuDoc {
            summary,
            histogram: t
                .totals
                .histogram
                .nonzero()
                .map(|(i, n)| [rtscope_core::layout::lowest_of(i), n])
                .collect(),
            gaps: Gaps {
                gaps,
                clock_start: meta.clock_start,
            },
        })
        .collect();
    let doc = Doc {
        schema: SCHEMA,
        tool: Tool {
            name: "rtscope",
            version: env!("CARGO_PKG_VERSION"),
            command_line: meta.command_line,
        },
        config: meta.config,
        clock_start_ns: meta.clock_start,
        cpus,
        limits: meta.limits,
        explain: o.explained.as_ref(),
        explain_classes: o.explained.as_ref().map(|x| x.class_totals()),
        explain_cut: o.analysis_cut.map(|c| {
            let by = c
                .signal()
                .map_or_else(|| "bound".into(), rtscope_common::signals::signal_name);
            serde_json::json!({"by": by, "gaps": c.total, "not_attributed": c.left})
        }),
        smi_unavailable: o.platform.smi_unavailable.as_deref(),
        interrupted: o.signal.map(rtscope_common::signals::signal_name),
        exit_code: meta.exit_code,
    };
    let mut body = serde_json::to_vec_pretty(&doc)?;
    body.push(b'\n');
    Ok(body)
}
