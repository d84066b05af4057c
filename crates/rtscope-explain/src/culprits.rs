//! The culprit table of a run: time charged per culprit over all traced spikes, in bounded
//! memory, without folding a known cause into "unexplained".
//!
//! - The time per class ([`ClassTotals`]) is summed from every charge as it comes, never from
//!   the table's rows, so no bound of the table changes it.
//! - Each culprit (a [`Category`]: an interrupt by name, a thread by name and PID …) has its own
//!   row while the table has room for it ([`MAX_ROWS`]). When it is full, the threads charged
//!   least recently leave it for their command's row (one row per class of charge and command
//!   name, listing its PIDs); the [`KEEP_BIG`] largest never leave, so a thread that lives the
//!   whole run keeps its row and its exact time.
//! - At the end, a thread of a command with more than one PID keeps its own row only if it had
//!   at least 1 % of all charged time ([`OWN_ROW_PERMILLE`]); the rest of its command merge
//!   into one row listing their PIDs (the first [`MAX_PIDS`], then "+N more").
//! - Beyond [`MAX_COMMANDS`] command rows (or when the table is full of culprits that are not
//!   threads), the rest goes to an explicit "other" row of its own class, which counts the
//!   culprits it holds. "unexplained" holds only time no event covers.

use crate::classes::{Class, ClassTotals};
use crate::model::{Attribution, Category, LateCause, Task};
use serde::{Deserialize, Serialize};
use std::collections::hash_map::DefaultHasher;
use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};

/// Culprits with a row of their own while the run lasts; when full, the least recently charged
/// threads merge into their command's row.
pub const MAX_ROWS: usize = 4096;
/// The largest rows (by time) that never leave the table for their command's row.
pub const KEEP_BIG: usize = 64;
/// Command rows (threads merged by command name) kept; beyond them the "other" row of the class.
pub const MAX_COMMANDS: usize = 1024;
/// PIDs listed in a merged row; the others are counted.
pub const MAX_PIDS: usize = 4;
/// A thread of a command with several PIDs keeps its own row with at least this share of all
/// charged time (per mille).
pub const OWN_ROW_PERMILLE: u64 = 10;
/// Distinct culprits an "other" row counts exactly; beyond, its count is a lower bound.
pub const MAX_OTHER_COUNTED: usize = 65_536;

/// What a culprit row stands for.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "by", rename_all = "snake_case")]
pub enum Merge {
    /// One culprit: the row's category.
    #[default]
    Single,
    /// The threads of one command name (the row's category is the first one's; its PID and
    /// priority stand for the first only).
    Command {
        /// The first PIDs merged (at most [`MAX_PIDS`]).
        pids: Vec<i32>,
        /// PIDs merged beyond the list (a thread merged twice, after leaving the table and
        /// being charged again, counts twice).
        more_pids: u64,
    },
    /// Culprits of one class beyond the table's bounds (the row's category is the first one's;
    /// only its class is meant).
    Other {
        /// Distinct culprits in the row.
        culprits: u64,
        /// `culprits` is a lower bound (more than [`MAX_OTHER_COUNTED`] were folded).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        at_least: bool,
    },
}

impl Merge {
    /// True for a row of one culprit.
    pub fn is_single(&self) -> bool {
        matches!(self, Merge::Single)
    }
}

/// Totals for one culprit (or a merged row of culprits) over the run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CulpritRow {
    /// The category (of the first culprit of a merged row).
    pub category: Category,
    /// Spikes where it had the largest share.
    pub spikes_as_main: u64,
    /// Spikes where it had any share (a merged row sums its culprits' counts).
    pub spikes: u64,
    /// Time charged to it over all attributed spikes (ns).
    pub total_ns: u64,
    /// A row of one culprit, or of several merged; absent in JSON for one.
    #[serde(default, skip_serializing_if = "Merge::is_single")]
    pub merged: Merge,
}

impl CulpritRow {
    fn new(category: Category, merged: Merge) -> CulpritRow {
        CulpritRow {
            category,
            spikes_as_main: 0,
            spikes: 0,
            total_ns: 0,
            merged,
        }
    }

    /// Adds `other`'s counts and time (and PIDs, for command rows).
    fn absorb(&mut self, other: &CulpritRow) {
        self.spikes_as_main += other.spikes_as_main;
        self.spikes += other.spikes;
        self.total_ns += other.total_ns;
        if let Merge::Command { pids, more_pids } = &mut self.merged {
            match &other.merged {
                Merge::Command {
                    pids: p,
                    more_pids: m,
                } => {
                    for &pid in p {
                        add_pid(pids, more_pids, pid);
                    }
                    *more_pids += m;
                }
                _ => {
                    if let Some(t) = other.category.named_task() {
                        add_pid(pids, more_pids, t.pid);
                    }
                }
            }
        }
    }
}

