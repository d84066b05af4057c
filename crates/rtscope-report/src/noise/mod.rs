//! Noise runs (`rtscope noise`, oslat and rtla imports: kind `noise`) in a report: their per-CPU
//! figures from what the store holds, `rtla osnoise top`'s table, and the noise section's plots
//! ([`figures`]) and HTML ([`html`]). A noise run's "samples" are the busy loop's gaps (an rtla
//! osnoise hist import's: its noises over the threshold) and its events the gaps over the
//! threshold: it is never drawn as wake-up latency.
//!
//! What is derived, and how (one definition, also `rtscope compare`'s):
//! * runtime: the gaps add up to the time spun, so the thread's mean gap × its gaps;
//! * noise: the sum of the gaps over the run's `threshold_ns`, from the lossless histogram
//!   (each bucket at its midpoint: exact below 2,048 ns, within 0.05 % above); gaps over the
//!   threshold: the histogram's count above it. Unknown without a threshold (an oslat import);
//! * % available: `100 × (runtime − noise) / runtime`; resolution: the shortest gap.
//!
//! An rtla import records what rtla printed per CPU instead (`config.source.per_cpu`, one
//! object per thread: `runtime_ns`, `noise_ns`, `noise_events` and the interference `counts`
//! `hw`, `nmi`, `irq`, `softirq`, `thread`, each `null` where rtla does not say): those are its
//! figures, and what rtla does not print (iterations, resolution, threshold) is unknown.

pub mod answer;
pub mod figures;
pub mod html;

use crate::model::RunData;
use rtscope_core::layout;
use rtscope_store::{RunDetail, RunId, RunKind, ThreadRow};
use serde_json::Value;

/// Whether a run is a noise run (its samples are gaps of a busy loop, not wake-ups).
pub fn is_noise(r: &RunData) -> bool {
    r.detail.summary.kind == RunKind::Noise
}

/// Puts the latency runs first and the noise runs after them, each in the order given (what
/// [`crate::build`] expects; the sort is stable).
pub fn order(runs: &mut [RunData]) {
    runs.sort_by_key(is_noise);
}

/// The threshold a noise run's loops ran with (`config_json.threshold_ns`); `None` when its
/// record does not say (an oslat or rtla import).
pub fn threshold_ns(config_json: &str) -> Option<u64> {
    let v: Value = serde_json::from_str(config_json).ok()?;
    v["threshold_ns"].as_u64().filter(|&t| t > 0)
}

/// The interference counts an rtla import records, as the table names them.
pub const COUNTS: [&str; 5] = ["HW", "NMI", "IRQ", "softirq", "thread"];
/// Their keys in `config.source.per_cpu[].counts`.
const COUNT_KEYS: [&str; 5] = ["hw", "nmi", "irq", "softirq", "thread"];

/// What the source of an import reported for one CPU (`config.source.per_cpu`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reported {
    /// Time the source's loop ran, ns.
    pub runtime_ns: Option<u64>,
    /// Noise, ns.
    pub noise_ns: Option<u64>,
    /// Noises over the threshold.
    pub noise_events: Option<u64>,
    /// Interference counts, in the order of [`COUNTS`].
    pub counts: [Option<u64>; 5],
}

/// The per-CPU figures an import's source reported, by thread (`config.source.per_cpu`);
/// `None` when the record has none (the figures are then derived from the histogram).
pub fn reported(config: &Value) -> Option<Vec<Reported>> {
    let per = config["source"]["per_cpu"].as_array()?;
    let u = |v: &Value, k: &str| v[k].as_u64();
    Some(
        per.iter()
            .map(|c| Reported {
                runtime_ns: u(c, "runtime_ns"),
                noise_ns: u(c, "noise_ns"),
                noise_events: u(c, "noise_events"),
                counts: COUNT_KEYS.map(|k| c["counts"][k].as_u64()),
            })
            .collect(),
    )
}

/// Whether a noise run's histogram holds only its noises over the threshold (an rtla osnoise
/// hist import), not every gap of the loop: its percentiles, min and mean are of those.
pub fn noises_only(config_json: &str) -> bool {
    serde_json::from_str::<Value>(config_json)
        .is_ok_and(|v| v["source"]["histogram"] == "noise_over_threshold")
}

