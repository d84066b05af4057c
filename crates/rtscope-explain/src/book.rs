//! The spike book: the worst attributed spikes of each time window (bounded memory), the
//! culprit totals over the whole run and the counts of spikes explained or not.

use crate::class_hist::{ClassHistogram, ClassHistograms};
use crate::classes::ClassTotals;
use crate::coarse::CoarseExplanation;
use crate::culprits::CulpritTable;
use crate::culprits::{CulpritRow, Merge};
use crate::interference::Interference;
use crate::model::{Attribution, Category, MissingExits, NotTraced, Tier};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One explained spike as kept and stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "tier", rename_all = "snake_case")]
pub enum Explained {
    /// From a trace.
    Traced(Attribution),
    /// From the monitors only.
    Coarse(CoarseExplanation),
}

impl Explained {
    /// Wake-up latency (ns).
    pub fn latency_ns(&self) -> u64 {
        match self {
            Explained::Traced(a) => a.spike.latency_ns(),
            Explained::Coarse(c) => c.spike.latency_ns(),
        }
    }

    /// Wake-up time (ns, CLOCK_MONOTONIC).
    pub fn wakeup_ns(&self) -> u64 {
        match self {
            Explained::Traced(a) => a.spike.wakeup_ns,
            Explained::Coarse(c) => c.spike.wakeup_ns,
        }
    }
}

/// Counts over the run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    /// Spikes above the threshold handed to the explainer.
    pub spikes: u64,
    /// Attributed from a trace.
    pub traced: u64,
    /// Of those, without the waking of the measuring thread in the trace.
    pub partial: u64,
    /// Explained from the monitors only.
    pub coarse: u64,
    /// With no context at all (outside the trace window, or no monitor sample).
    pub no_context: u64,
    /// Latency summed over all spikes above the threshold (ns); 0 in summaries recorded
    /// before it was counted (unknown, not none).
    #[serde(default)]
    pub spike_ns: u64,
    /// Of it, the latency of the spikes attributed from a trace (ns).
    #[serde(default)]
    pub traced_ns: u64,
    /// Spikes the trace did not explain, by reason (they fall back to the monitors).
    #[serde(default)]
    pub not_traced: NotTracedCounts,
}

/// Spikes not traced, by [`NotTraced`] reason.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct NotTracedCounts {
    /// [`NotTraced::TracerNotLive`].
    pub tracer_not_live: u64,
    /// [`NotTraced::LostEvents`].
    pub lost_events: u64,
    /// [`NotTraced::OutOfWindow`].
    pub out_of_window: u64,
    /// [`NotTraced::CpuNotTraced`].
    pub cpu_not_traced: u64,
    /// [`NotTraced::QueueFull`].
    pub queue_full: u64,
    /// [`NotTraced::TimedOut`].
    pub timed_out: u64,
}

impl NotTracedCounts {
    fn slot(&mut self, why: NotTraced) -> &mut u64 {
        match why {
            NotTraced::TracerNotLive => &mut self.tracer_not_live,
            NotTraced::LostEvents => &mut self.lost_events,
            NotTraced::OutOfWindow => &mut self.out_of_window,
            NotTraced::CpuNotTraced => &mut self.cpu_not_traced,
            NotTraced::QueueFull => &mut self.queue_full,
            NotTraced::TimedOut => &mut self.timed_out,
        }
    }

    /// Spikes not traced for `why`.
    pub fn get(&self, why: NotTraced) -> u64 {
        let mut c = *self;
        *c.slot(why)
    }

    /// Counts one more for `why`.
    pub fn add(&mut self, why: NotTraced) {
        *self.slot(why) += 1;
    }

    /// `(reason, count)` for every reason with a count, in [`NotTraced::ALL`]'s order.
    pub fn nonzero(&self) -> Vec<(NotTraced, u64)> {
        NotTraced::ALL
            .iter()
            .map(|&w| (w, self.get(w)))
            .filter(|&(_, n)| n > 0)
            .collect()
    }
}

