//! Progress of a campaign: on a terminal, a block redrawn in place on stderr (campaign bar
//! with ETA, current run bar, live max and p99.9 per CPU); otherwise one plain status line a
//! minute, for CI logs.

use rtscope_common::clock::SharedClock;
use rtscope_core::{Histogram, Nanos, Stats};
use rtscope_engine::Run;
use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

/// How often the plain status line (not a terminal) is printed.
const PLAIN_EVERY: Duration = Duration::from_secs(60);

/// The campaign-wide part of the progress.
pub struct Progress {
    clock: SharedClock,
    enabled: bool,
    tty: bool,
    started: Instant,
    total_runs: usize,
    /// Estimated length of the whole campaign.
    total: Duration,
    /// Estimated length of the runs already done.
    done: Duration,
    lines_shown: usize,
    last_plain: Option<Instant>,
}

/// What the progress shows about the current run.
pub struct Current<'a> {
    /// 1-based position among the runs to do.
    pub number: usize,
    /// `N:N / hackbench / repeat 2 of 10`.
    pub what: &'a str,
    /// Its estimated length.
    pub estimate: Duration,
    /// When it started (after the load settled).
    pub started: Instant,
}

fn clock(d: Duration) -> String {
    let s = d.as_secs();
    if s >= 3600 {
        format!("{}h{:02}m{:02}s", s / 3600, s / 60 % 60, s % 60)
    } else if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{s}s")
    }
}

/// `52s`, `1m 04s`, `1h 05m`, `2d 03h`: a total time, or a time into a run.
pub fn human(d: Duration) -> String {
    let s = d.as_secs() + u64::from(d.subsec_nanos() >= 500_000_000);
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m {:02}s", s / 60, s % 60),
        3600..86_400 => format!("{}h {:02}m", s / 3600, s % 3600 / 60),
        _ => format!("{}d {:02}h", s / 86_400, s % 86_400 / 3600),
    }
}

fn bar(fraction: f64, width: usize) -> String {
    let full = ((fraction.clamp(0.0, 1.0) * width as f64).round() as usize).min(width);
    format!("[{}{}]", "#".repeat(full), ".".repeat(width - full))
}

/// A latency for status lines: `12.3us`, or `-` when there is none yet.
pub(super) fn us(n: Option<Nanos>) -> String {
    n.map_or("-".into(), |n| format!("{}us", rtscope_core::text::us(n)))
}

impl Progress {
    /// A progress display for `total_runs` runs estimated at `total` altogether, timed by
    /// `clock`.
    pub fn new(enabled: bool, total_runs: usize, total: Duration, clock: SharedClock) -> Progress {
        Progress {
            enabled,
            tty: std::io::stderr().is_terminal(),
            started: clock.now(),
            clock,
            total_runs,
            total,
            done: Duration::ZERO,
            lines_shown: 0,
            last_plain: None,
        }
    }

    /// A run of estimated length `estimate` is done.
    pub fn run_done(&mut self, estimate: Duration) {
        self.done += estimate;
    }

    /// The estimated time left, given how far the current run got.
    fn eta(&self, cur: &Current, run_elapsed: Duration) -> Duration {
        let left_now = cur.estimate.saturating_sub(run_elapsed);
        self.total
            .saturating_sub(self.done)
            .saturating_sub(cur.estimate)
            + left_now
    }

    /// Redraws (terminal) or prints a status line (at most once a minute otherwise).
    pub fn update(&mut self, cur: &Current, run: &Run) -> std::io::Result<()> {
        if !self.due() {
            return Ok(());
        }
        let lines = self.lines(cur, &cells(run));
        let mut e = std::io::stderr().lock();
        if self.tty {
            self.erase(&mut e)?;
            for l in &lines {
                writeln!(e, "\x1b[2K{l}")?;
            }
            self.lines_shown = lines.len();
        } else {
            writeln!(e, "{}", lines.join(" | "))?;
        }
        e.flush()
    }

    /// Whether to show the progress now: always on a terminal, else once a minute (and the
    /// time of this one is kept).
    fn due(&mut self) -> bool {
        if !self.enabled {
            return false;
        }
        if self.tty {
            return true;
        }
        let now = self.clock.now();
        if self
            .last_plain
            .is_some_and(|t| now.saturating_duration_since(t) < PLAIN_EVERY)
        {
            return false;
        }
        self.last_plain = Some(now);
        true
    }