fn add_pid(pids: &mut Vec<i32>, more: &mut u64, pid: i32) {
    if pids.contains(&pid) {
        return;
    }
    if pids.len() < MAX_PIDS {
        pids.push(pid);
    } else {
        *more += 1;
    }
}

/// The command a thread culprit belongs to: its category with PID and priority cleared; `None`
/// for culprits that are not threads.
pub fn command_key(c: &Category) -> Option<Category> {
    let clear = |t: &Task| Task {
        comm: t.comm.clone(),
        pid: 0,
        prio: 0,
    };
    match c {
        Category::Thread { task } => Some(Category::Thread { task: clear(task) }),
        Category::Blocking { task } => Some(Category::Blocking { task: clear(task) }),
        Category::TimerIrqLate {
            cause:
                LateCause::IrqsOffOrHypervisor {
                    task: Some(task),
                    softirq,
                },
        } => Some(Category::TimerIrqLate {
            cause: LateCause::IrqsOffOrHypervisor {
                task: Some(clear(task)),
                softirq: *softirq,
            },
        }),
        _ => None,
    }
}

/// Where one charge went.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Slot {
    Own(Category),
    Other(Class),
}

/// A row of its own with the last time it was charged.
#[derive(Debug, Clone)]
struct Own {
    row: CulpritRow,
    last: u64,
}

/// The "other" row of a class with the culprits it counted.
#[derive(Debug, Clone)]
struct OtherRow {
    row: CulpritRow,
    seen: HashSet<u64>,
    at_least: bool,
}

/// The culprit totals of a run (see the module's documentation).
#[derive(Debug, Clone, Default)]
pub struct CulpritTable {
    own: HashMap<Category, Own>,
    commands: HashMap<Category, CulpritRow>,
    other: HashMap<usize, OtherRow>,
    classes: ClassTotals,
    seq: u64,
}

impl CulpritTable {
    /// Charges one traced spike's time (its first charge is its main culprit).
    pub fn add(&mut self, a: &Attribution) {
        self.seq += 1;
        let mut touched: Vec<Slot> = Vec::with_capacity(a.charges.len());
        for (i, c) in a.charges.iter().enumerate() {
            self.classes.add(Class::of(&c.category), c.ns);
            let slot = self.slot(&c.category);
            let first = !touched.contains(&slot);
            let row = self.row(&slot);
            row.total_ns += c.ns;
            row.spikes += u64::from(first);
            row.spikes_as_main += u64::from(i == 0);
            if first {
                touched.push(slot);
            }
        }
    }

    /// Time per class over every charge (independent of the rows).
    pub fn classes(&self) -> ClassTotals {
        self.classes
    }

    /// The row of `slot` ([`CulpritTable::slot`] made it; made here too, so that it cannot be
    /// missing).
    fn row(&mut self, slot: &Slot) -> &mut CulpritRow {
        let seq = self.seq;
        match slot {
            Slot::Own(c) => {
                let o = self.own.entry(c.clone()).or_insert_with(|| Own {
                    row: CulpritRow::new(c.clone(), Merge::Single),
                    last: seq,
                });
                o.last = seq;
                &mut o.row
            }
            Slot::Other(class) => {
                let class = *class;
                &mut self
                    .other
                    .entry(class.index())
                    .or_insert_with(|| OtherRow {
                        row: CulpritRow::new(Category::Unexplained, other(0, false)),
                        seen: HashSet::new(),
                        at_least: false,
                    })
                    .row
            }
        }
    }

    /// The row a charge of `c` goes to, made if new.
    fn slot(&mut self, c: &Category) -> Slot {
        if self.own.contains_key(c) {
            return Slot::Own(c.clone());
        }
        if self.own.len() >= MAX_ROWS {
            self.make_room();
        }
        if self.own.len() < MAX_ROWS {
            let row = CulpritRow::new(c.clone(), Merge::Single);
            self.own.insert(
                c.clone(),
                Own {
                    row,
                    last: self.seq,
                },
            );
            return Slot::Own(c.clone());
        }
        // Full of culprits that are not threads (or of the largest): its class's "other" row.
        self.other_slot(c)
    }

