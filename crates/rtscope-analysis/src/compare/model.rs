//! What `compare` computes on: runs read from the store, statistics, and groups of runs merged
//! losslessly (histograms added bucket by bucket, exact max and counts summed).

use rtscope_common::error::UsageError;
use rtscope_core::{Histogram, Nanos, Percentile, PERCENTILES};
use rtscope_store::{CampaignRun, RunDetail, RunId, RunKind, RunStatus, SampleRule};

/// A statistic `compare` can put side by side. Lower is better for every one of them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Stat {
    /// The smallest latency.
    Min,
    /// The mean latency.
    Mean,
    /// A percentile: quantile (0..1) and label (`p99.9`).
    Quantile(f64, &'static str),
    /// The largest latency (exact, also for imports whose histogram overflowed).
    Max,
    /// Missed deadlines per deadline: missed / (samples + missed) over the runs, a rate in
    /// parts per billion ([`PPB`]), so runs of different length compare.
    Missed,
    /// Noise runs: the share of the runtime lost to gaps over the threshold, in [`PPB`];
    /// shown as the share available (`99.9871%`), so lower (less noise) is better.
    Available,
    /// Noise runs: noise per second of runtime, ns/s (the same share as [`Stat::Available`],
    /// read as osnoise's "noise per second").
    NoisePerSec,
}

/// The unit of [`Stat::Missed`]'s values: missed deadlines per 10⁹ deadlines.
pub const PPB: u64 = 1_000_000_000;

/// The names `--stat`, `--threshold` and `--matrix` accept, for messages.
pub const STAT_NAMES: &str =
    "min, mean, p50, p90, p99, p99.9, p99.99, p99.999, p99.9999, max, missed, available, noise/s";

/// `--stat`'s default: the statistics compared for groups of latency runs.
pub const DEFAULT_STATS: &str = "p50,p99,p99.99,max,missed";

/// The statistics compared for groups of noise runs when `--stat` is not given: the longest
/// single gap, the share available, noise per second and the gap percentiles.
pub const NOISE_STATS: [Stat; 6] = [
    Stat::Max,
    Stat::Available,
    Stat::NoisePerSec,
    Stat::Quantile(0.5, "p50"),
    Stat::Quantile(0.99, "p99"),
    Stat::Quantile(0.9999, "p99.99"),
];

impl Stat {
    /// Parses a statistic name as `--limit` spells it (`max`, `p99.99`, `missed`).
    pub fn parse(text: &str, option: &str) -> Result<Stat, UsageError> {
        let t = text.trim();
        let stat = match t {
            "min" => Stat::Min,
            "mean" | "avg" => Stat::Mean,
            "max" => Stat::Max,
            // A respond run's lost events are its missed deadlines.
            "missed" | "lost" => Stat::Missed,
            "available" => Stat::Available,
            "noise/s" | "noise_per_s" => Stat::NoisePerSec,
            other => match PERCENTILES.iter().find(|(l, _)| *l == other) {
                Some(&(l, q)) => Stat::Quantile(q, l),
                None => {
                    return Err(
                        UsageError::new(format!("unknown statistic '{t}' for '{option}'"))
                            .hint(format!("use one of {STAT_NAMES}")),
                    )
                }
            },
        };
        Ok(stat)
    }

