//! Kernel functions whose charged time changed between groups: the stock-vs-RT question
//! answered down to the function (issue 53, docs/compare.md "Kernel functions").
//!
//! A run explained with kernel stacks (`measure --explain DUR --explain-stacks on`, `noise
//! --explain`) stores the time by kernel function over every traced spike with a stack
//! (`functions` of its explanation summary, rtscope-explain's `FunctionTime`). Per group, a
//! function's time is summed over the runs with stacks and divided by their exposure — per
//! million measured wake-ups for latency runs, per second of the loop's runtime for noise runs
//! — and given as its share of the group's traced spike time. Against the baseline, each
//! function's per-run rates (0 in a run with stacks that never named it: a real zero) are
//! ranked by the same stratified Mann–Whitney test as the statistics
//! ([`super::significance`], its minimum-runs rule: with too few runs it is *not tested*,
//! never significant), the p-values adjusted by Holm's method over the candidate's functions
//! (a list of many functions tested at 5 % each would find some change by chance).
//!
//! A run took kernel stacks when it asked for them (`--explain-stacks on` or `auto` on its
//! command line; `noise --explain` always does) or, stored before stacks were off by default,
//! when a kept spike carries one. Function rows of a run that took none name handlers only
//! (timer callbacks such as `tcp_delack_timer`, tasklets, IPI function calls): they are no
//! kernel stacks, and the run counts as explained without them.
//!
//! A run without stacks (explained without them, stacks asked for but none taken, or not
//! explained) is left out and named, never counted as zero. The comparison by function is
//! made only between groups that both took stacks: a group without any is not compared and
//! is said in one line (with how to take them, where its runs' command line could ask), and
//! when no group took any there is nothing to say. The listing is informative: it never
//! changes the verdict or the exit code.

use super::group::Group;
use super::model::RunData;
use super::significance::{van_elteren, Test, ALPHA};
use super::strata::Pairing;
use rtscope_explain::stack::FunctionTime;
use rtscope_explain::tally::OTHER_FUNCTIONS;
use rtscope_report::group::Key;
use rtscope_store::{ExplainedRun, RunId, RunKind};
use std::collections::{BTreeMap, HashMap};

/// Function rows read from one run's summary at most; more (only a damaged or foreign store
/// has them: the explainer keeps 256 names) are summed into [`OTHER_FUNCTIONS`].
pub const MAX_READ: usize = 1024;

/// What an explained run stored about kernel stacks (a run not explained has none: it is
/// absent from the map compare loads).
#[derive(Debug, Clone, PartialEq)]
pub enum RunStacks {
    /// Explained without kernel stacks (`--explain-stacks` not on).
    NotAsked,
    /// Stacks asked for, but none of its traced spikes got one (the kernel could not take
    /// them: the run's tier line said why): its time by function is unknown, not zero.
    NoneTaken {
        /// Traced spikes.
        traced: u64,
    },
    /// Its summary could not be read.
    Unreadable(String),
    /// Time by kernel function over its traced spikes with a stack.
    Stacks {
        /// The functions, as stored (at most [`MAX_READ`] rows; names untrusted).
        functions: Vec<FunctionTime>,
        /// Latency of its traced spikes (ns), with a stack or not.
        traced_ns: u64,
        /// Its `--explain` threshold (ns): only spikes above it are charged.
        threshold_ns: u64,
    },
}

/// The part of a stored explanation summary read here (the rest is skipped unparsed).
#[derive(serde::Deserialize)]
struct Stored {
    #[serde(default)]
    functions: Vec<FunctionTime>,
    #[serde(default)]
    counts: Option<StoredCounts>,
    #[serde(default)]
    worst: Vec<StoredSpike>,
}

/// A kept spike: only whether it carries a kernel stack.
#[derive(serde::Deserialize)]
struct StoredSpike {
    #[serde(default)]
    stack: Option<serde::de::IgnoredAny>,
}

#[derive(serde::Deserialize)]
struct StoredCounts {
    #[serde(default)]
    traced: u64,
    #[serde(default)]
    traced_ns: u64,
}

