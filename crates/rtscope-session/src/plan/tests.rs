use super::*;

fn online() -> CpuSet {
    CpuSet::from_cpus([0, 1])
}

#[test]
fn defaults_are_one_fifo_90_thread_per_cpu_for_60_s() {
    let p = RunPlan::build(&PlanSpec::default(), &online()).unwrap();
    assert_eq!(p.config.threads.len(), 2);
    assert_eq!(p.config.duration, Some(DEFAULT_DURATION));
    assert!(p.per_cpu);
    assert!(p.config.threads.iter().all(|t| t.priority == 90));
}

#[test]
fn a_nice_value_the_kernel_would_clamp_is_refused_and_idle_records_no_priority() {
    let spec = |policy, priority| PlanSpec {
        policy,
        priority,
        ..PlanSpec::default()
    };
    for (policy, name) in [
        (PolicyChoice::Other, "other"),
        (PolicyChoice::Batch, "batch"),
    ] {
        for bad in [50, 20, -21, 90] {
            let e = RunPlan::build(&spec(policy, bad), &online()).unwrap_err();
            assert_eq!(e.field, Field::Priority);
            assert_eq!(
                e.message(Naming::Flags),
                format!(
                    "invalid value '{bad}' for '--priority': {name} takes a nice value, -20..19"
                )
            );
        }
        for ok in [-20, 0, 19] {
            let p = RunPlan::build(&spec(policy, ok), &online()).unwrap();
            assert!(p.config.threads.iter().all(|t| t.priority == ok));
        }
    }
    let p = RunPlan::build(&spec(PolicyChoice::Idle, 90), &online()).unwrap();
    assert!(
        p.config.threads.iter().all(|t| t.priority == 0),
        "idle has no priority"
    );
}

#[test]
fn errors_name_the_field_each_front_end_s_way() {
    let s = PlanSpec {
        threads: Some(0),
        ..PlanSpec::default()
    };
    let e = RunPlan::build(&s, &online()).unwrap_err();
    assert_eq!(e.field, Field::Threads);
    assert!(e.message(Naming::Flags).contains("'--threads'"));
    assert!(e.message(Naming::Keys).contains("'threads'"));
    let s = PlanSpec {
        policy: PolicyChoice::Deadline,
        ..PlanSpec::default()
    };
    let e = RunPlan::build(&s, &online()).unwrap_err();
    assert_eq!(
        e.message(Naming::Keys),
        "'policy deadline' needs 'dl_runtime' (e.g. dl_runtime 100us)"
    );
    assert!(e.message(Naming::Flags).contains("'--dl-runtime'"));
}

#[test]
fn intervals_and_distances_beyond_an_hour_are_refused_with_the_range() {
    let spec = |interval, distance, threads| PlanSpec {
        interval,
        distance,
        threads: Some(threads),
        duration: Some(Nanos::from_secs(7200)),
        ..PlanSpec::default()
    };
    let e = RunPlan::build(&spec(Nanos::from_secs(3601), Nanos::ZERO, 1), &online()).unwrap_err();
    assert_eq!(e.field, Field::Interval);
    assert_eq!(
        e.message(Naming::Flags),
        "invalid value '3601s' for '--interval': a thread's interval must be 1us..3600s (1 hour)"
    );
    let e = RunPlan::build(
        &spec(Nanos::from_secs(1), Nanos::from_secs(1800), 3),
        &online(),
    )
    .unwrap_err();
    assert_eq!(e.field, Field::Distance);
    assert_eq!(
        e.message(Naming::Keys),
        "invalid value '1800s' for 'distance': a thread's interval must be 1us..3600s (1 hour) (the last thread's would be 3601s)"
    );
    let ok = RunPlan::build(&spec(MAX_INTERVAL, Nanos::ZERO, 2), &online()).unwrap();
    assert!(ok.config.threads.iter().all(|t| t.interval == MAX_INTERVAL));
}

#[test]
fn deadline_threads_are_never_pinned() {
    let s = PlanSpec {
        policy: PolicyChoice::Deadline,
        dl_runtime: Some(Nanos::from_us(100)),
        ..PlanSpec::default()
    };
    let p = RunPlan::build(&s, &online()).unwrap();
    assert!(p.config.threads.iter().all(|t| t.affinity.is_none()));
    let pinned = PlanSpec {
        cpus: Some(CpuSet::from_cpus([1])),
        ..s
    };
    let e = RunPlan::build(&pinned, &online()).unwrap_err();
    assert_eq!(e.problem, Problem::DeadlinePinned);
    assert!(e.hint(Naming::Flags).unwrap().contains("--threads"));
}

