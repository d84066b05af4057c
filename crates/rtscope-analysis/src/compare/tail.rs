//! The groups' tail levels compared (`compare --tail-level P`, docs/compare.md): the latency
//! exceeded with probability `P` per wake-up, estimated as `rtscope tail` does (rtscope-evt)
//! from each group's merged histogram, and judged by the one verdict rule
//! ([`Thresholds::decide_by`]) with the intervals as the test: a rise beyond the threshold
//! whose intervals do not overlap is a `REGRESSION`; overlapping intervals are `no significant
//! difference` (the two cannot be told apart); an interval the data do not bound above leaves
//! the verdict `untested`. A group whose estimate is refused gets no verdict (`n/a`), and its
//! refusal is named — unless all its runs kept raw samples (`--raw`): then it gets the
//! worst-segment envelope of `rtscope tail` (rtscope-evt's `envelope`), the largest of its runs'
//! threads' levels, and verdicts on it are untested (no stationary tail's level).
//!
//! A merged histogram keeps no time order, so its stationarity cannot be tested: every level is
//! refused (`not tested for stationarity`) unless `--assume-stationary` asks for it, and then
//! every verdict rests on that assumption (`untested`: a rise is `higher`, a fall `lower`, a
//! rise failing only with `--fail-untested`; nothing passes as tested). A heavy or unstable tail gets no level at all,
//! by the rule `rtscope tail` follows ([`rtscope_evt::far::not_estimable`], applied in
//! [`rtscope_evt::analyse`]).

use super::change::Change;
use super::group::Group;
use super::model::Merged;
use super::verdict::{delta_pct, Basis, Thresholds, Verdict};
use rtscope_evt::regimes::{regimes, Answer};
use rtscope_evt::units::us;
use rtscope_evt::{Level, Options, Refusal};
use rtscope_store::{Store, StoreError};
use std::fmt::Write;

/// One group's tail at the probability.
#[derive(Debug, Clone, PartialEq)]
pub enum Side {
    /// The level with its interval.
    Level(Level),
    /// One stationary tail refused (the merged histogram keeps no time order), the worst-segment
    /// envelope of the group's `--raw` runs instead ([`envelope`]): the largest of its runs'
    /// threads' levels, where it comes from, and the merged histogram's refusals.
    Envelope {
        /// The level per wake-up.
        level: Level,
        /// `run 3, CPU 1, segment 6's values` (or `… the fit`).
        from: String,
        /// Why the merged histogram gives no level.
        refused: Vec<Refusal>,
    },
    /// No estimate, and why (`rtscope tail`'s refusals).
    Refused(Vec<Refusal>),
    /// The probability lies within the measured data: nothing to extrapolate (the percentiles
    /// of the table say it).
    Within,
}

/// The tail row of a comparison.
#[derive(Debug, Clone)]
pub struct TailRow {
    /// Exceedance probability per wake-up.
    pub probability: f64,
    /// Confidence level of the intervals.
    pub confidence: f64,
    /// Whether stationarity was assumed (`--assume-stationary`): the levels are untested.
    pub assumed_stationary: bool,
    /// Per group, in order.
    pub sides: Vec<Side>,
    /// Per candidate against the baseline (`delta` in ns; `test` is always `None`: the
    /// intervals decide).
    pub changes: Vec<Change>,
}

impl TailRow {
    /// The tail levels of `groups` at `probability` and each candidate's verdict; with
    /// `assume_stationary`, the levels of the untested histograms too (their verdicts untested).
    pub fn new(
        groups: &[Group],
        probability: f64,
        t: &Thresholds,
        assume_stationary: bool,
    ) -> TailRow {
        let o = Options {
            probabilities: vec![probability],
            assume_stationary,
            ..Options::default()
        };
        let sides: Vec<Side> = groups.iter().map(|g| side(&g.merged, &o)).collect();
        let changes = sides[1..]
            .iter()
            .map(|c| change(t, &sides[0], c, assume_stationary))
            .collect();
        TailRow {
            probability,
            confidence: o.confidence,
            assumed_stationary: assume_stationary,
            sides,
            changes,
        }
    }
}

