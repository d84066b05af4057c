//! `rtscope noise`'s progress line on a terminal.

use rtscope_core::text::short;
use rtscope_core::Nanos;
use rtscope_engine::noise::NoiseRun;
use std::io::{IsTerminal, Write};

/// The progress line on a terminal (stderr, redrawn about once a second): the time run, the
/// longest gap and the gaps over the threshold so far. Nothing off a terminal.
pub struct NoiseProgress {
    enabled: bool,
    shown: bool,
    duration: Nanos,
    start: std::time::Instant,
    last: u64,
}

impl NoiseProgress {
    /// The line of a run of `duration`, shown when `enabled` and stderr is a terminal.
    pub fn new(enabled: bool, duration: Nanos) -> Self {
        NoiseProgress {
            enabled: enabled && std::io::stderr().is_terminal(),
            shown: false,
            duration,
            start: std::time::Instant::now(),
            last: 0,
        }
    }

    /// Redraws the line once a second; a failing stderr is silence, never the end of the run.
    pub fn update(&mut self, run: &NoiseRun) {
        let secs = self.start.elapsed().as_secs();
        if !self.enabled || secs == self.last {
            return;
        }
        self.last = secs;
        let (mut over, mut max) = (0u64, Nanos::ZERO);
        for t in run.threads() {
            let tot = t.totals();
            over += tot.over;
            max = max.max(tot.max.map_or(Nanos::ZERO, |g| g.duration));
        }
        let line = format!(
            "[{secs}s/{:.0}s] gaps over the threshold {over}, longest {}",
            self.duration.as_secs_f64(),
            short(max)
        );
        let mut e = std::io::stderr();
        self.shown = true;
        if write!(e, "\r\x1b[2K{line}")
            .and_then(|()| e.flush())
            .is_err()
        {
            self.enabled = false;
        }
    }

    /// Erases the line if one was drawn.
    pub fn clear(&mut self) {
        if self.shown {
            let _ = write!(std::io::stderr(), "\r\x1b[2K");
        }
    }
}
