//! Where in the kernel: the kernel stack of the context a spike's measured thread waited for,
//! its first frames outside the scheduler, tracing and interrupt-entry code, and the time of
//! many spikes summed by kernel function.
//!
//! The stack is taken by the kernel (a `stacktrace` trigger on the switch into a measured
//! thread from any task but the idle one, docs/explain.md "Kernel stacks"), symbolized by the
//! tracer crate; this module only reads it. Pure data, no I/O.

use crate::model::{Attribution, Handler, KernelStack};
use serde::{Deserialize, Serialize};
use std::fmt;

/// Frames kept per stack (innermost first); deeper ones are the outermost callers.
pub const MAX_FRAMES: usize = 64;

/// Frames shown of a folded stack in text (`a ← b ← c`).
pub const SHOWN_FRAMES: usize = 3;

/// A frame's function as the lists below name it: without what follows a space (a module, an
/// offset), nor a compiler's suffix for a specialised copy of the function, which is the
/// symbol a stack shows (`finish_task_switch.isra.0`, `.constprop.0`, `.part.0`, `.cold`).
fn symbol_of(frame: &str) -> &str {
    let name = frame.split(' ').next().unwrap_or(frame);
    name.split('.').next().unwrap_or(name)
}

/// Whether a frame is of the code every stack of a switch passes through: the tracer that
/// took it, the scheduler, interrupt and exception entry and return, lock release (the
/// `preempt_enable` inside `spin_unlock`): never the code that held the CPU.
pub fn is_plumbing(frame: &str) -> bool {
    let name = symbol_of(frame);
    PLUMBING_EXACT.contains(&name) || PLUMBING_PREFIXES.iter().any(|p| name.starts_with(p))
}

/// [`is_plumbing`]'s frames by their whole name.
const PLUMBING_EXACT: &[&str] = &[
    "schedule",
    "__schedule",
    "schedule_idle",
    "__cond_resched",
    "_cond_resched",
    "preempt_schedule",
    "preempt_schedule_common",
    "preempt_schedule_irq",
    "preempt_schedule_notrace",
    "common_interrupt",
    "do_interrupt_handler",
    "call_on_irq_stack",
    "gic_handle_irq",
    "handle_domain_irq",
    "irq_exit",
    "irq_exit_rcu",
    "__irq_exit_rcu",
    "local_bh_enable",
    "__local_bh_enable_ip",
    "arm64_preempt_schedule_irq",
    "finish_task_switch",
    "stack_trace_save",
    "try_to_wake_up",
    "wake_up_process",
    "hrtimer_wakeup",
    "__hrtimer_run_queues",
    "hrtimer_interrupt",
    "hrtimer_run_queues",
    "local_apic_timer_interrupt",
    "handle_percpu_devid_irq",
    "generic_handle_domain_irq",
    "handle_irq_desc",
    "__handle_domain_irq",
    "__run_hrtimer",
    "event_hist_trigger",
    "action_trace",
];
/// [`is_plumbing`]'s frames by the start of their name.
const PLUMBING_PREFIXES: &[&str] = &[
    "trace_",
    "__trace",
    "ftrace_",
    "__ftrace",
    "event_trigger",
    "stacktrace_",
    "perf_trace",
    "preempt_schedule",
    "__preempt_schedule",
    "schedule_",
    "irqentry_",
    "exit_to_user_mode",
    "syscall_exit_to_user_mode",
    "asm_",
    "sysvec_",
    "__sysvec_",
    "el0",
    "el1",
    "__el1_",
    "do_syscall_",
    "entry_SYSCALL",
    "do_el0_svc",
    "invoke_syscall",
    "_raw_spin_unlock",
    "__raw_spin_unlock",
    "_raw_read_unlock",
    "_raw_write_unlock",
    "rt_spin_unlock",
    "preempt_count_",
    "arch_stack_walk",
    "ttwu_",
    "arch_timer_handler_",
    // The late-only stacks' hist trigger and synthetic event (rtscope_trace::tracefs::late).
    "hist_trigger_",
    "synth_event_",
    // A raw tracepoint's BPF program's callers and the helper that took its stack
    // (rtscope_bpf::late; the program's own frames are cut).
    "bpf_trace_run",
    "__bpf_trace_",
    "__bpf_prog_run",
    "bpf_dispatcher_",
    "bpf_get_stack",
];

