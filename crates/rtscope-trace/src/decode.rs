//! Typed trace events: the records of a page decoded with the field offsets of the `format` files.

use crate::format::{EventFormat, Field};
use crate::model::HandlerKind;
use crate::page::Record;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::fmt;

/// A task name as the kernel stores it (at most 16 bytes, NUL-padded).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Comm([u8; 16]);

impl Comm {
    /// From raw bytes (truncated to 16).
    pub fn new(bytes: &[u8]) -> Comm {
        let mut c = [0u8; 16];
        let n = bytes
            .iter()
            .take(16)
            .position(|&b| b == 0)
            .unwrap_or(bytes.len().min(16));
        c[..n].copy_from_slice(&bytes[..n]);
        Comm(c)
    }

    /// Whether the name begins with `prefix`.
    pub fn starts_with(&self, prefix: &[u8]) -> bool {
        self.0.starts_with(prefix)
    }

    /// The name, lossily decoded.
    pub fn as_string(&self) -> String {
        let n = self.0.iter().position(|&b| b == 0).unwrap_or(16);
        String::from_utf8_lossy(&self.0[..n]).into_owned()
    }
}

impl fmt::Display for Comm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.as_string())
    }
}

impl fmt::Debug for Comm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.as_string())
    }
}

/// The x86 `irq_vectors` interrupts the recorder traces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Vector {
    /// The local APIC timer: hrtimers and the tick.
    LocalTimer,
    /// Reschedule IPI.
    Reschedule,
    /// Function-call IPI.
    CallFunction,
    /// Single-function-call IPI.
    CallFunctionSingle,
    /// irq_work self-IPI.
    IrqWork,
}

impl Vector {
    /// All, with their event-name stem.
    pub const ALL: [(Vector, &'static str); 5] = [
        (Vector::LocalTimer, "local_timer"),
        (Vector::Reschedule, "reschedule"),
        (Vector::CallFunction, "call_function"),
        (Vector::CallFunctionSingle, "call_function_single"),
        (Vector::IrqWork, "irq_work"),
    ];

    /// The event-name stem (`local_timer`).
    pub fn name(self) -> &'static str {
        Vector::ALL
            .iter()
            .find(|(v, _)| *v == self)
            .map_or("?", |(_, n)| n)
    }
}

/// Why a task left the CPU: `sched_switch`'s `prev_state` (the letters `sched_switch` prints).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskState {
    /// `S` or `I`: asleep until something wakes it (a timer, an event).
    Asleep,
    /// `D`: blocked in the kernel, uninterruptibly (a page fault, a lock, I/O).
    Blocked,
    /// `R` or `R+`: still runnable, preempted.
    Preempted,
    /// Stopped, traced, dead, or a state this decoder does not know.
    Other,
    /// The event had no `prev_state` field.
    Unknown,
}

impl TaskState {
    /// From the field's value (`include/trace/events/sched.h`: one bit per reported state,
    /// `TASK_REPORT_MAX` (bit 8 since 4.14) for a preemption, 0 for running).
    pub fn from_raw(v: i64) -> TaskState {
        const INTERRUPTIBLE: i64 = 0x1;
        const UNINTERRUPTIBLE: i64 = 0x2;
        const IDLE: i64 = 0x80;
        const PREEMPTED: i64 = 0x100;
        match v {
            0 => TaskState::Preempted,
            v if v & PREEMPTED != 0 => TaskState::Preempted,
            v if v & UNINTERRUPTIBLE != 0 => TaskState::Blocked,
            v if v & (INTERRUPTIBLE | IDLE) != 0 => TaskState::Asleep,
            _ => TaskState::Other,
        }
    }
}

