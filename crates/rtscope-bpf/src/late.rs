//! The late-only stacks as eBPF programs on the scheduler's and the timers' trace events: the
//! same three chains as the hist triggers of `rtscope_trace::tracefs::late` (docs/explain.md,
//! "Kernel stacks"), each a few dozen instructions that compare, look up a map entry and,
//! only when the wake-up is late by the threshold or more, take the kernel stack of what the
//! CPU runs into the ring buffer:
//!
//! - **switch**: on `hrtimer_start` of a measured thread's sleep (`hrtimer_wakeup`, a task
//!   whose name starts `rtscope-m`), its expiry under its PID; on `sched_switch` into it, how
//!   late it runs; the stack is of the task switched out, in its `__schedule`.
//! - **timer**: the same expiry under the timer; on `hrtimer_expire_entry`, how late the
//!   interrupt came; the stack is where the interrupt found the CPU.
//! - **held** (a kernel that does not preempt at a section's end): when a measured thread's
//!   timer expires (its waking: `hrtimer_wakeup` wakes it right after), the time under the
//!   CPU; at each of the CPU's ticks (`tick_sched_timer`), how long it has waited, the first
//!   at the threshold or more taking the stack; the switch into it clears the time. (The hist
//!   triggers' held chain reads the time once, at the first tick.)
//!
//! Where the kernel describes its types (BTF), the programs hang on the raw tracepoints and
//! read the tracepoints' arguments (the task switched in, the timer), and the fields behind
//! them with `bpf_probe_read_kernel` at the offsets BTF gives ([`crate::btf::Layout`]): no
//! trace event's record is built for them, which on a prompt wake-up was most of their cost
//! (BENCHMARKS.md). Without BTF they hang on the trace events and read the events' records at
//! the offsets of their tracefs `format` files. Either way they run on every CPU. On a
//! measured thread's prompt wake-up they cost a hash lookup at the timer interrupt and one at
//! the switch, each entry marked used in place (no delete: a hash delete takes the bucket's
//! lock), and an array store for the held chain; nothing runs at the waking (a `sched_waking`
//! program cost a third tracepoint call on each wake-up's path: BENCHMARKS.md).

use crate::asm::Asm;
use crate::btf::Layout;
use crate::insn::{self, Alu, Cond, Insn, Reg, Size, R0, R1, R10, R2, R3, R4, R6, R7, R8, R9};
use crate::sys::{self, MapType, ProgType};
use crate::{BpfError, Chain, Formats, StackRecord, FRAMES, RECORD};
use std::os::fd::{AsRawFd, OwnedFd};

const MAP_LOOKUP_ELEM: i32 = 1;
const MAP_UPDATE_ELEM: i32 = 2;
const KTIME_GET_NS: i32 = 5;
const GET_SMP_PROCESSOR_ID: i32 = 8;
const GET_CURRENT_PID_TGID: i32 = 14;
const GET_CURRENT_COMM: i32 = 16;
const GET_STACK: i32 = 67;
const PROBE_READ_KERNEL: i32 = 113;
const RINGBUF_RESERVE: i32 = 131;
const RINGBUF_SUBMIT: i32 = 132;

/// The first 8 bytes of a measured thread's name, as a little-endian u64 (`rtscope-`), its
/// ninth (`m`: the measured threads, `rtscope-m0` …; the noise loop, `rtscope-n`, never
/// sleeps) and a digit after it (not the monitors' `rtscope-monitor`).
const PREFIX: u64 = u64::from_le_bytes(*b"rtscope-");
const NINTH: i32 = b'm' as i32;

/// The most a switch is counted late (ns), as the hist triggers' bound.
const MAX_LATE_NS: u64 = 1_000_000_000_000;

/// Stack slots of the raw-tracepoint programs' reads (below every slot the programs use
/// themselves): 8 bytes for a field, 16 for a task's name.
const SCRATCH: i16 = -56;
const COMM: i16 = -72;

/// Entries of the expiry maps: one per measured thread, far more than any run has.
const THREADS: u32 = 4096;
/// The ring buffer's size (bytes): about 470 stacks between two reads.
pub const RING_BYTES: usize = 256 << 10;

/// What the programs are built for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Setting {
    /// A stack is taken at this lateness or more (ns).
    pub threshold_ns: u64,
    /// The address of `hrtimer_wakeup`, the function of a sleeping task's hrtimer.
    pub hrtimer_wakeup: u64,
    /// The address of `tick_sched_timer`, for the held chain (`None`: no held chain).
    pub tick_sched_timer: Option<u64>,
    /// This process: only its measured threads are followed (another rtscope's are not).
    pub tgid: u32,
}