    /// The block: the campaign's bar, the current run's bar, then `cells` three a line.
    fn lines(&self, cur: &Current, cells: &[String]) -> Vec<String> {
        let now = self.clock.now();
        let run_elapsed = now.saturating_duration_since(cur.started);
        let eta = self.eta(cur, run_elapsed);
        let fraction = |done: Duration, total: Duration| {
            if total.is_zero() {
                0.0
            } else {
                done.as_secs_f64() / total.as_secs_f64()
            }
        };
        let campaign_done = self.done + run_elapsed.min(cur.estimate);
        let mut out = vec![
            format!(
                "campaign {} run {}/{}  elapsed {}  ETA {}",
                bar(fraction(campaign_done, self.total), 30),
                cur.number,
                self.total_runs,
                clock(now.saturating_duration_since(self.started)),
                clock(eta)
            ),
            format!(
                "this run {} {}/{}  {}",
                bar(fraction(run_elapsed, cur.estimate), 30),
                clock(run_elapsed),
                clock(cur.estimate),
                cur.what
            ),
        ];
        out.extend(cells.chunks(3).map(|c| format!("  {}", c.join("   "))));
        out
    }

    fn erase(&mut self, e: &mut impl Write) -> std::io::Result<()> {
        if self.lines_shown > 0 {
            write!(e, "\x1b[{}A", self.lines_shown)?;
        }
        Ok(())
    }

    /// Removes the block from the terminal (before printing a run's result line).
    pub fn clear(&mut self) {
        if self.tty && self.lines_shown > 0 {
            let mut e = std::io::stderr().lock();
            let _ = write!(e, "\x1b[{}A\x1b[J", self.lines_shown);
            let _ = e.flush();
            self.lines_shown = 0;
        }
    }
}

/// One cell per measuring thread of `run`: `cpu1 max 12.3us p99.9 8.1us`.
fn cells(run: &Run) -> Vec<String> {
    run.threads()
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let (s, h): (Stats, Histogram) = (t.stats(), t.histogram());
            let p999 = us(h.value_at_quantile(0.999));
            let name = run.config().threads[i]
                .affinity
                .as_ref()
                .filter(|a| a.len() == 1)
                .map_or(format!("T{i}"), |a| format!("cpu{}", a.nth_cyclic(0)));
            let max = us((s.count > 0).then_some(s.max));
            format!("{name} max {max} p99.9 {p999}")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bars_and_clocks() {
        assert_eq!(bar(0.5, 10), "[#####.....]");
        assert_eq!(bar(2.0, 4), "[####]");
        assert_eq!(bar(-1.0, 3), "[...]");
        assert_eq!(clock(Duration::from_secs(59)), "59s");
        assert_eq!(clock(Duration::from_secs(61)), "1m01s");
        assert_eq!(clock(Duration::from_secs(20000)), "5h33m20s");
    }

    use rtscope_common::clock::{Clock, FakeClock};
    use std::sync::Arc;

    fn plain(clock: &Arc<FakeClock>, runs: usize, total_s: u64) -> Progress {
        let mut p = Progress::new(true, runs, Duration::from_secs(total_s), clock.clone());
        p.tty = false;
        p
    }

    #[test]
    fn the_plain_line_is_due_at_the_first_update_then_once_a_minute() {
        let clock = Arc::new(FakeClock::new());
        let mut p = plain(&clock, 2, 600);
        let mut due_at = Vec::new();
        for s in 0..=150 {
            if p.due() {
                due_at.push(s);
            }
            clock.advance(Duration::from_secs(1));
        }
        assert_eq!(due_at, [0, 60, 120]);
        // Disabled (`--quiet`): never; on a terminal: every tick.
        p.enabled = false;
        assert!(!p.due());
        p.enabled = true;
        p.tty = true;
        assert!(p.due() && p.due());
    }

    #[test]
    fn the_eta_counts_the_runs_left_and_what_is_left_of_this_one() {
        let clock = Arc::new(FakeClock::new());
        // Three runs of 60 s; the first is done, the second 20 s in.
        let mut p = plain(&clock, 3, 180);
        clock.advance(Duration::from_secs(65));
        p.run_done(Duration::from_secs(60));
        let cur = Current {
            number: 2,
            what: "0:0 / hackbench / repeat 2 of 3",
            estimate: Duration::from_secs(60),
            started: clock.now(),
        };
        clock.advance(Duration::from_secs(20));
        let cells = [
            "cpu0 max 12.0us p99.9 8.0us".to_string(),
            "cpu1 max - p99.9 -".into(),
        ];
        let lines = p.lines(&cur, &cells);
        assert_eq!(
            lines,
            [
                format!(
                    "campaign [{}{}] run 2/3  elapsed 1m25s  ETA 1m40s",
                    "#".repeat(13),
                    ".".repeat(17)
                ),
                format!(
                    "this run [{}{}] 20s/1m00s  0:0 / hackbench / repeat 2 of 3",
                    "#".repeat(10),
                    ".".repeat(20)
                ),
                "  cpu0 max 12.0us p99.9 8.0us   cpu1 max - p99.9 -".to_string(),
            ]
        );
        // A run longer than its estimate: the ETA is the runs left, never negative.
        clock.advance(Duration::from_secs(100));
        assert!(p.lines(&cur, &[])[0].ends_with("ETA 1m00s"));
    }
}
