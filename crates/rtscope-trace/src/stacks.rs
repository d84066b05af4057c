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
    /// text symbols only (`t`, `T`, `w`, `W`), zero addresses skipped; names at most 128
    /// bytes, escaped when not printable.
    pub fn parse(text: &str) -> Kallsyms {
        let mut syms: Vec<(u64, String)> = text
            .lines()
            .filter_map(|l| {
                let mut it = l.split_whitespace();
                let addr = u64::from_str_radix(it.next()?, 16).ok()?;
                let kind = it.next()?;
                let name = it.next()?;
                if addr == 0 || !matches!(kind, "t" | "T" | "w" | "W") {
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
pub(crate) mod tests {
    use super::*;
    use crate::decode::{Comm, TaskState};

    const SYMS: &str = "\
0000000000000000 A fixed_percpu_data
ffffffff81000000 T _stext
ffffffff81100000 T __schedule
ffffffff81100800 t preempt_schedule_common
ffffffff81101000 D some_data
ffffffffc0a00000 t noisy_hold_preempt_off\t[noisy]
ffffffffc0a00100 t noisy_thread\t[noisy]
";

    #[test]
    fn return_addresses_are_named_by_the_function_before_them_with_their_module() {
        let k = Kallsyms::parse(SYMS);
        assert_eq!(k.len(), 5);
        assert_eq!(k.name(0xffff_ffff_8110_0010), "__schedule");
        // A return address right after a call at the end of a function is still that one.
        assert_eq!(k.name(0xffff_ffff_8110_0800), "__schedule");
        assert_eq!(
            k.name(0xffff_ffff_c0a0_0042),
            "noisy_hold_preempt_off [noisy]"
        );
        assert_eq!(k.name(0x1000), "0x1000");
        let s = k.stack(
            Task {
                comm: "noisy".into(),
                pid: 9,
                prio: 120,
            },
            &[
                0xffff_ffff_8110_0010,
                0xffff_ffff_c0a0_0042,
                0xffff_ffff_c0a0_0110,
            ],
        );
        assert_eq!(s.function(), Some("noisy_hold_preempt_off [noisy]"));
        // rtscope's own tracing frames at the tip (a raw tracepoint's BPF program's callers)
        // are cut when named; a stack of them only is kept whole.
        let traced = Kallsyms::parse(&format!(
            "{SYMS}ffffffff81200000 T bpf_trace_run4\nffffffff81200100 T __traceiter_sched_switch\n"
        ));
        let task = || Task {
            comm: "noisy".into(),
            pid: 9,
            prio: 120,
        };
        let cut = traced.stack(
            task(),
            &[
                0xffff_ffff_8120_0010,
                0xffff_ffff_8120_0110,
                0xffff_ffff_8110_0010,
            ],
        );
        assert_eq!(cut.frames, ["__schedule"]);
        let only = traced.stack(task(), &[0xffff_ffff_8120_0010]);
        assert_eq!(only.frames, ["bpf_trace_run4"]);
        assert!(Kallsyms::parse("0000000000000000 T _stext\n").is_empty());
        assert_eq!(
            Kallsyms::parse("ffffffff81000000 T evil\x1b[2J\n").name(0xffff_ffff_8100_0001),
            "evil\\u{1b}[2J"
        );
    }

    fn ev(ts: u64, pid: i32, kind: Kind) -> Event {
        Event { ts, pid, kind }
    }

    /// A spike of the measured thread (PID 7) on CPU 1: due at 1 ms, woken at 9 ms.
    fn late_spike() -> Spike {
        Spike {
            cpu: 1,
            tid: 7,
            deadline_ns: 1_000_000,
            wakeup_ns: 9_000_000,
            smis: None,
        }
    }

    /// A kernel stack of one frame `a`, taken in `pid` at `ts`.
    fn stack(ts: u64, pid: i32, a: u64) -> Event {
        ev(ts, pid, Kind::KernelStack { frames: vec![a] })
    }

    /// The waking of the measured thread `rtscope-m0` (PID 7, CPU 1), seen by `pid` at `ts`.
    pub(crate) fn waking(ts: u64, pid: i32) -> Event {
        ev(
            ts,
            pid,
            Kind::Waking {
                pid: 7,
                prio: 1,
                comm: Comm::new(b"rtscope-m0"),
                target_cpu: 1,
            },
        )
    }

    fn named_task(pid: i32) -> Task {
        Task {
            comm: "spinner".into(),
            pid,
            prio: 120,
        }
    }

    /// A switch from `prev` to `next` at `ts`: PIDs 7 (the spike's thread) and 99 (another
    /// rtscope's) are measured threads, `rtscope-m0`; the others are `culprit`.
    pub(crate) fn switch(ts: u64, prev: i32, next: i32) -> Event {
        let comm = |pid: i32| match pid {
            7 | 99 => Comm::new(b"rtscope-m0"),
            _ => Comm::new(b"culprit"),
        };
        ev(
            ts,
            prev,
            Kind::Switch {
                prev_pid: prev,
                prev_prio: 120,
                prev_comm: comm(prev),
                prev_state: TaskState::Preempted,
                next_pid: next,
                next_prio: 1,
                next_comm: comm(next),
            },
        )
    }

    /// A task named `comm` of PID `pid` (a normal one).
    fn task(comm: &str, pid: i32) -> Task {
        Task {
            comm: comm.into(),
            pid,
            prio: 120,
        }
    }

    #[test]
    fn the_stack_of_the_charged_task_that_ended_the_spike_is_found_and_others_are_not() {
        let spike = late_spike();
        let events = vec![
            switch(500_000, 40, 7), // before the deadline: another wake-up's
            stack(501_000, 40, 0xa),
            switch(700_000, 7, 40),
            switch(8_000_000, 41, 7),
            stack(8_001_000, 41, 0xb),
            stack(9_500_000, 41, 0xc),
        ];
        let (t, frames) = find(&events, &spike, &[named_task(41)]).unwrap();
        assert_eq!((t.pid, t.comm.as_str(), frames), (41, "culprit", vec![0xb]));
        // A task the attribution charged nothing gets no stack.
        assert_eq!(find(&events, &spike, &[]), None);
        assert_eq!(find(&events, &spike, &[named_task(40)]), None);
        // A switch from the idle task takes no stack: nothing is found.
        let idle = vec![
            switch(500_000, 40, 7),
            stack(501_000, 40, 0xa),
            switch(8_000_000, 0, 7),
        ];
        assert_eq!(find(&idle, &spike, &[task("swapper", 0)]), None);
        // The task charged the most gave the CPU to a measured thread of another rtscope
        // (PID 99, `rtscope-m0`), which then gave it to the spike's: the culprit's stack is
        // the one; the other rtscope's (its own sleep) never is, charged or not.
        let relay = vec![
            switch(3_000_000, 40, 99),
            stack(3_001_000, 40, 0xd),
            switch(8_000_000, 99, 7),
            stack(8_001_000, 99, 0xe),
        ];
        let beside = task("rtscope-m0", 99);
        let both = [named_task(40), beside.clone()];
        assert_eq!(find(&relay, &spike, &both).unwrap().1, vec![0xd]);
        assert_eq!(find(&relay, &spike, std::slice::from_ref(&beside)), None);
        // Named otherwise by the attribution, the trace's name still says it is rtscope's.
        assert_eq!(find(&relay, &spike, &[named_task(99)]), None);
        assert_eq!(find(&relay, &spike, &[named_task(55), beside]), None);
        // The waking found the culprit running: its stack there is the one (where the timer
        // interrupt found the section); another task's waking stack yields to the culprit's
        // switch.
        let mut woke = vec![waking(1_000_000, 40), stack(1_000_500, 40, 0xf)];
        woke.extend(relay.iter().cloned());
        assert_eq!(find(&woke, &spike, &[named_task(40)]).unwrap().1, vec![0xf]);
        // The waking's task is named by the switches of the window, else by the attribution.
        assert_eq!(
            find(&woke, &spike, &[named_task(40)]).unwrap().0.comm,
            "culprit"
        );
        let alone = vec![woke[0].clone(), woke[1].clone()];
        assert_eq!(
            find(&alone, &spike, &[named_task(40)]).unwrap().0.comm,
            "spinner"
        );
        woke[0].pid = 41;
        woke[1].pid = 41;
        assert_eq!(find(&woke, &spike, &[named_task(40)]).unwrap().1, vec![0xd]);
        // Charged second, its stack is the one where the first has none.
        assert_eq!(
            find(&woke, &spike, &[named_task(55), named_task(41)])
                .unwrap()
                .1,
            vec![0xf]
        );
        let plain = without_stacks(&events);
        assert_eq!(plain.len(), 3);
        assert!(matches!(without_stacks(&plain), Cow::Borrowed(_)));
    }

    /// The measured thread's timer expired while it was still on its way into its sleep (a
    /// vCPU stalled there): the late timer's stack is the measured thread's own
    /// `do_nanosleep`. It is never the spike's; the task charged after it, which held the CPU
    /// until the switch, gives its stack; an rtscope process's other threads (`rtscope`)
    /// never do.
    #[test]
    fn the_measured_threads_own_sleep_and_rtscope_threads_never_give_a_stack() {
        let spike = late_spike();
        let own = vec![
            irq(7_000_000, 7),
            stack(7_000_010, 7, 0x1),
            waking(7_000_020, 7),
            switch(7_000_030, 7, 40),
            switch(8_000_000, 40, 7),
            stack(8_000_010, 40, 0x2),
        ];
        let measured = task("rtscope-m0", 7);
        assert_eq!(find(&own, &spike, std::slice::from_ref(&measured)), None);
        let (t, frames) = find(&own, &spike, &[measured, named_task(40)]).unwrap();
        assert_eq!((t.pid, frames), (40, vec![0x2]));
        // Another thread of an rtscope process (its monitors, its trace reader): `rtscope`.
        let mut reader = own.clone();
        reader.truncate(4);
        reader.push(ev(
            8_000_000,
            41,
            Kind::Switch {
                prev_pid: 41,
                prev_prio: 120,
                prev_comm: Comm::new(b"rtscope"),
                prev_state: TaskState::Asleep,
                next_pid: 7,
                next_prio: 1,
                next_comm: Comm::new(b"rtscope-m0"),
            },
        ));
        reader.push(stack(8_000_010, 41, 0x3));
        assert_eq!(find(&reader, &spike, &[task("rtscope", 41)]), None);
        // The timerlat tracer's thread of the timerlat tier, switched out into the measured
        // thread: charged by name, its stack (its own sleep in `timerlat_main`) never shown.
        let mut tracer = reader.clone();
        tracer.truncate(4);
        tracer.push(ev(
            8_000_000,
            42,
            Kind::Switch {
                prev_pid: 42,
                prev_prio: 4,
                prev_comm: Comm::new(b"timerlat/1"),
                prev_state: TaskState::Asleep,
                next_pid: 7,
                next_prio: 1,
                next_comm: Comm::new(b"rtscope-m0"),
            },
        ));
        tracer.push(stack(8_000_010, 42, 0x4));
        assert_eq!(find(&tracer, &spike, &[task("timerlat/1", 42)]), None);
        assert!(is_rtscope("rtscope") && is_rtscope("rtscope-n1") && is_rtscope("rtscope-m12"));
        assert!(
            is_measuring("timerlat/1") && is_measuring("timerlat/12") && is_measuring("rtscope-m0")
        );
        assert!(
            !is_measuring("timerlat/") && !is_measuring("timerlat/x") && !is_measuring("timerlat")
        );
        assert!(!is_rtscope("rtscopex") && !is_rtscope("python3"));
    }

    fn irq(ts: u64, pid: i32) -> Event {
        ev(
            ts,
            pid,
            Kind::IrqEntry {
                irq: 0,
                name: "timer".into(),
            },
        )
    }

    #[test]
    fn late_only_stacks_taken_at_the_late_timer_or_the_tick_are_found_for_the_culprit() {
        let spike = late_spike();
        // The timer interrupt came late: its stack (where it found the culprit, interrupts
        // off) comes before the waking, after the interrupt's entry.
        let timer = vec![
            irq(7_000_000, 40),
            stack(7_000_010, 40, 0xa),
            waking(7_000_020, 40),
            switch(8_000_000, 40, 7),
        ];
        let culprit = named_task(40);
        let culprit = [culprit];
        assert_eq!(find(&timer, &spike, &culprit).unwrap().1, vec![0xa]);
        assert_eq!(find(&timer, &spike, &[]), None);
        // The timerlat tier records no interrupt entry: the record before the timer's stack
        // is the switch that let the culprit run, 6 ms before (rt-amd64, irq mode).
        let mut timerlat = timer.clone();
        timerlat[0] = ev(
            1_000_000,
            28,
            Kind::Switch {
                prev_pid: 28,
                prev_prio: 98,
                prev_comm: Comm::new(b"ktimers/1"),
                prev_state: TaskState::Asleep,
                next_pid: 40,
                next_prio: 120,
                next_comm: Comm::new(b"culprit"),
            },
        );
        assert_eq!(find(&timerlat, &spike, &culprit).unwrap().1, vec![0xa]);
        // The wake-up was on time; the tick found the culprit holding the CPU before the
        // switch (which, late too, took the culprit's `__schedule` stack): the tick's is the
        // one.
        let held = vec![
            waking(1_000_100, 40),
            irq(3_000_000, 40),
            stack(3_000_010, 40, 0xb),
            switch(8_000_000, 40, 7),
            stack(8_000_010, 40, 0xc),
        ];
        assert_eq!(find(&held, &spike, &culprit).unwrap().1, vec![0xb]);
        // Without the tick's, the switch's.
        let switched: Vec<Event> = held
            .iter()
            .enumerate()
            .filter(|(i, _)| ![1, 2].contains(i))
            .map(|(_, e)| e.clone())
            .collect();
        assert_eq!(find(&switched, &spike, &culprit).unwrap().1, vec![0xc]);
        // A prompt wake-up took no stack: nothing is found. The stack of an earlier waking
        // at every wake-up is not taken for the late one's, but it is the culprit's, taken
        // inside the spike: the culprit's stack wins over none.
        assert_eq!(find(&[waking(1_000_100, 40)], &spike, &culprit), None);
        let every = vec![
            waking(1_000_100, 40),
            stack(1_000_110, 40, 0xd),
            waking(1_000_120, 40),
        ];
        assert_eq!(find(&every, &spike, &[]), None);
        assert_eq!(find(&every[1..], &spike, &culprit).unwrap().1, vec![0xd]);
    }

    #[test]
    fn the_tier_line_says_which_stacks_are_taken_and_why_not_late_only() {
        assert_eq!(Stacks::Off.note().unwrap(), "kernel stacks off");
        assert_eq!(Stacks::On.note(), None);
        assert_eq!(
            Stacks::Late {
                chains: "switch, timer, held".into(),
                mechanism: Default::default(),
            }
            .note()
            .unwrap(),
            "kernel stacks when late: switch, timer, held"
        );
        assert!(Stacks::EveryNotLate("no hist triggers".into())
            .note()
            .unwrap()
            .starts_with("kernel stacks at every wake-up: late-only stacks unavailable: no hist"));
        assert!(Stacks::Unavailable("x".into())
            .note()
            .unwrap()
            .starts_with("kernel stacks off: x"));
        assert!(Stacks::Late {
            chains: String::new(),
            mechanism: Default::default(),
        }
        .taking());
        assert!(!Stacks::Unavailable(String::new()).taking());
    }

    #[test]
    fn kernel_symbols_are_found_by_name_for_the_timer_filters() {
        let k = Kallsyms::parse(SYMS);
        assert_eq!(k.address("__schedule"), Some(0xffff_ffff_8110_0000));
        assert_eq!(k.address("noisy_thread"), None); // a module's is named with its module
        assert_eq!(k.address("some_data"), None);
    }
}
