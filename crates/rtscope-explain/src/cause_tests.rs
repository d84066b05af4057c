//! The cause rule on injected charges: who is named, with which share, in which words.

use super::*;
use crate::model::{Charge, Softirq, Spike, Task};

fn task(comm: &str, pid: i32, prio: i32) -> Task {
    Task {
        comm: comm.into(),
        pid,
        prio,
    }
}

fn blocking(comm: &str, pid: i32) -> Category {
    Category::Blocking {
        task: task(comm, pid, 120),
    }
}

fn thread(comm: &str, pid: i32) -> Category {
    Category::Thread {
        task: task(comm, pid, 0),
    }
}

fn irq(name: &str) -> Category {
    Category::Irq { name: name.into() }
}

fn line(parts: &[(Category, u64)], total: u64) -> CauseLine {
    CauseLine::from_parts(parts.iter().cloned(), total).unwrap()
}

/// The spike: 51.67 ms, four lower-priority tasks holding the CPU at 9–15 % each,
/// 51 % together: the group is named with its count, its share and its largest member's.
#[test]
fn four_blocking_tasks_of_9_to_15_percent_are_named_as_a_group_with_every_share() {
    let total = 51_670_000;
    let pct = |p: u64| total * p / 100;
    let l = line(
        &[
            (blocking("synth_db", 9843), pct(15) + 10_000),
            (blocking("kworker/1:2", 88), pct(14)),
            (blocking("synth_db", 9844), pct(12)),
            (blocking("rsyslogd", 612), pct(10)),
            (irq("eth0 (irq 24)"), pct(20)),
            (Category::ReturnToUser, pct(9) - 10_000),
            (Category::Unexplained, pct(20)),
        ],
        total,
    );
    let Main::Group(k) = &l.main else {
        panic!("{l:?}")
    };
    assert_eq!((k.kind, k.members), (Kind::Blocking, 4));
    assert_eq!(
        l.named(),
        None,
        "no culprit under half is named as the cause"
    );
    assert_eq!(
        l.sentence("the worst"),
        "the worst was caused by 4 lower-priority tasks holding the CPU (51 % together, \
         largest synth_db:9843:nice0 15 %; 20 % unexplained)"
    );
}

/// The same four tasks with 45 % together: no group holds half, so the spike was spread, and
/// the line still says what the four held together.
#[test]
fn four_blocking_tasks_under_half_together_make_a_spread_line_with_the_groups_share() {
    let l = line(
        &[
            (blocking("synth_db", 9843), 15),
            (blocking("kworker/1:2", 88), 12),
            (blocking("synth_db", 9844), 9),
            (blocking("rsyslogd", 612), 9),
            (irq("eth0 (irq 24)"), 30),
            (Category::ReturnToUser, 25),
        ],
        100,
    );
    assert!(matches!(l.main, Main::Spread { .. }), "{l:?}");
    assert_eq!(l.causes, 6);
    assert_eq!(
        l.sentence("the worst"),
        "the worst had no main cause, spread over 6 causes (largest IRQ eth0 (irq 24) 30 %, \
         then scheduling and return to user 25 %; 4 lower-priority tasks holding the CPU 45 % \
         together)"
    );
}

/// Two culprits of different kinds at 50 % each: neither is "the" cause; both are printed
/// with their shares.
#[test]
fn two_culprits_sharing_a_spike_half_and_half_are_both_printed_and_neither_named() {
    let l = line(&[(thread("busy_a", 11), 500), (irq("eth0"), 500)], 1_000);
    assert_eq!(l.named(), None);
    let text = l.sentence("the worst");
    assert_eq!(
        text,
        "the worst had no main cause, spread over 2 causes (largest thread busy_a:11:rt99 50 %, \
         then IRQ eth0 50 %)"
    );
    // Two tasks of one kind at 50 % each: the kind is named, with both counted.
    let l = line(
        &[(thread("busy_a", 11), 500), (thread("busy_b", 12), 500)],
        1_000,
    );
    assert_eq!(l.named(), None);
    assert_eq!(
        l.to_string(),
        "2 threads of higher or equal priority (100 % together, largest busy_a:11:rt99 50 %)"
    );
}

