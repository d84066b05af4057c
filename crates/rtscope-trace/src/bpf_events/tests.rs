//! Synthetic records of every kind against a fixture `/proc`.

use super::*;
use rtscope_bpf::recorder::record::report_state;
use std::path::Path;

/// A `/proc` with tasks 10 (`worker`) and 11 (`rtscope-m1`, its name with the newline
/// `/proc` ends it with) and IRQ 5 (`eth0`) and the shared IRQ 9 (`acpi`, `i8042`).
fn fixture(name: &str) -> PathBuf {
    let root =
        std::env::temp_dir().join(format!("rtscope-bpf-events-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    for (pid, comm) in [(10, "worker\n"), (11, "rtscope-m1\n")] {
        let d = root.join(pid.to_string());
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("comm"), comm).unwrap();
    }
    for dir in ["irq/5/eth0", "irq/9/i8042", "irq/9/acpi"] {
        std::fs::create_dir_all(root.join(dir)).unwrap();
    }
    std::fs::write(root.join("irq/5/smp_affinity"), "3\n").unwrap();
    root
}

fn rec(ts: u64, kind: RecordKind) -> Record {
    Record {
        ts,
        cpu: 1,
        index: ts,
        kind,
    }
}

fn switch(ts: u64, prev_pid: u32, prev_state: u32, next_pid: u32) -> Record {
    rec(
        ts,
        RecordKind::Switch {
            prev_pid,
            prev_prio: 120,
            prev_state,
            next_pid,
            next_prio: 49,
        },
    )
}

fn converter(root: &Path) -> Converter {
    Converter::new(Names::at(root))
}

#[test]
fn a_switch_reads_as_the_trace_events_with_names_from_proc() {
    let root = fixture("switch");
    let mut c = converter(&root);
    let e = c.events(&[switch(100, 10, 1, 11)]);
    let want = Kind::Switch {
        prev_pid: 10,
        prev_prio: 120,
        prev_comm: Comm::new(b"worker"),
        prev_state: TaskState::Asleep,
        next_pid: 11,
        next_prio: 49,
        next_comm: Comm::new(b"rtscope-m1"),
    };
    assert_eq!(
        e,
        vec![Event {
            ts: 100,
            pid: 10,
            kind: want
        }]
    );
    std::fs::remove_dir_all(root).unwrap();
}

#[test]
fn prev_state_decodes_as_the_tracefs_paths_for_every_reported_state() {
    let root = fixture("states");
    let mut c = converter(&root);
    // (preempted, the raw state the tracepoint passes, what the trace event's decoding says)
    let cases = [
        (true, 0x1, TaskState::Preempted),
        (false, 0, TaskState::Preempted),
        (false, 0x1, TaskState::Asleep),
        (false, 0x2, TaskState::Blocked),
        (false, 0x402, TaskState::Asleep),   // TASK_IDLE: `I`
        (false, 0x1000, TaskState::Blocked), // an rtlock wait
        (false, 0x4, TaskState::Other),      // stopped
        (false, 0x8, TaskState::Other),      // traced
        (false, 0x80, TaskState::Other),     // dead: a zombie's
    ];
    for (preempt, raw, want) in cases {
        let state = report_state(preempt, raw);
        let e = c.events(&[switch(1, 10, state, 11)]);
        let Kind::Switch { prev_state, .. } = e[0].kind else {
            panic!("{e:?}")
        };
        assert_eq!(prev_state, want, "{preempt} {raw:#x}");
        assert_eq!(prev_state, TaskState::from_raw(i64::from(state)));
    }
    std::fs::remove_dir_all(root).unwrap();
}

#[test]
fn the_idle_task_is_swapper_and_a_gone_task_has_no_name() {
    let root = fixture("gone");
    let mut c = converter(&root);
    let e = c.events(&[switch(5, 0, 0, 4242)]);
    let Kind::Switch {
        prev_comm,
        next_comm,
        ..
    } = e[0].kind
    else {
        panic!("{e:?}")
    };
    assert_eq!(prev_comm.as_string(), "swapper/1");
    assert_eq!(next_comm, Comm::default());
    // The tracefs path's Tasks shows it as it shows a task no event named.
    let mut tasks = crate::decode::Tasks::default();
    tasks.learn(&e[0]);
    assert_eq!(tasks.task(4242).comm, "");
    std::fs::remove_dir_all(root).unwrap();
}

