//! The watch's metrics as Prometheus scrapes them: the text exposition format 0.0.4 (what
//! `promtool check metrics` checks) or OpenMetrics 1.0 when the scraper asks for it.
//!
//! Per CPU (label `cpu`, and `all`): a cumulative histogram `rtscope_watch_latency_seconds`
//! over every window since the watch started (the fleet textfile's 1-2-5 buckets from 1 µs to
//! 100 ms, so `rate()` and `histogram_quantile()` work and boards add up); counters of
//! wake-ups, missed deadlines, spikes and alerts; and gauges of the last complete window: its
//! max (exact, or its bucket bound within 0.1 % when a sample ring overflowed), p99, p99.99
//! (nearest rank over the window's samples), wake-ups, and its end time. The cause of the
//! worst spike of the last window as `rtscope_watch_window_cause_seconds{cause}`: at most the
//! three largest causes, the threads of one command one cause (its PIDs in a `pids` label),
//! names bounded to 64 bytes, so cardinality stays bounded; the windows whose worst wake-up
//! got no explanation, by reason, as `rtscope_watch_unexplained_windows_total{reason}` (the
//! reasons' JSON names: a fixed set). Labels: `series`, `cpu`, `le`, `cause`, `pids`, `reason`.

use crate::cause::Cause;
use rtscope_common::prometheus::{escape, le_label, BUCKETS_NS};
use rtscope_core::{Histogram, Nanos};
use rtscope_explain::unexplained::Unexplained;
use rtscope_store::watch::WatchWindow;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// The exposition format asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `text/plain; version=0.0.4`.
    Text,
    /// `application/openmetrics-text; version=1.0.0`.
    OpenMetrics,
}

impl Format {
    /// The format for a request's `Accept` header.
    pub fn negotiate(accept: Option<&str>) -> Format {
        match accept {
            Some(a) if a.contains("application/openmetrics-text") => Format::OpenMetrics,
            _ => Format::Text,
        }
    }

    /// Its `Content-Type`.
    pub fn content_type(self) -> &'static str {
        match self {
            Format::Text => "text/plain; version=0.0.4; charset=utf-8",
            Format::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
        }
    }
}

/// Everything a scrape shows for one CPU.
#[derive(Debug, Clone, Default)]
struct Cpu {
    total: Histogram,
    sum_ns: u128,
    missed: u64,
    spikes: u64,
    alerts: u64,
    last: Option<WatchWindow>,
}

/// The state behind `/metrics`, updated once per window.
#[derive(Debug, Clone, Default)]
pub struct Exposition {
    series: String,
    cpus: BTreeMap<String, Cpu>,
    /// (cause, its PIDs as the label shows them, time).
    causes: Vec<(String, String, Nanos)>,
    /// Windows whose worst wake-up got no explanation, by reason.
    unexplained: BTreeMap<Unexplained, u64>,
}

fn cpu_label(w: &WatchWindow) -> String {
    w.cpu.map_or("all".into(), |c| c.to_string())
}

fn secs(ns: u64) -> f64 {
    ns as f64 / 1e9
}

/// Samples at or below `le_ns`, by the fleet textfile's rule.
fn at_or_below(h: &Histogram, le_ns: u64) -> u64 {
    let (min, max) = (h.min().map_or(0, |n| n.0), h.max().map_or(0, |n| n.0));
    rtscope_common::prometheus::at_or_below(h, min, max, le_ns)
}

impl Exposition {
    /// An empty exposition of series `series`.
    pub fn new(series: &str) -> Exposition {
        Exposition {
            series: escape(series),
            ..Exposition::default()
        }
    }

    /// The largest causes of the latest explained worst wake-up (at most three, names bounded
    /// to 64 characters): the threads of one command are one cause, its PIDs in the `pids`
    /// label (`4711,4712`, at most four, then `+N`; empty for a cause that is no thread).
    pub fn set_causes(&mut self, causes: &[Cause]) {
        self.causes = causes
            .iter()
            .take(3)
            .map(|c| {
                let mut pids: Vec<String> = c.pids.iter().map(i32::to_string).collect();
                if c.more_pids > 0 {
                    pids.push(format!("+{}", c.more_pids));
                }
                (c.name.chars().take(64).collect(), pids.join(","), c.time)
            })
            .collect();
    }

    /// Counts one more window whose worst wake-up got no explanation, for `why`.
    pub fn add_unexplained(&mut self, why: Unexplained) {
        *self.unexplained.entry(why).or_default() += 1;
    }

    /// Adds a closed window's rows with the exact sums of their latencies (ns, same order).
    pub fn add(&mut self, rows: &[WatchWindow], sums: &[u128]) {
        for (w, sum) in rows.iter().zip(sums) {
            let c = self.cpus.entry(cpu_label(w)).or_default();
            c.total.merge(&w.histogram);
            c.sum_ns += sum;
            c.missed += w.missed;
            c.spikes += w.spikes;
            c.alerts += u64::from(w.alert.is_some());
            c.last = Some(w.clone());
        }
    }

