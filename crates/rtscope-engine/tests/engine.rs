//! The real engine, run as root with SCHED_FIFO, for tens of milliseconds.

use rtscope_core::Nanos;
use rtscope_engine::{sys, CpuSet, Phase, Policy, Run, RunConfig, SleepMode, ThreadSpec, Wake};
use std::time::Duration;

fn fifo(cpu: usize, prio: i32, interval: Nanos) -> ThreadSpec {
    ThreadSpec {
        affinity: Some(CpuSet::from_cpus([cpu])),
        policy: Policy::Fifo,
        priority: prio,
        interval,
    }
}

fn run_to_end(run: Run) -> rtscope_engine::RunResult {
    loop {
        if run.wait(Nanos::from_ms(5)) == Wake::Finished {
            return run.finish();
        }
    }
}

#[test]
fn every_thread_runs_its_full_loop_count() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO");
    let mut c = RunConfig::new(vec![
        fifo(0, 80, Nanos::from_us(200)),
        fifo(1 % sys::online_cpus().len(), 80, Nanos::from_us(700)),
    ]);
    c.loops = Some(50);
    c.sample_ring = Some(1024);
    let r = run_to_end(Run::start(c).unwrap());
    for t in &r.threads {
        assert_eq!(t.stats.count, 50, "thread {}", t.index);
        assert_eq!(t.histogram.count(), 50);
        assert!(t.stats.min <= t.stats.max);
        assert!(t.tid > 0);
    }
    assert!(!r.stopped_early);
}

#[test]
fn duration_bounds_the_run() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO");
    let mut c = RunConfig::new(vec![fifo(0, 80, Nanos::from_ms(1))]);
    c.duration = Some(Nanos::from_ms(30));
    let r = run_to_end(Run::start(c).unwrap());
    let s = r.threads[0].stats;
    // cyclictest's -D: the deadlines start + 1 ms … start + 30 ms, the last one included; each
    // is either a wake-up (a sample) or missed.
    assert_eq!(s.count + s.missed, 30, "{s:?}");
}

#[test]
fn percentiles_equal_the_order_statistics_of_the_raw_samples() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO");
    let mut c = RunConfig::new(vec![fifo(0, 80, Nanos::from_us(100))]);
    c.loops = Some(400);
    c.sample_ring = Some(1000);
    let run = Run::start(c).unwrap();
    let mut raw = Vec::new();
    loop {
        let w = run.wait(Nanos::from_ms(2));
        run.threads()[0]
            .ring()
            .unwrap()
            .drain(|s| raw.push(s.latency.0));
        if w == Wake::Finished {
            break;
        }
    }
    let r = run.finish();
    raw.sort_unstable();
    assert_eq!(raw.len(), 400);
    let h = &r.threads[0].histogram;
    for p in h.percentiles() {
        let rank = ((p.quantile * raw.len() as f64).ceil() as usize).clamp(1, raw.len());
        let exact = raw[rank - 1] as f64;
        let got = p.value.unwrap().0 as f64;
        assert!(
            (got - exact).abs() <= exact * 0.0005 + 0.5,
            "{}: {got} vs {exact}",
            p.label
        );
    }
    assert_eq!(r.threads[0].stats.max.0, *raw.last().unwrap());
}

