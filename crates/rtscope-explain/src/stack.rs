//! Where in the kernel: the kernel stack of the context a spike's measured thread waited for,
//! its first frames outside the scheduler, tracing and interrupt-entry code, and the time of
//! many spikes summed by kernel function.
//!
//! The stack is taken by the kernel (a `stacktrace` trigger on the switch into a measured
//! thread from any task but the idle one, docs/explain.md "Kernel stacks"), symbolized by the
//! tracer crate; this module only reads it. Pure data, no I/O.

use crate::model::{Attribution, Handler, KernelStack};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
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
    const EXACT: &[&str] = &[
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
    const PREFIXES: &[&str] = &[
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
    EXACT.contains(&name) || PREFIXES.iter().any(|p| name.starts_with(p))
}

/// The function a stack names when its task was in user space: every kernel frame is the way
/// back to user mode from an interrupt (a user-space task preempted there).
pub const USER_SPACE: &str = "(user space)";

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
    /// The frames from the first one outside [`is_plumbing`] code, innermost first; a stack
    /// of plumbing only is [`USER_SPACE`] when it returns to user mode, else said whole (not
    /// emptied).
    pub fn folded(&self) -> Vec<&str> {
        match self.frames.iter().position(|f| !is_plumbing(f)) {
            Some(first) => self.frames[first..].iter().map(String::as_str).collect(),
            None if self.frames.iter().any(|f| is_user_return(f)) => vec![USER_SPACE],
            None => self.frames.iter().map(String::as_str).collect(),
        }
    }

    /// The function the stack names: the first frame outside the plumbing, or [`USER_SPACE`].
    pub fn function(&self) -> Option<&str> {
        self.folded().first().copied()
    }

    /// The first `n` folded frames, innermost first.
    pub fn top(&self, n: usize) -> Vec<&str> {
        let mut f = self.folded();
        f.truncate(n);
        f
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

/// Time charged to spikes, summed by the kernel function their stacks or handlers name.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FunctionTime {
    /// The function ([`function_of`]).
    pub function: String,
    /// The summed time (ns): each spike's latency counts once, under its stack's function.
    pub ns: u64,
    /// How many spikes.
    pub spikes: u64,
}

/// The most functions a [`FunctionTable`] keeps by name; later new ones are summed as
/// [`OTHER_FUNCTIONS`].
pub const MAX_FUNCTIONS: usize = 256;

/// The row of the functions beyond [`MAX_FUNCTIONS`].
pub const OTHER_FUNCTIONS: &str = "(other functions)";

/// Time by kernel function over every traced spike of a run (not only the kept worst ones),
/// bounded: [`MAX_FUNCTIONS`] names, the rest summed in one row, never dropped.
#[derive(Debug, Clone, Default)]
pub struct FunctionTable {
    rows: BTreeMap<String, (u64, u64)>,
}

impl FunctionTable {
    /// Counts `a` under its [`function_of`] (a spike with neither a stack nor a leading
    /// handler is not counted).
    pub fn add(&mut self, a: &Attribution) {
        let Some(f) = function_of(a) else {
            return;
        };
        let key = if self.rows.contains_key(f) || self.rows.len() < MAX_FUNCTIONS {
            f
        } else {
            OTHER_FUNCTIONS
        };
        let e = self.rows.entry(key.to_string()).or_default();
        e.0 = e.0.saturating_add(a.spike.latency_ns());
        e.1 += 1;
    }

    /// The rows, largest time first (ties by name).
    pub fn rows(&self) -> Vec<FunctionTime> {
        let mut v: Vec<FunctionTime> = self
            .rows
            .iter()
            .map(|(function, &(ns, spikes))| FunctionTime {
                function: function.clone(),
                ns,
                spikes,
            })
            .collect();
        v.sort_by(|a, b| b.ns.cmp(&a.ns).then(a.function.cmp(&b.function)));
        v
    }
}

/// Sums `attributions`' latencies by the function their stack or handler names
/// ([`function_of`]), largest first (ties by name); spikes with neither are left out (they
/// are counted by the caller's coverage).
pub fn by_function<'a>(
    attributions: impl IntoIterator<Item = &'a Attribution>,
) -> Vec<FunctionTime> {
    let mut t = FunctionTable::default();
    for a in attributions {
        t.add(a);
    }
    t.rows()
}

/// Folded stacks for a flame graph: each spike's [`folded_of`] frames, outermost first and
/// joined by `;`, with its latency (ns) as the weight; equal stacks summed, in name order.
pub fn folded_weights<'a>(
    attributions: impl IntoIterator<Item = &'a Attribution>,
) -> Vec<(String, u64)> {
    let mut m: BTreeMap<String, u64> = BTreeMap::new();
    for a in attributions {
        let frames = folded_of(a);
        if frames.is_empty() {
            continue;
        }
        let key = frames
            .iter()
            .rev()
            .map(|f| f.replace(';', ":"))
            .collect::<Vec<_>>()
            .join(";");
        let w = m.entry(key).or_default();
        *w = w.saturating_add(a.spike.latency_ns());
    }
    m.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Spike, Task};

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

    fn attribution(latency: u64, s: Option<KernelStack>) -> Attribution {
        Attribution {
            spike: Spike {
                cpu: 1,
                tid: 7,
                deadline_ns: 1_000,
                wakeup_ns: 1_000 + latency,
                smis: None,
            },
            charges: Vec::new(),
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
        assert_eq!(
            folded_weights([&a]),
            vec![("tasklet;noisy_long_softirq [noisy]".to_string(), 500_000)]
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
    fn time_by_function_sums_latencies_largest_first_and_skips_spikes_without_stack() {
        let a = [
            attribution(300, Some(stack(PREEMPT_OFF))),
            attribution(500, Some(stack(&["__schedule", "do_nanosleep"]))),
            attribution(400, Some(stack(PREEMPT_OFF))),
            attribution(9_000, None),
        ];
        let t = by_function(&a);
        assert_eq!(t.len(), 2);
        assert_eq!(
            (t[0].function.as_str(), t[0].ns, t[0].spikes),
            ("noisy_hold_preempt_off [noisy]", 700, 2)
        );
        assert_eq!((t[1].function.as_str(), t[1].ns), ("do_nanosleep", 500));
        let f = folded_weights(&a);
        assert_eq!(
            f,
            vec![
                ("do_nanosleep".to_string(), 500),
                (
                    "ret_from_fork;kthread;noisy_thread [noisy];noisy_hold_preempt_off [noisy]"
                        .to_string(),
                    700
                ),
            ]
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
            10 * (MAX_FUNCTIONS as u64 + 10)
        );
        let other = rows.iter().find(|r| r.function == OTHER_FUNCTIONS).unwrap();
        assert_eq!((other.ns, other.spikes), (100, 10));
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
