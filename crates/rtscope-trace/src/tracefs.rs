//! tracefs discovery and the private instance.
//!
//! Only files under `instances/rtscope-<pid>-<n>/` are ever written: the top-level buffer, its
//! tracer, events and options belong to whoever else traces this machine. The instance name
//! carries the owner's PID so a later run removes instances whose owner died (see
//! [`remove_stale`]).

pub mod late;
pub mod observed;

use crate::format::{EventFormat, PageLayout};
use crate::TraceError;
use late::{Late, LateError};
use std::ffi::CString;
use std::fs;
use std::io::ErrorKind;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

/// The trigger written to the instance's `events/sched/sched_switch/trigger`: the stack of a
/// task switched out for a measured thread.
pub const STACK_TRIGGER: &str = "stacktrace if next_comm ~ \"rtscope-[mn]*\" && prev_pid != 0";

/// The trigger written to the instance's `events/sched/sched_waking/trigger`: where the CPU
/// was when a measured thread became runnable, unless it was idle (the stack of the task the
/// waking interrupt found: a preempt-off section, the code that just turned interrupts back
/// on, a thread that went on running).
pub const WAKE_STACK_TRIGGER: &str = "stacktrace if comm ~ \"rtscope-[mn]*\" && common_pid != 0";

/// The events the timerlat tier enables besides the tracer: (system, event) — what rtla's
/// auto-analysis reads (the timerlat tier).
pub const TIMERLAT_EVENTS: [(&str, &str); 6] = [
    ("sched", "sched_switch"),
    ("sched", "sched_waking"),
    ("osnoise", "irq_noise"),
    ("osnoise", "softirq_noise"),
    ("osnoise", "nmi_noise"),
    ("osnoise", "thread_noise"),
];

/// The events that name an interrupt-context handler by its function, enabled with either
/// set where the kernel has them (read by the `handlers` module): an IPI's function call (not in Linux
/// 6.1), a tasklet, a `timer_list` callback. They fire where the
/// handlers run, never on a measured thread's own wake-up path.
pub const HANDLER_EVENTS: [(&str, &str); 6] = [
    ("csd", "csd_function_entry"),
    ("csd", "csd_function_exit"),
    ("irq", "tasklet_entry"),
    ("irq", "tasklet_exit"),
    ("timer", "timer_expire_entry"),
    ("timer", "timer_expire_exit"),
];

/// Where tracefs is usually mounted, in the order tried.
pub const MOUNT_POINTS: [&str; 2] = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];
/// Prefix of the instances rtscope creates.
pub const INSTANCE_PREFIX: &str = "rtscope-";

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> TraceError + '_ {
    move |source| TraceError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// A usable tracefs mount.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tracefs {
    /// Its root (`/sys/kernel/tracing`).
    pub root: PathBuf,
}

impl Tracefs {
    /// Finds tracefs, mounting it on `/sys/kernel/tracing` when that directory is empty.
    /// Fails (with the reason) when there is none, or when instances cannot be created.
    pub fn discover() -> Result<Tracefs, TraceError> {
        for root in MOUNT_POINTS.iter().map(PathBuf::from) {
            if root.join("instances").is_dir() {
                return Tracefs::at(root);
            }
        }
        let first = PathBuf::from(MOUNT_POINTS[0]);
        if first.is_dir() {
            mount_tracefs(&first)?;
            if first.join("instances").is_dir() {
                return Tracefs::at(first);
            }
        }
        Err(TraceError::Unavailable(
            "no tracefs mount with instances/ (kernel without CONFIG_TRACING?)".into(),
        ))
    }

    /// Uses the tracefs mounted at `root`.
    pub fn at(root: PathBuf) -> Result<Tracefs, TraceError> {
        let instances = root.join("instances");
        let meta = fs::metadata(&instances).map_err(io(&instances))?;
        if !meta.is_dir() {
            return Err(TraceError::Unavailable(format!(
                "{} is not a directory",
                instances.display()
            )));
        }
        let c = CString::new(instances.as_os_str().as_bytes())
            .map_err(|_| TraceError::Unavailable("path with NUL".into()))?;
        // SAFETY: `c` is a valid NUL-terminated string that outlives the call.
        if unsafe { libc::access(c.as_ptr(), libc::W_OK) } != 0 {
            return Err(TraceError::Unavailable(format!(
                "{} is not writable (not root, or kernel lockdown)",
                instances.display()
            )));
        }
        Ok(Tracefs { root })
    }