/// A group's tail level at the single probability of `o`, from its merged histogram (the runs'
/// wake-ups as one sample; a histogram keeps no time order, so the tests that need it are
/// untested, as for `rtscope tail` on a run without `--raw`).
pub fn side(m: &Merged, o: &Options) -> Side {
    let placed = m.totals.hist.count();
    let refused = |why: Refusal| Side::Refused(vec![why]);
    if m.missing_hist || placed == 0 {
        return refused(Refusal::NoDistribution);
    }
    if let Some(floor_ns) = m.overflow_floor {
        let count = m.totals.samples.saturating_sub(placed);
        return refused(Refusal::BeyondHistogram { count, floor_ns });
    }
    let bins: Vec<(u64, u64, u64)> = m
        .totals
        .hist
        .buckets()
        .map(|(lo, w, c)| (lo.0, w.0, c))
        .collect();
    let Some(tail) = rtscope_evt::input::from_bins(&bins, None, None) else {
        return refused(Refusal::NoDistribution);
    };
    let a = rtscope_evt::analyse(&tail, o, false);
    if !a.accepted() && !a.assumed_stationary {
        return Side::Refused(a.refusals);
    }
    // The level per wake-up (a merged histogram has no episodes to tell apart: the same number
    // as per episode, θ = 1).
    a.wakeup_levels
        .into_iter()
        .next()
        .map_or(Side::Within, Side::Level)
}

impl Side {
    /// The level, of a stationary tail or an envelope.
    pub fn level(&self) -> Option<&Level> {
        match self {
            Side::Level(l) | Side::Envelope { level: l, .. } => Some(l),
            Side::Refused(_) | Side::Within => None,
        }
    }
}

impl TailRow {
    /// Each refused group whose runs all kept raw samples (`--raw`) gets the worst-segment
    /// envelope at the row's probability, as `rtscope tail` answers where one stationary tail is
    /// refused; the verdicts are judged again (untested where an envelope is in them).
    pub fn with_envelopes(
        mut self,
        store: &Store,
        groups: &[Group],
        t: &Thresholds,
    ) -> Result<TailRow, StoreError> {
        for (side, g) in self.sides.iter_mut().zip(groups) {
            if let Side::Refused(refused) = side {
                if let Some((level, from)) = envelope(store, g, self.probability)? {
                    let refused = std::mem::take(refused);
                    *side = Side::Envelope {
                        level,
                        from,
                        refused,
                    };
                }
            }
        }
        self.changes = self.sides[1..]
            .iter()
            .map(|c| change(t, &self.sides[0], c, self.assumed_stationary))
            .collect();
        Ok(self)
    }
}

/// The worst-segment envelope of group `g` at `p`: of every thread of every run, the level of
/// the highest estimate (its bounds the largest of all: the worst is not known to be that one),
/// and where it comes from. `None` when some run has no raw samples or no thread gives a level.
pub fn envelope(store: &Store, g: &Group, p: f64) -> Result<Option<(Level, String)>, StoreError> {
    let o = Options {
        probabilities: vec![p],
        regimes: true,
        ..Options::default()
    };
    let mut all = Vec::new();
    for r in &g.runs {
        let detail = store.run(r.id)?;
        if detail.raw_samples == 0 {
            return Ok(None);
        }
        for t in &detail.threads {
            let Ok(tail) = rtscope_evt::input::from_store(store, &detail, t) else {
                return Ok(None);
            };
            let Some(Answer::Given(e)) = regimes(&tail, &o).map(|r| r.envelope) else {
                continue;
            };
            let who = t
                .cpu
                .map_or(format!("thread {}", t.thread), |c| format!("CPU {c}"));
            for w in e.levels {
                let from = w
                    .from_segment
                    .map_or("the fit".to_string(), |s| format!("segment {s}'s values"));
                all.push((w.level, format!("run {}, {who}, {from}", r.id)));
            }
        }
    }
    let Some(i) =
        (0..all.len()).max_by(|&a, &b| all[a].0.estimate_ns.total_cmp(&all[b].0.estimate_ns))
    else {
        return Ok(None);
    };
    let lower = all.iter().map(|l| l.0.lower_ns).fold(f64::MIN, f64::max);
    let upper = all
        .iter()
        .try_fold(0.0, |m: f64, l| l.0.upper_ns.map(|u| m.max(u)));
    let (mut level, from) = all.swap_remove(i);
    level.lower_ns = lower.min(level.estimate_ns);
    level.upper_ns = upper;
    Ok(Some((level, from)))
}