/// What one record says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// `sched/sched_switch` (priorities are the kernel's: 0..=98 real-time, lower is higher).
    Switch {
        /// Task leaving the CPU.
        prev_pid: i32,
        /// Its kernel priority.
        prev_prio: i32,
        /// Its name.
        prev_comm: Comm,
        /// Why it left: asleep, blocked or preempted.
        prev_state: TaskState,
        /// Task entering the CPU.
        next_pid: i32,
        /// Its kernel priority.
        next_prio: i32,
        /// Its name.
        next_comm: Comm,
    },
    /// `sched/sched_waking`.
    Waking {
        /// Woken task.
        pid: i32,
        /// Its kernel priority.
        prio: i32,
        /// Its name.
        comm: Comm,
        /// CPU it will run on.
        target_cpu: i32,
    },
    /// `irq/irq_handler_entry`.
    IrqEntry {
        /// IRQ number.
        irq: i32,
        /// Handler name (`eth0`, `arch_timer`).
        name: String,
    },
    /// `irq/irq_handler_exit`.
    IrqExit {
        /// IRQ number.
        irq: i32,
    },
    /// `irq/softirq_entry`.
    SoftirqEntry {
        /// Vector (0 HI … 9 RCU).
        vec: u32,
    },
    /// `irq/softirq_exit`.
    SoftirqExit {
        /// Vector.
        vec: u32,
    },
    /// An x86 `irq_vectors/*_entry`.
    VectorEntry(Vector),
    /// An x86 `irq_vectors/*_exit`.
    VectorExit(Vector),
    /// arm64 `ipi/ipi_entry`.
    IpiEntry,
    /// arm64 `ipi/ipi_exit`.
    IpiExit,
    /// `nmi/nmi_handler`: written when an NMI handler returns, with its duration.
    Nmi {
        /// Handler duration (ns).
        delta_ns: u64,
    },
    /// A handler the kernel names by its function begins: `csd/csd_function_entry`,
    /// `irq/tasklet_entry`, `timer/timer_expire_entry`.
    HandlerEntry {
        /// Which kind.
        kind: HandlerKind,
        /// The function's address.
        func: u64,
    },
    /// That handler returns (`*_exit`).
    HandlerExit {
        /// Which kind.
        kind: HandlerKind,
    },
    /// `timer/hrtimer_expire_entry` (only when requested).
    HrtimerEntry,
    /// `timer/hrtimer_expire_exit` (only when requested).
    HrtimerExit,
    /// An `osnoise/*_noise` event of the timerlat tier: written when the noise ends, with its
    /// duration net of nested noise (the osnoise tracer's own accounting).
    Noise {
        /// What the noise was.
        source: NoiseSource,
        /// Net duration (ns).
        duration_ns: u64,
    },
    /// A `ftrace/kernel_stack` entry: the kernel stack a `stacktrace` trigger took (on
    /// `sched_switch` into a measured thread: the `stacks` module), innermost return address
    /// first, at most [`MAX_STACK_FRAMES`].
    KernelStack {
        /// The return addresses.
        frames: Vec<u64>,
    },
    /// A `ftrace/timerlat` sample of the timerlat tracer's own thread on this CPU.
    TimerlatSample {
        /// True when taken in the thread (wake-up latency), false in the timer IRQ.
        thread: bool,
        /// Latency from the timer's expiry (ns).
        latency_ns: u64,
    },
}

/// The source of an `osnoise/*_noise` event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoiseSource {
    /// `irq_noise`: a hard interrupt, by its description (`local_timer:236`, `virtio0-requests`).
    Irq {
        /// The description.
        desc: String,
        /// The vector or IRQ number.
        vector: i32,
    },
    /// `softirq_noise`, by vector.
    Softirq {
        /// Vector (0 HI … 9 RCU).
        vec: u32,
    },
    /// `nmi_noise`.
    Nmi,
    /// `thread_noise`: a task that ran on the CPU.
    Thread {
        /// Its PID.
        pid: i32,
        /// Its name.
        comm: Comm,
    },
}

/// Names and kernel priorities of the tasks the scheduler events mentioned.
#[derive(Debug, Clone, Default)]
pub struct Tasks(HashMap<i32, (Comm, i32)>);

impl Tasks {
    /// Learns the tasks of a `sched_switch` or `sched_waking` (other events are ignored).
    pub fn learn(&mut self, e: &Event) {
        match &e.kind {
            Kind::Switch {
                prev_pid,
                prev_prio,
                prev_comm,
                next_pid,
                next_prio,
                next_comm,
                ..
            } => {
                // The task leaving names itself only if nothing did before: its name and
                // priority as it ran are those it had when it was switched in.
                self.0.entry(*prev_pid).or_insert((*prev_comm, *prev_prio));
                self.0.insert(*next_pid, (*next_comm, *next_prio));
            }
            Kind::Waking {
                pid, prio, comm, ..
            } => {
                self.0.insert(*pid, (*comm, *prio));
            }
            _ => {}
        }
    }

