//! The run's own values ([`rtscope_evt::regimes::observed`], issue 66 item 4) on synthetic runs
//! of known truth, with fixed seeds: a clustered stationary run (bursts of four heavy-tailed
//! spikes starting at random times) gets a tested level at 1e-4 per wake-up whose interval holds
//! the generator's quantile in most seeds (a count, not a time); a run whose bursts come only in
//! its second half fails the test and no gate passes on it; a tiny run gets no level, and why.

use rtscope_core::rng::XorShift64;
use rtscope_evt::gate::{TailLimit, Used, Verdict};
use rtscope_evt::regimes::observed::Observed;
use rtscope_evt::regimes::{Answer, Regimes};
use rtscope_evt::{analyse, Analysis, Options, Tail};

const HZ: f64 = 1000.0;
/// The spikes are this plus a GPD, ns.
const U0: f64 = 40_000.0;
const SIGMA: f64 = 20_000.0;
const XI: f64 = 0.4;
/// The base: 10 µs plus an exponential of this mean, ns.
const BASE: f64 = 2_000.0;
/// Wake-ups per burst.
const BURST: usize = 4;
/// Bursts start with this probability per wake-up.
const Q: f64 = 1e-4;

fn spike(r: &mut XorShift64) -> f64 {
    U0 + SIGMA / XI * (r.unit().powf(-XI) - 1.0)
}

/// `n` wake-ups; bursts only from `from` on.
fn run(n: usize, from: usize, q: f64, seed: u64) -> Vec<f64> {
    let mut r = XorShift64::new(seed);
    let mut v: Vec<f64> = (0..n).map(|_| 10_000.0 - BASE * r.unit().ln()).collect();
    let mut i = from;
    while i < n {
        if r.unit() < q {
            for x in &mut v[i..(i + BURST).min(n)] {
                *x = spike(&mut r);
            }
            i += BURST;
        } else {
            i += 1;
        }
    }
    v
}

/// `P(X > z)` per wake-up of the stationary run (bursts' share of wake-ups `B q / (1 + (B−1) q)`).
fn survival(z: f64) -> f64 {
    let share = BURST as f64 * Q / (1.0 + (BURST as f64 - 1.0) * Q);
    let base = (-(z - 10_000.0).max(0.0) / BASE).exp();
    let gpd = if z <= U0 {
        1.0
    } else {
        (1.0 + XI * (z - U0) / SIGMA).powf(-1.0 / XI)
    };
    share * gpd + (1.0 - share) * base
}