    /// Tracers the kernel offers (`available_tracers`).
    pub fn tracers(&self) -> Vec<String> {
        fs::read_to_string(self.root.join("available_tracers"))
            .map(|s| s.split_whitespace().map(str::to_string).collect())
            .unwrap_or_default()
    }

    /// Whether the timerlat tracer exists (PREEMPT_RT flavours of Debian, Fedora …).
    pub fn has_timerlat(&self) -> bool {
        self.tracers().iter().any(|t| t == "timerlat")
    }

    /// The `format` file of `system/event`, when the event exists.
    pub fn event_format(&self, system: &str, event: &str) -> Option<EventFormat> {
        let p = self
            .root
            .join("events")
            .join(system)
            .join(event)
            .join("format");
        EventFormat::parse(&read_bounded(&p).ok()?).ok()
    }

    /// The page layout (`events/header_page`).
    pub fn page_layout(&self) -> Result<PageLayout, TraceError> {
        PageLayout::parse(&read_bounded(&self.root.join("events/header_page"))?)
    }
}

fn mount_tracefs(at: &Path) -> Result<(), TraceError> {
    let target = CString::new(at.as_os_str().as_bytes())
        .map_err(|_| TraceError::Unavailable("path with NUL".into()))?;
    // SAFETY: all pointers are NUL-terminated strings living across the call; data is null.
    let r = unsafe {
        libc::mount(
            c"nodev".as_ptr(),
            target.as_ptr(),
            c"tracefs".as_ptr(),
            0,
            std::ptr::null(),
        )
    };
    if r != 0 {
        let e = std::io::Error::last_os_error();
        return Err(TraceError::Unavailable(format!(
            "cannot mount tracefs on {}: {e}",
            at.display()
        )));
    }
    Ok(())
}

/// Reads a small tracefs file (at most 64 KiB). The first read asks for the whole bound: some
/// tracefs files (`events/header_page` on 6.18) end the file after a short first read.
pub fn read_bounded(path: &Path) -> Result<String, TraceError> {
    use std::io::Read;
    let mut f = fs::File::open(path).map_err(io(path))?;
    let mut buf = vec![0u8; crate::format::MAX_FORMAT_LEN];
    let mut len = 0;
    while len < buf.len() {
        match f.read(&mut buf[len..]) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(io(path)(e)),
        }
    }
    buf.truncate(len);
    String::from_utf8(buf)
        .map_err(|_| TraceError::Format(format!("{} is not UTF-8", path.display())))
}

/// Writes a tracefs file (truncating, never through a symlink).
pub fn write_file(path: &Path, value: &str) -> Result<(), TraceError> {
    // tracefs files are created by the kernel: a symlink there is not possible, but never
    // follow one anyway.
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .map_err(io(path))?;
    f.write_all(value.as_bytes()).map_err(io(path))
}