/// The maps the programs share.
pub(crate) struct Maps {
    /// PID → the expiry of its sleep's timer (switch chain; 0 once used).
    by_pid: OwnedFd,
    /// hrtimer → its expiry (0 once used) and the PID (timer and held chains).
    by_timer: OwnedFd,
    /// CPU → when a measured thread was woken for it, and its PID (held chain).
    woke: OwnedFd,
    ring: OwnedFd,
}

/// Where the programs read the tracepoints' values.
#[derive(Clone, Copy)]
pub enum Source<'a> {
    /// The raw tracepoints as `tp_btf` programs (the layout's [`Layout::typed`] IDs): the
    /// arguments, and the fields they point to read by plain loads the verifier checks
    /// against the kernel's BTF (the interrupt's time, behind a pointer to an integer, still
    /// by `bpf_probe_read_kernel`).
    Typed(&'a Layout),
    /// The raw tracepoints' arguments, and the fields they point to at these offsets, read
    /// with `bpf_probe_read_kernel`.
    Raw(&'a Layout),
    /// The trace events' records, at the offsets of their `format` files.
    Events(&'a dyn Formats),
}

impl Source<'_> {
    /// How the tier line says it.
    pub fn describe(&self) -> &'static str {
        match self {
            Source::Typed(_) => "BTF-typed raw tracepoints",
            Source::Raw(_) => "raw tracepoints",
            Source::Events(_) => "trace events",
        }
    }
}

/// A value a program reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    /// The timer (its address: the maps' key).
    Timer,
    /// The timer's function.
    Function,
    /// The timer's expiry.
    Expires,
    /// The interrupt's time (`hrtimer_expire_entry`).
    Now,
    /// The name of the task switched in.
    NextComm,
    /// The PID of the task switched in.
    NextPid,
}

/// Where a field is: in the context at an offset (a record's field, an argument), or in the
/// kernel object an argument points to (read with `bpf_probe_read_kernel`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    Context(i16, Size),
    Behind { arg: i16, off: i16, len: i32 },
}

/// One tracepoint, and where its program reads.
struct Event<'a> {
    name: &'a str,
    source: Source<'a>,
    /// The trace event's ID (`None` on a raw tracepoint: attached by name).
    id: Option<u64>,
}

