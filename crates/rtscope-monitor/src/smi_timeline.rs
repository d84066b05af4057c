//! SMIs placed in time, for the spikes of a wake-up measurement (`measure --explain`).
//!
//! A measuring thread never reads the SMI counter (it does the clock read, the sleep and a
//! store), and no other thread reads a measured CPU's counter either: the msr driver reads
//! another CPU's register by interrupting it. An SMI stops every CPU at once (Intel broadcasts
//! them), so a thread on a housekeeping CPU reads its own CPU's counter every millisecond and
//! keeps the read intervals across which it advanced. A spike overlapping such an interval had
//! an SMI within about a millisecond of it; one whose time is covered by reads that saw none had
//! none. The timeline keeps only the intervals with SMIs, so it stays small on any machine
//! whose firmware does not interrupt it thousands of times a second.

use crate::smi::smis_between;
use std::collections::VecDeque;

/// How many read intervals with SMIs are kept; the oldest go first (and the spikes in them
/// are not decided).
pub const CAPACITY: usize = 1 << 16;

/// One CPU's SMI counter read over time (ns on the clock of the spikes).
#[derive(Debug, Default)]
pub struct SmiTimeline {
    /// The read intervals across which the count advanced: from the time before the earlier
    /// read to the time after the later one, and by how much.
    advanced: VecDeque<(u64, u64, u32)>,
    /// The time before the first read: the timeline covers from there.
    first_ns: Option<u64>,
    /// The last read: the time before it, the time after it and its count.
    last: Option<(u64, u64, u64)>,
    /// The end of the newest interval dropped at [`CAPACITY`]: nothing before it is decided.
    dropped_until_ns: u64,
    /// The longest time between two reads (ns): how closely an SMI is placed.
    longest_ns: u64,
}

impl SmiTimeline {
    /// Records a read of the counter (`count`, 32 bits, wrapping) taken between `before_ns`
    /// and `after_ns`.
    pub fn record(&mut self, before_ns: u64, after_ns: u64, count: u64) {
        match self.last {
            Some((last_before, _, last_count)) => {
                self.longest_ns = self.longest_ns.max(after_ns.saturating_sub(last_before));
                let n = smis_between(last_count, count);
                if n > 0 {
                    if self.advanced.len() == CAPACITY {
                        if let Some((_, end, _)) = self.advanced.pop_front() {
                            self.dropped_until_ns = end;
                        }
                    }
                    let n = u32::try_from(n).unwrap_or(u32::MAX);
                    self.advanced.push_back((last_before, after_ns, n));
                }
            }
            None => self.first_ns = Some(before_ns),
        }
        self.last = Some((before_ns, after_ns, count));
    }

    /// The SMIs counted in the read intervals that overlap `from_ns..=to_ns`; `None` when the
    /// reads do not cover it yet (before the first read, after the last) or no longer (an
    /// interval dropped at [`CAPACITY`]).
    pub fn smis_over(&self, from_ns: u64, to_ns: u64) -> Option<u32> {
        let first = self.first_ns?;
        let (_, last_after, _) = self.last?;
        if from_ns < first || to_ns > last_after || from_ns < self.dropped_until_ns {
            return None;
        }
        let start = self.advanced.partition_point(|&(_, end, _)| end < from_ns);
        Some(
            self.advanced
                .range(start..)
                .take_while(|&&(begin, _, _)| begin <= to_ns)
                .fold(0u32, |sum, &(_, _, n)| sum.saturating_add(n)),
        )
    }

    /// The time the reads cover up to (the end of the last read), if any.
    pub fn covered_until_ns(&self) -> Option<u64> {
        self.last.map(|(_, after, _)| after)
    }

    /// The longest time between two reads so far (ns).
    pub fn longest_interval_ns(&self) -> u64 {
        self.longest_ns
    }

    /// The SMIs counted since the first read.
    pub fn total(&self) -> u64 {
        self.advanced.iter().map(|&(_, _, n)| u64::from(n)).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads every 1000 ns (each taking 10 ns), the counter at `counts[i]` for read `i`.
    fn timeline(counts: &[u64]) -> SmiTimeline {
        let mut t = SmiTimeline::default();
        for (i, &c) in counts.iter().enumerate() {
            let at = 1000 * i as u64;
            t.record(at, at + 10, c);
        }
        t
    }

    #[test]
    fn a_spike_overlapping_a_read_interval_with_an_smi_gets_it_one_between_reads_without_gets_0() {
        // One SMI between the reads at 2000 and 3000, two (the counter wraps) between 5000 and
        // 6000.
        let top = 0xffff_ffff;
        let t = timeline(&[top - 1, top - 1, top - 1, top, top, top, 1, 1]);
        assert_eq!(t.smis_over(2500, 2600), Some(1));
        assert_eq!(
            t.smis_over(3005, 3010),
            Some(1),
            "the later read's own span counts"
        );
        assert_eq!(t.smis_over(3100, 4900), Some(0));
        assert_eq!(t.smis_over(1000, 6500), Some(1 + 2));
        assert_eq!(t.total(), 3);
        assert_eq!(t.longest_interval_ns(), 1010);
    }

    #[test]
    fn spikes_the_reads_do_not_cover_are_not_decided() {
        let t = timeline(&[1, 1, 2]);
        assert_eq!(t.smis_over(500, 900), Some(0));
        assert_eq!(
            t.smis_over(500, 1500),
            Some(1),
            "the SMI may lie anywhere after 1000"
        );
        assert_eq!(t.smis_over(1500, 2005), Some(1));
        assert_eq!(t.smis_over(1500, 2500), None, "after the last read");
        let mut late = SmiTimeline::default();
        late.record(5000, 5010, 3);
        assert_eq!(late.smis_over(4000, 5005), None, "before the first read");
        assert_eq!(SmiTimeline::default().smis_over(0, 1), None);
        assert_eq!(late.covered_until_ns(), Some(5010));
    }

    #[test]
    fn intervals_dropped_at_the_capacity_leave_their_spikes_undecided() {
        let mut t = SmiTimeline::default();
        for i in 0..=(CAPACITY as u64 + 1) {
            t.record(1000 * i, 1000 * i + 10, i);
        }
        // The first interval (0..1010) was dropped: a spike in it is not decided.
        assert_eq!(t.smis_over(500, 600), None);
        assert_eq!(t.smis_over(1500, 1600), Some(1));
        assert_eq!(t.total(), CAPACITY as u64);
    }
}
