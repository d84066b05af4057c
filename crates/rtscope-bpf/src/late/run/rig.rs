//! The harness: the three programs of one layout built by the loader's own builders on real
//! maps, loaded, and run one at a time by `BPF_PROG_TEST_RUN` on a context made for the case.
//!
//! - **Raw tracepoints** (the BTF layout): the context is the tracepoint's argument array, as
//!   the kernel passes it; the task and the timer its arguments point to are synthetic kernel
//!   objects laid out at [`LAYOUT`]'s offsets (or the running kernel's: [`Rig::with_layout`])
//!   inside an array map's value (kernel memory,
//!   which `bpf_probe_read_kernel` reads as it reads a real `task_struct`). The value's address
//!   is learnt once by a program that stores it in the value itself (root may leak pointers).
//! - **Trace events** (the fallback without BTF): the kernel has no test run for
//!   `BPF_PROG_TYPE_TRACEPOINT`, so the program is loaded twice: as a tracepoint program, to
//!   be checked by the verifier under its own type's rules, and as a raw-tracepoint program,
//!   the same instructions, to be run on a context holding an event record's bytes at the
//!   offsets of this host's `format` files (Linux 6.18).
//!
//! The thread running the cases is pinned to its CPU (the held chain's map is per CPU) and
//! named like a measured thread (`hrtimer_start` checks the current task), as the real ones.

use crate::btf::Layout;
use crate::insn::{self, Alu, Insn, Size, R0, R1, R10, R2};
use crate::late::build::{PER_CPU_VALUE, SLOT};
use crate::late::{on_expire, on_hrtimer_start, on_switch, Event, Maps, Setting};
use crate::late::{Source, RING_BYTES, THREADS};
use crate::ringbuf::RingBuf;
use crate::sys::{self, MapType, ProgType};
use crate::{Formats, StackRecord};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// `bpf(2)` commands this harness adds to the loader's.
const BPF_MAP_LOOKUP_ELEM: libc::c_long = 1;
const BPF_MAP_UPDATE_ELEM: libc::c_long = 2;
const BPF_PROG_TEST_RUN: libc::c_long = 10;

/// The address the programs are built with for `hrtimer_wakeup` and `tick_sched_timer`.
pub const WAKEUP: u64 = 0xffff_ffff_8110_0000;
pub const TICK: u64 = 0xffff_ffff_8120_0000;

/// The raw tracepoints' arguments as the kernel passes them (`sched_switch(preempt, prev,
/// next, …)`, `hrtimer_start(hrtimer, mode, …)`, `hrtimer_expire_entry(hrtimer, now)`), and
/// synthetic objects' fields where the real ones are (x86-64, 6.18) but for the task's.
pub static LAYOUT: Layout = Layout {
    switch_next: 16,
    start_timer: 0,
    expire_timer: 0,
    expire_now: 8,
    task_comm: 40,
    task_pid: 24,
    timer_function: 40,
    timer_expires: 24,
    typed: None,
};

/// Where the synthetic objects are in the objects map's value (its first 8 bytes hold the
/// value's own address).
const TASK: usize = 1024;
const TIMER: usize = 256;
const NOW: usize = 512;
const OBJECTS: usize = TASK + 16384;

/// The `hrtimer` field of the trace events' records: the timer's address.
const EVENT_TIMER: u64 = 0xffff_8880_0123_4500;

/// A context: 12 arguments of 8 bytes (the most a raw tracepoint's test run takes) or a
/// record's first 96 bytes.
type Ctx = [u8; 96];

/// The trace events' field offsets of this host's `format` files.
pub struct Records;

impl Formats for Records {
    fn id(&self, name: &str) -> Option<u64> {
        ["sched_switch", "hrtimer_start", "hrtimer_expire_entry"]
            .iter()
            .position(|n| *n == name)
            .map(|i| 300 + i as u64)
    }

