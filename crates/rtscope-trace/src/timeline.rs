//! The one charging step both trace tiers share. Each tier turns its events into pieces of
//! time with the context that ran in them ([`Ctx`]); this module cuts the spike at every
//! boundary of every piece (each context switch, each interrupt entry and exit, the phases
//! around the interrupt that woke the measuring thread) and charges each cut to its context.
//!
//! Three layers, the first that covers a cut wins: `overlays` (interrupts, softirqs, NMIs and
//! the waking interrupt, known by their span; among overlapping ones the latest-starting, the
//! innermost, wins), `base` (the task the context switches say ran), `fallback` (the task a
//! less direct event names, used only where no switch says). Time no layer covers is
//! [`Category::Unexplained`], never the context at the start of the gap.

use crate::decode::{Event, Kind, TaskState, Tasks};
use crate::machine::Machine;
use crate::model::{Attribution, Category, Charge, LateCause, Softirq, Spike};
use std::collections::HashSet;

/// What the CPU ran over a piece of time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Ctx {
    /// A task (0: idle).
    Task(i32),
    /// A hard interrupt, by name.
    Irq(String),
    /// A softirq, by vector.
    Softirq(u32),
    /// An NMI.
    Nmi,
    /// The interrupt that woke the measuring thread.
    WakeIrq,
}

/// A span of time and what ran in it.
#[derive(Debug, Clone)]
pub(crate) struct Piece {
    pub from: u64,
    pub to: u64,
    pub ctx: Ctx,
}

/// What the measuring thread's own context switches say about it before the waking interrupt.
///
/// The timer can only be late once the thread sleeps on it. A thread that left the CPU
/// blocked (`D`: a page fault, a lock) or preempted, or had not yet gone to sleep at the
/// deadline, was late for its own reasons first: its blocked time is
/// [`Category::MeasuringThreadBlocked`], and what ran while it was runnable is charged as
/// after the timer (threads, interrupts by name), never as a late timer interrupt.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Own {
    /// From when the thread slept on its timer (its last switch-out while asleep); before
    /// it the timer was not armed for this wake-up. `None`: no switch-out seen, asleep since
    /// before the deadline.
    pub asleep_from: Option<u64>,
    /// Spans in which it was blocked in the kernel (out with `D` until switched in again).
    pub blocked: Vec<(u64, u64)>,
    /// Spans in which it was runnable but off the CPU (out with `R`, preempted, until switched
    /// in again): what ran then ran instead of it.
    pub preempted: Vec<(u64, u64)>,
}

impl Own {
    /// From the events of the spike's CPU (time order) up to `until`, the waking interrupt's
    /// entry (else the wake-up).
    pub fn from_events(events: &[Event], tid: i32, until: u64) -> Own {
        let mut own = Own::default();
        let mut out: Option<(u64, TaskState)> = None;
        for e in events.iter().take_while(|e| e.ts < until) {
            let Kind::Switch {
                prev_pid,
                prev_state,
                next_pid,
                ..
            } = e.kind
            else {
                continue;
            };
            if prev_pid == tid && next_pid != tid {
                out = Some((e.ts, prev_state));
            } else if next_pid == tid {
                match out {
                    Some((from, TaskState::Blocked)) => own.blocked.push((from, e.ts)),
                    Some((from, TaskState::Preempted)) => own.preempted.push((from, e.ts)),
                    _ => {}
                }
                out = None;
            }
        }
        match out {
            Some((from, TaskState::Blocked)) => {
                own.blocked.push((from, until));
                own.asleep_from = Some(until);
            }
            Some((from, TaskState::Preempted)) => {
                own.preempted.push((from, until));
                own.asleep_from = Some(until);
            }
            Some((from, TaskState::Asleep | TaskState::Unknown)) => own.asleep_from = Some(from),
            // Preempted or stopped: never asleep on the timer before the waking.
            Some((_, _)) => own.asleep_from = Some(until),
            // Switched in and not out again: running up to the waking, not asleep.
            None if !own.blocked.is_empty() => own.asleep_from = Some(until),
            None => {}
        }
        own
    }

    fn blocked_at(&self, at: u64) -> bool {
        self.blocked.iter().any(|&(a, b)| a <= at && at < b)
    }

