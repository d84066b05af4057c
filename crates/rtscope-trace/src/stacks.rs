//! Kernel stacks for spikes: the `stacktrace` trigger the instance sets, finding a spike's
//! stack among its CPU's events, and naming its addresses from `/proc/kallsyms`.
//!
//! The trigger (on the instance's own `sched_switch`, never the top-level one) takes a stack
//! only on a switch into a measured thread (`rtscope-m*`, `rtscope-n*`) from a task other than
//! the idle task. On an isolated, idle measured CPU a wake-up on time comes from the idle task
//! and takes none; a late one waited for a task (a preempt-off or interrupts-off section, a
//! thread of its priority or above), and the kernel writes that task's stack, in its
//! `__schedule`, as a `kernel_stack` entry right after the `sched_switch` record. A measured
//! CPU shared with a load takes one at every wake-up that preempts the load (docs/explain.md).
//!
//! Symbolizing reads `/proc/kallsyms` once (bounded: [`MAX_KALLSYMS`]), on the analysing
//! thread, never in the measured path.

use crate::decode::{Event, Kind};
use crate::model::{Attribution, Spike, Task};
use crate::tracefs::late::TimerFunctions;
use crate::tracefs::Stacks;
use rtscope_explain::model::KernelStack;
use rtscope_explain::stack::MAX_FRAMES;
use std::borrow::Cow;
use std::io::Read;
use std::path::Path;

/// How far before the deadline the waking of a spike's thread is looked for (ns).
const WAKE_SLACK_NS: u64 = 50_000;

/// The most of `/proc/kallsyms` read (bytes): about 15 MB on a distribution kernel with its
/// modules loaded; a larger file is read this far and its later symbols are not named.
pub const MAX_KALLSYMS: u64 = 64 << 20;

/// How long after the switch into the measured thread its stack entry may come (ns): the
/// trigger writes it in the same `__schedule`, interrupts off.
pub const STACK_AFTER_SWITCH_NS: u64 = 200_000;

/// The events without the `kernel_stack` entries (the analyzers read tasks and contexts from
/// events; a stack entry is written in the switched-out task's name after the switch).
pub fn without_stacks(events: &[Event]) -> Cow<'_, [Event]> {
    if events
        .iter()
        .any(|e| matches!(e.kind, Kind::KernelStack { .. }))
    {
        Cow::Owned(
            events
                .iter()
                .filter(|e| !matches!(e.kind, Kind::KernelStack { .. }))
                .cloned()
                .collect(),
        )
    } else {
        Cow::Borrowed(events)
    }
}

/// Whether a task is rtscope's: a measuring thread (`rtscope-m<N>`, `rtscope-n<N>`) or any
/// other thread of an rtscope process (the main thread and the unnamed ones are `rtscope`,
/// the named ones `rtscope-…`), of this process or another measuring beside it. Its stack is
/// never a spike's: a measuring thread's is its own sleep, the others' are the tool's.
pub fn is_rtscope(comm: &str) -> bool {
    comm == "rtscope" || comm.starts_with("rtscope-")
}

/// Whether a task measures rather than interferes: rtscope's ([`is_rtscope`]) or the kernel
/// timerlat tracer's thread (`timerlat/<CPU>`), which the timerlat tier starts on every CPU it
/// explains (and `rtla timerlat` beside a run does too). Its stack is its own way into its
/// sleep (`timerlat_main` → `wait_next_period`), never a spike's cause: beside the hog a
/// rt-amd64 guest's interrupts-off spikes ranked `timerlat_main` first by time (28 Nov 2026)
/// because the stack of `timerlat/1`, switched out around the section, was shown as theirs.
/// Its time on the CPU is still charged to it by name; only its stack is never shown.
pub fn is_measuring(comm: &str) -> bool {
    is_rtscope(comm)
        || comm
            .strip_prefix("timerlat/")
            .is_some_and(|cpu| !cpu.is_empty() && cpu.bytes().all(|b| b.is_ascii_digit()))
}

