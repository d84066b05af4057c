//! The kernel's own description of its types (BTF: `/sys/kernel/btf/vmlinux`, parsed by the
//! `btfparse` crate): what the late-only stacks' raw-tracepoint programs need to read the
//! tracepoints' arguments without a trace event's record. For each tracepoint the argument's
//! place comes from the prototype of the function the tracepoint's definition makes for BPF
//! programs (`__bpf_trace_sched_switch(void *__data, bool preempt, struct task_struct *prev,
//! struct task_struct *next, …)`), found by the parameter's name and checked for its type, and
//! the fields read through it (`task_struct.comm`, `hrtimer.function`, …) come with their
//! offsets and checked sizes. Anything missing or of another shape is an
//! error: the programs on the trace events' records serve instead.

use crate::BpfError;
use btfparse::{Offset, TypeInformation, TypeVariant};
use std::io::Read;
use std::path::Path;

/// Where the running kernel describes its types.
pub const VMLINUX: &str = "/sys/kernel/btf/vmlinux";

/// The most of a BTF file read (bytes): a distribution kernel's is about 6 MB.
const MAX_BTF: u64 = 64 << 20;

/// What the raw-tracepoint programs read, as offsets: of an argument in the program's context
/// (8 bytes each), or of a field in the kernel object the argument points to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// `sched_switch`: the argument `next` (the task switched in).
    pub switch_next: i16,
    /// `hrtimer_start`: the argument `hrtimer`.
    pub start_timer: i16,
    /// `hrtimer_expire_entry`: the argument `hrtimer`.
    pub expire_timer: i16,
    /// `hrtimer_expire_entry`: the argument `now` (a pointer to the interrupt's time).
    pub expire_now: i16,
    /// `task_struct.comm` (at least 10 bytes: `rtscope-m` and a digit).
    pub task_comm: i16,
    /// `task_struct.pid` (4 bytes).
    pub task_pid: i16,
    /// `hrtimer.function` (a pointer, 8 bytes).
    pub timer_function: i16,
    /// `hrtimer.node.expires` (`ktime_t`, 8 bytes): the expiry the trace event's `expires` gives.
    pub timer_expires: i16,
    /// The BTF IDs of `btf_trace_hrtimer_start`, `btf_trace_sched_switch` and
    /// `btf_trace_hrtimer_expire_entry`, where the kernel's BTF has all three: the programs
    /// can then be `tp_btf` ones, whose reads behind the arguments are plain loads.
    pub typed: Option<[u32; 3]>,
}

impl Layout {
    /// Reads the kernel's BTF at `path` (bounded by [`MAX_BTF`]). Only a regular file is read:
    /// the path is opened without blocking (a FIFO's open would wait for a writer) and a FIFO,
    /// device, directory or socket is refused before any read, so an odd `RTSCOPE_BTF` falls
    /// back to the trace events like any other file that is not BTF.
    pub fn read(path: &Path) -> Result<Layout, BpfError> {
        let bytes =
            read_regular(path).map_err(|e| BpfError::Btf(format!("{}: {e}", path.display())))?;
        Layout::parse(&bytes).map_err(|e| match e {
            BpfError::Btf(why) => BpfError::Btf(format!("{}: {why}", path.display())),
            other => other,
        })
    }

    /// The layout from BTF bytes.
    pub fn parse(bytes: &[u8]) -> Result<Layout, BpfError> {
        let ti = TypeInformation::new(&Bytes(bytes))
            .map_err(|e| BpfError::Btf(format!("not BTF the parser reads: {e:?}")))?;
        let t = Types(&ti);
        let task = t.struct_id("task_struct")?;
        let timer = t.struct_id("hrtimer")?;
        Ok(Layout {
            switch_next: t.arg("sched_switch", "next", Arg::To(task))?,
            start_timer: t.arg("hrtimer_start", "hrtimer", Arg::To(timer))?,
            expire_timer: t.arg("hrtimer_expire_entry", "hrtimer", Arg::To(timer))?,
            expire_now: t.arg("hrtimer_expire_entry", "now", Arg::ToInt(8))?,
            task_comm: t.field(task, "task_struct", "comm", 10..=64)?,
            task_pid: t.field(task, "task_struct", "pid", 4..=4)?,
            timer_function: t.field(timer, "hrtimer", "function", 8..=8)?,
            timer_expires: t.field(timer, "hrtimer", "node.expires", 8..=8)?,
            typed: ["hrtimer_start", "sched_switch", "hrtimer_expire_entry"]
                .map(|tp| t.trace_type(tp))
                .into_iter()
                .collect::<Option<Vec<u32>>>()
                .and_then(|v| v.try_into().ok()),
        })
    }
}

