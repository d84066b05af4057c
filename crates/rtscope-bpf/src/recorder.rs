//! The in-kernel flight recorder (issue 68; `--explain-recorder ebpf`, opt-in):
//! eBPF programs on the raw tracepoints behind the 23 trace events `--explain`'s tracefs
//! recorder enables, each appending one fixed-size record per event to a ring per CPU kept
//! in kernel memory, read by user space through a mapping, with no system call, when a spike
//! asks for its window ([`Recorder::window`]).
//!
//! # What a record holds
//!
//! 32 bytes, little-endian ([`RECORD`]; the byte order of x86-64 and arm64):
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 8 | time, `bpf_ktime_get_ns` (`CLOCK_MONOTONIC`, the trace's clock) |
//! | 8 | 4 | sequence number: the record's index in its CPU's sequence plus one (low 32 bits), written last |
//! | 12 | 1 | kind (`sched_switch` 1, `sched_waking` 2, `irq_handler_entry`/`exit` 3/4, `softirq_*` 5/6, `tasklet_*` 7/8, `irq_vectors` `*_entry`/`*_exit` 9/10, `nmi_handler` 11, `csd_function_*` 12/13, `timer_expire_*` 14/15) |
//! | 13 | 1 | flag: the switch's `preempt`; a vector's index in [`Vector::ALL`] |
//! | 16 | 16 | the kind's fields, below; zeros where it has none |
//!
//! Only the fields the analysis reads: **switch** prev PID (16, u32), next PID (20, u32), the
//! state the switch saw (24, u32, as the tracepoint passes it: decoded as the trace event's
//! `prev_state`, [`record::report_state`]), prev and next priority (28, 29, the low byte of
//! `task_struct.prio`); **waking** PID (16), priority (24, a byte); **irq_handler** the IRQ
//! (16); **softirq** the vector (16); **irq_vectors** the vector's number (16); **tasklet**,
//! **csd** the function (16, u64); **nmi_handler** the handler (16) and its duration (24);
//! **timer_expire_entry** the `timer_list`'s function (16) and the timer (24),
//! **timer_expire_exit** the timer (24). The tasks' names are not recorded (16 bytes each):
//! the reader names PIDs from `/proc` as it reads.
//!
//! The programs read the arguments from the raw tracepoint's context at the places the
//! kernel's BTF gives (`__probestub_<tracepoint>`'s or the event class's prototype), and the
//! tasks' PIDs and priorities and the timer's function at the fields' BTF offsets, as the
//! late-only stack programs do ([`crate::late`]). Where the BTF has the tracepoint's probe
//! type (`btf_trace_<tracepoint>`, Linux 5.5) the program is a `tp_btf` one and those fields
//! are plain loads the verifier checks against the types ([`Reads::Typed`]); else, or where
//! the kernel refuses it, a raw tracepoint's program reads them with
//! `bpf_probe_read_kernel` ([`Reads::Probe`]; [`Recorder::typed`] counts the first). A
//! tracepoint this kernel lacks (the `irq_vectors` on arm64) or whose arguments BTF does not
//! describe as read is left out and named ([`Recorder::missing`]).
//!
//! # The ring, and why this map
//!
//! One `BPF_MAP_TYPE_ARRAY` with `BPF_F_MMAPABLE` (Linux 5.5), an entry per possible CPU,
//! indexed by `bpf_get_smp_processor_id()`: the programs find their CPU's ring with one
//! lookup the verifier inlines, and user space maps the whole array read-only once and reads
//! any CPU's ring as memory, with no system call per read. A `BPF_MAP_TYPE_PERCPU_ARRAY`
//! would cost the programs the same, but user space could read it only by a lookup system call
//! that copies every CPU's value (here 128 KiB each) to read one. A BPF ring buffer
//! (`BPF_MAP_TYPE_RINGBUF`) is a queue a consumer must drain, not a history that overwrites
//! its oldest records; `bpf_perf_event_output` likewise.
//!
//! Each CPU's entry is a 64-byte header, the head (u64 at 0: how many records were ever
//! reserved on that CPU), then [`Setting::records`] records (4,096 by default: 128 KiB +
//! 64 B per CPU, about 80 ms of history at 50,000 events/s on one CPU). A program takes its
//! slot with an atomic fetch-add of the head (Linux 5.12; a program that interrupts another
//! on the same CPU, an interrupt's during a switch's, takes the next slot, never the same),
//! writes the record and its sequence number last: a plain store on x86-64, whose stores
//! other CPUs see in order; an atomic exchange (a barrier) elsewhere ([`Publish`]).
//!
//! The work per event, counted (not timed): 28 instructions (`sched_switch` 54,
//! `sched_waking` 38, `timer_expire_entry` 34, `nmi_handler` 30; the listings are in
//! `tests/snapshots/recorder.txt`) with two helper calls (the time, the CPU), one map lookup
//! (inlined by the verifier), one atomic add and 5 to 9 stores; the fields behind the
//! arguments four times on a switch (the PIDs and priorities), twice on a waking, once on a
//! timer: each a `bpf_probe_read_kernel` call in a raw tracepoint's program, two loads and a
//! store in a `tp_btf` one.
//!
//! # Reading
//!
//! A reader that follows the rings ([`Recorder::since`], `--explain-recorder ebpf`) asks each
//! CPU for its records from the index it read up to: it gets those still in the ring, in index
//! order, and a count of those overwritten before it came (or while it copied them), which
//! it accounts as the tracefs recorder accounts lost events. The ring's length is the
//! caller's ([`Setting::records`]): it must hold what a CPU writes between two reads.
//!
//! [`Recorder::window`] reads the CPU's head, copies the records the ring holds (each
//! record's sequence number by an acquire load before its other fields), reads the head
//! again, and keeps a record only when its sequence number is its index plus one (not
//! one a program is still writing, nor an older one) and no program reserved its slot again
//! while it was copied (its index is not below the second head minus the ring's length). The
//! others are dropped and counted ([`Recorder::torn`]). The records are given oldest first (by
//! time, then index: a program interrupted before its reservation takes a later slot with an
//! earlier time).

mod program;
pub mod record;
mod ring;

pub use program::{Places, Publish, Reads, Want, TRACEPOINTS};
pub use record::{Record, RecordKind, Vector, RECORD};
pub use ring::Since;

use crate::sys::{self, ProgType};
use crate::BpfError;
use ring::Ring;
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

/// Each CPU's header before its records (bytes): the head, padded to a cache line.
pub const HEADER: usize = 64;

/// The records per CPU by default.
pub const RECORDS: u32 = 4096;

/// What the recorder is built for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setting {
    /// Records per CPU: a power of two (the ring's length).
    pub records: u32,
    /// The kernel's BTF.
    pub btf: PathBuf,
}

