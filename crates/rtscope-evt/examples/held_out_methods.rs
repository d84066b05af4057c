//! Held-out validation of every answer of `rtscope tail` on a recorded `--raw` run (a benchmark,
//! run by `bench/tail-answers-held-out.sh`, issue 50): per thread the run is cut into segments of
//! SEGMENT seconds; the even segments, joined, are fitted as `rtscope tail` fits a run and the
//! odd ones are held out. Each level is checked by counting what exceeded it in the held-out
//! part against what its probability predicts:
//!
//! - pot/wakeup: the peaks-over-threshold level per wake-up — held-out wake-ups above it;
//! - pot/episode: the level per episode — held-out episodes (wake-ups above it no more than the
//!   model's run length apart) whose maximum exceeds it, per held-out wake-up;
//! - pot/hour: the per-episode level once per hour — episodes above it per hour held out;
//! - envelope/wakeup: the worst-segment envelope's level per wake-up (its estimate: the
//!   largest of the worst segments' fit and every segment's own values);
//! - envelope/time: the envelope's per-time level, once per minute or 10 minutes of the worst
//!   segment (the level a 1 s block's maximum exceeds once per that time) — held-out blocks
//!   above it against the held-out minutes (or 10-minute spans), as gev/hour;
//! - gev/block: the block maxima's level per block — held-out blocks above it;
//! - gev/hour: its once-per-hour level — held-out blocks above it per hour held out;
//! - own/wakeup: the run's own values per wake-up (the ⌈pN⌉-th largest of the fitted half) —
//!   held-out wake-ups above it; its status says whether its test (one rate of episodes) passed;
//! - own/minute: the own values' level once per minute (the k-th largest episode maximum) —
//!   held-out episodes (the fitted half's run length) above it against the held-out minutes.
//!
//! A refused fit's POT levels are checked too (what `--unreliable` prints), marked "refused".
//!
//!     cargo run --release -p rtscope-evt --example held_out_methods -- DB RUN [SEGMENT_S]

mod raw_run;

use raw_run::{episodes, tail_of};
use rtscope_evt::regimes::observed::Observed;
use rtscope_evt::regimes::{Answer, BlockMaxima, Envelope};
use rtscope_evt::{analyse, block_maxima, gev, Options};

/// One row; `p` as printed (`1e-4`, or `1/60` per block).
fn row(thread: &str, method: &str, status: &str, p: &str, z: f64, expected: f64, observed: usize) {
    println!(
        "| {thread} | {method} | {status} | {p} | {:.1} | {expected:.1} | {observed} | {:.2} |",
        z / 1e3,
        observed as f64 / expected
    );
}

/// One thread's two halves: its name, wake-up rate, the even segments fitted and the odd ones
/// held out.
struct Split {
    name: String,
    hz: f64,
    fit: Vec<f64>,
    held: Vec<f64>,
}

/// The POT levels per wake-up and per episode (per hour among them) against the held-out part.
fn pot_rows(x: &Split, a: &rtscope_evt::Analysis, o: &Options) {
    let status = if a.accepted() { "accepted" } else { "refused" };
    let (name, held) = (&x.name, &x.held);
    let n_held = held.len() as f64;
    let hours_held = n_held / x.hz / 3600.0;
    for l in &a.wakeup_levels {
        let seen = held.iter().filter(|&&v| v > l.estimate_ns).count();
        let p = format!("{:.0e}", l.probability);
        row(
            name,
            "pot/wakeup",
            status,
            &p,
            l.estimate_ns,
            l.probability * n_held,
            seen,
        );
    }
    if let Some(m) = &a.model {
        for l in &a.levels {
            let seen = episodes(held, l.estimate_ns, m.run_length);
            let p = format!("{:.0e}", l.probability);
            match l.once_per_s {
                Some(s) if (s - 3600.0).abs() < 1e-6 => row(
                    name,
                    "pot/hour",
                    status,
                    &p,
                    l.estimate_ns,
                    hours_held,
                    seen,
                ),
                _ if o.probabilities.contains(&l.probability) => {
                    let expected = l.probability * n_held;
                    row(
                        name,
                        "pot/episode",
                        status,
                        &p,
                        l.estimate_ns,
                        expected,
                        seen,
                    )
                }
                _ => {}
            }
        }
    }
    if a.refusals
        .iter()
        .any(|r| matches!(r, rtscope_evt::Refusal::NotEstimable { .. }))
    {
        eprintln!("{name}: POT not estimable: no POT levels");
    }
}

/// The worst-segment envelope's levels per wake-up and per time against the held-out part.
fn envelope_rows(x: &Split, envelope: &Answer<Envelope>, held_blocks: &[f64]) {
    let (name, held) = (&x.name, &x.held);
    let e = match envelope {
        Answer::Given(e) => e,
        Answer::NotGiven { why } => return eprintln!("{name}: no envelope: {why}"),
    };
    let n_held = held.len() as f64;
    for w in &e.levels {
        let l = &w.level;
        let seen = held.iter().filter(|&&v| v > l.estimate_ns).count();
        let from = w.from_segment.map_or("given (the fit)".to_string(), |s| {
            format!("given (segment {s}'s values)")
        });
        let p = format!("{:.0e}", l.probability);
        row(
            name,
            "envelope/wakeup",
            &from,
            &p,
            l.estimate_ns,
            l.probability * n_held,
            seen,
        );
    }
    let nb = held_blocks.len() as f64;
    for w in &e.per_time.levels {
        let l = &w.level;
        let seen = held_blocks.iter().filter(|&&v| v > l.estimate_ns).count();
        let from = format!(
            "given (segment {}'s blocks), once per {:.0} s",
            w.from_segment, l.once_per_s
        );
        let p = format!("1/{:.0} per block", l.once_per_s);
        row(
            name,
            "envelope/time",
            &from,
            &p,
            l.estimate_ns,
            l.per_block * nb,
            seen,
        );
    }
    for n in &e.per_time.not_given {
        eprintln!(
            "{name}: envelope once per {:.0} s: not given: {}",
            n.once_per_s, n.why
        );
    }
    if let Some(why) = &e.fit_refused {
        eprintln!("{name}: envelope: no fit beyond one segment: {why}");
    }
    for n in &e.not_given {
        eprintln!(
            "{name}: envelope at {:.0e}: not given: {}",
            n.probability, n.why
        );
    }
}

