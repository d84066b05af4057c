//! Beyond the measured maximum: the latency exceeded with a small probability per wake-up
//! (a probabilistic worst-case estimate, "pWCET"), estimated with extreme value theory, with
//! its confidence interval and the tests that justify the model — or a refusal naming the
//! tests that failed (docs/worst-case.md).
//!
//! The method is peaks over threshold (Coles 2001, ch. 4–5; as in chronovise and MBPTA,
//! Cucu-Grosjean et al. 2012): the observations above a threshold `u`, declustered so that one
//! disturbance counts once ([`threshold`]), are fitted with a generalized Pareto distribution
//! by maximum likelihood ([`gpd`]); the level exceeded by a cluster with probability `p` per
//! wake-up is `u + σ/ξ ((λ/p)^ξ − 1)`, `λ` the clusters per wake-up, with a profile-likelihood
//! interval. The sample must pass the tests of [`diag`] or the estimate is refused; a sample
//! the tests could not check (a histogram) is refused too unless stationarity is assumed
//! explicitly, and a heavy or unstable tail gets no far-tail number at all ([`far`]).

#![warn(missing_docs)]

pub mod bounds;
pub mod diag;
pub mod far;
pub mod figure;
pub mod gate;
pub mod gev;
pub mod gpd;
pub mod input;
pub mod precision;
pub mod regimes;
pub mod render;
pub mod request;
pub mod threshold;
pub mod units;
pub mod words;

use threshold::{Candidate, Point};

/// What to estimate and how sure to be.
#[derive(Debug, Clone)]
pub struct Options {
    /// Exceedance probabilities per wake-up.
    pub probabilities: Vec<f64>,
    /// Two-sided confidence level of the intervals (0.95).
    pub confidence: f64,
    /// Significance level of each diagnostic test (0.01).
    pub alpha: f64,
    /// The fewest cluster maxima a fit is made from (100).
    pub min_clusters: usize,
    /// Bootstrap replicates of the goodness-of-fit and arrival p-values (199).
    pub replicates: usize,
    /// Seed of the bootstrap (fixed: the same run gives the same answer).
    pub seed: u64,
    /// Extrapolate a fitted `ξ̂ < 0` as the bounded GPD it is, instead of the exponential tail
    /// (see [`Shape::Exponential`]).
    pub allow_bounded: bool,
    /// "How long must I measure": the relative distance of the upper bound from the estimate
    /// wanted (0.1: within 10 %), answered per level in [`Level::longer`].
    pub precision: Option<f64>,
    /// Print the levels of a fit whose stationarity tests could not run (a histogram), labelled
    /// as untested (`--assume-stationary`); a gate never passes on them.
    pub assume_stationary: bool,
    /// Add the answers that do not assume one stationary tail (segments, worst-segment
    /// envelope, block maxima: [`regimes`]) for an input in time order with a wake-up rate.
    pub regimes: bool,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            probabilities: vec![1e-6, 1e-7, 1e-8, 1e-9, 1e-10, 1e-11, 1e-12],
            confidence: 0.95,
            alpha: 0.01,
            min_clusters: 100,
            replicates: 199,
            seed: 0x7a11,
            allow_bounded: false,
            precision: None,
            assume_stationary: false,
            regimes: false,
        }
    }
}

/// The tail of one thread's run, as the analysis needs it.
#[derive(Debug, Clone)]
pub struct Tail {
    /// Observations (wake-ups) in the run.
    pub observations: u64,
    /// Wake-ups per second (`None`: unknown; no per-time levels then).
    pub rate_hz: Option<f64>,
    /// The largest observations (at least a tenth of the run or [`threshold::MAX_EXCEEDANCES`]),
    /// in time order when `ordered`.
    pub points: Vec<Point>,
    /// Whether the points carry their time order (raw samples) or not (histograms).
    pub ordered: bool,
    /// How the input was read when not every exact value in order: how binned values were
    /// spread, or raw samples the writer dropped (`None`: exact values, all of them).
    pub binning: Option<String>,
    /// How the source binned the values (`None`: exact values).
    pub bins: Option<diag::Bins>,
    /// The largest value observed, ns.
    pub max: f64,
    /// The largest wake-up of each whole second of the run, ns, in time order (empty: no time
    /// order or no rate), for the block maxima of [`regimes`].
    pub block_maxima: Vec<f64>,
}

