//! The answers for runs whose tail changes ([`rtscope_evt::regimes`]) on synthetic runs of known
//! truth, with fixed seeds: a Markov-switching GPD tail (quiet and noisy regimes lasting tens of
//! seconds) and a periodic burst process. Over seeded replications the block-maxima intervals
//! cover the true once-per-hour level about as often as their confidence says, each side and
//! both (switching: 38 of 40 two-sided, the lower bound above the truth in 2, the upper below it
//! in none; bursts: 36 of 40, 1 and 3), and the worst-segment envelope is conservative for the
//! workload (its upper bound above the level of the mix of regimes) without claiming more than
//! the worst regime (its lower bound below that regime's level), each side at its stated
//! confidence. Before the block maxima were censored at the highest share
//! ([`rtscope_evt::gev::choose`]) the switching tail's interval held the truth in 30 of 40,
//! every miss above it: the GEV of the upper 30 % of the maxima, quiet and noisy seconds
//! together, was heavier than the far tail.

use rtscope_evt::diag::generator;
use rtscope_evt::regimes::{Answer, Regimes};
use rtscope_evt::{analyse, Level, Options, Refusal, Tail, Test};

/// The threshold above which the disturbances' latencies are GPD, ns.
const U0: f64 = 20_000.0;
/// Wake-ups per second (and per block).
const HZ: usize = 1000;
/// The tails' shape.
const XI: f64 = 0.1;

/// A regime: every wake-up 10 µs plus an exponential of mean 2 µs, except with probability
/// `rate` a value above [`U0`], the threshold plus a GPD of scale `sigma` (the large latencies
/// of the regime's disturbances).
#[derive(Clone, Copy)]
struct Regime {
    rate: f64,
    sigma: f64,
}

/// The base: 10 µs plus an exponential of this mean, ns.
const BASE_MEAN: f64 = 2_000.0;

impl Regime {
    /// `P(X > z)` per wake-up.
    fn survival(self, z: f64) -> f64 {
        let base = (-(z - 10_000.0).max(0.0) / BASE_MEAN).exp();
        let spike = if z <= U0 {
            1.0
        } else {
            (1.0 + XI * (z - U0) / self.sigma).powf(-1.0 / XI)
        };
        self.rate * spike + (1.0 - self.rate) * base
    }

    fn draw(self, r: &mut rtscope_core::rng::XorShift64) -> f64 {
        if r.unit() < self.rate {
            U0 + self.sigma / XI * (r.unit().powf(-XI) - 1.0)
        } else {
            10_000.0 - BASE_MEAN * r.unit().ln()
        }
    }
}

const QUIET: Regime = Regime {
    rate: 2e-4,
    sigma: 3_000.0,
};
const NOISY: Regime = Regime {
    rate: 4e-3,
    sigma: 6_000.0,
};

/// `f` decreasing in `z`: the `z` where it equals `target` (bisection in log space).
fn solve(f: &dyn Fn(f64) -> f64, target: f64) -> f64 {
    let (mut lo, mut hi) = (U0, U0 * 1e4);
    for _ in 0..200 {
        let m = (lo * hi).sqrt();
        if f(m) > target {
            lo = m;
        } else {
            hi = m;
        }
    }
    lo
}

/// A Markov-switching run of `seconds`: the regime changes only between seconds, quiet to
/// noisy with probability 1/50 per second and back with 1/12.5 (a fifth of the time noisy,
/// for 12.5 s on average: about 19 noisy spells in 20 minutes).
fn switching(seconds: usize, seed: u64) -> Vec<f64> {
    switching_at(seconds, HZ, seed)
}

/// [`switching`] at `hz` wake-ups per second.
fn switching_at(seconds: usize, hz: usize, seed: u64) -> Vec<f64> {
    let mut r = generator(seed);
    let mut noisy = false;
    let mut v = Vec::with_capacity(seconds * hz);
    for _ in 0..seconds {
        let flip = if noisy { 0.08 } else { 0.02 };
        if r.unit() < flip {
            noisy = !noisy;
        }
        let g = if noisy { NOISY } else { QUIET };
        v.extend((0..hz).map(|_| g.draw(&mut r)));
    }
    v
}

const NOISY_SHARE: f64 = 0.2;

fn analysed(v: &[f64]) -> Regimes {
    let o = Options {
        regimes: true,
        ..Options::default()
    };
    rtscope_evt::regimes::regimes(&Tail::ordered(v, Some(HZ as f64)), &o)
        .expect("an ordered run with a rate has regimes")
}