impl Default for Setting {
    fn default() -> Setting {
        Setting {
            records: RECORDS,
            btf: PathBuf::from(crate::btf::VMLINUX),
        }
    }
}

/// A tracepoint the recorder does not follow (or not as it would first), and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Missing {
    /// The raw tracepoint.
    pub tracepoint: &'static str,
    /// Why (no such tracepoint, BTF without its argument, a refusal).
    pub reason: String,
}

/// The recorder running: its programs attached, its rings mapped.
pub struct Recorder {
    /// The attachments: closed, the programs are detached.
    _links: Vec<OwnedFd>,
    _progs: Vec<OwnedFd>,
    ring: Ring,
    attached: Vec<&'static str>,
    /// The attached tracepoints whose program is a raw one, and why not `tp_btf`.
    untyped: Vec<Missing>,
    missing: Vec<Missing>,
    torn: AtomicU64,
    records: u32,
}

impl Recorder {
    /// Creates the rings, builds a program for each tracepoint with the places the kernel's
    /// BTF gives, loads it and attaches it. A tracepoint that cannot be followed is named in
    /// [`Recorder::missing`]; an error when none can.
    pub fn start(s: &Setting) -> Result<Recorder, BpfError> {
        let bytes = crate::btf::read_bytes(&s.btf)?;
        let specs = crate::btf::with_types(&bytes, |t| {
            let places = program::Btf(t);
            Ok(TRACEPOINTS.map(|(tp, _)| (tp, program::spec(&places, tp), t.trace_type(tp))))
        })?;
        let ring = Ring::new(s.records, crate::late::possible_cpus())?;
        let (mut links, mut progs, mut attached, mut missing) = (vec![], vec![], vec![], vec![]);
        let mut untyped = vec![];
        for (tp, spec, btf_id) in specs {
            let attach = spec.and_then(|spec| {
                let build =
                    |reads| program::program(&spec, ring.fd(), s.records, Publish::NATIVE, reads);
                // A `tp_btf` program where the kernel's BTF types the tracepoint (its reads
                // behind the arguments plain loads), else, or where it is refused, a raw one.
                let as_typed = btf_id.map(|id| {
                    let prog = sys::load_typed(&prog_name(tp), id, &build(Reads::Typed)?)?;
                    Ok::<_, BpfError>((sys::attach_typed(tp, &prog)?, prog))
                });
                let not_typed = match as_typed {
                    Some(Ok((link, prog))) => return Ok((prog, link, None)),
                    Some(Err(e)) => e.to_string(),
                    None => format!("no btf_trace_{tp} type in the kernel's BTF"),
                };
                let raw = build(Reads::Probe)?;
                let prog = sys::load_program(&prog_name(tp), ProgType::RawTracepoint, &raw)?;
                let link = sys::attach_raw_tracepoint(tp, &prog)?;
                Ok((prog, link, Some(not_typed)))
            });
            match attach {
                Ok((prog, link, not_typed)) => {
                    progs.push(prog);
                    links.push(link);
                    attached.push(tp);
                    if let Some(reason) = not_typed {
                        untyped.push(Missing {
                            tracepoint: tp,
                            reason,
                        });
                    }
                }
                Err(e) => missing.push(Missing {
                    tracepoint: tp,
                    reason: e.to_string(),
                }),
            }
        }
        if attached.is_empty() {
            return Err(BpfError::NothingAttached(
                missing
                    .iter()
                    .map(|m| format!("{}: {}", m.tracepoint, m.reason))
                    .collect::<Vec<_>>()
                    .join("; "),
            ));
        }
        Ok(Recorder {
            _links: links,
            _progs: progs,
            ring,
            attached,
            untyped,
            missing,
            torn: AtomicU64::new(0),
            records: s.records,
        })
    }

