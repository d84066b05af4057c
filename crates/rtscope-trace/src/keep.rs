//! The trace kept around spikes: events the recorder's rolling window drops, kept while a
//! spike that needs them waits for its analysis.
//!
//! The recorder keeps a few seconds of each CPU's events. A spike is attributed from the 50 ms
//! before its deadline to its wake-up. When the analysis waits — to the end of the run when
//! every CPU is measured (docs/explain.md "Analysing"), or behind a reader that fell behind —
//! those events would leave the window first. So each spike handed to the explainer *pins* its
//! span on its CPU (and the CPU's SMT siblings); the window's trim moves the events it drops
//! inside a pinned span here instead of discarding them, and releasing the pin (the spike was
//! attributed, or given up) lets them go from the oldest on.
//!
//! What is kept is bounded ([`kept_budget`]: a share of the memory available at start). When
//! the pins would hold more, the pins of the smallest spikes are let go first, so the worst
//! spikes of a run are always the ones traced; a spike whose pin was let go is not traced
//! ([`crate::model::NotTraced::OutOfWindow`]) and its reason says how to keep more.

use crate::decode::Event;
use std::collections::VecDeque;

/// Which spike a pin is for (its measuring thread, deadline and wake-up).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PinKey {
    pub tid: i32,
    pub deadline_ns: u64,
    pub wakeup_ns: u64,
}

#[derive(Debug, Clone, Copy)]
struct Pin {
    key: PinKey,
    /// Events from here on are kept (the lookback before the deadline).
    from: u64,
    /// … up to here (the wake-up).
    to: u64,
    /// The oldest time the kept events reach: `from`, or the window's front when the pin came
    /// after the window had already dropped part of its span.
    avail: u64,
    /// The spike's latency: the smallest pins are let go first.
    latency: u64,
}

/// The kept events of one CPU.
#[derive(Debug, Default)]
pub(crate) struct Keep {
    pins: Vec<Pin>,
    /// The pins' spans merged and sorted (rebuilt when `dirty`).
    spans: Vec<(u64, u64)>,
    dirty: bool,
    /// Events the window dropped inside a pinned span, oldest first (all older than the
    /// window's front).
    events: VecDeque<Event>,
    /// Spans of lost events the window dropped inside a pinned span.
    lost: Vec<(u64, u64)>,
}

impl Keep {
    /// Pins a spike's span; `front` is the oldest event the window still holds. A span the
    /// window already dropped whole before the deadline is not pinned (nothing to keep).
    pub fn pin(&mut self, key: PinKey, from: u64, front: Option<u64>, latency: u64) {
        let avail = front.map_or(from, |f| f.max(from));
        if avail > key.deadline_ns || self.pins.iter().any(|p| p.key == key) {
            return;
        }
        self.pins.push(Pin {
            key,
            from,
            to: key.wakeup_ns,
            avail,
            latency,
        });
        self.dirty = true;
    }

    /// Lets a spike's pin go (it was attributed, or will not be); the kept events nobody
    /// needs any more leave from the oldest on.
    pub fn unpin(&mut self, key: PinKey) {
        let before = self.pins.len();
        self.pins.retain(|p| p.key != key);
        if self.pins.len() != before {
            self.dirty = true;
            self.release_front();
        }
    }

    /// Whether the kept events cover `key`'s spike from its deadline on.
    pub fn covers(&self, key: PinKey) -> bool {
        self.pins
            .iter()
            .any(|p| p.key == key && p.avail <= key.deadline_ns)
    }

    /// Takes an event the window drops: kept when a pin needs it.
    pub fn take(&mut self, e: Event) {
        if self.wants(e.ts, e.ts) {
            self.events.push_back(e);
        }
    }

    /// Takes a lost-events span the window drops: kept when it overlaps a pin.
    pub fn take_lost(&mut self, span: (u64, u64)) {
        if self.wants(span.0, span.1) {
            self.lost.push(span);
        }
    }

    /// The kept events from `from` to `to` (inclusive), oldest first.
    pub fn range(&self, from: u64, to: u64) -> impl Iterator<Item = &Event> {
        let start = self.events.partition_point(|e| e.ts < from);
        let end = self.events.partition_point(|e| e.ts <= to);
        self.events.range(start..end)
    }

    /// The kept lost-events spans.
    pub fn lost(&self) -> &[(u64, u64)] {
        &self.lost
    }

    /// Events kept now.
    pub fn len(&self) -> usize {
        self.events.len()
    }

    /// Lets the smallest spikes' pins go until at most `budget` events are kept (the pins
    /// of larger spikes stay). Returns how many pins were let go.
    pub fn shrink_to(&mut self, budget: usize) -> usize {
        let mut gone = 0;
        while self.events.len() > budget && !self.pins.is_empty() {
            // A tenth of the pins at a time, the smallest first: each pass rebuilds the kept
            // events once.
            self.pins.sort_by_key(|p| std::cmp::Reverse(p.latency));
            let n = (self.pins.len() / 10).max(1);
            self.pins.truncate(self.pins.len() - n);
            gone += n;
            self.dirty = true;
            self.rebuild();
            let spans = &self.spans;
            self.events.retain(|e| inside(spans, e.ts, e.ts));
            self.lost.retain(|&(a, b)| inside(spans, a, b));
        }
        gone
    }