/// The largest of each whole block of `per_block` values.
pub fn block_maxima(values: &[f64], per_block: usize) -> Vec<f64> {
    values
        .chunks_exact(per_block.max(1))
        .map(|c| c.iter().copied().fold(f64::MIN, f64::max))
        .collect()
}

impl Tail {
    /// Every observation of a run, exact and in time order (synthetic runs, tests), at
    /// `rate_hz` wake-ups per second.
    pub fn ordered(values: &[f64], rate_hz: Option<f64>) -> Tail {
        Tail {
            observations: values.len() as u64,
            rate_hz,
            points: (0..)
                .zip(values)
                .map(|(i, &value)| Point {
                    index: Some(i),
                    value,
                })
                .collect(),
            ordered: true,
            binning: None,
            bins: None,
            max: values.iter().copied().fold(0.0, f64::max),
            block_maxima: rate_hz
                .map_or_else(Vec::new, |hz| block_maxima(values, hz.round() as usize)),
        }
    }

    /// A run of a known tail (tests, examples): `n` wake-ups of `base_ns` plus an excess drawn
    /// from `g` (seeded by `seed`), 1,000 per second.
    pub fn with_gpd_tail(base_ns: f64, g: gpd::Gpd, n: usize, seed: u64) -> Tail {
        let mut r = diag::generator(seed);
        let v: Vec<f64> = (0..n).map(|_| base_ns + g.draw(r.unit())).collect();
        Tail::ordered(&v, Some(1000.0))
    }
}

/// A diagnostic test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Test {
    /// Kolmogorov–Smirnov of the cluster maxima against the fitted GPD.
    FitKs,
    /// Anderson–Darling of the same.
    FitAd,
    /// Ljung–Box of the cluster maxima in time order.
    Independence,
    /// Gaps between clusters against exponential gaps.
    Arrivals,
    /// Two-sample KS of the two halves' cluster maxima.
    SameTail,
    /// The halves' cluster counts against their shares of the run.
    SameRate,
}

impl Test {
    /// What the test asks, for people.
    pub fn question(self) -> &'static str {
        match self {
            Test::FitKs => "the excesses follow the fitted GPD (Kolmogorov-Smirnov)",
            Test::FitAd => "the excesses follow the fitted GPD in its tail (Anderson-Darling)",
            Test::Independence => "cluster maxima are uncorrelated in time (Ljung-Box)",
            Test::Arrivals => {
                "episodes (declustered: one per burst) arrive at random, not periodically (gap test of the episodes' starts)"
            }
            Test::SameTail => "both halves of the run have the same tail (two-sample KS)",
            Test::SameRate => "both halves of the run exceed the threshold as often",
        }
    }
}

/// The outcome of one diagnostic.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "kebab-case", tag = "outcome")]
pub enum Outcome {
    /// p ≥ α.
    Pass {
        /// Statistic.
        statistic: f64,
        /// p-value.
        p: f64,
    },
    /// p < α.
    Fail {
        /// Statistic.
        statistic: f64,
        /// p-value.
        p: f64,
    },
    /// Could not be run, and why.
    Untested {
        /// Why.
        why: String,
    },
}

/// A diagnostic with its outcome.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Diagnostic {
    /// Which.
    pub test: Test,
    /// Outcome.
    #[serde(flatten)]
    pub outcome: Outcome,
}