impl Event<'_> {
    fn new<'a>(source: Source<'a>, name: &'a str) -> Result<Event<'a>, BpfError> {
        let id = match source {
            Source::Events(f) => Some(
                f.id(name)
                    .ok_or_else(|| BpfError::Event(format!("no event {name}")))?,
            ),
            Source::Raw(_) | Source::Typed(_) => None,
        };
        Ok(Event { name, source, id })
    }

    /// Whether `field`, behind an argument, is read by plain loads (`tp_btf`): all but the
    /// interrupt's time, whose pointer is to an integer, which BTF does not let a program
    /// load through.
    fn direct(&self, field: Field) -> bool {
        matches!(self.source, Source::Typed(_)) && field != Field::Now
    }

    /// `R3 =` the argument at `arg` (`tp_btf`: a pointer the verifier knows the type of).
    fn pointer(a: &mut Asm, arg: i16) {
        a.op([insn::load(Size::Dw, R3, R6, arg)]);
    }

    /// Where `field` is.
    fn place(&self, field: Field) -> Result<Place, BpfError> {
        match self.source {
            Source::Events(f) => {
                let (name, size) = match field {
                    Field::Timer => ("hrtimer", Size::Dw),
                    Field::Function => ("function", Size::Dw),
                    Field::Expires => ("expires", Size::Dw),
                    Field::Now => ("now", Size::Dw),
                    Field::NextComm => ("next_comm", Size::Dw),
                    Field::NextPid => ("next_pid", Size::W),
                };
                Ok(Place::Context(
                    record_offset(f, self.name, name, size)?,
                    size,
                ))
            }
            Source::Raw(l) | Source::Typed(l) => {
                let timer = match self.name {
                    "hrtimer_start" => Ok(l.start_timer),
                    "hrtimer_expire_entry" => Ok(l.expire_timer),
                    other => Err(BpfError::Event(format!("{other}: no timer argument"))),
                };
                let behind = |arg, off, len| Place::Behind { arg, off, len };
                Ok(match field {
                    Field::Timer => Place::Context(timer?, Size::Dw),
                    Field::Function => behind(timer?, l.timer_function, 8),
                    Field::Expires => behind(timer?, l.timer_expires, 8),
                    Field::Now => behind(l.expire_now, 0, 8),
                    Field::NextComm => behind(l.switch_next, l.task_comm, 16),
                    Field::NextPid => behind(l.switch_next, l.task_pid, 4),
                })
            }
        }
    }

    /// Copies `field` to the stack at `R10 + slot` (`len` bytes from the object behind an
    /// argument; a context field as it is). May clobber R0–R5.
    fn to_stack(&self, a: &mut Asm, field: Field, slot: i16) -> Result<(), BpfError> {
        match self.place(field)? {
            Place::Context(off, size) => a.op([
                insn::load(size, R1, R6, off),
                insn::store(size, R10, slot, R1),
            ]),
            Place::Behind { arg, off, len } if self.direct(field) => {
                Event::pointer(a, arg);
                let size = Size::fitting(len);
                for at in (0..len as i16).step_by(size.bytes()) {
                    a.op([
                        insn::load(size, R1, R3, off + at),
                        insn::store(size, R10, slot + at, R1),
                    ]);
                }
            }
            Place::Behind { arg, off, len } => a.op([
                insn::load(Size::Dw, R3, R6, arg),
                insn::alu_imm(Alu::Add, R3, off.into()),
                insn::alu_reg(Alu::Mov, R1, R10),
                insn::alu_imm(Alu::Add, R1, slot.into()),
                insn::alu_imm(Alu::Mov, R2, len),
                insn::call(PROBE_READ_KERNEL),
            ]),
        }
        Ok(())
    }

    /// `dst = field` (8 bytes, or 4 for a PID). May clobber R0–R5 (then `dst` is not one of
    /// them but R1).
    fn load(&self, a: &mut Asm, field: Field, dst: Reg) -> Result<(), BpfError> {
        match self.place(field)? {
            Place::Context(off, size) => a.op([insn::load(size, dst, R6, off)]),
            Place::Behind { arg, off, len } if self.direct(field) => {
                Event::pointer(a, arg);
                let size = Size::fitting(len);
                a.op([insn::load(size, dst, R3, off)]);
            }
            Place::Behind { len, .. } => {
                self.to_stack(a, field, SCRATCH)?;
                let size = Size::fitting(len);
                a.op([insn::load(size, dst, R10, SCRATCH)]);
            }
        }
        Ok(())
    }

    /// Where the name of the task switched in can be compared: a record's field, or the
    /// stack it is read to.
    fn next_comm(&self, a: &mut Asm) -> Result<(Reg, i16), BpfError> {
        match self.place(Field::NextComm)? {
            Place::Context(off, _) => Ok((R6, off)),
            Place::Behind { arg, off, .. } if self.direct(Field::NextComm) => {
                Event::pointer(a, arg);
                Ok((R3, off))
            }
            Place::Behind { .. } => {
                self.to_stack(a, Field::NextComm, COMM)?;
                Ok((R10, COMM))
            }
        }
    }
}

/// The offset of `field` in the records of `event`, checked aligned to `size` (the kernel
/// refuses a misaligned read of a trace event's record).
fn record_offset(f: &dyn Formats, event: &str, field: &str, size: Size) -> Result<i16, BpfError> {
    let off = f
        .offset(event, field)
        .ok_or_else(|| BpfError::Event(format!("{event}: no field {field}")))?;
    let align = size.bytes();
    if off % align != 0 || off > 4096 {
        return Err(BpfError::Event(format!(
            "{event}: field {field} at {off}, not {align}-aligned"
        )));
    }
    Ok(off as i16)
}

/// Jumps to `out` unless the name at `R?+off` is a measured thread's (`rtscope-m` and a
/// digit): `base` is R6 (a name in the record), R10 (one on the stack) or R3 (the task, in a
/// `tp_btf` program).
fn measured_name(a: &mut Asm, base: Reg, off: i16, out: &'static str) {
    a.op([insn::load(Size::Dw, R1, base, off)]);
    a.op(insn::mov64(R2, PREFIX));
    a.jump(insn::jump_reg(Cond::Ne, R1, R2, 0), out);
    a.op([insn::load(Size::B, R1, base, off + 8)]);
    a.jump(insn::jump_imm(Cond::Ne, R1, NINTH, 0), out);
    a.op([insn::load(Size::B, R1, base, off + 9)]);
    a.jump(insn::jump_imm(Cond::Lt, R1, i32::from(b'0'), 0), out);
    a.jump(insn::jump_imm(Cond::Gt, R1, i32::from(b'9'), 0), out);
}