impl RunStacks {
    /// What `e`'s summary says; `kind` is its run's (noise explains with stacks always).
    pub fn of(e: &ExplainedRun, kind: RunKind) -> RunStacks {
        let stored: Stored = match serde_json::from_str(&e.summary.summary) {
            Ok(s) => s,
            Err(err) => return RunStacks::Unreadable(err.to_string()),
        };
        let (traced, traced_ns) = stored.counts.map_or((0, 0), |c| (c.traced, c.traced_ns));
        let asked = kind == RunKind::Noise || stacks_asked(&e.command_line_json);
        // Stored before stacks were off by default: taken without being asked for.
        let kept_one = stored.worst.iter().any(|w| w.stack.is_some());
        if !asked && !kept_one {
            // Rows, if any, name handlers only (timer callbacks, tasklets): no kernel stack.
            return RunStacks::NotAsked;
        }
        if stored.functions.is_empty() {
            return match traced {
                // Asked and nothing traced: no spike to charge, every function's time is 0.
                0 => RunStacks::Stacks {
                    functions: Vec::new(),
                    traced_ns: 0,
                    threshold_ns: e.summary.threshold_ns,
                },
                traced => RunStacks::NoneTaken { traced },
            };
        }
        RunStacks::Stacks {
            functions: bounded(stored.functions),
            traced_ns,
            threshold_ns: e.summary.threshold_ns,
        }
    }
}

/// Whether a command line (JSON array) asked for kernel stacks (`--explain-stacks on` or
/// `auto`, the last one given).
fn stacks_asked(command_line_json: &str) -> bool {
    let args: Vec<String> = serde_json::from_str(command_line_json).unwrap_or_default();
    let mut asked = false;
    for (i, a) in args.iter().enumerate() {
        let value = match a.strip_prefix("--explain-stacks") {
            Some("") => args.get(i + 1).map(String::as_str),
            Some(v) => v.strip_prefix('='),
            None => None,
        };
        if let Some(v) = value {
            asked = matches!(v, "on" | "auto");
        }
    }
    asked
}

/// At most [`MAX_READ`] rows, the rest summed into [`OTHER_FUNCTIONS`] (never dropped).
fn bounded(mut rows: Vec<FunctionTime>) -> Vec<FunctionTime> {
    if rows.len() <= MAX_READ {
        return rows;
    }
    let rest = rows.split_off(MAX_READ - 1);
    rows.push(FunctionTime {
        function: OTHER_FUNCTIONS.to_string(),
        ns: rest.iter().fold(0u64, |a, r| a.saturating_add(r.ns)),
        spikes: rest.iter().fold(0u64, |a, r| a.saturating_add(r.spikes)),
    });
    rows
}

/// What the rates are per: latency runs per million measured wake-ups, noise runs per second
/// of runtime.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exposure {
    /// Per 10⁶ wake-ups (deadlines: samples and missed).
    Wakeups,
    /// Per second of the loop's runtime.
    Runtime,
}

impl Exposure {
    fn of(groups: &[Group]) -> Exposure {
        let noise = groups
            .iter()
            .flat_map(|g| &g.runs)
            .any(|r| r.kind == RunKind::Noise);
        if noise {
            Exposure::Runtime
        } else {
            Exposure::Wakeups
        }
    }

    /// A run's exposure in this unit (`None`: unknown or none).
    fn units(self, r: &RunData) -> Option<f64> {
        let v = match self {
            Exposure::Wakeups => r.totals.deadlines as f64 / 1e6,
            Exposure::Runtime => r.noise?.runtime_ns as f64 / 1e9,
        };
        (v > 0.0).then_some(v)
    }

    /// The unit as shown: `1M wake-ups`, `s of runtime`.
    pub fn unit(self) -> &'static str {
        match self {
            Exposure::Wakeups => "1M wake-ups",
            Exposure::Runtime => "s of runtime",
        }
    }

    /// The unit's name in JSON.
    pub fn json_name(self) -> &'static str {
        match self {
            Exposure::Wakeups => "per_million_wakeups",
            Exposure::Runtime => "per_second_of_runtime",
        }
    }
}

/// Why a run of a group is left out of the comparison by function.
#[derive(Debug, Clone, PartialEq)]
pub enum LeftOut {
    /// Not explained.
    NotExplained,
    /// Explained without kernel stacks.
    NotAsked,
    /// Stacks asked for, none taken.
    NoneTaken,
    /// Summary unreadable.
    Unreadable,
    /// With stacks, but no wake-ups (runtime) to divide by.
    NoExposure,
}