    fn rebuild(&mut self) {
        if !self.dirty {
            return;
        }
        let mut spans: Vec<(u64, u64)> = self.pins.iter().map(|p| (p.from, p.to)).collect();
        spans.sort_unstable();
        let mut merged: Vec<(u64, u64)> = Vec::with_capacity(spans.len());
        for (a, b) in spans {
            match merged.last_mut() {
                Some(last) if a <= last.1 => last.1 = last.1.max(b),
                _ => merged.push((a, b)),
            }
        }
        self.spans = merged;
        self.dirty = false;
    }

    fn wants(&mut self, from: u64, to: u64) -> bool {
        if self.pins.is_empty() {
            return false;
        }
        self.rebuild();
        inside(&self.spans, from, to)
    }

    /// Drops the oldest kept events and lost spans no pin needs any more.
    fn release_front(&mut self) {
        if self.pins.is_empty() {
            self.events.clear();
            self.lost.clear();
            return;
        }
        self.rebuild();
        let oldest = self.spans.first().map_or(u64::MAX, |s| s.0);
        while self.events.front().is_some_and(|e| e.ts < oldest) {
            self.events.pop_front();
        }
        self.lost.retain(|&(_, b)| b >= oldest);
    }
}

/// Whether `[from, to]` overlaps one of the sorted, disjoint `spans`.
fn inside(spans: &[(u64, u64)], from: u64, to: u64) -> bool {
    let i = spans.partition_point(|s| s.1 < from);
    spans.get(i).is_some_and(|s| s.0 <= to)
}

/// Events the recorder keeps around spikes at most, over all CPUs: a 32nd of the memory
/// available at start at 96 bytes an event (a decoded event is 72 bytes on 64-bit, an IRQ's
/// name a small allocation more), at least 64 Ki and at most 2 Mi events (about 200 MB). A
/// 25 s `run --preset quick` on this project's 2-CPU VM kept up to 0.54 Mi events; the 1 GB
/// QEMU guests' 22 s campaign runs, whose wake-ups are nearly all spikes under emulation
/// (11,000–17,500 a run), reached a 64th's 64–114 Ki and let the smallest spikes go.
pub fn kept_budget() -> usize {
    let avail = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find_map(|l| l.strip_prefix("MemAvailable:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<usize>().ok())
        })
        .map_or(0, |kb| kb.saturating_mul(1024));
    (avail / 32 / 96).clamp(1 << 16, 1 << 21)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::Kind;

    fn ev(ts: u64) -> Event {
        Event {
            ts,
            pid: 1,
            kind: Kind::TimerlatSample {
                thread: false,
                latency_ns: 0,
            },
        }
    }

    fn key(deadline_ns: u64, wakeup_ns: u64) -> PinKey {
        PinKey {
            tid: 7,
            deadline_ns,
            wakeup_ns,
        }
    }

    #[test]
    fn events_inside_a_pinned_span_are_kept_and_released_with_the_pin() {
        let mut k = Keep::default();
        let a = key(1_000, 1_500);
        k.pin(a, 500, Some(0), 500);
        for ts in (0..3_000).step_by(100) {
            k.take(ev(ts));
        }
        let kept: Vec<u64> = k.range(0, u64::MAX).map(|e| e.ts).collect();
        assert_eq!(kept, (500..=1_500).step_by(100).collect::<Vec<_>>());
        assert!(k.covers(a));
        k.take_lost((1_200, 1_300));
        k.take_lost((2_000, 2_100));
        assert_eq!(k.lost(), &[(1_200, 1_300)]);
        k.unpin(a);
        assert_eq!(k.len(), 0);
        assert!(k.lost().is_empty());
        assert!(!k.covers(a));
    }

    #[test]
    fn a_pin_after_the_window_dropped_its_deadline_is_not_made() {
        let mut k = Keep::default();
        let late = key(1_000, 1_500);
        k.pin(late, 500, Some(1_200), 500);
        assert!(!k.covers(late));
        // Part of the lookback gone, the deadline still held: covered from the front on.
        let partial = key(2_000, 2_500);
        k.pin(partial, 1_500, Some(1_800), 500);
        assert!(k.covers(partial));
    }

    #[test]
    fn the_oldest_kept_events_leave_once_no_pin_needs_them() {
        let mut k = Keep::default();
        let (a, b) = (key(1_000, 1_100), key(5_000, 5_100));
        k.pin(a, 900, None, 100);
        k.pin(b, 4_900, None, 100);
        for ts in (0..6_000).step_by(50) {
            k.take(ev(ts));
        }
        let n = k.len();
        k.unpin(a);
        assert!(k.len() < n);
        assert!(k.range(0, u64::MAX).all(|e| e.ts >= 4_900));
        assert!(k.covers(b));
    }

    #[test]
    fn over_the_budget_the_smallest_spikes_let_go_first() {
        let mut k = Keep::default();
        // Twenty spikes a millisecond apart, the later the larger.
        let keys: Vec<PinKey> = (1..=20u64)
            .map(|i| key(i * 1_000_000, i * 1_000_000 + i * 1_000))
            .collect();
        for (i, &p) in keys.iter().enumerate() {
            k.pin(p, p.deadline_ns - 100_000, None, (i as u64 + 1) * 1_000);
        }
        for ts in (0..21_000_000).step_by(1_000) {
            k.take(ev(ts));
        }
        let before = k.len();
        let gone = k.shrink_to(before / 2);
        assert!(gone > 0 && k.len() <= before / 2);
        // The largest spike is still covered; the smallest was let go.
        assert!(k.covers(keys[19]));
        assert!(!k.covers(keys[0]));
    }

    #[test]
    fn the_budget_is_bounded_both_ways() {
        let b = kept_budget();
        assert!((1 << 16..=1 << 21).contains(&b));
    }
}
