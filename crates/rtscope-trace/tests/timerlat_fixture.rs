//! The timerlat tier's analyzer on trace pages captured on a real PREEMPT_RT kernel
//! (tests/fixtures/timerlat_rt/README.md): the timerlat tracer's own thread on CPU 1, delayed by
//! a SCHED_FIFO 99 `culprit` busy 12 ms every 200 ms.

#[path = "common/fixture.rs"]
mod fixture;

use rtscope_explain::model::Category;
use rtscope_explain::model::LateCause;
use rtscope_trace::decode::{Event, Kind, NoiseSource};
use rtscope_trace::machine::Machine;
use rtscope_trace::timerlat::{attribute_on, sample_spikes};

fn load() -> (Vec<Event>, usize) {
    let (events, types, bad) = fixture::events("timerlat_rt");
    assert_eq!(types, 7, "sched ×2, noise ×4, the timerlat sample");
    (events, bad)
}

#[test]
fn the_noise_events_and_samples_of_a_real_rt_kernel_decode() {
    let (events, bad) = load();
    assert_eq!(bad, 0);
    let count = |f: &dyn Fn(&Kind) -> bool| events.iter().filter(|e| f(&e.kind)).count();
    let irq = count(&|k| {
        matches!(
            k,
            Kind::Noise {
                source: NoiseSource::Irq { .. },
                ..
            }
        )
    });
    let thread = count(&|k| {
        matches!(
            k,
            Kind::Noise {
                source: NoiseSource::Thread { .. },
                ..
            }
        )
    });
    let samples = count(&|k| matches!(k, Kind::TimerlatSample { .. }));
    assert!(
        irq > 50 && thread > 50 && samples > 50,
        "{irq} {thread} {samples}"
    );
    // The x86 timer vector is described as `local_timer:236`; the culprit is a thread noise.
    assert!(events.iter().any(|e| matches!(&e.kind,
        Kind::Noise { source: NoiseSource::Irq { desc, vector: 236 }, .. } if desc == "local_timer")));
    assert!(events.iter().any(|e| matches!(&e.kind,
        Kind::Noise { source: NoiseSource::Thread { comm, .. }, duration_ns } if comm.as_string() == "culprit" && *duration_ns > 5_000_000)));
    assert!(events.windows(2).all(|w| w[0].ts <= w[1].ts), "time order");
}

fn window(events: &[Event], s: &rtscope_explain::model::Spike) -> Vec<Event> {
    let from = s.deadline_ns.saturating_sub(50_000_000);
    events
        .iter()
        .filter(|e| e.ts >= from && e.ts <= s.wakeup_ns)
        .cloned()
        .collect()
}

#[test]
fn every_nanosecond_of_the_timerlat_threads_worst_wake_ups_is_charged() {
    let (events, _) = load();
    let spikes = sample_spikes(&events, 1, 2_000_000);
    assert!(spikes.len() >= 4, "{spikes:?}");
    // Captured in the QEMU guest: an event-less stretch past what the return to user space
    // can take is the hypervisor's, never unexplained (one spike has 3.6 ms of it).
    let guest = Machine {
        guest: true,
        ..Machine::default()
    };
    for s in &spikes {
        let a = attribute_on(&window(&events, s), s, false, guest);
        assert_eq!(
            a.charges.iter().map(|c| c.ns).sum::<u64>(),
            s.latency_ns(),
            "{a:?}"
        );
        assert!(
            a.complete,
            "the wake-up interrupt of timerlat/1 is found: {a:?}"
        );
        assert!(a.ns_where(|c| *c == Category::TimerIrqHandler) > 0, "{a:?}");
        assert!(a.ns_where(|c| *c == Category::Unexplained) == 0, "{a:?}");
    }
}

#[test]
fn the_culprit_thread_is_charged_the_time_its_noise_event_reports() {
    let (events, _) = load();
    // The spike of 22.65 ms: the timer interrupt woke timerlat/1 and the culprit (FIFO 99), which
    // ran first for 1.57 ms (its thread_noise event) before timerlat/1 got the CPU.
    let s = sample_spikes(&events, 1, 22_000_000)
        .into_iter()
        .find(|s| s.latency_ns() < 23_000_000)
        .expect("the 22.65 ms spike");
    let a = attribute_on(&window(&events, &s), &s, false, Machine::default());
    let culprit = a.ns_where(
        |c| matches!(c, Category::Thread { task } if task.comm == "culprit" && task.prio == 0),
    );
    assert!((1_572_057..1_600_000).contains(&culprit), "{a:?}");
    // The 8 ms timer interrupt that woke both (an emulated CPU on a loaded host) is the handler;
    // before it a normal-priority task ran with no event: the timer interrupt came late.
    assert!(
        a.ns_where(|c| *c == Category::TimerIrqHandler) > 7_900_000,
        "{a:?}"
    );
    assert!(
        matches!(
            a.culprit(),
            Some(Category::TimerIrqLate {
                cause: LateCause::IrqsOffOrHypervisor { task: Some(t), .. }
            }) if t.prio >= 100
        ),
        "{a:?}"
    );
}

#[test]
fn an_idle_cpu_before_the_wake_up_interrupt_is_exit_from_idle() {
    let (events, _) = load();
    // Small samples: the CPU was mostly idle when timerlat's timer was due.
    let spikes: Vec<_> = sample_spikes(&events, 1, 0)
        .into_iter()
        .filter(|s| s.latency_ns() < 1_000_000)
        .collect();
    let idle = spikes
        .iter()
        .filter(|s| {
            let from = s.deadline_ns.saturating_sub(50_000_000);
            let ev: Vec<Event> = events
                .iter()
                .filter(|e| e.ts >= from && e.ts <= s.wakeup_ns)
                .cloned()
                .collect();
            attribute_on(&ev, s, false, Machine::default()).ns_where(|c| {
                *c == Category::TimerIrqLate {
                    cause: LateCause::ExitFromIdle,
                }
            }) > 0
        })
        .count();
    assert!(
        idle > 0,
        "no sample with exit from idle among {}",
        spikes.len()
    );
}