/// The stack a spike gets, and the task it is of: that of the task charged the most of the
/// spike (`charged`, most first, from the attribution) that has one in the window — where
/// the CPU was when the spike's thread became runnable (its `sched_waking`, from the
/// deadline on) if that task was running, else its stack taken at an interrupt between the
/// waking and the switch (the tick found it holding the CPU), else its stack where it gave
/// its CPU up within the spike (to the measured thread or another measured one), else any
/// other stack of it taken inside the spike. Never the idle task's, the spike's own thread's
/// (its own way into its sleep) or a measuring thread's ([`is_measuring`]), and never a task's
/// the attribution charged nothing. `None` when none was taken (the CPU was idle and the
/// thread came from the idle task, or the spike is an interrupt's on an idle CPU).
pub fn find(events: &[Event], spike: &Spike, charged: &[Task]) -> Option<(Task, Vec<u64>)> {
    let within: Vec<(usize, &Event)> = events
        .iter()
        .enumerate()
        .take_while(|(_, e)| e.ts <= spike.wakeup_ns)
        .filter(|(_, e)| e.ts + WAKE_SLACK_NS >= spike.deadline_ns)
        .collect();
    let mut tasks = crate::decode::Tasks::default();
    events.iter().for_each(|e| tasks.learn(e));
    // A task no switch or waking of the window named (one running since before it) is
    // named as the attribution named it.
    for t in charged {
        tasks.name(t.pid, crate::decode::Comm::new(t.comm.as_bytes()));
    }
    let at_wake = within.iter().rev().find_map(|&(i, e)| match e.kind {
        Kind::Waking { pid, .. } if pid == spike.tid && e.pid != 0 => Some((i, e.pid)),
        _ => None,
    });
    let shown = |t: &Task| {
        t.pid != 0
            && t.pid != spike.tid
            && !is_measuring(&t.comm)
            && !is_measuring(&tasks.task(t.pid).comm)
    };
    charged.iter().filter(|t| shown(t)).find_map(|t| {
        let pid = t.pid;
        let woke = at_wake
            .filter(|w| w.1 == pid)
            .and_then(|(i, _)| stack_of(events, i, pid).or_else(|| stack_before(events, i, pid)));
        // A late-only trigger's stack at an interrupt between the waking and the switch (the
        // scheduler tick found the task holding the CPU).
        let held = || {
            within.iter().find_map(|&(i, e)| match &e.kind {
                Kind::KernelStack { frames } if e.pid == pid && loose(events, i) => {
                    Some(frames.clone())
                }
                _ => None,
            })
        };
        let switched = || {
            within.iter().rev().find_map(|&(i, e)| match &e.kind {
                Kind::Switch { prev_pid, .. } if *prev_pid == pid => stack_of(events, i, pid),
                _ => None,
            })
        };
        let any = || {
            within.iter().rev().find_map(|&(_, e)| match &e.kind {
                Kind::KernelStack { frames } if e.pid == pid => Some(frames.clone()),
                _ => None,
            })
        };
        let frames = woke.or_else(held).or_else(switched).or_else(any)?;
        Some((tasks.task(pid), frames))
    })
}

/// The tasks `a`'s charges name ([`crate::model::Category::named_task`]: a thread, a task
/// holding the CPU, the task that ran while the timer interrupt was late), most charged
/// first, each once.
pub fn charged(a: &Attribution) -> Vec<Task> {
    let mut v: Vec<&crate::model::Charge> = a.charges.iter().collect();
    v.sort_by_key(|c| std::cmp::Reverse(c.ns));
    let mut tasks: Vec<Task> = Vec::new();
    for t in v.iter().filter_map(|c| c.category.named_task()) {
        if tasks.iter().all(|k| k.pid != t.pid) {
            tasks.push(t.clone());
        }
    }
    tasks
}

/// The stack entry a trigger wrote right after the record at index `i`, in the name of `pid`
/// (the task switched out, or the one the waking interrupted): before any other switch and
/// within [`STACK_AFTER_SWITCH_NS`].
fn stack_of(events: &[Event], i: usize, pid: i32) -> Option<Vec<u64>> {
    let ts = events.get(i)?.ts;
    events[i + 1..]
        .iter()
        .take_while(|e| e.ts <= ts + STACK_AFTER_SWITCH_NS)
        .take_while(|e| !matches!(e.kind, Kind::Switch { .. }))
        .find_map(|e| match &e.kind {
            Kind::KernelStack { frames } if e.pid == pid => Some(frames.clone()),
            _ => None,
        })
}

/// The stack a late-only trigger took at the timer interrupt that woke the thread, just before
/// the waking at index `i` ([`crate::late`]: the interrupt's `hrtimer_expire_entry` comes
/// first), in the name of `pid` (the task the interrupt found): within
/// [`STACK_AFTER_SWITCH_NS`], no switch or other waking between, and not a stack of an
/// earlier record.
fn stack_before(events: &[Event], i: usize, pid: i32) -> Option<Vec<u64>> {
    let ts = events.get(i)?.ts;
    (0..i)
        .rev()
        .take_while(|&j| events[j].ts + STACK_AFTER_SWITCH_NS >= ts)
        .take_while(|&j| !matches!(events[j].kind, Kind::Switch { .. } | Kind::Waking { .. }))
        .find_map(|j| match &events[j].kind {
            Kind::KernelStack { frames } if events[j].pid == pid && loose(events, j) => {
                Some(frames.clone())
            }
            _ => None,
        })
}