/// The answers of `v` at `hz` wake-ups per second.
fn analysed_at(v: &[f64], hz: usize) -> Regimes {
    let o = Options {
        regimes: true,
        ..Options::default()
    };
    rtscope_evt::regimes::regimes(&Tail::ordered(v, Some(hz as f64)), &o)
        .expect("an ordered run with a rate has regimes")
}

/// The envelope's level at `p`, where the envelope was given and gave that level.
fn envelope_at(r: &Regimes, p: f64) -> Option<&Level> {
    let Answer::Given(e) = &r.envelope else {
        return None;
    };
    e.levels
        .iter()
        .map(|w| &w.level)
        .find(|l| l.probability == p)
}

/// The envelope's per-time level once per `t` s, where given.
fn per_time_at(r: &Regimes, t: f64) -> Option<&rtscope_evt::regimes::TimeLevel> {
    let Answer::Given(e) = &r.envelope else {
        return None;
    };
    e.per_time
        .levels
        .iter()
        .map(|w| &w.level)
        .find(|l| l.once_per_s == t)
}

/// Whether the envelope says why it gives no level once per `t` s because the data do not bound
/// it above (issue 66: an interval is complete or the level is not given).
fn open_per_time(r: &Regimes, t: f64) -> bool {
    let Answer::Given(e) = &r.envelope else {
        return false;
    };
    let n = e.per_time.not_given.iter().find(|n| n.once_per_s == t);
    n.is_some_and(|n| n.why.contains("do not bound it above"))
}

/// The block maxima's level once per `t` s, where given; where not, it says why.
fn block_level(
    b: &rtscope_evt::regimes::BlockMaxima,
    t: f64,
) -> Option<&rtscope_evt::regimes::TimeLevel> {
    let l = b.levels.iter().find(|l| l.once_per_s == t);
    if l.is_none() {
        assert!(b.not_given.iter().any(|n| n.once_per_s == t), "{b:?}");
    }
    l
}

/// Asserts `c` over the replications that gave a level, and that the others were not given for
/// an open interval (`open` of them, `reps` in all).
fn assert_given_95(c: &Coverage, open: usize, reps: usize, what: &str, truth: f64) {
    assert_eq!(
        c.n + open,
        reps,
        "{what}: every replication a level or why not"
    );
    if c.n > 0 {
        c.assert_95(what, truth);
    }
}

/// Of `n` replications, how many `hit`: at least `want` (a fraction) less a tolerance of three
/// binomial standard deviations, so that the fixed seeds make it deterministic and a method
/// that covers less than it says fails.
fn covers(hits: usize, n: usize, want: f64) -> bool {
    let sd = (want * (1.0 - want) / n as f64).sqrt();
    hits as f64 / n as f64 >= want - 3.0 * sd
}

/// How often a two-sided 95 % interval held the truth over replications, and each of its sides.
#[derive(Default)]
struct Coverage {
    inside: usize,
    up: usize,
    down: usize,
    n: usize,
}

impl Coverage {
    /// One replication: whether its upper bound is at or above the truth (`up`), its lower at or
    /// below (`down`).
    fn add(&mut self, up: bool, down: bool) {
        self.up += usize::from(up);
        self.down += usize::from(down);
        self.inside += usize::from(up && down);
        self.n += 1;
    }

    /// The truth inside in 95 %, each side beyond it in 2.5 % ([`covers`]' tolerance).
    fn assert_95(&self, what: &str, truth: f64) {
        assert!(
            covers(self.inside, self.n, 0.95),
            "{what}: {self} (truth {truth})"
        );
        assert!(
            covers(self.up, self.n, 0.975) && covers(self.down, self.n, 0.975),
            "{what}: {self} (truth {truth})"
        );
    }
}

impl std::fmt::Display for Coverage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "covered {}/{} (upper ≥ truth {}, lower ≤ truth {})",
            self.inside, self.n, self.up, self.down
        )
    }
}