/// A candidate's level against the baseline's: the threshold on the estimates, then the
/// intervals in place of the significance test; `assumed`: the levels' stationarity was
/// assumed, not tested, so the verdict is untested whatever the intervals say.
pub fn change(t: &Thresholds, base: &Side, cand: &Side, assumed: bool) -> Change {
    let (Some(b), Some(c)) = (base.level(), cand.level()) else {
        return Change {
            delta: None,
            delta_pct: None,
            verdict: Verdict::Unknown,
            basis: Basis::Tested,
            threshold_verdict: Verdict::Unknown,
            test: None,
        };
    };
    let (bn, cn) = (b.estimate_ns.round() as u64, c.estimate_ns.round() as u64);
    let threshold = t.judge_latency(bn, cn);
    // Unbounded above on either side: no rise can be told from the baseline's interval, and
    // no fall from the candidate's: the data cannot decide (measure longer).
    // An envelope is no stationary tail's level: its verdicts are untested too.
    let envelope = matches!(base, Side::Envelope { .. }) || matches!(cand, Side::Envelope { .. });
    let basis = match (b.upper_ns, c.upper_ns) {
        (Some(_), Some(_)) if !assumed && !envelope => Basis::Tested,
        _ => Basis::Untested,
    };
    let apart = disjoint(b, c);
    Change {
        delta: Some(i128::from(cn) - i128::from(bn)),
        delta_pct: delta_pct(bn, cn),
        verdict: t.decide_by(threshold, basis, apart),
        basis,
        threshold_verdict: threshold,
        test: None,
    }
}

/// Whether two levels' intervals do not overlap (an unbounded upper end reaches everything).
pub fn disjoint(a: &Level, b: &Level) -> bool {
    let above = |x: &Level, y: &Level| x.lower_ns > y.upper_ns.unwrap_or(f64::INFINITY);
    above(a, b) || above(b, a)
}

/// The tail block of the text report.
pub fn text(groups: &[Group], row: &TailRow) -> String {
    let mut s = format!(
        "tail level: the latency exceeded with probability {:e} per wake-up ({:.0} % interval; the runs merged{}):\n",
        row.probability,
        row.confidence * 100.0,
        if row.assumed_stationary {
            "; UNTESTED: stationarity assumed, not tested"
        } else {
            ""
        }
    );
    for (i, (g, side)) in groups.iter().zip(&row.sides).enumerate() {
        let value = match side {
            Side::Level(l) => format!(
                "{} [{} .. {}]",
                us(l.estimate_ns),
                us(l.lower_ns),
                l.upper_ns.map_or("unbounded".into(), us)
            ),
            Side::Envelope { level: l, from, .. } => format!(
                "{} [{} .. {}]  worst-segment envelope ({from}; one stationary tail refused)",
                us(l.estimate_ns),
                us(l.lower_ns),
                l.upper_ns.map_or("unbounded".into(), us)
            ),
            Side::Refused(why) => {
                let why: Vec<String> = why.iter().map(|r| r.to_string()).collect();
                format!("REFUSED: {}", why.join("; "))
            }
            Side::Within => "within the measured data (read the percentiles)".into(),
        };
        let _ = write!(s, "  {:<3} {value}", g.name);
        if let Some(ch) = i.checked_sub(1).map(|k| &row.changes[k]) {
            let _ = write!(
                s,
                "  {}",
                verdict(ch, &row.sides[0], side, row.assumed_stationary)
            );
        }
        s.push('\n');
    }
    s
}