/// Why an estimate is refused.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "kebab-case", tag = "reason")]
pub enum Refusal {
    /// Too few observations above the lowest candidate threshold.
    TooFewExceedances {
        /// Cluster maxima available.
        have: usize,
        /// Needed.
        need: usize,
    },
    /// The shape estimate drifts with the threshold: no tail of one GPD.
    NoStableThreshold,
    /// Samples lie beyond the histogram's last bin (cyclictest's overflows): the tail itself is
    /// unknown.
    BeyondHistogram {
        /// Samples beyond.
        count: u64,
        /// Each at least this, ns.
        floor_ns: u64,
    },
    /// The run kept no distribution (summary statistics only, no histogram, no raw samples).
    NoDistribution,
    /// The largest observations take fewer than [`bounds::MIN_DISTINCT`] distinct values (a
    /// constant run, or every large latency in one or two of a histogram's bins): no tail.
    NoTail {
        /// Distinct values (source bins for a binned input) among the largest observations.
        distinct: usize,
        /// The largest value observed, ns.
        observed_max_ns: f64,
    },
    /// A diagnostic failed.
    Failed {
        /// Which.
        test: Test,
    },
    /// Tests of stationarity (independence, identical distribution) could not run: a histogram
    /// keeps no time order ([`far::untested`]).
    NotTested {
        /// How many tests did not run.
        tests: usize,
    },
    /// No level beyond the data from this run: its tail is too heavy or not stable across
    /// thresholds ([`far::not_estimable`]); never shown, even as unreliable.
    NotEstimable {
        /// Heavy or unstable.
        why: far::Why,
        /// The largest latency observed, ns.
        observed_max_ns: f64,
        /// The fitted shape (`None`: no fit).
        xi: Option<f64>,
        /// The smallest shape fitted across the candidate thresholds (NaN: none fitted).
        xi_low: f64,
        /// The largest.
        xi_high: f64,
    },
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            // Clusters grow with the run's length: `need / have` times as long at least.
            Refusal::TooFewExceedances { have, need } => write!(
                f,
                "too few exceedances: {have} clusters above the lowest candidate threshold, {need} needed (measure {} longer at least)",
                if *have == 0 {
                    "much".to_string()
                } else {
                    format!("{:.1} ×", *need as f64 / *have as f64)
                }
            ),
            Refusal::NoStableThreshold => f.write_str(
                "no stable threshold: the shape estimate keeps changing with the threshold (the tail is not one distribution)",
            ),
            Refusal::BeyondHistogram { count, floor_ns } => write!(
                f,
                "{count} samples lie beyond the histogram (each at least {:.1} µs), so the tail is unknown (a larger cyclictest -h, or rtscope measure --raw)",
                *floor_ns as f64 / 1e3
            ),
            Refusal::NoDistribution => f.write_str(
                "the run kept no histogram and no raw samples (summary statistics only): nothing to fit",
            ),
            Refusal::NoTail {
                distinct,
                observed_max_ns,
            } => write!(
                f,
                "no tail to fit: the largest latencies take {} (largest {}), so nothing beyond the observed maximum is estimated",
                match distinct {
                    1 => "one value only".to_string(),
                    d => format!("only {d} distinct values"),
                },
                units::us(*observed_max_ns)
            ),
            Refusal::Failed { test } => write!(f, "failed: {}", test.question()),
            Refusal::NotTested { tests } => write!(
                f,
                "not tested for stationarity — no estimate: {tests} tests need the wake-ups in time order (independence, the same tail in both halves), which a histogram does not keep (measure with `rtscope measure --raw`; --assume-stationary prints the estimate labelled UNTESTED, and no --limit passes on it)"
            ),
            Refusal::NotEstimable {
                why,
                observed_max_ns,
                xi,
                xi_low,
                xi_high,
            } => {
                let seen = if xi_low.is_nan() {
                    "no shape fitted".to_string()
                } else {
                    format!("ξ {xi_low:+.2} .. {xi_high:+.2} across thresholds")
                };
                write!(
                    f,
                    "not estimable from this run (observed max {}, {seen}): ",
                    units::us(*observed_max_ns)
                )?;
                match (why, xi) {
                    (far::Why::Heavy, Some(xi)) => write!(
                        f,
                        "the fitted shape ξ = {xi:+.2} is above {}, a tail too heavy to bound beyond the data (no number, even with --unreliable)",
                        far::MAX_XI
                    ),
                    _ => f.write_str(
                        "the shape changes with the threshold, so the tail is not one distribution (no number, even with --unreliable)",
                    ),
                }
            }
        }
    }
}