/// The bytes of the regular file at `path`, at most [`MAX_BTF`] of them. Opened with
/// `O_NONBLOCK` (std adds `O_CLOEXEC`) and checked on the open descriptor, so neither the
/// open nor the read can wait on a FIFO or a device.
fn read_regular(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)?;
    let kind = file.metadata()?.file_type();
    if !kind.is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("not a regular file (a {})", kind_name(kind)),
        ));
    }
    let mut bytes = Vec::new();
    file.take(MAX_BTF).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// What a file that is not a regular one is, in words.
fn kind_name(kind: std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if kind.is_dir() {
        "directory"
    } else if kind.is_fifo() {
        "FIFO"
    } else if kind.is_char_device() {
        "character device"
    } else if kind.is_block_device() {
        "block device"
    } else if kind.is_socket() {
        "socket"
    } else {
        "special file"
    }
}

/// A byte slice as the parser reads it.
struct Bytes<'a>(&'a [u8]);

impl btfparse::Readable for Bytes<'_> {
    fn read(&self, offset: u64, buffer: &mut [u8]) -> btfparse::Result<()> {
        let at = usize::try_from(offset).ok();
        match at.and_then(|a| self.0.get(a..a.checked_add(buffer.len())?)) {
            Some(src) => {
                buffer.copy_from_slice(src);
                Ok(())
            }
            None => Err(btfparse::Error::new(
                btfparse::ErrorKind::InvalidOffset,
                "read past the end of the BTF",
            )),
        }
    }
}

/// What an argument must point to.
#[derive(Debug, Clone, Copy)]
enum Arg {
    /// The struct of this type ID.
    To(u32),
    /// An integer of this size (`ktime_t`).
    ToInt(usize),
}

/// What an argument is (the flight recorder's reads, [`Types::param`]).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Shape {
    /// A pointer to the struct of this type ID.
    PtrTo(u32),
    /// A pointer (or a function pointer) of any type.
    Ptr,
    /// An integer (or `bool`) of this size.
    Int(usize),
}

/// The bytes' types, given to `f` (the flight recorder's layout reads its own places).
pub(crate) fn with_types<T>(
    bytes: &[u8],
    f: impl FnOnce(&Types) -> Result<T, BpfError>,
) -> Result<T, BpfError> {
    let ti = TypeInformation::new(&Bytes(bytes))
        .map_err(|e| BpfError::Btf(format!("not BTF the parser reads: {e:?}")))?;
    f(&Types(&ti))
}

/// The bytes of the BTF file at `path`, as [`Layout::read`] reads them.
pub(crate) fn read_bytes(path: &Path) -> Result<Vec<u8>, BpfError> {
    read_regular(path).map_err(|e| BpfError::Btf(format!("{}: {e}", path.display())))
}

/// The parsed types, and the lookups the layout needs.
pub(crate) struct Types<'a>(&'a TypeInformation);