/// Everything the explainer reports for a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExplainSummary {
    /// The tier used.
    pub tier: Tier,
    /// Why a better tier was not used (no tracefs, not root …).
    pub tier_reason: Option<String>,
    /// Spikes at or above this were explained (ns).
    pub threshold_ns: u64,
    /// Counts.
    pub counts: Counts,
    /// The worst spikes of each window, in time order.
    pub worst: Vec<Explained>,
    /// Culprits over the run, by total time, largest first (threads of one command merged
    /// as [`crate::culprits`] says).
    pub culprits: Vec<CulpritRow>,
    /// Time per class summed from every charge, independent of the culprit rows; absent in
    /// summaries recorded before it was kept (then summed from the rows).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub classes: Option<ClassTotals>,
    /// Interference counts of the traced spikes, per CPU in CPU order (`rtla osnoise top`'s
    /// columns; what `rtscope noise` prints); empty in summaries recorded before they were
    /// counted.
    #[serde(default)]
    pub interference: Vec<Interference>,
    /// Per CPU and class, a histogram of each traced spike's time in that class; empty in
    /// summaries recorded before they were kept.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub class_histograms: Vec<ClassHistogram>,
    /// The traced spikes with time below the kernel and what their SMT siblings did; `None`
    /// where no sibling was traced (no SMT, or recorded before they were).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub smt: Option<SmtCounts>,
    /// Traced CPUs whose interrupt exits stopped reaching the trace (a kernel tracepoint
    /// that no longer fires): their time below the kernel is unexplained from then on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing_exits: Vec<MissingExits>,
    /// Time by kernel function over every traced spike with a kernel stack
    /// ([`crate::tally::FunctionTable`]), largest first; empty without stacks and in
    /// summaries recorded before they were taken.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub functions: Vec<crate::stack::FunctionTime>,
    /// The same time by folded stack over every traced spike with one, for a flame graph and
    /// `runs explain --folded` ([`crate::folded`]); empty in summaries recorded before they
    /// were kept (then drawn from the kept spikes).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stacks: Vec<crate::folded::FoldedStack>,
}

/// Traced spikes (gaps) with time below the kernel (hypervisor, firmware, unexplained) on a CPU
/// whose SMT siblings were traced, and those in which a sibling was busy for more than half of
/// the spike.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SmtCounts {
    /// Such spikes.
    pub below_kernel: u64,
    /// Their time below the kernel (ns).
    pub below_kernel_ns: u64,
    /// Of them, with a sibling busy over half of the spike.
    pub sibling_busy: u64,
    /// Their time below the kernel (ns).
    pub sibling_busy_ns: u64,
}

impl SmtCounts {
    /// Counts one traced spike (nothing when its siblings were not traced or no time of it was
    /// below the kernel).
    pub fn add(&mut self, a: &Attribution) {
        let below = a.ns_where(|c| {
            matches!(
                c,
                Category::Hypervisor | Category::Firmware | Category::Unexplained
            )
        });
        if a.siblings.is_empty() || below == 0 {
            return;
        }
        self.below_kernel += 1;
        self.below_kernel_ns += below;
        if a.siblings.iter().any(|s| s.is_busy()) {
            self.sibling_busy += 1;
            self.sibling_busy_ns += below;
        }
    }
}

impl ExplainSummary {
    /// Time per class: as kept from every charge, or (a summary recorded before it was kept)
    /// the culprit totals summed by class.
    pub fn class_totals(&self) -> ClassTotals {
        self.classes.unwrap_or_else(|| {
            ClassTotals::sum(self.culprits.iter().map(|r| (&r.category, r.total_ns)))
        })
    }

    /// A flight-recorder summary holding only culprit totals (`(category, ns)`, each the main
    /// culprit of one spike): what noise's time per class and the report's cause bars read.
    pub fn of_totals(threshold_ns: u64, totals: Vec<(Category, u64)>) -> ExplainSummary {
        let classes = ClassTotals::sum(totals.iter().map(|(c, ns)| (c, *ns)));
        ExplainSummary {
            classes: Some(classes),
            tier: Tier::FlightRecorder,
            tier_reason: None,
            threshold_ns,
            counts: Counts::default(),
            worst: Vec::new(),
            interference: Vec::new(),
            class_histograms: Vec::new(),
            smt: None,
            missing_exits: Vec::new(),
            functions: Vec::new(),
            stacks: Vec::new(),
            culprits: totals
                .into_iter()
                .map(|(category, total_ns)| CulpritRow {
                    category,
                    spikes_as_main: 1,
                    spikes: 1,
                    total_ns,
                    merged: Merge::Single,
                })
                .collect(),
        }
    }
}

/// Keeps the worst `per_window` spikes of each `window_ns` window; when there are more than
/// `max_windows` windows the window length doubles and neighbours merge.
#[derive(Debug, Clone)]
pub struct SpikeBook {
    window_ns: u64,
    per_window: usize,
    max_windows: usize,
    windows: BTreeMap<u64, Vec<Explained>>,
    culprits: CulpritTable,
    interference: BTreeMap<usize, Interference>,
    class_hist: ClassHistograms,
    smt: Option<SmtCounts>,
    functions: crate::tally::FunctionTable,
    /// Counts so far.
    pub counts: Counts,
}

