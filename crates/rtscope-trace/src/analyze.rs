//! Attribution of one spike: replays the events of the spike's CPU and charges every nanosecond
//! between the deadline and the wake-up to what the CPU was doing.
//!
//! The interval is cut into three phases around the interrupt that woke the measuring thread
//! (the hard-IRQ context enclosing its `sched_waking`):
//!
//! 1. deadline → that interrupt's entry: [`Category::TimerIrqLate`] — idle (exit from idle),
//!    another interrupt running (previous IRQ, by name), or a task or softirq running with no
//!    event at all (interrupts off, or the hypervisor not running the vCPU); an NMI is [`Category::Nmi`];
//! 2. the interrupt itself: [`Category::TimerIrqHandler`] (nested NMIs apart);
//! 3. its exit → the wake-up: other interrupts ([`Category::Irq`]), softirqs, NMIs, other tasks
//!    ([`Category::Thread`] when their priority is higher or equal, [`Category::Blocking`] when
//!    lower), and the measuring thread itself or the idle task switching to it ([`Category::ReturnToUser`]).
//!
//! Pure code on decoded events; the flight recorder feeds it.

use crate::decode::{Comm, Event, Kind, Vector};
use crate::model::{Attribution, Category, Charge, LateCause, Softirq, Spike, Task};
use std::collections::HashMap;

/// What the CPU runs in interrupt context.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Ctx {
    Irq { irq: i32, name: String },
    Vector(Vector),
    Ipi,
    Softirq(u32),
}

/// The replayed state of one CPU.
#[derive(Debug, Default)]
struct Cpu {
    /// The current task (pid), when known.
    task: Option<i32>,
    /// Interrupt contexts, innermost last, with their entry times.
    stack: Vec<(Ctx, u64)>,
    /// Names and priorities learnt from scheduler events.
    tasks: HashMap<i32, (Comm, i32)>,
}

impl Cpu {
    fn apply(&mut self, e: &Event) {
        if self.stack.is_empty() || !matches!(e.kind, Kind::Switch { .. }) {
            self.task = Some(e.pid);
        }
        match &e.kind {
            Kind::Switch {
                prev_pid,
                prev_prio,
                prev_comm,
                next_pid,
                next_prio,
                next_comm,
            } => {
                // A switch happens in task context: whatever interrupt is open lost its exit.
                self.stack.clear();
                self.tasks.insert(*prev_pid, (*prev_comm, *prev_prio));
                self.tasks.insert(*next_pid, (*next_comm, *next_prio));
                self.task = Some(*next_pid);
            }
            Kind::Waking {
                pid, prio, comm, ..
            } => {
                self.tasks.insert(*pid, (*comm, *prio));
            }
            Kind::IrqEntry { irq, name } => self.push(
                Ctx::Irq {
                    irq: *irq,
                    name: name.clone(),
                },
                e.ts,
            ),
            Kind::VectorEntry(v) => self.push(Ctx::Vector(*v), e.ts),
            Kind::IpiEntry => self.push(Ctx::Ipi, e.ts),
            Kind::SoftirqEntry { vec } => self.push(Ctx::Softirq(*vec), e.ts),
            Kind::IrqExit { irq } => self.pop(|c| matches!(c, Ctx::Irq { irq: i, .. } if i == irq)),
            Kind::VectorExit(v) => self.pop(|c| *c == Ctx::Vector(*v)),
            Kind::IpiExit => self.pop(|c| *c == Ctx::Ipi),
            Kind::SoftirqExit { vec } => self.pop(|c| *c == Ctx::Softirq(*vec)),
            Kind::Nmi { .. } | Kind::HrtimerEntry | Kind::HrtimerExit => {}
        }
    }

    fn push(&mut self, c: Ctx, ts: u64) {
        // Contexts do not nest deeper than a few levels; a deeper stack means lost exits.
        if self.stack.len() >= 8 {
            self.stack.remove(0);
        }
        self.stack.push((c, ts));
    }