    fn preempted_at(&self, at: u64) -> bool {
        self.preempted.iter().any(|&(a, b)| a <= at && at < b)
    }
}

/// Everything one spike's charging needs.
pub(crate) struct Timeline<'a> {
    pub spike: &'a Spike,
    pub overlays: Vec<Piece>,
    /// Pieces that do not overlap each other.
    pub base: Vec<Piece>,
    pub fallback: Vec<Piece>,
    /// Entry and exit of the waking interrupt, when found.
    pub wake: Option<(u64, u64)>,
    pub tasks: &'a Tasks,
    pub machine: Machine,
    /// The measuring thread's own state before the waking.
    pub own: Own,
}

fn covering(layer: &[Piece], from: u64, to: u64) -> Option<&Piece> {
    layer
        .iter()
        .enumerate()
        .filter(|(_, p)| p.from <= from && to <= p.to && p.from < p.to)
        .max_by_key(|(i, p)| (p.from, *i))
        .map(|(_, p)| p)
}

impl Timeline<'_> {
    /// The spike's attribution: its charges ([`Timeline::charge`]), complete when the waking
    /// was found or the CPU ran a busy loop (rtscope noise's gaps: it never sleeps, so it has
    /// no waking to find); `lost`: the tracer lost events in the window.
    pub fn attribute(&self, lost: bool) -> Attribution {
        Attribution {
            spike: *self.spike,
            charges: self.charge(),
            complete: self.wake.is_some() || self.machine.busy_loop,
            lost_events: lost,
            siblings: Vec::new(),
            stack: None,
            handler: None,
        }
    }

    /// Every nanosecond from the deadline to the wake-up, by category, largest first; the
    /// charges sum to the spike's latency exactly.
    pub fn charge(&self) -> Vec<Charge> {
        let (d, w) = (self.spike.deadline_ns, self.spike.wakeup_ns);
        let inside = |p: &&Piece| p.to > d && p.from < w;
        let layers: [Vec<&Piece>; 3] = [&self.overlays, &self.base, &self.fallback]
            .map(|l| l.iter().filter(inside).collect::<Vec<_>>());
        let mut cuts = vec![d, w];
        if let Some((a, b)) = self.wake {
            cuts.extend([a, b]);
        }
        cuts.extend(self.own.asleep_from);
        for &(a, b) in self.own.blocked.iter().chain(&self.own.preempted) {
            cuts.extend([a, b]);
        }
        for p in layers.iter().flatten() {
            cuts.extend([p.from, p.to]);
        }
        cuts.retain(|&t| t >= d && t <= w);
        cuts.sort();
        cuts.dedup();
        let [overlays, mut base, fallback]: [Vec<Piece>; 3] =
            layers.map(|l| l.into_iter().cloned().collect());
        // The base layer does not overlap itself: one binary search per cut.
        base.retain(|p| p.from < p.to);
        base.sort_by_key(|p| p.from);
        let in_base = |from: u64, to: u64| {
            let i = base.partition_point(|p| p.from <= from);
            i.checked_sub(1).map(|i| &base[i]).filter(|p| to <= p.to)
        };
        // Each piece is one occurrence (an interrupt's entry, a thread's run): counted once,
        // with the first category its time goes to, however often nested noise cuts it.
        let mut seen: HashSet<*const Piece> = HashSet::new();
        let mut charges: Vec<Charge> = Vec::new();
        let mut left = Budgets {
            idle_exit: self.machine.idle_exit_max_ns,
            return_to_user: RETURN_TO_USER_MAX_NS,
        };
        for pair in cuts.windows(2) {
            let (from, to) = (pair[0], pair[1]);
            let piece = covering(&overlays, from, to)
                .or_else(|| in_base(from, to))
                .or_else(|| covering(&fallback, from, to));
            let mut new = piece.is_some_and(|p| seen.insert(std::ptr::from_ref(p)));
            for (cat, ns) in self.classify(piece.map(|p| &p.ctx), from, to - from, &mut left) {
                add(&mut charges, cat, ns, std::mem::take(&mut new));
            }
        }
        self.below_the_kernel(&mut charges);
        charges.sort_by(|a, b| b.ns.cmp(&a.ns).then_with(|| a.category.cmp(&b.category)));
        charges
    }

    /// A busy loop's gap that the trace fills with the loop itself alone — no interrupt, no
    /// softirq, no other thread, no NMI — was taken below the kernel: the hypervisor on a
    /// guest, else firmware or hardware (unexplained, never "return to user"). The osnoise
    /// tracer's "HW" rule, in time. A gap with any kernel context keeps the loop's own time as
    /// the switch back (the kernel's entry and exit around that context).
    fn below_the_kernel(&self, charges: &mut Vec<Charge>) {
        let below = self.below();
        if !self.machine.busy_loop
            || !charges
                .iter()
                .all(|c| c.category == Category::ReturnToUser || c.category == below)
        {
            return;
        }
        let ns = charges.iter().map(|c| c.ns).sum();
        *charges = vec![Charge::new(below, ns)];
    }

    /// The categories of `ns` from `at` in `ctx`: one, or two when an idle exit or the return
    /// to user space runs past what it can take (`left`, spent as it is charged).
    fn classify(
        &self,
        ctx: Option<&Ctx>,
        at: u64,
        ns: u64,
        left: &mut Budgets,
    ) -> Vec<(Category, u64)> {
        if self.own.blocked_at(at) {
            return vec![(Category::MeasuringThreadBlocked, ns)];
        }
        if let Some(Ctx::Task(p)) = ctx {
            if self.throttled(*p, at) {
                return vec![(Category::RtThrottling, ns)];
            }
        }
        let asleep = self.own.asleep_from.is_none_or(|from| at >= from);
        let before = asleep && self.wake.is_some_and(|(entry, _)| at < entry);
        let late = |cause| Category::TimerIrqLate { cause };
        let cat = match ctx {
            None => Category::Unexplained,
            Some(Ctx::Nmi) => Category::Nmi,
            Some(Ctx::WakeIrq) => Category::TimerIrqHandler,
            Some(Ctx::Irq(name)) if before => late(LateCause::PreviousIrq { name: name.clone() }),
            Some(Ctx::Irq(name)) => Category::Irq { name: name.clone() },
            Some(Ctx::Softirq(v)) if before => late(LateCause::IrqsOffOrHypervisor {
                task: None,
                softirq: Some(Softirq::from_vec(*v)),
            }),
            Some(Ctx::Softirq(v)) => Category::Softirq {
                vec: Softirq::from_vec(*v),
            },
            Some(Ctx::Task(0)) if before || asleep && self.wake.is_none() => {
                return self.idle_exit(ns, &mut left.idle_exit)
            }
            Some(Ctx::Task(0)) => return self.return_to_user(ns, &mut left.return_to_user),
            // A task the measuring thread could not preempt held the CPU whether or not the
            // timer fired: it, not the late timer, is what the wake-up waited for.
            Some(Ctx::Task(p)) if before && !self.outranks(*p) => {
                late(LateCause::IrqsOffOrHypervisor {
                    task: Some(self.tasks.task(*p)),
                    softirq: None,
                })
            }
            Some(Ctx::Task(p)) if *p == self.spike.tid => {
                return self.return_to_user(ns, &mut left.return_to_user)
            }
            Some(Ctx::Task(p)) => {
                let task = self.tasks.task(*p);
                if self.outranks(*p) {
                    Category::Thread { task }
                } else {
                    Category::Blocking { task }
                }
            }
        };
        vec![(cat, ns)]
    }

    /// True when task `pid` ran at `at` because the scheduler took the CPU from the measuring
    /// thread for a lower class: the thread runs at a real-time priority, was switched out
    /// still runnable (`R`), and what runs instead is a normal task or the idle task. No
    /// real-time task is ever preempted for those but by RT throttling (or the fair server
    /// since Linux 6.12); a higher-priority thread or a task already holding the CPU looks
    /// different in the trace (the former outranks it, the latter never switched it out).
    fn throttled(&self, pid: i32, at: u64) -> bool {
        pid != self.spike.tid
            && self.own.preempted_at(at)
            && self.tasks.prio(self.spike.tid).is_some_and(|p| p < 100)
            && (pid == 0 || self.tasks.task(pid).prio >= 100)
    }

    /// True when task `pid` has the measuring thread's priority or a higher one (a lower
    /// kernel `prio`), so the measuring thread, woken, would not have preempted it.
    fn outranks(&self, pid: i32) -> bool {
        pid != self.spike.tid
            && self.tasks.task(pid).prio <= self.tasks.prio(self.spike.tid).unwrap_or(0)
    }

    /// Idle until the timer interrupt: an idle exit as long as the deepest idle state allows,
    /// the rest the hypervisor's (a guest) or unexplained.
    fn idle_exit(&self, ns: u64, idle_left: &mut Option<u64>) -> Vec<(Category, u64)> {
        let exit = Category::TimerIrqLate {
            cause: LateCause::ExitFromIdle,
        };
        let Some(left) = idle_left else {
            return vec![(exit, ns)];
        };
        let as_idle = ns.min(*left);
        *left -= as_idle;
        vec![(exit, as_idle), (self.below(), ns - as_idle)]
    }

    /// The switch to the measuring thread and its way back to user space, as long as that can
    /// take ([`RETURN_TO_USER_MAX_NS`] per spike); beyond it, the CPU ran neither the kernel
    /// nor the thread, or the trace would show it: the hypervisor on a guest (a vCPU not run),
    /// else unexplained (firmware, hardware).
    fn return_to_user(&self, ns: u64, left: &mut u64) -> Vec<(Category, u64)> {
        let as_return = ns.min(*left);
        *left -= as_return;
        vec![
            (Category::ReturnToUser, as_return),
            (self.below(), ns - as_return),
        ]
    }

    /// What time the trace cannot place in the kernel is: firmware's when the CPU's SMI
    /// counter advanced across the spike, else the hypervisor's on a guest, else unexplained.
    fn below(&self) -> Category {
        if self.spike.smis.is_some_and(|n| n > 0) {
            Category::Firmware
        } else if self.machine.guest {
            Category::Hypervisor
        } else {
            Category::Unexplained
        }
    }
}