/// Whether a frame is of the tracing that took the stack, not of the task it is of: a raw
/// tracepoint's BPF program's callers (`bpf_trace_run4`, `__bpf_trace_*`), a trace event's
/// (`__traceiter_*`, `trace_event_*`, `perf_trace*`, `trace_call_bpf`), a trigger's
/// (`event_triggers_*`, `event_hist_trigger`, `action_trace`, `synth_event_*`) and the
/// stack walk. A stack's innermost run of them is cut when it is named
/// (`rtscope_trace::stacks::Kallsyms::stack`).
pub fn is_tracer(frame: &str) -> bool {
    let name = symbol_of(frame);
    const PREFIXES: &[&str] = &[
        "bpf_trace_run",
        "__bpf_trace_",
        "__bpf_prog_run",
        "bpf_prog_",
        "bpf_dispatcher_",
        "bpf_get_stack",
        "trace_call_bpf",
        "__traceiter_",
        "trace_event_",
        "perf_trace",
        "perf_tp_event",
        "event_trigger",
        "event_hist_trigger",
        "action_trace",
        "hist_trigger_",
        "synth_event_",
        "stack_trace_save",
        "arch_stack_walk",
        "__ftrace_trace_stack",
        "__trace_stack",
        "ftrace_",
    ];
    PREFIXES.iter().any(|p| name.starts_with(p))
}

/// Whether a frame is on the way of a task giving its CPU up by sleeping (`clock_nanosleep`,
/// `futex` waits, `poll`/`select`/`epoll`, `msleep`, `schedule_timeout`): where it slept, not
/// where it held the CPU. A user task's stack of these, system call entry and the scheduler
/// only had entered the kernel to sleep: it ran in user space before.
pub fn is_sleep(frame: &str) -> bool {
    let name = symbol_of(frame);
    const EXACT: &[&str] = &[
        "do_nanosleep",
        "hrtimer_nanosleep",
        "hrtimer_nanosleep_restart",
        "common_nsleep",
        "common_nsleep_timens",
        "msleep",
        "msleep_interruptible",
        "usleep_range_state",
        "do_sys_poll",
        "do_poll",
        "do_select",
        "core_sys_select",
        "kern_select",
        "ep_poll",
        "do_epoll_wait",
        "do_epoll_pwait",
        "do_futex",
        "do_sigtimedwait",
        "sigsuspend",
        "do_wait",
        "kernel_wait4",
        "do_sched_yield",
        "poll_schedule_timeout",
    ];
    const PREFIXES: &[&str] = &[
        "schedule_hrtimeout",
        "schedule_timeout",
        "futex_wait",
        "__futex_wait",
    ];
    // A sleeping system call's entry: `__x64_sys_clock_nanosleep`, `__arm64_sys_futex`,
    // `__se_sys_…`, `__do_sys_…`, their `_time32` variants.
    const CALLS: &[&str] = &[
        "nanosleep",
        "clock_nanosleep",
        "futex",
        "poll",
        "ppoll",
        "select",
        "pselect6",
        "epoll_wait",
        "epoll_pwait",
        "epoll_pwait2",
        "wait4",
        "waitid",
        "pause",
        "rt_sigsuspend",
        "rt_sigtimedwait",
        "sched_yield",
    ];
    let call = name
        .split_once("sys_")
        .map(|(_, c)| c.trim_end_matches("_time32"));
    EXACT.contains(&name)
        || PREFIXES.iter().any(|p| name.starts_with(p))
        || call.is_some_and(|c| CALLS.contains(&c))
}

