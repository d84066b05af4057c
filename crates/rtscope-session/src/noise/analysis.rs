//! The analysis of a noise run's gaps once its loops have stopped: `--explain` without a
//! housekeeping CPU defers every gap's attribution to there, and a live one leaves the last
//! gaps. The analysis is bounded ([`ANALYSIS_BOUND`]), said on stderr when it takes more than
//! [`SAY_EVERY`], and stopped by a stop signal (SIGINT, SIGTERM, SIGHUP) between two slices of
//! gaps: what was attributed is kept, the rest is counted as not traced and the cut is said
//! ([`AnalysisCut`]). Before, a `-D 10` run under load spent two minutes here after its loops
//! (134 s in all, 15.9 s with `--explain off`), printing nothing, and a SIGTERM was not taken
//! until the analysis had ended.

use rtscope_trace::explain::Explainer;
use std::time::{Duration, Instant};

/// The longest the analysis of the gaps runs after the loops stopped; the gaps not attributed
/// by then are counted as not traced (docs/noise.md).
pub const ANALYSIS_BOUND: Duration = Duration::from_secs(30);

/// How long the gaps still waiting for their trace get for it once every gap handed over has
/// been looked at (the trace reader may not have read to their end yet).
const TRACE_PATIENCE: Duration = Duration::from_millis(1500);

/// A line on stderr says how far the analysis is when it takes longer than this, and again
/// after every such stretch.
pub const SAY_EVERY: Duration = Duration::from_secs(2);

/// Gaps attributed between two looks at the clock and the stop signals.
const SLICE: usize = 32;

/// What ended the analysis early.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cut {
    /// A stop signal (its number).
    Signal(i32),
    /// [`ANALYSIS_BOUND`] ran out.
    Bound,
}

/// An analysis that ended before every gap was attributed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AnalysisCut {
    /// What ended it.
    pub by: Cut,
    /// Gaps handed to the analysis.
    pub total: usize,
    /// Gaps it had not attributed (counted as not traced, "timed out").
    pub left: usize,
}

impl AnalysisCut {
    /// The stop signal that cut it, if one did.
    pub fn signal(&self) -> Option<i32> {
        match self.by {
            Cut::Signal(s) => Some(s),
            Cut::Bound => None,
        }
    }

    /// One line for people: what cut it, what was kept and what the rest is counted as.
    pub fn line(&self) -> String {
        let by = match self.by {
            Cut::Signal(s) => format!("stopped by {}", rtscope_common::signals::signal_name(s)),
            Cut::Bound => format!("stopped at its bound of {} s", ANALYSIS_BOUND.as_secs()),
        };
        format!(
            "explain: the analysis of the gaps was {by}: {} of {} gaps attributed; the other {} are counted as not traced (timed out)\n",
            self.total - self.left,
            self.total,
            self.left
        )
    }
}

/// Attributes the gaps `ex` holds, in slices, until none is left, `bound` runs out or
/// `stop` returns a stop signal (looked at between two slices). `announce` says on stderr
/// that the analysis starts; a line says how far it is after every [`SAY_EVERY`] whatever
/// `announce` is. The gaps left are given up by the explainer's finish.
pub fn analyse(
    ex: &mut Explainer,
    announce: bool,
    bound: Duration,
    stop: &mut dyn FnMut() -> Option<i32>,
) -> Option<AnalysisCut> {
    let total = ex.pending();
    if total == 0 {
        return None;
    }
    if announce {
        rtscope_common::error::warn(&format!(
            "noise: the loops ended; attributing {total} gaps to their trace (at most {} s; SIGINT or SIGTERM stops it, keeping what is attributed)",
            bound.as_secs()
        ));
    }
    let start = Instant::now();
    let mut next_say = SAY_EVERY;
    let mut idle = 0;
    let cut = |by, left| Some(AnalysisCut { by, total, left });
    loop {
        let before = ex.pending();
        if before == 0 {
            return None;
        }
        if let Some(sig) = stop() {
            return cut(Cut::Signal(sig), before);
        }
        let elapsed = start.elapsed();
        if elapsed >= bound {
            return cut(Cut::Bound, before);
        }
        if elapsed >= next_say {
            next_say += SAY_EVERY;
            rtscope_common::error::warn(&format!(
                "noise: attributing the gaps to their trace: {} of {total} done after {} s (at most {} s; SIGINT or SIGTERM stops it)",
                total - before,
                elapsed.as_secs(),
                bound.as_secs()
            ));
        }
        ex.poll_some(SLICE);
        if ex.pending() < before {
            idle = 0;
            continue;
        }
        // A whole pass over the waiting gaps found each still waiting for its trace.
        idle += SLICE.min(before);
        if idle >= before {
            if elapsed >= TRACE_PATIENCE {
                return None;
            }
            idle = 0;
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtscope_explain::model::Spike;
    use rtscope_trace::explain::ExplainConfig;

    /// An explainer of the coarse tier (no trace, no monitors) holding `n` gaps of CPU 0.
    fn holding(n: u64) -> Explainer {
        let every = rtscope_trace::tracefs::StackChoice::Every;
        let mut cfg = ExplainConfig::new(1_000, vec![0], every);
        cfg.force_coarse = true;
        let mut ex = Explainer::start(cfg);
        for i in 0..n {
            ex.push_spike(Spike {
                cpu: 0,
                tid: 1,
                deadline_ns: 1_000_000 * (i + 1),
                wakeup_ns: 1_000_000 * (i + 1) + 50_000,
                smis: None,
            });
        }
        ex
    }

    #[test]
    fn a_stop_signal_cuts_the_analysis_and_counts_what_was_left() {
        let mut ex = holding(100);
        let mut looks = 0;
        let cut = analyse(&mut ex, false, ANALYSIS_BOUND, &mut || {
            looks += 1;
            (looks > 1).then_some(libc::SIGTERM)
        })
        .expect("cut by the signal");
        assert_eq!(cut.by, Cut::Signal(libc::SIGTERM));
        assert_eq!(cut.total, 100);
        assert_eq!(cut.left, ex.pending());
        assert_eq!(cut.signal(), Some(libc::SIGTERM));
        let line = cut.line();
        assert!(line.contains("stopped by SIGTERM"), "{line}");
        assert!(
            line.contains(&format!("the other {} are counted", cut.left)),
            "{line}"
        );
        let s = ex.finish(Duration::ZERO);
        assert_eq!(
            s.counts.spikes, 100,
            "every gap is counted, attributed or not"
        );
    }

    #[test]
    fn a_spent_bound_cuts_the_analysis_before_it_starts() {
        let mut ex = holding(10);
        let cut = analyse(&mut ex, false, Duration::ZERO, &mut || None).expect("cut");
        assert_eq!((cut.by, cut.total, cut.left), (Cut::Bound, 10, 10));
        assert!(cut.line().contains("bound of 30 s"), "{}", cut.line());
    }

    #[test]
    fn nothing_to_analyse_is_no_cut() {
        let mut ex = holding(0);
        assert_eq!(analyse(&mut ex, true, ANALYSIS_BOUND, &mut || None), None);
    }
}