    /// Adds a task known only by name (priority: a normal task's), unless already known.
    pub fn name(&mut self, pid: i32, comm: Comm) {
        self.0.entry(pid).or_insert((comm, 120));
    }

    /// The kernel priority of `pid`, when known.
    pub fn prio(&self, pid: i32) -> Option<i32> {
        self.0.get(&pid).map(|t| t.1)
    }

    /// The task `pid` as far as known (the idle task is `swapper`; unknown ones have no name
    /// and a normal priority).
    pub fn task(&self, pid: i32) -> crate::model::Task {
        let (comm, prio) = self.0.get(&pid).copied().unwrap_or((Comm::default(), 120));
        let comm = if pid == 0 {
            "swapper".to_string()
        } else {
            comm.as_string()
        };
        crate::model::Task { comm, pid, prio }
    }
}

/// A decoded record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// Timestamp (ns on the trace clock).
    pub ts: u64,
    /// `common_pid`: the task current when the event fired.
    pub pid: i32,
    /// The event.
    pub kind: Kind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Which {
    Switch,
    Waking,
    IrqEntry,
    IrqExit,
    SoftirqEntry,
    SoftirqExit,
    VectorEntry(Vector),
    VectorExit(Vector),
    IpiEntry,
    IpiExit,
    Nmi,
    HandlerEntry(HandlerKind),
    HandlerExit(HandlerKind),
    HrtimerEntry,
    HrtimerExit,
    IrqNoise,
    SoftirqNoise,
    NmiNoise,
    ThreadNoise,
    TimerlatSample,
    KernelStack,
}

fn which(name: &str) -> Option<Which> {
    let w = match name {
        "sched_switch" => Which::Switch,
        "sched_waking" => Which::Waking,
        "irq_handler_entry" => Which::IrqEntry,
        "irq_handler_exit" => Which::IrqExit,
        "softirq_entry" => Which::SoftirqEntry,
        "softirq_exit" => Which::SoftirqExit,
        "ipi_entry" => Which::IpiEntry,
        "ipi_exit" => Which::IpiExit,
        "nmi_handler" => Which::Nmi,
        "hrtimer_expire_entry" => Which::HrtimerEntry,
        "hrtimer_expire_exit" => Which::HrtimerExit,
        "csd_function_entry" => Which::HandlerEntry(HandlerKind::Csd),
        "csd_function_exit" => Which::HandlerExit(HandlerKind::Csd),
        "tasklet_entry" => Which::HandlerEntry(HandlerKind::Tasklet),
        "tasklet_exit" => Which::HandlerExit(HandlerKind::Tasklet),
        "timer_expire_entry" => Which::HandlerEntry(HandlerKind::Timer),
        "timer_expire_exit" => Which::HandlerExit(HandlerKind::Timer),
        "irq_noise" => Which::IrqNoise,
        "softirq_noise" => Which::SoftirqNoise,
        "nmi_noise" => Which::NmiNoise,
        "thread_noise" => Which::ThreadNoise,
        "timerlat" => Which::TimerlatSample,
        "kernel_stack" => Which::KernelStack,
        _ => {
            let (stem, entry) = match (name.strip_suffix("_entry"), name.strip_suffix("_exit")) {
                (Some(s), _) => (s, true),
                (_, Some(s)) => (s, false),
                _ => return None,
            };
            let v = Vector::ALL.iter().find(|(_, n)| *n == stem)?.0;
            if entry {
                Which::VectorEntry(v)
            } else {
                Which::VectorExit(v)
            }
        }
    };
    Some(w)
}

/// Maps `common_type` IDs to decoders, built from the `format` files of the enabled events.
#[derive(Debug, Clone, Default)]
pub struct Schema {
    events: HashMap<u16, (Which, EventFormat)>,
    type_offset: usize,
    pid_offset: usize,
}