    fn offset(&self, event: &str, field: &str) -> Option<usize> {
        Some(match (event, field) {
            ("sched_switch", "next_comm") => 40,
            ("sched_switch", "next_pid") => 56,
            (_, "hrtimer") => 8,
            ("hrtimer_start", "function") => 16,
            ("hrtimer_start", "expires") => 24,
            ("hrtimer_expire_entry", "now") => 16,
            ("hrtimer_expire_entry", "function") => 24,
            _ => return None,
        })
    }
}

/// Which programs the loader chose: where they read, and whether the held chain is set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Variant {
    /// Raw tracepoints (BTF) rather than trace events.
    pub raw: bool,
    /// The held chain (`tick_sched_timer` known).
    pub held: bool,
}

/// Every layout the loader can choose.
pub const VARIANTS: [Variant; 4] = [
    Variant {
        raw: true,
        held: true,
    },
    Variant {
        raw: true,
        held: false,
    },
    Variant {
        raw: false,
        held: true,
    },
    Variant {
        raw: false,
        held: false,
    },
];

impl Variant {
    /// Where the programs of this variant read.
    pub fn source(self) -> Source<'static> {
        static RECORDS: Records = Records;
        if self.raw {
            Source::Raw(&LAYOUT)
        } else {
            Source::Events(&RECORDS)
        }
    }

    /// The setting the programs are built with.
    pub fn setting(self, threshold_ns: u64, tgid: u32) -> Setting {
        Setting {
            threshold_ns,
            hrtimer_wakeup: WAKEUP,
            tick_sched_timer: self.held.then_some(TICK),
            tgid,
        }
    }

    /// The three programs for `s` on `m`, named as the loader names them.
    pub fn build(self, s: &Setting, m: &Maps) -> [(&'static str, Vec<Insn>); 3] {
        build(self.source(), s, m)
    }
}

/// The three programs reading from `source`, for `s` on `m`, named as the loader names them.
pub fn build(source: Source, s: &Setting, m: &Maps) -> [(&'static str, Vec<Insn>); 3] {
    let ev = |name| Event::new(source, name).expect("the event is described");
    let built = |r: Result<Vec<Insn>, crate::BpfError>| r.expect("the program is built");
    [
        (
            "rtscope_start",
            built(on_hrtimer_start(&ev("hrtimer_start"), s, m)),
        ),
        (
            "rtscope_switch",
            built(on_switch(&ev("sched_switch"), s, m)),
        ),
        (
            "rtscope_expire",
            built(on_expire(&ev("hrtimer_expire_entry"), s, m)),
        ),
    ]
}

/// `bpf(cmd, attr)`: the call's result, or its error.
fn bpf<T>(cmd: libc::c_long, attr: &mut T) -> std::io::Result<libc::c_long> {
    // SAFETY: `attr` is a live `#[repr(C)]` value laid out as the kernel reads `cmd`'s part
    // of `union bpf_attr`, its size passed; every pointer in it is to memory the caller keeps
    // alive and large enough for the call.
    let r = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            cmd,
            attr as *mut T,
            std::mem::size_of::<T>() as libc::c_uint,
        )
    };
    if r < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(r)
}

/// `union bpf_attr` as `BPF_MAP_*_ELEM` reads it.
#[repr(C)]
struct ElemAttr {
    map_fd: u32,
    pad: u32,
    key: u64,
    value: u64,
    flags: u64,
}

/// `union bpf_attr` as `BPF_PROG_TEST_RUN` reads it.
#[repr(C)]
#[derive(Default)]
struct TestRunAttr {
    prog_fd: u32,
    retval: u32,
    data_size_in: u32,
    data_size_out: u32,
    data_in: u64,
    data_out: u64,
    repeat: u32,
    duration: u32,
    ctx_size_in: u32,
    ctx_size_out: u32,
    ctx_in: u64,
    ctx_out: u64,
    flags: u32,
    cpu: u32,
    batch_size: u32,
    pad: u32,
}

