//! Every split of a recorded `--raw` run into a fitted half and a held-out half, for the run's
//! own values (issue 66 item 4; a benchmark, run by `bench/tail-held-out-splits.sh`): the run
//! is cut into segments of SEGMENT seconds (60 unless said), and each way of choosing half of
//! them (252 for a 10-minute run) is fitted as `rtscope tail` fits a run, the other half held
//! out. For the own values at 1e-4 per wake-up and once per minute it prints, over the splits:
//! how many answers were tested (their test of one episode rate passed), how many held within
//! 1.5× of the stated rate (held-out exceedances over expected), and how many held within
//! counting noise (the held-out episodes above the level against the fitted half's own, a
//! two-sided binomial test at 95 %: the level was read off the fitted half, so even an exact
//! method misses 1.5× that often when few episodes are expected), and how often the held-out
//! part exceeded the level's upper bound (what a gate passes on) at most 1.5× as often as the
//! rate says.
//!
//! The worst-segment envelope's level at 1e-4 per wake-up too: an upper envelope, so it holds
//! when the held-out part exceeds it no more often than its rate allows with counting noise
//! (one-sided, a Poisson of the expected count); its "tested" column counts the splits where
//! it was given.
//!
//! Beside the run, the same splits of **stationary surrogates** of it: its 1 s blocks in a
//! random order (seeds 1–4), which keeps each second's clustering and the run's distribution
//! and removes any change between minutes. What the surrogates reach is what the method can
//! reach on a run of this length with this clustering when the load does not change; the run
//! falling short of its surrogates is the load changing between minutes.
//!
//!     cargo run --release -p rtscope-evt --example held_out_splits -- DB RUN [SEGMENT_S]

mod raw_run;

use raw_run::{episodes, tail_of};
use rtscope_evt::regimes::observed::Observed;
use rtscope_evt::regimes::{regimes, Answer, Envelope};
use rtscope_evt::Options;
use statrs::distribution::{Binomial, DiscreteCDF, Poisson};

/// The probability per wake-up checked.
const P: f64 = 1e-4;
/// The stationary surrogates' seeds.
const SEEDS: [u64; 4] = [1, 2, 3, 4];

/// One answer's check on one split.
#[derive(Default, Clone, Copy)]
struct Check {
    tested: bool,
    ratio: f64,
    in_band: bool,
    /// The held-out part exceeded the upper bound at most 1.5× as often as the rate says.
    upper_held: bool,
}

/// Counts over the splits of one answer.
#[derive(Default)]
struct Tally {
    splits: usize,
    given: usize,
    tested: usize,
    within: usize,
    tested_within: usize,
    tested_in_band: usize,
    tested_upper_held: usize,
    ratios: Vec<f64>,
}

impl Tally {
    fn add(&mut self, c: Option<Check>) {
        self.splits += 1;
        let Some(c) = c else { return };
        self.given += 1;
        self.ratios.push(c.ratio);
        let within = c.ratio <= 1.5;
        self.within += usize::from(within);
        if c.tested {
            self.tested += 1;
            self.tested_within += usize::from(within);
            self.tested_in_band += usize::from(c.in_band);
            self.tested_upper_held += usize::from(c.upper_held);
        }
    }

    fn merge(&mut self, o: Tally) {
        self.splits += o.splits;
        self.given += o.given;
        self.tested += o.tested;
        self.within += o.within;
        self.tested_within += o.tested_within;
        self.tested_in_band += o.tested_in_band;
        self.tested_upper_held += o.tested_upper_held;
        self.ratios.extend(o.ratios);
    }