impl LeftOut {
    /// How a run left out is described.
    pub fn describe(&self) -> &'static str {
        match self {
            LeftOut::NotExplained => "not explained",
            LeftOut::NotAsked => "explained without kernel stacks",
            LeftOut::NoneTaken => "stacks asked for, none taken",
            LeftOut::Unreadable => "explanation unreadable",
            LeftOut::NoExposure => "nothing to divide by (no wake-ups or runtime recorded)",
        }
    }

    /// Its name in JSON.
    pub fn json_name(&self) -> &'static str {
        match self {
            LeftOut::NotExplained => "not_explained",
            LeftOut::NotAsked => "no_stacks",
            LeftOut::NoneTaken => "stacks_not_taken",
            LeftOut::Unreadable => "unreadable",
            LeftOut::NoExposure => "no_exposure",
        }
    }
}

/// One group's runs with kernel stacks and those left out.
#[derive(Debug, Clone)]
pub struct Coverage {
    /// The group's name.
    pub group: String,
    /// Its selector as typed (untrusted).
    pub selector: String,
    /// Runs compared by function.
    pub with_stacks: Vec<RunId>,
    /// Runs left out, and why.
    pub left_out: Vec<(RunId, LeftOut)>,
    /// Latency of the traced spikes of the runs with stacks (ns).
    pub traced_ns: u64,
    /// Of it, the time charged to some function (ns).
    pub function_ns: u64,
    /// Exposure of the runs with stacks, in [`Exposure`] units.
    pub exposure: f64,
    /// The distinct `--explain` thresholds of the runs with stacks (ns), smallest first.
    pub thresholds_ns: Vec<u64>,
    /// Whether a run left out is a `measure` run outside a campaign that took no stacks
    /// because it did not ask (or was not explained): `--explain DUR --explain-stacks on` on
    /// its command line would take them. A campaign file cannot ask for them.
    pub askable: bool,
}

impl Coverage {
    /// Whether some run of the group took kernel stacks.
    pub fn took_stacks(&self) -> bool {
        !self.with_stacks.is_empty()
    }
}

/// A function's time in one group.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GroupTime {
    /// Summed over the group's runs with stacks (ns).
    pub ns: u64,
    /// Spikes it was the function of.
    pub spikes: u64,
    /// Per exposure unit (ns).
    pub rate: f64,
    /// Share of the group's traced spike time (0–1), when it has any.
    pub share: Option<f64>,
}

/// A function's decidable test, with its p-value adjusted for the candidate's other
/// functions (Holm's step-down: a list of 50 functions tested at 5 % each would call some
/// change significant by chance).
#[derive(Debug, Clone, PartialEq)]
pub struct Tested {
    /// The stratified Mann–Whitney test of the per-run rates.
    pub test: Test,
    /// Its p-value adjusted by Holm's method over the candidate's decidable tests.
    pub holm_p: f64,
    /// How many decidable tests the adjustment is over.
    pub tests: usize,
}

/// Whether a function's change is beyond run-to-run noise.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Significantly higher in the candidate (Holm-adjusted p < 0.05).
    Higher(Tested),
    /// Significantly lower in the candidate.
    Lower(Tested),
    /// The per-run rates overlap (adjusted p ≥ 0.05).
    NotSignificant(Tested),
    /// Too few runs for any outcome to be significant (`3 vs 2`), or no stratum in common.
    NotTested(Option<Test>),
}

impl Outcome {
    /// Whether the change is significant.
    pub fn significant(&self) -> bool {
        matches!(self, Outcome::Higher(_) | Outcome::Lower(_))
    }

    /// The outcome as text: `higher (p=0.008, Holm 0.016)`, `not tested: too few runs (n=3
    /// per side)`.
    pub fn text(&self) -> String {
        let p = |t: &Tested| format!("p={:.3}, Holm {:.3}", t.test.p, t.holm_p);
        match self {
            Outcome::Higher(t) => format!("higher ({})", p(t)),
            Outcome::Lower(t) => format!("lower ({})", p(t)),
            Outcome::NotSignificant(t) => format!("no significant difference ({})", p(t)),
            Outcome::NotTested(Some(t)) => {
                format!("not tested: too few runs (n={})", t.runs_text())
            }
            Outcome::NotTested(None) => "not tested: no stratum in common".into(),
        }
    }

