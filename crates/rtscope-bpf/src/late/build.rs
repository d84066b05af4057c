//! The three programs' instructions (the module above says what each chain does), built for
//! one [`Setting`] on one set of [`Maps`], reading where an [`Event`] says.
//!
//! On a measured thread's prompt wake-up's path they look nothing up by hashing (BENCHMARKS.md,
//! "The wake-up's path without a hash lookup"):
//!
//! - **switch**: the thread's entry is at its index in an array, the decimal digits after
//!   `rtscope-m` in its name (the engine names its measuring threads `rtscope-m0` …), checked
//!   against the PID switched in: an array lookup, which the verifier inlines.
//! - **timer**: `hrtimer_start` also writes the timer, its expiry and the thread into this
//!   CPU's slot of the per-CPU map, which the held chain looks up at the interrupt anyway;
//!   the timer's hash map is read only when the slot holds another timer (two measured
//!   threads on one CPU, or a timer that expires on another CPU than it was armed on).
//!   A slot's entry is used (0) in place, the map's copy left: a timer expires once per arm,
//!   and the next arm writes both. A timer that expires on another CPU than it was armed on
//!   (`nohz_full` CPUs queue a running task's timer on a housekeeping CPU) is found in the
//!   map, which names the arming CPU, and that CPU's slot of it is used too: else a thread
//!   that floats (cyclictest's without `-a`) could later have the timer queued there, and the
//!   interrupt there would read the older expiry.

use super::{Event, Field, Maps, Setting, MAX_LATE_NS, NINTH, PREFIX};
use crate::asm::Asm;
use crate::insn::{self, Alu, Cond, Insn, Reg, Size, R0, R1, R10, R2, R3, R4, R6, R7, R8, R9};
use crate::{BpfError, Chain, FRAMES, RECORD};
use std::os::fd::{AsRawFd, OwnedFd};

const MAP_LOOKUP_ELEM: i32 = 1;
const MAP_UPDATE_ELEM: i32 = 2;
const KTIME_GET_NS: i32 = 5;
const GET_SMP_PROCESSOR_ID: i32 = 8;
const GET_CURRENT_PID_TGID: i32 = 14;
const GET_CURRENT_COMM: i32 = 16;
const GET_STACK: i32 = 67;
const RINGBUF_RESERVE: i32 = 131;
const RINGBUF_SUBMIT: i32 = 132;

/// The per-CPU map's value: the held chain's waking (its time at 0, its PID at 8), then the
/// slot of the timer a measured thread armed last on this CPU: the timer at `SLOT`, its
/// expiry (0 once used) at `SLOT + 8`, the thread's PID at `SLOT + 16` — the expiry and PID
/// laid out as the timer map's value, so one path reads either.
pub(crate) const SLOT: i16 = 16;
/// The per-CPU map's value size.
pub(crate) const PER_CPU_VALUE: u32 = 40;

/// Stack slots below those the reads use (`super::SCRATCH`, `super::COMM`): the thread's index
/// (the thread map's key) and this CPU's number (the per-CPU map's key) in `hrtimer_start`.
const INDEX: i16 = -80;
const CPU: i16 = -88;

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

