//! The eBPF flight recorder's records ([`rtscope_bpf::recorder`]) as the events the tracefs
//! path decodes ([`crate::decode::Event`]), so that `keep` and `analyze` can take either
//! (issue 68; `--explain-recorder ebpf`: the flight recorder's reader converts each traced
//! CPU's new records with one long-lived [`Converter`], in the recorder's `rings` module).
//!
//! # How each field is had
//!
//! | event | from the record | from elsewhere |
//! |---|---|---|
//! | `sched_switch` | PIDs, priorities, `prev_state` (the recorder reports it as the trace event does; decoded here by [`TaskState::from_raw`], as the tracefs path decodes it) | both names, from `/proc/<pid>/comm` ([`Names`]) |
//! | `sched_waking` | PID, priority | the name, from `/proc`; `target_cpu` is not recorded: [`NO_TARGET_CPU`] |
//! | `irq_handler_entry`/`exit` | the IRQ | the entry's handler name, from `/proc/irq/<n>/` |
//! | `softirq_*`, `irq_vectors/*` | the vector | |
//! | `tasklet`, `csd_function`, `timer_expire` | the function's address (entries) | |
//! | `nmi_handler` | the duration | |
//!
//! Handlers stay addresses, as the tracefs path leaves them: [`crate::handlers::Names`] names
//! them from `/proc/kallsyms` when a spike is analysed, whichever path recorded them.
//!
//! # `common_pid`
//!
//! A trace event carries the task current on its CPU when it fired (`common_pid`); a record
//! does not. [`Converter::events`] derives it from the CPU's switches: from a switch on, the
//! current task is its `next_pid`; the switch itself fired in its `prev_pid`. Before the
//! window's first switch the current task is that switch's `prev_pid`; in a window without a
//! switch it is the task the previous window of the same CPU ended in, when that window
//! ended at or before this one begins, else unknown ([`UNKNOWN_PID`]). A lost switch record
//! (torn, or overwritten before the window was read) leaves the previous task current until
//! the next switch, as a lost trace event does on the tracefs path. An NMI between a switch's tracepoint and the context switch
//! itself is given the next task where the trace event names the previous one. And where the
//! kernel's `current` changes with no `sched_switch` at all (the agreement test,
//! `tests/bpf_agreement.rs`, sees it on its VM: neither recorder has the switch out of some
//! tasks), the derived PID stays the last one switched in until the next switch.
//!
//! # What this path does not give that tracefs does
//!
//! - names as they were: a name is read when the record is converted ([`kernel_comm`]), so
//!   a task that exited since has none (an empty [`Comm`], as [`crate::decode::Tasks`] gives a task no event
//!   named) and one that changed its name (`exec`, `PR_SET_NAME`) has its new one; the idle
//!   task is `swapper/<cpu>`, as the kernel names it;
//! - `sched_waking`'s `target_cpu` (the analysis reads it nowhere: only the tracefs late-only
//!   hist triggers key on it, in the kernel);
//! - the handler name of one action of a shared IRQ: `/proc/irq/<n>/` lists every action;
//!   their names are joined with `,`, where `irq_handler_entry` names the one called;
//! - arm64's `ipi/ipi_entry`/`ipi_exit` (the recorder has no program for them), the
//!   `hrtimer_expire_*` events asked for by `hrtimer_events`, and kernel stacks
//!   (`ftrace/kernel_stack`: the late-only stacks are taken by their own programs,
//!   [`crate::bpf_stacks`]);
//! - lost-event marks in the records: a ring overwritten before it was read is seen by the
//!   reader that follows it ([`rtscope_bpf::recorder::Recorder::since`] counts what it
//!   missed; the flight recorder's reader marks the span lost as a page's `missed_events` is),
//!   and by a window only as one that starts late, torn records as a count
//!   ([`rtscope_bpf::recorder::Recorder::torn`]).

use crate::decode::{Comm, Event, Kind, TaskState, Vector};
use crate::model::HandlerKind;
use rtscope_bpf::recorder::{self as bpf, Record, RecordKind};
use std::collections::HashMap;
use std::path::PathBuf;

