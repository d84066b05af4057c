//! The system calls: `bpf(2)` (a map, a program, a raw tracepoint's attachment, a program's
//! place in memory), `perf_event_open(2)` on a trace event with the program attached. Every
//! object is a file descriptor, closed when its owner drops: the kernel then detaches and
//! frees it, so nothing outlives the process, not even after a SIGKILL.

use crate::insn::{encode, Insn};
use crate::BpfError;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

const BPF_MAP_CREATE: libc::c_long = 0;
const BPF_PROG_LOAD: libc::c_long = 5;
const BPF_OBJ_GET_INFO_BY_FD: libc::c_long = 15;
const BPF_RAW_TRACEPOINT_OPEN: libc::c_long = 17;
const PERF_TYPE_TRACEPOINT: u32 = 2;
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 8;
/// `_IOW('$', 8, __u32)`.
const PERF_EVENT_IOC_SET_BPF: libc::c_ulong = 0x4004_2408;
/// `_IO('$', 0)`.
const PERF_EVENT_IOC_ENABLE: libc::c_ulong = 0x2400;
/// The verifier's log when a program is refused (bytes).
const LOG_SIZE: usize = 64 << 10;
/// A license the kernel counts GPL-compatible: `bpf_get_stack` is a GPL-only helper.
const LICENSE: &[u8] = b"Dual MIT/GPL\0";

/// A program type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProgType {
    /// `BPF_PROG_TYPE_TRACEPOINT`: on a trace event, its context the event's record, built
    /// for it by the perf event the program hangs on.
    Tracepoint = 5,
    /// `BPF_PROG_TYPE_RAW_TRACEPOINT` (Linux 4.17): on the tracepoint itself, its context the
    /// tracepoint's arguments as they are passed (no record is built).
    RawTracepoint = 17,
    /// `BPF_PROG_TYPE_TRACING` as `tp_btf` (Linux 5.5): a raw tracepoint whose arguments the
    /// verifier knows by the kernel's BTF, so a field behind a pointer argument is a plain load
    /// (the JIT guards it against a fault), not a `bpf_probe_read_kernel` call. Loaded with
    /// [`load_typed`].
    Tracing = 26,
}

/// `BPF_TRACE_RAW_TP`: a tracing program's expected attach type for a BTF-typed tracepoint.
const TRACE_RAW_TP: u32 = 23;

/// A map type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MapType {
    /// `BPF_MAP_TYPE_HASH`.
    Hash = 1,
    /// `BPF_MAP_TYPE_ARRAY`.
    Array = 2,
    /// `BPF_MAP_TYPE_PERCPU_ARRAY` (Linux 4.6): one copy of each value per CPU.
    PercpuArray = 6,
    /// `BPF_MAP_TYPE_RINGBUF` (Linux 5.8).
    RingBuf = 27,
}

/// `union bpf_attr` as `BPF_MAP_CREATE` reads it (the fields up to `map_name`; the kernel
/// takes a shorter attribute as zeros beyond it).
#[repr(C)]
#[derive(Default)]
struct MapAttr {
    map_type: u32,
    key_size: u32,
    value_size: u32,
    max_entries: u32,
    map_flags: u32,
    inner_map_fd: u32,
    numa_node: u32,
    map_name: [u8; 16],
}

/// `union bpf_attr` as `BPF_PROG_LOAD` reads it, up to `prog_name`.
#[repr(C)]
#[derive(Default)]
struct ProgAttr {
    prog_type: u32,
    insn_cnt: u32,
    insns: u64,
    license: u64,
    log_level: u32,
    log_size: u32,
    log_buf: u64,
    kern_version: u32,
    prog_flags: u32,
    prog_name: [u8; 16],
    prog_ifindex: u32,
    expected_attach_type: u32,
    prog_btf_fd: u32,
    func_info_rec_size: u32,
    func_info: u64,
    func_info_cnt: u32,
    line_info_rec_size: u32,
    line_info: u64,
    line_info_cnt: u32,
    /// The kernel BTF type a tracing program attaches to (`btf_trace_<tracepoint>`).
    attach_btf_id: u32,
    attach_btf_obj_fd: u32,
    pad: u32,
}

/// `union bpf_attr` as `BPF_RAW_TRACEPOINT_OPEN` reads it.
#[repr(C)]
struct RawTpAttr {
    name: u64,
    prog_fd: u32,
    pad: u32,
}

/// `union bpf_attr` as `BPF_OBJ_GET_INFO_BY_FD` reads it.
#[repr(C)]
struct InfoAttr {
    bpf_fd: u32,
    info_len: u32,
    info: u64,
}

/// `struct bpf_prog_info` up to `jited_func_lens` (the kernel takes a shorter one).
#[repr(C)]
#[derive(Default)]
struct ProgInfo {
    before: [u64; 13],
    nr_jited_ksyms: u32,
    nr_jited_func_lens: u32,
    jited_ksyms: u64,
    jited_func_lens: u64,
}

/// `struct perf_event_attr`, its first version (`PERF_ATTR_SIZE_VER0`, 64 bytes).
#[repr(C)]
#[derive(Default)]
struct PerfAttr {
    kind: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    config1: u64,
}