/// The longest the idle task's switch to the woken measuring thread and the thread's way back
/// to user space take with no event in the trace, per spike (ns). They are microseconds on any
/// CPU (0.05–0.2 ms even on the emulated CPUs of the QEMU TCG guests); an event-less stretch of
/// milliseconds there was the vCPU not running: in the guests, 2.5–46 ms stretches the
/// reference instance saw as the idle task were all charged "return to user" before
/// (tests/guest/README.md).
pub const RETURN_TO_USER_MAX_NS: u64 = 1_000_000;

/// What is left of the time an idle exit and a return to user space can take in one spike.
struct Budgets {
    idle_exit: Option<u64>,
    return_to_user: u64,
}

/// Adds `ns` to `cat`'s charge; `new`: they begin another occurrence of it (counted where the
/// category has occurrences: [`Category::counts_occurrences`]).
fn add(charges: &mut Vec<Charge>, cat: Category, ns: u64, new: bool) {
    if ns == 0 {
        return;
    }
    let new = new && cat.counts_occurrences();
    let i = match charges.iter().position(|c| c.category == cat) {
        Some(i) => i,
        None => {
            charges.push(Charge::new(cat, 0));
            charges.len() - 1
        }
    };
    charges[i].ns += ns;
    charges[i].times += u32::from(new);
}