/// `R7 = now - R7` (the lateness since the time R7 held), `now` in the register given; jumps
/// to `out` when `now` is before it (`before`: `Lt`, or `Slt` for the kernel's signed
/// `ktime_t`).
fn since(a: &mut Asm, now: Reg, before: Cond, out: &'static str) {
    a.jump(insn::jump_reg(before, now, R7, 0), out);
    a.op([
        insn::alu_reg(Alu::Sub, now, R7),
        insn::alu_reg(Alu::Mov, R7, now),
    ]);
}

/// Jumps to `out` when R7 (the lateness) is below the threshold.
fn below(a: &mut Asm, threshold: u64, out: &'static str) {
    a.op(insn::mov64(R1, threshold));
    a.jump(insn::jump_reg(Cond::Lt, R7, R1, 0), out);
}

/// `R1 = map; R2 = R10 + key [; R3 = R10 + value; R4 = 0]; call helper`.
fn map_call(a: &mut Asm, helper: i32, map: &OwnedFd, key: i16, value: Option<i16>) {
    a.op(insn::map_fd(R1, map.as_raw_fd()));
    a.op([
        insn::alu_reg(Alu::Mov, R2, R10),
        insn::alu_imm(Alu::Add, R2, key.into()),
    ]);
    if let Some(v) = value {
        a.op([
            insn::alu_reg(Alu::Mov, R3, R10),
            insn::alu_imm(Alu::Add, R3, v.into()),
            insn::alu_imm(Alu::Mov, R4, 0),
        ]);
    }
    a.op([insn::call(helper)]);
}

/// `R0 =` this CPU's entry of the held chain's map (key at `R10 + key`); jumps to `miss`
/// when there is none.
fn this_cpu_woke(a: &mut Asm, m: &Maps, key: i16, miss: &'static str) {
    a.op([
        insn::call(GET_SMP_PROCESSOR_ID),
        insn::store(Size::W, R10, key, R0),
    ]);
    map_call(a, MAP_LOOKUP_ELEM, &m.woke, key, None);
    a.jump(insn::jump_imm(Cond::Eq, R0, 0, 0), miss);
}

/// `bpf_ringbuf_submit`'s flag that wakes no reader. Without it the kernel wakes the ring's
/// waiters whenever the reader has caught up (the usual case: stacks are rare): an `irq_work`
/// raised on the measured CPU, a self-interrupt that runs as soon as the switch into the late
/// thread enables interrupts, before the thread reads its clock. The reader polls on its own
/// period and never waits on the ring, so nothing is lost.
const RB_NO_WAKEUP: i32 = 1;

/// Takes the stack of what the CPU runs into the ring buffer, as a [`StackRecord`]: R6 the
/// context, R7 the lateness, R8 the measured thread. Jumps to `out` when the buffer is full.
fn take_stack(a: &mut Asm, m: &Maps, chain: Chain, out: &'static str) {
    a.op(insn::map_fd(R1, m.ring.as_raw_fd()));
    a.op([
        insn::alu_imm(Alu::Mov, R2, RECORD as i32),
        insn::alu_imm(Alu::Mov, R3, 0),
        insn::call(RINGBUF_RESERVE),
    ]);
    a.jump(insn::jump_imm(Cond::Eq, R0, 0, 0), out);
    a.op([
        insn::alu_reg(Alu::Mov, R9, R0),
        insn::call(KTIME_GET_NS),
        insn::store(Size::Dw, R9, 0, R0),
        insn::store(Size::Dw, R9, 8, R7),
        insn::call(GET_SMP_PROCESSOR_ID),
        insn::store(Size::W, R9, 16, R0),
        insn::call(GET_CURRENT_PID_TGID),
        insn::store(Size::W, R9, 20, R0),
        insn::store(Size::W, R9, 24, R8),
        insn::store_imm(Size::W, R9, 28, chain as i32),
        insn::alu_reg(Alu::Mov, R1, R6),
        insn::alu_reg(Alu::Mov, R2, R9),
        insn::alu_imm(Alu::Add, R2, 40),
        insn::alu_imm(Alu::Mov, R3, (FRAMES * 8) as i32),
        insn::alu_imm(Alu::Mov, R4, 0),
        insn::call(GET_STACK),
        insn::store(Size::Dw, R9, 32, R0),
        insn::alu_reg(Alu::Mov, R1, R9),
        insn::alu_imm(Alu::Mov, R2, RB_NO_WAKEUP),
        insn::call(RINGBUF_SUBMIT),
    ]);
}

