use super::record::NoiseMeta;
use super::*;
use rtscope_core::Histogram;
use rtscope_engine::noise::{NoiseTotals, Threshold};
use rtscope_engine::Policy;
use rtscope_store::{RunKind, RunStatus, Store};
use std::time::SystemTime;

fn config() -> NoiseConfig {
    NoiseConfig {
        cpus: vec![0],
        policy: Policy::Other,
        priority: 0,
        threshold: Threshold::Given(DEFAULT_THRESHOLD),
        preheat: Nanos::from_ms(10),
        runtime: DEFAULT_RUNTIME,
        period: DEFAULT_PERIOD,
        duration: Nanos::from_secs(1),
        gap_capacity: 16,
        mlock: false,
        prefault_stack: 0,
        counter: rtscope_engine::noise::CounterChoice::Auto,
        smi_files: Vec::new(),
    }
}

#[test]
fn limits_parse_and_unknown_ones_are_refused() {
    assert_eq!(
        parse_limit("max_single=20us").unwrap(),
        NoiseLimit::MaxSingle(Nanos::from_us(20))
    );
    assert_eq!(
        parse_limit("max_single=20").unwrap(),
        NoiseLimit::MaxSingle(Nanos::from_us(20))
    );
    assert_eq!(
        parse_limit("available=99.99%").unwrap(),
        NoiseLimit::Available(99.99)
    );
    assert!(parse_limit("available=101%").is_err());
    assert!(parse_limit("max=1us")
        .unwrap_err()
        .why
        .contains("unknown statistic"));
    assert!(parse_limit("max_single").is_err());
}

fn thread(runtime: u64, gaps: &[u64], threshold: u64) -> NoiseThread {
    let mut histogram = Histogram::new();
    for &g in gaps {
        histogram.record(Nanos(g));
    }
    let over: Vec<u64> = gaps.iter().copied().filter(|&g| g > threshold).collect();
    NoiseThread {
        cpu: 1,
        tid: 42,
        totals: NoiseTotals {
            runtime: Nanos(runtime),
            over: over.len() as u64,
            noise: Nanos(over.iter().sum()),
            max: over.iter().max().map(|&m| Gap {
                start: Nanos(500),
                duration: Nanos(m),
                smis: None,
            }),
            histogram,
        },
        gaps_dropped: 0,
    }
}

#[test]
fn the_summary_is_exact_arithmetic_on_the_totals() {
    // 1 ms spun in 8 iterations: six of 40 ns, one gap of 760 ns... and one of 999,000 ns.
    let gaps = [40, 40, 40, 40, 40, 40, 760, 999_000];
    let c = CpuNoise::of(&thread(1_000_000, &gaps, 1000));
    assert_eq!(c.iterations, 8);
    assert_eq!(c.iterations_per_s, Some(8000.0));
    assert_eq!(c.resolution_ns, Some(40));
    assert_eq!((c.gaps_over_threshold, c.noise_ns), (1, 999_000));
    assert_eq!(c.max_single_ns, Some(999_000));
    assert_eq!(c.available_percent, Some(0.1));
    let none = CpuNoise::of(&thread(0, &[], 1000));
    assert_eq!((none.available_percent, none.max_single_ns), (None, None));
}

#[test]
fn limits_fail_above_the_bound_and_on_unknown_values() {
    let rows = [
        CpuNoise::of(&thread(1_000_000, &[50, 30_000], 1000)),
        CpuNoise::of(&thread(0, &[], 1000)),
    ];
    let limits = [
        NoiseLimit::MaxSingle(Nanos::from_us(20)),
        NoiseLimit::Available(90.0),
    ];
    let checks = check_limits(&limits, &rows);
    let passed: Vec<bool> = checks.iter().map(|c| c.passed).collect();
    assert_eq!(passed, [false, true, false, false]);
    assert_eq!(checks[0].value, "30us");
    assert_eq!(checks[1].value, "97.00000%");
    assert_eq!(checks[2].value, "unknown");
}