/// The tracing_cpumask text for a CPU list (comma-separated 32-bit hex groups, highest first).
pub fn cpumask(cpus: &[usize]) -> String {
    let groups = cpus.iter().max().map_or(1, |m| m / 32 + 1);
    let mut words = vec![0u32; groups];
    for &c in cpus {
        words[c / 32] |= 1 << (c % 32);
    }
    words
        .iter()
        .rev()
        .map(|w| format!("{w:08x}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// Whether a process exists.
pub(crate) fn alive(pid: i32) -> bool {
    // SAFETY: kill with signal 0 only checks existence and permission.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// The owner PID encoded in an instance name `rtscope-<pid>-<n>`.
pub fn owner_of(name: &str) -> Option<i32> {
    name.strip_prefix(INSTANCE_PREFIX)?
        .split('-')
        .next()?
        .parse()
        .ok()
}

/// Removes the instances of rtscope processes that no longer exist; returns their names.
pub fn remove_stale(tfs: &Tracefs) -> Vec<String> {
    let mut removed = Vec::new();
    let Ok(dir) = fs::read_dir(tfs.root.join("instances")) else {
        return removed;
    };
    for entry in dir.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if owner_of(&name).is_none_or(alive) {
            continue;
        }
        late::untrigger(&entry.path());
        if fs::remove_dir(entry.path()).is_ok() {
            removed.push(name);
        }
    }
    removed
}

/// The events of the lean set: (system, event). hrtimer events are added on request.
pub fn lean_events(hrtimer: bool) -> Vec<(&'static str, &'static str)> {
    let mut v = vec![
        ("sched", "sched_switch"),
        ("sched", "sched_waking"),
        ("irq", "irq_handler_entry"),
        ("irq", "irq_handler_exit"),
        ("irq", "softirq_entry"),
        ("irq", "softirq_exit"),
        ("nmi", "nmi_handler"),
        ("ipi", "ipi_entry"),
        ("ipi", "ipi_exit"),
    ];
    for (entry, exit) in [
        ("local_timer_entry", "local_timer_exit"),
        ("reschedule_entry", "reschedule_exit"),
        ("call_function_entry", "call_function_exit"),
        ("call_function_single_entry", "call_function_single_exit"),
        ("irq_work_entry", "irq_work_exit"),
    ] {
        v.push(("irq_vectors", entry));
        v.push(("irq_vectors", exit));
    }
    if hrtimer {
        v.push(("timer", "hrtimer_expire_entry"));
        v.push(("timer", "hrtimer_expire_exit"));
    }
    v
}

/// How the instance is set up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstanceConfig {
    /// CPUs traced (the measured ones).
    pub cpus: Vec<usize>,
    /// Ring-buffer size per traced CPU (KiB).
    pub buffer_kb: usize,
    /// Also trace `hrtimer_expire_entry/exit` (they lengthen interrupts noticeably).
    pub hrtimer_events: bool,
    /// Run the timerlat tracer in the instance with the timerlat tier's events
    /// ([`TIMERLAT_EVENTS`]) instead of the lean set.
    pub timerlat: bool,
    /// Which kernel stacks to take.
    pub stacks: StackChoice,
    /// What the late-only triggers are set for: the threshold (the explain threshold), the
    /// timer functions (from `/proc/kallsyms`), the measured clock, the preemption model.
    pub late: late::Setting,
    /// Read the events' formats but enable none: the eBPF flight recorder records them
    /// (`--explain-recorder ebpf`), the instance only holds what the late-only stacks and
    /// the handlers' names need, at no trace-event cost.
    pub formats_only: bool,
}

/// Which kernel stacks a run asks for (`--explain-stacks`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StackChoice {
    /// None (`off`).
    Off,
    /// At every switch into and waking of a measured thread ([`STACK_TRIGGER`],
    /// [`WAKE_STACK_TRIGGER`]): `noise --explain`, whose loop is switched in only after a gap.
    Every,
    /// Late-only (eBPF programs, or the hist triggers of [`late`]) where the kernel can,
    /// else at every wake-up (`on`).
    On,
    /// Late-only where the kernel can, else none (`auto`).
    Auto,
}

/// Whether the instance takes kernel stacks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stacks {
    /// Not asked for (`--explain-stacks off`).
    Off,
    /// The triggers at every wake-up are set ([`StackChoice::Every`]).
    On,
    /// The late-only stacks are set: their chains as the tier line names them (`switch, timer,
    /// held`) and how they are taken (hist triggers or eBPF programs).
    Late {
        /// The chains, in the tier line's words.
        chains: String,
        /// Hist triggers or eBPF programs.
        mechanism: late::Mechanism,
    },
    /// `on` on a kernel without late-only stacks: the triggers at every wake-up are set; why
    /// not late-only.
    EveryNotLate(String),
    /// Asked for, but this kernel cannot: why, with the fix.
    Unavailable(String),
}