#[test]
fn a_name_is_read_once_and_forgotten_on_request() {
    let root = fixture("cache");
    let mut names = Names::at(&root);
    assert_eq!(names.task(10, 0).as_string(), "worker");
    std::fs::write(root.join("10/comm"), "renamed\n").unwrap();
    assert_eq!(names.task(10, 0).as_string(), "worker");
    names.forget();
    assert_eq!(names.task(10, 0).as_string(), "renamed");
    std::fs::remove_dir_all(root).unwrap();
}

#[test]
fn a_waking_has_no_target_cpu() {
    let root = fixture("waking");
    let mut c = converter(&root);
    let e = c.events(&[rec(7, RecordKind::Waking { pid: 11, prio: 49 })]);
    let want = Kind::Waking {
        pid: 11,
        prio: 49,
        comm: Comm::new(b"rtscope-m1"),
        target_cpu: NO_TARGET_CPU,
    };
    assert_eq!(e[0].kind, want);
    std::fs::remove_dir_all(root).unwrap();
}

#[test]
fn interrupts_softirqs_vectors_and_nmis_read_as_the_trace_events() {
    let root = fixture("irqs");
    let mut c = converter(&root);
    let cases = [
        (
            RecordKind::IrqEntry { irq: 5 },
            Kind::IrqEntry {
                irq: 5,
                name: "eth0".into(),
            },
        ),
        (
            RecordKind::IrqEntry { irq: 9 },
            Kind::IrqEntry {
                irq: 9,
                name: "acpi,i8042".into(),
            },
        ),
        (
            RecordKind::IrqEntry { irq: 77 },
            Kind::IrqEntry {
                irq: 77,
                name: String::new(),
            },
        ),
        (RecordKind::IrqExit { irq: 5 }, Kind::IrqExit { irq: 5 }),
        (
            RecordKind::SoftirqEntry { vec: 1 },
            Kind::SoftirqEntry { vec: 1 },
        ),
        (
            RecordKind::SoftirqExit { vec: 9 },
            Kind::SoftirqExit { vec: 9 },
        ),
        (
            RecordKind::Nmi {
                handler: 0xffff_ffff_8100_0000,
                delta_ns: 1234,
            },
            Kind::Nmi { delta_ns: 1234 },
        ),
        (
            RecordKind::Nmi {
                handler: 1,
                delta_ns: -5,
            },
            Kind::Nmi { delta_ns: 0 },
        ),
    ];
    for (r, want) in cases {
        assert_eq!(c.kind(&rec(1, r)), want, "{r:?}");
    }
    for (v, _) in bpf::Vector::ALL {
        let want = vector_of(v);
        assert_eq!(
            Vector::ALL.iter().position(|x| x.0 == want),
            bpf::Vector::ALL.iter().position(|x| x.0 == v)
        );
        let entry = RecordKind::VectorEntry {
            vector: v,
            number: 0xec,
        };
        let exit = RecordKind::VectorExit {
            vector: v,
            number: 0xec,
        };
        assert_eq!(c.kind(&rec(1, entry)), Kind::VectorEntry(want));
        assert_eq!(c.kind(&rec(1, exit)), Kind::VectorExit(want));
    }
    std::fs::remove_dir_all(root).unwrap();
}