/// The map's value under `key` (`value.len()` bytes), if there is one.
pub fn lookup(map: &OwnedFd, key: &[u8], value: &mut [u8]) -> bool {
    let mut attr = ElemAttr {
        map_fd: map.as_raw_fd() as u32,
        pad: 0,
        key: key.as_ptr() as u64,
        value: value.as_mut_ptr() as u64,
        flags: 0,
    };
    bpf(BPF_MAP_LOOKUP_ELEM, &mut attr).is_ok()
}

/// Sets the map's value under `key`.
pub fn update(map: &OwnedFd, key: &[u8], value: &[u8]) -> std::io::Result<()> {
    let mut attr = ElemAttr {
        map_fd: map.as_raw_fd() as u32,
        pad: 0,
        key: key.as_ptr() as u64,
        value: value.as_ptr() as u64,
        flags: 0,
    };
    bpf(BPF_MAP_UPDATE_ELEM, &mut attr).map(drop)
}

/// Runs `prog` once on `ctx` in this thread; its return value.
pub fn test_run(prog: &OwnedFd, ctx: &[u8]) -> std::io::Result<u32> {
    test_run_on(prog, ctx, None)
}

/// `BPF_F_TEST_RUN_ON_CPU`: the run on the CPU the attribute names (in an IPI there).
const TEST_RUN_ON_CPU: u32 = 1;

/// Runs `prog` once on `ctx`, in this thread or on `cpu`; its return value.
fn test_run_on(prog: &OwnedFd, ctx: &[u8], cpu: Option<u32>) -> std::io::Result<u32> {
    let mut attr = TestRunAttr {
        prog_fd: prog.as_raw_fd() as u32,
        ctx_size_in: ctx.len() as u32,
        ctx_in: ctx.as_ptr() as u64,
        flags: if cpu.is_some() { TEST_RUN_ON_CPU } else { 0 },
        cpu: cpu.unwrap_or(0),
        ..TestRunAttr::default()
    };
    bpf(BPF_PROG_TEST_RUN, &mut attr)?;
    Ok(attr.retval)
}

/// An online CPU other than `cpu`, if the machine has one.
pub fn another_cpu(cpu: u32) -> Option<u32> {
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").ok()?;
    online
        .trim()
        .split(',')
        .flat_map(|range| {
            let (lo, hi) = range.split_once('-').unwrap_or((range, range));
            lo.parse::<u32>().unwrap_or(0)..=hi.parse::<u32>().unwrap_or(0)
        })
        .find(|&c| c != cpu)
}

/// Whether this host runs raw-tracepoint programs under test (root, `CONFIG_BPF_SYSCALL`,
/// Linux 5.10): a map, a two-instruction program, one run. The reason when it does not.
pub fn available() -> Result<(), String> {
    if !rtscope_testkit::is_root() {
        return Err("needs root: BPF_PROG_TEST_RUN of the late-only programs".into());
    }
    let what = |e: &dyn std::fmt::Display| format!("BPF_PROG_TEST_RUN of a raw tracepoint: {e}");
    sys::create_map("rtscope_probe", MapType::Array, 4, 8, 1).map_err(|e| what(&e))?;
    let code = [insn::alu_imm(Alu::Mov, R0, 7), insn::exit()];
    let prog =
        sys::load_program("rtscope_probe", ProgType::RawTracepoint, &code).map_err(|e| what(&e))?;
    match test_run(&prog, &[0; 8]) {
        Ok(7) => Ok(()),
        Ok(other) => Err(what(&format!("returned {other}, not 7"))),
        Err(e) => Err(what(&e)),
    }
}