    fn row(&mut self, run: &str, answer: &str) {
        self.ratios.sort_by(f64::total_cmp);
        let pct = |k: usize, of: usize| {
            if of == 0 {
                "–".to_string()
            } else {
                format!("{:.0} %", 100.0 * k as f64 / of as f64)
            }
        };
        let q = |f: f64| {
            self.ratios
                .get(((self.ratios.len() as f64 - 1.0) * f).round() as usize)
                .map_or("–".into(), |r| format!("{r:.2}"))
        };
        println!(
            "| {run} | {answer} | {} | {} | {} | {} | {} | {} | {} | {} / {} / {} / {} |",
            self.splits,
            self.given,
            self.tested,
            pct(self.within, self.given),
            pct(self.tested_within, self.tested),
            pct(self.tested_in_band, self.tested),
            pct(self.tested_upper_held, self.tested),
            q(0.5),
            q(0.1),
            q(0.9),
            q(1.0),
        );
    }
}

/// Whether `held` episodes in the held-out part and `fit` in the fitted part (above the same
/// level) are within counting noise of one rate: the held-out count given the total, against a
/// binomial of the held-out part's share `share` (two-sided, 95 %). The level was read off the
/// fitted part, so the held-out count is compared with the fitted part's own, not with a
/// known rate.
fn in_band(held: usize, fit: usize, share: f64) -> bool {
    let total = (held + fit) as u64;
    if total == 0 {
        return true;
    }
    let b = Binomial::new(share, total).expect("a share in [0, 1]");
    let h = held as u64;
    let below = if h == 0 { 0.0 } else { b.cdf(h - 1) };
    below < 0.975 && b.cdf(h) > 0.025
}

/// The own values at 1e-4 per wake-up and once per minute of one split, checked on `held`.
fn check(o: &Observed, fit: &[f64], held: &[f64], hz: f64) -> (Option<Check>, Option<Check>) {
    let n_held = held.len() as f64;
    let share = n_held / (n_held + fit.len() as f64);
    let wakeup = o.levels.iter().find(|l| l.probability == P).map(|l| {
        let seen = held.iter().filter(|&&v| v > l.estimate_ns).count();
        let expected = P * n_held;
        let run = o.run_length;
        Check {
            tested: o.tested,
            ratio: seen as f64 / expected,
            in_band: in_band(
                episodes(held, l.estimate_ns, run),
                episodes(fit, l.estimate_ns, run),
                share,
            ),
            upper_held: held.iter().filter(|&&v| v > l.upper_ns).count() as f64 <= 1.5 * expected,
        }
    });
    let minute = o.per_time.iter().find(|l| l.once_per_s == 60.0).map(|l| {
        let seen = episodes(held, l.estimate_ns, o.run_length);
        let minutes = n_held / hz / 60.0;
        Check {
            tested: o.tested,
            ratio: seen as f64 / minutes,
            in_band: in_band(seen, episodes(fit, l.estimate_ns, o.run_length), share),
            upper_held: episodes(held, l.upper_ns, o.run_length) as f64 <= 1.5 * minutes,
        }
    });
    (wakeup, minute)
}

/// The worst-segment envelope's level at 1e-4 per wake-up of one split, checked on `held`: an
/// upper envelope holds when the held-out part does not exceed it more often than its rate
/// by more than counting noise (less often is what it promises), so its band is one-sided
/// and against the stated rate; "tested" stands for given.
fn envelope_check(e: &Envelope, held: &[f64]) -> Option<Check> {
    let l = e.levels.iter().find(|l| l.level.probability == P)?;
    let z = l.level.estimate_ns;
    let expected = P * held.len() as f64;
    let seen = held.iter().filter(|&&v| v > z).count();
    // Above the stated rate by more than counting noise: the held-out count past the 97.5 %
    // point of a Poisson of the expected count (wake-ups as if independent: stricter than
    // the episodes' count).
    let above = Poisson::new(expected)
        .ok()?
        .cdf(seen.saturating_sub(1) as u64)
        >= 0.975;
    Some(Check {
        tested: true,
        ratio: seen as f64 / expected,
        in_band: seen == 0 || !above,
        upper_held: l
            .level
            .upper_ns
            .is_some_and(|u| held.iter().filter(|&&v| v > u).count() as f64 <= 1.5 * expected),
    })
}