/// A return level: the latency exceeded with `probability` per wake-up.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Level {
    /// Exceedance probability per wake-up.
    pub probability: f64,
    /// The time between exceedances at the run's rate, seconds (`None`: rate unknown).
    pub once_per_s: Option<f64>,
    /// Estimate, ns.
    pub estimate_ns: f64,
    /// Lower confidence bound, ns.
    pub lower_ns: f64,
    /// Upper confidence bound, ns (`None`: the data do not bound it).
    pub upper_ns: Option<f64>,
    /// How far beyond the run: `1 / (probability × observations)` (≤ 1: inside the run).
    pub extrapolation: f64,
    /// How many times this run's length would bring the upper bound within
    /// `Options::precision` of the estimate (`None`: not asked, or unbounded): see
    /// [`longer_for`].
    pub longer: Option<f64>,
}

/// Which tail the levels come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Shape {
    /// The GPD as fitted.
    Gpd,
    /// The exponential tail (`ξ = 0`) although the GPD's `ξ̂` is negative. A light tail (a
    /// Weibull's, say) fitted at a finite threshold shows a negative `ξ̂` that moves towards 0
    /// at higher thresholds: the bounded GPD extrapolates too low (on a Weibull of shape 1.5,
    /// 24 exceedances where it predicted 9). The exponential is the conservative choice, the
    /// argument of MBPTA-CV (Abella et al. 2017); `Options::allow_bounded` keeps the GPD.
    Exponential,
}

/// The chosen threshold and the fit.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Model {
    /// Threshold, ns.
    pub threshold_ns: f64,
    /// Exceedances of it.
    pub exceedances: usize,
    /// Clusters (the fitted maxima).
    pub clusters: usize,
    /// Extremal index (clusters per exceedance, 1 without order).
    pub extremal_index: f64,
    /// The episode's definition: exceedances of the threshold at most this many wake-ups apart
    /// are one episode (a cluster; 0 without order: each exceedance its own).
    pub run_length: f64,
    /// Wake-ups above the threshold per episode, on average (exceedances / clusters).
    pub wakeups_per_episode: f64,
    /// Clusters per wake-up.
    pub cluster_rate: f64,
    /// The GPD of the cluster maxima's excesses, as fitted.
    pub gpd: gpd::Gpd,
    /// The tail the levels come from.
    pub shape: Shape,
    /// The likelihood-ratio statistic of `ξ = 0` against the fitted `ξ̂`.
    pub lr_exponential: f64,
    /// The estimated upper end of the latency (`None`: unbounded, `ξ ≥ 0`), ns.
    pub endpoint_ns: Option<f64>,
}

impl Model {
    /// The GPD `gpd` fitted to `c`, the clusters of threshold `u` at `rate` per wake-up, taken as
    /// fitted (shape [`Shape::Gpd`], no endpoint, no likelihood ratio).
    fn of(c: &threshold::Clusters, gpd: gpd::Gpd, u: f64, rate: f64) -> Model {
        Model {
            threshold_ns: u,
            exceedances: c.exceedances,
            clusters: c.maxima.len(),
            extremal_index: c.extremal_index,
            run_length: c.run_length,
            wakeups_per_episode: c.exceedances as f64 / c.maxima.len().max(1) as f64,
            cluster_rate: rate,
            gpd,
            shape: Shape::Gpd,
            lr_exponential: 0.0,
            endpoint_ns: None,
        }
    }
}