    /// Moves the least recently charged half of the threads that are not among the
    /// [`KEEP_BIG`] largest rows to their command's row.
    fn make_room(&mut self) {
        let mut threads: Vec<(u64, u64, Category)> = self
            .own
            .iter()
            .filter(|(c, _)| command_key(c).is_some())
            .map(|(c, o)| (o.row.total_ns, o.last, c.clone()))
            .collect();
        threads.sort_by(|a, b| b.0.cmp(&a.0).then(a.2.cmp(&b.2)));
        let mut movable: Vec<(u64, Category)> = threads
            .into_iter()
            .skip(KEEP_BIG)
            .map(|(_, last, c)| (last, c))
            .collect();
        movable.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(&b.1)));
        for (_, c) in movable.into_iter().take(MAX_ROWS / 2) {
            if let Some(o) = self.own.remove(&c) {
                self.fold(o.row);
            }
        }
    }

    /// Adds a thread's row to its command's row, or to its class's "other" row when there are
    /// [`MAX_COMMANDS`] command rows already.
    fn fold(&mut self, row: CulpritRow) {
        let Some(key) = command_key(&row.category) else {
            let slot = self.other_slot(&row.category);
            self.row(&slot).absorb(&row);
            return;
        };
        if !self.commands.contains_key(&key) && self.commands.len() >= MAX_COMMANDS {
            let slot = self.other_slot(&row.category);
            self.row(&slot).absorb(&row);
            return;
        }
        let merged = self.commands.entry(key).or_insert_with(|| {
            let pids = Vec::new();
            CulpritRow::new(row.category.clone(), Merge::Command { pids, more_pids: 0 })
        });
        merged.absorb(&row);
    }

    /// Counts `c` in its class's "other" row, made if new.
    fn other_slot(&mut self, c: &Category) -> Slot {
        let class = Class::of(c);
        let o = self.other.entry(class.index()).or_insert_with(|| OtherRow {
            row: CulpritRow::new(c.clone(), other(0, false)),
            seen: HashSet::new(),
            at_least: false,
        });
        let mut h = DefaultHasher::new();
        c.hash(&mut h);
        let h = h.finish();
        if o.seen.len() < MAX_OTHER_COUNTED {
            o.seen.insert(h);
        } else if !o.seen.contains(&h) {
            o.at_least = true;
        }
        o.row.merged = other(o.seen.len() as u64, o.at_least);
        Slot::Other(class)
    }

    /// The rows, largest first: threads of a command with several PIDs merged into one row but
    /// for those with at least [`OWN_ROW_PERMILLE`] of all charged time.
    pub fn rows(&self) -> Vec<CulpritRow> {
        let all = self.classes.total_ns();
        let big = |r: &CulpritRow| r.total_ns.saturating_mul(1000) >= all * OWN_ROW_PERMILLE;
        let mut groups: HashMap<Category, Vec<&CulpritRow>> = HashMap::new();
        let mut out: Vec<CulpritRow> = Vec::new();
        for o in self.own.values() {
            match command_key(&o.row.category) {
                Some(k) => groups.entry(k).or_default().push(&o.row),
                None => out.push(o.row.clone()),
            }
        }
        for k in self.commands.keys() {
            groups.entry(k.clone()).or_default();
        }
        for (k, mut rows) in groups {
            let merged = self.commands.get(&k);
            if merged.is_none() && rows.len() == 1 {
                out.push(rows[0].clone());
                continue;
            }
            rows.sort_by(|a, b| a.category.cmp(&b.category));
            let mut m = merged.cloned();
            for r in rows {
                if big(r) {
                    out.push(r.clone());
                    continue;
                }
                let m = m.get_or_insert_with(|| {
                    let merged = Merge::Command {
                        pids: Vec::new(),
                        more_pids: 0,
                    };
                    CulpritRow::new(r.category.clone(), merged)
                });
                m.absorb(r);
            }
            out.extend(m.map(single_if_one));
        }
        out.extend(self.other.values().map(|o| o.row.clone()));
        out.sort_by(|a, b| {
            b.total_ns
                .cmp(&a.total_ns)
                .then_with(|| a.category.cmp(&b.category))
        });
        out
    }
}

fn other(culprits: u64, at_least: bool) -> Merge {
    Merge::Other { culprits, at_least }
}

