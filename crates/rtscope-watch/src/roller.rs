//! Rolling windows from the measuring threads' cumulative state.
//!
//! A window holds the wake-ups between two snapshots, taken at the first tick of the control
//! thread after each boundary (100 ms apart): its `start_ns` is the aligned boundary, its
//! `end_ns` the instant of the closing snapshot.
//!
//! The engine's per-thread histograms are cumulative and lossless; a window is the difference
//! of two snapshots ([`Histogram::since`]), so every wake-up lands in exactly one window
//! whatever the tick cadence. Windows are aligned to multiples of their length in Unix time,
//! so a watch that restarts within a window adds to the same row (the store merges rows of the
//! same start). The worst wake-up of each window and its time come from the sample rings the
//! session drains (exact); when a ring lost samples the window's maximum is the histogram's
//! bucket bound (within 0.1 %) and the worst wake-up's time is unknown.
//!
//! Pure: time comes in as arguments (`now_ns`, Unix ns), so tests drive months in
//! microseconds.

use rtscope_core::{layout, Histogram, Nanos};
use rtscope_engine::Sample;
use rtscope_store::watch::{Level, WatchWindow};

/// One measuring thread's cumulative state at an instant.
#[derive(Debug, Clone, Default)]
pub struct Snap {
    /// All its wake-ups so far.
    pub histogram: Histogram,
    /// Its missed deadlines so far.
    pub missed: u64,
    /// Samples its ring dropped so far (none: every sample was seen).
    pub dropped: u64,
    /// The sum of its latencies so far, ns.
    pub sum_ns: u128,
}

/// The worst wake-up of a window on one thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Worst {
    /// Its latency.
    pub latency: Nanos,
    /// When it woke, Unix ns.
    pub at_ns: i64,
    /// When it woke on the run's clock (CLOCK_MONOTONIC, the trace's clock), ns.
    pub mono_ns: u64,
}

/// A closed window of one thread with its worst wake-up, before it becomes rows.
#[derive(Debug, Clone)]
pub struct Closed {
    /// The rows: one per measured CPU, and one for all when more than one.
    pub windows: Vec<WatchWindow>,
    /// The worst wake-up of each row (same order), when known.
    pub worst: Vec<Option<Worst>>,
    /// The exact sum of each row's latencies, ns (same order).
    pub sums: Vec<u128>,
}

/// Cuts the run into windows.
#[derive(Debug)]
pub struct Roller {
    window: Nanos,
    threshold: Nanos,
    cpus: Vec<Option<u32>>,
    start_ns: i64,
    prev: Vec<Snap>,
    worst: Vec<Option<Worst>>,
}

/// The wake-ups a snapshot holds: wake-up numbers below it are in it (the engine adds a sample
/// to the histogram before its ring, and [`Roller::close`]'s caller drains the rings first).
fn boundary(s: &Snap) -> u64 {
    s.histogram.count()
}

/// `t` rounded down to a multiple of `span`.
pub fn align(t: i64, span: Nanos) -> i64 {
    let s = span.0.max(1) as i64;
    t.div_euclid(s) * s
}

impl Roller {
    /// Starts at `now_ns` with the threads' current state (`cpus[i]`: thread i's CPU).
    pub fn new(
        window: Nanos,
        threshold: Nanos,
        cpus: Vec<Option<u32>>,
        now_ns: i64,
        first: Vec<Snap>,
    ) -> Roller {
        let n = cpus.len();
        Roller {
            window,
            threshold,
            cpus,
            start_ns: align(now_ns, window),
            prev: first,
            worst: vec![None; n],
        }
    }

    /// The start of the open window, Unix ns.
    pub fn start_ns(&self) -> i64 {
        self.start_ns
    }

    /// Whether the open window has ended at `now_ns`.
    pub fn due(&self, now_ns: i64) -> bool {
        now_ns >= self.start_ns + self.window.0 as i64
    }

    /// Notes a wake-up of thread `thread` from its sample ring; `offset`: Unix time minus the
    /// run's clock, ns. One already in the last closed window (taken into its snapshot before
    /// it was drained) is left out.
    pub fn note(&mut self, thread: usize, s: &Sample, offset: i64) {
        if self.prev.get(thread).is_some_and(|p| s.cycle < boundary(p)) {
            return;
        }
        if let Some(w) = self.worst.get_mut(thread) {
            if w.is_none_or(|w| s.latency > w.latency) {
                *w = Some(Worst {
                    latency: s.latency,
                    at_ns: s.time.0 as i64 + offset,
                    mono_ns: s.time.0,
                });
            }
        }
    }