/// Whether the stack entry at `i` belongs to no record before it: the triggers at every
/// wake-up write theirs right after a waking of a measured thread or a switch into one, and
/// the late-only switch chain right after a switch into one; any other stack is a late-only
/// trigger's, taken at an interrupt (the timerlat tier records no interrupt entry, so the
/// record before it can be a switch long before). A trigger writes its entry within
/// [`STACK_AFTER_SWITCH_NS`] of its record, so a stack later than that after a waking or a
/// switch is loose too (an eBPF program's held stack, `bpf_stacks`, comes with no
/// interrupt entry of its own). The first event of a window has no known record before it:
/// not loose.
fn loose(events: &[Event], i: usize) -> bool {
    let measured =
        |c: &crate::decode::Comm| c.starts_with(b"rtscope-m") || c.starts_with(b"rtscope-n");
    i.checked_sub(1).is_some_and(|j| {
        let long_after = events[i].ts > events[j].ts + STACK_AFTER_SWITCH_NS;
        match &events[j].kind {
            Kind::Waking { comm, .. } => !measured(comm) || long_after,
            Kind::Switch { next_comm, .. } => !measured(next_comm) || long_after,
            Kind::KernelStack { .. } => false,
            _ => true,
        }
    })
}

/// What a recorder names its spikes' stacks with: whether they get one, and the symbols.
#[derive(Debug, Clone)]
pub struct Namer {
    state: Stacks,
    kallsyms: Kallsyms,
}

impl Namer {
    /// Reads `/proc/kallsyms` when stacks are `asked` for (before the instance: without
    /// symbols no trigger is set).
    pub fn load(asked: bool) -> Namer {
        let (state, kallsyms) = match asked {
            false => (Stacks::Off, Kallsyms::default()),
            true => match Kallsyms::read(Path::new("/proc/kallsyms")) {
                Ok(k) => (Stacks::On, k),
                Err(e) => (
                    Stacks::Unavailable(format!("no kernel symbols: {e}")),
                    Kallsyms::default(),
                ),
            },
        };
        Namer { state, kallsyms }
    }

    /// No stacks, for the reason given (the symbols are not read).
    pub fn unavailable(reason: String) -> Namer {
        Namer {
            state: Stacks::Unavailable(reason),
            kallsyms: Kallsyms::default(),
        }
    }

    /// Whether the instance should set the trigger.
    pub fn wants_trigger(&self) -> bool {
        self.state == Stacks::On
    }

    /// The timer functions the late-only triggers filter on, from the symbols.
    pub fn timer_functions(&self) -> TimerFunctions {
        TimerFunctions {
            hrtimer_wakeup: self.kallsyms.address("hrtimer_wakeup"),
            // Renamed `tick_nohz_highres_handler` in 6.8 and `tick_nohz_handler` in 6.10.
            tick_sched_timer: [
                "tick_sched_timer",
                "tick_nohz_highres_handler",
                "tick_nohz_handler",
            ]
            .iter()
            .find_map(|name| self.kallsyms.address(name)),
        }
    }

    /// Takes the instance's state (the trigger set, or why not) unless the symbols failed.
    pub fn settle(&mut self, instance: &Stacks) {
        if self.state == Stacks::On {
            self.state = instance.clone();
        }
    }

    /// Whether spikes get stacks, or why not.
    pub fn state(&self) -> &Stacks {
        &self.state
    }

    /// The symbols read for the stacks (none when no stack is taken).
    pub fn symbols(&self) -> &Kallsyms {
        &self.kallsyms
    }

    /// Gives `a` the stack [`find`] finds in `events` (its CPU's, around the spike) for the
    /// tasks its charges name, most charged first, named.
    pub fn attach(&self, a: &mut Attribution, events: &[Event]) {
        if !self.state.taking() {
            return;
        }
        a.stack = find(events, &a.spike, &charged(a))
            .map(|(task, addrs)| self.kallsyms.stack(task, &addrs));
    }
}

/// The kernel's symbols: start addresses and names (`name [module]` for a module's), sorted.
#[derive(Debug, Clone, Default)]
pub struct Kallsyms {
    syms: Vec<(u64, String)>,
}

/// Why addresses cannot be named.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoSymbols {
    /// The file could not be read.
    Unreadable(String),
    /// Every address is 0: `kptr_restrict` hides them from this process.
    Hidden,
}

impl std::fmt::Display for NoSymbols {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NoSymbols::Unreadable(e) => write!(f, "/proc/kallsyms unreadable: {e}"),
            NoSymbols::Hidden => f.write_str(
                "/proc/kallsyms shows no addresses (kptr_restrict); \
                 fix: sysctl kernel.kptr_restrict=1 and run as root",
            ),
        }
    }
}