/// `R0 = 0; exit` at the label `out`, and the program.
fn done(mut a: Asm, what: &str) -> Result<Vec<Insn>, BpfError> {
    a.label("out");
    a.op([insn::alu_imm(Alu::Mov, R0, 0), insn::exit()]);
    a.finish()
        .ok_or_else(|| BpfError::Event(format!("{what}: a jump without its label")))
}

/// `hrtimer_start` of a measured thread's sleep: its expiry under its PID and its timer.
fn on_hrtimer_start(e: &Event, s: &Setting, m: &Maps) -> Result<Vec<Insn>, BpfError> {
    let mut a = Asm::default();
    a.op([insn::alu_reg(Alu::Mov, R6, R1)]);
    e.load(&mut a, Field::Function, R1)?;
    a.op(insn::mov64(R2, s.hrtimer_wakeup));
    a.jump(insn::jump_reg(Cond::Ne, R1, R2, 0), "out");
    a.op([
        insn::alu_reg(Alu::Mov, R1, R10),
        insn::alu_imm(Alu::Add, R1, -16),
        insn::alu_imm(Alu::Mov, R2, 16),
        insn::call(GET_CURRENT_COMM),
    ]);
    measured_name(&mut a, R10, -16, "out");
    // Stack: the PID key at -24, the value {expiry, PID} at -40, the timer key at -48.
    a.op([
        insn::call(GET_CURRENT_PID_TGID),
        insn::alu_reg(Alu::Mov, R1, R0),
        insn::alu_imm(Alu::Rsh, R1, 32),
    ]);
    a.jump(insn::jump_imm(Cond::Ne, R1, s.tgid as i32, 0), "out");
    a.op([
        insn::store(Size::W, R10, -24, R0),
        insn::alu_imm(Alu::Mov, R1, 0),
        insn::store(Size::W, R10, -20, R1),
        insn::load(Size::W, R1, R10, -24),
        insn::store(Size::Dw, R10, -32, R1),
    ]);
    e.to_stack(&mut a, Field::Expires, -40)?;
    e.to_stack(&mut a, Field::Timer, -48)?;
    map_call(&mut a, MAP_UPDATE_ELEM, &m.by_pid, -24, Some(-40));
    map_call(&mut a, MAP_UPDATE_ELEM, &m.by_timer, -48, Some(-40));
    done(a, e.name)
}

/// `sched_switch` into a measured thread: clears the held chain's time, and takes the stack
/// of the task switched out when the thread runs late by the threshold.
fn on_switch(e: &Event, s: &Setting, m: &Maps) -> Result<Vec<Insn>, BpfError> {
    let mut a = Asm::default();
    a.op([insn::alu_reg(Alu::Mov, R6, R1)]);
    // Any other switch ends at the name: one 8-byte compare.
    let (base, off) = e.next_comm(&mut a)?;
    measured_name(&mut a, base, off, "out");
    if s.tick_sched_timer.is_some() {
        this_cpu_woke(&mut a, m, -8, "switch");
        a.op([insn::store_imm(Size::Dw, R0, 0, 0)]);
        a.label("switch");
    }
    e.to_stack(&mut a, Field::NextPid, -4)?;
    map_call(&mut a, MAP_LOOKUP_ELEM, &m.by_pid, -4, None);
    a.jump(insn::jump_imm(Cond::Eq, R0, 0, 0), "out");
    a.op([
        insn::alu_reg(Alu::Mov, R9, R0),
        insn::load(Size::Dw, R7, R9, 0),
    ]);
    a.jump(insn::jump_imm(Cond::Eq, R7, 0, 0), "out");
    a.op([insn::call(KTIME_GET_NS)]);
    // Switched in before its timer's expiry (after arming it, before sleeping): not this
    // sleep's wake-up; the entry stays for it. Else it is used (in place: no delete).
    since(&mut a, R0, Cond::Lt, "out");
    a.op([
        insn::store_imm(Size::Dw, R9, 0, 0),
        insn::load(Size::W, R8, R10, -4),
    ]);
    below(&mut a, s.threshold_ns, "out");
    a.op(insn::mov64(R1, MAX_LATE_NS));
    a.jump(insn::jump_reg(Cond::Ge, R7, R1, 0), "out");
    take_stack(&mut a, m, Chain::Switch, "out");
    done(a, e.name)
}

