//! The gaps a noise run keeps, bounded: a loop on a noisy CPU with a low threshold can report
//! a gap every few microseconds, millions in a minute, and each is kept in memory, in the JSON
//! and as a row of the run database. A run keeps at most `capacity` gaps per CPU — the longest,
//! so the worst gaps are never the ones let go — and counts the rest (they stay in the totals
//! and the histogram). On a 1 GB board a 4 s run that kept 1.9 million gaps was killed by the
//! out-of-memory killer while it wrote its JSON.

use rtscope_core::Nanos;
use rtscope_engine::noise::Gap;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// The default number of gaps kept per CPU: 24 bytes each in memory, a row each in the store.
pub const DEFAULT_KEEP_GAPS: usize = 100_000;

/// The longest gaps of one CPU, at most `capacity` of them.
#[derive(Debug)]
pub struct KeptGaps {
    capacity: usize,
    heap: BinaryHeap<Reverse<(u64, u64, Option<u32>)>>,
    not_kept: u64,
}

impl KeptGaps {
    /// An empty set that keeps at most `capacity` gaps (at least one).
    pub fn new(capacity: usize) -> Self {
        KeptGaps {
            capacity: capacity.max(1),
            heap: BinaryHeap::new(),
            not_kept: 0,
        }
    }

    /// Adds a gap; when full, the shortest of the kept ones and the new one is let go.
    pub fn push(&mut self, g: Gap) {
        let item = Reverse((g.duration.0, g.start.0, g.smis));
        if self.heap.len() < self.capacity {
            self.heap.push(item);
            return;
        }
        self.not_kept += 1;
        if let Some(mut shortest) = self.heap.peek_mut() {
            if item < *shortest {
                *shortest = item;
            }
        }
    }

    /// Gaps over the threshold let go to stay within the capacity.
    pub fn not_kept(&self) -> u64 {
        self.not_kept
    }

    /// The kept gaps in time order.
    pub fn into_sorted(self) -> Vec<Gap> {
        let mut v: Vec<Gap> = self
            .heap
            .into_iter()
            .map(|Reverse((duration, start, smis))| Gap {
                start: Nanos(start),
                duration: Nanos(duration),
                smis,
            })
            .collect();
        v.sort_by_key(|g| (g.start, g.duration));
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gap(start: u64, duration: u64) -> Gap {
        Gap {
            start: Nanos(start),
            duration: Nanos(duration),
            smis: None,
        }
    }

    #[test]
    fn the_longest_gaps_are_kept_in_time_order_and_the_rest_counted() {
        let mut k = KeptGaps::new(3);
        for (s, d) in [(10, 5), (20, 50), (30, 1), (40, 7), (50, 2), (60, 50)] {
            k.push(gap(s, d));
        }
        assert_eq!(k.not_kept(), 3);
        assert_eq!(k.into_sorted(), vec![gap(20, 50), gap(40, 7), gap(60, 50)]);
    }

    #[test]
    fn below_the_capacity_everything_is_kept() {
        let mut k = KeptGaps::new(10);
        k.push(gap(2, 1));
        k.push(gap(1, 1));
        assert_eq!(k.not_kept(), 0);
        assert_eq!(k.into_sorted(), vec![gap(1, 1), gap(2, 1)]);
    }
}