    /// The page a scrape gets.
    pub fn render(&self, format: Format) -> String {
        let mut o = String::new();
        self.histogram(&mut o);
        self.counters(&mut o, format);
        self.gauges(&mut o);
        if format == Format::OpenMetrics {
            o.push_str("# EOF\n");
        }
        o
    }

    fn family(o: &mut String, name: &str, kind: &str, help: &str) {
        let _ = writeln!(o, "# HELP {name} {help}");
        let _ = writeln!(o, "# TYPE {name} {kind}");
    }

    fn labels(&self, cpu: &str, extra: &str) -> String {
        format!(
            "{{series=\"{}\",cpu=\"{}\"{extra}}}",
            self.series,
            escape(cpu)
        )
    }

    fn histogram(&self, o: &mut String) {
        let name = "rtscope_watch_latency_seconds";
        Self::family(
            o,
            name,
            "histogram",
            "Timer wake-up latency since the watch started, seconds.",
        );
        for (cpu, c) in &self.cpus {
            for le in BUCKETS_NS {
                let l = self.labels(cpu, &format!(",le=\"{}\"", le_label(le)));
                let _ = writeln!(o, "{name}_bucket{l} {}", at_or_below(&c.total, le));
            }
            let n = c.total.count();
            let _ = writeln!(o, "{name}_bucket{} {n}", self.labels(cpu, ",le=\"+Inf\""));
            let _ = writeln!(
                o,
                "{name}_sum{} {}",
                self.labels(cpu, ""),
                c.sum_ns as f64 / 1e9
            );
            let _ = writeln!(o, "{name}_count{} {n}", self.labels(cpu, ""));
        }
    }

    fn counters(&self, o: &mut String, format: Format) {
        type Get = fn(&Cpu) -> u64;
        let list: [(&str, &str, Get); 3] = [
            (
                "rtscope_watch_missed_deadlines",
                "Periods that passed without a wake-up.",
                |c| c.missed,
            ),
            (
                "rtscope_watch_spikes",
                "Wake-ups at or above the spike threshold.",
                |c| c.spikes,
            ),
            (
                "rtscope_watch_alert_windows",
                "Windows that breached an alert threshold.",
                |c| c.alerts,
            ),
        ];
        for (base, help, get) in list {
            // OpenMetrics names the family without `_total`; the 0.0.4 format names it whole.
            let family = match format {
                Format::Text => format!("{base}_total"),
                Format::OpenMetrics => base.to_string(),
            };
            Self::family(o, &family, "counter", help);
            for (cpu, c) in &self.cpus {
                let _ = writeln!(o, "{base}_total{} {}", self.labels(cpu, ""), get(c));
            }
        }
        if self.unexplained.is_empty() {
            return;
        }
        let base = "rtscope_watch_unexplained_windows";
        let family = match format {
            Format::Text => format!("{base}_total"),
            Format::OpenMetrics => base.to_string(),
        };
        Self::family(o, &family, "counter", "Windows whose worst wake-up at or above the spike threshold got no explanation (--explain), by reason.");
        for (why, n) in &self.unexplained {
            let l = format!("{{series=\"{}\",reason=\"{}\"}}", self.series, why.name());
            let _ = writeln!(o, "{base}_total{l} {n}");
        }
    }

