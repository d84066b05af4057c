//! The threshold a gap must exceed to count as noise, and the pre-heat that measures the loop's
//! resolution before the run.
//!
//! A gap is the loop's own cost plus whatever took the CPU away, so a threshold at or below
//! the loop's cost counts every iteration as noise: on a QEMU TCG guest, whose clock reads take
//! about 1.1 µs, a 1 µs threshold made a 4 s run "0 % available" with 1.9 million "gaps". Each
//! loop therefore spins a pre-heat before the run (warming its caches, TLB and branch
//! predictor, and letting a CPU frequency governor ramp up, as oslat's pre-heat does) and takes
//! its shortest gap there as its resolution. A threshold given by the user is then kept exactly
//! or the run refused; the default one is raised, visibly, to where the loop can resolve it.

use super::counter::{self, Anchor, Calibration, CounterKind, MIN_CALIBRATION};
use super::state::{spin, NoiseShared};
use crate::{sys, EngineError};
use rtscope_core::Nanos;
use std::sync::atomic::Ordering::Relaxed;

/// The fewest iterations a pre-heat spins, however short it is asked to be: enough for a
/// shortest gap that is the loop's cost, not a first iteration's cache misses.
pub const PREHEAT_MIN_ITERATIONS: u64 = 1000;

/// The threshold a gap must exceed to be recorded and counted as noise.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Threshold {
    /// Exactly this (given by the user): a run whose loop cannot iterate below it is refused.
    Given(Nanos),
    /// The default: this, raised to twice the slowest loop's resolution (rounded up to a whole
    /// microsecond) when that is more.
    Default(Nanos),
}

impl Threshold {
    /// The threshold asked for.
    pub fn requested(&self) -> Nanos {
        match *self {
            Threshold::Given(t) | Threshold::Default(t) => t,
        }
    }

    /// The threshold the loops run with, given each CPU's resolution from its pre-heat.
    pub fn resolve(&self, resolutions: &[(usize, Nanos)]) -> Result<Nanos, EngineError> {
        let Some(&(cpu, slowest)) = resolutions.iter().max_by_key(|(_, r)| *r) else {
            return Ok(self.requested());
        };
        match *self {
            Threshold::Given(t) if slowest >= t => Err(EngineError::ThresholdBelowResolution {
                cpu,
                resolution: slowest,
                threshold: t,
                suggested: raised(slowest),
            }),
            Threshold::Given(t) => Ok(t),
            Threshold::Default(t) => Ok(t.max(raised(slowest))),
        }
    }
}

/// Twice `resolution`, rounded up to a whole microsecond.
fn raised(resolution: Nanos) -> Nanos {
    Nanos(
        resolution
            .0
            .saturating_mul(2)
            .div_ceil(1000)
            .saturating_mul(1000),
    )
}

/// What a pre-heat found on its CPU.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Preheated {
    /// The loop's shortest gap.
    pub resolution: Nanos,
    /// The counter's rate (identity for the vDSO clock).
    pub cal: Calibration,
    /// The anchor at the pre-heat's start, from which the run recalibrates.
    pub origin: Anchor,
}