/// `hrtimer_expire_entry`: a measured thread's timer (how late it came; with the held chain,
/// the time its thread is woken, under the CPU) or, with the held chain, the CPU's tick (how
/// long a woken measured thread has waited).
fn on_expire(e: &Event, s: &Setting, m: &Maps) -> Result<Vec<Insn>, BpfError> {
    let mut a = Asm::default();
    a.op([insn::alu_reg(Alu::Mov, R6, R1)]);
    e.load(&mut a, Field::Function, R1)?;
    a.op(insn::mov64(R2, s.hrtimer_wakeup));
    a.jump(insn::jump_reg(Cond::Eq, R1, R2, 0), "timer");
    if let Some(tick) = s.tick_sched_timer {
        a.op(insn::mov64(R2, tick));
        a.jump(insn::jump_reg(Cond::Eq, R1, R2, 0), "held");
    }
    a.jump(insn::goto(0), "out");
    a.label("timer");
    e.to_stack(&mut a, Field::Timer, -8)?;
    map_call(&mut a, MAP_LOOKUP_ELEM, &m.by_timer, -8, None);
    a.jump(insn::jump_imm(Cond::Eq, R0, 0, 0), "out");
    a.op([insn::load(Size::Dw, R7, R0, 0)]);
    a.jump(insn::jump_imm(Cond::Eq, R7, 0, 0), "out");
    // R9: the interrupt's time, read once (take_stack reuses R9 after), last: reading it
    // may clobber R0.
    a.op([
        insn::load(Size::Dw, R8, R0, 8),
        insn::store_imm(Size::Dw, R0, 0, 0),
    ]);
    e.load(&mut a, Field::Now, R9)?;
    if s.tick_sched_timer.is_some() {
        // The waking (`hrtimer_wakeup` runs next): its time and the thread under the CPU.
        this_cpu_woke(&mut a, m, -12, "late");
        a.op([
            insn::store(Size::Dw, R0, 0, R9),
            insn::store(Size::Dw, R0, 8, R8),
        ]);
        a.label("late");
    }
    since(&mut a, R9, Cond::Slt, "out");
    below(&mut a, s.threshold_ns, "out");
    take_stack(&mut a, m, Chain::Timer, "out");
    if s.tick_sched_timer.is_some() {
        a.jump(insn::goto(0), "out");
        a.label("held");
        this_cpu_woke(&mut a, m, -8, "out");
        a.op([
            insn::alu_reg(Alu::Mov, R9, R0),
            insn::load(Size::Dw, R7, R9, 0),
        ]);
        a.jump(insn::jump_imm(Cond::Eq, R7, 0, 0), "out");
        // Every tick looks while the thread waits; the first at the threshold or more takes
        // the stack and uses the time (a tick before the threshold leaves it for the next).
        a.op([insn::load(Size::Dw, R8, R9, 8), insn::call(KTIME_GET_NS)]);
        since(&mut a, R0, Cond::Lt, "out");
        below(&mut a, s.threshold_ns, "out");
        a.op([insn::store_imm(Size::Dw, R9, 0, 0)]);
        take_stack(&mut a, m, Chain::Held, "out");
    }
    done(a, e.name)
}

/// The loaded and attached programs, and the ring buffer their stacks come through.
pub struct Programs {
    /// The attachments (raw tracepoints' links, or the perf events holding the programs on
    /// their trace events): closed, the programs are detached.
    _links: Vec<OwnedFd>,
    _progs: Vec<OwnedFd>,
    _maps: [OwnedFd; 3],
    ring: crate::ringbuf::RingBuf,
    chains: Vec<Chain>,
    /// Where the programs' machine code is (first address, length): a raw tracepoint's
    /// program takes its stack from inside itself, and those frames are cut.
    code: Vec<(u64, u32)>,
    source: &'static str,
}

/// Cuts the stack's first frames while they are return addresses in the programs' code
/// (`(start, length)`): the stack of a raw tracepoint's program starts inside it.
fn cut_own_frames(frames: &mut Vec<u64>, code: &[(u64, u32)]) {
    let own = |f: u64| {
        code.iter()
            .any(|&(at, len)| f > at && f <= at + u64::from(len))
    };
    let n = frames.iter().take_while(|&&f| own(f)).count();
    frames.drain(..n);
}

