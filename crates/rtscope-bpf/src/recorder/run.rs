//! The recorder's programs run by the kernel on synthetic raw-tracepoint contexts
//! (`BPF_PROG_TEST_RUN`, the late programs' harness [`crate::late::run::rig`]): each
//! tracepoint's program writes its record into the real map, read back through the real
//! mapping by the reader [`Recorder::window`] uses.

use super::program::{self, Places, Publish, Reads, Want, TRACEPOINTS};
use super::record::{RecordKind, Vector, RECORD};
use super::ring::Ring;
use super::HEADER;
use crate::late::run::rig::{self, Objects};
use crate::sys::{self, ProgType};
use crate::BpfError;
use rtscope_testkit::require_ok;
use std::ops::RangeInclusive;
use std::os::fd::OwnedFd;

/// Places where a synthetic kernel puts the arguments and fields (x86-64 6.18's arguments;
/// the objects' fields anywhere within the objects).
pub(crate) struct Synthetic;

impl Places for Synthetic {
    fn arg(&self, tp: &str, _: &str, param: &str, _: Want) -> Result<i16, BpfError> {
        Ok(match (tp, param) {
            ("sched_switch", "prev") => 8,
            ("sched_switch", "next") => 16,
            ("sched_switch", "prev_state") => 24,
            ("nmi_handler", "delta_ns") => 8,
            ("tasklet_entry" | "tasklet_exit", "func") => 8,
            _ => 0,
        })
    }

    fn field(&self, name: &str, path: &str, _: RangeInclusive<usize>) -> Result<i16, BpfError> {
        match (name, path) {
            ("task_struct", "pid") => Ok(24),
            ("task_struct", "prio") => Ok(8),
            ("timer_list", "function") => Ok(16),
            _ => Err(BpfError::Btf(format!("{name}.{path}"))),
        }
    }
}

/// Where the synthetic objects are in the objects' value.
const PREV: usize = 1024;
const NEXT: usize = 4096;
const TIMER: usize = 256;

/// A context: 12 arguments.
pub(super) type Ctx = [u8; 96];

/// The 23 programs on a ring of `records` per CPU, loaded (not attached), in a pinned thread.
pub(super) struct Rig {
    pub(super) ring: Ring,
    progs: Vec<(&'static str, OwnedFd)>,
    objects: Objects,
    pub(super) cpu: u32,
    /// The objects' fields: `task_struct.pid`, `.prio`, `timer_list.function`.
    fields: [usize; 3],
}

impl Rig {
    pub(super) fn new(records: u32) -> Rig {
        Rig::with(records, Publish::NATIVE, &Synthetic)
    }

    /// The programs built on `places`; a tracepoint they do not describe has none.
    fn with(records: u32, publish: Publish, places: &dyn Places) -> Rig {
        let cpu = rig::pin();
        let ring = Ring::new(records, crate::late::possible_cpus()).expect("the rings");
        let progs = TRACEPOINTS
            .iter()
            .filter_map(|&(tp, _)| {
                let spec = program::spec(places, tp).ok()?;
                let code = program::program(&spec, ring.fd(), records, publish, Reads::Probe)
                    .expect("a program");
                let prog = sys::load_program(&super::prog_name(tp), ProgType::RawTracepoint, &code)
                    .unwrap_or_else(|e| panic!("{tp}: {e}"));
                Some((tp, prog))
            })
            .collect();
        let field = |name, path| {
            let at = places.field(name, path, 0..=8).expect("a field");
            usize::try_from(at).expect("a field's offset")
        };
        let fields = [
            field("task_struct", "pid"),
            field("task_struct", "prio"),
            field("timer_list", "function"),
        ];
        assert!(fields.iter().all(|&f| f < 2000), "{fields:?}");
        Rig {
            ring,
            progs,
            objects: Objects::new(),
            cpu,
            fields,
        }
    }

