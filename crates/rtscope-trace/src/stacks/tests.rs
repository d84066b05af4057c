//! Tests of the kernel stacks a spike gets ([`super::find`]) and of their symbols.

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
    // arm64's mapping symbols inside a module's function are not functions.
    let arm = Kallsyms::parse(
        "ffff800001000000 t noisy_hold_irqs_off\t[noisy]\n\
         ffff800001000040 t $d\t[noisy]\n\
         ffff800001000048 t $x\t[noisy]\n\
         ffff800001000200 t noisy_thread\t[noisy]\n",
    );
    assert_eq!(arm.len(), 2);
    assert_eq!(
        arm.name(0xffff_8000_0100_0050),
        "noisy_hold_irqs_off [noisy]"
    );
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
    assert!(!is_measuring("timerlat/") && !is_measuring("timerlat/x") && !is_measuring("timerlat"));
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