/// `CLOCK_MONOTONIC` now (ns): `bpf_ktime_get_ns`'s clock.
pub fn ktime() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a live timespec for the call to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Names the calling thread (at most 15 bytes: the kernel's `comm`).
pub fn name_thread(name: &str) {
    let c = std::ffi::CString::new(name).expect("a name without NUL");
    // SAFETY: PR_SET_NAME reads a NUL-terminated string (the kernel takes its first 15 bytes).
    unsafe { libc::prctl(libc::PR_SET_NAME, c.as_ptr()) };
}

/// This thread's ID.
pub fn tid() -> u32 {
    // SAFETY: gettid has no preconditions and cannot fail.
    unsafe { libc::syscall(libc::SYS_gettid) as u32 }
}

/// Pins the calling thread to the CPU it runs on; that CPU.
pub(crate) fn pin() -> u32 {
    // SAFETY: sched_getcpu has no preconditions.
    let cpu = unsafe { libc::sched_getcpu() }.max(0) as usize;
    // SAFETY: a zeroed cpu_set_t is an empty set; CPU_SET writes within it (cpu < 1024 on the
    // hosts the tests run on, checked by the call's result) and sched_setaffinity reads it.
    let ok = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
    };
    assert!(
        ok,
        "pinning to CPU {cpu}: {}",
        std::io::Error::last_os_error()
    );
    cpu as u32
}

/// The maps as the loader creates them (`Programs::start`), and a second handle on the ring.
fn maps() -> (Maps, OwnedFd) {
    let maps = Maps::create().expect("the maps");
    let ring = maps.ring.try_clone().expect("dup");
    (maps, ring)
}

/// The synthetic kernel objects: an array map's one value, its address, and this copy of it.
pub(crate) struct Objects {
    map: OwnedFd,
    /// The value's address in the kernel.
    pub(crate) addr: u64,
    bytes: Vec<u8>,
}

impl Objects {
    /// The map, and its value's address learnt by a program that stores it there.
    pub(crate) fn new() -> Objects {
        let map = sys::create_map("rtscope_objs", MapType::Array, 4, OBJECTS as u32, 1)
            .expect("the objects' map");
        let mut code = vec![insn::store_imm(Size::W, R10, -4, 0)];
        code.extend(insn::map_fd(R1, map.as_raw_fd()));
        code.extend([
            insn::alu_reg(Alu::Mov, R2, R10),
            insn::alu_imm(Alu::Add, R2, -4),
            insn::call(1),
            insn::jump_imm(insn::Cond::Eq, R0, 0, 1),
            insn::store(Size::Dw, R0, 0, R0),
            insn::alu_imm(Alu::Mov, R0, 0),
            insn::exit(),
        ]);
        let prog = sys::load_program("rtscope_addr", ProgType::RawTracepoint, &code)
            .expect("the address program");
        test_run(&prog, &[0; 8]).expect("the address program's run");
        let mut bytes = vec![0u8; OBJECTS];
        assert!(lookup(&map, &0u32.to_le_bytes(), &mut bytes));
        let addr = u64::from_le_bytes(bytes[..8].try_into().unwrap());
        assert!(addr != 0, "the objects' address");
        Objects { map, addr, bytes }
    }

    /// Writes `data` at `at` in the value, and the value to the map.
    pub(crate) fn put(&mut self, at: usize, data: &[u8]) {
        self.bytes[at..at + data.len()].copy_from_slice(data);
        update(&self.map, &0u32.to_le_bytes(), &self.bytes).expect("the objects' update");
    }
}

/// `name` as a task's `comm`: 16 bytes, NUL-padded.
fn comm(name: &str) -> [u8; 16] {
    let mut c = [0u8; 16];
    for (o, b) in c.iter_mut().zip(name.bytes().take(15)) {
        *o = b;
    }
    c
}

/// Writes `v` at `at` in a context.
fn put(ctx: &mut Ctx, at: usize, v: &[u8]) {
    ctx[at..at + v.len()].copy_from_slice(v);
}