impl Stacks {
    /// Whether a trigger takes stacks.
    pub fn taking(&self) -> bool {
        matches!(
            self,
            Stacks::On | Stacks::Late { .. } | Stacks::EveryNotLate(_)
        )
    }

    /// The tier line's note: which stacks are taken, and why not the ones asked for (`None`:
    /// at every wake-up, as `noise` always does). Off says so: the caller's choice (`measure`'s
    /// default) is stated, not implied.
    pub fn note(&self) -> Option<String> {
        match self {
            Stacks::On => None,
            Stacks::Off => Some("kernel stacks off".into()),
            Stacks::Late { chains, .. } => Some(format!("kernel stacks when late: {chains}")),
            Stacks::EveryNotLate(why) => Some(format!(
                "kernel stacks at every wake-up: late-only stacks unavailable: {why}"
            )),
            Stacks::Unavailable(why) => Some(format!("kernel stacks off: {why}")),
        }
    }
}

/// A private tracefs instance, removed on drop.
#[derive(Debug)]
pub struct Instance {
    /// Its directory.
    pub dir: PathBuf,
    /// The formats of the events enabled (events missing on this kernel are skipped).
    pub formats: Vec<EventFormat>,
    /// The page layout.
    pub layout: PageLayout,
    /// Bytes per page read from `trace_pipe_raw`.
    pub page_size: usize,
    /// The traced CPUs.
    pub cpus: Vec<usize>,
    /// Whether it takes kernel stacks.
    pub stacks: Stacks,
    /// The late-only stacks' synthetic events and triggers, when set (removed with it), and
    /// the tracefs root whose `synthetic_events` defines them.
    late: Option<(PathBuf, Late)>,
}

static SEQ: AtomicU32 = AtomicU32::new(0);

impl Instance {
    /// Creates and starts `instances/rtscope-<pid>-<n>`.
    pub fn create(tfs: &Tracefs, cfg: &InstanceConfig) -> Result<Instance, TraceError> {
        Instance::create_in(tfs, Instance::next_dir(tfs), cfg)
    }

    /// The directory the next instance of this process gets (`instances/rtscope-<pid>-<n>`),
    /// so a reaper can watch it before it exists.
    pub fn next_dir(tfs: &Tracefs) -> PathBuf {
        let n = SEQ.fetch_add(1, Ordering::Relaxed);
        let name = format!("{INSTANCE_PREFIX}{}-{n}", std::process::id());
        tfs.root.join("instances").join(name)
    }

    /// Creates and starts the instance `dir` (from [`Instance::next_dir`]); stale instances of
    /// dead rtscope processes are removed first.
    pub fn create_in(
        tfs: &Tracefs,
        dir: PathBuf,
        cfg: &InstanceConfig,
    ) -> Result<Instance, TraceError> {
        if cfg.cpus.is_empty() {
            return Err(TraceError::Unavailable("no CPU to trace".into()));
        }
        remove_stale(tfs);
        late::remove_stale(tfs, alive);
        fs::create_dir(&dir).map_err(io(&dir))?;
        let mut inst = Instance {
            dir,
            formats: Vec::new(),
            layout: PageLayout::default(),
            page_size: page_size(),
            cpus: cfg.cpus.clone(),
            stacks: Stacks::Off,
            late: None,
        };
        inst.setup(tfs, cfg)?; // on error, drop removes the directory
        Ok(inst)
    }

