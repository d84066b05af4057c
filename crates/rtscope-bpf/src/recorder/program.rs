//! The recorder's programs: what each tracepoint's record holds ([`Spec`]: where each value
//! is, from the kernel's BTF through [`Places`]) and the one program shape that writes it.

use super::record::{self, Code, RECORD};
use super::HEADER;
use crate::asm::Asm;
use crate::btf::{Shape, Types};
use crate::insn::{self, Alu, Cond, Insn, Size, R0, R1, R10, R2, R3, R6, R7, R8, R9};
use crate::BpfError;
use std::ops::RangeInclusive;

const MAP_LOOKUP_ELEM: i32 = 1;
const KTIME_GET_NS: i32 = 5;
const GET_SMP_PROCESSOR_ID: i32 = 8;
const PROBE_READ_KERNEL: i32 = 113;

/// The raw tracepoints behind the 23 trace events `--explain` enables, each with the class
/// whose functions carry its arguments' names (a `DEFINE_EVENT`'s are its class's).
pub const TRACEPOINTS: [(&str, &str); 23] = [
    ("sched_switch", "sched_switch"),
    ("sched_waking", "sched_wakeup_template"),
    ("irq_handler_entry", "irq_handler_entry"),
    ("irq_handler_exit", "irq_handler_exit"),
    ("softirq_entry", "softirq"),
    ("softirq_exit", "softirq"),
    ("tasklet_entry", "tasklet"),
    ("tasklet_exit", "tasklet"),
    ("local_timer_entry", "x86_irq_vector"),
    ("local_timer_exit", "x86_irq_vector"),
    ("reschedule_entry", "x86_irq_vector"),
    ("reschedule_exit", "x86_irq_vector"),
    ("call_function_entry", "x86_irq_vector"),
    ("call_function_exit", "x86_irq_vector"),
    ("call_function_single_entry", "x86_irq_vector"),
    ("call_function_single_exit", "x86_irq_vector"),
    ("irq_work_entry", "x86_irq_vector"),
    ("irq_work_exit", "x86_irq_vector"),
    ("nmi_handler", "nmi_handler"),
    ("csd_function_entry", "csd_function"),
    ("csd_function_exit", "csd_function"),
    ("timer_expire_entry", "timer_expire_entry"),
    ("timer_expire_exit", "timer_class"),
];

/// What an argument is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Want {
    /// A `struct task_struct *`.
    Task,
    /// A `struct timer_list *`.
    TimerList,
    /// A pointer (a function's address).
    Ptr,
    /// An integer of this size.
    Int(usize),
}

/// Where the programs find what they record: the tracepoints' arguments (offsets in the
/// context, 8 bytes each) and the fields of the objects they point to.
pub trait Places {
    /// The context offset of `tracepoint`'s argument `param` (`class`: its class's name).
    fn arg(&self, tracepoint: &str, class: &str, param: &str, want: Want) -> Result<i16, BpfError>;
    /// The offset of `path` in the struct `name`, its size checked within `size`.
    fn field(&self, name: &str, path: &str, size: RangeInclusive<usize>) -> Result<i16, BpfError>;
}

/// The kernel's BTF as [`Places`].
pub(crate) struct Btf<'a, 'b>(pub(crate) &'a Types<'b>);

impl Places for Btf<'_, '_> {
    fn arg(&self, tp: &str, class: &str, param: &str, want: Want) -> Result<i16, BpfError> {
        let shape = match want {
            Want::Task => Shape::PtrTo(self.0.struct_id("task_struct")?),
            Want::TimerList => Shape::PtrTo(self.0.struct_id("timer_list")?),
            Want::Ptr => Shape::Ptr,
            Want::Int(n) => Shape::Int(n),
        };
        self.0.param(tp, &[tp, class], param, shape, false)
    }

    fn field(&self, name: &str, path: &str, size: RangeInclusive<usize>) -> Result<i16, BpfError> {
        let id = self.0.struct_id(name)?;
        self.0.field(id, name, path, size)
    }
}

/// One step of a record's writing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    /// The argument at `arg` (`size` bytes of it) to the record at `at`.
    Ctx { arg: i16, size: Size, at: i16 },
    /// `len` bytes at `field` in the object the argument at `arg` points to, to the record at
    /// `at` (`bpf_probe_read_kernel`: zeros if it faults).
    Behind {
        arg: i16,
        field: i16,
        len: i32,
        at: i16,
    },
    /// The argument's first byte at `arg` to the flag byte (the switch's `preempt`).
    CtxFlag { arg: i16 },
}

/// What a tracepoint's program records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Spec {
    /// The raw tracepoint.
    pub tracepoint: &'static str,
    /// The record's kind byte.
    pub code: Code,
    /// The record's flag byte, as built (a vector's index).
    pub flag: u8,
    /// The values written.
    pub ops: Vec<Op>,
}

