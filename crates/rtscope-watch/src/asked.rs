//! Which wake-ups the watch handed to the explainer, for which window, and where each answer
//! goes: the running worst wake-up of each CPU's open window is handed over as soon as it is
//! seen (so its trace is pinned while the recorder still holds it, docs/watch.md), a worse
//! one later in the same window replaces it, and when the window closes its worst is final:
//! its answer — an explanation or the reason there is none — goes to the window's row, at once
//! when it came before the close, else when it comes. Pure bookkeeping, no trace: tests drive
//! it with synthetic answers.

use crate::cause::Cause;
use rtscope_core::Nanos;
use rtscope_explain::unexplained::Unexplained;

/// A window's worst wake-up, explained.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    /// The window's start (Unix ns).
    pub start_ns: i64,
    /// Its CPU.
    pub cpu: u32,
    /// The wake-up's latency.
    pub latency: Nanos,
    /// The largest causes, largest first (at most [`crate::cause::MAX_CAUSES`]), threads
    /// grouped by command.
    pub causes: Vec<Cause>,
    /// The whole explanation (JSON, as `runs explain` stores it).
    pub json: String,
    /// Its cause by the one rule of `rtscope_explain::cause` (a culprit only with half of the
    /// wake-up, else the group or the spread, every share printed); `None` for no time.
    pub line: Option<String>,
}

/// A window whose worst wake-up is at or above the spike threshold and got no explanation,
/// with the reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Missed {
    /// The window's start (Unix ns).
    pub start_ns: i64,
    /// Its CPU.
    pub cpu: u32,
    /// The window's maximum: the worst wake-up's latency, or its bucket bound when its time
    /// is not known.
    pub latency: Nanos,
    /// Why.
    pub why: Unexplained,
}

/// What a window's row gets.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// An explanation.
    Found(Found),
    /// None, and why.
    Missed(Missed),
}

/// The explanation of one wake-up, before it is known to be its window's worst.
#[derive(Debug, Clone, PartialEq)]
pub struct Explanation {
    /// As [`Found::causes`].
    pub causes: Vec<Cause>,
    /// As [`Found::json`].
    pub json: String,
    /// As [`Found::line`].
    pub line: Option<String>,
}

#[derive(Debug, Clone)]
struct Handed {
    cpu: u32,
    wakeup_ns: u64,
    start_ns: i64,
    latency: Nanos,
    /// Its window has closed with it as its worst.
    last: bool,
    /// The answer, when it came before the window closed.
    outcome: Option<Result<Explanation, Unexplained>>,
}

impl Handed {
    fn answer(self, outcome: Result<Explanation, Unexplained>) -> Answer {
        match outcome {
            Ok(e) => Answer::Found(Found {
                start_ns: self.start_ns,
                cpu: self.cpu,
                latency: self.latency,
                causes: e.causes,
                json: e.json,
                line: e.line,
            }),
            Err(why) => Answer::Missed(Missed {
                start_ns: self.start_ns,
                cpu: self.cpu,
                latency: self.latency,
                why,
            }),
        }
    }
}

/// The wake-ups handed over and not answered yet (at most `max`).
#[derive(Debug, Clone)]
pub struct Ledger {
    handed: Vec<Handed>,
    max: usize,
}

impl Ledger {
    /// Holds at most `max` wake-ups; beyond, the oldest is let go (its window, when closed,
    /// answered [`Unexplained::TooManyWaiting`]).
    pub fn new(max: usize) -> Ledger {
        Ledger {
            handed: Vec::new(),
            max: max.max(1),
        }
    }

    /// Wake-ups waiting.
    pub fn len(&self) -> usize {
        self.handed.len()
    }

    /// Whether none waits.
    pub fn is_empty(&self) -> bool {
        self.handed.is_empty()
    }

    /// Notes the running worst wake-up of `cpu`'s window starting at `start_ns`; `true` when
    /// it is new and must be handed to the explainer. A worse one replaces the one handed
    /// before for the same window (its answer, when it comes, is dropped). `out` gets the
    /// answers of closed windows let go to stay within the bound.
    pub fn hand(
        &mut self,
        cpu: u32,
        start_ns: i64,
        wakeup_ns: u64,
        latency: Nanos,
        out: &mut Vec<Answer>,
    ) -> bool {
        if self
            .handed
            .iter()
            .any(|h| h.cpu == cpu && h.wakeup_ns == wakeup_ns)
        {
            return false;
        }
        self.handed
            .retain(|h| h.last || h.cpu != cpu || h.start_ns != start_ns);
        while self.handed.len() >= self.max {
            let old = self.handed.remove(0);
            if old.last {
                out.push(old.answer(Err(Unexplained::TooManyWaiting)));
            }
        }
        self.handed.push(Handed {
            cpu,
            wakeup_ns,
            start_ns,
            latency,
            last: false,
            outcome: None,
        });
        true
    }