#[test]
fn on_a_markov_switching_tail_the_block_maxima_and_envelope_cover_the_truth() {
    // The true once-per-hour level of the 1 s maxima: a second of the mix exceeds it with
    // probability 1/3600.
    let block = |g: Regime, z: f64| 1.0 - (1.0 - g.survival(z)).powi(HZ as i32);
    let per_block = |z: f64| NOISY_SHARE * block(NOISY, z) + (1.0 - NOISY_SHARE) * block(QUIET, z);
    let hour = solve(&per_block, 1.0 / 3600.0);
    // Per wake-up at 1e-6: the mix's level and the noisy regime's.
    let p = 1e-6;
    let mix = solve(
        &|z| NOISY_SHARE * NOISY.survival(z) + (1.0 - NOISY_SHARE) * QUIET.survival(z),
        p,
    );
    let worst = solve(&|z| NOISY.survival(z), p);
    assert!(worst > mix * 1.2, "the regimes differ: {mix} vs {worst}");
    // Once per minute per block: the mix's level, and the noisy regime's (every second noisy).
    let minute_mix = solve(&per_block, 1.0 / 60.0);
    let minute_worst = solve(&|z| block(NOISY, z), 1.0 / 60.0);
    assert!(
        minute_worst > minute_mix * 1.2,
        "{minute_mix} vs {minute_worst}"
    );
    let reps = 40;
    let mut per_hour = Coverage::default();
    // The per-time envelope: its upper bound at or above the mix's level, its lower at or below
    // the worst regime's.
    let mut minute = Coverage::default();
    let (mut above_mix, mut below_worst, mut given) = (0, 0, 0);
    let (mut estimates, mut hours) = (Vec::new(), Vec::new());
    let (mut hour_open, mut minute_open) = (0, 0);
    for seed in 0..reps {
        let r = analysed(&switching(1200, 100 + seed));
        let b = r.blocks.given().expect("1,200 blocks fit");
        assert_eq!((b.block_s, b.blocks), (1.0, 1200));
        if let Some(l) = block_level(b, 3600.0) {
            per_hour.add(l.upper_ns.is_some_and(|u| hour <= u), l.lower_ns <= hour);
            hours.push(l.estimate_ns / hour);
        } else {
            hour_open += 1;
        }
        // Once per minute in a segment of 120 s: two blocks above it, which bound it below
        // only; no level then (issue 66), and why.
        match per_time_at(&r, 60.0) {
            Some(m) => minute.add(
                m.upper_ns.is_some_and(|u| u >= minute_mix),
                m.lower_ns <= minute_worst,
            ),
            None => minute_open += usize::from(open_per_time(&r, 60.0)),
        }
        let Some(l) = envelope_at(&r, p) else {
            continue;
        };
        given += 1;
        above_mix += usize::from(l.upper_ns.is_none_or(|u| u >= mix));
        below_worst += usize::from(l.lower_ns <= worst);
        estimates.push(l.estimate_ns);
    }
    eprintln!(
        "switching: per hour {per_hour}; envelope given {given}/{reps}, upper ≥ mix {above_mix}, lower ≤ worst {below_worst}; per-time envelope once per minute: upper ≥ mix, lower ≤ worst: {minute}"
    );
    assert_given_95(&per_hour, hour_open, reps as usize, "per hour", hour);
    let what = "the per-time envelope once per minute";
    assert_given_95(&minute, minute_open, reps as usize, what, minute_mix);
    // And not by being wide: the median estimate within 0.8–1.25 × the truth.
    hours.sort_by(f64::total_cmp);
    let median = hours[hours.len() / 2];
    assert!(
        (0.8..1.25).contains(&median),
        "median per-hour estimate {median} × the truth"
    );
    assert!(given >= reps * 9 / 10, "an envelope in {given} of {reps}");
    // One side each of a two-sided 95 % interval: 97.5 %.
    assert!(
        covers(above_mix, given as usize, 0.975),
        "above the mix {above_mix} of {given}"
    );
    assert!(
        covers(below_worst, given as usize, 0.975),
        "below the worst {below_worst} of {given}"
    );
    // Conservative, not the mix: the median estimate lies above the mix's level.
    estimates.sort_by(f64::total_cmp);
    assert!(
        estimates[estimates.len() / 2] > mix,
        "median {}",
        estimates[estimates.len() / 2]
    );
}

/// A run of `seconds` with a burst of 200 wake-ups every 10 s (from 300 ms into the second):
/// in a burst one wake-up in 20 is above [`U0`] with scale 8 µs; elsewhere the quiet regime.
fn bursts(seconds: usize, seed: u64) -> Vec<f64> {
    bursts_at(seconds, HZ, seed)
}

/// [`bursts`] at `hz` wake-ups per second: the burst a fifth of the second from 30 % into it.
fn bursts_at(seconds: usize, hz: usize, seed: u64) -> Vec<f64> {
    let mut r = generator(seed);
    let mut v = Vec::with_capacity(seconds * hz);
    let burst = 3 * hz / 10..5 * hz / 10;
    for s in 0..seconds {
        for i in 0..hz {
            let g = if s % 10 == 0 && burst.contains(&i) {
                BURST
            } else {
                QUIET
            };
            v.push(g.draw(&mut r));
        }
    }
    v
}