/// The record of the switch: PIDs, priorities (their low byte), the state and `preempt`.
fn switch(p: &dyn Places) -> Result<Vec<Op>, BpfError> {
    let (tp, class) = ("sched_switch", "sched_switch");
    let prev = p.arg(tp, class, "prev", Want::Task)?;
    let next = p.arg(tp, class, "next", Want::Task)?;
    let pid = p.field("task_struct", "pid", 4..=4)?;
    let prio = p.field("task_struct", "prio", 4..=4)?;
    // Linux 5.18 passes the state the switch saw; before, it is the task's own.
    let state = match p.arg(tp, class, "prev_state", Want::Int(4)) {
        Ok(arg) => Op::Ctx {
            arg,
            size: Size::W,
            at: record::B,
        },
        Err(_) => {
            let field = p
                .field("task_struct", "__state", 4..=4)
                .or_else(|_| p.field("task_struct", "state", 4..=8))?;
            Op::Behind {
                arg: prev,
                field,
                len: 4,
                at: record::B,
            }
        }
    };
    let behind = |arg, field, len, at| Op::Behind {
        arg,
        field,
        len,
        at,
    };
    Ok(vec![
        Op::CtxFlag {
            arg: p.arg(tp, class, "preempt", Want::Int(1))?,
        },
        behind(prev, pid, 4, record::A),
        behind(next, pid, 4, record::A2),
        state,
        behind(prev, prio, 1, record::PRIO_PREV),
        behind(next, prio, 1, record::PRIO_NEXT),
    ])
}

/// What `tracepoint` records, its places from `p`.
pub(crate) fn spec(p: &dyn Places, tracepoint: &'static str) -> Result<Spec, BpfError> {
    let class = TRACEPOINTS
        .iter()
        .find(|t| t.0 == tracepoint)
        .map(|t| t.1)
        .ok_or_else(|| BpfError::Event(format!("{tracepoint}: not a recorded tracepoint")))?;
    let arg = |param, want| p.arg(tracepoint, class, param, want);
    let ctx = |arg, size, at| Op::Ctx { arg, size, at };
    let (code, mut flag) = (code_of(tracepoint), 0);
    let ops = match code {
        Code::Switch => switch(p)?,
        Code::Waking => {
            let task = arg("p", Want::Task)?;
            let behind = |field, len, at| Op::Behind {
                arg: task,
                field,
                len,
                at,
            };
            vec![
                behind(p.field("task_struct", "pid", 4..=4)?, 4, record::A),
                behind(p.field("task_struct", "prio", 4..=4)?, 1, record::B),
            ]
        }
        Code::IrqEntry | Code::IrqExit => vec![ctx(arg("irq", Want::Int(4))?, Size::W, record::A)],
        Code::SoftirqEntry | Code::SoftirqExit => {
            vec![ctx(arg("vec_nr", Want::Int(4))?, Size::W, record::A)]
        }
        Code::TaskletEntry | Code::TaskletExit | Code::CsdEntry | Code::CsdExit => {
            vec![ctx(arg("func", Want::Ptr)?, Size::Dw, record::A)]
        }
        Code::VectorEntry | Code::VectorExit => {
            flag = super::Vector::ALL
                .iter()
                .position(|v| {
                    tracepoint
                        .strip_prefix(v.1)
                        .is_some_and(|r| r == "_entry" || r == "_exit")
                })
                .unwrap_or(0) as u8;
            vec![ctx(arg("vector", Want::Int(4))?, Size::W, record::A)]
        }
        Code::Nmi => vec![
            ctx(arg("handler", Want::Ptr)?, Size::Dw, record::A),
            ctx(arg("delta_ns", Want::Int(8))?, Size::Dw, record::B),
        ],
        Code::TimerEntry => {
            let timer = arg("timer", Want::TimerList)?;
            vec![
                Op::Behind {
                    arg: timer,
                    field: p.field("timer_list", "function", 8..=8)?,
                    len: 8,
                    at: record::A,
                },
                ctx(timer, Size::Dw, record::B),
            ]
        }
        Code::TimerExit => vec![ctx(arg("timer", Want::TimerList)?, Size::Dw, record::B)],
    };
    Ok(Spec {
        tracepoint,
        code,
        flag,
        ops,
    })
}

/// The kind of a recorded tracepoint's records.
fn code_of(tp: &str) -> Code {
    match tp {
        "sched_switch" => Code::Switch,
        "sched_waking" => Code::Waking,
        "irq_handler_entry" => Code::IrqEntry,
        "irq_handler_exit" => Code::IrqExit,
        "softirq_entry" => Code::SoftirqEntry,
        "softirq_exit" => Code::SoftirqExit,
        "tasklet_entry" => Code::TaskletEntry,
        "tasklet_exit" => Code::TaskletExit,
        "nmi_handler" => Code::Nmi,
        "csd_function_entry" => Code::CsdEntry,
        "csd_function_exit" => Code::CsdExit,
        "timer_expire_entry" => Code::TimerEntry,
        "timer_expire_exit" => Code::TimerExit,
        t if t.ends_with("_entry") => Code::VectorEntry,
        _ => Code::VectorExit,
    }
}

