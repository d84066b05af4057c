//! Tests of the plain-text rendering ([`super`]).

use super::*;
use crate::book::SpikeBook;
use crate::model::{Attribution, Charge, Spike, Task, Tier};

#[test]
fn a_cpu_whose_interrupt_exits_stopped_is_warned_about_and_kept_in_the_json() {
    let mut s = SpikeBook::new(60_000_000_000, 5, 10).summary(Tier::Timerlat, None, 20_000);
    let m = MissingExits {
        cpu: 1,
        since_ns: 5_412_000_000,
        missed: 6,
    };
    s.missing_exits.push(m);
    let text = summary(&s, 5_000_000_000, 5);
    assert!(
        text.contains("warning: CPU 1: 6 interrupt(s) traced without their exit (the last exit traced 0.412 s into the run)"),
        "{text}"
    );
    assert!(text.contains("not the hypervisor's"), "{text}");
    let back: ExplainSummary = serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
    assert_eq!(back.missing_exits, vec![m]);
    let line = missing_exits_line(&m, 6_000_000_000);
    assert!(line.contains("no exit traced in the run"), "{line}");
    // Absent from older summaries and from runs that lost none.
    s.missing_exits.clear();
    assert!(!serde_json::to_string(&s).unwrap().contains("missing_exits"));
}

#[test]
fn a_command_label_names_the_threads_command_without_its_pid() {
    let task = |comm: &str| Task {
        comm: comm.into(),
        pid: 4711,
        prio: 0,
    };
    let t = Category::Thread {
        task: task("culprit"),
    };
    assert_eq!(label(&t), "thread culprit:4711:rt99");
    assert_eq!(command_label(&t), "thread culprit");
    let odd = Category::Blocking { task: task("a\nb") };
    assert!(
        !command_label(&odd).contains('\n'),
        "{}",
        command_label(&odd)
    );
    assert!(!command_label(&odd).contains("4711"));
    assert_eq!(command_label(&Category::Nmi), label(&Category::Nmi));
}

#[test]
fn a_spike_with_a_kernel_stack_shows_its_folded_frames_and_the_time_by_function() {
    let mut b = SpikeBook::new(60_000_000_000, 5, 10);
    let task = Task {
        comm: "noisy".into(),
        pid: 88,
        prio: 120,
    };
    let frames = [
        "__schedule",
        "preempt_schedule_common",
        "noisy_hold_preempt_off [noisy]",
    ];
    b.add(Explained::Traced(Attribution {
        spike: Spike {
            cpu: 1,
            tid: 9,
            deadline_ns: 5_000_000_000,
            wakeup_ns: 5_002_000_000,
            smis: None,
        },
        charges: vec![Charge::new(
            Category::Thread { task: task.clone() },
            2_000_000,
        )],
        complete: true,
        lost_events: false,
        siblings: Vec::new(),
        stack: Some(crate::model::KernelStack {
            task,
            frames: frames.iter().map(|f| f.to_string()).collect(),
        }),
        handler: None,
    }));
    let s = b.summary(Tier::FlightRecorder, None, 100_000);
    assert_eq!(s.functions.len(), 1);
    let text = summary(&s, 5_000_000_000, 5);
    assert!(
        text.contains("kernel stack: noisy_hold_preempt_off [noisy] (noisy:88:nice0)"),
        "{text}"
    );
    assert!(text.contains("time by kernel function"), "{text}");
    assert!(
        text.lines()
            .any(|l| l.contains("noisy_hold_preempt_off [noisy]") && l.contains("     1  2.00 ms")),
        "{text}"
    );
    let back: ExplainSummary = serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
    assert_eq!(back, s);
}

#[test]
fn the_section_names_the_culprit_with_shares() {
    let mut b = SpikeBook::new(60_000_000_000, 5, 10);
    let spike = Spike {
        cpu: 1,
        tid: 9,
        deadline_ns: 5_000_000_000,
        wakeup_ns: 5_002_380_000,
        smis: None,
    };
    let task = Task {
        comm: "cul\nprit".into(),
        pid: 4711,
        prio: 0,
    };
    b.add(Explained::Traced(Attribution {
        spike,
        charges: vec![
            Charge::new(Category::Thread { task }, 2_300_000),
            Charge::new(Category::TimerIrqHandler, 80_000),
        ],
        complete: true,
        lost_events: false,
        siblings: Vec::new(),
        stack: None,
        handler: None,
    }));
    let text = summary(
        &b.summary(Tier::FlightRecorder, None, 1_500_000),
        4_000_000_000,
        10,
    );
    assert!(
        text.contains("tier flight-recorder, threshold 1.50 ms"),
        "{text}"
    );
    assert!(text.contains("1.002s cpu1 2.38 ms: thread cul\\nprit:4711:rt99 2.30 ms (97%), timer IRQ handler 80.0 µs (3%)"), "{text}");
    assert_eq!(dur(812), "812 ns");
}