/// A command row of one PID is that thread's own row.
fn single_if_one(mut r: CulpritRow) -> CulpritRow {
    if let Merge::Command { pids, more_pids: 0 } = &r.merged {
        if pids.len() == 1 && r.category.named_task().map(|t| t.pid) == Some(pids[0]) {
            r.merged = Merge::Single;
        }
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::book::{ExplainSummary, Explained, SpikeBook};
    use crate::model::{Charge, Spike, Tier};

    fn thread(comm: &str, pid: i32, prio: i32) -> Category {
        Category::Thread {
            task: Task {
                comm: comm.into(),
                pid,
                prio,
            },
        }
    }

    fn gap(at: u64, charges: Vec<Charge>) -> Explained {
        let ns: u64 = charges.iter().map(|c| c.ns).sum();
        Explained::Traced(Attribution {
            spike: Spike {
                cpu: 1,
                tid: 9,
                deadline_ns: at,
                wakeup_ns: at + ns,
                smis: None,
            },
            charges,
            complete: true,
            lost_events: false,
            siblings: Vec::new(),
            stack: None,
            handler: None,
        })
    }

    /// Feeds `gaps` to a book and checks what holds for any input: nothing is unexplained,
    /// the class totals are the charges summed by class, and the rows hold every charge.
    fn book_of(gaps: Vec<Explained>) -> ExplainSummary {
        let mut b = SpikeBook::new(1_000_000_000, 4, 64);
        let mut want = ClassTotals::default();
        for g in gaps {
            if let Explained::Traced(a) = &g {
                for c in &a.charges {
                    want.add(Class::of(&c.category), c.ns);
                }
            }
            b.add(g);
        }
        let s = b.summary(Tier::FlightRecorder, None, 1);
        assert_eq!(s.class_totals(), want);
        assert_eq!(s.class_totals().unexplained_ns, 0);
        let rows: u64 = s.culprits.iter().map(|r| r.total_ns).sum();
        assert_eq!(rows, want.total_ns());
        assert!(s
            .culprits
            .iter()
            .all(|r| r.category != Category::Unexplained));
        s
    }

    /// The quick preset's messaging load: many `load-msg-recv` PIDs ran while the timer
    /// interrupt was late with interrupts off; their merged row listed "(0 PIDs: )".
    #[test]
    fn a_late_timer_irqs_merged_tasks_are_listed_with_their_pids() {
        let late = |pid: i32| Category::TimerIrqLate {
            cause: crate::model::LateCause::IrqsOffOrHypervisor {
                task: Some(Task {
                    comm: "load-msg-recv".into(),
                    pid,
                    prio: 120,
                }),
                softirq: None,
            },
        };
        let gaps = (0..50)
            .map(|i| {
                gap(
                    i * 1_000_000,
                    vec![Charge::new(late(100 + i as i32), 1_000)],
                )
            })
            .chain(std::iter::once(gap(
                99_000_000,
                vec![Charge::new(thread("big", 7, 49), 1_000_000)],
            )))
            .collect();
        let s = book_of(gaps);
        let row = s
            .culprits
            .iter()
            .find(|r| matches!(r.merged, Merge::Command { .. }))
            .expect("a merged row");
        let text = crate::render::culprit_label(row);
        assert!(
            text.starts_with("timer IRQ late: IRQs off or hypervisor, load-msg-recv running (50 PIDs: 100, 101, 102, 103 +46 more)"),
            "{text}"
        );
    }

    #[test]
    fn ten_thousand_short_lived_pids_merge_by_command_and_the_big_culprit_keeps_its_exact_row() {
        let inject = thread("inject", 777, 49);
        let mut gaps = Vec::new();
        let mut inject_ns = 0;
        for pid in 0..10_000 {
            let at = 1_000_000 * pid as u64;
            let mut charges = vec![Charge::new(thread("cc1", 10_000 + pid, 120), 5_000)];
            if pid % 10 == 0 {
                charges.insert(0, Charge::new(inject.clone(), 300_000 + pid as u64));
                inject_ns += 300_000 + pid as u64;
            }
            charges.push(Charge::new(
                Category::Irq {
                    name: "local_timer".into(),
                },
                700,
            ));
            gaps.push(gap(at, charges));
        }
        let s = book_of(gaps);
        let big = &s.culprits[0];
        assert_eq!(big.category, inject);
        assert_eq!(big.merged, Merge::Single);
        assert_eq!(big.total_ns, inject_ns);
        assert_eq!((big.spikes, big.spikes_as_main), (1_000, 1_000));
        let cc1: Vec<&CulpritRow> = s
            .culprits
            .iter()
            .filter(|r| r.category.task().is_some_and(|t| t.comm == "cc1"))
            .collect();
        assert_eq!(cc1.len(), 1, "{cc1:?}");
        let Merge::Command { pids, more_pids } = &cc1[0].merged else {
            panic!("cc1 not merged: {:?}", cc1[0]);
        };
        assert_eq!(pids.len(), MAX_PIDS);
        assert_eq!(pids.len() as u64 + more_pids, 10_000);
        assert_eq!(cc1[0].total_ns, 10_000 * 5_000);
        assert_eq!(cc1[0].spikes, 10_000);
        let text = crate::render::summary(&s, 0, 3);
        assert!(text.contains("thread inject:777:rt50"), "{text}");
        assert!(text.contains("thread cc1 (10000 PIDs: "), "{text}");
        assert!(text.contains(&format!("+{more_pids} more)")), "{text}");
        assert!(text.contains("a row with PIDs merges"), "{text}");
        assert!(!text.contains("unexplained (not covered"), "{text}");
        let back: ExplainSummary =
            serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
        assert_eq!(back, s);
    }

    #[test]
    fn a_big_culprit_charged_only_early_keeps_its_row_while_later_pids_fill_the_table() {
        // The same command as the later PIDs: had it left the table, it would have merged.
        let early = thread("ld", 999, 120);
        let mut gaps: Vec<Explained> = (0..10)
            .map(|i| gap(i, vec![Charge::new(early.clone(), 100_000)]))
            .collect();
        gaps.extend((0..3 * MAX_ROWS as i32).map(|pid| {
            let c = thread("ld", 1_000 + pid, 120);
            gap(1_000_000 + pid as u64, vec![Charge::new(c, 10)])
        }));
        let s = book_of(gaps);
        assert_eq!(s.culprits[0].category, early);
        assert_eq!(s.culprits[0].total_ns, 1_000_000);
        assert_eq!(s.culprits[0].spikes, 10);
        let Merge::Command { pids, more_pids } = &s.culprits[1].merged else {
            panic!("{:?}", s.culprits[1]);
        };
        assert_eq!(pids.len() as u64 + more_pids, 3 * MAX_ROWS as u64);
        assert_eq!(s.culprits.len(), 2);
    }

    #[test]
    fn culprits_beyond_the_command_rows_go_to_an_other_row_of_their_class_that_counts_them() {
        let n = 7_000;
        let gaps = (0..n)
            .map(|i| {
                let c = thread(&format!("job{i}"), 100 + i, 120);
                gap(1_000 * i as u64, vec![Charge::new(c, 1_000)])
            })
            .collect();
        let s = book_of(gaps);
        let other: Vec<&CulpritRow> = s
            .culprits
            .iter()
            .filter(|r| matches!(r.merged, Merge::Other { .. }))
            .collect();
        assert_eq!(other.len(), 1);
        assert_eq!(Class::of(&other[0].category), Class::Thread);
        let Merge::Other { culprits, at_least } = other[0].merged else {
            unreachable!()
        };
        assert!(!at_least);
        // Every culprit is counted once: in its own row or in the "other" row.
        let single = s.culprits.iter().filter(|r| r.merged.is_single()).count() as u64;
        assert_eq!(single + culprits, n as u64);
        assert_eq!(other[0].total_ns, culprits * 1_000);
        let text = crate::render::summary(&s, 0, 0);
        assert!(
            text.contains(&format!("other thread ({culprits} culprits)")),
            "{text}"
        );
        assert!(text.contains("more rows"), "{text}");
    }

    #[test]
    fn a_thread_with_a_large_share_keeps_its_row_beside_its_commands_merged_pids() {
        let mut gaps = vec![gap(
            0,
            vec![Charge::new(thread("make", 10, 120), 1_000_000)],
        )];
        for pid in 0..50 {
            let c = thread("make", 11 + pid, 120);
            gaps.push(gap(10_000 * (pid as u64 + 1), vec![Charge::new(c, 100)]));
        }
        gaps.push(gap(
            1_000_000,
            vec![Charge::new(thread("lone", 3, 120), 10)],
        ));
        let s = book_of(gaps);
        let rows: Vec<String> = s
            .culprits
            .iter()
            .map(crate::render::culprit_label)
            .collect();
        assert_eq!(
            rows,
            [
                "thread make:10:nice0",
                "thread make (50 PIDs: 11, 12, 13, 14 +46 more)",
                "thread lone:3:nice0",
            ]
        );
        assert_eq!(s.culprits[1].total_ns, 5_000);
    }

    #[test]
    fn a_summary_stored_before_class_totals_and_merged_rows_reads_and_sums_its_rows() {
        let json = r#"{"tier":"flight_recorder","tier_reason":null,"threshold_ns":1,
            "counts":{"spikes":1,"traced":1,"partial":0,"coarse":0,"no_context":0},
            "worst":[],"culprits":[{"category":{"kind":"nmi"},"spikes_as_main":1,"spikes":1,
            "total_ns":70}]}"#;
        let s: ExplainSummary = serde_json::from_str(json).unwrap();
        assert_eq!(s.culprits[0].merged, Merge::Single);
        assert_eq!(s.classes, None);
        assert_eq!(s.class_totals().nmi_ns, 70);
    }
}