    /// The open window's worst wake-up so far of each thread, with the thread's CPU: what
    /// `--explain` hands over before the window closes.
    pub fn running_worst(&self) -> impl Iterator<Item = (Option<u32>, Worst)> + '_ {
        self.cpus
            .iter()
            .zip(&self.worst)
            .filter_map(|(&cpu, w)| w.map(|w| (cpu, w)))
    }

    /// Closes the open window at `now_ns` with the threads' state `now` and opens the next
    /// (aligned; a clock that jumped opens the window holding `now_ns`).
    pub fn close(&mut self, now_ns: i64, now: Vec<Snap>) -> Closed {
        // The snapshot's instant, normally within a tick after the boundary; a clock that
        // jumped by more than a window gives the window its nominal end instead.
        let nominal = self.start_ns + self.window.0 as i64;
        let end = if now_ns > nominal + self.window.0 as i64 {
            nominal
        } else {
            now_ns.max(self.start_ns)
        };
        let mut closed = Closed {
            windows: Vec::new(),
            worst: Vec::new(),
            sums: Vec::new(),
        };
        for (i, snap) in now.iter().enumerate() {
            let prev = self.prev.get(i).cloned().unwrap_or_default();
            let mut h = snap.histogram.since(&prev.histogram);
            let lossless = snap.dropped == prev.dropped;
            // The worst noted wake-up is the window's worst only when it lies in the top
            // bucket of the window's histogram: then it is the exact maximum. Otherwise (a
            // ring that lost samples, a wake-up between the last drain and the snapshot) the
            // maximum stays the bucket bound and the worst wake-up's time is unknown.
            let top = h.max().map(|m| layout::index_of(m.0));
            let worst = self
                .worst
                .get(i)
                .copied()
                .flatten()
                .filter(|w| lossless && Some(layout::index_of(w.latency.0)) == top);
            if let Some(w) = worst {
                let pairs: Vec<_> = h.nonzero().collect();
                h = Histogram::from_sparse(pairs, h.min().unwrap_or(w.latency), w.latency);
            }
            closed.windows.push(self.row(
                self.cpus.get(i).copied().flatten(),
                h,
                snap.missed.saturating_sub(prev.missed),
                end,
            ));
            closed.worst.push(worst);
            closed.sums.push(snap.sum_ns.saturating_sub(prev.sum_ns));
        }
        if closed.windows.len() > 1 {
            let mut all = self.row(None, Histogram::new(), 0, end);
            for w in &closed.windows {
                rtscope_store::watch::merge_into(&mut all, w);
            }
            let worst = closed
                .worst
                .iter()
                .flatten()
                .max_by_key(|w| w.latency)
                .copied();
            closed.windows.push(all);
            closed.worst.push(worst);
            closed.sums.push(closed.sums.iter().sum());
        }
        self.prev = now;
        self.worst = vec![None; self.cpus.len()];
        self.start_ns = align(now_ns.max(end), self.window);
        closed
    }

    fn row(&self, cpu: Option<u32>, h: Histogram, missed: u64, end: i64) -> WatchWindow {
        WatchWindow {
            level: Level::Window,
            start_ns: self.start_ns,
            end_ns: end,
            cpu,
            spikes: h.count_at_or_above(self.threshold),
            histogram: h,
            missed,
            alert: None,
            explain: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: i64 = 60_000_000_000;

    fn sample(cycle: u64, latency: u64, time: i64) -> Sample {
        Sample {
            cycle,
            latency: Nanos(latency),
            time: Nanos(time as u64),
        }
    }

    fn snap(values: &[u64], missed: u64) -> Snap {
        let mut h = Histogram::new();
        values.iter().for_each(|&v| h.record(Nanos(v)));
        Snap {
            sum_ns: values.iter().map(|&v| u128::from(v)).sum(),
            histogram: h,
            missed,
            dropped: 0,
        }
    }

    #[test]
    fn every_wake_up_lands_in_exactly_one_window_and_windows_are_aligned() {
        let t0 = 10 * MIN + 5_000_000_000; // 5 s into a minute
        let mut r = Roller::new(
            Nanos::from_secs(60),
            Nanos::from_us(100),
            vec![Some(0), Some(1)],
            t0,
            vec![snap(&[], 0), snap(&[], 0)],
        );
        assert_eq!(r.start_ns(), 10 * MIN);
        assert!(!r.due(11 * MIN - 1) && r.due(11 * MIN));
        r.note(1, &sample(0, 250_123, 10 * MIN + 7), 0);
        let c = r.close(
            11 * MIN + 3,
            vec![snap(&[1_000, 2_000], 1), snap(&[3_000, 250_123], 0)],
        );
        assert_eq!(c.windows.len(), 3, "two CPUs and all");
        let all = &c.windows[2];
        assert_eq!((all.cpu, all.histogram.count(), all.missed), (None, 4, 1));
        assert_eq!(
            all.histogram.max(),
            Some(Nanos(250_123)),
            "exact from the ring"
        );
        assert_eq!((all.start_ns, all.end_ns), (10 * MIN, 11 * MIN + 3));
        assert_eq!((c.windows[1].spikes, c.windows[0].spikes), (1, 0));
        assert_eq!(c.worst[2].unwrap().at_ns, 10 * MIN + 7);
        assert_eq!(c.sums, vec![3_000, 253_123, 256_123]);
        // The next window holds only what came after.
        let c = r.close(
            12 * MIN,
            vec![snap(&[1_000, 2_000, 5_000], 1), snap(&[3_000, 250_123], 0)],
        );
        assert_eq!(c.windows[0].histogram.count(), 1);
        assert_eq!(c.windows[0].histogram.min(), Some(Nanos(5_000)));
        assert_eq!(c.windows[1].histogram.count(), 0);
        assert_eq!(c.windows[2].start_ns, 11 * MIN);
        assert_eq!(c.worst[0], None, "nothing noted");
        // A wake-up the closed window's snapshot held is not the next window's.
        r.note(1, &sample(1, 900_000, 12 * MIN), 0);
        let c = r.close(
            13 * MIN,
            vec![
                snap(&[1_000, 2_000, 5_000], 1),
                snap(&[3_000, 250_123, 4_000], 0),
            ],
        );
        assert_eq!(c.worst[1], None, "noted cycle 1 was in the first window");
        assert_eq!(c.windows[1].histogram.count(), 1);
    }

    #[test]
    fn a_worst_that_is_not_the_windows_maximum_is_not_reported() {
        let mut r = Roller::new(
            Nanos::from_secs(60),
            Nanos::from_us(100),
            vec![Some(0)],
            0,
            vec![snap(&[], 0)],
        );
        r.note(0, &sample(0, 5_000, 1), 0);
        let c = r.close(MIN, vec![snap(&[5_000, 80_000], 0)]);
        assert_eq!(c.worst[0], None, "80 us was not noted (after the drain)");
        assert_eq!(c.windows[0].histogram.max(), Some(Nanos(80_000)));
    }

    #[test]
    fn a_lossy_ring_leaves_the_bucket_bound_and_no_time() {
        let mut r = Roller::new(
            Nanos::from_secs(60),
            Nanos::from_us(100),
            vec![Some(3)],
            0,
            vec![snap(&[], 0)],
        );
        r.note(0, &sample(0, 123_457, 42), 0);
        let mut s = snap(&[123_457], 0);
        s.dropped = 5;
        let c = r.close(MIN, vec![s]);
        assert_eq!(c.windows.len(), 1, "one CPU: no 'all' row");
        assert_eq!(c.worst[0], None);
        let max = c.windows[0].histogram.max().unwrap().0;
        assert!((123_457..=123_457 + 123_457 / 1000).contains(&max), "{max}");
    }

    #[test]
    fn a_clock_jump_closes_the_window_at_its_end_and_opens_the_current_one() {
        let mut r = Roller::new(
            Nanos::from_secs(60),
            Nanos::from_us(100),
            vec![Some(0)],
            0,
            vec![snap(&[], 0)],
        );
        let c = r.close(90 * MIN + 30, vec![snap(&[1_000], 0)]);
        assert_eq!((c.windows[0].start_ns, c.windows[0].end_ns), (0, MIN));
        assert_eq!(r.start_ns(), 90 * MIN);
    }
}