/// One variant's programs on their maps, in a thread pinned to its CPU.
pub struct Rig {
    maps: Maps,
    ring: RingBuf,
    objects: Option<Objects>,
    /// Where the raw tracepoints' objects have their fields.
    layout: Layout,
    progs: [OwnedFd; 3],
    /// The CPU the thread runs on.
    pub cpu: u32,
    /// The calling thread (the measured thread the cases follow).
    pub tid: u32,
}

impl Rig {
    /// The programs of `v` built for `threshold_ns` and this process, loaded on new maps. The
    /// thread is pinned and named `rtscope-m0`.
    pub fn new(v: Variant, threshold_ns: u64) -> Rig {
        Rig::for_process(v, threshold_ns, std::process::id())
    }

    /// As [`Rig::new`], built for the process `tgid`.
    pub fn for_process(v: Variant, threshold_ns: u64, tgid: u32) -> Rig {
        Rig::make(v, threshold_ns, tgid, LAYOUT)
    }

    /// As [`Rig::new`] on raw tracepoints whose arguments and objects are at `layout`'s
    /// offsets (this kernel's, from its BTF); the task's fields must be within 16 KiB.
    pub fn with_layout(held: bool, threshold_ns: u64, layout: Layout) -> Rig {
        let v = Variant { raw: true, held };
        Rig::make(v, threshold_ns, std::process::id(), layout)
    }

    fn make(v: Variant, threshold_ns: u64, tgid: u32, layout: Layout) -> Rig {
        let cpu = pin();
        name_thread("rtscope-m0");
        let (maps, ring) = maps();
        let s = v.setting(threshold_ns, tgid);
        let source = if v.raw {
            Source::Raw(&layout)
        } else {
            v.source()
        };
        let progs = build(source, &s, &maps).map(|(name, code)| {
            if !v.raw {
                // The type the loader gives it, for the verifier's rules of that type.
                sys::load_program(name, ProgType::Tracepoint, &code)
                    .unwrap_or_else(|e| panic!("{name} as a tracepoint program: {e}"));
            }
            sys::load_program(name, ProgType::RawTracepoint, &code)
                .unwrap_or_else(|e| panic!("{name} as a raw tracepoint program: {e}"))
        });
        Rig {
            maps,
            ring: RingBuf::new(ring, RING_BYTES).expect("the ring's mapping"),
            objects: v.raw.then(Objects::new),
            layout,
            progs,
            cpu,
            tid: tid(),
        }
    }

    fn run(&self, i: usize, ctx: &Ctx) {
        self.run_on(i, ctx, None);
    }

    fn run_on(&self, i: usize, ctx: &Ctx, cpu: Option<u32>) {
        let r = test_run_on(&self.progs[i], ctx, cpu).expect("BPF_PROG_TEST_RUN");
        assert_eq!(r, 0, "a program's return value");
    }

    /// The timer's key in the maps (its address).
    pub fn timer(&self) -> u64 {
        self.objects
            .as_ref()
            .map_or(EVENT_TIMER, |o| o.addr + TIMER as u64)
    }

    /// `hrtimer_start` of the timer, its function and expiry given, in this thread.
    pub fn start(&mut self, function: u64, expires: u64) {
        let l = self.layout;
        let mut ctx = [0u8; 96];
        let timer = self.timer();
        if let Some(o) = self.objects.as_mut() {
            o.put(TIMER + l.timer_function as usize, &function.to_le_bytes());
            o.put(TIMER + l.timer_expires as usize, &expires.to_le_bytes());
            put(&mut ctx, l.start_timer as usize, &timer.to_le_bytes());
        } else {
            put(&mut ctx, 8, &timer.to_le_bytes());
            put(&mut ctx, 16, &function.to_le_bytes());
            put(&mut ctx, 24, &expires.to_le_bytes());
        }
        self.run(0, &ctx);
    }