    fn gauges(&self, o: &mut String) {
        type Get = fn(&WatchWindow) -> Option<f64>;
        let list: [(&str, &str, Get); 5] = [
            (
                "rtscope_watch_window_max_seconds",
                "Largest latency of the last window, seconds.",
                |w| w.histogram.max().map(|n| secs(n.0)),
            ),
            (
                "rtscope_watch_window_p99_seconds",
                "99th percentile (nearest rank) of the last window, seconds.",
                |w| w.histogram.value_at_quantile(0.99).map(|n| secs(n.0)),
            ),
            (
                "rtscope_watch_window_p9999_seconds",
                "99.99th percentile (nearest rank) of the last window, seconds.",
                |w| w.histogram.value_at_quantile(0.9999).map(|n| secs(n.0)),
            ),
            (
                "rtscope_watch_window_wakeups",
                "Wake-ups in the last window.",
                |w| Some(w.histogram.count() as f64),
            ),
            (
                "rtscope_watch_window_end_timestamp_seconds",
                "End of the last window, Unix seconds.",
                |w| Some(w.end_ns as f64 / 1e9),
            ),
        ];
        for (name, help, get) in list {
            Self::family(o, name, "gauge", help);
            for (cpu, c) in &self.cpus {
                if let Some(v) = c.last.as_ref().and_then(get) {
                    let _ = writeln!(o, "{name}{} {v}", self.labels(cpu, ""));
                }
            }
        }
        let name = "rtscope_watch_window_cause_seconds";
        Self::family(o, name, "gauge", "Time of the latest explained worst wake-up of a window charged to each of its largest causes, seconds.");
        for (cause, pids, t) in &self.causes {
            let l = format!(
                "{{series=\"{}\",cause=\"{}\",pids=\"{pids}\"}}",
                self.series,
                escape(cause)
            );
            let _ = writeln!(o, "{name}{l} {}", secs(t.0));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtscope_store::watch::Level;

    fn window(cpu: Option<u32>, values: &[u64], missed: u64) -> WatchWindow {
        let mut h = Histogram::new();
        values.iter().for_each(|&v| h.record(Nanos(v)));
        WatchWindow {
            level: Level::Window,
            start_ns: 60_000_000_000,
            end_ns: 120_000_000_000,
            cpu,
            spikes: h.count_at_or_above(Nanos::from_us(100)),
            histogram: h,
            missed,
            alert: None,
            explain: None,
        }
    }

    #[test]
    fn counts_add_up_over_windows_and_gauges_show_the_last() {
        let mut e = Exposition::new("board \"7\"");
        e.add(&[window(Some(1), &[1_500, 150_000], 2)], &[151_500]);
        e.add(&[window(Some(1), &[3_000], 0)], &[3_000]);
        e.set_causes(&[Cause {
            name: "thread culprit".into(),
            pids: vec![379, 380, 381, 382],
            more_pids: 2,
            time: Nanos::from_us(90),
        }]);
        let t = e.render(Format::Text);
        let l = r#"{series="board \"7\"",cpu="1""#;
        assert!(
            t.contains(&format!("rtscope_watch_latency_seconds_count{l}}} 3")),
            "{t}"
        );
        assert!(
            t.contains(&format!(
                "rtscope_watch_latency_seconds_bucket{l},le=\"2e-06\"}} 1"
            )),
            "{t}"
        );
        assert!(
            t.contains(&format!(
                "rtscope_watch_latency_seconds_bucket{l},le=\"0.0002\"}} 3"
            )),
            "{t}"
        );
        assert!(
            t.contains(&format!("rtscope_watch_missed_deadlines_total{l}}} 2")),
            "{t}"
        );
        assert!(
            t.contains(&format!("rtscope_watch_latency_seconds_sum{l}}} 0.0001545")),
            "{t}"
        );
        assert!(
            t.contains(&format!("rtscope_watch_spikes_total{l}}} 1")),
            "{t}"
        );
        assert!(
            t.contains(&format!("rtscope_watch_window_max_seconds{l}}} 0.000003")),
            "{t}"
        );
        assert!(
            t.contains(r#"cause="thread culprit",pids="379,380,381,382,+2"} 0.00009"#),
            "{t}"
        );
        assert!(
            t.contains("# TYPE rtscope_watch_spikes_total counter"),
            "{t}"
        );
        assert!(!t.contains("# EOF"));
        let om = e.render(Format::OpenMetrics);
        assert!(om.contains("# TYPE rtscope_watch_spikes counter") && om.ends_with("# EOF\n"));
    }

    #[test]
    fn windows_not_explained_are_counted_by_their_reasons_json_name() {
        let mut e = Exposition::new("b");
        e.add(&[window(Some(1), &[150_000], 0)], &[150_000]);
        assert!(!e.render(Format::Text).contains("unexplained"), "none yet");
        e.add_unexplained(Unexplained::WorstUnknown);
        e.add_unexplained(Unexplained::OutOfWindow);
        e.add_unexplained(Unexplained::WorstUnknown);
        let t = e.render(Format::Text);
        assert!(
            t.contains("# TYPE rtscope_watch_unexplained_windows_total counter"),
            "{t}"
        );
        assert!(
            t.contains(
                r#"rtscope_watch_unexplained_windows_total{series="b",reason="worst_unknown"} 2"#
            ),
            "{t}"
        );
        assert!(
            t.contains(
                r#"rtscope_watch_unexplained_windows_total{series="b",reason="out_of_window"} 1"#
            ),
            "{t}"
        );
        let om = e.render(Format::OpenMetrics);
        assert!(
            om.contains("# TYPE rtscope_watch_unexplained_windows counter"),
            "{om}"
        );
    }

    #[test]
    fn the_scraper_chooses_the_format() {
        assert_eq!(Format::negotiate(None), Format::Text);
        let prom = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
        assert_eq!(Format::negotiate(Some(prom)), Format::OpenMetrics);
        assert_eq!(Format::negotiate(Some("text/plain")), Format::Text);
    }
}