#[test]
fn handlers_are_their_functions_addresses_as_the_trace_events_give_them() {
    let root = fixture("handlers");
    let mut c = converter(&root);
    let f = 0xffff_ffff_8123_4560;
    let cases = [
        (
            RecordKind::TaskletEntry { func: f },
            handler(HandlerKind::Tasklet, f),
        ),
        (
            RecordKind::CsdEntry { func: f },
            handler(HandlerKind::Csd, f),
        ),
        (
            RecordKind::TimerEntry {
                function: f,
                timer: 0xffff_8880_0000_1000,
            },
            handler(HandlerKind::Timer, f),
        ),
        (
            RecordKind::TaskletExit { func: f },
            Kind::HandlerExit {
                kind: HandlerKind::Tasklet,
            },
        ),
        (
            RecordKind::CsdExit { func: f },
            Kind::HandlerExit {
                kind: HandlerKind::Csd,
            },
        ),
        (
            RecordKind::TimerExit {
                timer: 0xffff_8880_0000_1000,
            },
            Kind::HandlerExit {
                kind: HandlerKind::Timer,
            },
        ),
    ];
    for (r, want) in cases {
        assert_eq!(c.kind(&rec(1, r)), want, "{r:?}");
    }
    std::fs::remove_dir_all(root).unwrap();
}

#[test]
fn common_pid_follows_the_switches_and_before_the_first_is_its_previous_task() {
    let root = fixture("pids");
    let mut c = converter(&root);
    let w = [
        rec(1, RecordKind::IrqEntry { irq: 5 }),
        rec(2, RecordKind::Waking { pid: 11, prio: 49 }),
        rec(3, RecordKind::IrqExit { irq: 5 }),
        switch(4, 10, 0x100, 11),
        rec(5, RecordKind::SoftirqEntry { vec: 1 }),
        switch(6, 11, 1, 0),
        rec(7, RecordKind::IrqEntry { irq: 5 }),
    ];
    let pids: Vec<i32> = c.events(&w).iter().map(|e| e.pid).collect();
    assert_eq!(pids, [10, 10, 10, 10, 11, 11, 0]);
    // A later window without a switch: the task the last one ended in (idle).
    let later = [rec(9, RecordKind::IrqExit { irq: 5 })];
    assert_eq!(c.events(&later)[0].pid, 0);
    // One that begins before the last ended cannot know.
    let earlier = [rec(8, RecordKind::SoftirqExit { vec: 1 })];
    assert_eq!(c.events(&earlier)[0].pid, UNKNOWN_PID);
    // Nor can a first window without a switch, nor one of another CPU.
    let mut fresh = converter(&root);
    assert_eq!(fresh.events(&later)[0].pid, UNKNOWN_PID);
    let other = [Record { cpu: 0, ..later[0] }];
    assert_eq!(c.events(&other)[0].pid, UNKNOWN_PID);
    assert!(c.events(&[]).is_empty());
    std::fs::remove_dir_all(root).unwrap();
}

#[test]
fn records_of_another_cpu_in_a_window_are_skipped() {
    let root = fixture("cpus");
    let mut c = converter(&root);
    let mut stray = switch(2, 11, 1, 0);
    stray.cpu = 0;
    let e = c.events(&[
        switch(1, 10, 1, 11),
        stray,
        rec(3, RecordKind::IrqExit { irq: 5 }),
    ]);
    assert_eq!(
        e.iter().map(|e| (e.ts, e.pid)).collect::<Vec<_>>(),
        [(1, 10), (3, 11)]
    );
    std::fs::remove_dir_all(root).unwrap();
}

#[test]
fn a_workqueue_workers_name_is_its_comm_without_its_work() {
    assert_eq!(kernel_comm(b"kworker/1:2-mm_percpu_wq\n"), b"kworker/1:2");
    assert_eq!(
        kernel_comm(b"kworker/u8:0+events_unbound\n"),
        b"kworker/u8:0"
    );
    assert_eq!(kernel_comm(b"kworker/0:1H\n"), b"kworker/0:1H");
    assert_eq!(kernel_comm(b"kworker/R-rcu_gp\n"), b"kworker/R-rcu_g");
    assert_eq!(kernel_comm(b"rtscope-m1\n"), b"rtscope-m1");
    assert_eq!(kernel_comm(b"a-name-of-many-bytes\n"), b"a-name-of-many-");
    assert_eq!(kernel_comm(b""), b"");
}