    /// `sched_switch` into the task `name` of PID `pid`.
    pub fn switch_to(&mut self, name: &str, pid: u32) {
        let l = self.layout;
        let mut ctx = [0u8; 96];
        if let Some(o) = self.objects.as_mut() {
            o.put(TASK + l.task_comm as usize, &comm(name));
            o.put(TASK + l.task_pid as usize, &pid.to_le_bytes());
            let task = o.addr + TASK as u64;
            put(&mut ctx, l.switch_next as usize, &task.to_le_bytes());
        } else {
            put(&mut ctx, 40, &comm(name));
            put(&mut ctx, 56, &pid.to_le_bytes());
        }
        self.run(1, &ctx);
    }

    /// `hrtimer_expire_entry` of the timer with `function`, the interrupt's time `now`.
    pub fn expire(&mut self, function: u64, now: u64) {
        self.expire_on(None, function, now);
    }

    /// As [`Rig::expire`], on `cpu` (`None`: this thread's).
    pub fn expire_on(&mut self, cpu: Option<u32>, function: u64, now: u64) {
        let l = self.layout;
        let mut ctx = [0u8; 96];
        let timer = self.timer();
        if let Some(o) = self.objects.as_mut() {
            o.put(TIMER + l.timer_function as usize, &function.to_le_bytes());
            o.put(NOW, &now.to_le_bytes());
            put(&mut ctx, l.expire_timer as usize, &timer.to_le_bytes());
            put(
                &mut ctx,
                l.expire_now as usize,
                &(o.addr + NOW as u64).to_le_bytes(),
            );
        } else {
            put(&mut ctx, 8, &timer.to_le_bytes());
            put(&mut ctx, 16, &now.to_le_bytes());
            put(&mut ctx, 24, &function.to_le_bytes());
        }
        self.run_on(2, &ctx, cpu);
    }

    /// The switch chain's entry of `pid` (in the thread map, at the index of the thread's
    /// name): its sleep's expiry (0 once used).
    pub fn pid_entry(&self, pid: u32) -> Option<u64> {
        let mut v = [0u8; 16];
        (0..THREADS).find_map(|index| {
            let found = lookup(&self.maps.by_thread, &index.to_le_bytes(), &mut v);
            (found && v[8..12] == pid.to_le_bytes()).then(|| le(&v[..8]))
        })
    }

    /// The timer chain's entry of the timer: its expiry (0 once used) and its thread, in this
    /// CPU's slot when the slot holds the timer, else in the timer map.
    pub fn timer_entry(&self) -> Option<(u64, u64)> {
        let v = self.per_cpu();
        let slot = SLOT as usize;
        if le(&v[slot..slot + 8]) == self.timer() {
            return Some((le(&v[slot + 8..slot + 16]), le(&v[slot + 16..slot + 24])));
        }
        self.timer_map_entry()
            .map(|(expires, pid, _)| (expires, pid))
    }

    /// The timer map's entry of the timer: its expiry (0 once used), its thread and the CPU
    /// that armed it.
    pub fn timer_map_entry(&self) -> Option<(u64, u64, u64)> {
        let mut v = [0u8; 24];
        let found = lookup(&self.maps.by_timer, &self.timer().to_le_bytes(), &mut v);
        found.then(|| (le(&v[..8]), le(&v[8..16]), le(&v[16..])))
    }

    /// This CPU's entry of the per-CPU map, whole.
    fn per_cpu(&self) -> [u8; PER_CPU_VALUE as usize] {
        let mut v = [0u8; PER_CPU_VALUE as usize];
        assert!(lookup(&self.maps.per_cpu, &self.cpu.to_le_bytes(), &mut v));
        v
    }

    /// The held chain's entry of this CPU: when a measured thread was woken (0: none waits)
    /// and its PID.
    pub fn woke(&self) -> (u64, u64) {
        let v = self.per_cpu();
        (le(&v[..8]), le(&v[8..16]))
    }