/// One CPU of a noise run: `rtla osnoise top`'s columns, from its stored thread.
#[derive(Debug, Clone, PartialEq)]
pub struct CpuNoise {
    /// The run.
    pub run: RunId,
    /// The run's thread (one per CPU).
    pub thread: u32,
    /// The CPU, when pinned.
    pub cpu: Option<u32>,
    /// Time spun, ns (the sum of the gaps); `None` without a mean.
    pub runtime_ns: Option<u64>,
    /// Sum of the gaps over the threshold, ns; `None` without a threshold.
    pub noise_ns: Option<u64>,
    /// Gaps over the threshold; `None` without a threshold.
    pub gaps_over: Option<u64>,
    /// The longest gap, ns.
    pub max_single_ns: Option<u64>,
    /// Iterations (gaps); `None` where the source does not count them (rtla).
    pub iterations: Option<u64>,
    /// The shortest gap (the loop's resolution), ns.
    pub resolution_ns: Option<u64>,
    /// The threshold, ns.
    pub threshold_ns: Option<u64>,
    /// Interference counts ([`COUNTS`]: rtla osnoise top's); `None` each where unknown.
    pub counts: [Option<u64>; 5],
    /// Steal time over the run, ns (`rtscope noise`'s stored `platform`); `None` where unknown.
    pub steal_ns: Option<u64>,
    /// SMIs counted over the run; `None` where unknown or not countable.
    pub smis: Option<u64>,
}

impl CpuNoise {
    /// The figures of thread `t` of run `run` with the run's threshold.
    pub fn of(run: RunId, t: &ThreadRow, threshold: Option<u64>) -> CpuNoise {
        let h = &t.histogram;
        let over = threshold.map(|thr| {
            let (mut n, mut sum) = (0u64, 0u128);
            for (i, c) in h.nonzero() {
                let low = layout::lowest_of(i);
                if low > thr {
                    let mid = low + (layout::width_of(i) - 1) / 2;
                    let mid = mid.clamp(
                        t.figures.min_ns.unwrap_or(0),
                        t.figures.max_ns.unwrap_or(u64::MAX),
                    );
                    n += c;
                    sum += u128::from(mid) * u128::from(c);
                }
            }
            (n, u64::try_from(sum).unwrap_or(u64::MAX))
        });
        CpuNoise {
            run,
            thread: t.thread,
            cpu: t.cpu,
            runtime_ns: t
                .figures
                .mean_ns
                .map(|m| (m * t.figures.samples as f64).round() as u64),
            noise_ns: over.map(|o| o.1),
            gaps_over: over.map(|o| o.0),
            max_single_ns: t.figures.max_ns,
            iterations: Some(t.figures.samples),
            resolution_ns: t.figures.min_ns,
            threshold_ns: threshold,
            counts: [None; 5],
            steal_ns: None,
            smis: None,
        }
    }

    /// The figures of thread `t` of run `run` as its source reported them (an rtla import).
    pub fn reported(run: RunId, t: &ThreadRow, r: &Reported) -> CpuNoise {
        CpuNoise {
            run,
            thread: t.thread,
            cpu: t.cpu,
            runtime_ns: r.runtime_ns,
            noise_ns: r.noise_ns,
            gaps_over: r.noise_events,
            max_single_ns: t.figures.max_ns,
            iterations: None,
            resolution_ns: None,
            threshold_ns: None,
            counts: r.counts,
            steal_ns: None,
            smis: None,
        }
    }