    fn setup(&mut self, tfs: &Tracefs, cfg: &InstanceConfig) -> Result<(), TraceError> {
        let d = self.dir.clone();
        write_file(&d.join("tracing_on"), "0")?;
        write_file(&d.join("trace_clock"), "mono")?;
        write_file(&d.join("options/overwrite"), "1")?;
        write_file(&d.join("tracing_cpumask"), &cpumask(&cfg.cpus))?;
        write_file(
            &d.join("buffer_size_kb"),
            &cfg.buffer_kb.max(64).to_string(),
        )?;
        if let Ok(s) = read_bounded(&d.join("buffer_subbuf_size_kb")) {
            if let Ok(kb) = s.trim().parse::<usize>() {
                self.page_size = (kb * 1024).clamp(4096, crate::page::MAX_PAGE);
            }
        }
        // CPUs not measured keep only a token buffer.
        let ncpu = fs::read_dir(d.join("per_cpu"))
            .map(|r| r.count())
            .unwrap_or(0);
        for cpu in (0..ncpu).filter(|c| !cfg.cpus.contains(c)) {
            let _ = write_file(&d.join(format!("per_cpu/cpu{cpu}/buffer_size_kb")), "4");
        }
        self.layout = tfs.page_layout()?;
        let events = if cfg.timerlat {
            TIMERLAT_EVENTS.to_vec()
        } else {
            lean_events(cfg.hrtimer_events)
        };
        for (system, event) in events.into_iter().chain(HANDLER_EVENTS) {
            let Some(format) = tfs.event_format(system, event) else {
                continue;
            };
            if !cfg.formats_only {
                write_file(
                    &d.join("events").join(system).join(event).join("enable"),
                    "1",
                )?;
            }
            self.formats.push(format);
        }
        if !self.formats.iter().any(|f| f.name == "sched_switch") {
            return Err(TraceError::Unavailable(
                "the kernel has no sched_switch event".into(),
            ));
        }
        if cfg.timerlat {
            if let Some(f) = tfs.event_format("ftrace", "timerlat") {
                self.formats.push(f);
            }
            write_file(&d.join("current_tracer"), "timerlat")?;
        }
        self.stacks = match cfg.stacks {
            StackChoice::Off => Stacks::Off,
            StackChoice::Every => self.set_stack_trigger(tfs),
            StackChoice::On | StackChoice::Auto => self.set_late_or(tfs, cfg),
        };
        write_file(&d.join("tracing_on"), "1")
    }

    /// Sets [`STACK_TRIGGER`] and [`WAKE_STACK_TRIGGER`] on the instance's own
    /// `sched_switch` and `sched_waking` (removed with the
    /// instance; the top-level events are never touched); says why not where it cannot.
    fn set_stack_trigger(&mut self, tfs: &Tracefs) -> Stacks {
        let Some(format) = tfs.event_format("ftrace", "kernel_stack") else {
            return Stacks::Unavailable(
                "the kernel has no ftrace/kernel_stack event (CONFIG_STACKTRACE); \
                 fix: a kernel built with CONFIG_STACKTRACE=y"
                    .into(),
            );
        };
        for (event, trigger) in [
            ("sched_switch", STACK_TRIGGER),
            ("sched_waking", WAKE_STACK_TRIGGER),
        ] {
            let file = self.dir.join("events/sched").join(event).join("trigger");
            if let Err(e) = write_file(&file, trigger) {
                return Stacks::Unavailable(format!(
                    "the stacktrace trigger was refused ({e}); fix: a kernel with event \
                     triggers (CONFIG_STACKTRACE=y, 3.14 or later), or --explain-stacks off"
                ));
            }
        }
        self.formats.push(format);
        Stacks::On
    }

    /// Sets the late-only triggers ([`late`]); where the kernel cannot, the triggers
    /// at every wake-up (`on`) or none (`auto`), saying why.
    fn set_late_or(&mut self, tfs: &Tracefs, cfg: &InstanceConfig) -> Stacks {
        let why = match self.set_late(tfs, cfg) {
            Ok(chains) => {
                let mechanism = cfg.late.mechanism.clone();
                return Stacks::Late { chains, mechanism };
            }
            Err(why) => why,
        };
        match cfg.stacks {
            StackChoice::On => match self.set_stack_trigger(tfs) {
                Stacks::On => Stacks::EveryNotLate(why.to_string()),
                other => other,
            },
            _ => Stacks::Unavailable(late_unavailable(&why)),
        }
    }

