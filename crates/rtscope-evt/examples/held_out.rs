//! Held-out validation of `rtscope tail` on a recorded `--raw` run (a benchmark, run by
//! `bench/tail-held-out.sh`): per thread, the tail is fitted on the first FRACTION of the
//! wake-ups exactly as `rtscope tail` fits a run, and each estimated level is checked against
//! the rest — how many of the held-out wake-ups exceeded it, against the count the estimate
//! predicts (probability × held-out wake-ups), and over the confidence interval.
//!
//!     cargo run --release -p rtscope-evt --example held_out -- DB RUN [FRACTION] [P,P,...]
//!
//! Prints one table per thread (markdown rows) and the diagnostics' verdict of the fit.

// Each example uses its part of the shared module.
#[allow(dead_code)]
mod raw_run;

use rtscope_evt::{analyse, Options, Tail};

fn main() {
    let (args, store, id, detail) =
        raw_run::open("usage: held_out DB RUN [FRACTION (0.1)] [P,P,... (1e-3,1e-4,1e-5,1e-6)]");
    let fraction: f64 = args.get(2).map_or(0.1, |f| f.parse().expect("FRACTION"));
    let probabilities: Vec<f64> = args.get(3).map_or(vec![1e-3, 1e-4, 1e-5, 1e-6], |p| {
        p.split(',').map(|x| x.parse().expect("P")).collect()
    });
    for t in &detail.threads {
        let all = raw_run::wakeups(&store, id, t.thread, t.figures.samples);
        let cut = (all.len() as f64 * fraction) as usize;
        let (fit_part, held) = all.split_at(cut);
        let rate_hz = (t.interval_ns > 0).then(|| 1e9 / t.interval_ns as f64);
        let o = Options {
            probabilities: probabilities.clone(),
            ..Options::default()
        };
        let a = analyse(&tail_of(fit_part, rate_hz), &o, true);
        let cpu = t.cpu.map_or("-".into(), |c| c.to_string());
        println!(
            "run {id} CPU {cpu}: fitted on the first {} of {} wake-ups (max {:.1} us), held out {} (max {:.1} us); {}",
            fit_part.len(),
            all.len(),
            max(fit_part) / 1e3,
            held.len(),
            max(held) / 1e3,
            if a.accepted() {
                "the fit passed every diagnostic".to_string()
            } else {
                let why: Vec<String> = a.refusals.iter().map(|r| r.to_string()).collect();
                format!("REFUSED ({}): levels shown as unreliable", why.join("; "))
            }
        );
        if let Some(m) = &a.model {
            println!(
                "threshold {:.1} us, {} clusters, xi {:.3}, tail {:?}",
                m.threshold_ns / 1e3,
                m.clusters,
                m.gpd.xi,
                m.shape
            );
        }
        println!("| p per wake-up | estimate (us) | interval (us) | predicted | observed | over the interval |");
        println!("|---|---|---|---|---|---|");
        // The levels asked for (rtscope tail adds once an hour, a day, ... at the run's rate).
        for l in a
            .levels
            .iter()
            .filter(|l| probabilities.contains(&l.probability))
        {
            let count = |z: f64| held.iter().filter(|&&x| x > z).count();
            let predicted = l.probability * held.len() as f64;
            let upper = l
                .upper_ns
                .map_or("unbounded".into(), |u| format!("{:.1}", u / 1e3));
            let at_hi = l.upper_ns.map_or("0".into(), |u| count(u).to_string());
            println!(
                "| {:e} | {:.1} | {:.1} .. {upper} | {predicted:.1} | {} | {at_hi} .. {} |",
                l.probability,
                l.estimate_ns / 1e3,
                l.lower_ns / 1e3,
                count(l.estimate_ns),
                count(l.lower_ns),
            );
        }
        println!();
    }
}

fn max(v: &[f64]) -> f64 {
    v.iter().copied().fold(0.0, f64::max)
}

/// The tail `rtscope tail` reads from raw samples: the largest tenth of the run
/// ([`raw_run::largest_tenth`]) with their positions, in time order.
fn tail_of(v: &[f64], rate_hz: Option<f64>) -> Tail {
    Tail {
        observations: v.len() as u64,
        rate_hz,
        points: raw_run::largest_tenth(v),
        ordered: true,
        binning: None,
        bins: None,
        max: max(v),
        block_maxima: Vec::new(),
    }
}