/// Whether a frame arms a timer (`__mod_timer`, `mod_timer`, `hrtimer_start_range_ns`, the
/// timer wheel's and the hrtimer queue's insertion): under a sleep frame (`schedule_timeout`,
/// `do_nanosleep`) it is the sleep arming its wake-up, read as the sleep itself
/// ([`KernelStack::folded`]); anywhere else it is code of its own.
pub fn is_timer_arming(frame: &str) -> bool {
    let name = symbol_of(frame);
    const EXACT: &[&str] = &[
        "__mod_timer",
        "mod_timer",
        "add_timer",
        "add_timer_on",
        "internal_add_timer",
        "enqueue_timer",
        "lock_timer_base",
        "hrtimer_start_range_ns",
        "__hrtimer_start_range_ns",
        "hrtimer_sleeper_start_expires",
        "enqueue_hrtimer",
    ];
    EXACT.contains(&name)
}

/// The first frame of `frames` (innermost first) outside the plumbing and the sleeping path:
/// a timer-arming frame counts as sleeping when the first frame outward of it that neither
/// arms a timer nor is plumbing (`schedule_timeout` is both) is a sleep frame (`__mod_timer ← schedule_timeout`).
fn first_held(frames: &[String]) -> Option<usize> {
    let mut i = 0;
    while let Some(f) = frames.get(i) {
        if is_plumbing(f) || is_sleep(f) {
            i += 1;
            continue;
        }
        let outward = frames[i..]
            .iter()
            .position(|g| !is_timer_arming(g) && (is_sleep(g) || !is_plumbing(g)))
            .map(|j| i + j);
        match outward {
            Some(o) if is_timer_arming(f) && is_sleep(&frames[o]) => i = o,
            _ => return Some(i),
        }
    }
    None
}

/// Whether a frame is the idle loop's (`do_idle`, a cpuidle driver, `default_idle`, a halt).
pub fn is_idle(frame: &str) -> bool {
    let name = symbol_of(frame);
    const PREFIXES: &[&str] = &[
        "do_idle",
        "cpu_startup_entry",
        "default_idle",
        "arch_cpu_idle",
        "cpuidle_",
        "cpu_idle_poll",
        "acpi_idle_",
        "acpi_safe_halt",
        "intel_idle",
        "mwait_idle",
        "pv_native_safe_halt",
        "native_safe_halt",
        "poll_idle",
        "psci_",
        "cpu_do_idle",
    ];
    PREFIXES.iter().any(|p| name.starts_with(p))
}

/// The function a stack names when its task was in user space: every kernel frame is the way
/// back to user mode from an interrupt (a user-space task preempted there), or the way into a
/// sleep from a system call (it ran in user space, then slept).
pub const USER_SPACE: &str = "(user space)";

/// The function a stack names when its first frame outside the plumbing is the idle loop's:
/// the CPU held nothing (never counted as a kernel function's time).
pub const IDLE: &str = "(idle)";

/// Whether a frame is the kernel's entry from or way back to user space (x86
/// `irqentry_exit_to_user_mode`, `exit_to_user_mode_loop`, `entry_SYSCALL_64*`, an interrupt's
/// `asm_*` entry, arm64 `el0_*`, `ret_to_user`). In a stack of such frames only, the task was
/// in user space: an interrupt taken in the kernel would have the interrupted function under
/// its entry.
fn is_user_return(frame: &str) -> bool {
    let name = symbol_of(frame);
    name.contains("to_user_mode")
        || name.starts_with("asm_")
        || name.starts_with("el0")
        || name.starts_with("entry_SYSCALL")
        || name.starts_with("do_syscall_")
        || name == "ret_to_user"
        || name == "ret_from_intr"
}

impl KernelStack {
    /// The frames from the first one outside [`is_plumbing`] and [`is_sleep`] code (and a
    /// sleep's arming of its timer, [`is_timer_arming`]), innermost first; a stack of those
    /// only is [`USER_SPACE`] when it returns to user mode (or came from it by a system
    /// call), else said from its first sleep frame, or whole (not emptied); one whose first
    /// such frame is the idle loop's is [`IDLE`].
    pub fn folded(&self) -> Vec<&str> {
        let sleeping = |f: &String| !is_plumbing(f) && !is_timer_arming(f);
        match first_held(&self.frames) {
            Some(first) if is_idle(&self.frames[first]) => vec![IDLE],
            Some(first) => self.frames[first..].iter().map(String::as_str).collect(),
            None if self.frames.iter().any(|f| is_user_return(f)) => vec![USER_SPACE],
            None => match self.frames.iter().position(sleeping) {
                Some(sleep) => self.frames[sleep..].iter().map(String::as_str).collect(),
                None => self.frames.iter().map(String::as_str).collect(),
            },
        }
    }

