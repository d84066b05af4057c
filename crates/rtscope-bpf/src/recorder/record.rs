//! A record's bytes and what they say: the layout the programs write (the module doc of
//! [`crate::recorder`]) decoded into a typed [`Record`].

/// A record's size in the ring (bytes).
pub const RECORD: usize = 32;

/// Offsets in a record.
pub(crate) const TS: i16 = 0;
pub(crate) const SEQ: i16 = 8;
pub(crate) const KIND: i16 = 12;
pub(crate) const FLAG: i16 = 13;
pub(crate) const A: i16 = 16;
pub(crate) const A2: i16 = 20;
pub(crate) const B: i16 = 24;
pub(crate) const PRIO_PREV: i16 = 28;
pub(crate) const PRIO_NEXT: i16 = 29;

/// The kind byte of each tracepoint's record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Code {
    Switch = 1,
    Waking = 2,
    IrqEntry = 3,
    IrqExit = 4,
    SoftirqEntry = 5,
    SoftirqExit = 6,
    TaskletEntry = 7,
    TaskletExit = 8,
    VectorEntry = 9,
    VectorExit = 10,
    Nmi = 11,
    CsdEntry = 12,
    CsdExit = 13,
    TimerEntry = 14,
    TimerExit = 15,
}

/// An x86 interrupt vector with its own trace events (`irq_vectors/*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Vector {
    /// The local APIC timer.
    LocalTimer,
    /// The rescheduling IPI.
    Reschedule,
    /// The function-call IPI.
    CallFunction,
    /// The single-function-call IPI.
    CallFunctionSingle,
    /// The irq_work self-IPI.
    IrqWork,
}

impl Vector {
    /// All, with their tracepoints' stem, in the order of the record's flag byte.
    pub const ALL: [(Vector, &'static str); 5] = [
        (Vector::LocalTimer, "local_timer"),
        (Vector::Reschedule, "reschedule"),
        (Vector::CallFunction, "call_function"),
        (Vector::CallFunctionSingle, "call_function_single"),
        (Vector::IrqWork, "irq_work"),
    ];
}

/// What one record says (the fields the analysis reads of each event).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordKind {
    /// `sched_switch`.
    Switch {
        /// The task leaving the CPU.
        prev_pid: u32,
        /// Its kernel priority (0..=98 real-time, lower is higher; -1 deadline).
        prev_prio: i32,
        /// Why it left, as the trace event's `prev_state` says it (`0x100`: preempted, `0x1`
        /// asleep, `0x2` blocked, `0x80` idle, 0 running).
        prev_state: u32,
        /// The task entering it.
        next_pid: u32,
        /// Its kernel priority.
        next_prio: i32,
    },
    /// `sched_waking`.
    Waking {
        /// The woken task.
        pid: u32,
        /// Its kernel priority.
        prio: i32,
    },
    /// `irq_handler_entry`.
    IrqEntry {
        /// The IRQ number.
        irq: i32,
    },
    /// `irq_handler_exit`.
    IrqExit {
        /// The IRQ number.
        irq: i32,
    },
    /// `softirq_entry`.
    SoftirqEntry {
        /// The vector (0 HI … 9 RCU).
        vec: u32,
    },
    /// `softirq_exit`.
    SoftirqExit {
        /// The vector.
        vec: u32,
    },
    /// `tasklet_entry`.
    TaskletEntry {
        /// The tasklet's function.
        func: u64,
    },
    /// `tasklet_exit`.
    TaskletExit {
        /// The tasklet's function.
        func: u64,
    },
    /// An `irq_vectors/*_entry`.
    VectorEntry {
        /// Which.
        vector: Vector,
        /// The vector's number (`0xec`, the local timer's, on x86-64).
        number: u32,
    },
    /// An `irq_vectors/*_exit`.
    VectorExit {
        /// Which.
        vector: Vector,
        /// The vector's number.
        number: u32,
    },
    /// `nmi_handler`: an NMI handler returned.
    Nmi {
        /// The handler's address.
        handler: u64,
        /// How long it ran (ns).
        delta_ns: i64,
    },
    /// `csd_function_entry`.
    CsdEntry {
        /// The function called.
        func: u64,
    },
    /// `csd_function_exit`.
    CsdExit {
        /// The function called.
        func: u64,
    },
    /// `timer_expire_entry`.
    TimerEntry {
        /// The `timer_list`'s function.
        function: u64,
        /// The `timer_list`'s address.
        timer: u64,
    },
    /// `timer_expire_exit`.
    TimerExit {
        /// The `timer_list`'s address.
        timer: u64,
    },
}

/// One event the programs recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record {
    /// When (`bpf_ktime_get_ns`: `CLOCK_MONOTONIC`, ns).
    pub ts: u64,
    /// The CPU it happened on.
    pub cpu: u32,
    /// Its place in the CPU's sequence of records (0 the first since the start).
    pub index: u64,
    /// What it says.
    pub kind: RecordKind,
}

