//! Injected ground truth for `rtscope noise --explain` (issue 33's first "done when", its
//! attribution half): a helper thread named `rtscope-inject`, pinned to the measured CPU at a
//! higher SCHED_FIFO priority than the loop, takes the CPU for 1, 2 and 3 ms; each injection's
//! gap must be traced and at least 95 % of the helper's own spin (by its clock) charged to a
//! thread of that name and PID. The 5 % left is the kernel's switching in and out, which the
//! charging step gives to the interrupt and scheduler entries around the helper. No time is
//! asserted: only which category the trace charges.

use rtscope_core::Nanos;
use rtscope_engine::noise::{Gap, NoiseConfig, NoiseRun, Threshold};
use rtscope_engine::{sys, CpuSet, Policy, Wake};
use rtscope_session::noise::NoiseExplainer;
use rtscope_trace::book::Explained;
use rtscope_trace::Category;

const INJECT_MS: [(u64, u64); 3] = [(150, 1), (400, 2), (650, 3)];

fn config(cpu: usize) -> NoiseConfig {
    NoiseConfig {
        cpus: vec![cpu],
        policy: Policy::Fifo,
        priority: 10,
        threshold: Threshold::Given(Nanos::from_us(1)),
        preheat: Nanos::from_ms(10),
        runtime: Nanos::from_ms(950),
        period: Nanos::from_secs(1),
        duration: Nanos::from_secs(1),
        gap_capacity: 1 << 16,
        mlock: false,
        prefault_stack: 16 * 1024,
    }
}

/// The helper: FIFO 20 on `cpu`, spins at the times of [`INJECT_MS`]; returns its tid and
/// its own readings (start, end) of each spin.
fn inject(cpu: usize, start: Nanos) -> (i32, Vec<(Nanos, Nanos)>) {
    sys::set_policy_current(Policy::Fifo, 20).unwrap();
    sys::set_affinity_current(&CpuSet::from_cpus([cpu])).unwrap();
    let log = INJECT_MS
        .iter()
        .map(|&(at, len)| {
            sys::sleep_until(libc::CLOCK_MONOTONIC, start + Nanos::from_ms(at));
            let t0 = sys::now(libc::CLOCK_MONOTONIC);
            let mut t = t0;
            while t.0 < t0.0 + Nanos::from_ms(len).0 {
                t = sys::now(libc::CLOCK_MONOTONIC);
            }
            (t0, t)
        })
        .collect();
    // Its exit would take the CPU too: it happens after the run.
    sys::sleep_until(libc::CLOCK_MONOTONIC, start + Nanos::from_ms(1100));
    (sys::gettid(), log)
}

#[test]
fn injected_gaps_are_charged_to_the_injecting_thread_by_name_and_pid() {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    rtscope_testkit::require!(root, "needs root for SCHED_FIFO threads and tracefs");
    rtscope_testkit::require!(
        rtscope_trace::tracefs::Tracefs::discover().is_ok(),
        "needs a usable tracefs"
    );
    rtscope_testkit::require!(sys::online_cpus().len() >= 2, "needs two CPUs");
    let _lock = rtscope_testkit::rt_lock();
    let online = sys::online_cpus();
    let cpu = online.iter().last().unwrap();
    let hk = CpuSet::from_cpus(online.iter().filter(|&c| c != cpu));
    sys::set_affinity_current(&hk).unwrap();
    let explain = NoiseExplainer::start(Nanos::from_us(200), &[cpu], Some(&hk));
    let run = NoiseRun::start(config(cpu)).unwrap();
    let start = run.clock_start();
    let helper = std::thread::Builder::new()
        .name("rtscope-inject".into())
        .spawn(move || inject(cpu, start))
        .unwrap();
    let mut gaps: Vec<Gap> = Vec::new();
    loop {
        let wake = run.wait(Nanos::from_ms(50));
        run.threads()[0].ring().drain(|g| gaps.push(g));
        if wake == Wake::Finished {
            break;
        }
    }
    let threads = run.finish();
    let (helper_tid, injected) = helper.join().unwrap();
    let mut explain = explain;
    explain.push(cpu, threads[0].tid, &gaps);
    let summary = explain.finish();
    for (t0, t1) in injected {
        let spun = t1.0 - t0.0;
        let a = summary
            .worst
            .iter()
            .find_map(|e| match e {
                Explained::Traced(a)
                    if a.spike.deadline_ns <= t0.0 && a.spike.wakeup_ns >= t1.0 =>
                {
                    Some(a)
                }
                _ => None,
            })
            .unwrap_or_else(|| panic!("no traced gap covers {t0:?}..{t1:?}: {summary:#?}"));
        let charged: u64 = a
            .charges
            .iter()
            .filter(|c| {
                matches!(&c.category, Category::Thread { task }
                    if task.comm == "rtscope-inject" && task.pid == helper_tid)
            })
            .map(|c| c.ns)
            .sum();
        eprintln!(
            "spun {spun} ns, {charged} ns charged to rtscope-inject:{helper_tid}: {:?}",
            a.charges
        );
        assert!(
            charged * 100 >= spun * 95,
            "{charged} of {spun} ns charged to rtscope-inject:{helper_tid}: {:#?}",
            a.charges
        );
    }
}