/// A candidate's verdict in words: the change, the verdict and what it rests on.
fn verdict(ch: &Change, base: &Side, cand: &Side, assumed: bool) -> String {
    let why = match (base, cand) {
        (Side::Refused(_), _) | (_, Side::Refused(_)) => {
            return "n/a: no verdict on a refused estimate".into()
        }
        (Side::Within, _) | (_, Side::Within) => return "n/a: nothing to extrapolate".into(),
        (Side::Envelope { .. }, _) | (_, Side::Envelope { .. }) if ch.untested() => {
            "untested: a worst-segment envelope, not one stationary tail"
        }
        _ if ch.untested() && assumed => "untested: stationarity assumed, not tested",
        _ if ch.untested() => "untested: an interval unbounded above, measure longer",
        _ if ch.verdict == Verdict::NotSignificant => "the intervals overlap: not distinguishable",
        (Side::Level(b), Side::Level(c)) if disjoint(b, c) => "the intervals are apart",
        _ => "within the threshold",
    };
    let pct = ch
        .delta_pct
        .map_or(String::new(), |p| format!("{p:+.1}%  "));
    format!("{pct}{} ({why})", ch.verdict.word())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::analysis::Comparison;
    use crate::compare::model::{tests_support, RunData, Stat};
    use rtscope_core::{Histogram, Nanos};
    use rtscope_evt::gpd::Gpd;

    fn level(estimate_ns: f64, lower_ns: f64, upper_ns: Option<f64>) -> Side {
        Side::Level(Level {
            probability: 1e-9,
            once_per_s: None,
            estimate_ns,
            lower_ns,
            upper_ns,
            extrapolation: 1e4,
            longer: None,
        })
    }

    #[test]
    fn the_intervals_decide_beyond_the_threshold() {
        let mut t = Thresholds::parse(&[], "1us").unwrap();
        let base = level(50_000.0, 45_000.0, Some(60_000.0));
        let v = |t: &Thresholds, c: &Side| change(t, &base, c, false).verdict;
        use Verdict::*;
        // Apart: a rise is a regression, a fall better.
        assert_eq!(
            v(&t, &level(80_000.0, 70_000.0, Some(95_000.0))),
            Regression
        );
        assert_eq!(v(&t, &level(20_000.0, 15_000.0, Some(30_000.0))), Better);
        // Overlapping: not distinguishable; within the threshold: same.
        assert_eq!(
            v(&t, &level(65_000.0, 55_000.0, Some(80_000.0))),
            NotSignificant
        );
        assert_eq!(v(&t, &level(52_000.0, 47_000.0, Some(58_000.0))), Same);
        // Unbounded above: untested, a rise higher (not failing) unless --fail-untested.
        let open = level(80_000.0, 58_000.0, None);
        let ch = change(&t, &base, &open, false);
        assert_eq!((ch.verdict, ch.basis), (Higher, Basis::Untested));
        assert!(ch.untested_rise());
        t.fail_untested = true;
        assert_eq!(v(&t, &open), Regression);
        // A refusal on either side is no verdict.
        let refused = Side::Refused(vec![Refusal::NoStableThreshold]);
        assert_eq!(v(&t, &refused), Unknown);
        assert_eq!(change(&t, &refused, &base, false).verdict, Unknown);
        assert_eq!(v(&t, &Side::Within), Unknown);
        // Stationarity assumed: even intervals apart are an untested verdict (a rise higher,
        // a regression only with --fail-untested; a fall lower, never better).
        t.fail_untested = false;
        let apart = level(80_000.0, 70_000.0, Some(95_000.0));
        let ch = change(&t, &base, &apart, true);
        assert_eq!((ch.verdict, ch.basis), (Higher, Basis::Untested));
        let below = level(20_000.0, 15_000.0, Some(30_000.0));
        assert_eq!(change(&t, &base, &below, true).verdict, Lower);
        t.fail_untested = true;
        assert_eq!(change(&t, &base, &apart, true).verdict, Regression);
    }

    /// A run of `n` wake-ups of 10 µs plus a GPD tail, as compare reads it.
    fn run(id: i64, tail: Gpd, n: usize, seed: u64) -> RunData {
        let mut r = rtscope_evt::diag::generator(seed);
        let mut hist = Histogram::new();
        let mut max = 0;
        for _ in 0..n {
            let v = (10_000.0 + tail.draw(r.unit())) as u64;
            hist.record(Nanos(v));
            max = max.max(v);
        }
        tests_support::run(id, hist, n as u64, Some(max))
    }

    #[test]
    fn a_heavy_tail_gets_no_level_and_no_verdict_even_assumed_stationary() {
        // ξ = 0.8: the rule of `rtscope tail` (rtscope_evt::far) refuses a far-tail number.
        let heavy = Gpd {
            sigma: 2000.0,
            xi: 0.8,
        };
        let light = Gpd {
            sigma: 500.0,
            xi: 0.0,
        };
        let t = Thresholds::parse(&[], "1us").unwrap();
        let groups = vec![
            Group::new(0, "x", vec![run(0, light, 100_000, 4)]),
            Group::new(1, "y", vec![run(1, heavy, 100_000, 5)]),
        ];
        let c = Comparison::new(groups, &[], t, Stat::Max, None).with_tail_level(1e-9, true);
        let row = c.tail.as_ref().unwrap();
        assert!(matches!(row.sides[0], Side::Level(_)), "{:?}", row.sides[0]);
        let Side::Refused(why) = &row.sides[1] else {
            panic!("{:?}", row.sides[1])
        };
        assert!(
            why.iter()
                .any(|r| matches!(r, Refusal::NotEstimable { .. })),
            "{why:?}"
        );
        assert_eq!(row.changes[0].verdict, Verdict::Unknown);
        let text = super::super::text::render(&c);
        assert!(
            text.contains("not estimable from this run (observed max"),
            "{text}"
        );
        assert_eq!(c.regressions(), 0);
    }

    #[test]
    fn known_tails_give_the_expected_verdicts() {
        let light = Gpd {
            sigma: 500.0,
            xi: 0.0,
        };
        let heavy = Gpd {
            sigma: 2000.0,
            xi: 0.0,
        };
        let mut t = Thresholds::parse(&[], "1us").unwrap();
        let group =
            |i: usize, g: Gpd, seed: u64| Group::new(i, "x", vec![run(i as i64, g, 200_000, seed)]);
        let groups = || vec![group(0, light, 1), group(1, heavy, 2), group(2, light, 3)];
        // A merged histogram is not tested for stationarity: no level, no verdict, by default.
        let c = Comparison::new(groups(), &[Stat::Max], t.clone(), Stat::Max, None)
            .with_tail_level(1e-9, false);
        let row = c.tail.as_ref().unwrap();
        for s in &row.sides {
            assert!(
                matches!(s, Side::Refused(r) if matches!(r[..], [Refusal::NotTested { tests: 4 }])),
                "{s:?}"
            );
        }
        assert!(row.changes.iter().all(|c| c.verdict == Verdict::Unknown));
        let text = super::super::text::render(&c);
        assert!(
            text.contains("REFUSED: not tested for stationarity — no estimate"),
            "{text}"
        );
        // Assumed stationary: the levels, labelled, and verdicts that rest on the assumption.
        t.fail_untested = true;
        let c = Comparison::new(groups(), &[Stat::Max], t.clone(), Stat::Max, None)
            .with_tail_level(1e-9, true);
        let row = c.tail.as_ref().unwrap();
        for s in &row.sides {
            assert!(matches!(s, Side::Level(_)), "{s:?}");
        }
        // The true levels at 1e-9: 10 µs + σ ln(1e9), 20.4 µs and 51.4 µs, in the intervals.
        for (side, truth) in row.sides.iter().zip([20_362.0, 51_447.0, 20_362.0]) {
            let Side::Level(l) = side else { unreachable!() };
            assert!(l.lower_ns < truth && truth < l.upper_ns.unwrap(), "{l:?}");
        }
        // The heavier tail is a regression (untested: it fails with --fail-untested only); the
        // same tail again is not.
        assert_eq!(row.changes[0].verdict, Verdict::Regression);
        assert_eq!(row.changes[0].basis, Basis::Untested);
        assert!(matches!(
            row.changes[1].verdict,
            Verdict::Same | Verdict::Higher | Verdict::Lower
        ));
        assert!(c.regressions() >= 1);
        let text = super::super::text::render(&c);
        assert!(
            text.contains("REGRESSION (untested: stationarity assumed, not tested)"),
            "{text}"
        );
        assert!(text.contains("UNTESTED: stationarity assumed"), "{text}");
        assert!(text.contains("B on tail@1e-9"), "{text}");
        assert!(!text.contains("C on tail@1e-9"), "{text}");
        // What compare's JSON document (rtscope-present) writes, on the typed row.
        assert_eq!(row.changes[0].verdict.word(), "REGRESSION");
        assert!(row.assumed_stationary);
        assert_eq!(c.groups[1].name, "B");
        assert_eq!(row.sides.len(), c.groups.len());
        // Without --fail-untested the rise is higher, and nothing fails.
        t.fail_untested = false;
        let c = Comparison::new(groups(), &[Stat::Max], t.clone(), Stat::Max, None)
            .with_tail_level(1e-9, true);
        assert_eq!(c.tail.as_ref().unwrap().changes[0].verdict, Verdict::Higher);
        assert_eq!(c.regressions(), 0);
        // A group with nothing to fit (a summary without histogram) is refused: no verdict.
        let empty = Group::new(
            1,
            "y",
            vec![tests_support::run(9, Histogram::new(), 1000, None)],
        );
        let c = Comparison::new(vec![group(0, light, 1), empty], &[], t, Stat::Max, None)
            .with_tail_level(1e-9, true);
        let row = c.tail.as_ref().unwrap();
        assert!(matches!(&row.sides[1], Side::Refused(r) if r[0] == Refusal::NoDistribution));
        assert_eq!(row.changes[0].verdict, Verdict::Unknown);
        let text = super::super::text::render(&c);
        assert!(
            text.contains("REFUSED: the run kept no histogram"),
            "{text}"
        );
        assert!(
            text.contains("n/a: no verdict on a refused estimate"),
            "{text}"
        );
        assert_eq!(c.regressions(), 0);
    }

    /// A `--raw` run of 20,000 wake-ups at 1 kHz in a real store: about 10 µs, one in 100 of
    /// 30–50 µs, and in its third of ten segments one in 20 of 2–3 ms (or none with `raw`
    /// false: the histogram only).
    fn recorded(store: &mut rtscope_store::Store, spikes: bool, raw: bool, seed: u64) -> RunData {
        use rtscope_store::{
            codec, Checkpoint, NewRun, RawChunk, RunKind, ThreadInfo, ThreadStats,
        };
        let mut r = rtscope_evt::diag::generator(seed);
        let v: Vec<u64> = (0..20_000u64)
            .map(|i| {
                let u = r.unit();
                if spikes && (4000..6000).contains(&i) && u < 0.05 {
                    2_000_000 + (1e6 * r.unit()) as u64
                } else if u > 0.99 {
                    30_000 + (20e3 * r.unit()) as u64
                } else {
                    10_000 + (1e3 * r.unit()) as u64
                }
            })
            .collect();
        let mut hist = Histogram::new();
        v.iter().for_each(|&x| hist.record(Nanos(x)));
        let id = store
            .begin_run(&NewRun {
                kind: RunKind::Measure,
                label: None,
                tags: vec![],
                started: "2026-11-27T14:00:00Z".into(),
                started_unix_ns: 1,
                pid: std::process::id(),
                tool_version: "test".into(),
                command_line_json: "[]".into(),
                config_json: "{}".into(),
                environment: vec![],
                threads: vec![ThreadInfo {
                    thread: 0,
                    cpu: Some(0),
                    policy: "fifo".into(),
                    priority: 95,
                    interval_ns: 1_000_000,
                }],
            })
            .unwrap();
        let samples: Vec<codec::RawSample> = (0..)
            .zip(&v)
            .map(|(i, &l)| (i, l, i * 1_000_000 + l))
            .collect();
        let cp = Checkpoint {
            progress_ns: 20_000_000_000,
            at_unix_ns: 1,
            threads: vec![ThreadStats {
                thread: 0,
                tid: 1,
                figures: rtscope_store::SampleFigures {
                    samples: v.len() as u64,
                    min_ns: hist.min().map(|n| n.0),
                    mean_ns: None,
                    max_ns: hist.max().map(|n| n.0),
                    max_cycle: None,
                    max_offset_ns: None,
                },
                missed: 0,
                raw_dropped: 0,
                histogram: &hist,
            }],
            samples: if raw {
                vec![RawChunk {
                    thread: 0,
                    first_cycle: 0,
                    count: v.len() as u64,
                    data: codec::encode_samples(&samples, 1_000_000),
                }]
            } else {
                vec![]
            },
            ..Checkpoint::default()
        };
        store
            .finish_run(
                id,
                &cp,
                rtscope_store::RunStatus::Complete,
                "2026-11-27T14:00:20Z",
                0,
            )
            .unwrap();
        let max = hist.max().map(|n| n.0);
        tests_support::run(id, hist, v.len() as u64, max)
    }

    #[test]
    fn raw_runs_refused_one_stationary_tail_are_compared_by_their_worst_segment_envelope() {
        let dir = std::env::temp_dir().join(format!("rtscope-compare-env-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let mut store = rtscope_store::Store::open(&dir.join("rtscope.db")).unwrap();
        let quiet = recorded(&mut store, false, true, 1);
        let spiky = recorded(&mut store, true, true, 2);
        let histogram_only = recorded(&mut store, true, false, 3);
        let t = Thresholds::parse(&[], "1us").unwrap();
        let groups = vec![
            Group::new(0, "x", vec![quiet]),
            Group::new(1, "y", vec![spiky]),
            Group::new(2, "z", vec![histogram_only]),
        ];
        // 1e-3: 2 wake-ups of a segment's 2,000, read off the segments' own values.
        let c = Comparison::new(groups, &[], t, Stat::Max, None)
            .with_tail_level(1e-3, false)
            .with_tail_envelopes(&store)
            .unwrap();
        let row = c.tail.as_ref().unwrap();
        let Side::Envelope {
            level: a,
            from,
            refused,
        } = &row.sides[0]
        else {
            panic!("{:?}", row.sides[0])
        };
        assert!(from.starts_with("run 1, CPU 0, "), "{from}");
        assert!(
            refused
                .iter()
                .any(|r| matches!(r, Refusal::NotTested { .. })),
            "{refused:?}"
        );
        assert!(a.estimate_ns < 100_000.0, "{a:?}");
        let Side::Envelope { level: b, from, .. } = &row.sides[1] else {
            panic!("{:?}", row.sides[1])
        };
        // The spikes of segment 3 are the worst: the fit on it, or its own values.
        assert!(from.starts_with("run 2, CPU 0, "), "{from}");
        let said = format!("worst-segment envelope ({from}; one stationary tail refused)");
        assert!(b.estimate_ns >= 2_000_000.0, "{b:?}");
        // Not one stationary tail's level: the rise is an untested verdict.
        assert_eq!(row.changes[0].verdict, Verdict::Higher);
        assert_eq!(row.changes[0].basis, Basis::Untested);
        assert_eq!(c.regressions(), 0);
        // Without raw samples the merged histogram's refusal stands.
        assert!(
            matches!(&row.sides[2], Side::Refused(_)),
            "{:?}",
            row.sides[2]
        );
        assert_eq!(row.changes[1].verdict, Verdict::Unknown);
        let text = super::super::text::render(&c);
        assert!(text.contains(&said), "{text}");
        assert!(
            text.contains("higher (untested: a worst-segment envelope, not one stationary tail)"),
            "{text}"
        );
        // What compare's JSON document (rtscope-present) writes as each group's envelope.
        let row = c.tail.as_ref().unwrap();
        assert!(
            matches!(&row.sides[1], Side::Envelope { from, .. } if said.contains(from.as_str())),
            "{:?}",
            row.sides[1]
        );
        assert!(
            !matches!(&row.sides[2], Side::Envelope { .. }),
            "{:?}",
            row.sides[2]
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
