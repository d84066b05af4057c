//! rtscope's eBPF programs: the late-only kernel stacks of `--explain-stacks` where the kernel
//! runs BPF programs on trace events (`CONFIG_BPF_EVENTS`, Linux 5.8 for the ring buffer),
//! cheaper on a measured thread's prompt wake-up than the hist triggers of
//! `rtscope_trace::tracefs::late` (BENCHMARKS.md, "What do `--explain`'s kernel stacks cost?").
//!
//! The programs are built at run time ([`insn`], [`asm`]) with the events' field offsets from
//! tracefs, loaded with `bpf(2)` and attached through perf events ([`sys`]); their stacks come
//! through a BPF ring buffer ([`ringbuf`]) as [`StackRecord`]s. Every object is a file
//! descriptor of this process: the kernel detaches and frees them all when it exits, however
//! it exits. Depends on `libc` only.
//!
//! [`recorder`] is the in-kernel flight recorder in progress (issue 68): programs on the raw
//! tracepoints `--explain` records, each event a fixed-size record in a per-CPU ring that
//! user space reads through a mapping.

#![warn(missing_docs)]

pub mod asm;
pub mod btf;
pub mod insn;
pub mod late;
pub mod listing;
pub mod recorder;
pub mod ringbuf;
pub mod sys;

/// Frames a stack holds at most (the hist triggers' `stacktrace` takes as many).
pub const FRAMES: usize = 64;

/// A stack record's size in the ring buffer: the header fields, then the frames.
pub const RECORD: usize = 40 + FRAMES * 8;

/// Why the programs could not be set.
#[derive(Debug, thiserror::Error)]
pub enum BpfError {
    /// A map could not be created (no `CONFIG_BPF_SYSCALL`, no privilege, a kernel older than
    /// the ring buffer).
    #[error("BPF map {name}: {source}")]
    Map {
        /// Which map.
        name: String,
        /// The system call's error.
        source: std::io::Error,
    },
    /// The kernel refused a program.
    #[error("BPF program {name} refused: {source} (verifier: {log})")]
    Refused {
        /// Which program.
        name: String,
        /// The first load's error.
        source: std::io::Error,
        /// The verifier's last lines.
        log: String,
    },
    /// A program could not be attached to its event (no `CONFIG_BPF_EVENTS`).
    #[error("BPF program on {event}: {source}")]
    Attach {
        /// Which program.
        event: String,
        /// The system call's error.
        source: std::io::Error,
    },
    /// An event or a field the programs read is missing or unusable.
    #[error("{0}")]
    Event(String),
    /// The kernel's BTF is missing, unreadable, or lacks a type the raw-tracepoint programs
    /// read.
    #[error("BTF: {0}")]
    Btf(String),
    /// A setting the programs cannot be built for (a ring's length not a power of two).
    #[error("{0}")]
    Setting(String),
    /// A map could not be mapped into the process.
    #[error("mapping BPF map {name}: {source}")]
    Mmap {
        /// Which map.
        name: String,
        /// The system call's error.
        source: std::io::Error,
    },
    /// None of the flight recorder's programs could be attached: each tracepoint's reason.
    #[error("no flight recorder program attached: {0}")]
    NothingAttached(String),
}

/// Where the kernel's trace events are described: each event's ID and its fields' offsets in
/// a record (tracefs `format` files).
pub trait Formats {
    /// The ID of the event `name` (`sched_switch`).
    fn id(&self, name: &str) -> Option<u64>;
    /// The offset of `field` in the records of `event`.
    fn offset(&self, event: &str, field: &str) -> Option<usize>;
}

/// Which chain took a stack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Chain {
    /// At the switch into a late measured thread: the task switched out.
    Switch = 1,
    /// At a late timer interrupt: where it found the CPU.
    Timer = 2,
    /// At the tick while a woken measured thread waits: where it found the CPU.
    Held = 3,
}

impl Chain {
    /// The chain's name (`switch`, `timer`, `held`).
    pub fn name(self) -> &'static str {
        match self {
            Chain::Switch => "switch",
            Chain::Timer => "timer",
            Chain::Held => "held",
        }
    }
}

/// One stack a program took.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StackRecord {
    /// When (`CLOCK_MONOTONIC`, ns: the trace's clock).
    pub ts: u64,
    /// How late the measured thread or its timer was (ns).
    pub lat: u64,
    /// The CPU.
    pub cpu: u32,
    /// The task the stack is of (the CPU's current one).
    pub pid: u32,
    /// The measured thread.
    pub tid: u32,
    /// The chain.
    pub chain: Chain,
    /// Return addresses, innermost first.
    pub frames: Vec<u64>,
}

impl StackRecord {
    /// Decodes a ring buffer record ([`RECORD`] bytes: `ts lat cpu pid tid chain len frames`).
    pub fn parse(b: &[u8]) -> Option<StackRecord> {
        let u64_at = |o: usize| Some(u64::from_le_bytes(b.get(o..o + 8)?.try_into().ok()?));
        let u32_at = |o: usize| Some(u32::from_le_bytes(b.get(o..o + 4)?.try_into().ok()?));
        let chain = match u32_at(28)? {
            1 => Chain::Switch,
            2 => Chain::Timer,
            3 => Chain::Held,
            _ => return None,
        };
        // bpf_get_stack's result: the bytes written, or a negative error.
        let len = (u64_at(32)? as i64).clamp(0, (FRAMES * 8) as i64) as usize;
        let frames = (0..len / 8).filter_map(|i| u64_at(40 + i * 8)).collect();
        Some(StackRecord {
            ts: u64_at(0)?,
            lat: u64_at(8)?,
            cpu: u32_at(16)?,
            pid: u32_at(20)?,
            tid: u32_at(24)?,
            chain,
            frames,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_decodes_with_as_many_frames_as_the_kernel_wrote() {
        let mut b = vec![0u8; RECORD];
        b[0..8].copy_from_slice(&5_000u64.to_le_bytes());
        b[8..16].copy_from_slice(&1_600_000u64.to_le_bytes());
        b[16..20].copy_from_slice(&1u32.to_le_bytes());
        b[20..24].copy_from_slice(&40u32.to_le_bytes());
        b[24..28].copy_from_slice(&7u32.to_le_bytes());
        b[28..32].copy_from_slice(&1u32.to_le_bytes());
        b[32..40].copy_from_slice(&16i64.to_le_bytes());
        b[40..48].copy_from_slice(&0xffff_ffff_8100_0010u64.to_le_bytes());
        b[48..56].copy_from_slice(&0xffff_ffff_8100_0020u64.to_le_bytes());
        let r = StackRecord::parse(&b).unwrap();
        assert_eq!(
            (r.ts, r.lat, r.cpu, r.pid, r.tid),
            (5_000, 1_600_000, 1, 40, 7)
        );
        assert_eq!(r.chain, Chain::Switch);
        assert_eq!(r.frames, [0xffff_ffff_8100_0010, 0xffff_ffff_8100_0020]);
        // An error from bpf_get_stack: no frames; an unknown chain or a short record: none.
        b[32..40].copy_from_slice(&(-14i64).to_le_bytes());
        assert!(StackRecord::parse(&b).unwrap().frames.is_empty());
        b[28..32].copy_from_slice(&9u32.to_le_bytes());
        assert_eq!(StackRecord::parse(&b), None);
        assert_eq!(StackRecord::parse(&b[..20]), None);
    }
}
