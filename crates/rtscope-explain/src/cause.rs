//! The one rule for naming the cause of a spike in a line of text: a culprit is named as "the"
//! cause only when it took at least half of the spike, and every cause printed carries its share.
//!
//! [`CauseLine::of`] reads an [`Attribution`]'s charges (or [`CauseLine::from_parts`] any
//! `(category, ns)` parts over a total) and decides, in this order:
//!
//! 1. [`Main::One`]: one category holds at least 50 % of the spike, more than any other
//!    (two culprits at 50 % each are not "one"): it is named with its share.
//! 2. [`Main::Group`]: no category does, but the categories of one [`Kind`] together do (four
//!    lower-priority tasks holding the CPU): the kind is named with how many there were, their
//!    share together and the largest of them with its share.
//! 3. [`Main::Unexplained`]: at least half of the spike is time no trace event covers (the
//!    `unexplained` charges and what no charge covers): never named as a cause; the line says
//!    the share unexplained and the largest known cause with its share.
//! 4. [`Main::Spread`]: otherwise the spike had no main cause: the number of causes, the two
//!    largest with their shares, and the largest kind of two or more when it holds more.
//!
//! Shares are printed as whole percents rounded down, so a cause below half never reads
//! "50 %". Task names are escaped (they come from the traced system). The terminal's and the
//! report's answer, `runs explain` and watch print causes through this module.

use crate::book::{ExplainSummary, Explained};
use crate::model::{Attribution, Category};
use crate::words::{dur, escaped, label};
use std::fmt;

/// Time of a spike charged to one category.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    /// The category.
    pub category: Category,
    /// Its time (ns).
    pub ns: u64,
}

/// A kind of cause whose categories add up to a group: the classes of
/// [`Class`](crate::classes::Class), with thread time split into tasks of higher priority and
/// tasks of lower priority holding the CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// Tasks of lower priority that kept the CPU ([`Category::Blocking`]).
    Blocking,
    /// Threads of higher or equal priority ([`Category::Thread`]).
    Thread,
    /// Hard interrupts, the timer's included (the timer interrupt late or long, other IRQs).
    Irq,
    /// Softirqs.
    Softirq,
    /// NMIs.
    Nmi,
    /// The measuring thread's own kernel time (the switch back to it, blocked in the kernel).
    Switch,
    /// RT throttling.
    Throttling,
    /// Time the guest could not see.
    Hypervisor,
    /// Firmware (SMI).
    Firmware,
}

impl Kind {
    /// The kind of a category; none for [`Category::Unexplained`], which is never a cause.
    pub fn of(c: &Category) -> Option<Kind> {
        Some(match c {
            Category::Blocking { .. } => Kind::Blocking,
            Category::Thread { .. } => Kind::Thread,
            Category::TimerIrqLate { .. } | Category::TimerIrqHandler | Category::Irq { .. } => {
                Kind::Irq
            }
            Category::Softirq { .. } => Kind::Softirq,
            Category::Nmi => Kind::Nmi,
            Category::ReturnToUser | Category::MeasuringThreadBlocked => Kind::Switch,
            Category::RtThrottling => Kind::Throttling,
            Category::Hypervisor => Kind::Hypervisor,
            Category::Firmware => Kind::Firmware,
            Category::Unexplained => return None,
        })
    }

    /// `n` causes of this kind, in words: `4 lower-priority tasks holding the CPU`,
    /// `1 softirq`.
    pub fn count(self, n: usize) -> String {
        let (one, many) = match self {
            Kind::Blocking => (
                "lower-priority task holding the CPU",
                "lower-priority tasks holding the CPU",
            ),
            Kind::Thread => (
                "thread of higher or equal priority",
                "threads of higher or equal priority",
            ),
            Kind::Irq => ("interrupt cause", "interrupt causes"),
            Kind::Softirq => ("softirq", "softirqs"),
            Kind::Nmi => ("NMI", "NMIs"),
            Kind::Switch => (
                "cause in the measuring thread's own kernel time",
                "causes in the measuring thread's own kernel time",
            ),
            Kind::Throttling => ("RT throttling cause", "RT throttling causes"),
            Kind::Hypervisor => ("hypervisor cause", "hypervisor causes"),
            Kind::Firmware => ("firmware cause", "firmware causes"),
        };
        format!("{n} {}", if n == 1 { one } else { many })
    }

    /// A member of a group, named within it: the task for tasks and threads
    /// (`synth_db:9843:nice0`), else the category's label; escaped.
    fn member(self, c: &Category) -> String {
        match (self, c.task()) {
            (Kind::Blocking | Kind::Thread, Some(t)) => escaped(&t.to_string()),
            _ => label(c),
        }
    }
}