/// The whole answer for one thread.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Analysis {
    /// Observations.
    pub observations: u64,
    /// Largest observed, ns.
    pub observed_max_ns: f64,
    /// Confidence level of the intervals.
    pub confidence: f64,
    /// Significance level of the tests.
    pub alpha: f64,
    /// How binned values were treated (`None`: exact raw values).
    pub binning: Option<String>,
    /// The threshold-stability table, lowest threshold first.
    pub stability: Vec<Candidate>,
    /// The model (`None`: none could be chosen).
    pub model: Option<Model>,
    /// The diagnostics at the chosen threshold.
    pub diagnostics: Vec<Diagnostic>,
    /// Return levels per episode: with probability `p` per wake-up an episode starts whose
    /// maximum exceeds the level; the per-time levels (`once_per_s` of an hour, a day, …) are
    /// these at `p = 1 / (rate × time)` (empty when refused, unless shown as unreliable).
    pub levels: Vec<Level>,
    /// Return levels per wake-up at the asked probabilities: each wake-up exceeds the level with
    /// probability `p` (the marginal level: the episode level at `θ p`, `θ` the clusters per
    /// exceedance of the threshold, one over [`Model::wakeups_per_episode`]; Coles 2001, §5.3).
    pub wakeup_levels: Vec<Level>,
    /// The levels of `levels` and `wakeup_levels` computed but not given, and why: an open
    /// interval, beyond 100 × the observed maximum or beyond the measured time's reach
    /// ([`bounds`]).
    pub not_given: Vec<bounds::LevelNotGiven>,
    /// Why the estimate is refused (empty: accepted).
    pub refusals: Vec<Refusal>,
    /// Whether `levels` are shown although refused.
    pub unreliable: bool,
    /// Whether `levels` are shown because stationarity was assumed (`--assume-stationary`),
    /// not tested: labelled UNTESTED, and no gate passes on them.
    pub assumed_stationary: bool,
    /// The run's wake-ups per second (`None`: unknown), for the fixes of refusals in time.
    pub rate_hz: Option<f64>,
    /// The answers that do not assume one stationary tail (`None`: not asked, or the input has
    /// no time order or no rate).
    pub regimes: Option<regimes::Regimes>,
}

impl Analysis {
    /// A refusal before any fit: `observations` with the largest `max_ns`, refused for `why`.
    pub fn refused(observations: u64, max_ns: f64, why: Refusal, o: &Options) -> Analysis {
        Analysis {
            observations,
            observed_max_ns: max_ns,
            confidence: o.confidence,
            alpha: o.alpha,
            binning: None,
            stability: Vec::new(),
            model: None,
            diagnostics: Vec::new(),
            levels: Vec::new(),
            wakeup_levels: Vec::new(),
            not_given: Vec::new(),
            refusals: vec![why],
            unreliable: false,
            assumed_stationary: false,
            rate_hz: None,
            regimes: None,
        }
    }

    /// The analysis of `tail` before any fit: its facts and its thresholds' `stability`, no
    /// model, level or refusal yet.
    fn empty(tail: &Tail, o: &Options, stability: Vec<threshold::Candidate>) -> Analysis {
        Analysis {
            observations: tail.observations,
            observed_max_ns: tail.max,
            confidence: o.confidence,
            alpha: o.alpha,
            binning: tail.binning.clone(),
            stability,
            model: None,
            diagnostics: Vec::new(),
            levels: Vec::new(),
            wakeup_levels: Vec::new(),
            not_given: Vec::new(),
            refusals: Vec::new(),
            unreliable: false,
            assumed_stationary: false,
            rate_hz: tail.rate_hz,
            regimes: o.regimes.then(|| regimes::regimes(tail, o)).flatten(),
        }
    }