/// The trace event's `prev_state` from the switch's raw state and its preemption flag
/// (`__trace_sched_switch_state`, include/trace/events/sched.h, with the task's
/// `exit_state`, which the programs do not read, taken from `TASK_DEAD`): preempted
/// `TASK_REPORT_MAX` (0x100); else the highest of the reported bits (`TASK_REPORT`, 0x7f),
/// `TASK_IDLE` as 0x80, an rtlock wait as blocked, a dead task's last switch as a zombie's
/// (`EXIT_ZOMBIE`, 0x20).
pub fn report_state(preempt: bool, raw: u32) -> u32 {
    const REPORT: u32 = 0x7f;
    const IDLE: u32 = 0x402;
    const DEAD: u32 = 0x80;
    const RTLOCK_WAIT: u32 = 0x1000;
    if preempt {
        return 0x100;
    }
    let bits = if raw & DEAD != 0 {
        0x20
    } else if raw & IDLE == IDLE {
        0x80
    } else if raw & RTLOCK_WAIT != 0 {
        0x2
    } else {
        raw & REPORT
    };
    match bits {
        0 => 0,
        b => 1 << (31 - b.leading_zeros()),
    }
}

fn u64_at(b: &[u8], o: i16) -> u64 {
    let o = o as usize;
    u64::from_le_bytes(b[o..o + 8].try_into().expect("8 bytes"))
}

fn u32_at(b: &[u8], o: i16) -> u32 {
    let o = o as usize;
    u32::from_le_bytes(b[o..o + 4].try_into().expect("4 bytes"))
}

/// The record's sequence number (its index plus one, low 32 bits; 0: never written).
pub(crate) fn seq(b: &[u8; RECORD]) -> u32 {
    u32_at(b, SEQ)
}

/// A kernel priority from its low byte (the programs copy one): 0..=139, or 255 for the
/// deadline class's -1.
fn prio(low: u8) -> i32 {
    if low == 0xff {
        -1
    } else {
        i32::from(low)
    }
}

/// Decodes a record's bytes; `None` for an unknown kind byte.
pub fn decode(b: &[u8; RECORD], cpu: u32, index: u64) -> Option<Record> {
    let flag = b[FLAG as usize];
    let vector = || Vector::ALL.get(usize::from(flag)).map(|v| v.0);
    let a = u32_at(b, A);
    let (wa, wb) = (u64_at(b, A), u64_at(b, B));
    let kind = match b[KIND as usize] {
        1 => RecordKind::Switch {
            prev_pid: a,
            prev_prio: prio(b[PRIO_PREV as usize]),
            prev_state: report_state(flag != 0, u32_at(b, B)),
            next_pid: u32_at(b, A2),
            next_prio: prio(b[PRIO_NEXT as usize]),
        },
        2 => RecordKind::Waking {
            pid: a,
            prio: prio(b[B as usize]),
        },
        3 => RecordKind::IrqEntry { irq: a as i32 },
        4 => RecordKind::IrqExit { irq: a as i32 },
        5 => RecordKind::SoftirqEntry { vec: a },
        6 => RecordKind::SoftirqExit { vec: a },
        7 => RecordKind::TaskletEntry { func: wa },
        8 => RecordKind::TaskletExit { func: wa },
        9 => RecordKind::VectorEntry {
            vector: vector()?,
            number: a,
        },
        10 => RecordKind::VectorExit {
            vector: vector()?,
            number: a,
        },
        11 => RecordKind::Nmi {
            handler: wa,
            delta_ns: wb as i64,
        },
        12 => RecordKind::CsdEntry { func: wa },
        13 => RecordKind::CsdExit { func: wa },
        14 => RecordKind::TimerEntry {
            function: wa,
            timer: wb,
        },
        15 => RecordKind::TimerExit { timer: wb },
        _ => return None,
    };
    Some(Record {
        ts: u64_at(b, TS),
        cpu,
        index,
        kind,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_switch_state_reads_as_the_trace_events() {
        assert_eq!(report_state(true, 0x1), 0x100);
        assert_eq!(report_state(false, 0), 0);
        assert_eq!(report_state(false, 0x1), 0x1);
        assert_eq!(report_state(false, 0x2), 0x2);
        assert_eq!(report_state(false, 0x402), 0x80);
        assert_eq!(report_state(false, 0x1000), 0x2);
        // TASK_FREEZABLE (0x2000) is not reported: asleep.
        assert_eq!(report_state(false, 0x2001), 0x1);
        assert_eq!(report_state(false, 0x40), 0x40);
        assert_eq!(report_state(false, 0x80), 0x20);
    }

    #[test]
    fn a_record_decodes_by_its_kind_and_an_unknown_kind_does_not() {
        let mut b = [0u8; RECORD];
        b[0..8].copy_from_slice(&77u64.to_le_bytes());
        b[8..12].copy_from_slice(&3u32.to_le_bytes());
        b[12] = 1;
        b[16..20].copy_from_slice(&10u32.to_le_bytes());
        b[20..24].copy_from_slice(&11u32.to_le_bytes());
        b[24..28].copy_from_slice(&1u32.to_le_bytes());
        b[28] = 120;
        b[29] = 0xff;
        let r = decode(&b, 1, 2).unwrap();
        assert_eq!((r.ts, r.cpu, r.index, seq(&b)), (77, 1, 2, 3));
        let want = RecordKind::Switch {
            prev_pid: 10,
            prev_prio: 120,
            prev_state: 1,
            next_pid: 11,
            next_prio: -1,
        };
        assert_eq!(r.kind, want);
        b[12] = 9;
        b[13] = 4;
        let v = decode(&b, 0, 0).unwrap().kind;
        assert_eq!(
            v,
            RecordKind::VectorEntry {
                vector: Vector::IrqWork,
                number: 10
            }
        );
        b[13] = 5;
        assert_eq!(decode(&b, 0, 0), None);
        b[12] = 0;
        assert_eq!(decode(&b, 0, 0), None);
    }
}