/// `sched_waking`'s `target_cpu` where it is not known (as [`crate::decode::Schema`] gives an
/// event without the field).
pub const NO_TARGET_CPU: i32 = -1;

/// `common_pid` where no switch tells it ([`Converter::events`]).
pub const UNKNOWN_PID: i32 = -1;

/// The most names [`Names`] keeps; when full it forgets them all.
pub const MAX_NAMES: usize = 4096;

/// Task names from `/proc/<pid>/comm` and IRQ handler names from `/proc/irq/<n>/`, each
/// read once, at most [`MAX_NAMES`] of each kept.
#[derive(Debug, Clone)]
pub struct Names {
    proc: PathBuf,
    tasks: HashMap<i32, Comm>,
    irqs: HashMap<i32, String>,
}

impl Default for Names {
    fn default() -> Names {
        Names::at("/proc")
    }
}

impl Names {
    /// Names read below `proc` (`/proc`; a fixture tree in tests).
    pub fn at(proc: impl Into<PathBuf>) -> Names {
        Names {
            proc: proc.into(),
            tasks: HashMap::new(),
            irqs: HashMap::new(),
        }
    }

    /// The name of `pid` running on `cpu`: `swapper/<cpu>` for the idle task, else its
    /// `comm`, or an empty name when the task is gone.
    pub fn task(&mut self, pid: i32, cpu: u32) -> Comm {
        if pid == 0 {
            return Comm::new(format!("swapper/{cpu}").as_bytes());
        }
        if let Some(c) = self.tasks.get(&pid) {
            return *c;
        }
        let path = self.proc.join(pid.to_string()).join("comm");
        let comm = std::fs::read(&path)
            .map(|b| Comm::new(kernel_comm(&b)))
            .unwrap_or_default();
        if self.tasks.len() >= MAX_NAMES {
            self.tasks.clear();
        }
        self.tasks.insert(pid, comm);
        comm
    }

    /// The handler name of `irq` (its actions' directories in `/proc/irq/<n>/`, joined with
    /// `,` when shared); empty when none.
    pub fn irq(&mut self, irq: i32) -> String {
        if let Some(n) = self.irqs.get(&irq) {
            return n.clone();
        }
        let dir = self.proc.join("irq").join(irq.to_string());
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        let name = names.join(",");
        if self.irqs.len() >= MAX_NAMES {
            self.irqs.clear();
        }
        self.irqs.insert(irq, name.clone());
        name
    }

    /// Forgets every name (a PID may since name another task).
    pub fn forget(&mut self) {
        self.tasks.clear();
        self.irqs.clear();
    }
}

/// The task's `comm` as the kernel keeps it (and a trace event copies it) from what
/// `/proc/<pid>/comm` shows: without the newline, at most 15 bytes, and a workqueue worker's
/// without what its current work added (`kworker/1:2-mm_percpu_wq` is `kworker/1:2`; a
/// rescuer, `kworker/R-<queue>`, keeps its dash).
pub fn kernel_comm(shown: &[u8]) -> &[u8] {
    let s = shown.strip_suffix(b"\n").unwrap_or(shown);
    let s = match s.strip_prefix(b"kworker/") {
        Some(rest) if !rest.starts_with(b"R-") => {
            let end = rest.iter().position(|&c| c == b'-' || c == b'+');
            &s[..end.map_or(s.len(), |e| e + b"kworker/".len())]
        }
        _ => s,
    };
    &s[..s.len().min(15)]
}

/// Turns each CPU's records into events: the names, and the current task of each CPU.
#[derive(Debug, Clone, Default)]
pub struct Converter {
    /// The names read.
    pub names: Names,
    /// Per CPU: the task current at the end of the last window converted, and that end.
    current: HashMap<u32, (i32, u64)>,
}

impl Converter {
    /// A converter naming from `names`.
    pub fn new(names: Names) -> Converter {
        Converter {
            names,
            current: HashMap::new(),
        }
    }

