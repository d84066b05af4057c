//! The analyzer on trace pages captured on this machine (kernel 6.18, x86-64 VM; see
//! tests/capture.rs for how): a culprit thread, a timerfd storm, an idle CPU.

#[path = "common/fixture.rs"]
mod fixture;

use rtscope_explain::model::Attribution;
use rtscope_explain::model::Category;
use rtscope_explain::model::Spike;
use rtscope_trace::analyze::attribute_on;
use rtscope_trace::decode::{Event, Kind};
use rtscope_trace::machine::Machine;

struct Fixture {
    events: Vec<Event>,
    spikes: Vec<Spike>,
    bad_pages: usize,
}

fn load(name: &str) -> Fixture {
    let (events, _, bad_pages) = fixture::events(name);
    let spikes: Vec<Spike> = serde_json::from_str(
        &std::fs::read_to_string(fixture::dir(name).join("spikes.json")).unwrap(),
    )
    .unwrap();
    Fixture {
        events,
        spikes,
        bad_pages,
    }
}

fn attribute_all(f: &Fixture) -> Vec<Attribution> {
    f.spikes
        .iter()
        .map(|s| {
            let from = s.deadline_ns - 5_000_000;
            let ev: Vec<Event> = f
                .events
                .iter()
                .filter(|e| e.ts >= from && e.ts <= s.wakeup_ns)
                .cloned()
                .collect();
            attribute_on(&ev, s, false, Machine::default())
        })
        .collect()
}

fn check_sums(attrs: &[Attribution]) {
    for a in attrs {
        let sum: u64 = a.charges.iter().map(|c| c.ns).sum();
        assert_eq!(sum, a.spike.latency_ns(), "{a:?}");
        assert!(
            a.complete,
            "waking of the measuring thread not found: {a:?}"
        );
    }
}

fn show(attrs: &[Attribution]) -> String {
    attrs
        .iter()
        .map(|a| {
            let p: Vec<String> = a
                .charges
                .iter()
                .map(|c| format!("{} {}", c.category, c.ns))
                .collect();
            format!("{}: {}", a.spike.latency_ns(), p.join(", "))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_captured_pages_decode_in_time_order() {
    for name in ["culprit", "timer_storm"] {
        let f = load(name);
        assert_eq!(f.bad_pages, 0, "{name}");
        assert!(f.events.len() > 100, "{name}: {} events", f.events.len());
        assert!(!f.spikes.is_empty(), "{name}");
        assert!(f
            .events
            .iter()
            .any(|e| matches!(e.kind, Kind::Switch { .. })));
        assert!(f
            .events
            .iter()
            .any(|e| matches!(e.kind, Kind::VectorEntry(_))));
        // Each page's events are in order; pages are in order except at gaps between kept ones.
        let backwards = f.events.windows(2).filter(|w| w[1].ts < w[0].ts).count();
        assert_eq!(backwards, 0, "{name}");
    }
}

#[test]
fn the_culprit_thread_is_named_in_every_captured_spike() {
    let attrs = attribute_all(&load("culprit"));
    check_sums(&attrs);
    for a in &attrs {
        let Some(Category::Thread { task }) = a.culprit() else {
            panic!("{}", show(&attrs))
        };
        assert_eq!(
            (task.comm.as_str(), task.prio),
            ("culprit", 0),
            "{}",
            show(&attrs)
        );
        // The culprit held the CPU for most of the latency.
        assert!(
            a.charges[0].ns * 10 >= a.spike.latency_ns() * 8,
            "{}",
            show(&attrs)
        );
    }
}

#[test]
fn the_timer_storm_is_charged_to_the_timer_interrupt() {
    let attrs = attribute_all(&load("timer_storm"));
    check_sums(&attrs);
    for a in &attrs {
        assert!(
            a.culprit().is_some_and(Category::is_timer_irq),
            "{}",
            show(&attrs)
        );
        assert!(
            a.ns_where(|c| *c == Category::TimerIrqHandler) > 0,
            "{}",
            show(&attrs)
        );
    }
}

#[test]
fn each_captured_spike_has_the_culprits_stack_named_from_the_fixture_kallsyms() {
    use rtscope_explain::stack::USER_SPACE;
    use rtscope_trace::stacks::{charged, find, Kallsyms};
    let f = load("stacks");
    assert_eq!(f.bad_pages, 0);
    let stacks: Vec<&Vec<u64>> = f
        .events
        .iter()
        .filter_map(|e| match &e.kind {
            Kind::KernelStack { frames } => Some(frames),
            _ => None,
        })
        .collect();
    assert!(!stacks.is_empty(), "no kernel_stack entry decoded");
    assert!(stacks
        .iter()
        .all(|s| !s.is_empty() && s.len() <= rtscope_trace::decode::MAX_STACK_FRAMES));
    let syms =
        Kallsyms::parse(&std::fs::read_to_string(fixture::dir("stacks").join("kallsyms")).unwrap());
    assert!(!f.spikes.is_empty());
    for s in &f.spikes {
        let ev: Vec<Event> = f
            .events
            .iter()
            .filter(|e| e.ts + 5_000_000 >= s.deadline_ns && e.ts <= s.wakeup_ns)
            .cloned()
            .collect();
        // The analyzer never reads a stack entry as an event of the culprit.
        let a = attribute_on(&ev, s, false, Machine::default());
        let Some(Category::Thread { task }) = a.culprit() else {
            panic!("{a:?}")
        };
        assert_eq!(task.comm, "culprit");
        let (task, addrs) =
            find(&ev, s, &charged(&a)).unwrap_or_else(|| panic!("no stack for {s:?}"));
        assert_eq!(task.comm, "culprit");
        let stack = syms.stack(task, &addrs);
        // The culprit gave the CPU back in its clock_nanosleep: past the scheduler, the
        // tracer and its way into the sleep, only its system call's entry from user space is
        // left: it ran in user space. The stack taken starts in the tracer (the trigger's
        // `trace_event_raw_event_sched_switch`), cut when named: it starts at the scheduler.
        assert_eq!(stack.function(), Some(USER_SPACE), "{stack:?}");
        assert_eq!(
            syms.name(addrs[0]),
            "trace_event_raw_event_sched_switch",
            "{stack:?}"
        );
        assert!(stack.frames.len() < addrs.len(), "{stack:?}");
        assert!(
            !rtscope_explain::stack::is_tracer(&stack.frames[0]),
            "{stack:?}"
        );
        assert!(stack
            .frames
            .iter()
            .any(|f| f == "__x64_sys_clock_nanosleep"));
    }
}