    pub(super) fn run(&self, tp: &str, ctx: &Ctx) {
        let prog = &self.progs.iter().find(|p| p.0 == tp).expect("a program").1;
        assert_eq!(
            rig::test_run(prog, ctx).expect("BPF_PROG_TEST_RUN"),
            0,
            "{tp}"
        );
    }

    /// A task at `at` in the objects: its PID and priority; its address.
    fn task(&mut self, at: usize, pid: u32, prio: i32) -> u64 {
        self.objects.put(at + self.fields[0], &pid.to_le_bytes());
        self.objects.put(at + self.fields[1], &prio.to_le_bytes());
        self.objects.addr + at as u64
    }

    fn all(&self) -> Vec<super::Record> {
        self.ring.window(self.cpu, 0, u64::MAX, &mut || {}).0
    }
}

pub(super) fn ctx(args: &[u64]) -> Ctx {
    let mut c = [0u8; 96];
    for (i, a) in args.iter().enumerate() {
        c[i * 8..i * 8 + 8].copy_from_slice(&a.to_le_bytes());
    }
    c
}

const FUNC: u64 = 0xffff_ffff_8123_4560;

/// The scheduler's tracepoints' contexts and records: a switch from PID 100 (prio 120) to
/// 200 (prio 49) in three states, and 200's waking.
fn task_cases(r: &mut Rig) -> Vec<(&'static str, Ctx, RecordKind)> {
    let prev = r.task(PREV, 100, 120);
    let next = r.task(NEXT, 200, 49);
    let switch = |prev_state| RecordKind::Switch {
        prev_pid: 100,
        prev_prio: 120,
        prev_state,
        next_pid: 200,
        next_prio: 49,
    };
    let waking = RecordKind::Waking { pid: 200, prio: 49 };
    vec![
        ("sched_switch", ctx(&[0, prev, next, 1]), switch(1)),
        ("sched_switch", ctx(&[1, prev, next, 1]), switch(0x100)),
        ("sched_switch", ctx(&[0, prev, next, 0x402]), switch(0x80)),
        ("sched_waking", ctx(&[next]), waking),
    ]
}

/// Each tracepoint's context and the record it must leave.
fn cases(r: &mut Rig) -> Vec<(&'static str, Ctx, RecordKind)> {
    let mut out = task_cases(r);
    r.objects.put(TIMER + r.fields[2], &FUNC.to_le_bytes());
    let timer = r.objects.addr + TIMER as u64;
    out.extend([
        (
            "irq_handler_entry",
            ctx(&[11, 7]),
            RecordKind::IrqEntry { irq: 11 },
        ),
        (
            "irq_handler_exit",
            ctx(&[11, 7, 1]),
            RecordKind::IrqExit { irq: 11 },
        ),
        (
            "softirq_entry",
            ctx(&[7]),
            RecordKind::SoftirqEntry { vec: 7 },
        ),
        (
            "softirq_exit",
            ctx(&[7]),
            RecordKind::SoftirqExit { vec: 7 },
        ),
        (
            "tasklet_entry",
            ctx(&[5, FUNC]),
            RecordKind::TaskletEntry { func: FUNC },
        ),
        (
            "tasklet_exit",
            ctx(&[5, FUNC]),
            RecordKind::TaskletExit { func: FUNC },
        ),
        (
            "nmi_handler",
            ctx(&[FUNC, 12_345, 1]),
            RecordKind::Nmi {
                handler: FUNC,
                delta_ns: 12_345,
            },
        ),
        (
            "csd_function_entry",
            ctx(&[FUNC, 9]),
            RecordKind::CsdEntry { func: FUNC },
        ),
        (
            "csd_function_exit",
            ctx(&[FUNC, 9]),
            RecordKind::CsdExit { func: FUNC },
        ),
        (
            "timer_expire_entry",
            ctx(&[timer, 3]),
            RecordKind::TimerEntry {
                function: FUNC,
                timer,
            },
        ),
        (
            "timer_expire_exit",
            ctx(&[timer]),
            RecordKind::TimerExit { timer },
        ),
    ]);
    out.extend(vector_cases());
    out
}

/// The `irq_vectors` tracepoints' contexts and records: each vector's number and index.
fn vector_cases() -> Vec<(&'static str, Ctx, RecordKind)> {
    let mut out = Vec::new();
    for (i, (vector, stem)) in Vector::ALL.into_iter().enumerate() {
        let number = 0xec - i as u32;
        let tps: [&'static str; 2] = TRACEPOINTS
            .iter()
            .filter(|t| {
                t.0.strip_prefix(stem)
                    .is_some_and(|r| r == "_entry" || r == "_exit")
            })
            .map(|t| t.0)
            .collect::<Vec<_>>()
            .try_into()
            .expect("an entry and an exit");
        out.push((
            tps[0],
            ctx(&[number.into()]),
            RecordKind::VectorEntry { vector, number },
        ));
        out.push((
            tps[1],
            ctx(&[number.into()]),
            RecordKind::VectorExit { vector, number },
        ));
    }
    out
}

#[test]
fn each_tracepoints_program_writes_its_record() {
    require_ok!(rig::available());
    let mut r = Rig::new(64);
    let cases = cases(&mut r);
    let before = rig::ktime();
    for (tp, c, _) in &cases {
        r.run(tp, c);
    }
    let after = rig::ktime();
    let got = r.all();
    let kinds: Vec<_> = got.iter().map(|g| g.kind).collect();
    let want: Vec<_> = cases.iter().map(|c| c.2).collect();
    assert_eq!(kinds, want);
    for (i, g) in got.iter().enumerate() {
        assert_eq!((g.cpu, g.index), (r.cpu, i as u64));
        assert!(g.ts >= before && g.ts <= after, "{g:?}");
    }
    // Every tracepoint has a case.
    for (tp, _) in TRACEPOINTS {
        assert!(cases.iter().any(|c| c.0 == tp), "{tp}");
    }
    assert_eq!(r.ring.head(r.cpu), cases.len() as u64);
}

/// The programs built with this kernel's BTF (its arguments' places, its `task_struct`'s and
/// `timer_list`'s fields) write the records the synthetic places' do.
#[test]
fn the_programs_built_with_this_kernels_btf_write_the_same_records() {
    require_ok!(rig::available());
    let path = std::path::Path::new(crate::btf::VMLINUX);
    rtscope_testkit::require!(path.exists(), "a kernel with BTF ({})", path.display());
    let bytes = crate::btf::read_bytes(path).expect("this kernel's BTF");
    let mut r = crate::btf::with_types(&bytes, |t| {
        Ok(Rig::with(64, Publish::NATIVE, &program::Btf(t)))
    })
    .expect("the types");
    if cfg!(target_arch = "x86_64") {
        assert_eq!(r.progs.len(), TRACEPOINTS.len());
    }
    let cases: Vec<_> = cases(&mut r)
        .into_iter()
        .filter(|c| r.progs.iter().any(|p| p.0 == c.0))
        .collect();
    for (tp, c, _) in &cases {
        r.run(tp, c);
    }
    let kinds: Vec<_> = r.all().iter().map(|g| g.kind).collect();
    let want: Vec<_> = cases.iter().map(|c| c.2).collect();
    assert_eq!(kinds, want);
}

/// The programs publishing by an atomic exchange (arm64's) load here too and write the same.
#[test]
fn the_exchange_published_programs_write_the_same_records() {
    require_ok!(rig::available());
    for publish in [Publish::Store, Publish::Xchg] {
        let mut r = Rig::with(16, publish, &Synthetic);
        let cases = cases(&mut r);
        for (tp, c, _) in &cases[..8] {
            r.run(tp, c);
        }
        let kinds: Vec<_> = r.all().iter().map(|g| g.kind).collect();
        let want: Vec<_> = cases[..8].iter().map(|c| c.2).collect();
        assert_eq!(kinds, want, "{publish:?}");
    }
}

#[test]
fn the_ring_wraps_and_the_reader_gives_the_last_records_in_order() {
    require_ok!(rig::available());
    let mut r = Rig::new(8);
    let task = r.task(NEXT, 0, 49);
    for pid in 0..27u32 {
        r.objects.put(NEXT + 24, &pid.to_le_bytes());
        r.run("sched_waking", &ctx(&[task]));
    }
    let got = r.all();
    let pids: Vec<_> = got
        .iter()
        .map(|g| match g.kind {
            RecordKind::Waking { pid, .. } => pid,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(pids, (19..27).collect::<Vec<_>>());
    assert_eq!(
        got.iter().map(|g| g.index).collect::<Vec<_>>(),
        (19..27).collect::<Vec<_>>()
    );
    assert!(got.windows(2).all(|w| w[0].ts <= w[1].ts));
    // A window in time: only the records within it.
    let (from, to) = (got[2].ts, got[4].ts);
    let (part, torn) = r.ring.window(r.cpu, from, to, &mut || {});
    assert_eq!(torn, 0);
    assert!(part.iter().all(|g| g.ts >= from && g.ts <= to) && part.len() >= 3);
}

#[test]
fn a_record_overwritten_while_read_or_not_yet_published_is_dropped_and_counted() {
    require_ok!(rig::available());
    let r = Rig::new(8);
    for irq in 0..8u64 {
        r.run("irq_handler_entry", &ctx(&[irq]));
    }
    // Three more records while the reader copies: the three oldest copies are stale.
    let (got, torn) = r.ring.window(r.cpu, 0, u64::MAX, &mut || {
        for irq in 8..11u64 {
            r.run("irq_handler_entry", &ctx(&[irq]));
        }
    });
    let irqs: Vec<_> = got.iter().map(|g| g.index).collect();
    assert_eq!((irqs, torn), ((3..8).collect::<Vec<_>>(), 3));
    // A record whose sequence number is not yet its own (a program still writing it).
    let mut value = vec![0u8; Ring::value_size(r.ring.records())];
    let key = r.cpu.to_le_bytes();
    assert!(rig::lookup(r.ring.map(), &key, &mut value));
    // Index 9 in a ring of 8: slot 1.
    let slot = HEADER + RECORD;
    value[slot + 8..slot + 12].copy_from_slice(&2u32.to_le_bytes());
    rig::update(r.ring.map(), &key, &value).expect("the map's update");
    let (got, torn) = r.ring.window(r.cpu, 0, u64::MAX, &mut || {});
    let idx: Vec<_> = got.iter().map(|g| g.index).collect();
    assert_eq!((idx, torn), (vec![3, 4, 5, 6, 7, 8, 10], 1));
}

#[test]
fn a_ring_not_a_power_of_two_is_refused() {
    let spec = program::spec(&Synthetic, "softirq_entry").unwrap();
    let e = program::program(&spec, 3, 1000, Publish::Store, Reads::Probe).unwrap_err();
    assert!(matches!(e, BpfError::Setting(_)), "{e}");
    assert!(program::spec(&Synthetic, "hrtimer_start").is_err());
    let no_btf = super::Setting {
        btf: "/nonexistent/vmlinux".into(),
        ..super::Setting::default()
    };
    let e = super::Recorder::start(&no_btf).err().expect("no BTF");
    assert!(
        matches!(e, BpfError::Btf(_)) && e.to_string().contains("/nonexistent"),
        "{e}"
    );
    if std::path::Path::new(crate::btf::VMLINUX).exists() {
        let odd = super::Setting {
            records: 1000,
            ..super::Setting::default()
        };
        let e = super::Recorder::start(&odd).err().expect("1000 records");
        assert!(matches!(e, BpfError::Setting(_)), "{e}");
    }
}