impl SpikeBook {
    /// A book of `per_window` spikes per `window_ns`, at most `max_windows` windows.
    pub fn new(window_ns: u64, per_window: usize, max_windows: usize) -> SpikeBook {
        SpikeBook {
            window_ns: window_ns.max(1),
            per_window: per_window.max(1),
            max_windows: max_windows.max(1),
            windows: BTreeMap::new(),
            culprits: CulpritTable::default(),
            interference: BTreeMap::new(),
            class_hist: ClassHistograms::default(),
            smt: None,
            functions: crate::tally::FunctionTable::default(),
            counts: Counts::default(),
        }
    }

    /// Records a spike of `latency_ns` with no context.
    pub fn no_context(&mut self, latency_ns: u64) {
        self.counts.spikes += 1;
        self.counts.spike_ns += latency_ns;
        self.counts.no_context += 1;
    }

    /// Notes why the trace did not explain a spike (which is then recorded with
    /// [`SpikeBook::add`] from the monitors, or [`SpikeBook::no_context`]).
    pub fn not_traced(&mut self, why: NotTraced) {
        self.counts.not_traced.add(why);
    }

    /// Records an explained spike.
    pub fn add(&mut self, e: Explained) {
        self.counts.spikes += 1;
        self.counts.spike_ns += e.latency_ns();
        match &e {
            Explained::Traced(a) => {
                self.counts.traced += 1;
                self.counts.traced_ns += a.spike.latency_ns();
                self.counts.partial += u64::from(!a.complete);
                self.culprits.add(a);
                self.class_hist.add(a);
                self.functions.add(a);
                if !a.siblings.is_empty() {
                    self.smt.get_or_insert_with(SmtCounts::default).add(a);
                }
                let cpu = a.spike.cpu;
                self.interference
                    .entry(cpu)
                    .or_insert(Interference {
                        cpu,
                        ..Interference::default()
                    })
                    .add(a);
            }
            Explained::Coarse(_) => self.counts.coarse += 1,
        }
        self.keep(e);
    }

    fn keep(&mut self, e: Explained) {
        self.place(e);
        while self.windows.len() > self.max_windows {
            self.window_ns = self.window_ns.saturating_mul(2);
            let old = std::mem::take(&mut self.windows);
            for e in old.into_values().flatten() {
                self.place(e);
            }
        }
    }

    /// Puts `e` into its window, which keeps its `per_window` worst.
    fn place(&mut self, e: Explained) {
        let w = self
            .windows
            .entry(e.wakeup_ns() / self.window_ns)
            .or_default();
        w.push(e);
        trim(w, self.per_window);
    }

    /// Window length now in force (ns).
    pub fn window_ns(&self) -> u64 {
        self.window_ns
    }

    /// The summary.
    pub fn summary(
        &self,
        tier: Tier,
        tier_reason: Option<String>,
        threshold_ns: u64,
    ) -> ExplainSummary {
        let mut worst: Vec<Explained> = self.windows.values().flatten().cloned().collect();
        worst.sort_by_key(|e| e.wakeup_ns());
        ExplainSummary {
            tier,
            tier_reason,
            threshold_ns,
            counts: self.counts,
            worst,
            culprits: self.culprits.rows(),
            classes: Some(self.culprits.classes()),
            interference: self.interference.values().copied().collect(),
            class_histograms: self.class_hist.finish(),
            smt: self.smt,
            missing_exits: Vec::new(),
            functions: self.functions.rows(),
            stacks: self.functions.stacks(),
        }
    }
}

