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
//!   CPU; at the CPU's next tick (`tick_sched_timer`), how long it has waited; the switch into
//!   it clears the time.
//!
//! The programs read the events' records at the offsets their tracefs `format` files give
//! (no BTF needed), and run on every CPU. On a measured thread's prompt wake-up they cost a
//! hash lookup at the timer interrupt and one at the switch, each entry marked used in place
//! (no delete: a hash delete takes the bucket's lock), and an array store for the held chain;
//! nothing runs at the waking (a `sched_waking` program cost a third tracepoint call on each
//! wake-up's path: BENCHMARKS.md).

use crate::asm::Asm;
use crate::insn::{self, Alu, Cond, Insn, Reg, Size, R0, R1, R10, R2, R3, R4, R6, R7, R8, R9};
use crate::sys::{self, MapType};
use crate::{BpfError, Chain, Formats, StackRecord, FRAMES, RECORD};
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

/// The first 8 bytes of a measured thread's name, as a little-endian u64 (`rtscope-`), its
/// ninth (`m`: the measured threads, `rtscope-m0` …; the noise loop, `rtscope-n`, never
/// sleeps) and a digit after it (not the monitors' `rtscope-monitor`).
const PREFIX: u64 = u64::from_le_bytes(*b"rtscope-");
const NINTH: i32 = b'm' as i32;

/// The most a switch is counted late (ns), as the hist triggers' bound.
const MAX_LATE_NS: u64 = 1_000_000_000_000;

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
struct Maps {
    /// PID → the expiry of its sleep's timer (switch chain; 0 once used).
    by_pid: OwnedFd,
    /// hrtimer → its expiry (0 once used) and the PID (timer and held chains).
    by_timer: OwnedFd,
    /// CPU → when a measured thread was woken for it, and its PID (held chain).
    woke: OwnedFd,
    ring: OwnedFd,
}

/// The fields a program reads from one event's record.
struct Event<'a> {
    name: &'a str,
    id: u64,
    f: &'a dyn Formats,
}

impl Event<'_> {
    fn new<'a>(f: &'a dyn Formats, name: &'a str) -> Result<Event<'a>, BpfError> {
        let id = f
            .id(name)
            .ok_or_else(|| BpfError::Event(format!("no event {name}")))?;
        Ok(Event { name, id, f })
    }

    /// The offset of `field`, checked aligned to `size` (the kernel refuses a misaligned
    /// read of a trace event's record).
    fn at(&self, field: &str, size: usize) -> Result<i16, BpfError> {
        let off = self
            .f
            .offset(self.name, field)
            .ok_or_else(|| BpfError::Event(format!("{}: no field {field}", self.name)))?;
        if off % size != 0 || off > 4096 {
            return Err(BpfError::Event(format!(
                "{}: field {field} at {off}, not {size}-aligned",
                self.name
            )));
        }
        Ok(off as i16)
    }
}