    /// Puts another timer in this CPU's slot, as another measured thread's `hrtimer_start`
    /// on this CPU would (the held chain's part kept).
    pub fn take_the_slot(&self, timer: u64, expires: u64, pid: u32) {
        let mut v = self.per_cpu();
        let slot = SLOT as usize;
        v[slot..slot + 8].copy_from_slice(&timer.to_le_bytes());
        v[slot + 8..slot + 16].copy_from_slice(&expires.to_le_bytes());
        v[slot + 16..slot + 24].copy_from_slice(&u64::from(pid).to_le_bytes());
        update(&self.maps.per_cpu, &self.cpu.to_le_bytes(), &v).expect("the slot's update");
    }

    /// Fills the timer map with `n` other timers' entries.
    pub fn fill_timer_map(&self, n: u32) {
        for i in 0..u64::from(n) {
            let timer = 0xffff_8880_0000_0000 + i * 64;
            let value = [1u64.to_le_bytes(); 3].concat();
            update(&self.maps.by_timer, &timer.to_le_bytes(), &value)
                .unwrap_or_else(|e| panic!("entry {i}: {e}"));
        }
    }

    /// Whether the kernel says where each program's machine code is (compiled by the JIT).
    pub fn jited(&self) -> [bool; 3] {
        [0, 1, 2].map(|i| sys::jited_range(&self.progs[i]).is_some())
    }

    /// Whether a reader waiting on the ring buffer (an epoll set watching it since before
    /// `f` ran) was woken by what `f` wrote: the kernel's notification, not the data (the
    /// ready list is filled only by the ring's wake-up, and read without waiting).
    pub fn woke_a_reader(&mut self, f: impl FnOnce(&mut Rig)) -> bool {
        // SAFETY: epoll_create1 takes flags only; the descriptor is owned below.
        let ep = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        assert!(
            ep >= 0,
            "epoll_create1: {}",
            std::io::Error::last_os_error()
        );
        // SAFETY: `ep` was just returned by the kernel and nothing else owns it.
        let ep = unsafe { OwnedFd::from_raw_fd(ep) };
        let mut ev = libc::epoll_event {
            events: libc::EPOLLIN as u32,
            u64: 0,
        };
        // SAFETY: both descriptors are open; `ev` is a valid event the kernel copies.
        let added = unsafe {
            libc::epoll_ctl(
                ep.as_raw_fd(),
                libc::EPOLL_CTL_ADD,
                self.maps.ring.as_raw_fd(),
                &mut ev,
            )
        };
        assert_eq!(added, 0, "epoll_ctl: {}", std::io::Error::last_os_error());
        f(self);
        // SAFETY: `ev` has room for the one event asked for; a timeout of 0 never blocks.
        let n = unsafe { libc::epoll_wait(ep.as_raw_fd(), &mut ev, 1, 0) };
        assert!(n >= 0, "epoll_wait: {}", std::io::Error::last_os_error());
        n > 0
    }

    /// The stacks in the ring buffer since the last call.
    pub fn stacks(&mut self) -> Vec<StackRecord> {
        let mut out = Vec::new();
        self.ring
            .drain(|b| out.push(StackRecord::parse(b).expect("a record")));
        out
    }
}

fn le(b: &[u8]) -> u64 {
    u64::from_le_bytes(b.try_into().expect("8 bytes"))
}

/// Whether the kernel compiles the programs (`net.core.bpf_jit_enable`), for the report.
pub fn jit_enabled() -> bool {
    std::fs::read_to_string("/proc/sys/net/core/bpf_jit_enable").is_ok_and(|t| t.trim() != "0")
}

#[test]
fn the_test_run_attribute_has_the_kernels_layout() {
    assert_eq!(std::mem::size_of::<TestRunAttr>(), 80);
    assert_eq!(std::mem::offset_of!(TestRunAttr, ctx_in), 48);
    assert_eq!(std::mem::offset_of!(TestRunAttr, flags), 64);
    assert_eq!(std::mem::size_of::<ElemAttr>(), 32);
}