    /// Its word in JSON.
    pub fn word(&self) -> &'static str {
        match self {
            Outcome::Higher(_) => "higher",
            Outcome::Lower(_) => "lower",
            Outcome::NotSignificant(_) => "no significant difference",
            Outcome::NotTested(_) => "not tested",
        }
    }

    /// The test, when one ran.
    pub fn test(&self) -> Option<&Test> {
        match self {
            Outcome::Higher(t) | Outcome::Lower(t) | Outcome::NotSignificant(t) => Some(&t.test),
            Outcome::NotTested(t) => t.as_ref(),
        }
    }

    /// The Holm-adjusted p-value, when the test could decide.
    pub fn holm_p(&self) -> Option<f64> {
        match self {
            Outcome::Higher(t) | Outcome::Lower(t) | Outcome::NotSignificant(t) => Some(t.holm_p),
            Outcome::NotTested(_) => None,
        }
    }
}

/// One function of a candidate against the baseline.
#[derive(Debug, Clone, PartialEq)]
pub struct FunctionRow {
    /// The function (untrusted: from kallsyms; escape at output).
    pub function: String,
    /// In the baseline.
    pub base: GroupTime,
    /// In the candidate.
    pub cand: GroupTime,
    /// Candidate rate − baseline rate (ns per unit).
    pub change: f64,
    /// Whether the function appeared (`new`), disappeared (`gone`) or is in both.
    pub presence: Presence,
    /// The test of its per-run rates.
    pub outcome: Outcome,
}

/// Where a function was charged time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Presence {
    /// In both groups.
    Both,
    /// Only in the candidate.
    New,
    /// Only in the baseline.
    Gone,
}

impl Presence {
    /// `new`, `gone`, or empty.
    pub fn word(self) -> &'static str {
        match self {
            Presence::Both => "",
            Presence::New => "new",
            Presence::Gone => "gone",
        }
    }
}

/// One candidate's functions against the baseline.
#[derive(Debug, Clone)]
pub struct Candidate {
    /// The candidate group's name.
    pub group: String,
    /// Every function of either side, by absolute change, largest first (ties by name);
    /// empty when a side has no run with stacks.
    pub rows: Vec<FunctionRow>,
    /// Whether both sides have runs with stacks (else nothing is compared).
    pub compared: bool,
}

/// The comparison by kernel function.
#[derive(Debug, Clone)]
pub struct FunctionComparison {
    /// What the rates are per.
    pub exposure: Exposure,
    /// Each group's runs with stacks and those left out.
    pub coverage: Vec<Coverage>,
    /// Each candidate (2nd group on) against the baseline.
    pub candidates: Vec<Candidate>,
}

impl FunctionComparison {
    /// Whether the runs with stacks were explained at more than one threshold (a function's
    /// time counts only the spikes above its run's threshold).
    pub fn thresholds_differ(&self) -> bool {
        let mut all = self.coverage.iter().flat_map(|c| &c.thresholds_ns);
        all.next().is_some_and(|first| all.any(|t| t != first))
    }

    /// Whether some candidate is compared with the baseline (both took kernel stacks): the
    /// block of functions is shown only then.
    pub fn compared(&self) -> bool {
        self.candidates.iter().any(|c| c.compared)
    }

    /// The comparison of `groups` by function, from what each run stored (`stacks`, by run
    /// id; a run absent was not explained); runs matched by stratum under `keys` for the
    /// test. `None` when no run of any group took kernel stacks (nothing both sides measured).
    pub fn new(
        groups: &[Group],
        stacks: &HashMap<RunId, RunStacks>,
        keys: &[Key],
    ) -> Option<FunctionComparison> {
        let exposure = Exposure::of(groups);
        let sides: Vec<GroupSide> = groups
            .iter()
            .map(|g| GroupSide::of(g, stacks, exposure))
            .collect();
        if !sides.iter().any(|s| s.coverage.took_stacks()) {
            return None;
        }
        let candidates = sides[1..]
            .iter()
            .map(|c| candidate(&sides[0], c, keys))
            .collect();
        Some(FunctionComparison {
            exposure,
            coverage: sides.into_iter().map(|s| s.coverage).collect(),
            candidates,
        })
    }
}

