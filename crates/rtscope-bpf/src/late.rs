//! The late-only stacks as eBPF programs on the scheduler's and the timers' trace events: the
//! same three chains as the hist triggers of `rtscope_trace::tracefs::late` (docs/explain.md,
//! "Kernel stacks"), each a few dozen instructions that compare, look up a map entry and,
//! only when the wake-up is late by the threshold or more, take the kernel stack of what the
//! CPU runs into the ring buffer:
//!
//! - **switch**: on `hrtimer_start` of a measured thread's sleep (`hrtimer_wakeup`, a task
//!   whose name starts `rtscope-m`), its expiry at the thread's index; on `sched_switch` into
//!   it, how late it runs; the stack is of the task switched out, in its `__schedule`.
//! - **timer**: the same expiry under the timer, in the CPU's slot and a hash map; on
//!   `hrtimer_expire_entry`, how late the interrupt came; the stack is where the interrupt
//!   found the CPU.
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
//! measured thread's prompt wake-up they cost an array lookup at the timer interrupt and one
//! at the switch ([`build`]: no hash), each entry marked used in place, and an array store for
//! the held chain; nothing runs at the waking (a `sched_waking` program cost a third
//! tracepoint call on each wake-up's path: BENCHMARKS.md).

use crate::asm::Asm;
use crate::btf::Layout;
use crate::insn::{self, Alu, Reg, Size, R1, R10, R2, R3, R6};
use crate::sys::{self, MapType, ProgType};
use crate::{BpfError, Chain, Formats, StackRecord};
use std::os::fd::OwnedFd;

const PROBE_READ_KERNEL: i32 = 113;

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

/// Entries of the thread and timer maps: one per measured thread, far more than any run has
/// (a thread of a higher index, `rtscope-m4096` on, is followed by the timer chain only).
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
    /// A measured thread's index (the digits of its name) → the expiry of its sleep's timer
    /// (0 once used) and its PID (switch chain).
    by_thread: OwnedFd,
    /// hrtimer → its expiry (0 once used), the PID and the CPU that armed it (timer and held
    /// chains), where this CPU's slot holds another timer.
    by_timer: OwnedFd,
    /// CPU → when a measured thread was woken for it and its PID (held chain), and the slot
    /// of the timer last armed there ([`build::SLOT`]).
    per_cpu: OwnedFd,
    ring: OwnedFd,
}

impl Maps {
    /// The maps, new (the kernel frees them with their last descriptor).
    pub(crate) fn create() -> Result<Maps, BpfError> {
        Ok(Maps {
            by_thread: sys::create_map("rtscope_thread", MapType::Array, 4, 16, THREADS)?,
            by_timer: sys::create_map("rtscope_timer", MapType::Hash, 8, 24, THREADS)?,
            per_cpu: sys::create_map(
                "rtscope_cpu",
                MapType::Array,
                4,
                build::PER_CPU_VALUE,
                possible_cpus(),
            )?,
            ring: sys::create_map("rtscope_stacks", MapType::RingBuf, 0, 0, RING_BYTES as u32)?,
        })
    }
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
        let m = Maps::create()?;
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
            by_thread,
            by_timer,
            per_cpu,
            ring,
        } = m;
        Ok(Programs {
            _links: links,
            _progs: progs,
            _maps: [by_thread, by_timer, per_cpu],
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

mod build;
use build::{on_expire, on_hrtimer_start, on_switch};

#[cfg(test)]
impl Maps {
    /// Four descriptors of /dev/null in the maps' places: for building programs unloaded
    /// (each a distinct descriptor, so a listing can name the maps).
    pub(crate) fn dev_null() -> Maps {
        let fd = || OwnedFd::from(std::fs::File::open("/dev/null").expect("/dev/null"));
        Maps {
            by_thread: fd(),
            by_timer: fd(),
            per_cpu: fd(),
            ring: fd(),
        }
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
        let m = Maps::dev_null();
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