/// Exactly half is named; 49 % is not, and its share never rounds up to 50.
#[test]
fn a_culprit_at_exactly_half_is_named_and_one_just_under_is_not() {
    let l = line(
        &[
            (blocking("kworker/0:1", 7), 500),
            (irq("eth0"), 300),
            (Category::Softirq { vec: Softirq::Rcu }, 200),
        ],
        1_000,
    );
    assert_eq!(l.named(), Some(&blocking("kworker/0:1", 7)));
    assert_eq!(
        l.sentence("the worst"),
        "the worst was caused by blocking by kworker/0:1:7:nice0 (50 %)"
    );
    let l = line(
        &[
            (blocking("kworker/0:1", 7), 499),
            (irq("eth0"), 301),
            (Category::Softirq { vec: Softirq::Rcu }, 200),
        ],
        1_000,
    );
    assert_eq!(l.named(), None);
    let text = l.to_string();
    assert!(
        text.contains("largest blocking by kworker/0:1:7:nice0 49 %"),
        "{text}"
    );
    assert!(!text.contains("50 %"), "{text}");
}

/// A spike no event covers is not explained by a cause called "unexplained"; one mostly
/// uncovered names the share unexplained, then the largest known cause with its share.
#[test]
fn unexplained_time_is_a_share_never_a_cause() {
    let all = line(&[(Category::Unexplained, 700)], 1_000);
    assert_eq!(all.main, Main::Unexplained { largest: None });
    assert_eq!(
        all.unexplained_ns, 1_000,
        "uncharged time is unexplained too"
    );
    assert_eq!(
        all.sentence("the worst"),
        "the worst was unexplained (100 % not covered by the trace)"
    );
    let mostly = line(&[(Category::Unexplained, 620), (irq("eth0"), 380)], 1_000);
    assert_eq!(
        mostly.sentence("the worst"),
        "the worst was mostly unexplained (62 % not covered by the trace; largest known cause \
         IRQ eth0 38 %)"
    );
    assert_eq!(mostly.causes, 1);
    // A named culprit says what share was unexplained beside it.
    let named = line(&[(irq("eth0"), 600), (Category::Unexplained, 300)], 1_000);
    assert_eq!(named.to_string(), "IRQ eth0 (60 %; 40 % unexplained)");
}

/// Nothing to say about a spike of no time; a spike with charges but a stored latency of
/// zero is measured by its charges.
#[test]
fn an_empty_spike_has_no_line_and_charges_set_the_base_when_larger() {
    assert_eq!(CauseLine::from_parts(Vec::new(), 0), None);
    assert_eq!(
        CauseLine::from_parts(vec![(Category::Nmi, 0)], 0),
        None,
        "no time at all"
    );
    let l = line(&[(Category::Nmi, 30), (irq("eth0"), 10)], 0);
    assert_eq!(l.total_ns, 40);
    assert_eq!(l.to_string(), "NMI (75 %)");
}

/// A category given twice is summed before the rule; groups of one kind never hide a single
/// culprit holding half.
#[test]
fn repeated_categories_are_summed_and_a_single_culprit_beats_its_group() {
    let l = line(
        &[
            (blocking("a", 1), 30),
            (blocking("b", 2), 20),
            (blocking("a", 1), 25),
        ],
        100,
    );
    assert_eq!(l.causes, 2);
    assert_eq!(
        l.to_string(),
        "blocking by a:1:nice0 (55 %; 25 % unexplained)"
    );
}

/// Task names come from the traced system: control characters are escaped in every form.
#[test]
fn task_names_are_escaped_in_one_group_and_spread_lines() {
    let odd = |pid| Category::Blocking {
        task: task("evil\n\x1b[2J", pid, 120),
    };
    for l in [
        line(&[(odd(1), 90)], 100),
        line(&[(odd(1), 30), (odd(2), 25)], 100),
        line(&[(odd(1), 30), (irq("x\ty"), 25)], 100),
    ] {
        let text = l.sentence("the worst");
        assert!(!text.chars().any(char::is_control), "{text:?}");
        assert!(text.contains("evil\\n\\u{1b}[2J"), "{text}");
    }
}