const BURST: Regime = Regime {
    rate: 0.05,
    sigma: 8_000.0,
};

#[test]
fn on_a_periodic_burst_process_the_block_maxima_and_envelope_cover_the_truth() {
    let q = |z: f64| 1.0 - QUIET.survival(z);
    let b = |z: f64| 1.0 - BURST.survival(z);
    let per_block =
        |z: f64| 0.1 * (1.0 - b(z).powi(200) * q(z).powi(800)) + 0.9 * (1.0 - q(z).powi(HZ as i32));
    let hour = solve(&per_block, 1.0 / 3600.0);
    let p = 1e-6;
    // The marginal level per wake-up: 200 of every 10,000 wake-ups are in a burst.
    let mix = solve(&|z| 0.02 * BURST.survival(z) + 0.98 * QUIET.survival(z), p);
    // Every 10 s alike: each segment's blocks have the same distribution, whose level once per
    // minute is the truth of every segment (the worst regime at the scale of a block).
    let minute = solve(&per_block, 1.0 / 60.0);
    let reps = 40;
    let mut per_hour = Coverage::default();
    let mut per_minute = Coverage::default();
    let (mut above_mix, mut given) = (0, 0);
    let (mut hour_open, mut minute_open) = (0, 0);
    for seed in 0..reps {
        let r = analysed(&bursts(1200, 500 + seed));
        let s = r.segments.given().expect("segments");
        // Every segment holds as many bursts: no segment stands out.
        assert!(s.holding.len() >= 6, "{:?}", s.counts);
        let b = r.blocks.given().expect("1,200 blocks fit");
        match block_level(b, 3600.0) {
            Some(l) => per_hour.add(l.upper_ns.is_some_and(|u| hour <= u), l.lower_ns <= hour),
            None => hour_open += 1,
        }
        match per_time_at(&r, 60.0) {
            Some(m) => per_minute.add(
                m.upper_ns.is_some_and(|u| minute <= u),
                m.lower_ns <= minute,
            ),
            None => minute_open += usize::from(open_per_time(&r, 60.0)),
        }
        if let Some(l) = envelope_at(&r, p) {
            given += 1;
            above_mix += usize::from(l.upper_ns.is_none_or(|u| u >= mix));
        }
    }
    eprintln!(
        "bursts: per hour {per_hour}; envelope given {given}/{reps}, upper ≥ mix {above_mix}; per-time envelope once per minute {per_minute}"
    );
    assert_given_95(&per_hour, hour_open, reps as usize, "per hour", hour);
    let what = "the per-time envelope once per minute";
    assert_given_95(&per_minute, minute_open, reps as usize, what, minute);
    // Where the base's tail and the bursts' meet no one GPD fits: some runs get no envelope
    // (too heavy, said so) rather than a wrong one.
    assert!(given >= reps * 3 / 5, "an envelope in {given} of {reps}");
    assert!(
        covers(above_mix, given as usize, 0.975),
        "above the mix {above_mix} of {given}"
    );
}