/// How the program publishes a record's sequence number, its last store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Publish {
    /// A plain store: on x86-64 (TSO) other CPUs see the record's stores in program order.
    Store,
    /// An atomic exchange, a full barrier: on arm64 the record's stores are visible before
    /// its sequence number.
    Xchg,
}

impl Publish {
    /// What this build's target needs.
    pub const NATIVE: Publish = if cfg!(target_arch = "x86_64") {
        Publish::Store
    } else {
        Publish::Xchg
    };
}

/// How a program reads a field behind a pointer argument ([`Op::Behind`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reads {
    /// `bpf_probe_read_kernel` into the record (a raw tracepoint's program: the verifier
    /// knows its arguments only as numbers).
    Probe,
    /// A plain load through the argument (a `tp_btf` program: the verifier knows the
    /// argument's type from the kernel's BTF and checks the field against it; the JIT guards
    /// the load, a fault reads zero as the helper's does).
    Typed,
}

/// The program of `s`: the time, this CPU's ring, a slot reserved by an atomic fetch-add of
/// the head (a program that interrupts another on the same CPU takes the next slot), the
/// record's fields, its sequence number last. `map` is the rings' map's file descriptor,
/// `records` the ring's length (a power of two).
pub(crate) fn program(
    s: &Spec,
    map: i32,
    records: u32,
    publish: Publish,
    reads: Reads,
) -> Result<Vec<Insn>, BpfError> {
    if !records.is_power_of_two() || records < 2 {
        return Err(BpfError::Setting(format!(
            "{records} records per CPU: not a power of two"
        )));
    }
    let slot = |off: i16| HEADER as i16 + off;
    let mut a = Asm::default();
    a.op([
        insn::alu_reg(Alu::Mov, R6, R1),
        insn::call(KTIME_GET_NS),
        insn::alu_reg(Alu::Mov, R7, R0),
        insn::call(GET_SMP_PROCESSOR_ID),
        insn::store(Size::W, R10, -4, R0),
    ]);
    a.op(insn::map_fd(R1, map));
    a.op([
        insn::alu_reg(Alu::Mov, R2, R10),
        insn::alu_imm(Alu::Add, R2, -4),
        insn::call(MAP_LOOKUP_ELEM),
    ]);
    a.jump(insn::jump_imm(Cond::Eq, R0, 0, 0), "out");
    a.op([
        insn::alu_reg(Alu::Mov, R8, R0),
        insn::alu_imm(Alu::Mov, R9, 1),
        insn::atomic_fetch_add(Size::Dw, R8, 0, R9),
        insn::alu_reg(Alu::Mov, R1, R9),
        insn::alu_imm(Alu::And, R1, (records - 1) as i32),
        insn::alu_imm(Alu::Lsh, R1, RECORD.trailing_zeros() as i32),
        insn::alu_reg(Alu::Add, R8, R1),
        insn::store(Size::Dw, R8, slot(record::TS), R7),
        insn::store_imm(
            Size::W,
            R8,
            slot(record::KIND),
            s.code as i32 | i32::from(s.flag) << 8,
        ),
        insn::store_imm(Size::Dw, R8, slot(record::A), 0),
        insn::store_imm(Size::Dw, R8, slot(record::B), 0),
    ]);
    for op in &s.ops {
        match *op {
            Op::Ctx { arg, size, at } => a.op([
                insn::load(size, R1, R6, arg),
                insn::store(size, R8, slot(at), R1),
            ]),
            Op::CtxFlag { arg } => a.op([
                insn::load(Size::B, R1, R6, arg),
                insn::store(Size::B, R8, slot(record::FLAG), R1),
            ]),
            Op::Behind {
                arg,
                field,
                len,
                at,
            } if reads == Reads::Typed => {
                let size = Size::fitting(len);
                a.op([
                    insn::load(Size::Dw, R3, R6, arg),
                    insn::load(size, R1, R3, field),
                    insn::store(size, R8, slot(at), R1),
                ]);
            }
            Op::Behind {
                arg,
                field,
                len,
                at,
            } => a.op([
                insn::alu_reg(Alu::Mov, R1, R8),
                insn::alu_imm(Alu::Add, R1, slot(at).into()),
                insn::alu_imm(Alu::Mov, R2, len),
                insn::load(Size::Dw, R3, R6, arg),
                insn::alu_imm(Alu::Add, R3, field.into()),
                insn::call(PROBE_READ_KERNEL),
            ]),
        }
    }
    a.op([insn::alu_imm(Alu::Add, R9, 1)]);
    match publish {
        Publish::Store => a.op([insn::store(Size::W, R8, slot(record::SEQ), R9)]),
        Publish::Xchg => a.op([insn::atomic_xchg(Size::W, R8, slot(record::SEQ), R9)]),
    }
    a.label("out");
    a.op([insn::alu_imm(Alu::Mov, R0, 0), insn::exit()]);
    a.finish()
        .ok_or_else(|| BpfError::Event(format!("{}: a jump without its label", s.tracepoint)))
}