    /// The name users type.
    pub fn name(&self) -> &'static str {
        match self {
            Stat::Min => "min",
            Stat::Mean => "mean",
            Stat::Quantile(_, l) => l,
            Stat::Max => "max",
            Stat::Missed => "missed",
            Stat::Available => "available",
            Stat::NoisePerSec => "noise/s",
        }
    }

    /// Whether the statistic is a rate (missed deadlines per deadline) rather than a latency.
    pub fn is_rate(&self) -> bool {
        matches!(self, Stat::Missed | Stat::Available)
    }

    /// Whether the statistic is a share of a noise run's runtime ([`Stat::Available`],
    /// [`Stat::NoisePerSec`]): no latency floor applies to it.
    pub fn is_share(&self) -> bool {
        matches!(self, Stat::Available | Stat::NoisePerSec)
    }

    /// The unit of its values: `ns`, `ppb` (missed deadlines per 10⁹ deadlines, or ns of noise
    /// per 10⁹ ns of runtime) or `ns/s`.
    pub fn unit(&self) -> &'static str {
        match self {
            Stat::NoisePerSec => "ns/s",
            _ if self.is_rate() => "ppb",
            _ => "ns",
        }
    }

    /// Formats a value of this statistic for a table (`-` when unknown); a rate as % of the
    /// deadlines (`0.0123%`).
    pub fn show(&self, v: Option<u64>) -> String {
        match (v, self) {
            (None, _) => "-".into(),
            (Some(n), Stat::Available) => {
                format!("{}%", rtscope_report::noise::pct(100.0 - n as f64 / 1e7))
            }
            (Some(n), Stat::NoisePerSec) => format!("{}/s", Nanos(n)),
            (Some(n), _) if self.is_rate() => rate_pct(n),
            (Some(n), _) => Nanos(n).to_string(),
        }
    }

    /// Formats a change of this statistic (`+1.2us`, `-0.0100%`; for `available`, the change
    /// of the share available in points: more noise is `-0.0100 pts`).
    pub fn show_delta(&self, d: i128) -> String {
        if *self == Stat::Available {
            return format!("{:+.4} pts", -(d as f64) / 1e7);
        }
        let sign = if d < 0 { "-" } else { "+" };
        let v = Some(d.unsigned_abs().min(u64::MAX as u128) as u64);
        format!("{sign}{}", self.show(v))
    }
}

/// A rate in ppb as a percentage with three significant digits (`12.3%`, `0.000100%`).
fn rate_pct(ppb: u64) -> String {
    if ppb == 0 {
        return "0%".into();
    }
    let pct = ppb as f64 / 1e7;
    let decimals = (2 - pct.log10().floor() as i32).clamp(0, 9) as usize;
    format!("{pct:.decimals$}%")
}

/// How a run measured: the settings `rtscope compare` warns about when groups differ.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunSettings {
    /// Distinct intervals of its threads (`1ms`, or `1ms/2ms`; `unknown` for an import whose
    /// source does not say, stored as 0).
    pub interval: String,
    /// Distinct priorities of its threads (`90`, or `89/90`).
    pub priority: String,
    /// Number of measuring threads.
    pub threads: usize,
    /// Distinct policies of its threads (`fifo`).
    pub policy: String,
}

impl RunSettings {
    fn of(d: &RunDetail) -> RunSettings {
        let join = |mut v: Vec<String>| {
            v.sort();
            v.dedup();
            v.join("/")
        };
        RunSettings {
            interval: join(
                d.threads
                    .iter()
                    .map(|t| match t.interval_ns {
                        0 => "unknown".into(),
                        ns => Nanos(ns).to_string(),
                    })
                    .collect(),
            ),
            priority: join(d.threads.iter().map(|t| t.priority.to_string()).collect()),
            threads: d.threads.len(),
            policy: join(d.threads.iter().map(|t| t.policy.clone()).collect()),
        }
    }
}

/// A distribution as `compare` adds it up: one run's ([`RunData`]) or a group's ([`Merged`]).
#[derive(Debug, Clone, Default)]
pub struct Totals {
    /// The histograms merged.
    pub hist: Histogram,
    /// Samples (may exceed the histogram's count for imports with overflows).
    pub samples: u64,
    /// Exact smallest latency, ns.
    pub min_ns: Option<u64>,
    /// Exact largest latency, ns.
    pub max_ns: Option<u64>,
    /// Sum of all latencies, ns (a stored run's from its per-thread means).
    pub sum_ns: f64,
    /// Missed deadlines.
    pub missed: u64,
    /// Deadlines: samples + missed (runs of the old sample rule, which sampled each missed
    /// deadline, have one sample per deadline).
    pub deadlines: u64,
}

impl Totals {
    /// A histogram's samples with `missed` deadlines besides them; the sum of the latencies
    /// taken at the middle of each bucket.
    pub fn of_histogram(hist: Histogram, missed: u64) -> Totals {
        let samples = hist.count();
        Totals {
            samples,
            min_ns: hist.min().map(|v| v.0),
            max_ns: hist.max().map(|v| v.0),
            sum_ns: hist
                .buckets()
                .map(|(lo, w, n)| (lo.0 as f64 + (w.0 as f64 - 1.0) / 2.0) * n as f64)
                .sum(),
            missed,
            deadlines: samples.saturating_add(missed),
            hist,
        }
    }