#[test]
fn a_noise_run_is_recorded_with_its_gaps_as_events() {
    let dir = std::env::temp_dir().join(format!("rtscope-noise-record-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("runs.db");
    let _ = std::fs::remove_file(&path);
    let store = Store::open(&path).unwrap();
    let now = SystemTime::now();
    let meta = NoiseMeta {
        label: Some("n".into()),
        tags: vec![],
        command_line: vec!["rtscope".into(), "noise".into()],
        config_json: "{}".into(),
        started: now,
        ended: now + std::time::Duration::from_secs(1),
        clock_start: Nanos(100),
        policy: "other",
        priority: 0,
        period: DEFAULT_PERIOD,
        recorder: None,
    };
    let t = thread(1_000_000, &[40, 40, 5_000], 1000);
    let gaps = vec![vec![Gap {
        start: Nanos(600),
        duration: Nanos(5_000),
        smis: None,
    }]];
    let id = record::record(store, &meta, &[t], &gaps, None, (RunStatus::Complete, 0)).unwrap();
    let store = Store::open(&path).unwrap();
    let b = store.bundle(id, false).unwrap();
    assert_eq!(b.detail.summary.kind, RunKind::Noise);
    assert_eq!(b.events.len(), 1);
    assert_eq!(
        (b.events[0].latency_ns, b.events[0].offset_ns),
        (5_000, 500)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn explained_time_is_summed_by_class_and_unexplained_kept_apart() {
    use rtscope_explain::book::ExplainSummary;
    use rtscope_explain::model::Category;
    use rtscope_explain::model::Task;
    let task = Task {
        comm: "x".into(),
        pid: 7,
        prio: 120,
    };
    let irq = Category::Irq {
        name: "eth0 (irq 24)".into(),
    };
    let s = ExplainSummary::of_totals(
        1000,
        vec![
            (Category::Thread { task }, 700),
            (irq, 200),
            (Category::Nmi, 50),
            (Category::Unexplained, 50),
        ],
    );
    let t = s.class_totals();
    assert_eq!(
        (t.thread_ns, t.irq_ns, t.nmi_ns, t.unexplained_ns),
        (700, 200, 50, 50)
    );
    assert_eq!(t.total_ns(), 1000);
    assert!(
        class_line(&t).contains("thread 70.0 %, irq 20.0 %"),
        "{}",
        class_line(&t)
    );
    assert!(class_line(&t).contains("unexplained 5.0 %"));
}

#[test]
fn the_class_histogram_table_gives_each_class_its_buckets_as_bounds() {
    use rtscope_explain::class_hist::ClassHistogram;
    assert_eq!(class_histogram_table(&[]), "");
    let h = |class: &str, buckets: Vec<(u64, u64)>| ClassHistogram {
        cpu: 1,
        class: class.into(),
        buckets,
    };
    let t = class_histogram_table(&[
        h("thread", vec![(1_048_576, 3)]),
        h("irq", vec![(4_096, 98), (8_192, 1), (1_048_576, 1)]),
        h("switch", vec![(512, 2)]),
    ]);
    let lines: Vec<&str> = t.lines().collect();
    assert_eq!(lines.len(), 5, "{t}");
    let cells = |l: &str| l.split_whitespace().map(str::to_owned).collect::<Vec<_>>();
    assert_eq!(
        cells(lines[2]),
        [
            "1",
            "thread",
            "3",
            "1.05ms–2.10ms",
            "1.05ms–2.10ms",
            "1.05ms–2.10ms"
        ],
        "{t}"
    );
    // 100 gaps: the median in 4–8 µs, the 99th of 100 (nearest rank) the one in 8–16 µs,
    // the longest in 1–2 ms.
    assert_eq!(
        cells(lines[3]),
        [
            "1",
            "irq",
            "100",
            "4.1us–8.2us",
            "8.2us–16.4us",
            "1.05ms–2.10ms"
        ],
        "{t}"
    );
    assert!(lines[4].contains("switch back"), "the printed name: {t}");
}

#[test]
fn a_duty_cycle_over_the_rt_budget_is_named_as_rt_throttling() {
    let root = std::env::temp_dir().join(format!("rtscope-noise-rt-{}", std::process::id()));
    let dir = root.join("proc/sys/kernel");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("sched_rt_runtime_us"), "950000\n").unwrap();
    std::fs::write(dir.join("sched_rt_period_us"), "1000000\n").unwrap();
    let fifo = NoiseConfig {
        policy: Policy::Fifo,
        priority: 95,
        ..config()
    };
    assert_eq!(
        rt_throttle_note(&fifo, &root),
        None,
        "950 ms of 1 s is within the budget"
    );
    let full = NoiseConfig {
        runtime: DEFAULT_PERIOD,
        ..fifo.clone()
    };
    assert!(rt_throttle_note(&full, &root)
        .unwrap()
        .contains("RT throttling"));
    let other = NoiseConfig {
        runtime: DEFAULT_PERIOD,
        ..config()
    };
    assert_eq!(
        rt_throttle_note(&other, &root),
        None,
        "SCHED_OTHER is not throttled"
    );
    std::fs::write(dir.join("sched_rt_runtime_us"), "-1\n").unwrap();
    assert_eq!(rt_throttle_note(&full, &root), None, "-1: no throttling");
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn a_raised_default_threshold_is_said_with_the_cpu_and_resolution_that_raised_it() {
    use super::run::raised_threshold_note;
    let c = NoiseConfig {
        cpus: vec![0, 3],
        threshold: Threshold::Default(DEFAULT_THRESHOLD),
        ..config()
    };
    let res = [Nanos(40), Nanos(1080)];
    let flags = crate::field::Naming::Flags;
    assert_eq!(
        raised_threshold_note(&c, DEFAULT_THRESHOLD, &res[..1], flags),
        None
    );
    let note = raised_threshold_note(&c, Nanos(3000), &res, flags).unwrap();
    assert!(
        note.contains("threshold raised from the default 1us to 3us")
            && note.contains("resolution on CPU 3 is 1080 ns")
            && note.contains("give --threshold to choose another"),
        "{note}"
    );
    // A campaign's note names its key.
    let keys = raised_threshold_note(&c, Nanos(3000), &res, crate::field::Naming::Keys).unwrap();
    assert!(keys.contains("give threshold to choose another"), "{keys}");
}

#[test]
fn below_a_real_time_policy_a_hint_says_normal_threads_count_as_noise() {
    use crate::field::Naming;
    let hint = policy_hint(Policy::Other.name(), Naming::Flags).unwrap();
    assert_eq!(
        hint,
        "hint: the loops ran at SCHED_OTHER (--policy other): every normal thread on their CPUs \
         takes turns with them, and its time counts as noise; --policy fifo --priority 95 \
         counts only what can preempt a real-time thread"
    );
    assert!(policy_hint("idle", Naming::Keys)
        .unwrap()
        .contains("(policy = \"idle\")"));
    for rt in [Policy::Fifo, Policy::Rr] {
        assert_eq!(policy_hint(rt.name(), Naming::Flags), None);
    }
    assert_eq!(policy_hint("deadline", Naming::Flags), None);
}