/// From an attribution: the spike's latency is the base, the charges the parts.
#[test]
fn an_attribution_gives_its_latency_as_the_base() {
    let a = Attribution {
        spike: Spike {
            cpu: 1,
            tid: 9,
            deadline_ns: 1_000,
            wakeup_ns: 3_000,
            smis: None,
        },
        charges: vec![
            Charge::new(thread("hog", 5), 1_500),
            Charge::new(Category::TimerIrqHandler, 100),
        ],
        complete: true,
        lost_events: false,
        siblings: Vec::new(),
        stack: None,
        handler: None,
    };
    let l = CauseLine::of(&a).unwrap();
    assert_eq!((l.total_ns, l.unexplained_ns), (2_000, 400));
    assert_eq!(
        l.sentence("the worst"),
        "the worst was caused by thread hog:5:rt99 (75 %; 20 % unexplained)"
    );
}

/// The kinds follow the classes, with thread time split by priority, and "unexplained" is none.
#[test]
fn every_category_but_unexplained_has_a_kind_within_its_class() {
    use crate::classes::Class;
    let cats = [
        blocking("a", 1),
        thread("b", 2),
        irq("eth0"),
        Category::TimerIrqHandler,
        Category::Softirq {
            vec: Softirq::Timer,
        },
        Category::Nmi,
        Category::ReturnToUser,
        Category::MeasuringThreadBlocked,
        Category::RtThrottling,
        Category::Hypervisor,
        Category::Firmware,
    ];
    for c in &cats {
        let k = Kind::of(c).unwrap();
        let class = match k {
            Kind::Blocking | Kind::Thread => Class::Thread,
            Kind::Irq => Class::Irq,
            Kind::Softirq => Class::Softirq,
            Kind::Nmi => Class::Nmi,
            Kind::Switch => Class::Switch,
            Kind::Throttling => Class::Throttling,
            Kind::Hypervisor => Class::Hypervisor,
            Kind::Firmware => Class::Firmware,
        };
        assert_eq!(class, Class::of(c), "{c}");
    }
    assert_eq!(Kind::of(&Category::Unexplained), None);
    assert_eq!(Kind::Softirq.count(1), "1 softirq");
    assert_eq!(Kind::Irq.count(3), "3 interrupt causes");
}

fn spike(at: u64, latency: u64, charges: Vec<Charge>) -> Attribution {
    Attribution {
        spike: Spike {
            cpu: 1,
            tid: 9,
            deadline_ns: at,
            wakeup_ns: at + latency,
            smis: None,
        },
        charges,
        complete: true,
        lost_events: false,
        siblings: Vec::new(),
        stack: None,
        handler: None,
    }
}

/// `runs explain` and `runs show`: the section says what caused the worst spike by the rule,
/// a group with its share rather than its largest member as "the" cause.
#[test]
fn the_explanation_section_gives_the_worst_spikes_cause_line() {
    use crate::book::{Explained, SpikeBook};
    use crate::render::{summary, summary_of, Subject};
    let mut b = SpikeBook::new(60_000_000_000, 5, 10);
    let four = vec![
        Charge::new(blocking("synth_db", 9843), 7_800_000),
        Charge::new(blocking("kworker/1:2", 88), 7_300_000),
        Charge::new(blocking("synth_db", 9844), 6_300_000),
        Charge::new(blocking("rsyslogd", 612), 5_000_000),
        Charge::new(irq("eth0 (irq 24)"), 15_000_000),
        Charge::new(Category::ReturnToUser, 10_270_000),
    ];
    b.add(Explained::Traced(spike(5_000_000_000, 51_670_000, four)));
    let one = vec![Charge::new(thread("hog", 5), 900_000)];
    b.add(Explained::Traced(spike(6_000_000_000, 1_000_000, one)));
    let s = b.summary(crate::model::Tier::FlightRecorder, None, 300_000);
    let line = "  the worst spike (51.67 ms) was caused by 4 lower-priority tasks holding the CPU \
                (51 % together, largest synth_db:9843:nice0 15 %)\n";
    let text = summary(&s, 4_000_000_000, 10);
    assert!(text.contains(line), "{text}");
    assert!(!text.contains("caused by blocking by synth_db"), "{text}");
    assert_eq!(
        worst_line(&s, "gap"),
        Some(line.trim().replacen("worst spike", "worst gap", 1))
    );
    assert!(summary_of(&s, 4_000_000_000, 10, Subject::Gaps).contains("the worst gap (51.67 ms)"));
    // No traced spike: no line.
    let empty =
        SpikeBook::new(60_000_000_000, 5, 10).summary(crate::model::Tier::Timerlat, None, 1);
    assert_eq!(worst_line(&empty, "spike"), None);
    assert!(!summary(&empty, 0, 5).contains("caused by"));
}