#[cfg(test)]
mod tests {
    use super::{Ctx, Own, Piece, Timeline};
    use crate::decode::{Comm, Event, Kind, NoiseSource, TaskState, Tasks, Vector};
    use crate::machine::Machine;
    use crate::model::Spike;
    use crate::model::{Category, Charge};
    use rtscope_core::rng::XorShift64;

    /// A random stream of every kind of event both tiers read, around one spike.
    fn stream(rng: &mut XorShift64, tid: i32, from: u64, to: u64) -> Vec<Event> {
        let mut out = Vec::new();
        for _ in 0..rng.below(200) {
            let ts = from + rng.next_u64() % (to - from);
            let pid = [0, tid, 77, 88][rng.below(4)];
            let comm = Comm::new(b"t");
            let ns = rng.next_u64() % 50_000;
            let kind = match rng.below(9) {
                0 => Kind::Switch {
                    prev_pid: pid,
                    prev_prio: 120,
                    prev_comm: comm,
                    prev_state: [
                        TaskState::Asleep,
                        TaskState::Blocked,
                        TaskState::Preempted,
                        TaskState::Unknown,
                    ][rng.below(4)],
                    next_pid: [0, tid, 77, 88][rng.below(4)],
                    next_prio: rng.below(140) as i32,
                    next_comm: comm,
                },
                1 => Kind::Waking {
                    pid: tid,
                    prio: 10,
                    comm,
                    target_cpu: 1,
                },
                2 => Kind::IrqEntry {
                    irq: 24,
                    name: "eth0".into(),
                },
                3 => Kind::IrqExit { irq: 24 },
                4 => Kind::VectorEntry(Vector::LocalTimer),
                5 => Kind::VectorExit(Vector::LocalTimer),
                6 => Kind::Nmi { delta_ns: ns },
                7 => Kind::Noise {
                    source: NoiseSource::Irq {
                        desc: "local_timer:236".into(),
                        vector: 236,
                    },
                    duration_ns: ns,
                },
                _ => Kind::Noise {
                    source: NoiseSource::Thread { pid, comm },
                    duration_ns: ns,
                },
            };
            out.push(Event { ts, pid, kind });
        }
        out.sort_by_key(|e| e.ts);
        out
    }