    /// Every CPU of a stored run, in thread order: reported by its source where it was
    /// (an rtla import), else derived from its histogram and threshold.
    pub fn of_detail(d: &RunDetail) -> Vec<CpuNoise> {
        let config: Value = serde_json::from_str(&d.config_json).unwrap_or(Value::Null);
        let thr = config["threshold_ns"].as_u64().filter(|&t| t > 0);
        let reported = reported(&config).unwrap_or_default();
        let id = d.summary.id;
        let platform = &config["platform"]["cpus"];
        d.threads
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let mut c = match reported.get(i) {
                    Some(r) => CpuNoise::reported(id, t, r),
                    None => CpuNoise::of(id, t, thr),
                };
                let row = platform.as_array().and_then(|rows| {
                    rows.iter().find(|p| {
                        t.cpu
                            .is_some_and(|cpu| p["cpu"].as_u64() == Some(u64::from(cpu)))
                    })
                });
                if let Some(p) = row {
                    (c.steal_ns, c.smis) = (p["steal_ns"].as_u64(), p["smis"].as_u64());
                }
                c
            })
            .collect()
    }

    /// Every CPU of a run, in thread order ([`CpuNoise::of_detail`]); a run recorded with
    /// `rtscope noise --explain` has the interference counts of its stored explanation (HW,
    /// NMI, IRQ, softirq, thread: `ExplainSummary::interference`) where no source reported
    /// them.
    pub fn of_run(r: &RunData) -> Vec<CpuNoise> {
        let mut cpus = CpuNoise::of_detail(&r.detail);
        let Some((summary, _)) = &r.explain else {
            return cpus;
        };
        for c in cpus.iter_mut().filter(|c| c.counts == [None; 5]) {
            let counted = summary
                .interference
                .iter()
                .find(|i| c.cpu.is_some_and(|cpu| cpu as usize == i.cpu));
            if let Some(i) = counted {
                c.counts = [i.hw, i.nmi, i.irq, i.softirq, i.thread].map(Some);
            }
        }
        cpus
    }

    /// `100 × (runtime − noise) / runtime`; `None` when either is unknown or nothing ran.
    pub fn available_percent(&self) -> Option<f64> {
        available(self.runtime_ns?, self.noise_ns?)
    }

    /// Iterations per second of runtime.
    pub fn iterations_per_s(&self) -> Option<f64> {
        let rt = self.runtime_ns.filter(|&r| r > 0)?;
        Some(self.iterations? as f64 * 1e9 / rt as f64)
    }

    /// `CPU 3` (`thread 2` when unpinned).
    pub fn cpu_name(&self) -> String {
        match self.cpu {
            Some(c) => format!("CPU {c}"),
            None => format!("thread {}", self.thread),
        }
    }
}

/// `100 × (runtime − noise) / runtime`, `None` without runtime.
pub fn available(runtime_ns: u64, noise_ns: u64) -> Option<f64> {
    (runtime_ns > 0).then(|| 100.0 * runtime_ns.saturating_sub(noise_ns) as f64 / runtime_ns as f64)
}

/// The noise time per class of a run recorded with `--explain` (`None` without: its noise is
/// "not explained", never given a cause).
pub fn classes(r: &RunData) -> Option<rtscope_explain::classes::ClassTotals> {
    r.explain.as_ref().map(|(s, _)| s.class_totals())
}

/// "Not explained": a run's noise without `--explain`.
pub const NOT_EXPLAINED: &str = "not explained";

/// The palette slot of [`NOT_EXPLAINED`]: light grey (the lighter shade of the dark grey the
/// classes' "unexplained" has).
pub const NOT_EXPLAINED_COLOUR: usize = 22;

/// The palette slot of a class: its place in the order the classes were first drawn (thread,
/// irq, softirq, nmi, switch back, hypervisor, unexplained's dark grey: 0–6), RT throttling
/// and firmware (SMI), added after them, the next colours (7, 8).
pub fn slot(c: rtscope_explain::classes::Class) -> usize {
    use rtscope_explain::classes::Class;
    match c {
        Class::Thread => 0,
        Class::Irq => 1,
        Class::Softirq => 2,
        Class::Nmi => 3,
        Class::Switch => 4,
        Class::Hypervisor => 5,
        Class::Unexplained => 6,
        Class::Throttling => 7,
        Class::Firmware => 8,
    }
}

/// A run's noise time by cause, ns, with each cause's palette slot: the `--explain` classes
/// in their order ([`slot`]), or for a run without them its whole noise as [`NOT_EXPLAINED`]
/// ([`NOT_EXPLAINED_COLOUR`]; nothing when its noise is unknown).
pub fn causes(r: &RunData, cpus: &[CpuNoise]) -> Vec<(&'static str, usize, u64)> {
    match classes(r) {
        Some(t) => t
            .parts()
            .iter()
            .map(|&(c, ns)| (c.name(), slot(c), ns))
            .collect(),
        // An unknown noise (an oslat import, rtla hist without its summary) is no bar at all,
        // not a 0.
        None => cpus
            .iter()
            .map(|c| c.noise_ns)
            .sum::<Option<u64>>()
            .map(|ns| (NOT_EXPLAINED, NOT_EXPLAINED_COLOUR, ns))
            .into_iter()
            .collect(),
    }
}

/// A percentage with as many decimals as it takes to show how far from 100 it is
/// (`99.9871`, `72.35`).
pub fn pct(p: f64) -> String {
    if p >= 99.0 {
        format!("{p:.4}")
    } else {
        format!("{p:.2}")
    }
}

#[cfg(test)]
mod tests;