    /// Closes the innermost matching context and any inner one whose exit was lost.
    fn pop(&mut self, is: impl Fn(&Ctx) -> bool) {
        if let Some(i) = self.stack.iter().rposition(|(c, _)| is(c)) {
            self.stack.truncate(i);
        }
    }

    fn task_of(&self, pid: i32) -> Task {
        let (comm, prio) = self
            .tasks
            .get(&pid)
            .copied()
            .unwrap_or((Comm::default(), 120));
        let comm = if pid == 0 {
            "swapper".to_string()
        } else {
            comm.as_string()
        };
        Task { comm, pid, prio }
    }
}

fn ctx_name(c: &Ctx) -> String {
    match c {
        Ctx::Irq { irq, name } => format!("{name} (irq {irq})"),
        Ctx::Vector(v) => v.name().to_string(),
        Ctx::Ipi => "ipi".to_string(),
        Ctx::Softirq(v) => Softirq::from_vec(*v).to_string(),
    }
}

/// Where the interrupt that woke the measuring thread began and ended.
#[derive(Debug, Clone, Copy)]
struct WakeIrq {
    entry: u64,
    exit: u64,
}

/// Finds the interrupt context enclosing the last `sched_waking` of the measuring thread
/// (at most 1 ms before the deadline) up to the wake-up; a waking in task context gives an
/// empty interrupt at the waking.
fn find_wake_irq(events: &[Event], spike: &Spike) -> Option<WakeIrq> {
    let mut cpu = Cpu::default();
    // (stack depth of the interrupt, its entry, its exit once seen)
    let mut found: Option<(usize, u64, Option<u64>)> = None;
    for e in events.iter().take_while(|e| e.ts <= spike.wakeup_ns) {
        cpu.apply(e);
        if let Some((depth, _, exit @ None)) = &mut found {
            if cpu.stack.len() < *depth {
                *exit = Some(e.ts);
            }
        }
        let Kind::Waking { pid, .. } = e.kind else {
            continue;
        };
        if pid != spike.tid || e.ts.saturating_add(1_000_000) < spike.deadline_ns {
            continue;
        }
        let hard = cpu
            .stack
            .iter()
            .rposition(|(c, _)| !matches!(c, Ctx::Softirq(_)));
        found = Some(match hard {
            Some(i) => (i + 1, cpu.stack[i].1, None),
            None => (0, e.ts, Some(e.ts)),
        });
    }
    let (_, entry, exit) = found?;
    Some(WakeIrq {
        entry,
        exit: exit.unwrap_or(spike.wakeup_ns),
    })
}

/// Charges the time from `deadline_ns` to `wakeup_ns` of `spike`. `events` are the decoded
/// events of the spike's CPU in time order, starting before the deadline.
pub fn attribute(events: &[Event], spike: &Spike, lost_events: bool) -> Attribution {
    let wake = find_wake_irq(events, spike);
    let complete = wake.is_some();
    let mut charges: Vec<Charge> = Vec::new();
    let mut charge = |cat: Category, from: u64, to: u64| {
        let (from, to) = (from.max(spike.deadline_ns), to.min(spike.wakeup_ns));
        if to <= from {
            return;
        }
        match charges.iter_mut().find(|c| c.category == cat) {
            Some(c) => c.ns += to - from,
            None => charges.push(Charge {
                category: cat,
                ns: to - from,
            }),
        }
    };
    let mut cpu = Cpu::default();
    let mut prev = None::<u64>;
    let mut seen_before_deadline = false;
    let mut nmi_ns = 0u64;
    for e in events.iter().take_while(|e| e.ts <= spike.wakeup_ns) {
        if let Some(p) = prev {
            let cat = classify(&cpu, spike, wake, p);
            charge(cat, p, e.ts);
        }
        if e.ts <= spike.deadline_ns {
            seen_before_deadline = true;
        }
        if let Kind::Nmi { delta_ns } = e.kind {
            if e.ts > spike.deadline_ns {
                nmi_ns += delta_ns.min(e.ts - spike.deadline_ns);
            }
        }
        cpu.apply(e);
        prev = Some(e.ts);
    }
    match prev {
        Some(p) => charge(classify(&cpu, spike, wake, p), p, spike.wakeup_ns),
        None => charge(Category::Unexplained, spike.deadline_ns, spike.wakeup_ns),
    }
    if !seen_before_deadline {
        // Without an event before the deadline the state at the deadline is unknown.
        let first = events.first().map_or(spike.wakeup_ns, |e| e.ts);
        move_to_unexplained(&mut charges, first.saturating_sub(spike.deadline_ns));
    }
    take_nmi_time(&mut charges, nmi_ns);
    charges.sort_by(|a, b| b.ns.cmp(&a.ns).then_with(|| a.category.cmp(&b.category)));
    Attribution {
        spike: *spike,
        charges,
        complete,
        lost_events,
    }
}