    #[test]
    fn a_busy_loops_gap_with_only_the_loop_in_the_trace_was_taken_below_the_kernel() {
        below_the_kernel(None);
    }

    /// The same gap across which the CPU's SMI counter advanced is firmware's, on a guest and
    /// on bare metal alike; a counter read that saw no SMI changes nothing.
    #[test]
    fn a_gap_below_the_kernel_with_an_smi_counted_across_it_is_firmwares() {
        below_the_kernel(Some(0));
        for guest in [true, false] {
            let c = loop_alone(Some(2), guest, true, vec![]);
            assert_eq!(c.len(), 1, "{c:?}");
            assert_eq!((&c[0].category, c[0].ns), (&Category::Firmware, 400_000));
        }
    }

    /// The charges of a 400 us gap of a loop (tid 500) that the trace shows running
    /// throughout, with `overlays` over it.
    fn loop_alone(
        smis: Option<u32>,
        guest: bool,
        busy_loop: bool,
        overlays: Vec<Piece>,
    ) -> Vec<Charge> {
        let spike = Spike {
            cpu: 1,
            tid: 500,
            deadline_ns: 1_000_000,
            wakeup_ns: 1_400_000,
            smis,
        };
        let tasks = Tasks::default();
        let t = Timeline {
            spike: &spike,
            overlays,
            base: vec![Piece {
                from: 0,
                to: 2_000_000,
                ctx: Ctx::Task(500),
            }],
            fallback: vec![],
            wake: None,
            tasks: &tasks,
            machine: Machine {
                idle_exit_max_ns: Some(0),
                guest,
                busy_loop,
            },
            own: Own::default(),
        };
        t.charge()
    }

    fn below_the_kernel(smis: Option<u32>) {
        let at =
            |guest, busy_loop, overlays: Vec<Piece>| loop_alone(smis, guest, busy_loop, overlays);
        let only = |c: Vec<Charge>| (c.len(), c[0].category.clone(), c[0].ns);
        assert_eq!(
            only(at(true, true, vec![])),
            (1, Category::Hypervisor, 400_000)
        );
        assert_eq!(
            only(at(false, true, vec![])),
            (1, Category::Unexplained, 400_000)
        );
        // A timer wake-up's own task after the interrupt stays the return to user.
        assert_eq!(
            only(at(true, false, vec![])),
            (1, Category::ReturnToUser, 400_000)
        );
        // With an interrupt in the gap the loop's own time is the kernel's entry and exit.
        let irq = Piece {
            from: 1_100_000,
            to: 1_350_000,
            ctx: Ctx::Irq("eth0".into()),
        };
        let c = at(true, true, vec![irq]);
        assert_eq!(
            c[0].category,
            Category::Irq {
                name: "eth0".into()
            }
        );
        assert_eq!(c[0].ns, 250_000);
        assert_eq!(c[1], Charge::new(Category::ReturnToUser, 150_000));
    }