    /// Adds another distribution: histograms bucket by bucket, exact extremes, counts summed.
    pub fn add(&mut self, o: &Totals) {
        self.hist.merge(&o.hist);
        self.samples += o.samples;
        self.min_ns = self.min_ns.into_iter().chain(o.min_ns).min();
        self.max_ns = self.max_ns.into_iter().chain(o.max_ns).max();
        self.sum_ns += o.sum_ns;
        self.missed += o.missed;
        self.deadlines += o.deadlines;
    }
}

/// One run, reduced to what a comparison needs.
#[derive(Debug, Clone)]
pub struct RunData {
    /// Id.
    pub id: RunId,
    /// Label.
    pub label: Option<String>,
    /// `complete`, `interrupted`, `running`, `incomplete`, …
    pub status: RunStatus,
    /// Tags.
    pub tags: Vec<(String, String)>,
    /// `uname.release` of the machine that ran it, when recorded.
    pub kernel: Option<String>,
    /// Name of the campaign it belongs to.
    pub campaign: Option<String>,
    /// Load case: the `case` tag, else its campaign position's load case.
    pub case: Option<String>,
    /// Its campaign position's scenario.
    pub scenario: Option<String>,
    /// When it started (RFC 3339, UTC, as stored).
    pub started: String,
    /// Its distribution: all threads' histograms merged, samples, extremes and deadlines.
    pub totals: Totals,
    /// How it measured (interval, priority, threads, policy).
    pub run: RunSettings,
    /// The `(check id, setting)` pairs of its stored preflight audit (empty: none stored).
    pub settings: Vec<(String, String)>,
    /// What it measured: wake-up latency (`measure`, `respond`, …) or OS noise (`noise`, whose
    /// samples are a busy loop's gaps).
    pub kind: RunKind,
    /// A noise run's noise and runtime summed over its CPUs (`None` for other runs, and for
    /// an import that records no threshold).
    pub noise: Option<NoiseTime>,
    /// A noise run whose histogram holds only its noises over the threshold (an rtla osnoise
    /// hist import), not every gap of its loop.
    pub noises_only: bool,
}

/// Noise over a run's CPUs ([`rtscope_report::noise::CpuNoise`]: one definition for the
/// report and the comparison).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NoiseTime {
    /// Sum of the gaps over the threshold, ns.
    pub noise_ns: u64,
    /// Time spun, ns.
    pub runtime_ns: u64,
}

impl NoiseTime {
    /// A noise run's totals; `None` for other runs or when a CPU's noise is unknown.
    pub fn of(d: &RunDetail) -> Option<NoiseTime> {
        if d.summary.kind != RunKind::Noise {
            return None;
        }
        let mut t = NoiseTime::default();
        for c in rtscope_report::noise::CpuNoise::of_detail(d) {
            t.noise_ns += c.noise_ns?;
            t.runtime_ns += c.runtime_ns?;
        }
        Some(t)
    }

    /// Noise per 10⁹ ns of runtime (`None` without runtime).
    pub fn ppb(&self) -> Option<u64> {
        let rt = u128::from(self.runtime_ns);
        (rt > 0).then(|| ((u128::from(self.noise_ns) * u128::from(PPB) + rt / 2) / rt) as u64)
    }
}

impl RunData {
    /// A complete timer run `id` of `samples` wake-ups, `hist` holding those it placed, with
    /// no label, tags, settings or noise (tests and examples build runs with it).
    pub fn complete(id: RunId, hist: Histogram, samples: u64, max: Option<u64>) -> RunData {
        RunData {
            id,
            label: None,
            status: RunStatus::Complete,
            tags: vec![],
            kernel: None,
            campaign: None,
            case: None,
            scenario: None,
            started: String::new(),
            totals: Totals {
                min_ns: hist.min().map(|n| n.0),
                hist,
                samples,
                max_ns: max,
                sum_ns: 0.0,
                missed: 0,
                deadlines: samples,
            },
            run: RunSettings::default(),
            settings: Vec::new(),
            kind: RunKind::Measure,
            noise: None,
            noises_only: false,
        }
    }