/// A run's time (ns) and spikes by function name.
type ByName<'a> = BTreeMap<&'a str, (u64, u64)>;

/// A group's runs with stacks: each run's time by function (summed by name) and exposure.
struct GroupSide<'a> {
    coverage: Coverage,
    runs: Vec<(&'a RunData, ByName<'a>, f64)>,
}

impl<'a> GroupSide<'a> {
    fn of(g: &'a Group, stacks: &'a HashMap<RunId, RunStacks>, exposure: Exposure) -> Self {
        let mut s = GroupSide {
            coverage: Coverage {
                group: g.name.clone(),
                selector: g.selector.clone(),
                with_stacks: Vec::new(),
                left_out: Vec::new(),
                traced_ns: 0,
                function_ns: 0,
                exposure: 0.0,
                thresholds_ns: Vec::new(),
                askable: false,
            },
            runs: Vec::new(),
        };
        for r in &g.runs {
            let why = match stacks.get(&r.id) {
                None => LeftOut::NotExplained,
                Some(RunStacks::NotAsked) => LeftOut::NotAsked,
                Some(RunStacks::NoneTaken { .. }) => LeftOut::NoneTaken,
                Some(RunStacks::Unreadable(_)) => LeftOut::Unreadable,
                Some(RunStacks::Stacks {
                    functions,
                    traced_ns,
                    threshold_ns,
                }) => match exposure.units(r) {
                    None => LeftOut::NoExposure,
                    Some(units) => {
                        s.add(r, functions, *traced_ns, units);
                        let t = &mut s.coverage.thresholds_ns;
                        if !t.contains(threshold_ns) {
                            t.push(*threshold_ns);
                            t.sort();
                        }
                        continue;
                    }
                },
            };
            let unasked = matches!(why, LeftOut::NotExplained | LeftOut::NotAsked);
            s.coverage.askable |= unasked && r.kind == RunKind::Measure && r.campaign.is_none();
            s.coverage.left_out.push((r.id, why));
        }
        s
    }

    fn add(&mut self, r: &'a RunData, functions: &'a [FunctionTime], traced_ns: u64, units: f64) {
        let mut by_name: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
        for f in functions {
            let e = by_name.entry(f.function.as_str()).or_default();
            e.0 = e.0.saturating_add(f.ns);
            e.1 = e.1.saturating_add(f.spikes);
        }
        let charged = by_name.values().fold(0u64, |a, v| a.saturating_add(v.0));
        let c = &mut self.coverage;
        c.with_stacks.push(r.id);
        // A summary recorded before traced_ns was counted has 0: its functions' time stands in.
        c.traced_ns = c.traced_ns.saturating_add(traced_ns.max(charged));
        c.function_ns = c.function_ns.saturating_add(charged);
        c.exposure += units;
        self.runs.push((r, by_name, units));
    }

    /// The runs with stacks.
    fn run_refs(&self) -> Vec<&'a RunData> {
        self.runs.iter().map(|(r, _, _)| *r).collect()
    }

    /// `function`'s time in this group.
    fn side(&self, function: &str) -> GroupTime {
        let (ns, spikes) = self.runs.iter().fold((0u64, 0u64), |(ns, n), (_, m, _)| {
            let (a, b) = m.get(function).copied().unwrap_or_default();
            (ns.saturating_add(a), n.saturating_add(b))
        });
        let c = &self.coverage;
        GroupTime {
            ns,
            spikes,
            rate: if c.exposure > 0.0 {
                ns as f64 / c.exposure
            } else {
                0.0
            },
            share: (c.traced_ns > 0).then(|| ns as f64 / c.traced_ns as f64),
        }
    }

    /// `function`'s rate in each of `runs` (ns per unit; 0 where a run never named it).
    fn rates(&self, runs: &[&RunData], function: &str) -> Vec<f64> {
        runs.iter()
            .filter_map(|r| self.runs.iter().find(|(x, _, _)| x.id == r.id))
            .map(|(_, m, units)| m.get(function).map_or(0.0, |v| v.0 as f64 / units))
            .collect()
    }
}

