//! What the held-out examples share: the recorded `--raw` run named on their command line,
//! each thread's wake-ups from it, and the tail `rtscope tail` reads from raw samples.

use rtscope_evt::threshold::{Point, MAX_EXCEEDANCES};
use rtscope_evt::{block_maxima, Tail};
use rtscope_store::{RunDetail, RunId, Store};
use std::path::Path;

/// The command line's arguments (DB RUN, then the example's own), the database opened read
/// only, and the run, which must hold raw samples. With fewer than two arguments, prints
/// `usage` and exits 2.
pub fn open(usage: &str) -> (Vec<String>, Store, RunId, RunDetail) {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 2 {
        eprintln!("{usage}");
        std::process::exit(2);
    }
    let store = Store::open_read_only(Path::new(&args[0])).expect("open the database");
    let id: RunId = args[1].parse().expect("RUN");
    let detail = store.run(id).expect("the run");
    assert!(
        detail.raw_samples > 0,
        "run {id} has no raw samples (measure --raw)"
    );
    (args, store, id, detail)
}

/// Every wake-up latency of `thread` in run `id`, ns, in time order (`capacity`: how many).
pub fn wakeups(store: &Store, id: RunId, thread: u32, capacity: u64) -> Vec<f64> {
    let mut all = Vec::with_capacity(capacity as usize);
    store
        .for_each_raw_chunk(id, thread, &mut |chunk| {
            all.extend(chunk.iter().map(|(_, latency, _)| *latency as f64));
            Ok(())
        })
        .expect("raw samples");
    all
}

/// The points `rtscope tail` keeps of raw samples `v` (in time order): the largest tenth, at
/// most [`MAX_EXCEEDANCES`] + 1 values, with their positions.
pub fn largest_tenth(v: &[f64]) -> Vec<Point> {
    let keep = (v.len() / 10).min(MAX_EXCEEDANCES) + 1;
    let mut sorted = v.to_vec();
    sorted.sort_by(f64::total_cmp);
    let floor = sorted[sorted.len().saturating_sub(keep)];
    (0..)
        .zip(v)
        .filter(|(_, &x)| x >= floor)
        .map(|(i, &value)| Point {
            index: Some(i),
            value,
        })
        .collect()
}

/// A tail of `v` (in time order) as `rtscope tail` reads a raw run: the largest tenth (at most
/// the threshold search's most) as points, every whole second's maximum.
pub fn tail_of(v: &[f64], hz: f64) -> Tail {
    Tail {
        observations: v.len() as u64,
        rate_hz: Some(hz),
        points: largest_tenth(v),
        ordered: true,
        binning: None,
        bins: None,
        max: v.iter().copied().fold(0.0, f64::max),
        block_maxima: block_maxima(v, hz.round() as usize),
    }
}

/// Episodes of `v` above `z`: runs of exceedances no more than `run` wake-ups apart.
pub fn episodes(v: &[f64], z: f64, run: f64) -> usize {
    let (mut n, mut last) = (0, None::<usize>);
    for (i, _) in v.iter().enumerate().filter(|(_, &x)| x > z) {
        if last.is_none_or(|l| (i - l) as f64 > run) {
            n += 1;
        }
        last = Some(i);
    }
    n
}