    /// Reduces a stored run; `campaign` is its campaign's name and its position in it, if any.
    pub fn from_detail(d: &RunDetail, campaign: Option<(String, CampaignRun)>) -> RunData {
        let s = &d.summary;
        let tag = |k: &str| {
            s.tags
                .iter()
                .find(|(tk, _)| tk == k)
                .map(|(_, v)| v.clone())
        };
        let (campaign, position) = campaign.unzip();
        let (campaign_case, scenario) = position.map(|p| (p.load_case, p.scenario)).unzip();
        RunData {
            id: s.id,
            label: s.label.clone(),
            status: s.status,
            tags: s.tags.clone(),
            kernel: d
                .environment
                .iter()
                .find(|(k, _)| k == "uname.release")
                .map(|(_, v)| v.clone()),
            campaign,
            case: tag("case").or(campaign_case.filter(|c| !c.is_empty())),
            scenario: scenario.filter(|s| !s.is_empty()),
            started: s.started.clone(),
            totals: Totals {
                hist: s.histogram.clone(),
                samples: s.samples,
                min_ns: d.threads.iter().filter_map(|t| t.figures.min_ns).min(),
                max_ns: s.max_ns,
                sum_ns: d
                    .threads
                    .iter()
                    .map(|t| t.figures.mean_ns.unwrap_or(0.0) * t.figures.samples as f64)
                    .sum(),
                missed: s.missed,
                deadlines: match d.sample_rule() {
                    SampleRule::WakeUp => s.samples.saturating_add(s.missed),
                    SampleRule::Deadline => s.samples,
                },
            },
            run: RunSettings::of(d),
            settings: Vec::new(),
            kind: s.kind,
            noise: NoiseTime::of(d),
            noises_only: s.kind == RunKind::Noise
                && rtscope_report::noise::noises_only(&d.config_json),
        }
    }

    /// Reduces a stored run into what `compare` puts side by side: one [`RunData`] per
    /// mechanism of a respond run of several (`respond --ipc eventfd,pipe,signal` records each
    /// as a thread), named by it in its label, its `mechanism` tag and its load case (so
    /// eventfd is compared with eventfd, not with the three merged); else the run whole, as
    /// [`RunData::from_detail`].
    pub fn per_mechanism(d: &RunDetail, campaign: Option<(String, CampaignRun)>) -> Vec<RunData> {
        let roles: Vec<(usize, String)> = d
            .threads
            .iter()
            .enumerate()
            .filter_map(|(i, t)| {
                Some((
                    i,
                    rtscope_report::model::respond_role(&d.config_json, t.thread)?,
                ))
            })
            .collect();
        if d.summary.kind != RunKind::Respond || roles.len() < 2 {
            return vec![RunData::from_detail(d, campaign)];
        }
        roles
            .into_iter()
            .map(|(i, role)| {
                let t = &d.threads[i];
                let mut one = d.clone();
                one.threads = vec![t.clone()];
                let s = &mut one.summary;
                s.threads = 1;
                s.samples = t.figures.samples;
                s.max_ns = t.figures.max_ns;
                s.missed = t.missed;
                s.histogram = t.histogram.clone();
                let mut r = RunData::from_detail(&one, campaign.clone());
                let base = d
                    .summary
                    .label
                    .clone()
                    .unwrap_or_else(|| format!("run {}", d.summary.id));
                r.label = Some(format!("{base} {role}"));
                r.tags.retain(|(k, _)| k != "mechanism");
                r.tags.push(("mechanism".into(), role.clone()));
                r.case = Some(role);
                r
            })
            .collect()
    }