/// The categories of one kind in a spike, together.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KindTotal {
    /// The kind.
    pub kind: Kind,
    /// Its categories with time.
    pub members: usize,
    /// Their time together (ns).
    pub ns: u64,
    /// The largest of them.
    pub largest: Part,
}

/// What a spike's line names, by the rule of the module.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Main {
    /// One category holds at least half of the spike, more than any other.
    One(Part),
    /// No category does, but the categories of one kind (at least two) together do, more than
    /// any other kind.
    Group(KindTotal),
    /// At least half of the spike is unexplained and no known cause holds half.
    Unexplained {
        /// The largest known cause, when any was charged.
        largest: Option<Part>,
    },
    /// No cause, kind or unexplained time holds half of the spike.
    Spread {
        /// The largest cause.
        largest: Part,
        /// The second largest, when there is one.
        next: Option<Part>,
        /// The largest kind with two or more causes, when it holds more than `largest`.
        kind: Option<KindTotal>,
    },
}

/// The cause of one spike as a line states it: what is named and every share's base.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CauseLine {
    /// What the line names.
    pub main: Main,
    /// The spike (ns): the base of every share (at least the time charged).
    pub total_ns: u64,
    /// Its time no trace event covers (ns): `unexplained` charges and what no charge covers.
    pub unexplained_ns: u64,
    /// Known causes (categories other than `unexplained` with time).
    pub causes: usize,
}

impl CauseLine {
    /// The line for a traced spike; none for a spike of no time.
    pub fn of(a: &Attribution) -> Option<CauseLine> {
        let parts = a.charges.iter().map(|c| (c.category.clone(), c.ns));
        CauseLine::from_parts(parts, a.spike.latency_ns())
    }

    /// The line for `parts` of a spike of `total_ns` (the base of the shares; raised to the
    /// parts' sum if it is less). A category given twice is summed; time not in any part is
    /// unexplained. None when there is no time at all.
    pub fn from_parts(
        parts: impl IntoIterator<Item = (Category, u64)>,
        total_ns: u64,
    ) -> Option<CauseLine> {
        let mut known: Vec<Part> = Vec::new();
        let mut charged = 0u64;
        let mut unexplained = 0u64;
        for (category, ns) in parts {
            charged = charged.saturating_add(ns);
            if category == Category::Unexplained {
                unexplained = unexplained.saturating_add(ns);
            } else if let Some(p) = known.iter_mut().find(|p| p.category == category) {
                p.ns = p.ns.saturating_add(ns);
            } else if ns > 0 {
                known.push(Part { category, ns });
            }
        }
        let total_ns = total_ns.max(charged);
        if total_ns == 0 {
            return None;
        }
        let unexplained_ns = unexplained.saturating_add(total_ns - charged);
        // Stable: equal parts keep the order given (an attribution's, largest first).
        known.sort_by_key(|p| std::cmp::Reverse(p.ns));
        let main = decide(&known, total_ns, unexplained_ns);
        Some(CauseLine {
            main,
            total_ns,
            unexplained_ns,
            causes: known.len(),
        })
    }

    /// `ns` as a whole percent of the spike, rounded down.
    pub fn percent(&self, ns: u64) -> u64 {
        percent(ns, self.total_ns)
    }

    /// The category named as the spike's cause: only for [`Main::One`].
    pub fn named(&self) -> Option<&Category> {
        match &self.main {
            Main::One(p) => Some(&p.category),
            _ => None,
        }
    }

    /// A sentence about `subject` (`the worst`, `the worst explained spike (2.10 ms)`):
    /// `the worst was caused by blocking by kworker:12:nice0 (62 %)`, `… was caused by 4
    /// lower-priority tasks holding the CPU (51 % together, largest synth_db:9843:nice0 15
    /// %)`, `… had no main cause, spread over 6 causes (…)`, `… was mostly unexplained (…)`.
    pub fn sentence(&self, subject: &str) -> String {
        let verb = match self.main {
            Main::One(_) | Main::Group(_) => "was caused by",
            Main::Unexplained { .. } => "was",
            Main::Spread { .. } => "had",
        };
        format!("{subject} {verb} {self}")
    }

    /// `; 12 % unexplained` when at least 1 % is.
    fn unexplained_tail(&self) -> String {
        match self.percent(self.unexplained_ns) {
            0 => String::new(),
            u => format!("; {u} % unexplained"),
        }
    }

    fn part(&self, p: &Part) -> String {
        format!("{} {} %", label(&p.category), self.percent(p.ns))
    }
}