/// The run's own values per wake-up and once per minute against the held-out part.
fn own_rows(x: &Split, observed: &Answer<Observed>) {
    let (name, held) = (&x.name, &x.held);
    let o = match observed {
        Answer::Given(o) => o,
        Answer::NotGiven { why } => return eprintln!("{name}: no own values: {why}"),
    };
    let status = if o.tested { "tested" } else { "UNTESTED" };
    let n_held = held.len() as f64;
    for l in &o.levels {
        let seen = held.iter().filter(|&&v| v > l.estimate_ns).count();
        let p = format!("{:.0e}", l.probability);
        row(
            name,
            "own/wakeup",
            status,
            &p,
            l.estimate_ns,
            l.probability * n_held,
            seen,
        );
    }
    for l in o.per_time.iter().filter(|l| l.once_per_s == 60.0) {
        let seen = episodes(held, l.estimate_ns, o.run_length);
        let minutes = n_held / x.hz / 60.0;
        row(
            name,
            "own/minute",
            status,
            "1/minute",
            l.estimate_ns,
            minutes,
            seen,
        );
    }
    for n in &o.not_given {
        eprintln!(
            "{name}: own values {:?}/{:?}: not given: {}",
            n.probability, n.once_per_s, n.why
        );
    }
    eprintln!("{name}: own values' test: {}", o.test.words());
}

/// The 1 s block maxima's GEV levels per block and once per hour against the held-out blocks.
fn gev_rows(x: &Split, blocks: &Answer<BlockMaxima>, held_blocks: &[f64]) {
    let name = &x.name;
    match (
        blocks,
        gev::choose(&block_maxima(&x.fit, x.hz.round() as usize)),
    ) {
        (Answer::Given(b), Some((_, f))) if b.block_s == 1.0 => {
            let nb = held_blocks.len() as f64;
            for q in [1e-1, 1e-2, 1e-3] {
                let z = f.gev.level(q);
                let seen = held_blocks.iter().filter(|&&v| v > z).count();
                row(
                    name,
                    "gev/block",
                    "given",
                    &format!("{q:.0e}"),
                    z,
                    q * nb,
                    seen,
                );
            }
            let z = f.gev.level(1.0 / 3600.0);
            let seen = held_blocks.iter().filter(|&&v| v > z).count();
            row(
                name,
                "gev/hour",
                "given",
                "1/3600 per block",
                z,
                nb / 3600.0,
                seen,
            );
        }
        (Answer::NotGiven { why }, _) => eprintln!("{name}: no block maxima: {why}"),
        _ => eprintln!(
            "{name}: block maxima of 1 min (a run of 200 min or more): not checked per second"
        ),
    }
}

fn main() {
    let (args, store, id, detail) =
        raw_run::open("usage: held_out_methods DB RUN [SEGMENT_S (60)]");
    let segment_s: f64 = args.get(2).map_or(60.0, |s| s.parse().expect("SEGMENT_S"));
    println!("| thread | method | fit | p | level µs | expected | observed | ratio |");
    println!("|---|---|---|---|---|---|---|---|");
    for t in &detail.threads {
        assert!(t.interval_ns > 0, "thread {} has no interval", t.thread);
        let hz = 1e9 / t.interval_ns as f64;
        let all = raw_run::wakeups(&store, id, t.thread, t.figures.samples);
        // Segments of whole seconds, so that blocks do not straddle the joins.
        let per = ((segment_s * hz).round() as usize).max(hz.round() as usize);
        let (mut fit, mut held) = (Vec::new(), Vec::new());
        for (k, s) in all.chunks(per).enumerate() {
            if k % 2 == 0 { &mut fit } else { &mut held }.extend_from_slice(s);
        }
        let name = t
            .cpu
            .map_or(format!("thread {}", t.thread), |c| format!("CPU {c}"));
        eprintln!(
            "{name}: {} wake-ups fitted, {} held out, segments of {segment_s} s",
            fit.len(),
            held.len()
        );
        let x = Split {
            name,
            hz,
            fit,
            held,
        };
        let o = Options {
            probabilities: vec![1e-3, 1e-4, 1e-5],
            regimes: true,
            ..Options::default()
        };
        let a = analyse(&tail_of(&x.fit, hz), &o, true);
        pot_rows(&x, &a, &o);
        let Some(r) = &a.regimes else { continue };
        let held_blocks = block_maxima(&x.held, hz.round() as usize);
        envelope_rows(&x, &r.envelope, &held_blocks);
        gev_rows(&x, &r.blocks, &held_blocks);
        own_rows(&x, &r.observed);
    }
}