    /// The value of a tag.
    pub fn tag(&self, key: &str) -> Option<&str> {
        self.tags
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// Several runs merged into one distribution.
#[derive(Debug, Clone, Default)]
pub struct Merged {
    /// The runs' distributions added up.
    pub totals: Totals,
    /// Some run has samples but no histogram: percentiles are unknown.
    pub missing_hist: bool,
    /// The lowest histogram max of the runs whose histogram lacks some samples (imported
    /// overflows, which lie above it): percentiles above it are unknown.
    pub overflow_floor: Option<u64>,
    /// Noise runs: their noise and runtime summed (`None` when some run's is unknown).
    pub noise: Option<NoiseTime>,
    /// What the histograms hold: every gap or wake-up, or only a noise run's noises over the
    /// threshold (an rtla osnoise hist import), or both.
    pub gaps: Gaps,
}

/// What the merged histograms of a group hold.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Gaps {
    /// Every sample: wake-ups, or every gap of a noise run's loop.
    #[default]
    Every,
    /// Only noises over a threshold (rtla osnoise hist imports).
    NoisesOnly,
    /// Runs of both: the distribution of the merged histogram means nothing.
    Mixed,
}

impl Stat {
    /// Whether the statistic is of the distribution of the samples (min, mean, percentiles):
    /// it compares only histograms that hold the same gaps ([`Gaps`]).
    pub fn of_distribution(self) -> bool {
        matches!(self, Stat::Min | Stat::Mean | Stat::Quantile(..))
    }
}

impl Merged {
    /// Merges runs.
    pub fn of<'a>(runs: impl IntoIterator<Item = &'a RunData>) -> Merged {
        let mut m = Merged::default();
        let mut noise = Some(NoiseTime::default());
        let mut first = true;
        for r in runs {
            let g = if r.noises_only {
                Gaps::NoisesOnly
            } else {
                Gaps::Every
            };
            m.gaps = if first || m.gaps == g { g } else { Gaps::Mixed };
            first = false;
            noise = noise.zip(r.noise).map(|(a, b)| NoiseTime {
                noise_ns: a.noise_ns + b.noise_ns,
                runtime_ns: a.runtime_ns + b.runtime_ns,
            });
            let r = &r.totals;
            m.totals.add(r);
            let placed = r.hist.count();
            m.missing_hist |= placed == 0 && r.samples > 0;
            if placed > 0 && placed < r.samples {
                let floor = r.hist.max().map_or(0, |n| n.0);
                m.overflow_floor = Some(m.overflow_floor.map_or(floor, |f| f.min(floor)));
            }
        }
        m.noise = noise.filter(|n| n.runtime_ns > 0);
        m
    }

    /// The value of a statistic (ns, or a count), `None` when the runs cannot tell.
    ///
    /// A percentile is taken over all samples. Samples an import could not place in its
    /// histogram (cyclictest's overflows) lie above that run's histogram, so a percentile that
    /// could fall among them is unknown rather than understated; so are the percentiles of a
    /// group with a run that has no histogram at all, and the min, mean and percentiles of a
    /// group whose histograms hold different gaps ([`Gaps::Mixed`]).
    pub fn value(&self, stat: Stat) -> Option<u64> {
        if self.gaps == Gaps::Mixed && stat.of_distribution() {
            return None;
        }
        match stat {
            Stat::Min => self.totals.min_ns,
            Stat::Max => self.totals.max_ns,
            Stat::Missed => self.miss_rate(),
            Stat::Available | Stat::NoisePerSec => self.noise?.ppb(),
            Stat::Mean => (self.totals.samples > 0)
                .then(|| (self.totals.sum_ns / self.totals.samples as f64).round() as u64),
            Stat::Quantile(q, _) => self.quantile(q),
        }
    }

    /// Missed deadlines per 10⁹ deadlines, rounded to the nearest (`None` without deadlines).
    pub fn miss_rate(&self) -> Option<u64> {
        let d = u128::from(self.totals.deadlines);
        (d > 0).then(|| ((u128::from(self.totals.missed) * u128::from(PPB) + d / 2) / d) as u64)
    }

    fn quantile(&self, q: f64) -> Option<u64> {
        let in_hist = self.totals.hist.count();
        if self.missing_hist || in_hist == 0 {
            return None;
        }
        let rank = ((q * self.totals.samples as f64).ceil() as u64).clamp(1, self.totals.samples);
        if rank > in_hist {
            return None;
        }
        let q_hist = if in_hist == self.totals.samples {
            q
        } else {
            (rank as f64 - 0.5) / in_hist as f64
        };
        let v = self.totals.hist.value_at_quantile(q_hist)?.0;
        match self.overflow_floor {
            Some(floor) if v > floor => None,
            _ => Some(v),
        }
    }

    /// Whether enough samples lie beyond a percentile for it to mean something (always true
    /// for min, mean, max and missed).
    pub fn supports(&self, stat: Stat) -> bool {
        match stat {
            Stat::Quantile(quantile, label) => Percentile {
                label,
                quantile,
                value: None,
                tail_samples: self.totals.samples as f64 * (1.0 - quantile),
                lower_bound: false,
            }
            .is_supported(),
            _ => true,
        }
    }
}