    /// The late-only triggers set, their chains named (the tier line's words); or why not
    /// (every trigger and synthetic event already set is taken back).
    fn set_late(&mut self, tfs: &Tracefs, cfg: &InstanceConfig) -> Result<String, LateError> {
        // With the chains in eBPF nothing is set here (no hist trigger needed).
        if cfg.late.mechanism == late::Mechanism::Triggers {
            if let Some(why) = late::unsupported(tfs) {
                return Err(why.into());
            }
        }
        let format = tfs
            .event_format("ftrace", "kernel_stack")
            .ok_or(LateError::NoKernelStack)?;
        let late = Late::new(&self.dir, &cfg.late).ok_or(LateError::NoEventName)?;
        let set = late.set_up(tfs, &self.dir);
        let described = late.to_string();
        self.late = Some((tfs.root.clone(), late));
        if let Err(e) = set {
            self.unset_late_triggers();
            self.delete_synthetic();
            self.late = None;
            return Err(LateError::Refused(e));
        }
        self.formats.push(format);
        Ok(described)
    }

    /// Removes the late-only triggers (last set first: a variable's readers before the
    /// trigger that sets it); errors ignored (the instance's removal clears them anyway).
    fn unset_late_triggers(&self) {
        let Some((_, late)) = &self.late else {
            return;
        };
        for (file, line) in late.undo(&self.dir) {
            let _ = late::append_file(&file, &line);
        }
    }

    /// Deletes the late-only synthetic events (once no trigger uses them).
    fn delete_synthetic(&self) {
        if let Some((root, late)) = &self.late {
            late::remove(&Tracefs { root: root.clone() }, late);
        }
    }

    /// The `trace_pipe_raw` file of a CPU.
    pub fn pipe_raw(&self, cpu: usize) -> PathBuf {
        self.dir.join(format!("per_cpu/cpu{cpu}/trace_pipe_raw"))
    }

    /// Stops tracing and removes the directory (open `trace_pipe_raw` files must be closed
    /// first, or the kernel refuses with EBUSY).
    pub fn remove(&self) -> Result<(), TraceError> {
        let _ = write_file(&self.dir.join("tracing_on"), "0");
        self.unset_late_triggers();
        let removed = self.remove_dir();
        self.delete_synthetic();
        removed
    }

    fn remove_dir(&self) -> Result<(), TraceError> {
        for _ in 0..50 {
            match fs::remove_dir(&self.dir) {
                Ok(()) => return Ok(()),
                Err(e) if e.kind() == ErrorKind::NotFound => return Ok(()),
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                    std::thread::sleep(std::time::Duration::from_millis(20))
                }
                Err(e) => return Err(io(&self.dir)(e)),
            }
        }
        Err(io(&self.dir)(std::io::Error::from_raw_os_error(
            libc::EBUSY,
        )))
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = self.remove();
    }
}

fn page_size() -> usize {
    // SAFETY: sysconf has no memory-safety preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 {
        p as usize
    } else {
        4096
    }
}

/// The tier line's words where `auto` takes no stack because the kernel cannot take them only
/// when late (`why`).
pub(crate) fn late_unavailable(why: &dyn std::fmt::Display) -> String {
    format!("late-only stacks unavailable: {why}; --explain-stacks on takes them at every wake-up")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpumasks_group_by_32() {
        assert_eq!(cpumask(&[1]), "00000002");
        assert_eq!(cpumask(&[0, 3]), "00000009");
        assert_eq!(cpumask(&[33]), "00000002,00000000");
    }

    #[test]
    fn owners_come_from_instance_names() {
        assert_eq!(owner_of("rtscope-4711-0"), Some(4711));
        assert_eq!(owner_of("rtla-4711"), None);
        assert_eq!(owner_of("rtscope-x-0"), None);
    }

    #[test]
    fn the_lean_set_has_hrtimers_only_on_request() {
        assert!(!lean_events(false)
            .iter()
            .any(|e| e.1.starts_with("hrtimer")));
        assert!(lean_events(true)
            .iter()
            .any(|e| e.1 == "hrtimer_expire_entry"));
        assert!(lean_events(false).contains(&("irq_vectors", "local_timer_entry")));
    }
}