impl Types<'_> {
    /// The type under typedefs and qualifiers.
    fn resolved(&self, mut tid: u32) -> Option<(u32, TypeVariant)> {
        for _ in 0..32 {
            match self.0.from_id(tid)? {
                TypeVariant::Typedef(t) => tid = *t.tid(),
                TypeVariant::Const(t) => tid = *t.tid(),
                TypeVariant::Volatile(t) => tid = *t.tid(),
                TypeVariant::Restrict(t) => tid = *t.tid(),
                TypeVariant::TypeTag(t) => tid = *t.tid(),
                v => return Some((tid, v)),
            }
        }
        None
    }

    /// The prototype's type ID of the function named `name`.
    fn func(&self, name: &str) -> Option<u32> {
        self.0.get().values().find_map(|v| match v {
            TypeVariant::Func(f) if f.name().as_deref() == Some(name) => Some(*f.prototype_tid()),
            _ => None,
        })
    }

    /// The ID of the typedef `btf_trace_<tracepoint>`, the function pointer type of the
    /// tracepoint's BPF probe: a `tp_btf` program is loaded for it ([`crate::sys::load_typed`]).
    pub(crate) fn trace_type(&self, tracepoint: &str) -> Option<u32> {
        let name = format!("btf_trace_{tracepoint}");
        self.0.get().iter().find_map(|(id, v)| match v {
            TypeVariant::Typedef(t) if t.name().as_deref() == Some(name.as_str()) => Some(*id),
            _ => None,
        })
    }

    /// The ID of the struct named `name` (not a forward declaration of it).
    pub(crate) fn struct_id(&self, name: &str) -> Result<u32, BpfError> {
        self.0
            .get()
            .iter()
            .find_map(|(id, v)| match v {
                TypeVariant::Struct(s) if s.name().as_deref() == Some(name) => Some(*id),
                _ => None,
            })
            .ok_or_else(|| BpfError::Btf(format!("no struct {name}")))
    }

    /// The context offset of the tracepoint's argument `param`, checked to point to `to`. The
    /// names are in the prototype of a function the tracepoint's definition makes with the
    /// same parameters (the raw tracepoint's own prototype, `btf_trace_*`, is a function
    /// pointer's: its parameters have no names); its first parameter is the probe's data, not
    /// an argument.
    fn arg(&self, tracepoint: &str, param: &str, to: Arg) -> Result<i16, BpfError> {
        let shape = match to {
            Arg::To(id) => Shape::PtrTo(id),
            Arg::ToInt(size) => Shape::Int(size),
        };
        self.param(tracepoint, &[tracepoint], param, shape, true)
    }

    /// The context offset of the argument `param` of `tracepoint`, found in the prototype of
    /// `__probestub_<tracepoint>` (Linux 6.6), `__bpf_trace_<name>` or the trace event's own
    /// functions for each name of `names` (the tracepoint's, then its class's: a
    /// `DEFINE_EVENT`'s functions are its class's), checked to be of `shape` (`behind`: an
    /// integer shape is what the pointer points to, not the argument itself).
    pub(crate) fn param(
        &self,
        tracepoint: &str,
        names: &[&str],
        param: &str,
        shape: Shape,
        behind: bool,
    ) -> Result<i16, BpfError> {
        let what = format!("the tracepoint {tracepoint}'s argument {param}");
        let miss = |why: &str| BpfError::Btf(format!("{what}: {why}"));
        let stub = format!("__probestub_{tracepoint}");
        let named = std::iter::once(stub)
            .chain(names.iter().flat_map(|n| {
                ["__bpf_trace_", "trace_event_raw_event_", "perf_trace_"].map(|p| format!("{p}{n}"))
            }))
            .find_map(|name| self.func(&name))
            .ok_or_else(|| miss("no function with its prototype"))?;
        let proto = match self.resolved(named) {
            Some((_, TypeVariant::FuncProto(f))) => f,
            _ => return Err(miss("the prototype is not a function's")),
        };
        let params = proto.parameter_list();
        let at = params
            .iter()
            .position(|p| p.name().as_deref() == Some(param))
            .filter(|&i| i >= 1)
            .ok_or_else(|| miss("no such parameter"))?;
        let ty = self.resolved(params[at].tid());
        let pointee = match &ty {
            Some((_, TypeVariant::Ptr(p))) => self.resolved(*p.tid()),
            _ => None,
        };
        let fits = match (shape, behind) {
            (Shape::PtrTo(want), _) => {
                matches!(pointee, Some((id, TypeVariant::Struct(_))) if id == want)
            }
            (Shape::Ptr, _) => matches!(ty, Some((_, TypeVariant::Ptr(_)))),
            (Shape::Int(size), true) => {
                matches!(pointee, Some((_, TypeVariant::Int(i))) if *i.size() == size)
            }
            (Shape::Int(size), false) => match ty {
                Some((_, TypeVariant::Int(i))) => *i.size() == size,
                Some((_, TypeVariant::Enum(e))) => *e.size() == size,
                _ => false,
            },
        };
        if !fits {
            return Err(miss("not of the type read"));
        }
        i16::try_from((at - 1) * 8).map_err(|_| miss("too far in the context"))
    }

    /// The byte offset of `path` in the struct `tid`, its size checked within `size`.
    pub(crate) fn field(
        &self,
        tid: u32,
        name: &str,
        path: &str,
        size: std::ops::RangeInclusive<usize>,
    ) -> Result<i16, BpfError> {
        let miss = |why: String| BpfError::Btf(format!("{name}.{path}: {why}"));
        let (ftid, off) = self
            .0
            .offset_of(tid, path)
            .map_err(|e| miss(format!("{e:?}")))?;
        let Offset::ByteOffset(off) = off else {
            return Err(miss("a bit field".into()));
        };
        let got = self.0.size_of(ftid).map_err(|e| miss(format!("{e:?}")))?;
        if !size.contains(&got) {
            return Err(miss(format!("{got} bytes")));
        }
        i16::try_from(off)
            .ok()
            .filter(|&o| o < i16::MAX - 64)
            .ok_or_else(|| miss(format!("at {off}, too far")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This kernel's BTF, where it has one: the places the programs read are found, and
    /// agree with what the kernel's own trace event formats and headers say of them.
    #[test]
    fn the_running_kernels_btf_gives_the_programs_places() {
        let path = Path::new(VMLINUX);
        if !path.exists() {
            rtscope_testkit::skip_or_fail("a kernel with BTF (/sys/kernel/btf/vmlinux)");
            return;
        }
        let l = Layout::read(path).unwrap();
        // The prototypes: sched_switch(preempt, prev, next, …), hrtimer_start(hrtimer, mode),
        // hrtimer_expire_entry(hrtimer, now).
        assert_eq!(
            (l.switch_next, l.start_timer, l.expire_timer, l.expire_now),
            (16, 0, 0, 8)
        );
        // hrtimer starts with its timerqueue node, whose rb_node comes before expires.
        assert_eq!(l.timer_expires, 24);
        assert!(l.timer_function > l.timer_expires);
        assert!(l.task_comm > l.task_pid && l.task_pid > 0);
        // The kernel's BTF has the tracepoints' probe types (Linux 5.5), all distinct.
        let [a, b, c] = l.typed.expect("btf_trace_* typedefs");
        assert!(a > 0 && a != b && b != c && a != c);
    }

    #[test]
    fn what_is_not_btf_is_refused_with_its_reason() {
        assert!(matches!(Layout::parse(b"not btf"), Err(BpfError::Btf(_))));
        assert!(matches!(Layout::parse(&[]), Err(BpfError::Btf(_))));
        let e = Layout::read(Path::new("/nonexistent/vmlinux")).unwrap_err();
        assert!(e.to_string().contains("/nonexistent/vmlinux"), "{e}");
    }

    /// A FIFO (which no one writes), a directory and a device are refused at once, each named,
    /// instead of blocking in the open or the read.
    #[test]
    fn only_a_regular_file_is_read_as_btf() {
        let dir = std::env::temp_dir().join(format!("rtscope-btf-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join("f");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path; mkfifo reads it only.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        for (path, kind) in [
            (fifo.as_path(), "a FIFO"),
            (dir.as_path(), "a directory"),
            (Path::new("/dev/null"), "a character device"),
        ] {
            let e = Layout::read(path).unwrap_err();
            assert!(matches!(e, BpfError::Btf(_)), "{e:?}");
            let text = e.to_string();
            assert!(text.contains(&path.display().to_string()), "{text}");
            assert!(
                text.contains(&format!("not a regular file ({kind})")),
                "{text}"
            );
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