/// The statistic of each run on its own (runs where it is unknown are left out).
pub fn per_run<'a>(runs: impl IntoIterator<Item = &'a RunData>, stat: Stat) -> Vec<f64> {
    runs.into_iter()
        .filter_map(|r| Merged::of([r]).value(stat))
        .map(|v| v as f64)
        .collect()
}

#[cfg(test)]
pub(crate) mod tests_support {
    use super::*;

    /// A complete run `id` of `samples` wake-ups, `hist` holding those it placed.
    pub(crate) fn run(id: RunId, hist: Histogram, samples: u64, max: Option<u64>) -> RunData {
        RunData::complete(id, hist, samples, max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(values: &[(u64, u64)], samples: u64, max: u64) -> RunData {
        let mut hist = Histogram::new();
        for &(v, n) in values {
            hist.record_n(Nanos(v), n);
        }
        let mut r = tests_support::run(1, hist, samples, Some(max));
        r.totals.min_ns = Some(values[0].0);
        r.totals.missed = 2;
        r.totals.deadlines = samples + 2;
        r
    }

    /// A respond run of eventfd, pipe and signal is three operands of a comparison, each
    /// with its own statistics and named by its mechanism; a measure run stays one.
    #[test]
    fn a_respond_run_is_compared_per_mechanism() {
        let db =
            std::env::temp_dir().join(format!("rtscope-analysis-mech-{}.db", std::process::id()));
        let _ = std::fs::remove_file(&db);
        let mut store = rtscope_store::Store::open(&db).unwrap();
        let spec = rtscope_testkit::synthetic::SyntheticRun {
            cpus: 3,
            samples: 1_000,
            monitors: false,
            ..Default::default()
        };
        let id = rtscope_testkit::synthetic::write_run(&mut store, &spec).unwrap();
        let mut d = store.run(id).unwrap();
        assert_eq!(
            RunData::per_mechanism(&d, None).len(),
            1,
            "a measure run is one"
        );
        d.summary.kind = RunKind::Respond;
        d.config_json = r#"{"rows":[{"thread":0,"source":"eventfd","path":"1→1 same"},{"thread":1,"source":"pipe","path":"1→1 same"},{"thread":2,"source":"signal","path":"1→1 same"}]}"#.into();
        let per = RunData::per_mechanism(&d, None);
        let cases: Vec<&str> = per.iter().filter_map(|r| r.case.as_deref()).collect();
        assert_eq!(
            cases,
            ["eventfd 1->1 same", "pipe 1->1 same", "signal 1->1 same"]
        );
        for (r, t) in per.iter().zip(&d.threads) {
            assert_eq!(
                (r.totals.samples, r.totals.max_ns, r.totals.hist.count()),
                (t.figures.samples, t.figures.max_ns, t.histogram.count())
            );
            assert_eq!(r.tag("mechanism"), r.case.as_deref());
        }
        assert_eq!(per[1].label.as_deref(), Some("synthetic pipe 1->1 same"));
        let _ = std::fs::remove_file(&db);
    }

    #[test]
    fn merges_runs_and_keeps_overflowed_percentiles_unknown() {
        let a = run(&[(1_000, 98)], 100, 500_000);
        let b = run(&[(2_000, 100)], 100, 3_000);
        let m = Merged::of([&a, &b]);
        assert_eq!(m.overflow_floor, Some(1_000));
        assert_eq!(m.value(Stat::Max), Some(500_000));
        // 4 missed of 204 deadlines.
        assert_eq!(m.value(Stat::Missed), Some(19_607_843));
        assert_eq!(Stat::Missed.show(Some(19_607_843)), "1.96%");
        assert_eq!(Stat::Missed.show(Some(100)), "0.0000100%");
        assert_eq!(Stat::Missed.show_delta(-1_000_000), "-0.100%");
        assert_eq!(m.value(Stat::Quantile(0.5, "p50")), None);
        assert_eq!(m.value(Stat::Quantile(0.49, "p49")), Some(1_000));
        assert_eq!(m.value(Stat::Quantile(0.999, "p99.9")), None);
        let no_hist = run(&[(1_000, 0)], 100, 3_000);
        assert_eq!(
            Merged::of([&b, &no_hist]).value(Stat::Quantile(0.1, "p10")),
            None
        );
        assert!(!m.supports(Stat::Quantile(0.99, "p99")));
        assert!(Stat::parse("p42", "--stat").is_err());
    }
}