    /// `cpu`'s window starting at `start_ns` closed with `wakeup_ns` as its worst (handed
    /// before): its answer from now on goes to the row — now, when it came already.
    pub fn close(&mut self, cpu: u32, start_ns: i64, wakeup_ns: u64) -> Option<Answer> {
        self.handed
            .retain(|h| h.cpu != cpu || h.start_ns != start_ns || h.wakeup_ns == wakeup_ns);
        let i = self
            .handed
            .iter()
            .position(|h| h.cpu == cpu && h.wakeup_ns == wakeup_ns)?;
        match self.handed[i].outcome.take() {
            Some(o) => Some(self.handed.remove(i).answer(o)),
            None => {
                self.handed[i].last = true;
                None
            }
        }
    }

    /// Forgets what was handed for `cpu`'s window starting at `start_ns` (its worst turned out
    /// unknown).
    pub fn forget(&mut self, cpu: u32, start_ns: i64) {
        self.handed
            .retain(|h| h.cpu != cpu || h.start_ns != start_ns);
    }

    /// The explainer's answer for the wake-up at `wakeup_ns` on `cpu`: the row's answer when
    /// its window has closed with it as its worst; kept until then; dropped when it was
    /// replaced.
    pub fn answer(
        &mut self,
        cpu: u32,
        wakeup_ns: u64,
        outcome: Result<Explanation, Unexplained>,
    ) -> Option<Answer> {
        let i = self
            .handed
            .iter()
            .position(|h| h.cpu == cpu && h.wakeup_ns == wakeup_ns)?;
        if self.handed[i].last {
            return Some(self.handed.remove(i).answer(outcome));
        }
        self.handed[i].outcome = Some(outcome);
        None
    }

    /// At the end: every closed window still waiting gets `why`; the rest is forgotten.
    pub fn give_up(&mut self, why: Unexplained) -> Vec<Answer> {
        std::mem::take(&mut self.handed)
            .into_iter()
            .filter(|h| h.last)
            .map(|h| h.answer(Err(why)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(json: &str) -> Result<Explanation, Unexplained> {
        Ok(Explanation {
            causes: Vec::new(),
            json: json.into(),
            line: None,
        })
    }

    fn json_of(a: &Answer) -> &str {
        match a {
            Answer::Found(f) => &f.json,
            Answer::Missed(_) => panic!("not explained: {a:?}"),
        }
    }

    #[test]
    fn a_worse_wake_up_replaces_the_one_handed_before_and_the_closed_worst_is_answered() {
        let mut l = Ledger::new(8);
        let mut out = Vec::new();
        assert!(l.hand(1, 100, 5_000, Nanos(200_000), &mut out));
        assert!(!l.hand(1, 100, 5_000, Nanos(200_000), &mut out), "once");
        // Its answer comes while the window is open: kept.
        assert_eq!(l.answer(1, 5_000, found("first")), None);
        assert!(l.hand(1, 100, 7_000, Nanos(900_000), &mut out));
        assert_eq!(l.len(), 1, "the first was replaced");
        assert_eq!(l.answer(1, 5_000, found("first")), None, "dropped");
        // The worst's answer came before the close: the close gives it.
        assert_eq!(l.answer(1, 7_000, found("worst")), None);
        let a = l.close(1, 100, 7_000).expect("answered at the close");
        assert_eq!(json_of(&a), "worst");
        assert!(out.is_empty() && l.is_empty());
    }

    #[test]
    fn an_answer_after_the_close_goes_to_the_row_with_its_reason() {
        let mut l = Ledger::new(8);
        let mut out = Vec::new();
        l.hand(0, 100, 5_000, Nanos(300_000), &mut out);
        l.hand(1, 100, 6_000, Nanos(400_000), &mut out);
        assert_eq!(l.close(0, 100, 5_000), None);
        assert_eq!(l.close(1, 100, 6_000), None);
        let a = l.answer(0, 5_000, Err(Unexplained::LostEvents)).unwrap();
        assert_eq!(
            a,
            Answer::Missed(Missed {
                start_ns: 100,
                cpu: 0,
                latency: Nanos(300_000),
                why: Unexplained::LostEvents,
            })
        );
        // The end: the other still waits and gets the reason given.
        let rest = l.give_up(Unexplained::TimedOut);
        assert_eq!(rest.len(), 1);
        assert!(matches!(
            rest[0],
            Answer::Missed(Missed {
                cpu: 1,
                why: Unexplained::TimedOut,
                ..
            })
        ));
    }

    #[test]
    fn a_closed_window_let_go_for_the_bound_says_so_and_an_open_one_is_forgotten() {
        let mut l = Ledger::new(2);
        let mut out = Vec::new();
        l.hand(0, 100, 1_000, Nanos(200_000), &mut out);
        l.close(0, 100, 1_000);
        l.hand(0, 200, 2_000, Nanos(200_000), &mut out);
        l.hand(0, 300, 3_000, Nanos(200_000), &mut out);
        assert_eq!(out.len(), 1, "the closed window 100 was let go");
        assert!(matches!(
            out[0],
            Answer::Missed(Missed {
                start_ns: 100,
                why: Unexplained::TooManyWaiting,
                ..
            })
        ));
        l.hand(1, 300, 4_000, Nanos(200_000), &mut out);
        assert_eq!(out.len(), 1, "window 200 was still open: no row to answer");
        l.forget(0, 300);
        assert_eq!(l.len(), 1);
        assert!(l.give_up(Unexplained::TimedOut).is_empty(), "none closed");
    }
}