impl Schema {
    /// From the formats of the traced events; unknown event names are ignored.
    pub fn new(formats: impl IntoIterator<Item = EventFormat>) -> Schema {
        let mut s = Schema {
            events: HashMap::new(),
            type_offset: 0,
            pid_offset: 4,
        };
        for f in formats {
            if let Some(o) = f.field("common_type") {
                s.type_offset = o.offset;
            }
            if let Some(o) = f.field("common_pid") {
                s.pid_offset = o.offset;
            }
            if let Some(w) = which(&f.name) {
                s.events.insert(f.id, (w, f));
            }
        }
        s
    }

    /// How many event types it decodes.
    pub fn len(&self) -> usize {
        self.events.len()
    }

    /// Whether it decodes nothing.
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// Decodes one record; `None` for an unknown type or a record too short for its fields.
    pub fn decode(&self, r: &Record<'_>) -> Option<Event> {
        let id = u16::from_le_bytes(
            r.data
                .get(self.type_offset..self.type_offset + 2)?
                .try_into()
                .ok()?,
        );
        let (w, f) = self.events.get(&id)?;
        let pid = int(r.data, f.field("common_pid")?)? as i32;
        let get = |name: &str| f.field(name).and_then(|fl| int(r.data, fl));
        let comm = |name: &str| {
            f.field(name)
                .and_then(|fl| r.data.get(fl.offset..fl.offset + fl.size))
                .map(Comm::new)
        };
        let kind = match *w {
            Which::Switch => Kind::Switch {
                prev_pid: get("prev_pid")? as i32,
                prev_prio: get("prev_prio")? as i32,
                prev_comm: comm("prev_comm")?,
                prev_state: get("prev_state").map_or(TaskState::Unknown, TaskState::from_raw),
                next_pid: get("next_pid")? as i32,
                next_prio: get("next_prio")? as i32,
                next_comm: comm("next_comm")?,
            },
            Which::Waking => Kind::Waking {
                pid: get("pid")? as i32,
                prio: get("prio")? as i32,
                comm: comm("comm")?,
                target_cpu: get("target_cpu").unwrap_or(-1) as i32,
            },
            Which::IrqEntry => Kind::IrqEntry {
                irq: get("irq")? as i32,
                name: f
                    .field("name")
                    .and_then(|fl| string(r.data, fl))
                    .unwrap_or_default(),
            },
            Which::IrqExit => Kind::IrqExit {
                irq: get("irq")? as i32,
            },
            Which::SoftirqEntry => Kind::SoftirqEntry {
                vec: get("vec")? as u32,
            },
            Which::SoftirqExit => Kind::SoftirqExit {
                vec: get("vec")? as u32,
            },
            Which::VectorEntry(v) => Kind::VectorEntry(v),
            Which::VectorExit(v) => Kind::VectorExit(v),
            Which::IpiEntry => Kind::IpiEntry,
            Which::IpiExit => Kind::IpiExit,
            Which::Nmi => Kind::Nmi {
                delta_ns: get("delta_ns")?.max(0) as u64,
            },
            Which::HandlerEntry(kind) => Kind::HandlerEntry {
                kind,
                // `func` (csd, tasklet) or `function` (timer).
                func: get("func").or_else(|| get("function"))? as u64,
            },
            Which::HandlerExit(kind) => Kind::HandlerExit { kind },
            Which::HrtimerEntry => Kind::HrtimerEntry,
            Which::HrtimerExit => Kind::HrtimerExit,
            Which::IrqNoise | Which::SoftirqNoise | Which::NmiNoise | Which::ThreadNoise => {
                let source = match *w {
                    Which::IrqNoise => NoiseSource::Irq {
                        desc: f
                            .field("desc")
                            .and_then(|fl| string(r.data, fl))
                            .unwrap_or_default(),
                        vector: get("vector").unwrap_or(-1) as i32,
                    },
                    Which::SoftirqNoise => NoiseSource::Softirq {
                        vec: get("vector")? as u32,
                    },
                    Which::NmiNoise => NoiseSource::Nmi,
                    _ => NoiseSource::Thread {
                        pid: get("pid")? as i32,
                        comm: comm("comm")?,
                    },
                };
                Kind::Noise {
                    source,
                    duration_ns: get("duration")?.max(0) as u64,
                }
            }
            Which::TimerlatSample => Kind::TimerlatSample {
                thread: get("context")? != 0,
                latency_ns: get("timer_latency")?.max(0) as u64,
            },
            Which::KernelStack => Kind::KernelStack {
                frames: stack_frames(r.data, get("size")?, f.field("caller")?)?,
            },
        };
        Some(Event {
            ts: r.ts,
            pid,
            kind,
        })
    }
}

