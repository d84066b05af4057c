//! Why a spike, or a watch window's worst wake-up, has no explanation: one vocabulary for the
//! stored JSON, the text and the report.
//!
//! Every reason has one snake_case name (its JSON value, [`Unexplained::name`]) and words for
//! people ([`Unexplained::describe`]) that contain the name's words, so that a JSON field, a
//! terminal line and a report cell say the same thing. The reasons a trace gives are
//! [`NotTraced`]'s (described by it); the others are the watch's: its worst wake-up's time
//! was not known, no trace is recorded, or more windows waited than it keeps.

use crate::model::NotTraced;
use serde::{Deserialize, Serialize};

/// Why a spike or a window's worst wake-up was not explained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Unexplained {
    /// [`NotTraced::TracerNotLive`].
    TracerNotLive,
    /// [`NotTraced::LostEvents`].
    LostEvents,
    /// [`NotTraced::OutOfWindow`].
    OutOfWindow,
    /// [`NotTraced::CpuNotTraced`].
    CpuNotTraced,
    /// [`NotTraced::QueueFull`].
    QueueFull,
    /// [`NotTraced::TimedOut`].
    TimedOut,
    /// The worst wake-up's time is not known (its sample ring dropped samples, or it came
    /// after the last drain before the window's snapshot): there is no instant to look up in
    /// the trace.
    WorstUnknown,
    /// No trace is recorded (tracefs cannot be used: the monitors' tier) and there are no
    /// monitor samples to explain it from.
    NoTrace,
    /// More windows waited for their explanation than are kept: the oldest was let go.
    TooManyWaiting,
}

impl From<NotTraced> for Unexplained {
    fn from(n: NotTraced) -> Unexplained {
        match n {
            NotTraced::TracerNotLive => Unexplained::TracerNotLive,
            NotTraced::LostEvents => Unexplained::LostEvents,
            NotTraced::OutOfWindow => Unexplained::OutOfWindow,
            NotTraced::CpuNotTraced => Unexplained::CpuNotTraced,
            NotTraced::QueueFull => Unexplained::QueueFull,
            NotTraced::TimedOut => Unexplained::TimedOut,
        }
    }
}

impl Unexplained {
    /// All, in the order printed.
    pub const ALL: [Unexplained; 9] = [
        Unexplained::TracerNotLive,
        Unexplained::LostEvents,
        Unexplained::OutOfWindow,
        Unexplained::CpuNotTraced,
        Unexplained::QueueFull,
        Unexplained::TimedOut,
        Unexplained::WorstUnknown,
        Unexplained::NoTrace,
        Unexplained::TooManyWaiting,
    ];

    /// The trace's reason, when it is one.
    pub fn not_traced(self) -> Option<NotTraced> {
        NotTraced::ALL
            .into_iter()
            .find(|&n| Unexplained::from(n) == self)
    }

    /// Its JSON name (`out_of_window`).
    pub fn name(self) -> &'static str {
        match self {
            Unexplained::TracerNotLive => "tracer_not_live",
            Unexplained::LostEvents => "lost_events",
            Unexplained::OutOfWindow => "out_of_window",
            Unexplained::CpuNotTraced => "cpu_not_traced",
            Unexplained::QueueFull => "queue_full",
            Unexplained::TimedOut => "timed_out",
            Unexplained::WorstUnknown => "worst_unknown",
            Unexplained::NoTrace => "no_trace",
            Unexplained::TooManyWaiting => "too_many_waiting",
        }
    }

    /// The reason of a JSON name (`None`: a name this rtscope does not know).
    pub fn from_name(name: &str) -> Option<Unexplained> {
        Unexplained::ALL.into_iter().find(|u| u.name() == name)
    }

    /// Words for people; they contain the name's words.
    pub fn describe(self) -> &'static str {
        if let Some(n) = self.not_traced() {
            return n.describe();
        }
        match self {
            Unexplained::WorstUnknown => "worst wake-up's time unknown (its samples were lost)",
            Unexplained::NoTrace => "no trace (tracefs not usable) and no monitor samples",
            _ => "too many waiting (the oldest was let go)",
        }
    }

    /// What to change so that such wake-ups are explained, for people.
    pub fn fix(self) -> &'static str {
        if let Some(n) = self.not_traced() {
            return n.fix();
        }
        match self {
            Unexplained::WorstUnknown => {
                "the control thread did not drain the measuring threads' sample rings in time: \
                 give rtscope's housekeeping CPUs (--housekeeping) less load"
            }
            Unexplained::NoTrace => {
                "run as root with tracefs mounted (rtscope check says what is missing)"
            }
            _ => "raise --spike so that fewer windows wait for their trace",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The JSON name's words, each found in the description (case and plural aside).
    fn words_agree(name: &str, text: &str) -> bool {
        let text = text.to_lowercase();
        name.split('_')
            .all(|w| text.contains(w.trim_end_matches('s')))
    }

    #[test]
    fn every_reasons_json_name_and_its_words_for_people_agree() {
        for u in Unexplained::ALL {
            let json = serde_json::to_string(&u).unwrap();
            assert_eq!(json, format!("\"{}\"", u.name()), "{u:?}");
            assert_eq!(Unexplained::from_name(u.name()), Some(u));
            let back: Unexplained = serde_json::from_str(&json).unwrap();
            assert_eq!(back, u);
            assert!(
                words_agree(u.name(), u.describe()),
                "{}: {}",
                u.name(),
                u.describe()
            );
            assert!(!u.fix().is_empty());
        }
        for n in NotTraced::ALL {
            let json = serde_json::to_string(&n).unwrap();
            let u = Unexplained::from(n);
            assert_eq!(json, format!("\"{}\"", u.name()), "{n:?}");
            assert_eq!(u.not_traced(), Some(n));
            assert_eq!(u.describe(), n.describe());
            assert!(
                words_agree(u.name(), n.describe()),
                "{json}: {}",
                n.describe()
            );
        }
        assert_eq!(Unexplained::from_name("no_such_reason"), None);
    }

    #[test]
    fn the_run_summarys_counts_are_keyed_by_the_same_names() {
        let mut counts = crate::book::NotTracedCounts::default();
        for n in NotTraced::ALL {
            counts.add(n);
        }
        let v = serde_json::to_value(counts).unwrap();
        let mut keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        let mut names: Vec<&str> = NotTraced::ALL
            .iter()
            .map(|&n| Unexplained::from(n).name())
            .collect();
        keys.sort_unstable();
        names.sort_unstable();
        assert_eq!(keys, names);
        assert!(v.as_object().unwrap().values().all(|c| c == 1), "{v}");
    }
}