/// Jumps to `out` unless the name at `R?+off` is a measured thread's (`rtscope-m` and a
/// digit): `base` is R6 (a name in the record) or R10 (one on the stack).
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
        insn::alu_imm(Alu::Mov, R2, 0),
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
    a.op([
        insn::alu_reg(Alu::Mov, R6, R1),
        insn::load(Size::Dw, R1, R6, e.at("function", 8)?),
    ]);
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
        insn::load(Size::Dw, R1, R6, e.at("expires", 8)?),
        insn::store(Size::Dw, R10, -40, R1),
        insn::load(Size::Dw, R1, R6, e.at("hrtimer", 8)?),
        insn::store(Size::Dw, R10, -48, R1),
    ]);
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
    measured_name(&mut a, R6, e.at("next_comm", 8)?, "out");
    if s.tick_sched_timer.is_some() {
        this_cpu_woke(&mut a, m, -8, "switch");
        a.op([insn::store_imm(Size::Dw, R0, 0, 0)]);
        a.label("switch");
    }
    a.op([
        insn::load(Size::W, R1, R6, e.at("next_pid", 4)?),
        insn::store(Size::W, R10, -4, R1),
    ]);
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
    a.op([
        insn::alu_reg(Alu::Mov, R6, R1),
        insn::load(Size::Dw, R1, R6, e.at("function", 8)?),
    ]);
    a.op(insn::mov64(R2, s.hrtimer_wakeup));
    a.jump(insn::jump_reg(Cond::Eq, R1, R2, 0), "timer");
    if let Some(tick) = s.tick_sched_timer {
        a.op(insn::mov64(R2, tick));
        a.jump(insn::jump_reg(Cond::Eq, R1, R2, 0), "held");
    }
    a.jump(insn::goto(0), "out");
    a.label("timer");
    a.op([
        insn::load(Size::Dw, R1, R6, e.at("hrtimer", 8)?),
        insn::store(Size::Dw, R10, -8, R1),
    ]);
    map_call(&mut a, MAP_LOOKUP_ELEM, &m.by_timer, -8, None);
    a.jump(insn::jump_imm(Cond::Eq, R0, 0, 0), "out");
    a.op([insn::load(Size::Dw, R7, R0, 0)]);
    a.jump(insn::jump_imm(Cond::Eq, R7, 0, 0), "out");
    // R9: the interrupt's time, read once (take_stack reuses R9 after).
    a.op([
        insn::load(Size::Dw, R8, R0, 8),
        insn::store_imm(Size::Dw, R0, 0, 0),
        insn::load(Size::Dw, R9, R6, e.at("now", 8)?),
    ]);
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
        // Only the first tick after the waking looks.
        a.op([
            insn::load(Size::Dw, R8, R9, 8),
            insn::store_imm(Size::Dw, R9, 0, 0),
            insn::call(KTIME_GET_NS),
        ]);
        since(&mut a, R0, Cond::Lt, "out");
        below(&mut a, s.threshold_ns, "out");
        take_stack(&mut a, m, Chain::Held, "out");
    }
    done(a, e.name)
}

/// The loaded and attached programs, and the ring buffer their stacks come through.
pub struct Programs {
    /// The perf events holding the programs on their trace events (closed: detached).
    _links: Vec<OwnedFd>,
    _progs: Vec<OwnedFd>,
    _maps: [OwnedFd; 3],
    ring: crate::ringbuf::RingBuf,
    chains: Vec<Chain>,
}

/// The number of CPUs the kernel may have (the held chain's map has an entry each): the
/// highest in `/sys/devices/system/cpu/possible` plus one. Not `sysconf(_SC_NPROCESSORS_CONF)`:
/// musl counts the CPUs of the caller's affinity mask there (a housekeeping CPU's thread sees
/// one), which left the measured CPUs out of the map.
fn possible_cpus() -> u32 {
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
    /// Creates the maps, builds the programs for `s` with the offsets of `f`, loads them and
    /// attaches them to their events. Any step failing drops what was made (file
    /// descriptors: the kernel frees it all).
    pub fn start(s: &Setting, f: &dyn Formats) -> Result<Programs, BpfError> {
        let m = Maps {
            by_pid: sys::create_map("rtscope_pid", MapType::Hash, 4, 8, THREADS)?,
            by_timer: sys::create_map("rtscope_timer", MapType::Hash, 8, 16, THREADS)?,
            woke: sys::create_map("rtscope_woke", MapType::Array, 4, 16, possible_cpus())?,
            ring: sys::create_map("rtscope_stacks", MapType::RingBuf, 0, 0, RING_BYTES as u32)?,
        };
        let start = Event::new(f, "hrtimer_start")?;
        let switch = Event::new(f, "sched_switch")?;
        let expire = Event::new(f, "hrtimer_expire_entry")?;
        let built = [
            ("rtscope_start", on_hrtimer_start(&start, s, &m)?, start.id),
            ("rtscope_switch", on_switch(&switch, s, &m)?, switch.id),
            ("rtscope_expire", on_expire(&expire, s, &m)?, expire.id),
        ];
        let mut chains = vec![Chain::Switch, Chain::Timer];
        if s.tick_sched_timer.is_some() {
            chains.push(Chain::Held);
        }
        let mut progs = Vec::new();
        let mut links = Vec::new();
        for (name, code, id) in built {
            let prog = sys::load_program(name, &code)?;
            links.push(sys::attach_tracepoint(id, &prog, name)?);
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
        })
    }

    /// The chains set.
    pub fn chains(&self) -> &[Chain] {
        &self.chains
    }

    /// Appends the stacks taken since the last call to `out`.
    pub fn drain(&mut self, out: &mut Vec<StackRecord>) -> usize {
        self.ring.drain(|bytes| {
            if let Some(r) = StackRecord::parse(bytes) {
                out.push(r);
            }
        })
    }
}

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
}