    /// The events of `records`, one CPU's window oldest first (as
    /// [`rtscope_bpf::recorder::Recorder::window`] gives it), each with its `common_pid` (the
    /// module doc). Records of another CPU than the first's are skipped.
    pub fn events(&mut self, records: &[Record]) -> Vec<Event> {
        let Some(first) = records.first() else {
            return Vec::new();
        };
        let cpu = first.cpu;
        let mut current = self.before(cpu, records);
        let mut out = Vec::with_capacity(records.len());
        for r in records.iter().filter(|r| r.cpu == cpu) {
            let pid = current;
            if let RecordKind::Switch { next_pid, .. } = r.kind {
                current = next_pid as i32;
            }
            out.push(Event {
                ts: r.ts,
                pid,
                kind: self.kind(r),
            });
        }
        let end = records.last().map_or(0, |r| r.ts);
        self.current.insert(cpu, (current, end));
        out
    }

    /// The task current on `cpu` before `records`: the first switch's previous task, else the
    /// one the last window ended in if it ended by then.
    fn before(&self, cpu: u32, records: &[Record]) -> i32 {
        let first_switch = records.iter().find_map(|r| match r.kind {
            RecordKind::Switch { prev_pid, .. } if r.cpu == cpu => Some(prev_pid as i32),
            _ => None,
        });
        let start = records.first().map_or(0, |r| r.ts);
        first_switch
            .or_else(|| {
                self.current
                    .get(&cpu)
                    .filter(|(_, end)| *end <= start)
                    .map(|(pid, _)| *pid)
            })
            .unwrap_or(UNKNOWN_PID)
    }

    /// What one record says, as the trace event's decoding says it.
    pub fn kind(&mut self, r: &Record) -> Kind {
        match r.kind {
            RecordKind::Switch {
                prev_pid,
                prev_prio,
                prev_state,
                next_pid,
                next_prio,
            } => Kind::Switch {
                prev_pid: prev_pid as i32,
                prev_prio,
                prev_comm: self.names.task(prev_pid as i32, r.cpu),
                prev_state: TaskState::from_raw(i64::from(prev_state)),
                next_pid: next_pid as i32,
                next_prio,
                next_comm: self.names.task(next_pid as i32, r.cpu),
            },
            RecordKind::Waking { pid, prio } => Kind::Waking {
                pid: pid as i32,
                prio,
                comm: self.names.task(pid as i32, r.cpu),
                target_cpu: NO_TARGET_CPU,
            },
            RecordKind::IrqEntry { irq } => Kind::IrqEntry {
                irq,
                name: self.names.irq(irq),
            },
            RecordKind::IrqExit { irq } => Kind::IrqExit { irq },
            RecordKind::SoftirqEntry { vec } => Kind::SoftirqEntry { vec },
            RecordKind::SoftirqExit { vec } => Kind::SoftirqExit { vec },
            RecordKind::VectorEntry { vector, .. } => Kind::VectorEntry(vector_of(vector)),
            RecordKind::VectorExit { vector, .. } => Kind::VectorExit(vector_of(vector)),
            RecordKind::Nmi { delta_ns, .. } => Kind::Nmi {
                delta_ns: delta_ns.max(0) as u64,
            },
            RecordKind::TaskletEntry { func } => handler(HandlerKind::Tasklet, func),
            RecordKind::CsdEntry { func } => handler(HandlerKind::Csd, func),
            RecordKind::TimerEntry { function, .. } => handler(HandlerKind::Timer, function),
            RecordKind::TaskletExit { .. } => Kind::HandlerExit {
                kind: HandlerKind::Tasklet,
            },
            RecordKind::CsdExit { .. } => Kind::HandlerExit {
                kind: HandlerKind::Csd,
            },
            RecordKind::TimerExit { .. } => Kind::HandlerExit {
                kind: HandlerKind::Timer,
            },
        }
    }
}

fn handler(kind: HandlerKind, func: u64) -> Kind {
    Kind::HandlerEntry { kind, func }
}

/// The recorder's vector as the decoder's.
pub fn vector_of(v: bpf::Vector) -> Vector {
    match v {
        bpf::Vector::LocalTimer => Vector::LocalTimer,
        bpf::Vector::Reschedule => Vector::Reschedule,
        bpf::Vector::CallFunction => Vector::CallFunction,
        bpf::Vector::CallFunctionSingle => Vector::CallFunctionSingle,
        bpf::Vector::IrqWork => Vector::IrqWork,
    }
}

#[cfg(test)]
mod tests;
