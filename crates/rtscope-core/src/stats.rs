//! Summary statistics of one thread or of a whole run.

use crate::Nanos;

/// Count, extremes, mean and missed periods of a set of latency samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Stats {
    /// Number of samples: one per wake-up (missed deadlines are counted in `missed`, not here).
    pub count: u64,
    /// Smallest latency.
    pub min: Nanos,
    /// Largest latency (exact).
    pub max: Nanos,
    /// Sum of all latencies in ns (for the mean).
    pub sum_ns: u128,
    /// Wake-up number (0-based) of the maximum.
    pub max_cycle: u64,
    /// Clock reading (ns on the run's clock) at the wake-up that produced the maximum.
    pub max_time: Nanos,
    /// Deadlines that passed without a wake-up in their period (see the engine docs for the rule).
    pub missed: u64,
}

impl Stats {
    /// The arithmetic mean in ns, `None` without samples.
    pub fn mean_ns(&self) -> Option<f64> {
        (self.count > 0).then(|| self.sum_ns as f64 / self.count as f64)
    }

    /// Deadlines the samples were due at: the wake-ups plus the missed deadlines.
    pub fn deadlines(&self) -> u64 {
        self.count.saturating_add(self.missed)
    }

    /// The deadline-miss ratio: missed deadlines over all deadlines (0 … 1), `None` without any.
    pub fn miss_ratio(&self) -> Option<f64> {
        let d = self.deadlines();
        (d > 0).then(|| self.missed as f64 / d as f64)
    }

    /// Combines two sets of samples. The maximum's cycle and time come from whichever holds it.
    pub fn merge(&self, other: &Stats) -> Stats {
        if self.count == 0 {
            return Stats {
                missed: self.missed + other.missed,
                ..*other
            };
        }
        if other.count == 0 {
            return Stats {
                missed: self.missed + other.missed,
                ..*self
            };
        }
        let (max, max_cycle, max_time) = if other.max > self.max {
            (other.max, other.max_cycle, other.max_time)
        } else {
            (self.max, self.max_cycle, self.max_time)
        };
        Stats {
            count: self.count + other.count,
            min: self.min.min(other.min),
            max,
            sum_ns: self.sum_ns + other.sum_ns,
            max_cycle,
            max_time,
            missed: self.missed + other.missed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_keeps_the_larger_maximum_with_its_cycle() {
        let a = Stats {
            count: 2,
            min: Nanos(5),
            max: Nanos(50),
            sum_ns: 55,
            max_cycle: 1,
            max_time: Nanos(10),
            missed: 0,
        };
        let b = Stats {
            count: 1,
            min: Nanos(7),
            max: Nanos(70),
            sum_ns: 70,
            max_cycle: 0,
            max_time: Nanos(3),
            missed: 1,
        };
        let m = a.merge(&b);
        assert_eq!(
            (m.count, m.min, m.max, m.max_cycle, m.missed),
            (3, Nanos(5), Nanos(70), 0, 1)
        );
        assert_eq!(m.mean_ns(), Some(125.0 / 3.0));
        assert_eq!(Stats::default().merge(&a), a);
    }
}