    /// The function the stack names: the first frame outside the plumbing, or [`USER_SPACE`].
    pub fn function(&self) -> Option<&str> {
        self.folded().first().copied()
    }

    /// Whether the stack says its task ran in user space ([`USER_SPACE`]).
    pub fn in_user_space(&self) -> bool {
        self.function() == Some(USER_SPACE)
    }

    /// The first `n` folded frames, innermost first.
    pub fn top(&self, n: usize) -> Vec<&str> {
        let mut f = self.folded();
        f.truncate(n);
        f
    }

    /// The line under a spike: `kernel stack: f1 ← f2 ← f3 (task)`, or `no kernel stack: it
    /// ran in user space (task)` (not escaped: the caller escapes).
    pub fn line(&self) -> String {
        match self.in_user_space() {
            true => format!("no kernel stack: it ran in user space ({})", self.task),
            false => format!("kernel stack: {self}"),
        }
    }
}

impl fmt::Display for KernelStack {
    /// `noisy_hold_preempt_off [noisy] ← kthread ← ret_from_fork (noisy:88:nice0)`: the first
    /// [`SHOWN_FRAMES`] folded frames, innermost first, and the task.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.frames.is_empty() {
            return write!(f, "(empty stack) ({})", self.task);
        }
        write!(f, "{} ({})", self.top(SHOWN_FRAMES).join(" ← "), self.task)
    }
}

/// The handler a spike's time is named by instead of its stack: one that ran in interrupt
/// context for at least half the time of the spike's largest charge (an IPI's function call
/// inside the interrupt that delayed the timer, a tasklet in the softirq the measured thread
/// waited for). A shorter one leaves the spike to its stack.
pub fn leading_handler(a: &Attribution) -> Option<&Handler> {
    let largest = a.charges.first().map_or(0, |c| c.ns);
    a.handler
        .as_ref()
        .filter(|h| h.ns > 0 && h.ns.saturating_mul(2) >= largest)
}

/// Where in the kernel a spike's time went, folded, innermost first: its
/// [`leading_handler`] under the context it ran in (`noisy_long_softirq [noisy]`,
/// `tasklet`), else its stack's [`KernelStack::folded`] frames; empty with neither.
pub fn folded_of(a: &Attribution) -> Vec<&str> {
    match (leading_handler(a), &a.stack) {
        (Some(h), _) => vec![h.function.as_str(), h.kind.context()],
        (None, Some(s)) => s.folded(),
        (None, None) => Vec::new(),
    }
}

/// The function a spike's time is summed under: the first of [`folded_of`].
pub fn function_of(a: &Attribution) -> Option<&str> {
    folded_of(a).first().copied()
}

/// The time of a spike charged to the context its [`folded_of`] names (ns): its leading
/// handler's own time, else the charges of its stack's task (as a thread, a task holding the
/// CPU, or the task that ran while the timer interrupt was late); 0 for a stack of a task
/// charged nothing, or of the idle loop ([`IDLE`]).
pub fn charged_ns(a: &Attribution) -> u64 {
    if let Some(h) = leading_handler(a) {
        return h.ns;
    }
    let Some(s) = &a.stack else {
        return 0;
    };
    if s.function() == Some(IDLE) {
        return 0;
    }
    a.charges
        .iter()
        .filter(|c| c.category.named_task().is_some_and(|t| t.pid == s.task.pid))
        .map(|c| c.ns)
        .sum()
}

/// Time charged to spikes, summed by the kernel function their stacks or handlers name.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FunctionTime {
    /// The function ([`function_of`]).
    pub function: String,
    /// The summed time (ns): each spike's time charged to the context its stack or handler is
    /// of ([`charged_ns`]), under that stack's function (before issue 65: each spike's
    /// latency).
    pub ns: u64,
    /// How many spikes.
    pub spikes: u64,
}

#[cfg(test)]
#[path = "stack_tests.rs"]
mod tests;