/// `bpf(cmd, attr, size)`: what the call returns (`-1`: the error in `errno`).
fn bpf_call<T>(cmd: libc::c_long, attr: &mut T) -> libc::c_long {
    // SAFETY: `attr` is a live, initialised `#[repr(C)]` value of the layout the kernel reads
    // for `cmd`, and its size is passed; the kernel copies it (and for some commands writes
    // it back within that size) and keeps no pointer to it. Any pointer inside it is to
    // memory the caller keeps alive and writable for the call.
    unsafe {
        libc::syscall(
            libc::SYS_bpf,
            cmd,
            attr as *mut T,
            std::mem::size_of::<T>() as libc::c_uint,
        )
    }
}

/// `bpf(cmd, attr, size)`: a new file descriptor, or the error.
fn bpf<T>(cmd: libc::c_long, mut attr: T) -> std::io::Result<OwnedFd> {
    owned(bpf_call(cmd, &mut attr))
}

/// A file descriptor a system call returned, owned (or the error it reported).
fn owned(fd: libc::c_long) -> std::io::Result<OwnedFd> {
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: the system call returned a new file descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// A name of at most 15 bytes, NUL-padded (`map_name`, `prog_name`).
fn name16(name: &str) -> [u8; 16] {
    let mut out = [0u8; 16];
    for (o, b) in out.iter_mut().zip(name.bytes().take(15)) {
        *o = b;
    }
    out
}

/// `BPF_F_MMAPABLE` (Linux 5.5): an array map's values can be mapped into the process.
pub const F_MMAPABLE: u32 = 1 << 10;

/// Creates a map.
pub fn create_map(
    name: &str,
    kind: MapType,
    key_size: u32,
    value_size: u32,
    max_entries: u32,
) -> Result<OwnedFd, BpfError> {
    create_map_flags(name, kind, key_size, value_size, max_entries, 0)
}

/// Creates a map with `map_flags` (`F_MMAPABLE`).
pub fn create_map_flags(
    name: &str,
    kind: MapType,
    key_size: u32,
    value_size: u32,
    max_entries: u32,
    map_flags: u32,
) -> Result<OwnedFd, BpfError> {
    let attr = MapAttr {
        map_flags,
        map_type: kind as u32,
        key_size,
        value_size,
        max_entries,
        map_name: name16(name),
        ..MapAttr::default()
    };
    bpf(BPF_MAP_CREATE, attr).map_err(|source| BpfError::Map {
        name: name.to_string(),
        source,
    })
}

/// Loads a program of type `kind`; on a refusal, loads it again with the verifier's log and
/// gives its last lines.
pub fn load_program(name: &str, kind: ProgType, insns: &[Insn]) -> Result<OwnedFd, BpfError> {
    load(name, kind, insns, 0)
}

/// Loads a `tp_btf` program ([`ProgType::Tracing`]) for the tracepoint whose BTF typedef
/// (`btf_trace_<tracepoint>`, in the kernel's own BTF) has the ID `btf_id`; attach it with
/// [`attach_typed`].
pub fn load_typed(name: &str, btf_id: u32, insns: &[Insn]) -> Result<OwnedFd, BpfError> {
    load(name, ProgType::Tracing, insns, btf_id)
}

fn load(name: &str, kind: ProgType, insns: &[Insn], btf_id: u32) -> Result<OwnedFd, BpfError> {
    let words = encode(insns);
    let mut attr = ProgAttr {
        prog_type: kind as u32,
        insn_cnt: words.len() as u32,
        insns: words.as_ptr() as u64,
        license: LICENSE.as_ptr() as u64,
        prog_name: name16(name),
        expected_attach_type: if kind == ProgType::Tracing {
            TRACE_RAW_TP
        } else {
            0
        },
        attach_btf_id: btf_id,
        ..ProgAttr::default()
    };
    let first = match owned(bpf_call(BPF_PROG_LOAD, &mut attr)) {
        Ok(fd) => return Ok(fd),
        Err(e) => e,
    };
    let mut log = vec![0u8; LOG_SIZE];
    attr.log_level = 1;
    attr.log_size = LOG_SIZE as u32;
    attr.log_buf = log.as_mut_ptr() as u64;
    let again = owned(bpf_call(BPF_PROG_LOAD, &mut attr));
    let text = String::from_utf8_lossy(&log[..log.iter().position(|&b| b == 0).unwrap_or(0)]);
    let tail: Vec<&str> = text.lines().rev().take(6).collect();
    match again {
        Ok(fd) => Ok(fd),
        Err(_) => Err(BpfError::Refused {
            name: name.to_string(),
            source: first,
            log: tail.into_iter().rev().collect::<Vec<_>>().join(" | "),
        }),
    }
}

/// Attaches a raw-tracepoint program to the tracepoint `name` (`sched_switch`): it then runs
/// on every CPU where the tracepoint fires. The returned file descriptor holds the attachment.
pub fn attach_raw_tracepoint(name: &str, prog: &OwnedFd) -> Result<OwnedFd, BpfError> {
    let err = |source| BpfError::Attach {
        event: name.to_string(),
        source,
    };
    let c_name = std::ffi::CString::new(name)
        .map_err(|_| err(std::io::Error::from(std::io::ErrorKind::InvalidInput)))?;
    let attr = RawTpAttr {
        name: c_name.as_ptr() as u64,
        prog_fd: prog.as_raw_fd() as u32,
        pad: 0,
    };
    bpf(BPF_RAW_TRACEPOINT_OPEN, attr).map_err(err)
}

/// Attaches a `tp_btf` program to the tracepoint it was loaded for (the kernel takes the
/// name from the BTF type given at load; `name` only names it in an error).
pub fn attach_typed(name: &str, prog: &OwnedFd) -> Result<OwnedFd, BpfError> {
    let attr = RawTpAttr {
        name: 0,
        prog_fd: prog.as_raw_fd() as u32,
        pad: 0,
    };
    bpf(BPF_RAW_TRACEPOINT_OPEN, attr).map_err(|source| BpfError::Attach {
        event: name.to_string(),
        source,
    })
}

/// Where the kernel put `prog`'s machine code: its first address and length (bytes). `None`
/// where the kernel does not say (no JIT, or addresses hidden from this process).
pub fn jited_range(prog: &OwnedFd) -> Option<(u64, u32)> {
    let (mut start, mut len) = (0u64, 0u32);
    let mut info = ProgInfo {
        nr_jited_ksyms: 1,
        nr_jited_func_lens: 1,
        jited_ksyms: &mut start as *mut u64 as u64,
        jited_func_lens: &mut len as *mut u32 as u64,
        ..ProgInfo::default()
    };
    let mut attr = InfoAttr {
        bpf_fd: prog.as_raw_fd() as u32,
        info_len: std::mem::size_of::<ProgInfo>() as u32,
        info: &mut info as *mut ProgInfo as u64,
    };
    let ok = bpf_call(BPF_OBJ_GET_INFO_BY_FD, &mut attr) == 0;
    (ok && info.jited_ksyms != 0 && start != 0 && len != 0).then_some((start, len))
}

/// Attaches `prog` to the trace event of ID `id` (its `events/SYSTEM/EVENT/id`) through a
/// perf event: the program then runs on every CPU where the event fires (the kernel keeps
/// a tracepoint's programs with the event, not the perf event's CPU). The returned file
/// descriptor holds the attachment.
pub fn attach_tracepoint(id: u64, prog: &OwnedFd, what: &str) -> Result<OwnedFd, BpfError> {
    let attr = PerfAttr {
        kind: PERF_TYPE_TRACEPOINT,
        size: std::mem::size_of::<PerfAttr>() as u32,
        config: id,
        sample_period: 1,
        wakeup_events: 1,
        ..PerfAttr::default()
    };
    let err = |source| BpfError::Attach {
        event: what.to_string(),
        source,
    };
    // SAFETY: `attr` is a live perf_event_attr of the size it states; pid -1 with CPU 0 is a
    // CPU-wide event, group -1 none.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            &attr as *const PerfAttr,
            -1 as libc::pid_t,
            0 as libc::c_int,
            -1 as libc::c_int,
            PERF_FLAG_FD_CLOEXEC,
        )
    };
    let event = owned(fd).map_err(err)?;
    for (req, arg) in [
        (PERF_EVENT_IOC_SET_BPF, prog.as_raw_fd() as libc::c_ulong),
        (PERF_EVENT_IOC_ENABLE, 0),
    ] {
        // SAFETY: an ioctl on the perf event just opened, with an integer argument.
        if unsafe { libc::ioctl(event.as_raw_fd(), req as _, arg) } < 0 {
            return Err(err(std::io::Error::last_os_error()));
        }
    }
    Ok(event)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_attributes_have_the_kernels_layout() {
        assert_eq!(std::mem::size_of::<MapAttr>(), 44);
        assert_eq!(std::mem::size_of::<ProgAttr>(), 120);
        assert_eq!(std::mem::offset_of!(ProgAttr, expected_attach_type), 68);
        assert_eq!(std::mem::offset_of!(ProgAttr, func_info), 80);
        assert_eq!(std::mem::offset_of!(ProgAttr, attach_btf_id), 108);
        assert_eq!(std::mem::size_of::<PerfAttr>(), 64);
        assert_eq!(std::mem::offset_of!(ProgAttr, log_buf), 32);
        assert_eq!(std::mem::offset_of!(ProgAttr, prog_name), 48);
        assert_eq!(std::mem::offset_of!(PerfAttr, flags), 40);
        assert_eq!(std::mem::size_of::<RawTpAttr>(), 16);
        assert_eq!(std::mem::size_of::<InfoAttr>(), 16);
        assert_eq!(std::mem::offset_of!(ProgInfo, nr_jited_ksyms), 104);
        assert_eq!(std::mem::offset_of!(ProgInfo, jited_func_lens), 120);
        assert_eq!(name16("rtscope_switch_chain"), *b"rtscope_switch_\0");
    }
}