fn trim(w: &mut Vec<Explained>, keep: usize) {
    if w.len() > keep {
        w.sort_by_key(|e| std::cmp::Reverse(e.latency_ns()));
        w.truncate(keep);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interference::Interference;
    use crate::model::{Charge, LateCause, Softirq, Spike, Task};

    fn attr(wakeup_ns: u64, latency: u64, cat: Category) -> Explained {
        let spike = Spike {
            cpu: 1,
            tid: 9,
            deadline_ns: wakeup_ns - latency,
            wakeup_ns,
            smis: None,
        };
        Explained::Traced(Attribution {
            spike,
            charges: vec![Charge::new(cat, latency)],
            complete: true,
            lost_events: false,
            siblings: Vec::new(),
            stack: None,
            handler: None,
        })
    }

    fn gap(cpu: usize, at: u64, cats: &[Category]) -> Explained {
        Explained::Traced(Attribution {
            spike: Spike {
                cpu,
                tid: 9,
                deadline_ns: at,
                wakeup_ns: at + 100,
                smis: None,
            },
            charges: cats.iter().map(|c| Charge::new(c.clone(), 10)).collect(),
            complete: true,
            lost_events: false,
            siblings: Vec::new(),
            stack: None,
            handler: None,
        })
    }

    #[test]
    fn interference_counts_every_occurrence_and_a_gap_with_none_as_hardware() {
        let irq = |n: &str| Category::Irq { name: n.into() };
        let thread = Category::Thread {
            task: Task {
                comm: "spin".into(),
                pid: 7,
                prio: 89,
            },
        };
        let mut b = SpikeBook::new(1_000, 4, 4);
        b.add(gap(1, 0, &[irq("eth0 (irq 24)"), irq("local_timer")]));
        b.add(gap(1, 1_000, &[thread.clone(), Category::ReturnToUser]));
        b.add(gap(
            1,
            2_000,
            &[
                Category::Softirq {
                    vec: Softirq::NetRx,
                },
                irq("eth0 (irq 24)"),
            ],
        ));
        b.add(gap(1, 3_000, &[Category::Hypervisor]));
        b.add(gap(
            1,
            4_000,
            &[Category::ReturnToUser, Category::Unexplained],
        ));
        b.add(gap(3, 5_000, &[Category::Nmi, Category::RtThrottling]));
        // Three timer ticks in one gap count 3, as osnoise counts them; a charge recorded
        // before occurrences were counted (0) counts once.
        let mut ticks = gap(1, 6_000, &[irq("local_timer")]);
        if let Explained::Traced(a) = &mut ticks {
            a.charges[0].times = 3;
        }
        b.add(ticks);
        b.no_context(100);
        let s = b.summary(Tier::FlightRecorder, None, 1);
        let one = Interference {
            cpu: 1,
            hw: 2,
            nmi: 0,
            irq: 6,
            softirq: 1,
            thread: 1,
        };
        let three = Interference {
            cpu: 3,
            nmi: 1,
            thread: 1,
            ..Interference::default()
        };
        assert_eq!(s.interference, vec![one, three]);
        let back: ExplainSummary =
            serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
        assert_eq!(back.interference, s.interference);
    }

    #[test]
    fn each_window_keeps_its_worst_and_windows_merge_when_too_many() {
        let mut b = SpikeBook::new(1_000, 2, 4);
        for (t, lat) in [(100, 5), (200, 50), (300, 7), (1_100, 3), (2_100, 9)] {
            b.add(attr(t, lat, Category::Nmi));
        }
        let s = b.summary(Tier::FlightRecorder, None, 1);
        let lats: Vec<u64> = s.worst.iter().map(Explained::latency_ns).collect();
        assert_eq!(lats, [50, 7, 3, 9]);
        for t in 0..20u64 {
            b.add(attr(10_000 * (t + 1), 1, Category::Nmi));
        }
        assert!(b.window_ns() > 1_000);
        assert!(b.summary(Tier::FlightRecorder, None, 1).worst.len() <= 2 * 4);
        assert_eq!(b.counts.spikes, 25);
        assert_eq!(
            b.summary(Tier::FlightRecorder, None, 1).culprits[0].spikes_as_main,
            25
        );
    }

    #[test]
    fn the_summary_round_trips_through_json() {
        let mut b = SpikeBook::new(60_000_000_000, 5, 10);
        let task = Task {
            comm: "culprit".into(),
            pid: 4711,
            prio: 0,
        };
        b.add(attr(5_000_000, 3_000_000, Category::Thread { task }));
        b.add(attr(
            6_000_000,
            40_000,
            Category::TimerIrqLate {
                cause: LateCause::PreviousIrq {
                    name: "eth0 (irq 24)".into(),
                },
            },
        ));
        b.add(attr(
            7_000_000,
            40_000,
            Category::Softirq {
                vec: Softirq::NetRx,
            },
        ));
        b.no_context(1_000_000);
        let s = b.summary(Tier::FlightRecorder, Some("why".into()), 1_000);
        let json = serde_json::to_string(&s).unwrap();
        assert!(
            json.contains(r#""kind":"thread","comm":"culprit","pid":4711,"prio":0,"ns":3000000"#),
            "{json}"
        );
        assert!(
            json.contains(
                r#""kind":"timer_irq_late","cause":"previous_irq","name":"eth0 (irq 24)""#
            ),
            "{json}"
        );
        assert!(json.contains(r#""tier":"flight_recorder""#));
        let back: ExplainSummary = serde_json::from_str(&json).unwrap();
        assert_eq!(back, s);
        assert_eq!(back.counts.no_context, 1);
    }
}