/// Every choice of `half` of `n` segments (bit masks, ascending).
fn halves(n: usize, half: usize) -> Vec<u32> {
    (0u32..1 << n)
        .filter(|m| m.count_ones() as usize == half)
        .collect()
}

/// The run's 1 s blocks in a random order (seed `seed`): a stationary surrogate.
fn surrogate(all: &[f64], hz: f64, seed: u64) -> Vec<f64> {
    let mut blocks: Vec<&[f64]> = all.chunks(hz.round() as usize).collect();
    let mut g = rtscope_evt::diag::generator(seed);
    for i in (1..blocks.len()).rev() {
        blocks.swap(i, g.below(i + 1));
    }
    blocks.concat()
}

/// Every split of `all` (segments of `per` wake-ups) checked, tallied per answer.
fn splits(all: &[f64], hz: f64, per: usize, o: &Options) -> [Tally; 3] {
    // A last segment short of a whole one by the deadlines the run missed (a 10-minute run at
    // 1 ms holds fewer than 600,000 wake-ups) counts; a shorter rest does not.
    let segs: Vec<&[f64]> = all
        .chunks(per)
        .filter(|s| s.len() * 10 >= per * 9)
        .collect();
    let [mut wakeup, mut minute, mut envelope] = [(); 3].map(|()| Tally::default());
    for mask in halves(segs.len(), segs.len() / 2) {
        let (mut fit, mut held) = (Vec::new(), Vec::new());
        for (k, s) in segs.iter().enumerate() {
            if mask >> k & 1 == 1 {
                &mut fit
            } else {
                &mut held
            }
            .extend_from_slice(s);
        }
        let r = regimes(&tail_of(&fit, hz), o);
        let checks = match r.as_ref().map(|r| &r.observed) {
            Some(Answer::Given(ob)) => check(ob, &fit, &held, hz),
            _ => (None, None),
        };
        wakeup.add(checks.0);
        minute.add(checks.1);
        envelope.add(match r.as_ref().map(|r| &r.envelope) {
            Some(Answer::Given(e)) => envelope_check(e, &held),
            _ => None,
        });
    }
    [wakeup, minute, envelope]
}

fn main() {
    let (args, store, id, detail) = raw_run::open("usage: held_out_splits DB RUN [SEGMENT_S (60)]");
    let segment_s: f64 = args.get(2).map_or(60.0, |s| s.parse().expect("SEGMENT_S"));
    let o = Options {
        probabilities: vec![P],
        regimes: true,
        ..Options::default()
    };
    let label = detail
        .summary
        .label
        .clone()
        .unwrap_or_else(|| format!("run {id}"));
    println!(
        "| run | answer | splits | given | tested | within 1.5× (given) | within 1.5× (tested) \
         | in the 95 % band (tested) | upper bound within 1.5× (tested) \
         | ratio median / p10 / p90 / max |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for t in &detail.threads {
        assert!(t.interval_ns > 0, "thread {} has no interval", t.thread);
        let hz = 1e9 / t.interval_ns as f64;
        let all = raw_run::wakeups(&store, id, t.thread, t.figures.samples);
        let per = ((segment_s * hz).round() as usize).max(hz.round() as usize);
        assert!(
            all.len() / per <= 16,
            "at most 16 segments (12,870 splits): give a longer SEGMENT_S"
        );
        const ANSWERS: [&str; 3] = [
            "own 1e-4/wake-up",
            "own once per minute",
            "envelope 1e-4/wake-up",
        ];
        for (mut t, answer) in splits(&all, hz, per, &o).into_iter().zip(ANSWERS) {
            t.row(&label, answer);
        }
        let mut shuffled = [(); 3].map(|()| Tally::default());
        for seed in SEEDS {
            let each = splits(&surrogate(&all, hz, seed), hz, per, &o);
            for (to, from) in shuffled.iter_mut().zip(each) {
                to.merge(from);
            }
        }
        let name = format!("{label}, 1 s blocks shuffled");
        for (mut t, answer) in shuffled.into_iter().zip(ANSWERS) {
            t.row(&name, answer);
        }
    }
}
