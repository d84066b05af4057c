//! A per-second time series of one thread built from timestamped samples (jitterdebugger's
//! `samples.raw`), plus the wake-up interval inferred from the wake-up times.

use rtscope_core::{Histogram, Nanos};
use rtscope_store::SeriesPoint;

/// One second, ns.
pub const SECOND: i64 = 1_000_000_000;
/// Interval estimates kept for the median.
const INTERVAL_SAMPLES: usize = 4095;

/// The second being filled.
struct Window {
    index: i64,
    count: u64,
    sum_ns: u128,
    min_ns: u64,
    max_ns: u64,
    last_ts: i64,
    hist: Histogram,
}

/// The series of one thread. Windows are whole seconds from the thread's first sample.
pub struct Series {
    unit: u64,
    first: Option<i64>,
    window: Option<Window>,
    done: Vec<(Window, i64)>,
    prev: Option<(i64, u64)>,
    deltas: Vec<i64>,
    max: Option<(u64, i64)>,
}

impl Series {
    /// An empty series for latencies in units of `unit` ns.
    pub fn new(unit: u64) -> Series {
        Series {
            unit,
            first: None,
            window: None,
            done: Vec::new(),
            prev: None,
            deltas: Vec::new(),
            max: None,
        }
    }

    /// Adds a sample woken at `ts` (ns) with latency `lat` (in units). Samples are expected in
    /// time order; a late one is counted in the current second.
    pub fn add(&mut self, ts: i64, lat: u64) {
        let first = *self.first.get_or_insert(ts);
        let index = (ts - first).max(0) / SECOND;
        let ns = lat.saturating_mul(self.unit);
        if self.window.as_ref().is_some_and(|w| index > w.index) {
            if let Some(w) = self.window.take() {
                let end = first + (w.index + 1) * SECOND;
                self.done.push((w, end));
            }
        }
        let w = self.window.get_or_insert_with(|| Window {
            index,
            count: 0,
            sum_ns: 0,
            min_ns: u64::MAX,
            max_ns: 0,
            last_ts: ts,
            hist: Histogram::new(),
        });
        w.count += 1;
        w.sum_ns += u128::from(ns);
        w.min_ns = w.min_ns.min(ns);
        w.max_ns = w.max_ns.max(ns);
        w.last_ts = w.last_ts.max(ts);
        w.hist.record(Nanos(ns));
        if self.max.is_none_or(|(m, _)| lat > m) {
            self.max = Some((lat, ts));
        }
        if let Some((pts, plat)) = self.prev {
            if self.deltas.len() < INTERVAL_SAMPLES {
                let dl = (lat as i64)
                    .saturating_sub(plat as i64)
                    .saturating_mul(self.unit as i64);
                self.deltas.push((ts - pts).saturating_sub(dl));
            }
        }
        self.prev = Some((ts, lat));
    }

    /// The wake-up time of the (first) largest latency.
    pub fn max_at(&self) -> Option<i64> {
        self.max.map(|(_, ts)| ts)
    }

    /// The interval, ns, rounded to whole µs: the median of consecutive wake-up distances
    /// corrected by the change of latency (the deadlines are on a fixed grid). 0 when unknown.
    pub fn interval_ns(&self) -> u64 {
        let mut d: Vec<i64> = self.deltas.iter().copied().filter(|&x| x > 0).collect();
        if d.is_empty() {
            return 0;
        }
        let mid = d.len() / 2;
        let (_, m, _) = d.select_nth_unstable(mid);
        ((*m as u64 + 500) / 1000) * 1000
    }

    /// The series points of thread `thread`, offsets from `t0` (ns).
    pub fn points(&self, thread: u32, t0: i64) -> Vec<SeriesPoint> {
        let last = self.window.as_ref().map(|w| (w, w.last_ts));
        let first = self.first.unwrap_or(t0);
        self.done
            .iter()
            .map(|(w, end)| (w, *end))
            .chain(last)
            .map(|(w, end)| {
                let start = first + w.index * SECOND;
                SeriesPoint {
                    thread,
                    offset_ns: (end - t0).max(0) as u64,
                    length_ns: (end - start).max(0) as u64,
                    samples: w.count,
                    min_ns: Some(w.min_ns),
                    max_ns: Some(w.max_ns),
                    mean_ns: Some(w.sum_ns as f64 / w.count as f64),
                    p99_ns: w.hist.value_at_quantile(0.99).map(|n| n.0),
                    missed: 0,
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_fall_into_seconds_from_the_first_one() {
        let mut s = Series::new(1000);
        let t = 10 * SECOND + 123;
        for k in 0..25 {
            // 100 ms interval, latency alternating 20 and 40 µs.
            let lat = if k % 2 == 0 { 20 } else { 40 };
            s.add(t + k * 100_000_000 + lat as i64 * 1000, lat);
        }
        let p = s.points(0, t - 1000);
        assert_eq!(
            p.iter().map(|p| p.samples).collect::<Vec<_>>(),
            vec![10, 10, 5]
        );
        assert_eq!(p[0].offset_ns, SECOND as u64 + 21_000);
        assert_eq!(p[0].length_ns, SECOND as u64);
        assert_eq!(
            (p[0].min_ns, p[0].max_ns, p[0].mean_ns),
            (Some(20_000), Some(40_000), Some(30_000.0))
        );
        assert_eq!(s.interval_ns(), 100_000_000);
        assert_eq!(s.max_at(), Some(t + 100_000_000 + 40_000));
    }

    #[test]
    fn an_empty_series_has_no_points_and_no_interval() {
        let s = Series::new(1000);
        assert!(s.points(0, 0).is_empty());
        assert_eq!(s.interval_ns(), 0);
    }
}
