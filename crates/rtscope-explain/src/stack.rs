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

/// Whether a frame is of the code every stack of a switch passes through: the tracer that
/// took it, the scheduler, interrupt and exception entry and return, lock release (the
/// `preempt_enable` inside `spin_unlock`): never the code that held the CPU.
pub fn is_plumbing(frame: &str) -> bool {
    let name = frame.split(' ').next().unwrap_or(frame);
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
    let name = frame.split(' ').next().unwrap_or(frame);
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
    let name = frame.split(' ').next().unwrap_or(frame);
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
    let name = frame.split(' ').next().unwrap_or(frame);
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
    let name = frame.split(' ').next().unwrap_or(frame);
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
    let name = frame.split(' ').next().unwrap_or(frame);
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
mod tests {
    use super::*;
    use crate::model::{Spike, Task};
    use crate::tally::{
        by_function, folded_weights, FunctionTable, MAX_FUNCTIONS, OTHER_FUNCTIONS,
    };

    fn stack(frames: &[&str]) -> KernelStack {
        KernelStack {
            task: Task {
                comm: "noisy".into(),
                pid: 88,
                prio: 120,
            },
            frames: frames.iter().map(|s| s.to_string()).collect(),
        }
    }

    /// A spike of `latency`, half of it charged to the task of its stack `s` (holding the
    /// CPU), half to the hypervisor.
    fn attribution(latency: u64, s: Option<KernelStack>) -> Attribution {
        use crate::model::{Category, Charge};
        let charges = s.iter().flat_map(|s| {
            [
                Charge::new(
                    Category::Blocking {
                        task: s.task.clone(),
                    },
                    latency / 2,
                ),
                Charge::new(Category::Hypervisor, latency / 2),
            ]
        });
        Attribution {
            spike: Spike {
                cpu: 1,
                tid: 7,
                deadline_ns: 1_000,
                wakeup_ns: 1_000 + latency,
                smis: None,
            },
            charges: charges.collect(),
            complete: true,
            lost_events: false,
            siblings: Vec::new(),
            stack: s,
            handler: None,
        }
    }

    /// A tasklet that ran most of the largest charge names the spike, under its context,
    /// before the stack; one that ran less than half of it leaves the spike to the stack.
    #[test]
    fn a_handler_that_ran_most_of_the_largest_charge_names_the_spike() {
        use crate::model::{Category, Charge, Handler, HandlerKind, Softirq};
        let mut a = attribution(500_000, Some(stack(PREEMPT_OFF)));
        a.charges = vec![Charge {
            category: Category::Softirq {
                vec: Softirq::Tasklet,
            },
            ns: 480_000,
            times: 1,
        }];
        a.handler = Some(Handler {
            kind: HandlerKind::Tasklet,
            function: "noisy_long_softirq [noisy]".into(),
            ns: 470_000,
            times: 1,
        });
        assert_eq!(function_of(&a), Some("noisy_long_softirq [noisy]"));
        // Weighted by the handler's own time.
        let f = folded_weights([&a]);
        assert_eq!(
            (f[0].stack.as_str(), f[0].ns),
            ("tasklet;noisy_long_softirq [noisy]", 470_000)
        );
        assert_eq!(by_function([&a])[0].function, "noisy_long_softirq [noisy]");
        a.handler.as_mut().unwrap().ns = 200_000;
        assert!(leading_handler(&a).is_none());
        assert_eq!(function_of(&a), Some("noisy_hold_preempt_off [noisy]"));
        a.stack = None;
        assert_eq!(function_of(&a), None);
    }

    const PREEMPT_OFF: &[&str] = &[
        "trace_event_raw_event_sched_switch",
        "__traceiter_sched_switch",
        "__schedule",
        "preempt_schedule_common",
        "preempt_schedule_thunk",
        "noisy_hold_preempt_off [noisy]",
        "noisy_thread [noisy]",
        "kthread",
        "ret_from_fork",
    ];

    #[test]
    fn folding_skips_the_tracer_the_scheduler_and_interrupt_entry_to_the_holder() {
        let s = stack(PREEMPT_OFF);
        assert_eq!(s.function(), Some("noisy_hold_preempt_off [noisy]"));
        assert_eq!(
            s.top(2),
            ["noisy_hold_preempt_off [noisy]", "noisy_thread [noisy]"]
        );
        let irq = stack(&[
            "__schedule",
            "preempt_schedule_irq",
            "irqentry_exit",
            "asm_sysvec_apic_timer_interrupt",
            "noisy_hold_irqs_off [noisy]",
        ]);
        assert_eq!(irq.function(), Some("noisy_hold_irqs_off [noisy]"));
        // The waking's stack: the timer interrupt found the section.
        let woke = stack(&[
            "trace_event_raw_event_sched_waking",
            "__traceiter_sched_waking",
            "try_to_wake_up",
            "hrtimer_wakeup",
            "__hrtimer_run_queues",
            "hrtimer_interrupt",
            "__sysvec_apic_timer_interrupt",
            "sysvec_apic_timer_interrupt",
            "asm_sysvec_apic_timer_interrupt",
            "noisy_hold_preempt_off [noisy]",
            "noisy_thread [noisy]",
        ]);
        assert_eq!(woke.function(), Some("noisy_hold_preempt_off [noisy]"));
        // A late-only stack (rtscope_trace::tracefs::late): the late timer's hist trigger fired the
        // synthetic event whose trigger took it, inside the interrupt.
        let late = stack(&[
            "event_triggers_post_call",
            "trace_event_buffer_commit",
            "trace_event_raw_event_synth",
            "action_trace",
            "event_hist_trigger",
            "event_triggers_call",
            "trace_event_buffer_commit",
            "trace_event_raw_event_hrtimer_expire_entry",
            "__run_hrtimer",
            "__hrtimer_run_queues",
            "hrtimer_interrupt",
            "__sysvec_apic_timer_interrupt",
            "sysvec_apic_timer_interrupt",
            "asm_sysvec_apic_timer_interrupt",
            "noisy_hold_irqs_off [noisy]",
        ]);
        assert_eq!(late.function(), Some("noisy_hold_irqs_off [noisy]"));
        assert_eq!(
            s.to_string(),
            "noisy_hold_preempt_off [noisy] ← noisy_thread [noisy] ← kthread (noisy:88:nice0)"
        );
    }

    /// `__mod_timer ← schedule_timeout` (and the hrtimer's arming under `do_nanosleep`) is the
    /// sleeping path, as `schedule_timeout` alone is; a timer armed elsewhere is code of its own.
    #[test]
    fn a_sleep_arming_its_timer_is_read_as_the_sleep() {
        let kthread = [
            "schedule_timeout",
            "rcu_gp_fqs_loop",
            "rcu_gp_kthread",
            "kthread",
        ];
        let armed: Vec<&str> = ["lock_timer_base", "__mod_timer"]
            .into_iter()
            .chain(kthread)
            .collect();
        assert_eq!(stack(&armed).folded(), stack(&kthread).folded());
        assert_eq!(stack(&armed).function(), Some("rcu_gp_fqs_loop"));
        let syscall = ["do_syscall_64", "entry_SYSCALL_64_after_hwframe"];
        let select: Vec<&str> = ["__mod_timer", "schedule_timeout", "do_select"]
            .into_iter()
            .chain(["core_sys_select", "__x64_sys_select"])
            .chain(syscall)
            .collect();
        assert!(stack(&select).in_user_space());
        let nanosleep: Vec<&str> = ["hrtimer_start_range_ns", "do_nanosleep"]
            .into_iter()
            .chain(["hrtimer_nanosleep", "__x64_sys_clock_nanosleep"])
            .chain(syscall)
            .collect();
        assert!(stack(&nanosleep).in_user_space());
        // With no way back to user space: said from the sleep, not from its timer.
        let kernel_sleep = stack(&["__schedule", "__mod_timer", "schedule_timeout", "msleep"]);
        assert_eq!(kernel_sleep.folded(), ["msleep"]);
        // A timer armed by a driver's work, not by a sleep: the time is the arming's.
        let work = stack(&[
            "__mod_timer",
            "queue_delayed_work_on",
            "noisy_thread [noisy]",
        ]);
        assert_eq!(work.function(), Some("__mod_timer"));
        assert!(is_timer_arming("__mod_timer") && !is_sleep("__mod_timer"));
    }

    #[test]
    fn a_stack_of_plumbing_only_is_kept_whole_or_named_user_space() {
        let s = stack(&["__schedule", "schedule"]);
        assert_eq!(s.folded().len(), 2);
        assert_eq!(s.function(), Some("__schedule"));
        assert_eq!(stack(&[]).function(), None);
        // A user-space task preempted on its way back from the timer interrupt (x86, arm64).
        for user in [
            &[
                "trace_event_raw_event_sched_switch",
                "__traceiter_sched_switch",
                "__schedule",
                "schedule",
                "irqentry_exit_to_user_mode",
                "asm_sysvec_apic_timer_interrupt",
            ][..],
            &[
                "__schedule",
                "schedule",
                "exit_to_user_mode_loop",
                "el0_interrupt",
                "el0t_64_irq",
            ],
        ] {
            let s = stack(user);
            assert_eq!(s.function(), Some(USER_SPACE), "{user:?}");
            assert_eq!(s.to_string(), "(user space) (noisy:88:nice0)");
        }
    }

    #[test]
    fn time_by_function_sums_charged_time_largest_first_and_skips_sleep_idle_and_uncharged() {
        let nanosleep = [
            "__schedule",
            "schedule",
            "do_nanosleep",
            "hrtimer_nanosleep",
            "common_nsleep_timens",
            "__x64_sys_clock_nanosleep",
            "do_syscall_64",
            "entry_SYSCALL_64_after_hwframe",
        ];
        let idle = [
            "__schedule",
            "schedule_idle",
            "do_idle",
            "cpu_startup_entry",
        ];
        let mut uncharged = attribution(800, Some(stack(PREEMPT_OFF)));
        uncharged.stack.as_mut().unwrap().task.pid = 89;
        let a = [
            attribution(300, Some(stack(PREEMPT_OFF))),
            attribution(500, Some(stack(&nanosleep))),
            attribution(400, Some(stack(PREEMPT_OFF))),
            attribution(600, Some(stack(&idle))),
            uncharged,
            attribution(9_000, None),
        ];
        let t = by_function(&a);
        assert_eq!(t.len(), 2, "{t:?}");
        assert_eq!(
            (t[0].function.as_str(), t[0].ns, t[0].spikes),
            ("noisy_hold_preempt_off [noisy]", 350, 2)
        );
        // The user task's clock_nanosleep: it ran in user space, then slept.
        assert_eq!((t[1].function.as_str(), t[1].ns), (USER_SPACE, 250));
        let f: Vec<(String, u64)> = folded_weights(&a)
            .into_iter()
            .map(|f| (f.stack, f.ns))
            .collect();
        assert_eq!(
            f,
            vec![
                ("noisy;(user space)".to_string(), 250),
                (
                    "noisy;ret_from_fork;kthread;noisy_thread [noisy];noisy_hold_preempt_off [noisy]"
                        .to_string(),
                    350
                ),
            ]
        );
        assert_eq!(stack(&idle).function(), Some(IDLE));
        // A kernel thread's sleep names its own code, not the sleep.
        let msleep = stack(&[
            "__schedule",
            "schedule",
            "schedule_timeout",
            "msleep",
            "noisy_thread [noisy]",
            "kthread",
        ]);
        assert_eq!(msleep.function(), Some("noisy_thread [noisy]"));
        assert_eq!(
            stack(&nanosleep).line(),
            "no kernel stack: it ran in user space (noisy:88:nice0)"
        );
        assert_eq!(
            stack(PREEMPT_OFF).line(),
            "kernel stack: noisy_hold_preempt_off [noisy] ← noisy_thread [noisy] ← kthread (noisy:88:nice0)"
        );
        // A futex wake that the woken task preempted is not a sleep.
        let wake = stack(&["__schedule", "preempt_schedule", "futex_wake", "do_futex"]);
        assert_eq!(wake.function(), Some("futex_wake"));
    }

    /// A user-space task's sleep stack under a spike mostly of hypervisor time: the text says
    /// it ran in user space, counts only its charged time under `(user space)`, and says where
    /// the rest is.
    #[test]
    fn the_text_says_user_space_and_where_the_time_under_no_function_is() {
        use crate::book::{Explained, SpikeBook};
        use crate::model::Tier;
        use crate::render::{summary_of, Subject};
        let mut b = SpikeBook::new(60_000_000_000, 5, 10);
        let sleep = [
            "bpf_trace_run4",
            "__schedule",
            "schedule",
            "do_nanosleep",
            "hrtimer_nanosleep",
            "__x64_sys_clock_nanosleep",
            "do_syscall_64",
            "entry_SYSCALL_64_after_hwframe",
        ];
        b.add(Explained::Traced(attribution(
            4_000_000,
            Some(stack(&sleep)),
        )));
        let s = b.summary(Tier::FlightRecorder, None, 1_000_000);
        let text = summary_of(&s, 0, 5, Subject::WakeUps);
        assert!(
            text.contains("no kernel stack: it ran in user space (noisy:88:nice0)"),
            "{text}"
        );
        assert!(!text.contains("do_nanosleep"), "{text}");
        assert!(
            text.lines()
                .any(|l| l.contains("(user space)") && l.contains("     1  2.00 ms")),
            "{text}"
        );
        assert!(
            text.contains(
                "under no kernel function: 2.00 ms of 4.00 ms traced (hypervisor 2.00 ms;"
            ),
            "{text}"
        );
        assert_eq!(s.stacks.len(), 1);
        assert_eq!(
            crate::folded::text(&s.stacks),
            "noisy;(user space) 2000000\n"
        );
    }

    #[test]
    fn functions_beyond_the_bound_are_summed_in_one_row_not_dropped() {
        let mut t = FunctionTable::default();
        for i in 0..MAX_FUNCTIONS + 10 {
            t.add(&attribution(10, Some(stack(&[&format!("f{i}")]))));
        }
        let rows = t.rows();
        assert_eq!(rows.len(), MAX_FUNCTIONS + 1);
        assert_eq!(
            rows.iter().map(|r| r.ns).sum::<u64>(),
            5 * (MAX_FUNCTIONS as u64 + 10)
        );
        let other = rows.iter().find(|r| r.function == OTHER_FUNCTIONS).unwrap();
        assert_eq!((other.ns, other.spikes), (50, 10));
    }

    #[test]
    fn an_attribution_without_stack_reads_from_json_stored_before_stacks() {
        let mut v = serde_json::to_value(attribution(5, None)).unwrap();
        assert!(v.get("stack").is_none());
        v.as_object_mut().unwrap().remove("stack");
        let a: Attribution = serde_json::from_value(v).unwrap();
        assert!(a.stack.is_none());
        let with = attribution(5, Some(stack(PREEMPT_OFF)));
        let back: Attribution =
            serde_json::from_value(serde_json::to_value(&with).unwrap()).unwrap();
        assert_eq!(back, with);
    }
}