#[test]
fn the_coverage_line_gives_traced_spikes_their_share_of_spike_time_and_the_reasons() {
    let mut b = SpikeBook::new(60_000_000_000, 5, 10);
    let spike = Spike {
        cpu: 1,
        tid: 9,
        deadline_ns: 1_000_000,
        wakeup_ns: 4_000_000,
        smis: None,
    };
    b.add(Explained::Traced(Attribution {
        spike,
        charges: vec![Charge::new(Category::Hypervisor, 3_000_000)],
        complete: true,
        lost_events: false,
        siblings: Vec::new(),
        stack: None,
        handler: None,
    }));
    b.not_traced(crate::model::NotTraced::LostEvents);
    b.no_context(1_000_000);
    b.not_traced(crate::model::NotTraced::TracerNotLive);
    b.no_context(2_000_000);
    let s = b.summary(Tier::Timerlat, None, 500_000);
    assert_eq!(
        coverage(&s.counts),
        "traced 1 of 3 spikes above the threshold (50.0 % of spike time); \
         not traced: 1 tracer not yet live, 1 events lost (buffer overrun)"
    );
    assert!(summary(&s, 0, 5).contains(&coverage(&s.counts)));
    // A summary stored before spike time was counted: the share is unknown, not 0 %.
    let mut old = s.counts;
    (old.spike_ns, old.traced_ns) = (0, 0);
    assert!(coverage(&old).contains("(share of spike time unknown)"));
    // A noise run speaks of gaps, never of wake-ups or spikes.
    let gaps = coverage_of(&s.counts, Subject::Gaps);
    assert!(gaps.starts_with("traced 1 of 3 gaps above the threshold (50.0 % of gap time)"));
    let text = summary_of(&s, 0, 5, Subject::Gaps);
    assert!(
        text.starts_with("What took the CPU in the longest gaps?"),
        "{text}"
    );
    assert!(
        !text.contains("spike") && !text.contains("wake-up"),
        "{text}"
    );
}

#[test]
fn each_worst_gap_ends_with_its_unexplained_rest_and_a_spike_does_not() {
    let mut b = SpikeBook::new(60_000_000_000, 5, 10);
    // 3 µs: five causes (four shown), 400 ns unexplained and 500 ns no charge covers.
    let charges = [
        (Category::Nmi, 1_000),
        (Category::RtThrottling, 500),
        (Category::ReturnToUser, 300),
        (Category::Hypervisor, 200),
        (Category::TimerIrqHandler, 100),
        (Category::Unexplained, 400),
    ];
    let a = Attribution {
        spike: Spike {
            cpu: 2,
            tid: 9,
            deadline_ns: 1_000_000,
            wakeup_ns: 1_003_000,
            smis: None,
        },
        charges: charges
            .into_iter()
            .map(|(c, ns)| Charge::new(c, ns))
            .collect(),
        complete: true,
        lost_events: false,
        siblings: Vec::new(),
        stack: None,
        handler: None,
    };
    assert_eq!(unexplained_rest_ns(&a), 900);
    b.add(Explained::Traced(a));
    let s = b.summary(Tier::Timerlat, None, 1_000);
    let gaps = summary_of(&s, 0, 5, Subject::Gaps);
    let line = gaps.lines().find(|l| l.contains("cpu2")).unwrap();
    assert!(
        line.ends_with(&format!("unexplained rest {} (30%)", dur(900))),
        "{line}"
    );
    // The rest is said once, not also among the causes.
    assert_eq!(line.matches("unexplained").count(), 1, "{line}");
    let spikes = summary(&s, 0, 5);
    assert!(!spikes.contains("unexplained rest"), "{spikes}");
}

