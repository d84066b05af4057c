//! Synthetic noise runs (kind `noise`) written through the store's API, as `rtscope noise`
//! records them: one thread per CPU whose histogram holds the busy loop's gaps, whose events
//! are the gaps over the threshold (latency = length, offset = start) and whose mean gap times
//! its gaps is the time spun; `config_json.threshold_ns` is the threshold. Fixed data, so
//! tests know every figure.

use rtscope_core::{Histogram, Nanos};
use rtscope_store::{
    Checkpoint, EventRow, NewRun, RunId, RunKind, RunStatus, SpikeSummaryRow, Store, StoreError,
    ThreadInfo, ThreadStats,
};

/// What to write.
#[derive(Debug, Clone)]
pub struct SyntheticNoise {
    /// Label of the run.
    pub label: String,
    /// Measured CPUs (one thread each).
    pub cpus: Vec<u32>,
    /// The threshold, ns.
    pub threshold_ns: u64,
    /// Short gaps per CPU (the loop's own cost, 40–47 ns).
    pub iterations: u64,
    /// Per CPU, the gaps over the threshold: (offset from the start, length), ns.
    pub gaps: Vec<Vec<(u64, u64)>>,
    /// `--explain`'s summary as its JSON (`rtscope_explain::book::ExplainSummary`), if any.
    pub explain_json: Option<String>,
    /// Tags.
    pub tags: Vec<(String, String)>,
}

/// Writes the run (status `complete`) and returns its id.
pub fn write_noise_run(store: &mut Store, spec: &SyntheticNoise) -> Result<RunId, StoreError> {
    let run = store.begin_run(&NewRun {
        kind: RunKind::Noise,
        label: Some(spec.label.clone()),
        tags: spec.tags.clone(),
        started: "2026-11-22T03:00:00Z".into(),
        started_unix_ns: 1_795_316_400_000_000_000,
        pid: std::process::id(),
        tool_version: env!("CARGO_PKG_VERSION").into(),
        command_line_json: serde_json::to_string(&["rtscope", "noise", "--label", &spec.label])
            .unwrap_or_default(),
        config_json: format!("{{\"threshold_ns\":{}}}", spec.threshold_ns),
        environment: Vec::new(),
        threads: spec
            .cpus
            .iter()
            .enumerate()
            .map(|(i, &cpu)| ThreadInfo {
                thread: i as u32,
                cpu: Some(cpu),
                policy: "other".into(),
                priority: 0,
                interval_ns: 1_000_000_000,
            })
            .collect(),
    })?;
    let hists: Vec<Histogram> = (0..spec.cpus.len()).map(|i| histogram(spec, i)).collect();
    let mut cp = Checkpoint {
        progress_ns: 1_000_000_000,
        at_unix_ns: 1_795_316_401_000_000_000,
        ..Checkpoint::default()
    };
    for (i, h) in hists.iter().enumerate() {
        let gaps = spec.gaps.get(i).map_or(&[][..], Vec::as_slice);
        let runtime: u64 = h.buckets().map(|(lo, _, n)| lo.0 * n).sum();
        let longest = gaps.iter().max_by_key(|g| g.1);
        cp.threads.push(ThreadStats {
            thread: i as u32,
            tid: 2000 + i as i32,
            figures: rtscope_store::SampleFigures {
                samples: h.count(),
                min_ns: h.min().map(|v| v.0),
                mean_ns: Some(runtime as f64 / h.count().max(1) as f64),
                max_ns: h.max().map(|v| v.0),
                max_cycle: None,
                max_offset_ns: longest.map(|g| g.0),
            },
            missed: 0,
            raw_dropped: 0,
            histogram: h,
        });
        for (k, &(offset, len)) in gaps.iter().enumerate() {
            cp.events.push(EventRow {
                thread: i as u32,
                cycle: k as u64,
                latency_ns: len,
                offset_ns: offset,
                unix_ns: 1_795_316_400_000_000_000 + offset as i64,
            });
        }
    }
    store.finish_run(run, &cp, RunStatus::Complete, "2026-11-22T03:00:01Z", 0)?;
    if let Some(summary) = &spec.explain_json {
        let row = SpikeSummaryRow {
            tier: "flight_recorder".into(),
            tier_reason: None,
            threshold_ns: spec.threshold_ns,
            clock_start_ns: 0,
            summary: summary.clone(),
        };
        store.write_spikes(run, &row, &[])?;
    }
    Ok(run)
}

/// CPU `i`'s gaps: `iterations` short ones (40–47 ns, exact buckets) and its gaps over the
/// threshold (all below 2,048 ns or at bucket bounds in the tests, so sums are exact).
fn histogram(spec: &SyntheticNoise, i: usize) -> Histogram {
    let mut h = Histogram::new();
    for k in 0..spec.iterations {
        h.record(Nanos(40 + k % 8));
    }
    for &(_, len) in spec.gaps.get(i).map_or(&[][..], Vec::as_slice) {
        h.record(Nanos(len));
    }
    h
}