impl Kallsyms {
    /// Reads `path` (`/proc/kallsyms`), at most [`MAX_KALLSYMS`] bytes.
    pub fn read(path: &Path) -> Result<Kallsyms, NoSymbols> {
        let mut text = String::new();
        std::fs::File::open(path)
            .and_then(|f| f.take(MAX_KALLSYMS).read_to_string(&mut text))
            .map_err(|e| NoSymbols::Unreadable(e.to_string()))?;
        let k = Kallsyms::parse(&text);
        if k.syms.is_empty() {
            return Err(NoSymbols::Hidden);
        }
        Ok(k)
    }

    /// Parses the text of `/proc/kallsyms` (`ffffffff81000000 T _stext`, `… t fn\t[mod]`):
    /// text symbols only (`t`, `T`, `w`, `W`), zero addresses and mapping symbols (`$x`)
    /// skipped; names at most 128 bytes, escaped when not printable.
    pub fn parse(text: &str) -> Kallsyms {
        let mut syms: Vec<(u64, String)> = text
            .lines()
            .filter_map(|l| {
                let mut it = l.split_whitespace();
                let addr = u64::from_str_radix(it.next()?, 16).ok()?;
                let kind = it.next()?;
                let name = it.next()?;
                // A mapping symbol (`$x`, `$d`: where A64 code or data starts, arm64 ELF) is
                // no function: a module's on arm64 6.1 stands inside its functions, and a
                // stack of `noisy_hold_irqs_off` read `$x [noisy]` (rt-arm64 guest, 29 Nov
                // 2026).
                if addr == 0 || !matches!(kind, "t" | "T" | "w" | "W") || name.starts_with('$') {
                    return None;
                }
                let name = clean(name);
                let name = match it.next() {
                    Some(m) => format!("{name} {}", clean(m)),
                    None => name,
                };
                Some((addr, name))
            })
            .collect();
        syms.sort_unstable_by_key(|s| s.0);
        Kallsyms { syms }
    }

    /// The address of the kernel's own text symbol `name` (not a module's), if it has one.
    pub fn address(&self, name: &str) -> Option<u64> {
        self.syms.iter().find(|s| s.1 == name).map(|s| s.0)
    }

    /// How many symbols.
    pub fn len(&self) -> usize {
        self.syms.len()
    }

    /// Whether it has none.
    pub fn is_empty(&self) -> bool {
        self.syms.is_empty()
    }

    /// The function containing `addr` (a return address: the call is just before it, so
    /// `addr - 1` is looked up), or `0x…` before the first symbol.
    pub fn name(&self, addr: u64) -> String {
        self.containing(addr.saturating_sub(1))
            .unwrap_or_else(|| format!("{addr:#x}"))
    }

    /// The function a function pointer `addr` points into (a handler's, from its event:
    /// the symbol at or before `addr` itself), or `0x…` before the first symbol.
    pub fn function(&self, addr: u64) -> String {
        self.containing(addr)
            .unwrap_or_else(|| format!("{addr:#x}"))
    }

    fn containing(&self, at: u64) -> Option<String> {
        let i = self.syms.partition_point(|s| s.0 <= at);
        i.checked_sub(1).map(|i| self.syms[i].1.clone())
    }

    /// The named stack of `task` from return addresses (innermost first, at most
    /// [`MAX_FRAMES`]), from the first frame outside the tracing that took it
    /// ([`rtscope_explain::stack::is_tracer`]: `bpf_trace_run4`, `__traceiter_sched_switch`,
    /// `trace_event_raw_event_*`); a stack of tracing frames only is kept whole.
    pub fn stack(&self, task: Task, addrs: &[u64]) -> KernelStack {
        let names: Vec<String> = addrs
            .iter()
            .take(MAX_FRAMES)
            .map(|&a| self.name(a))
            .collect();
        let first = names
            .iter()
            .position(|f| !rtscope_explain::stack::is_tracer(f))
            .unwrap_or(0);
        KernelStack {
            task,
            frames: names[first..].to_vec(),
        }
    }
}

/// A symbol or module name as printed: at most 128 characters, control and non-ASCII ones
/// escaped (`\u{1b}`).
fn clean(s: &str) -> String {
    s.chars()
        .take(128)
        .flat_map(|c| {
            let keep = c.is_ascii_graphic();
            let escaped = (!keep).then(|| c.escape_default());
            keep.then_some(c)
                .into_iter()
                .chain(escaped.into_iter().flatten())
        })
        .collect()
}

#[cfg(test)]
pub(crate) mod tests;