/// A candidate's functions against the baseline, ranked by absolute change.
fn candidate(base: &GroupSide, cand: &GroupSide, keys: &[Key]) -> Candidate {
    let group = cand.coverage.group.clone();
    if base.runs.is_empty() || cand.runs.is_empty() {
        return Candidate {
            group,
            rows: Vec::new(),
            compared: false,
        };
    }
    let names: std::collections::BTreeSet<&str> = base
        .runs
        .iter()
        .chain(&cand.runs)
        .flat_map(|(_, m, _)| m.keys().copied())
        .collect();
    let (base_runs, cand_runs) = (base.run_refs(), cand.run_refs());
    let pairing = Pairing::new(keys, &base_runs, &cand_runs);
    let names: Vec<&str> = names.into_iter().collect();
    let tests: Vec<Option<Test>> = names
        .iter()
        .map(|f| test(&pairing, base, cand, f))
        .collect();
    let outcomes = outcomes(tests);
    let mut rows: Vec<FunctionRow> = names
        .into_iter()
        .zip(outcomes)
        .map(|(f, outcome)| {
            let (b, c) = (base.side(f), cand.side(f));
            let presence = match (b.ns > 0 || b.spikes > 0, c.ns > 0 || c.spikes > 0) {
                (false, true) => Presence::New,
                (true, false) => Presence::Gone,
                _ => Presence::Both,
            };
            FunctionRow {
                function: f.to_string(),
                change: c.rate - b.rate,
                outcome,
                base: b,
                cand: c,
                presence,
            }
        })
        .collect();
    rows.sort_by(|a, b| {
        b.change
            .abs()
            .total_cmp(&a.change.abs())
            .then_with(|| a.function.cmp(&b.function))
    });
    Candidate {
        group,
        rows,
        compared: true,
    }
}

/// The stratified rank test of `function`'s per-run rates (`None`: no stratum in common).
fn test(pairing: &Pairing, base: &GroupSide, cand: &GroupSide, function: &str) -> Option<Test> {
    let strata: Vec<(Vec<f64>, Vec<f64>)> = pairing
        .matched
        .iter()
        .map(|(_, b, c)| (base.rates(b, function), cand.rates(c, function)))
        .collect();
    van_elteren(&strata)
}

/// Each test's outcome: not tested when its design cannot reach p < 0.05; else significant
/// when its p-value, adjusted by Holm's step-down method over the decidable tests, is below
/// [`ALPHA`] (the k-th smallest of m p-values times m − k + 1, never below an earlier one).
fn outcomes(tests: Vec<Option<Test>>) -> Vec<Outcome> {
    let mut decidable: Vec<(usize, f64)> = tests
        .iter()
        .enumerate()
        .filter_map(|(i, t)| t.as_ref().filter(|t| t.decidable()).map(|t| (i, t.p)))
        .collect();
    decidable.sort_by(|a, b| a.1.total_cmp(&b.1));
    let m = decidable.len();
    let mut holm = vec![1.0; tests.len()];
    let mut running: f64 = 0.0;
    for (k, &(i, p)) in decidable.iter().enumerate() {
        running = running.max((p * (m - k) as f64).min(1.0));
        holm[i] = running;
    }
    tests
        .into_iter()
        .zip(holm)
        .map(|(t, holm_p)| match t {
            None => Outcome::NotTested(None),
            Some(test) if !test.decidable() => Outcome::NotTested(Some(test)),
            Some(test) => {
                // U above its mean (half of the pairs): the candidate's rates rank higher.
                let mean: f64 = test.sizes.iter().map(|(b, c)| (b * c) as f64 / 2.0).sum();
                let higher = test.u > mean;
                let t = Tested {
                    test,
                    holm_p,
                    tests: m,
                };
                match (holm_p < ALPHA, higher) {
                    (false, _) => Outcome::NotSignificant(t),
                    (true, true) => Outcome::Higher(t),
                    (true, false) => Outcome::Lower(t),
                }
            }
        })
        .collect()
}

#[cfg(test)]
#[path = "functions_tests.rs"]
mod tests;