/// A SCHED_FIFO thread of higher priority busy-waits `hog` on the measured CPU: the measured
/// thread's max must be about `hog`, the deadlines it slept through must count as missed, and
/// the stall must be ONE sample (samples are wake-ups: `loops` of them, none synthetic).
#[test]
fn injected_delay_shows_as_max_and_missed_periods() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO");
    let interval = Nanos::from_ms(1);
    let hog = Nanos::from_ms(10);
    // 200 wake-ups (200 ms): the stall must fall inside the run even when this test's own
    // (SCHED_OTHER) thread waits tens of ms for a CPU on a loaded machine.
    const LOOPS: u64 = 200;
    let mut c = RunConfig::new(vec![fifo(0, 50, interval)]);
    c.loops = Some(LOOPS);
    c.sample_ring = Some(256);
    // The hogger is real-time before the run starts, so its sleep ends on time whatever the
    // load: it stalls the measured thread 15 ms after it is released.
    let (go, ready) = std::sync::mpsc::channel::<()>();
    let hogger = std::thread::spawn(move || {
        sys::set_affinity_current(&CpuSet::from_cpus([0])).unwrap();
        sys::set_policy_current(Policy::Fifo, 90).unwrap();
        ready.recv().unwrap();
        std::thread::sleep(Duration::from_millis(15));
        let clock = sys::clock_id(Default::default());
        let start = sys::now(clock);
        let end = start + hog;
        let mut now = start;
        while now < end {
            std::hint::spin_loop();
            now = sys::now(clock);
        }
        (start, now)
    });
    let run = Run::start(c).unwrap();
    go.send(()).unwrap();
    let (stall_start, stall_end) = hogger.join().unwrap();
    let mut raw = Vec::new();
    loop {
        let w = run.wait(Nanos::from_ms(5));
        run.threads()[0].ring().unwrap().drain(|x| raw.push(x));
        if w == Wake::Finished {
            break;
        }
    }
    let r = run.finish();
    let s = r.threads[0].stats;
    assert_eq!(s.count, LOOPS, "samples = wake-ups = loops");
    // Lower bounds only: a loaded machine can add latency anywhere, never remove the stall.
    assert!(s.max >= hog - interval, "max {}", s.max);
    // The stall covered floor(max / interval) deadlines; other late wake-ups (load) may add some.
    let covered = s.max.0 / interval.0;
    assert!(s.missed >= covered, "missed {} < {covered}", s.missed);
    assert_eq!(raw.len() as u64, LOOPS);
    // One sample per wake-up: consecutive wake-up numbers, none while the hogger held the CPU
    // (the measured thread could not run), and the first one after it waited the whole stall:
    // one sample for the stall, not a ramp of synthetic ones (the old rule gave ~9, 8, 7 … 1
    // ms, each with a wake-up time inside or at the end of the stall).
    assert!(raw.iter().enumerate().all(|(i, x)| x.cycle == i as u64));
    assert!(
        !raw.iter()
            .any(|x| x.time > stall_start && x.time < stall_end),
        "a wake-up inside the stall {stall_start:?}..{stall_end:?}: {raw:?}"
    );
    let after = raw
        .iter()
        .position(|x| x.time >= stall_end)
        .expect("a wake-up after the stall");
    assert!(
        raw[after].latency.0 + interval.0 >= stall_end.0 - stall_start.0,
        "the first wake-up after the stall waited it: {:?}",
        raw[after]
    );
    if let Some(next) = raw.get(after + 1) {
        assert!(next.time >= raw[after].time, "{next:?}");
    }
}

#[test]
fn stop_ends_an_endless_run_with_its_samples() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO");
    let c = RunConfig::new(vec![fifo(0, 80, Nanos::from_us(500))]);
    let run = Run::start(c).unwrap();
    std::thread::sleep(Duration::from_millis(20));
    run.stop();
    let r = run.finish();
    assert!(r.stopped_early);
    assert!(
        r.threads[0].stats.count >= 20,
        "{}",
        r.threads[0].stats.count
    );
}

/// Issue 26 N2: a stop wakes threads sleeping to a far deadline (one interval of an hour, the
/// longest allowed), absolute and relative; the sleep cut short is not a sample. Without the
/// wake signal `finish` would wait for the deadline, an hour away.
#[test]
fn stop_wakes_threads_sleeping_to_an_hour_away_and_takes_no_sample() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO");
    for sleep in [SleepMode::Absolute, SleepMode::Relative] {
        let hour = rtscope_engine::MAX_INTERVAL;
        let cpus = sys::online_cpus().len();
        let mut c = RunConfig::new(vec![fifo(0, 80, hour), fifo(1 % cpus, 80, hour)]);
        c.sleep = sleep;
        let run = Run::start(c).unwrap();
        while run.threads().iter().any(|t| t.phase() != Phase::Running) {
            std::thread::sleep(Duration::from_millis(1));
        }
        // Into their sleep (a thread not yet asleep is woken again until it ends).
        std::thread::sleep(Duration::from_millis(20));
        run.stop();
        let r = run.finish();
        assert!(r.stopped_early, "{sleep:?}");
        for t in &r.threads {
            assert_eq!(t.stats.count, 0, "{sleep:?}: thread {}", t.index);
            assert_eq!(t.stats.missed, 0, "{sleep:?}: thread {}", t.index);
        }
    }
}