/// The number of CPUs the kernel may have (the held chain's map has an entry each): the
/// highest in `/sys/devices/system/cpu/possible` plus one. Not `sysconf(_SC_NPROCESSORS_CONF)`:
/// musl counts the CPUs of the caller's affinity mask there (a housekeeping CPU's thread sees
/// one), which left the measured CPUs out of the map.
pub(crate) fn possible_cpus() -> u32 {
    let text = std::fs::read_to_string("/sys/devices/system/cpu/possible").unwrap_or_default();
    highest_cpu(&text).map_or(MAX_CPUS, |n| (n + 1).min(MAX_CPUS))
}

/// The held chain's map size where the kernel's list of possible CPUs cannot be read.
const MAX_CPUS: u32 = 8192;

/// The highest CPU of a kernel CPU list (`0-3,8-11`).
fn highest_cpu(list: &str) -> Option<u32> {
    list.trim()
        .split(',')
        .filter_map(|r| r.rsplit('-').next()?.trim().parse::<u32>().ok())
        .max()
}

impl Programs {
    /// Creates the maps, builds the programs for `s` reading from `source`, loads them and
    /// attaches them to their tracepoints. Any step failing drops what was made (file
    /// descriptors: the kernel frees it all).
    pub fn start(s: &Setting, source: Source) -> Result<Programs, BpfError> {
        let m = Maps {
            by_pid: sys::create_map("rtscope_pid", MapType::Hash, 4, 8, THREADS)?,
            by_timer: sys::create_map("rtscope_timer", MapType::Hash, 8, 16, THREADS)?,
            woke: sys::create_map("rtscope_woke", MapType::Array, 4, 16, possible_cpus())?,
            ring: sys::create_map("rtscope_stacks", MapType::RingBuf, 0, 0, RING_BYTES as u32)?,
        };
        let start = Event::new(source, "hrtimer_start")?;
        let switch = Event::new(source, "sched_switch")?;
        let expire = Event::new(source, "hrtimer_expire_entry")?;
        let built = [
            ("rtscope_start", on_hrtimer_start(&start, s, &m)?, &start),
            ("rtscope_switch", on_switch(&switch, s, &m)?, &switch),
            ("rtscope_expire", on_expire(&expire, s, &m)?, &expire),
        ];
        let mut chains = vec![Chain::Switch, Chain::Timer];
        if s.tick_sched_timer.is_some() {
            chains.push(Chain::Held);
        }
        let (mut progs, mut links, mut code) = (Vec::new(), Vec::new(), Vec::new());
        for (i, (name, insns, event)) in built.into_iter().enumerate() {
            let (prog, link) = match (event.id, source) {
                (_, Source::Typed(l)) => {
                    let ids = l.typed.ok_or_else(|| {
                        BpfError::Event("no btf_trace_* types in the kernel's BTF".into())
                    })?;
                    let prog = sys::load_typed(name, ids[i], &insns)?;
                    let link = sys::attach_typed(event.name, &prog)?;
                    (prog, link)
                }
                (Some(id), _) => {
                    let prog = sys::load_program(name, ProgType::Tracepoint, &insns)?;
                    let link = sys::attach_tracepoint(id, &prog, name)?;
                    (prog, link)
                }
                (None, _) => {
                    let prog = sys::load_program(name, ProgType::RawTracepoint, &insns)?;
                    let link = sys::attach_raw_tracepoint(event.name, &prog)?;
                    (prog, link)
                }
            };
            code.extend(sys::jited_range(&prog));
            links.push(link);
            progs.push(prog);
        }
        let Maps {
            by_pid,
            by_timer,
            woke,
            ring,
        } = m;
        Ok(Programs {
            _links: links,
            _progs: progs,
            _maps: [by_pid, by_timer, woke],
            ring: crate::ringbuf::RingBuf::new(ring, RING_BYTES)?,
            chains,
            code,
            source: source.describe(),
        })
    }

    /// Where the programs read (`raw tracepoints`, `trace events`).
    pub fn source(&self) -> &'static str {
        self.source
    }

    /// The chains set.
    pub fn chains(&self) -> &[Chain] {
        &self.chains
    }

    /// Appends the stacks taken since the last call to `out`, each without its frames in the
    /// programs' own code.
    pub fn drain(&mut self, out: &mut Vec<StackRecord>) -> usize {
        let code = &self.code;
        self.ring.drain(|bytes| {
            if let Some(mut r) = StackRecord::parse(bytes) {
                cut_own_frames(&mut r.frames, code);
                out.push(r);
            }
        })
    }
}