#[test]
fn housekeeping_cpus_must_be_online_and_not_measured() {
    let spec = |cpus: &[usize], hk: &[usize]| PlanSpec {
        cpus: Some(CpuSet::from_cpus(cpus.iter().copied())),
        housekeeping_cpus: Some(CpuSet::from_cpus(hk.iter().copied())),
        ..PlanSpec::default()
    };
    let p = RunPlan::build(&spec(&[1], &[0]), &online()).unwrap();
    assert_eq!(p.housekeeping_cpus, Some(CpuSet::from_cpus([0])));
    assert!(p.placement(&online()).live_analysis());
    let e = RunPlan::build(&spec(&[1], &[0, 5]), &online()).unwrap_err();
    assert_eq!(
        e.message(Naming::Flags),
        "invalid value for '--housekeeping': CPU 5 is not online (online CPUs: 0-1)"
    );
    let e = RunPlan::build(&spec(&[1], &[0, 1]), &online()).unwrap_err();
    assert_eq!(e.field, Field::Housekeeping);
    assert_eq!(
        e.message(Naming::Keys),
        "invalid value for 'housekeeping': CPU 1 is measured; rtscope's own threads must not run where a measuring thread does"
    );
    assert!(e.hint(Naming::Flags).unwrap().contains("outside --cpus"));
    // Every CPU measured by default: no housekeeping CPU is left.
    let p = RunPlan::build(&PlanSpec::default(), &online()).unwrap();
    assert!(!p.placement(&online()).live_analysis());
}

#[test]
fn priospread_and_distance_step_per_thread() {
    let s = PlanSpec {
        threads: Some(3),
        priospread: true,
        distance: Nanos::from_us(10),
        ..PlanSpec::default()
    };
    let p = RunPlan::build(&s, &online()).unwrap();
    let prios: Vec<i32> = p.config.threads.iter().map(|t| t.priority).collect();
    assert_eq!(prios, [90, 89, 88]);
    assert_eq!(p.config.threads[2].interval, Nanos::from_us(1020));
    assert!(!p.per_cpu);
}

/// A respond workload of eventfd and futex on `placements`, 1 ms apart, 2 s long.
fn respond_spec(placements: &[(usize, usize)], burst: u32, pacing: Pacing) -> PlanSpec {
    use rtscope_respond::ipc::{IpcKind, Placement};
    PlanSpec {
        threads: Some(1),
        priority: 80,
        duration: Some(Nanos::from_secs(2)),
        workload: WorkloadSpec::Respond(RespondSpec::Ipc {
            kinds: vec![IpcKind::Eventfd, IpcKind::Futex],
            placements: placements
                .iter()
                .map(|&(s, r)| Placement::cross(s, r))
                .collect(),
            burst,
            pacing,
        }),
        ..PlanSpec::default()
    }
}

use rtscope_respond::ipc::Pacing;

#[test]
fn a_respond_workload_takes_the_plan_s_settings_and_its_threads_are_the_receivers() {
    let p = RunPlan::build(
        &respond_spec(&[(0, 1), (1, 1)], 3, Pacing::Timer),
        &online(),
    )
    .unwrap();
    let Workload::Respond(RespondPlan::Ipc(configs)) = &p.workload else {
        panic!("{:?}", p.workload)
    };
    assert_eq!(configs.len(), 4, "every mechanism on every placement");
    for c in configs {
        assert_eq!((c.priority, c.burst), (80, 3));
        assert_eq!(c.interval, Nanos::from_ms(1));
        assert_eq!(c.duration, Some(Nanos::from_secs(2)));
    }
    // What the pre-run audit checks: the receivers' CPU and priority.
    assert_eq!(p.config.threads.len(), 4);
    assert_eq!(p.config.pinned_cpus(), CpuSet::from_cpus([1]));
    assert!(p.config.threads.iter().all(|t| t.priority == 80));
    assert!(!p.per_cpu && p.explain.is_none());
}

#[test]
fn a_respond_workload_is_checked_as_measure_s_settings_are_naming_the_field() {
    let ok = respond_spec(&[(0, 1)], 1, Pacing::Timer);
    let refused = |s: PlanSpec| RunPlan::build(&s, &online()).unwrap_err();
    // The shared settings: measure's checks.
    let e = refused(PlanSpec {
        duration: Some(Nanos::from_us(500)),
        ..ok.clone()
    });
    assert_eq!(e.field, Field::Duration);
    assert!(e
        .message(Naming::Flags)
        .contains("shorter than the interval"));
    let e = refused(PlanSpec {
        priority: 0,
        ..ok.clone()
    });
    assert_eq!(e.field, Field::Priority);
    let e = refused(PlanSpec {
        loops: Some(0),
        ..ok.clone()
    });
    assert_eq!(e.field, Field::Loops);
    let e = refused(PlanSpec {
        policy: PolicyChoice::Batch,
        priority: 0,
        ..ok.clone()
    });
    assert_eq!(e.field, Field::Policy);
    assert!(e.message(Naming::Keys).contains("'policy'"), "{e}");
    // The workload's own.
    let e = refused(respond_spec(&[(0, 1)], 0, Pacing::Timer));
    assert_eq!(e.field, Field::Burst);
    assert!(e
        .message(Naming::Flags)
        .starts_with("invalid value '0' for '--burst': use 1..="));
    assert!(e.message(Naming::Keys).contains("'burst'"));
    let e = refused(respond_spec(&[(0, 1)], 2, Pacing::Handshake));
    assert_eq!(
        e.message(Naming::Flags),
        "'--burst' cannot be used with '--pacing handshake': it sends one event per ready token"
    );
    let e = refused(respond_spec(&[(0, 7)], 1, Pacing::Timer));
    assert_eq!(e.field, Field::Placement);
    assert_eq!(
        e.message(Naming::Keys),
        "invalid value for 'placement': CPU 7 is not online (online CPUs: 0-1)"
    );
    assert_eq!(Field::Mechanism.flag(), "--ipc");
    assert_eq!(Field::Mechanism.key(), "respond");
}