#[test]
fn the_per_time_envelope_bounds_the_worst_conditions_once_per_minute_on_both_sides() {
    // Runs of 6,000 s at 100 wake-ups per second: segments of 600 blocks, ten of them above the
    // level once per minute, so the upper bound is bounded too (a Poisson count of 10 is below
    // 4 with 1 %); once per 10 minutes is one block of a segment: a lower bound only, so no
    // level (issue 66).
    let hz = 100;
    let block = |g: Regime, n: usize, z: f64| 1.0 - (1.0 - g.survival(z)).powi(n as i32);
    let per_block = |z: f64| {
        let (b, q) = (1.0 - BURST.survival(z), 1.0 - QUIET.survival(z));
        0.1 * (1.0 - b.powi(20) * q.powi(80)) + 0.9 * block(QUIET, hz, z)
    };
    let switched =
        |z: f64| NOISY_SHARE * block(NOISY, hz, z) + (1.0 - NOISY_SHARE) * block(QUIET, hz, z);
    let burst_minute = solve(&per_block, 1.0 / 60.0);
    let (mix, worst) = (
        solve(&switched, 1.0 / 60.0),
        solve(&|z| block(NOISY, hz, z), 1.0 / 60.0),
    );
    let reps = 40;
    let (mut bursts_minute, mut switching_minute) = (Coverage::default(), Coverage::default());
    let mut ten = Coverage::default();
    let burst_ten = solve(&per_block, 1.0 / 600.0);
    let (mut ratios, mut above_worst, mut ten_open) = (Vec::new(), 0, 0);
    for seed in 0..reps {
        let r = analysed_at(&bursts_at(6000, hz, 900 + seed), hz);
        let m = per_time_at(&r, 60.0).expect("once per minute");
        assert!(m.upper_ns.is_some(), "bounded: {m:?}");
        ratios.push(m.estimate_ns / burst_minute);
        bursts_minute.add(
            m.upper_ns.is_some_and(|u| burst_minute <= u),
            m.lower_ns <= burst_minute,
        );
        // Once per 10 minutes is one block of a segment: bounded below only, so no level
        // (issue 66: an interval is complete or the level is not given), and why.
        match per_time_at(&r, 600.0) {
            Some(t) => ten.add(
                t.upper_ns.is_some_and(|u| burst_ten <= u),
                t.lower_ns <= burst_ten,
            ),
            None => ten_open += usize::from(open_per_time(&r, 600.0)),
        }
        assert!(per_time_at(&r, 3600.0).is_none(), "an hour is 6 segments");
        let r = analysed_at(&switching_at(6000, hz, 1300 + seed), hz);
        let m = per_time_at(&r, 60.0).expect("once per minute");
        switching_minute.add(m.upper_ns.is_some_and(|u| u >= mix), m.lower_ns <= worst);
        // Not asserted: a segment of 600 s holds about 120 s of the noisy regime, so the worst
        // segment is not the noisy regime itself.
        above_worst += usize::from(m.upper_ns.is_some_and(|u| u >= worst));
    }
    eprintln!(
        "switching once per minute: upper ≥ the noisy regime's level in {above_worst} of {reps}"
    );
    eprintln!(
        "100 Hz, 6,000 s: bursts once per minute {bursts_minute}, once per 10 minutes {ten}; switching once per minute (upper ≥ the mix, lower ≤ the noisy regime) {switching_minute}"
    );
    bursts_minute.assert_95("bursts once per minute", burst_minute);
    // And not by being wide: the largest of ten segments' estimates, its median within
    // 0.9–1.3 × the truth of every segment.
    ratios.sort_by(f64::total_cmp);
    let median = ratios[ratios.len() / 2];
    eprintln!("bursts once per minute: median estimate {median:.3} × the truth");
    assert!((0.9..1.3).contains(&median), "{median} × the truth");
    assert_given_95(
        &ten,
        ten_open,
        reps as usize,
        "bursts once per 10 minutes",
        burst_ten,
    );
    switching_minute.assert_95("switching once per minute", mix);
}

#[test]
fn a_switching_run_refuses_one_stationary_tail_and_still_answers() {
    let v = switching(1200, 7);
    let o = Options {
        regimes: true,
        ..Options::default()
    };
    let a = analyse(&Tail::ordered(&v, Some(HZ as f64)), &o, false);
    let stationarity = [
        Test::Independence,
        Test::Arrivals,
        Test::SameTail,
        Test::SameRate,
    ];
    assert!(
        a.refusals
            .iter()
            .any(|r| matches!(r, Refusal::Failed { test } if stationarity.contains(test))),
        "{:?}",
        a.refusals
    );
    let r = a.regimes.as_ref().unwrap();
    let s = r.segments.given().unwrap();
    assert!(s.same_rate_p < 0.01, "{:?}", s.counts);
    assert!(r.envelope.given().is_some());
    let h = r.blocks.given().unwrap().held_out.as_ref().unwrap();
    assert_eq!((h.fitted, h.checked), (600, 600));
    // Without a rate or an order there is nothing to cut in time.
    let a = analyse(&Tail::ordered(&v, None), &o, false);
    assert!(a.regimes.is_none());
    // Not asked (compare, until-tail): not computed.
    let a = analyse(&Tail::ordered(&v, Some(1000.0)), &Options::default(), false);
    assert!(a.regimes.is_none());
}

#[test]
fn a_short_run_says_why_each_answer_is_missing() {
    let v = switching(2, 3);
    let r = analysed(&v);
    let Answer::NotGiven { why } = &r.blocks else {
        panic!("2 blocks fitted")
    };
    assert!(why.contains("2 blocks of 1 s, 100 needed"), "{why}");
    let Answer::NotGiven { why } = &r.envelope else {
        panic!("an envelope of 20 s")
    };
    assert!(why.contains("needed"), "{why}");
}