    /// Whether the estimate passed every test.
    pub fn accepted(&self) -> bool {
        self.refusals.is_empty()
    }
}

/// Analyses `tail`. With `unreliable`, the levels of a refused fit are kept (and marked).
pub fn analyse(tail: &Tail, o: &Options, unreliable: bool) -> Analysis {
    let mut desc: Vec<f64> = tail.points.iter().map(|p| p.value).collect();
    desc.sort_by(f64::total_cmp);
    desc.reverse();
    let have_values = distinct_top(tail, &desc);
    let thresholds = if have_values < bounds::MIN_DISTINCT {
        Vec::new()
    } else {
        threshold::candidates(&desc, tail.observations, o.min_clusters)
    };
    let stability = threshold::stability(&tail.points, &thresholds, o.min_clusters);
    let mut a = Analysis::empty(tail, o, stability);
    let have = a.stability.first().map_or(
        desc.len()
            .saturating_sub(1)
            .min((tail.observations / 10) as usize),
        |c| c.clusters,
    );
    // A short run is told to measure longer; a long one whose largest values take a handful
    // of values has no tail at all (a constant run): refused before any fit.
    if have >= o.min_clusters && have_values < bounds::MIN_DISTINCT {
        a.refusals.push(Refusal::NoTail {
            distinct: have_values,
            observed_max_ns: tail.max,
        });
        return a;
    }
    if have < o.min_clusters || a.stability.iter().all(|c| c.fit.is_none()) {
        a.refusals.push(Refusal::TooFewExceedances {
            have,
            need: o.min_clusters,
        });
        return a;
    }
    // Without a stable threshold, an unreliable estimate (asked for) uses the lowest fitted
    // candidate: the most data, and the label says what it is worth.
    // It gets no level (far::not_estimable), but its fit and diagnostics are shown.
    let lowest_fitted = a.stability.iter().position(|c| c.fit.is_some());
    let stable = threshold::choose(&a.stability);
    let chosen = match (stable, unreliable) {
        (Some(c), _) => c,
        (None, true) => {
            a.refusals.push(Refusal::NoStableThreshold);
            lowest_fitted.unwrap_or(0)
        }
        (None, false) => {
            a.refusals.push(Refusal::NoStableThreshold);
            a.refusals
                .extend(far::not_estimable(&a.stability, false, None, tail.max));
            return a;
        }
    };
    let u = a.stability[chosen].threshold;
    let clusters = threshold::decluster(&tail.points, u);
    let Some(fit) = gpd::fit(&clusters.maxima) else {
        a.refusals.push(Refusal::NoStableThreshold);
        return a;
    };
    let rate = clusters.maxima.len() as f64 / tail.observations as f64;
    let (used, shape, lr) = shape_of(&clusters.maxima, fit, o.allow_bounded);
    a.model = Some(Model {
        shape,
        lr_exponential: lr,
        endpoint_ns: used.gpd.endpoint().map(|e| u + e),
        ..Model::of(&clusters, fit.gpd, u, rate)
    });
    a.diagnostics = diagnostics(tail, u, &clusters, &fit, o);
    judge(&mut a, tail.max, stable.is_some());
    let fitted = Fitted {
        tail,
        clusters: &clusters,
        fit: &used,
        u,
        rate,
    };
    give_levels(&mut a, fitted, o, unreliable);
    a
}