/// `R0 =` this CPU's entry of the per-CPU map (key at `R10 + key`): the held chain's waking
/// and the timer slot ([`SLOT`]); jumps to `miss` when there is none.
fn this_cpu(a: &mut Asm, m: &Maps, key: i16, miss: &'static str) {
    a.op([
        insn::call(GET_SMP_PROCESSOR_ID),
        insn::store(Size::W, R10, key, R0),
    ]);
    map_call(a, MAP_LOOKUP_ELEM, &m.per_cpu, key, None);
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

/// Stores at `R10 + key` (4 bytes) the measured thread's index: the decimal digits after
/// `rtscope-m` in the name at `base + off`, whose first [`measured_name`] checked. A fifth
/// digit stores [`super::THREADS`], beyond the thread map: that thread has no entry.
fn thread_index(a: &mut Asm, base: Reg, off: i16, key: i16) {
    a.op([
        insn::load(Size::B, R4, base, off + 9),
        insn::alu_imm(Alu::Sub, R4, i32::from(b'0')),
    ]);
    for at in 10..14 {
        a.op([insn::load(Size::B, R1, base, off + at)]);
        a.jump(insn::jump_imm(Cond::Lt, R1, i32::from(b'0'), 0), "index");
        a.jump(insn::jump_imm(Cond::Gt, R1, i32::from(b'9'), 0), "index");
        if at == 13 {
            a.op([insn::alu_imm(Alu::Mov, R4, super::THREADS as i32)]);
        } else {
            a.op([
                insn::alu_imm(Alu::Mul, R4, 10),
                insn::alu_imm(Alu::Sub, R1, i32::from(b'0')),
                insn::alu_reg(Alu::Add, R4, R1),
            ]);
        }
    }
    a.label("index");
    a.op([insn::store(Size::W, R10, key, R4)]);
}

/// A timer program's start: the context kept in R6, the timer's function in R1, and a jump to
/// `label` when `cond` holds between it and `hrtimer_wakeup` (in R2).
fn timer_function(
    e: &Event,
    s: &Setting,
    cond: Cond,
    label: &'static str,
) -> Result<Asm, BpfError> {
    let mut a = Asm::default();
    a.op([insn::alu_reg(Alu::Mov, R6, R1)]);
    e.load(&mut a, Field::Function, R1)?;
    a.op(insn::mov64(R2, s.hrtimer_wakeup));
    a.jump(insn::jump_reg(cond, R1, R2, 0), label);
    Ok(a)
}

/// `hrtimer_start` of a measured thread's sleep: its expiry at its index in the thread map,
/// and under its timer in the timer map (with this CPU) and in this CPU's slot.
pub(super) fn on_hrtimer_start(e: &Event, s: &Setting, m: &Maps) -> Result<Vec<Insn>, BpfError> {
    let mut a = timer_function(e, s, Cond::Ne, "out")?;
    a.op([
        insn::alu_reg(Alu::Mov, R1, R10),
        insn::alu_imm(Alu::Add, R1, -16),
        insn::alu_imm(Alu::Mov, R2, 16),
        insn::call(GET_CURRENT_COMM),
    ]);
    measured_name(&mut a, R10, -16, "out");
    thread_index(&mut a, R10, -16, INDEX);
    // Stack: the timer map's value {expiry, PID, this CPU} at -40, its key at -48.
    a.op([
        insn::call(GET_CURRENT_PID_TGID),
        insn::alu_reg(Alu::Mov, R1, R0),
        insn::alu_imm(Alu::Rsh, R1, 32),
    ]);
    a.jump(insn::jump_imm(Cond::Ne, R1, s.tgid as i32, 0), "out");
    a.op([
        insn::store(Size::W, R10, -24, R0),
        insn::load(Size::W, R1, R10, -24),
        insn::store(Size::Dw, R10, -32, R1),
        insn::call(GET_SMP_PROCESSOR_ID),
        insn::store(Size::W, R10, CPU, R0),
        insn::store(Size::Dw, R10, -24, R0),
    ]);
    e.to_stack(&mut a, Field::Expires, -40)?;
    e.to_stack(&mut a, Field::Timer, -48)?;
    map_call(&mut a, MAP_UPDATE_ELEM, &m.by_timer, -48, Some(-40));
    map_call(&mut a, MAP_LOOKUP_ELEM, &m.per_cpu, CPU, None);
    a.jump(insn::jump_imm(Cond::Eq, R0, 0, 0), "thread");
    for (from, at) in [(-48, SLOT), (-40, SLOT + 8), (-32, SLOT + 16)] {
        a.op([
            insn::load(Size::Dw, R1, R10, from),
            insn::store(Size::Dw, R0, at, R1),
        ]);
    }
    a.label("thread");
    map_call(&mut a, MAP_LOOKUP_ELEM, &m.by_thread, INDEX, None);
    a.jump(insn::jump_imm(Cond::Eq, R0, 0, 0), "out");
    a.op([
        insn::load(Size::Dw, R1, R10, -40),
        insn::store(Size::Dw, R0, 0, R1),
        insn::load(Size::W, R1, R10, -32),
        insn::store(Size::W, R0, 8, R1),
    ]);
    done(a, e.name)
}

/// `sched_switch` into a measured thread: clears the held chain's time, and takes the stack
/// of the task switched out when the thread runs late by the threshold.
pub(super) fn on_switch(e: &Event, s: &Setting, m: &Maps) -> Result<Vec<Insn>, BpfError> {
    let mut a = Asm::default();
    a.op([insn::alu_reg(Alu::Mov, R6, R1)]);
    // Any other switch ends at the name: one 8-byte compare.
    let (base, off) = e.next_comm(&mut a)?;
    measured_name(&mut a, base, off, "out");
    thread_index(&mut a, base, off, -12);
    if s.tick_sched_timer.is_some() {
        this_cpu(&mut a, m, -8, "switch");
        a.op([insn::store_imm(Size::Dw, R0, 0, 0)]);
        a.label("switch");
    }
    e.to_stack(&mut a, Field::NextPid, -4)?;
    map_call(&mut a, MAP_LOOKUP_ELEM, &m.by_thread, -12, None);
    a.jump(insn::jump_imm(Cond::Eq, R0, 0, 0), "out");
    // The entry at its index is this thread's, not another rtscope's thread of that name.
    a.op([
        insn::alu_reg(Alu::Mov, R9, R0),
        insn::load(Size::W, R1, R9, 8),
        insn::load(Size::W, R2, R10, -4),
    ]);
    a.jump(insn::jump_reg(Cond::Ne, R1, R2, 0), "out");
    a.op([insn::load(Size::Dw, R7, R9, 0)]);
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
pub(super) fn on_expire(e: &Event, s: &Setting, m: &Maps) -> Result<Vec<Insn>, BpfError> {
    let mut a = timer_function(e, s, Cond::Eq, "timer")?;
    if let Some(tick) = s.tick_sched_timer {
        a.op(insn::mov64(R2, tick));
        a.jump(insn::jump_reg(Cond::Eq, R1, R2, 0), "held");
    }
    a.jump(insn::goto(0), "out");
    a.label("timer");
    // This CPU's entry, kept at -24 across the helper calls below.
    this_cpu(&mut a, m, -12, "out");
    a.op([insn::store(Size::Dw, R10, -24, R0)]);
    e.to_stack(&mut a, Field::Timer, -8)?;
    a.op([
        insn::load(Size::Dw, R0, R10, -24),
        insn::load(Size::Dw, R1, R10, -8),
        insn::load(Size::Dw, R2, R0, SLOT),
    ]);
    a.jump(insn::jump_reg(Cond::Ne, R1, R2, 0), "lookup");
    a.op([insn::alu_imm(Alu::Add, R0, i32::from(SLOT + 8))]);
    a.jump(insn::goto(0), "found");
    a.label("lookup");
    map_call(&mut a, MAP_LOOKUP_ELEM, &m.by_timer, -8, None);
    a.jump(insn::jump_imm(Cond::Eq, R0, 0, 0), "out");
    // Armed on another CPU: that CPU's slot of this timer is used too, or an interrupt there
    // would read its older expiry (R0 kept at -32, the CPU's key at -16).
    a.op([
        insn::store(Size::Dw, R10, -32, R0),
        insn::load(Size::W, R1, R0, 16),
        insn::store(Size::W, R10, -16, R1),
    ]);
    map_call(&mut a, MAP_LOOKUP_ELEM, &m.per_cpu, -16, None);
    a.jump(insn::jump_imm(Cond::Eq, R0, 0, 0), "mapped");
    a.op([
        insn::load(Size::Dw, R1, R10, -8),
        insn::load(Size::Dw, R2, R0, SLOT),
    ]);
    a.jump(insn::jump_reg(Cond::Ne, R1, R2, 0), "mapped");
    a.op([insn::store_imm(Size::Dw, R0, SLOT + 8, 0)]);
    a.label("mapped");
    a.op([insn::load(Size::Dw, R0, R10, -32)]);
    // R0: {expiry, PID}, in the slot or in the timer map.
    a.label("found");
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
        a.op([
            insn::load(Size::Dw, R0, R10, -24),
            insn::store(Size::Dw, R0, 0, R9),
            insn::store(Size::Dw, R0, 8, R8),
        ]);
    }
    since(&mut a, R9, Cond::Slt, "out");
    below(&mut a, s.threshold_ns, "out");
    take_stack(&mut a, m, Chain::Timer, "out");
    if s.tick_sched_timer.is_some() {
        a.jump(insn::goto(0), "out");
        a.label("held");
        this_cpu(&mut a, m, -8, "out");
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