/// `the worst spike (51.67 ms) was caused by …`: the line of the worst traced spike of a run's
/// explanation, `one` naming what a spike is (`spike`, `gap`); `the worst traced spike (…)`
/// when a larger one was explained from the monitors only. None without a traced spike.
pub fn worst_line(s: &ExplainSummary, one: &str) -> Option<String> {
    let worst = s.worst.iter().map(Explained::latency_ns).max()?;
    let traced = s
        .worst
        .iter()
        .filter_map(|e| match e {
            Explained::Traced(a) => Some(a),
            Explained::Coarse(_) => None,
        })
        .max_by_key(|a| a.spike.latency_ns())?;
    let ns = traced.spike.latency_ns();
    let which = if ns >= worst { "worst" } else { "worst traced" };
    let line = CauseLine::of(traced)?;
    Some(line.sentence(&format!("the {which} {one} ({})", dur(ns))))
}

/// Whole percent of `total`, rounded down.
fn percent(ns: u64, total: u64) -> u64 {
    (u128::from(ns) * 100 / u128::from(total.max(1))) as u64
}

/// At least half of `total`.
fn half(ns: u64, total: u64) -> bool {
    u128::from(ns) * 2 >= u128::from(total)
}

/// The rule, over the known parts largest first.
fn decide(known: &[Part], total: u64, unexplained: u64) -> Main {
    let first = known.first();
    let second = known.get(1);
    if let Some(p) = first.filter(|p| half(p.ns, total) && second.is_none_or(|s| s.ns < p.ns)) {
        return Main::One(p.clone());
    }
    let kinds = kinds(known);
    let top = kinds.first().filter(|k| k.members >= 2);
    let beaten = |k: &KindTotal| kinds.get(1).is_none_or(|o| o.ns < k.ns);
    if let Some(k) = top.filter(|k| half(k.ns, total) && beaten(k)) {
        return Main::Group(k.clone());
    }
    match first {
        Some(largest) if !half(unexplained, total) => Main::Spread {
            largest: largest.clone(),
            next: second.cloned(),
            kind: top.filter(|k| k.ns > largest.ns).cloned(),
        },
        _ => Main::Unexplained {
            largest: first.cloned(),
        },
    }
}

/// The parts by kind, the largest first (equal ones in the order of their largest members).
fn kinds(known: &[Part]) -> Vec<KindTotal> {
    let mut out: Vec<KindTotal> = Vec::new();
    for p in known {
        let Some(kind) = Kind::of(&p.category) else {
            continue;
        };
        match out.iter_mut().find(|k| k.kind == kind) {
            Some(k) => {
                k.members += 1;
                k.ns = k.ns.saturating_add(p.ns);
            }
            None => out.push(KindTotal {
                kind,
                members: 1,
                ns: p.ns,
                largest: p.clone(),
            }),
        }
    }
    out.sort_by_key(|k| std::cmp::Reverse(k.ns));
    out
}

impl fmt::Display for CauseLine {
    /// The cause as a phrase, every share printed: `blocking by kworker:12:nice0 (62 %)`,
    /// `4 lower-priority tasks holding the CPU (51 % together, largest synth_db:9843:nice0 15
    /// %)`, `no main cause, spread over 6 causes (largest …, then …)`, `mostly unexplained
    /// (62 % not covered by the trace; largest known cause … 20 %)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let unx = self.unexplained_tail();
        match &self.main {
            Main::One(p) => write!(f, "{} ({} %{unx})", label(&p.category), self.percent(p.ns)),
            Main::Group(k) => write!(
                f,
                "{} ({} % together, largest {} {} %{unx})",
                k.kind.count(k.members),
                self.percent(k.ns),
                k.kind.member(&k.largest.category),
                self.percent(k.largest.ns)
            ),
            Main::Unexplained { largest } => {
                let u = self.percent(self.unexplained_ns);
                match largest {
                    Some(p) => write!(
                        f,
                        "mostly unexplained ({u} % not covered by the trace; largest known \
                         cause {})",
                        self.part(p)
                    ),
                    None => write!(f, "unexplained ({u} % not covered by the trace)"),
                }
            }
            Main::Spread {
                largest,
                next,
                kind,
            } => {
                write!(
                    f,
                    "no main cause, spread over {} causes (largest {}",
                    self.causes,
                    self.part(largest)
                )?;
                if let Some(n) = next {
                    write!(f, ", then {}", self.part(n))?;
                }
                if let Some(k) = kind {
                    let n = k.kind.count(k.members);
                    write!(f, "; {n} {} % together", self.percent(k.ns))?;
                }
                write!(f, "{unx})")
            }
        }
    }
}

#[cfg(test)]
#[path = "cause_tests.rs"]
mod tests;