#[cfg(test)]
pub(crate) mod run;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_highest_possible_cpu_is_read_from_the_kernels_list() {
        assert_eq!(highest_cpu("0-1\n"), Some(1));
        assert_eq!(highest_cpu("0-3,8-11"), Some(11));
        assert_eq!(highest_cpu("0"), Some(0));
        assert_eq!(highest_cpu(""), None);
        assert!(possible_cpus() >= 1);
    }

    /// Trace event offsets, as a `format` file would give them.
    struct Records;

    impl Formats for Records {
        fn id(&self, _: &str) -> Option<u64> {
            Some(1)
        }

        fn offset(&self, _: &str, field: &str) -> Option<usize> {
            Some(match field {
                "next_comm" => 56,
                "next_pid" => 72,
                _ => 16,
            })
        }
    }

    /// The builders' output for `source`: each program's calls of `bpf_probe_read_kernel`,
    /// and the context reads (offset, size) it makes.
    fn built(source: Source) -> Vec<(usize, Vec<(i16, u8)>)> {
        let fd = || OwnedFd::from(std::fs::File::open("/dev/null").unwrap());
        let m = Maps {
            by_pid: fd(),
            by_timer: fd(),
            woke: fd(),
            ring: fd(),
        };
        let s = Setting {
            threshold_ns: 1_000,
            hrtimer_wakeup: 0xffff_ffff_8100_0000,
            tick_sched_timer: Some(0xffff_ffff_8100_1000),
            tgid: 1,
        };
        let ev = |n| Event::new(source, n).unwrap();
        let programs = [
            on_hrtimer_start(&ev("hrtimer_start"), &s, &m).unwrap(),
            on_switch(&ev("sched_switch"), &s, &m).unwrap(),
            on_expire(&ev("hrtimer_expire_entry"), &s, &m).unwrap(),
        ];
        let call = insn::call(PROBE_READ_KERNEL);
        programs
            .iter()
            .map(|p| {
                let reads = p.iter().filter(|i| **i == call).count();
                // Loads (class LDX) whose base is R6, the context kept from R1.
                let ctx = p
                    .iter()
                    .filter(|i| i.code & 0x07 == 0x01 && i.src == 6)
                    .map(|i| (i.off, i.code))
                    .collect();
                (reads, ctx)
            })
            .collect()
    }

    #[test]
    fn raw_programs_read_the_arguments_and_behind_them_and_event_programs_the_record() {
        let layout = Layout {
            switch_next: 16,
            start_timer: 0,
            expire_timer: 0,
            expire_now: 8,
            task_comm: 3000,
            task_pid: 2000,
            timer_function: 40,
            timer_expires: 24,
            typed: Some([1, 2, 3]),
        };
        let dw = insn::load(Size::Dw, R1, R6, 0).code;
        let raw = built(Source::Raw(&layout));
        // hrtimer_start: the function, the expiry; sched_switch: the name, the PID;
        // hrtimer_expire_entry: the function, the time.
        assert_eq!(raw.iter().map(|p| p.0).collect::<Vec<_>>(), [2, 2, 2]);
        for (_, ctx) in &raw {
            assert!(ctx
                .iter()
                .all(|&(off, code)| code == dw && [0, 8, 16].contains(&off)));
        }
        assert!(raw[1].1.iter().all(|&(off, _)| off == 16), "{:?}", raw[1]);
        // As tp_btf programs only the interrupt's time (behind a pointer to an integer, which
        // BTF does not let a program load through) is read by the helper.
        let typed = built(Source::Typed(&layout));
        assert_eq!(typed.iter().map(|p| p.0).collect::<Vec<_>>(), [0, 0, 1]);
        assert_eq!(
            Source::Typed(&layout).describe(),
            "BTF-typed raw tracepoints"
        );
        let events = built(Source::Events(&Records));
        assert!(events.iter().all(|p| p.0 == 0));
        assert!(events[1].1.iter().any(|&(off, _)| off == 72));
        assert_eq!(Source::Raw(&layout).describe(), "raw tracepoints");
        let e = Event::new(Source::Raw(&layout), "sched_switch").unwrap();
        assert!(e.place(Field::Timer).is_err());
    }

    #[test]
    fn a_stacks_frames_in_the_programs_code_are_cut_and_only_at_its_top() {
        let code = [(0x1000, 0x100), (0x3000, 0x80)];
        let mut f = vec![0x1010, 0x3080, 0x9000, 0x1020];
        cut_own_frames(&mut f, &code);
        assert_eq!(f, [0x9000, 0x1020]);
        // The first address is the program's entry, not a return into it.
        let mut g = vec![0x1000, 0x9000];
        cut_own_frames(&mut g, &code);
        assert_eq!(g, [0x1000, 0x9000]);
    }
}