/// The levels of `fitted` into `a`: when every test passed, or (marked) when the fit is
/// estimable and its levels were asked for anyway (`unreliable`) or only the stationarity
/// tests could not run and it is assumed (`--assume-stationary`).
fn give_levels(a: &mut Analysis, fitted: Fitted, o: &Options, unreliable: bool) {
    let assumed = o.assume_stationary
        && a.refusals
            .iter()
            .all(|r| matches!(r, Refusal::NotTested { .. }));
    let estimable = !a
        .refusals
        .iter()
        .any(|r| matches!(r, Refusal::NotEstimable { .. }));
    if a.refusals.is_empty() || (estimable && (unreliable || assumed)) {
        a.unreliable = !a.refusals.is_empty();
        a.assumed_stationary = a.unreliable && assumed;
        (a.levels, a.wakeup_levels, a.not_given) = both_levels(fitted, o);
    }
}

/// A tail fitted above threshold `u`: its clusters, the fit and the clusters' rate per
/// wake-up, what a level is estimated from.
#[derive(Clone, Copy)]
pub(crate) struct Fitted<'a> {
    pub(crate) tail: &'a Tail,
    pub(crate) clusters: &'a threshold::Clusters,
    pub(crate) fit: &'a gpd::Fit,
    pub(crate) u: f64,
    pub(crate) rate: f64,
}

/// The distinct values among the largest observations `desc` of `tail` (a binned input's
/// source bins: its values are spread over them), at most [`bounds::MIN_DISTINCT`] counted.
fn distinct_top(tail: &Tail, desc: &[f64]) -> usize {
    let top = desc.iter().take(threshold::MAX_EXCEEDANCES + 1);
    match tail.bins {
        Some(diag::Bins::Step { width }) if width > 0.0 => {
            bounds::distinct(top.map(|v| (v / width).floor()), bounds::MIN_DISTINCT)
        }
        _ => bounds::distinct(top.copied(), bounds::MIN_DISTINCT),
    }
}

/// The levels per episode (with the per-time ones) and per wake-up, and those not given.
fn both_levels(f: Fitted, o: &Options) -> (Vec<Level>, Vec<Level>, Vec<bounds::LevelNotGiven>) {
    let (tail, c) = (f.tail, f.clusters);
    let mut probs: Vec<(f64, f64, Option<f64>)> =
        o.probabilities.iter().map(|&p| (p, p, None)).collect();
    if let Some(hz) = tail.rate_hz {
        // Once an hour, a day, a year and ten years at the run's rate.
        probs.extend(
            PER_TIME_S
                .iter()
                .map(|s| (1.0 / (hz * s), 1.0 / (hz * s), Some(*s))),
        );
    }
    // Coles 2001, §5.3.2: θ as the clusters per exceedance of the threshold, so that a wake-up
    // exceeds a level as often as the episodes above it times their mean size.
    let theta = c.maxima.len() as f64 / c.exceedances.max(1) as f64;
    let wakeups = o
        .probabilities
        .iter()
        .map(|&p| (p, theta * p, None))
        .collect();
    let (episodes, mut not_given) = bounds::levels(f, o, probs);
    let (wakeup, more) = bounds::levels(f, o, wakeups);
    not_given.extend(more);
    (episodes, wakeup, not_given)
}

/// The refusals of a fitted analysis: its failed diagnostics, the tests that could not run
/// ([`far::untested`]) and a tail that allows no far-tail level ([`far::not_estimable`]; the
/// run's largest value `max`, whether the threshold was `stable`).
fn judge(a: &mut Analysis, max: f64, stable: bool) {
    for d in &a.diagnostics {
        if matches!(d.outcome, Outcome::Fail { .. }) {
            a.refusals.push(Refusal::Failed { test: d.test });
        }
    }
    a.refusals.extend(far::untested(&a.diagnostics));
    a.refusals.extend(far::not_estimable(
        &a.stability,
        stable,
        a.model.as_ref(),
        max,
    ));
}

/// The per-time levels' spans, s: an hour, a day, a year and ten years.
pub const PER_TIME_S: [f64; 4] = [3600.0, 86400.0, 365.25 * 86400.0, 3652.5 * 86400.0];