#[test]
fn a_gap_of_many_causes_names_four_then_the_others_and_its_shares_sum_to_100() {
    let thread = |pid: i32| Category::Thread {
        task: Task {
            comm: format!("w{pid}"),
            pid,
            prio: 120,
        },
    };
    // 40 ms: causes of 8, 4, 3 and 1.5 ms, 100 threads of 200 µs and 3.5 ms uncovered.
    let mut charges: Vec<Charge> = [8_000_000, 4_000_000, 3_000_000, 1_500_000]
        .into_iter()
        .enumerate()
        .map(|(i, ns)| Charge::new(thread(i as i32 + 1), ns))
        .collect();
    charges.extend((100..200).map(|pid| Charge::new(thread(pid), 200_000)));
    let a = Attribution {
        spike: Spike {
            cpu: 3,
            tid: 9,
            deadline_ns: 1_000_000,
            wakeup_ns: 41_000_000,
            smis: None,
        },
        charges,
        complete: true,
        lost_events: false,
        siblings: Vec::new(),
        stack: None,
        handler: None,
    };
    let line = traced_line_of(&a, Subject::Gaps);
    assert_eq!(
        line,
        "cpu3 40.00 ms: thread w1:1:nice0 8.00 ms (20%), thread w2:2:nice0 4.00 ms (10%), \
         thread w3:3:nice0 3.00 ms (7%), thread w4:4:nice0 1.50 ms (4%), \
         + 100 other causes 20.00 ms (50%), unexplained rest 3.50 ms (9%)"
    );
    let shares: u64 = line
        .split('(')
        .skip(1)
        .map(|p| p.split('%').next().unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(shares, 100, "{line}");
    // A spike's line sums its other causes too.
    let spike = traced_line_of(&a, Subject::WakeUps);
    assert!(
        spike.ends_with("+ 100 other causes 20.00 ms (50%)"),
        "{spike}"
    );
}

#[test]
fn an_smt_sibling_is_shown_beside_time_below_the_kernel_and_counted() {
    let mut b = SpikeBook::new(60_000_000_000, 5, 10);
    let gap = |at: u64, category: Category, busy_ns: u64| Attribution {
        spike: Spike {
            cpu: 1,
            tid: 9,
            deadline_ns: at,
            wakeup_ns: at + 100_000,
            smis: None,
        },
        charges: vec![Charge::new(category, 100_000)],
        complete: true,
        lost_events: false,
        siblings: vec![crate::model::SiblingActivity {
            cpu: 5,
            busy_ns,
            span_ns: 100_000,
            task: (busy_ns > 0).then(|| Task {
                comm: "spin\x1b".into(),
                pid: 77,
                prio: 120,
            }),
        }],
        stack: None,
        handler: None,
    };
    let busy = gap(1_000_000, Category::Hypervisor, 98_000);
    let line = traced_line_of(&busy, Subject::WakeUps);
    assert!(
        line.ends_with(
            "hypervisor/steal 100.0 µs (100%); SMT sibling cpu5 busy 98 % (spin\\u{1b}:77:nice0)"
        ),
        "{line}"
    );
    b.add(Explained::Traced(busy));
    b.add(Explained::Traced(gap(2_000_000, Category::Unexplained, 0)));
    let thread = Category::Thread {
        task: Task {
            comm: "kworker".into(),
            pid: 3,
            prio: 120,
        },
    };
    let in_kernel = gap(3_000_000, thread, 100_000);
    assert!(
        !traced_line_of(&in_kernel, Subject::WakeUps).contains("SMT"),
        "only beside time below the kernel"
    );
    b.add(Explained::Traced(in_kernel));
    let s = b.summary(Tier::FlightRecorder, None, 50_000);
    assert_eq!(
        s.smt,
        Some(SmtCounts {
            below_kernel: 2,
            below_kernel_ns: 200_000,
            sibling_busy: 1,
            sibling_busy_ns: 100_000,
        })
    );
    assert!(summary(&s, 0, 5).contains(
        "SMT siblings traced: 2 spikes had time below the kernel (200.0 µs); in 1 of them \
         (100.0 µs) a sibling was busy for more than half of the spike"
    ));
    assert!(summary(&s, 0, 5)
        .contains("unexplained (not covered by the trace) 100.0 µs (100%); SMT sibling cpu5 idle"));
    // Without siblings traced: no SMT line at all.
    let mut plain = SpikeBook::new(60_000_000_000, 5, 10);
    plain.add(Explained::Traced(Attribution {
        siblings: Vec::new(),
        stack: None,
        handler: None,
        ..gap(1_000_000, Category::Hypervisor, 0)
    }));
    assert_eq!(plain.summary(Tier::FlightRecorder, None, 50_000).smt, None);
}