    /// A busy loop at kernel priority `loop_prio` switched out still runnable at 1.1 ms for
    /// `next` (pid, kernel priority), back at 1.35 ms; the gap from 1.0 to 1.4 ms, charged by
    /// the flight recorder's tier.
    fn preempted_gap(loop_prio: i32, next: (i32, i32)) -> Vec<Charge> {
        let switch = |ts, prev: (i32, i32), state, next: (i32, i32)| Event {
            ts,
            pid: prev.0,
            kind: Kind::Switch {
                prev_pid: prev.0,
                prev_prio: prev.1,
                prev_comm: Comm::new(b"a"),
                prev_state: state,
                next_pid: next.0,
                next_prio: next.1,
                next_comm: Comm::new(b"b"),
            },
        };
        let me = (500, loop_prio);
        let events = [
            switch(900_000, (0, 120), TaskState::Other, me),
            switch(1_100_000, me, TaskState::Preempted, next),
            switch(1_350_000, next, TaskState::Preempted, me),
        ];
        let spike = Spike {
            cpu: 1,
            tid: 500,
            deadline_ns: 1_000_000,
            wakeup_ns: 1_400_000,
            smis: None,
        };
        let busy = Machine {
            idle_exit_max_ns: Some(0),
            guest: false,
            busy_loop: true,
        };
        crate::analyze::attribute_on(&events, &spike, false, busy).charges
    }

    #[test]
    fn a_real_time_loop_switched_out_runnable_for_a_normal_task_or_idle_is_rt_throttling() {
        let charged = |c: &[Charge], cat: Category| {
            c.iter()
                .filter(|c| c.category == cat)
                .map(|c| c.ns)
                .sum::<u64>()
        };
        // SCHED_FIFO 10 (kernel prio 89) taken off for a nice-0 task, or for nothing (idle):
        // only RT throttling (or the fair server) does that.
        for next in [(77, 120), (0, 120)] {
            let c = preempted_gap(89, next);
            assert_eq!(
                charged(&c, Category::RtThrottling),
                250_000,
                "{next:?}: {c:?}"
            );
            assert_eq!(charged(&c, Category::ReturnToUser), 150_000, "{c:?}");
        }
        // A higher real-time thread preempting it is that thread, not the throttle.
        let c = preempted_gap(89, (77, 50));
        assert_eq!(charged(&c, Category::RtThrottling), 0, "{c:?}");
        assert!(matches!(c[0].category, Category::Thread { ref task } if task.pid == 77));
        // A normal-priority loop sharing its CPU with another normal task is not throttled.
        let c = preempted_gap(120, (77, 120));
        assert_eq!(charged(&c, Category::RtThrottling), 0, "{c:?}");
    }

    #[test]
    fn the_charges_of_both_tiers_sum_to_the_latency_exactly_on_random_streams() {
        let mut rng = XorShift64::new(25);
        let machines = [
            Machine::default(),
            Machine {
                idle_exit_max_ns: Some(0),
                guest: true,
                busy_loop: false,
            },
            Machine {
                idle_exit_max_ns: Some(2_000),
                guest: false,
                busy_loop: false,
            },
        ];
        for round in 0..500 {
            let spike = Spike {
                cpu: 1,
                tid: 500,
                deadline_ns: 1_000_000,
                wakeup_ns: 1_000_000 + rng.next_u64() % 400_000,
                smis: None,
            };
            let events = stream(&mut rng, spike.tid, 900_000, 1_500_000);
            let m = machines[round % 3];
            for a in [
                crate::analyze::attribute_on(&events, &spike, false, m),
                crate::timerlat::attribute_on(&events, &spike, false, m),
            ] {
                let sum: u64 = a.charges.iter().map(|c| c.ns).sum();
                assert_eq!(sum, spike.latency_ns(), "round {round}: {a:?}");
                assert!(a.charges.iter().all(|c| c.ns > 0));
            }
        }
    }
}