    /// The tracepoints followed.
    pub fn attached(&self) -> &[&'static str] {
        &self.attached
    }

    /// How many of the tracepoints followed have a BTF-typed (`tp_btf`) program, whose reads
    /// behind the arguments are plain loads; the others' are `bpf_probe_read_kernel` calls.
    pub fn typed(&self) -> usize {
        self.attached.len() - self.untyped.len()
    }

    /// The tracepoints followed by a raw tracepoint's program, each with why not a `tp_btf`
    /// one.
    pub fn untyped(&self) -> &[Missing] {
        &self.untyped
    }

    /// The tracepoints not followed, each with its reason.
    pub fn missing(&self) -> &[Missing] {
        &self.missing
    }

    /// The records of `cpu` from `from_ns` to `to_ns` (inclusive, `CLOCK_MONOTONIC`), oldest
    /// first; records overwritten or being written while read are dropped and counted.
    pub fn window(&self, cpu: u32, from_ns: u64, to_ns: u64) -> Vec<Record> {
        let (records, torn) = self.ring.window(cpu, from_ns, to_ns, &mut || {});
        self.torn.fetch_add(torn, Ordering::Relaxed);
        records
    }

    /// `cpu`'s records from index `next` on ([`Record::index`]), in index order, the index to
    /// ask from next time and how many records were lost since `next` (overwritten before
    /// they were read, or while; [`Since`]): a reader that passes back each `next` it is
    /// given takes every record once, and counts each it missed. A record still being written
    /// at the head ends the batch (it is read next time).
    pub fn since(&self, cpu: u32, next: u64) -> Since {
        self.ring.since(cpu, next, &mut || {})
    }

    /// The records per CPU (the rings' length).
    pub fn records(&self) -> u32 {
        self.records
    }

    /// How many records the windows read so far dropped as torn.
    pub fn torn(&self) -> u64 {
        self.torn.load(Ordering::Relaxed)
    }

    /// How many records `cpu`'s programs reserved since the start (its head).
    pub fn written(&self, cpu: u32) -> u64 {
        self.ring.head(cpu)
    }
}

/// A program's name (15 bytes at most): `rtr_` and the tracepoint's.
fn prog_name(tp: &str) -> String {
    format!("rtr_{tp}")
}

#[cfg(test)]
mod live;
#[cfg(test)]
mod run;
#[cfg(test)]
mod since;
#[cfg(test)]
mod snapshot;
