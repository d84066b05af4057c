//! The versioned JSON result of `rtscope measure` (schema `rtscope.measure/1`,
//! documented in docs/json-schema.md). All latencies are integer nanoseconds.

use rtscope_common::limits::Check;
use rtscope_core::{layout, Histogram, Stats};
use rtscope_session::sysinfo::SysInfo;
use rtscope_session::{plan::ConfigDoc, plan::RunPlan};
use rtscope_store::SampleFigures;
use serde::Serialize;
use std::collections::BTreeMap;

/// The schema identifier; bump the number on any incompatible change.
pub const SCHEMA: &str = "rtscope.measure/1";

/// The whole document.
#[derive(Debug, Serialize)]
pub struct Doc {
    /// Always [`SCHEMA`].
    pub schema: &'static str,
    /// Tool name and version.
    pub tool: Tool,
    /// The command line as given.
    pub command_line: Vec<String>,
    /// RFC 3339 UTC start (release of the threads).
    pub started: String,
    /// RFC 3339 UTC end.
    pub ended: String,
    /// Wall time of the run, ns.
    pub duration_ns: u64,
    /// False when a signal ended the run before its length.
    pub complete: bool,
    /// `SIGINT`/`SIGTERM` when interrupted.
    pub interrupted_by: Option<String>,
    /// The exit code rtscope returned.
    pub exit_code: i32,
    /// uname and PREEMPT_RT flag.
    pub system: SysInfo,
    /// The settings the run used.
    pub config: rtscope_session::plan::ConfigDoc,
    /// Per thread.
    pub threads: Vec<Series>,
    /// All threads together.
    pub total: Series,
    /// Limit checks (empty without --limit).
    pub limits: Vec<LimitJson>,
    /// Where rtscope's own threads ran and when spikes were analysed (docs/measurement.md).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub housekeeping: Option<rtscope_session::placement::PlacementDoc>,
    /// Why the spikes were late (`--explain`; absent without it; docs/explain.md).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub explain: Option<rtscope_explain::book::ExplainSummary>,
}

/// Tool identity.
#[derive(Debug, Serialize)]
pub struct Tool {
    /// `rtscope`.
    pub name: &'static str,
    /// Version.
    pub version: &'static str,
}

/// Statistics of one thread or of all.
#[derive(Debug, Serialize)]
pub struct Series {
    /// Thread index (`null` for the total).
    pub thread: Option<usize>,
    /// Kernel thread id.
    pub tid: Option<i32>,
    /// Pinned CPU.
    pub cpu: Option<usize>,
    /// Policy.
    pub policy: Option<String>,
    /// Priority.
    pub priority: Option<i32>,
    /// Interval, ns.
    pub interval_ns: Option<u64>,
    /// Number of samples (one per wake-up: missed deadlines are not samples) and the
    /// extremes; the mean to 0.1 ns.
    #[serde(flatten)]
    pub figures: SampleFigures,
    /// Deadlines that passed without a wake-up.
    pub missed_periods: u64,
    /// Deadlines due: `samples + missed_periods`.
    pub deadlines: u64,
    /// Deadline-miss ratio `missed_periods / deadlines` (0 … 1; `null` without deadlines).
    pub miss_ratio: Option<f64>,
    /// p50 … p99.9999, ns (nearest rank; within 0.05 %).
    pub percentiles_ns: BTreeMap<String, Option<u64>>,
    /// Expected number of samples beyond each percentile (fewer than 10: not meaningful).
    pub percentile_tail_samples: BTreeMap<String, f64>,
    /// The lossless histogram.
    pub histogram: HistJson,
}

/// A histogram in rtscope's log-linear layout.
#[derive(Debug, Serialize)]
pub struct HistJson {
    /// `log-linear-1024`: exact below 2048 ns, then 1024 buckets per power of two.
    pub layout: &'static str,
    /// Non-empty buckets as `[lowest_ns, width_ns, count]`.
    pub buckets: Vec<[u64; 3]>,
}

/// One checked limit.
#[derive(Debug, Serialize)]
pub struct LimitJson {
    /// `max`, `p99.99`, `missed`, …
    pub stat: String,
    /// `cpu N`, `thread N` or `all`.
    pub scope: String,
    /// The limit (ns; a count for `missed`).
    pub limit: u64,
    /// The value (ns; a count for `missed`).
    pub value: u64,
    /// Whether the value is within the limit.
    pub passed: bool,
}

impl From<&Check> for LimitJson {
    fn from(c: &Check) -> Self {
        LimitJson {
            stat: c.stat.clone(),
            scope: c.scope.clone(),
            limit: c.limit,
            value: c.value,
            passed: c.passed,
        }
    }
}

/// Statistics and histogram as a [`Series`] without the per-thread identity.
pub fn series(stats: &Stats, hist: &Histogram, max_offset_ns: Option<u64>) -> Series {
    let p = hist.percentiles();
    let figures = SampleFigures::of(stats, max_offset_ns);
    Series {
        thread: None,
        tid: None,
        cpu: None,
        policy: None,
        priority: None,
        interval_ns: None,
        figures: SampleFigures {
            mean_ns: figures.mean_ns.map(|m| (m * 10.0).round() / 10.0),
            ..figures
        },
        missed_periods: stats.missed,
        deadlines: stats.deadlines(),
        miss_ratio: stats.miss_ratio(),
        percentiles_ns: p
            .iter()
            .map(|p| (p.label.to_string(), p.value.map(|v| v.0)))
            .collect(),
        percentile_tail_samples: p
            .iter()
            .map(|p| (p.label.to_string(), p.tail_samples))
            .collect(),
        histogram: HistJson {
            layout: "log-linear-1024",
            buckets: hist
                .nonzero()
                .map(|(i, c)| [layout::lowest_of(i), layout::width_of(i), c])
                .collect(),
        },
    }
}

/// The document of a finished run: its plan, result, ending and limit checks.
#[allow(clippy::too_many_arguments)]
pub fn document(
    plan: &RunPlan,
    r: &rtscope_engine::RunResult,
    signal: Option<i32>,
    exit_code: i32,
    command_line: Vec<String>,
    checks: &[Check],
    total_stats: &Stats,
    total_hist: &rtscope_core::Histogram,
) -> Doc {
    let offset = |s: &Stats| s.max_time.0.saturating_sub(r.clock_start.0);
    let threads = r
        .threads
        .iter()
        .map(|t| {
            let mut s = series(&t.stats, &t.histogram, Some(offset(&t.stats)));
            s.thread = Some(t.index);
            s.tid = Some(t.tid);
            s.cpu = t.cpu;
            s.policy = Some(t.policy.name().to_string());
            s.priority = Some(t.priority);
            s.interval_ns = Some(t.interval.0);
            s
        })
        .collect();
    Doc {
        schema: SCHEMA,
        tool: Tool {
            name: "rtscope",
            version: env!("CARGO_PKG_VERSION"),
        },
        command_line,
        started: rtscope_core::civil::rfc3339(r.started),
        ended: rtscope_core::civil::rfc3339(r.ended),
        duration_ns: r
            .ended
            .duration_since(r.started)
            .unwrap_or_default()
            .as_nanos() as u64,
        complete: signal.is_none(),
        interrupted_by: signal.map(rtscope_common::signals::signal_name),
        exit_code,
        system: SysInfo::read(),
        config: ConfigDoc::of(plan),
        threads,
        total: series(total_stats, total_hist, Some(offset(total_stats))),
        limits: checks.iter().map(LimitJson::from).collect(),
        housekeeping: None,
        explain: None,
    }
}