/// Decodes a concatenation of pages of `page_size` bytes (as read from `trace_pipe_raw`):
/// the events in order and whether any page reported lost events. Malformed pages are skipped
/// and counted (third value).
pub fn decode_pages(
    bytes: &[u8],
    page_size: usize,
    layout: &crate::format::PageLayout,
    schema: &Schema,
) -> (Vec<Event>, bool, usize) {
    let (mut events, mut lost, mut bad) = (Vec::new(), false, 0);
    for chunk in bytes.chunks(page_size.max(1)) {
        match crate::page::parse_page(chunk, layout) {
            Ok(p) => {
                lost |= p.missed_events;
                events.extend(p.records.iter().filter_map(|r| schema.decode(r)));
            }
            Err(_) => bad += 1,
        }
    }
    (events, lost, bad)
}

/// The most return addresses kept of one `kernel_stack` entry (the kernel takes up to 64 on
/// x86 with ORC; the ones past this are the outermost, far from the code that held the CPU).
pub const MAX_STACK_FRAMES: usize = 64;

/// The addresses of a `kernel_stack` entry: `size` of them from the `caller` field's offset,
/// each of the field's element size (its `format` declares `caller[8]`: 8 bytes each on a
/// 64-bit kernel, 4 on a 32-bit one), bounded by the record and by [`MAX_STACK_FRAMES`];
/// the zero or `ULONG_MAX` addresses older kernels end a short stack with are dropped.
fn stack_frames(data: &[u8], size: i64, caller: &Field) -> Option<Vec<u64>> {
    let word = if caller.size == 32 { 4 } else { 8 };
    // Kernels before 5.2 end a short stack with ULONG_MAX.
    let end_marker = if word == 4 {
        u64::from(u32::MAX)
    } else {
        u64::MAX
    };
    let body = data.get(caller.offset..)?;
    let n = usize::try_from(size.max(0))
        .ok()?
        .min(body.len() / word)
        .min(MAX_STACK_FRAMES);
    let frames: Vec<u64> = body
        .chunks_exact(word)
        .take(n)
        .map(|c| {
            let mut a = [0u8; 8];
            a[..word].copy_from_slice(c);
            u64::from_le_bytes(a)
        })
        .take_while(|&a| a != 0 && a != end_marker)
        .collect();
    Some(frames)
}

/// Reads an integer field (1, 2, 4 or 8 bytes, little-endian), sign-extended when signed.
fn int(data: &[u8], f: &Field) -> Option<i64> {
    let b = data.get(f.offset..f.offset.checked_add(f.size)?)?;
    let v = match b.len() {
        1 => {
            if f.signed {
                i64::from(b[0] as i8)
            } else {
                i64::from(b[0])
            }
        }
        2 => {
            let x = u16::from_le_bytes([b[0], b[1]]);
            if f.signed {
                i64::from(x as i16)
            } else {
                i64::from(x)
            }
        }
        4 => {
            let x = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            if f.signed {
                i64::from(x as i32)
            } else {
                i64::from(x)
            }
        }
        8 => i64::from_le_bytes(b.try_into().ok()?),
        _ => return None,
    };
    Some(v)
}

/// Reads a `__data_loc` string (at most 64 bytes kept).
fn string(data: &[u8], f: &Field) -> Option<String> {
    let loc = int(
        data,
        &Field {
            size: 4,
            signed: false,
            ..f.clone()
        },
    )? as u32;
    let (off, len) = ((loc & 0xffff) as usize, (loc >> 16) as usize);
    let s = data.get(off..off.checked_add(len)?)?;
    let s = s.split(|&b| b == 0).next().unwrap_or(s);
    Some(String::from_utf8_lossy(&s[..s.len().min(64)]).into_owned())
}
