//! Tests of [`super`]: the stacks' folding, naming and time by function.

use super::*;
use crate::model::{Spike, Task};
use crate::tally::{by_function, folded_weights, FunctionTable, MAX_FUNCTIONS, OTHER_FUNCTIONS};

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
    // A function's specialised copy is the function (GCC's `.isra.0`, `.constprop.0`,
    // `.part.0`, `.cold`), with or without a module after it.
    assert!(is_sleep("do_nanosleep.constprop.0") && is_plumbing("__schedule.cold"));
    assert!(is_timer_arming("__mod_timer.part.0 [noisy]"));
    assert!(!is_plumbing("noisy_hold_preempt_off.isra.0"));
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
        text.contains("under no kernel function: 2.00 ms of 4.00 ms traced (hypervisor 2.00 ms;"),
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
    let back: Attribution = serde_json::from_value(serde_json::to_value(&with).unwrap()).unwrap();
    assert_eq!(back, with);
}
