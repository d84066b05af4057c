//! The CPU load: `threads` threads spinning on integer arithmetic.
//!
//! Reports `ops` (arithmetic steps: one 64-bit xorshift plus one multiply each) and
//! `ops_rate` (ops/s).

use super::{rate, Outcome, Running, Stop, Workers};
use crate::{LoadError, Metric};

/// Steps between two looks at the stop flag (about a millisecond).
const BATCH: u64 = 1 << 18;

/// Starts `threads` spinning threads.
pub fn start(threads: u32, stop: &Stop) -> Result<Box<dyn Running>, LoadError> {
    let w = Workers::spawn(threads, "cpu", stop, |i, stop| Ok(spin(i as u64 + 1, stop)))?;
    Ok(Box::new(Cpu(w)))
}

/// Spins until `stop`; returns the steps done.
fn spin(seed: u64, stop: &Stop) -> u64 {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut ops = 0;
    while !stop.is_set() {
        for _ in 0..BATCH {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x = x.wrapping_mul(0x2545_F491_4F6C_DD1D);
        }
        std::hint::black_box(x);
        ops += BATCH;
    }
    ops
}

struct Cpu(Workers<u64>);

impl Running for Cpu {
    fn finish(self: Box<Self>) -> Outcome {
        let (counts, error, took) = self.0.join();
        let ops = counts.iter().sum::<u64>() as f64;
        Outcome {
            metrics: vec![
                Metric::new("ops", ops, "ops"),
                Metric::new("ops_rate", rate(ops, took), "ops/s"),
            ],
            error,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spins_until_stopped_and_counts() {
        let stop = Stop::new();
        let load = start(2, &stop).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(200));
        stop.set();
        let out = load.finish();
        assert!(out.error.is_none());
        assert_eq!(out.metrics[0].name, "ops");
        assert!(
            out.metrics[0].value >= (2 * BATCH) as f64,
            "{:?}",
            out.metrics
        );
        assert!(out.metrics[1].value > 0.0);
    }
}