fn quantile(p: f64) -> f64 {
    let (mut lo, mut hi) = (10_000.0, 1e9);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if survival(mid) > p {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo
}

fn options() -> Options {
    Options {
        regimes: true,
        probabilities: vec![1e-3, 1e-4, 1e-6],
        ..Options::default()
    }
}

fn regimes(v: &[f64]) -> Regimes {
    rtscope_evt::regimes::regimes(&Tail::ordered(v, Some(HZ)), &options()).expect("regimes")
}

fn observed(r: &Regimes) -> &Observed {
    match &r.observed {
        Answer::Given(o) => o,
        Answer::NotGiven { why } => panic!("no own values: {why}"),
    }
}

fn all_finite(o: &Observed) {
    // In `--json` (the analysis serialised whole): no `null` inside a given level.
    let doc = serde_json::to_value(o).expect("serialises");
    for key in ["levels", "per_time"] {
        let levels = doc[key].as_array().expect("an array");
        assert!(levels
            .iter()
            .all(|l| l.as_object().unwrap().values().all(|v| !v.is_null())));
    }
    for l in &o.levels {
        assert!([l.estimate_ns, l.lower_ns, l.upper_ns]
            .iter()
            .all(|v| v.is_finite()));
        assert!(l.lower_ns <= l.estimate_ns && l.estimate_ns <= l.upper_ns);
    }
    for l in &o.per_time {
        assert!([l.estimate_ns, l.lower_ns, l.upper_ns]
            .iter()
            .all(|v| v.is_finite()));
        assert!(l.lower_ns <= l.estimate_ns && l.estimate_ns <= l.upper_ns);
    }
}

#[test]
fn a_clustered_stationary_run_gets_a_tested_level_holding_the_truth() {
    let truth = quantile(1e-4);
    let (mut covered, mut tested, reps) = (0, 0, 12);
    for seed in 1..=reps {
        let r = regimes(&run(600_000, 0, Q, seed));
        let o = observed(&r);
        all_finite(o);
        let l = (o.levels.iter().find(|l| l.probability == 1e-4))
            .unwrap_or_else(|| panic!("no level at 1e-4: {:?}", o.not_given));
        assert!(
            l.extremal_index < 0.95,
            "bursts make episodes: θ {}",
            l.extremal_index
        );
        covered += usize::from(l.lower_ns <= truth && truth <= l.upper_ns);
        tested += usize::from(o.tested);
        // Beyond the run nothing is said.
        let far = o.not_given.iter().find(|n| n.probability == Some(1e-6));
        assert!(far.is_some_and(|n| n.why.contains("beyond the run")));
        assert!(o.per_time.iter().any(|t| t.once_per_s == 60.0));
    }
    eprintln!("covered {covered}, tested {tested} of {reps}");
    assert!(covered >= reps as usize - 2, "{covered} of {reps} covered");
    assert!(tested >= reps as usize - 2, "{tested} of {reps} tested");
}

fn limit(text: &str, a: &Analysis) -> Verdict {
    text.parse::<TailLimit>().expect("a limit").check(a)
}

#[test]
fn gates_pass_on_the_own_values_only_when_tested() {
    let o = options();
    let a = analyse(&Tail::ordered(&run(600_000, 0, Q, 3), Some(HZ)), &o, false);
    let own = observed(a.regimes.as_ref().unwrap());
    assert!(own.tested, "{:?}", own.test);
    if !a.accepted() {
        match limit("tail@1e-4/wakeup=1s", &a) {
            Verdict::Pass { used, .. } => assert_eq!(used, Used::Observed),
            v => panic!("{v:?}"),
        }
        assert!(matches!(
            limit("tail@1e-4/wakeup=1us", &a),
            Verdict::Exceeded { .. }
        ));
    }
    // Bursts only in the second half: the test fails, the level is shown, no gate passes.
    let a = analyse(
        &Tail::ordered(&run(600_000, 300_000, 2.0 * Q, 3), Some(HZ)),
        &o,
        false,
    );
    let own = observed(a.regimes.as_ref().unwrap());
    all_finite(own);
    assert!(!own.tested, "{:?}", own.test);
    assert!(own.levels.iter().any(|l| l.probability == 1e-4));
    for text in ["tail@1e-4/wakeup=1s", "tail@1/minute=1s"] {
        match limit(text, &a) {
            Verdict::Pass { used, .. } => assert_ne!(used, Used::Observed, "{text}"),
            Verdict::Untested { why, .. } => {
                assert!(why.is_some_and(|w| w.contains("own values")), "{text}")
            }
            _ => {}
        }
    }
    let mut text = String::new();
    rtscope_evt::render::regimes_text(&mut text, a.regimes.as_ref().unwrap(), 0.95);
    assert!(text.contains("within the run (its own values, no model of the tail) UNTESTED"));
}

#[test]
fn a_tiny_run_gets_no_level_and_why() {
    let r = regimes(&run(2_000, 0, 5e-3, 7));
    let o = observed(&r);
    assert!(o.levels.iter().all(|l| l.probability >= 1e-3));
    let at = |p: f64| o.not_given.iter().find(|n| n.probability == Some(p));
    assert!(at(1e-4).is_some_and(|n| n.why.contains("beyond the run")));
    if let Some(n) = at(1e-3) {
        assert!(n.why.contains("measure longer"), "{}", n.why);
    }
    assert!(o.per_time.is_empty(), "two seconds hold no minutes");
    all_finite(o);
}