/// The category of time spent from `at` onwards in the state `cpu`.
fn classify(cpu: &Cpu, spike: &Spike, wake: Option<WakeIrq>, at: u64) -> Category {
    let phase_before = wake.is_some_and(|w| at < w.entry);
    let in_wake_irq = wake.is_some_and(|w| at >= w.entry && at < w.exit);
    if in_wake_irq {
        return match cpu.stack.last() {
            Some((Ctx::Softirq(v), _)) if cpu.stack.len() == 1 => Category::Softirq {
                vec: Softirq::from_vec(*v),
            },
            _ => Category::TimerIrqHandler,
        };
    }
    let late = |cause| Category::TimerIrqLate { cause };
    match cpu.stack.last() {
        Some((Ctx::Softirq(_), _)) if phase_before => late(LateCause::IrqsOffOrHypervisor),
        Some((Ctx::Softirq(v), _)) => Category::Softirq {
            vec: Softirq::from_vec(*v),
        },
        Some((c, _)) if phase_before => late(LateCause::PreviousIrq { name: ctx_name(c) }),
        Some((c, _)) => Category::Irq { name: ctx_name(c) },
        None => match cpu.task {
            Some(0) if phase_before || wake.is_none() => late(LateCause::ExitFromIdle),
            Some(0) => Category::ReturnToUser,
            Some(_) if phase_before => late(LateCause::IrqsOffOrHypervisor),
            Some(pid) if pid == spike.tid => Category::ReturnToUser,
            Some(pid) => {
                let task = cpu.task_of(pid);
                let own = cpu.tasks.get(&spike.tid).map_or(0, |t| t.1);
                if task.prio <= own {
                    Category::Thread { task }
                } else {
                    Category::Blocking { task }
                }
            }
            None => Category::Unexplained,
        },
    }
}

/// Re-charges up to `ns` from the earliest categories to [`Category::Unexplained`].
fn move_to_unexplained(charges: &mut Vec<Charge>, ns: u64) {
    reassign(charges, ns, Category::Unexplained);
}

/// NMIs leave only one event, when they end, with their duration: that time is taken from
/// whatever the replay charged it to.
fn take_nmi_time(charges: &mut Vec<Charge>, ns: u64) {
    reassign(charges, ns, Category::Nmi);
}

fn reassign(charges: &mut Vec<Charge>, ns: u64, to: Category) {
    let mut left = ns;
    for c in charges.iter_mut().filter(|c| c.category != to) {
        let take = c.ns.min(left);
        c.ns -= take;
        left -= take;
    }
    let moved = ns - left;
    charges.retain(|c| c.ns > 0);
    if moved > 0 {
        match charges.iter_mut().find(|c| c.category == to) {
            Some(c) => c.ns += moved,
            None => charges.push(Charge {
                category: to,
                ns: moved,
            }),
        }
    }
}