/// Spins the loop for `length` (at least [`PREHEAT_MIN_ITERATIONS`], and for a raw counter at
/// least [`MIN_CALIBRATION`], over which it is calibrated) without recording a gap, returns its
/// shortest gap above 0 (one iteration, or one tick of a counter slower than the loop) and the counter's rate and leaves the histogram empty again. Runs on the
/// loop's own thread after its set-up, before the run starts.
pub(crate) fn preheat(sh: &NoiseShared, length: Nanos, kind: CounterKind) -> Preheated {
    let length = match kind {
        CounterKind::Clock => length,
        _ => length.max(MIN_CALIBRATION),
    };
    let origin = counter::anchor(kind);
    let until = origin.ns.saturating_add(length.0);
    let mut read = || counter::read(kind);
    // In ticks: the histogram holds ticks until the rate is known.
    let ticks = (Calibration::IDENTITY, origin);
    let (mut prev, mut iterations) = (origin.tick, 0u64);
    // One iteration per call (the next reading after `prev`), counted here: the histogram is
    // not summed in the loop; the clock is read every 64 iterations.
    loop {
        for _ in 0..64 {
            prev = spin(sh, &mut read, ticks, prev, prev.saturating_add(1), u64::MAX);
        }
        iterations += 64;
        if iterations >= PREHEAT_MIN_ITERATIONS && sys::now(libc::CLOCK_MONOTONIC).0 >= until {
            break;
        }
    }
    let end = counter::anchor(kind);
    let cal = Calibration::between(origin, end).unwrap_or(Calibration::IDENTITY);
    // The shortest gap that is not 0: a loop faster than the counter ticks (CNTVCT_EL0 at
    // 54 MHz on a Raspberry Pi, 8 MHz on an i.MX8) reads the same value twice, and its
    // resolution is then one tick, not 0 (in ticks here: exact below 2,048).
    let shortest = (1..sh.hist.len())
        .find(|&i| sh.hist[i].load(Relaxed) > 0)
        .map_or(0, rtscope_core::layout::lowest_of);
    for bucket in sh.hist.iter() {
        bucket.store(0, Relaxed);
    }
    Preheated {
        resolution: Nanos(cal.ns(shortest).max(1)),
        cal,
        origin,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_given_threshold_is_kept_or_the_run_refused() {
        let t = Threshold::Given(Nanos::from_us(1));
        assert_eq!(
            t.resolve(&[(0, Nanos(40)), (1, Nanos(60))]).unwrap(),
            Nanos(1000)
        );
        match t.resolve(&[(0, Nanos(40)), (3, Nanos(1110))]) {
            Err(EngineError::ThresholdBelowResolution {
                cpu,
                resolution,
                suggested,
                ..
            }) => assert_eq!((cpu, resolution, suggested), (3, Nanos(1110), Nanos(3000))),
            other => panic!("{other:?}"),
        }
        // Equal is refused too: every iteration would be over it.
        assert!(t.resolve(&[(0, Nanos(1000))]).is_err());
    }

    #[test]
    fn the_default_is_raised_to_twice_the_slowest_resolution_in_whole_microseconds() {
        let t = Threshold::Default(Nanos::from_us(1));
        assert_eq!(t.resolve(&[(0, Nanos(35))]).unwrap(), Nanos(1000));
        assert_eq!(t.resolve(&[(0, Nanos(500))]).unwrap(), Nanos(1000));
        assert_eq!(t.resolve(&[(0, Nanos(501))]).unwrap(), Nanos(2000));
        assert_eq!(
            t.resolve(&[(0, Nanos(40)), (1, Nanos(1110))]).unwrap(),
            Nanos(3000)
        );
        assert_eq!(t.resolve(&[]).unwrap(), Nanos(1000));
    }

    #[test]
    fn the_preheat_finds_the_loops_cost_and_leaves_nothing_counted() {
        let raw = counter::native_raw().unwrap_or(CounterKind::Clock);
        for kind in [CounterKind::Clock, raw] {
            let sh = NoiseShared::new(4);
            let p = preheat(&sh, Nanos::from_ms(2), kind);
            let r = p.resolution;
            assert!(r > Nanos::ZERO && r < Nanos::from_ms(1), "{kind:?}: {r:?}");
            let t = sh.totals();
            assert_eq!((t.iterations(), t.over, t.noise), (0, 0, Nanos::ZERO));
            assert_eq!(sh.ring().drain(|_| {}), 0);
            if kind == CounterKind::Clock {
                assert_eq!(p.cal, Calibration::IDENTITY);
            } else {
                // A raw counter is calibrated over at least MIN_CALIBRATION (100 ms), whatever the pre-heat.
                let now = counter::anchor(kind);
                assert!(now.ns - p.origin.ns >= MIN_CALIBRATION.0);
            }
        }
    }
}