/// The exponential instead of a GPD with `ξ̂ < 0` unless `allow_bounded`; with the
/// likelihood-ratio statistic `2 (l̂ − l_exp)` of `ξ = 0` for the report.
pub(crate) fn shape_of(y: &[f64], fit: gpd::Fit, allow_bounded: bool) -> (gpd::Fit, Shape, f64) {
    match gpd::fit_exponential(y) {
        Some(e) => {
            let lr = 2.0 * (fit.log_likelihood - e.log_likelihood).max(0.0);
            if fit.gpd.xi < 0.0 && !allow_bounded {
                (e, Shape::Exponential, lr)
            } else {
                (fit, Shape::Gpd, lr)
            }
        }
        None => (fit, Shape::Gpd, 0.0),
    }
}

/// How many times the run's length would bring `upper` within `precision` of `estimate`
/// (1 or less: already). The interval's width on a log scale shrinks as one over the square
/// root of the clusters fitted, which grow with the run's length (the asymptotic rate of
/// maximum likelihood; Coles 2001, §2.6.4): a rough guide that assumes the tail stays as
/// measured, not a promise.
pub fn longer_for(estimate: f64, upper: f64, precision: f64) -> Option<f64> {
    let now = (upper / estimate).ln();
    let want = precision.ln_1p();
    (now > 0.0 && want > 0.0).then(|| (now / want).powi(2))
}

fn outcome(statistic: f64, p: f64, alpha: f64) -> Outcome {
    if p < alpha {
        Outcome::Fail { statistic, p }
    } else {
        Outcome::Pass { statistic, p }
    }
}

fn diagnostics(
    tail: &Tail,
    u: f64,
    c: &threshold::Clusters,
    fit: &gpd::Fit,
    o: &Options,
) -> Vec<Diagnostic> {
    let binned = tail.bins.map(|b| (u, b));
    let gof = diag::goodness_of_fit(&c.maxima, fit, o.replicates, o.seed, binned);
    let mut out = vec![
        Diagnostic {
            test: Test::FitKs,
            outcome: outcome(gof.ks, gof.ks_p, o.alpha),
        },
        Diagnostic {
            test: Test::FitAd,
            outcome: outcome(gof.ad, gof.ad_p, o.alpha),
        },
    ];
    let ordered = [
        Test::Independence,
        Test::Arrivals,
        Test::SameTail,
        Test::SameRate,
    ];
    if !tail.ordered {
        for test in ordered {
            out.push(Diagnostic {
                test,
                outcome: Outcome::Untested {
                    why: "a histogram keeps no time order".into(),
                },
            });
        }
        return out;
    }
    let h = (c.maxima.len() / 5).clamp(1, 10);
    let (q, p) = diag::ljung_box(&c.maxima, h);
    let (d, pa) = diag::arrivals(&c.gaps, o.replicates, o.seed ^ 1);
    let half = tail.observations / 2;
    let in_first = c.starts.iter().take_while(|&&s| s < half).count();
    let (first, second) = c.maxima.split_at(in_first);
    let (dk, pk) = diag::ks_two_sample(first, second);
    let share = half as f64 / tail.observations as f64;
    let pr = diag::share_p(in_first, c.maxima.len(), share);
    for (test, s, p) in [
        (Test::Independence, q, p),
        (Test::Arrivals, d, pa),
        (Test::SameTail, dk, pk),
        (Test::SameRate, in_first as f64, pr),
    ] {
        out.push(Diagnostic {
            test,
            outcome: outcome(s, p, o.alpha),
        });
    }
    out
}

/// The p-value of the likelihood ratio `lr` of `ξ = 0` against a fitted `ξ` (χ² with 1
/// degree): below the significance level the data reject the unbounded (exponential) tail.
pub fn bounded_p(lr: f64) -> f64 {
    use statrs::distribution::{ChiSquared, ContinuousCDF};
    ChiSquared::new(1.0).map_or(f64::NAN, |c| 1.0 - c.cdf(lr.max(0.0)))
}