/// A control loop that stops the run and waits for the end (as the session's does) sees it
/// finish, with its periodic wait, while the thread's deadline is an hour away.
#[test]
fn a_stopped_run_waited_for_finishes_before_its_far_deadline() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO");
    let c = RunConfig::new(vec![fifo(0, 80, rtscope_engine::MAX_INTERVAL)]);
    let run = Run::start(c).unwrap();
    std::thread::sleep(Duration::from_millis(20));
    run.stop();
    let r = run_to_end(run);
    assert_eq!(r.threads[0].stats.count, 0);
}

#[test]
fn an_interval_longer_than_an_hour_is_refused() {
    let long = rtscope_engine::MAX_INTERVAL + Nanos(1);
    let e = Run::start(RunConfig::new(vec![fifo(0, 80, long)]))
        .err()
        .expect("refused");
    assert!(
        e.to_string()
            .contains("longer than the longest allowed, 3600s (1 hour)"),
        "{e}"
    );
}

#[test]
fn break_threshold_stops_the_run() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO");
    let mut c = RunConfig::new(vec![fifo(0, 80, Nanos::from_us(200))]);
    c.break_threshold = Some(Nanos(1));
    c.loops = Some(1000);
    let r = run_to_end(Run::start(c).unwrap());
    let b = r.break_fired.expect("break");
    assert_eq!(b.thread, 0);
    assert!(b.latency > Nanos(1));
    assert!(r.threads[0].stats.count < 1000);
}

#[test]
fn deadline_policy_runs() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO");
    let p = Policy::Deadline {
        runtime: Nanos::from_us(100),
        deadline: Nanos::from_us(1000),
        period: Nanos::from_us(1000),
    };
    let mut c = RunConfig::new(vec![ThreadSpec {
        affinity: None,
        policy: p,
        priority: 0,
        interval: Nanos::from_ms(1),
    }]);
    c.loops = Some(10);
    match Run::start(c) {
        Ok(run) => assert_eq!(run_to_end(run).threads[0].stats.count, 10),
        Err(e) => panic!("{e}"),
    }
}

/// Minor page faults of thread `tid` of this process so far (`/proc/self/task/TID/stat`,
/// field 10).
fn minor_faults(tid: i32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).unwrap();
    let after_comm = &stat[stat.rfind(')').unwrap() + 2..];
    after_comm.split(' ').nth(7).unwrap().parse().unwrap()
}

/// The timing loop takes no page fault: every array it writes (histogram, ring, event log)
/// is resident before the first deadline. Latencies spread by a FIFO 90 thread spinning 20 µs
/// to 6 ms on the measured CPU reach histogram buckets the run had not used; on the old code
/// (counters from a zeroed allocation no one had written) each new page of buckets was a page
/// fault in the loop: 14 in a 3 s `rtscope measure` run, seen with
/// `exceptions:page_fault_user`; this test, with the pages left untouched, counted 25 and 29.
#[test]
fn the_timing_loop_takes_no_page_fault_as_latencies_reach_new_buckets() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO");
    let mut c = RunConfig::new(vec![fifo(0, 80, Nanos::from_us(200))]);
    c.duration = Some(Nanos::from_ms(1500));
    c.sample_ring = Some(16_384);
    c.mlock = true;
    let run = Run::start(c).unwrap();
    let t = &run.threads()[0];
    while t.phase() != Phase::Running {
        std::thread::sleep(Duration::from_millis(1));
    }
    std::thread::sleep(Duration::from_millis(50));
    let before = minor_faults(t.tid());
    let spinner = std::thread::spawn(|| {
        sys::set_affinity_current(&CpuSet::from_cpus([0])).unwrap();
        sys::set_policy_current(Policy::Fifo, 90).unwrap();
        let clock = sys::clock_id(Default::default());
        for us in [20, 45, 90, 180, 400, 900, 2_000, 4_000, 6_000] {
            std::thread::sleep(Duration::from_millis(30));
            let end = sys::now(clock) + Nanos::from_us(us);
            while sys::now(clock) < end {
                std::hint::spin_loop();
            }
        }
    });
    spinner.join().unwrap();
    std::thread::sleep(Duration::from_millis(20));
    let during = minor_faults(t.tid());
    let mut drained = 0u64;
    loop {
        let w = run.wait(Nanos::from_ms(5));
        run.threads()[0].ring().unwrap().drain(|_| drained += 1);
        if w == Wake::Finished {
            break;
        }
    }
    let r = run.finish();
    assert!(
        r.threads[0].stats.max >= Nanos::from_ms(5),
        "the spins delayed it"
    );
    assert_eq!(during, before, "page faults in the timing loop");
}
