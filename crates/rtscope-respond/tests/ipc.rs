//! Each IPC mechanism on the host: delivery, accounting (also in bursts that overflow a queue),
//! same- and cross-CPU placement, and the p50 against the matching rt-tests program run in the
//! same test. No absolute latency is asserted.

use rtscope_core::Nanos;
use rtscope_engine::{EngineError, Policy};
use rtscope_respond::ipc::{IpcConfig, IpcKind, IpcResult, IpcRun, Pacing, Placement};
use rtscope_respond::RespondError;
use std::process::Command;

/// The tests measure on the same CPUs at the same priority: one at a time (and not beside
/// another test binary's SCHED_FIFO runs), so that they do not disturb each other.
fn serial() -> rtscope_testkit::RtLock {
    rtscope_testkit::rt_lock()
}

fn cpus() -> Vec<usize> {
    rtscope_engine::sys::current_affinity()
        .map(|s| s.iter().collect())
        .unwrap_or_else(|_| vec![0])
}

/// SCHED_FIFO 95 when this process may use it, else SCHED_OTHER (unprivileged CI users).
fn policy() -> (Policy, i32) {
    let mut c = IpcConfig::new(IpcKind::Eventfd);
    c.loops = Some(1);
    match IpcRun::start(c) {
        Err(RespondError::Engine(EngineError::NoRtPrivilege { .. })) => (Policy::Other, 0),
        Ok(r) => {
            r.finish();
            (Policy::Fifo, 95)
        }
        Err(e) => panic!("cannot start a probe run: {e}"),
    }
}

fn run(kind: IpcKind, placement: Placement, loops: u64, burst: u32) -> IpcResult {
    let (policy, priority) = policy();
    let mut c = IpcConfig::new(kind);
    c.placement = placement;
    c.policy = policy;
    c.priority = priority;
    c.loops = Some(loops);
    c.burst = burst;
    c.interval = Nanos::from_us(1000);
    let r = IpcRun::start(c)
        .unwrap_or_else(|e| panic!("{kind}: {e}"))
        .finish();
    assert_eq!(r.error, None, "{kind}");
    r
}

fn assert_accounted(r: &IpcResult, attempted: u64) {
    let k = r.kind;
    // Intervals the sender was held off past are skipped (and counted), not sent late.
    let skipped = r.skipped_intervals * u64::from(r.burst);
    assert_eq!(
        r.sent + r.send_failed + skipped,
        attempted,
        "{k}: every attempt counted"
    );
    assert!(r.accounting_consistent(), "{k}: {r:?}");
    assert_eq!(r.lost(), r.send_failed + r.overruns, "{k}");
    assert_eq!(r.histogram.count(), r.received(), "{k}");
    assert!(r.wakeups >= 1 && r.wakeups <= r.received() + 1, "{k}");
    assert!(!r.stopped_early, "{k}");
}

#[test]
fn every_mechanism_delivers_and_accounts_for_every_event_on_one_cpu_and_across() {
    let _serial = serial();
    let cpus = cpus();
    let mut placements = vec![Placement::same(cpus[0])];
    if cpus.len() > 1 {
        placements.push(Placement::cross(cpus[0], cpus[1]));
    }
    for kind in IpcKind::ALL {
        for &p in &placements {
            let r = run(kind, p, 300, 1);
            assert_accounted(&r, 300);
            // One event per ms fits every queue unless the receiver is starved for as long as
            // its queue lasts (10 ms for a POSIX queue); such an event is counted, never hidden.
            let skipped = r.skipped_intervals;
            assert_eq!(
                r.received() + r.lost() + skipped,
                300,
                "{kind} {}",
                p.kind()
            );
            assert!(r.received() >= 150, "{kind} {}: {r:?}", p.kind());
            assert!(r.stats.min.0 > 0 && r.stats.min <= r.stats.max, "{kind}");
            assert_eq!(r.placement, p);
        }
    }
}

#[test]
fn bursts_that_overflow_a_queue_are_counted_as_lost_not_hidden() {
    let _serial = serial();
    let cpus = cpus();
    // The sender on one CPU, the receiver on another (or both on one), 64 events per interval:
    // a POSIX queue of at most 10 messages overflows whenever the receiver is not fast enough;
    // the counts must agree whatever happened.
    let p = if cpus.len() > 1 {
        Placement::cross(cpus[0], cpus[1])
    } else {
        Placement::same(cpus[0])
    };
    for kind in IpcKind::ALL {
        let r = run(kind, p, 50, 64);
        assert_accounted(&r, 50 * 64);
        if r.kind == IpcKind::Mqueue || r.kind == IpcKind::UnixDgram || r.kind == IpcKind::Pipe {
            assert_eq!(
                r.gaps, r.send_failed,
                "{kind}: receiver gaps = sender refusals"
            );
        }
    }
}

#[test]
fn the_handshake_pacing_measures_one_event_per_ready_token_on_every_mechanism() {
    let _serial = serial();
    let cpus = cpus();
    let (policy, priority) = policy();
    for kind in IpcKind::ALL {
        let mut c = IpcConfig::new(kind);
        (c.placement, c.policy, c.priority) = (Placement::same(cpus[0]), policy, priority);
        (c.loops, c.interval, c.pacing) = (Some(200), Nanos::from_us(200), Pacing::Handshake);
        let r = IpcRun::start(c)
            .unwrap_or_else(|e| panic!("{kind}: {e}"))
            .finish();
        assert_eq!(r.error, None, "{kind}");
        // One event outstanding at a time: nothing refused, skipped, overrun or coalesced.
        assert_eq!((r.sent, r.send_failed), (200, 0), "{kind}: {r:?}");
        assert_eq!(
            (r.skipped_intervals, r.overruns, r.lost()),
            (0, 0, 0),
            "{kind}"
        );
        assert_eq!(r.received(), 200, "{kind}");
        assert_eq!(r.histogram.count(), 200, "{kind}");
        // Every receive took one event; the stop marker is the last wake-up.
        assert_eq!(r.wakeups, 201, "{kind}: {r:?}");
        assert!(r.accounting_consistent() && !r.stopped_early, "{kind}");
    }
    let mut c = IpcConfig::new(IpcKind::Futex);
    (c.pacing, c.burst, c.loops) = (Pacing::Handshake, 4, Some(1));
    assert!(matches!(IpcRun::start(c), Err(RespondError::Invalid(m)) if m.contains("burst")));
}

#[test]
fn invalid_settings_are_refused() {
    let _serial = serial();
    let mut c = IpcConfig::new(IpcKind::Pipe);
    c.burst = 0;
    assert!(matches!(IpcRun::start(c), Err(RespondError::Invalid(_))));
    let mut c = IpcConfig::new(IpcKind::Pipe);
    c.interval = Nanos::ZERO;
    assert!(matches!(IpcRun::start(c), Err(RespondError::Invalid(_))));
    assert_eq!(IpcKind::parse("mq"), Some(IpcKind::Mqueue));
    assert_eq!(IpcKind::parse("nope"), None);
}

/// Runs an rt-tests program with both threads on `cpu`; returns its average latency in µs, or
/// what it printed when that has no summary line.
fn rt_tests_avg_us(program: &str, cpu: usize, prio: i32, loops: u64) -> Result<f64, String> {
    let out = Command::new(program)
        .args(["-a", &cpu.to_string(), "-p", &prio.to_string()])
        .args(["-i", "1000", "-l", &loops.to_string(), "-q"])
        .output()
        .map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&out.stdout);
    let avg = text
        .lines()
        .find(|l| l.contains("->") && l.contains("Avg"))
        .and_then(|line| {
            line.split("Avg")
                .nth(1)?
                .split(',')
                .next()?
                .trim()
                .parse()
                .ok()
        });
    avg.ok_or_else(|| {
        format!(
            "{}; stdout {text:?}; stderr {:?}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// [`rt_tests_avg_us`], tried up to three times: on a loaded machine the peer sometimes ends
/// without its summary line (it is the peer's output that is missing, not a latency).
fn peer_avg_us(program: &str, cpu: usize, prio: i32, loops: u64) -> f64 {
    let mut why = Vec::new();
    for _ in 0..3 {
        match rt_tests_avg_us(program, cpu, prio, loops) {
            Ok(avg) => return avg,
            Err(e) => why.push(e),
        }
    }
    panic!("cannot read {program}'s summary in 3 tries: {why:?}")
}

fn have(program: &str) -> bool {
    Command::new(program).arg("--help").output().is_ok()
}

#[test]
fn p50_is_within_3x_of_the_matching_rt_tests_program() {
    let _serial = serial();
    // Like with like: both tools measured with the CPU kept out of deep idle. On this VM the
    // exit from idle lands between the two timestamps of rtscope's same-CPU pair but not of
    // the rt-tests programs': idle, futex and mqueue measured 2.5-4.2x their peer (p50 5.0-8.4
    // vs avg 2 us) in three runs; with the request held, 0.86-1.5x. Both tools see the same
    // setting; an unprivileged run measures without it.
    let _latency = rtscope_engine::knobs::DmaLatencyGuard::set(0).ok();
    let cpu = cpus()[0];
    let (_, prio) = policy();
    for kind in IpcKind::ALL {
        let Some(peer) = kind.rt_tests_peer() else {
            continue;
        };
        if !have(peer) {
            assert!(
                std::env::var_os("CI").is_none(),
                "{peer} is missing (apt-get install rt-tests)"
            );
            eprintln!("skipping {kind}: {peer} is not installed");
            continue;
        }
        // Three alternating pairs (rtscope, rt-tests, rtscope, …) of 1.5 s each, so a burst of
        // load on the shared machine hits both tools alike; each tool's best run is compared,
        // as other work on the CPU only ever adds latency (with a second CI run and its
        // SCHED_FIFO tests beside this one, the median of rtscope's three mqueue runs was once
        // 3.76 us, against about 1.5 us otherwise).
        let (mut ours, mut theirs) = (f64::INFINITY, f64::INFINITY);
        for _ in 0..3 {
            let r = run(kind, Placement::same(cpu), 1500, 1);
            ours = ours.min(r.histogram.value_at_quantile(0.5).unwrap().as_us_f64());
            theirs = theirs.min(peer_avg_us(peer, cpu, prio, 1500));
        }
        // The rt-tests programs print Avg rounded to whole microseconds, so their mean lies in
        // [avg - 0.5, avg + 0.5] us; at 1-2 us that rounding alone is up to a factor of three,
        // so the 3x bound is taken against that interval.
        let (low, high) = ((theirs - 0.5).max(0.0), theirs + 0.5);
        eprintln!(
            "{kind}: rtscope p50 {ours:.2} us, {peer} avg {theirs:.0} us (mean {low:.1}-{high:.1} us)"
        );
        assert!(
            ours <= 3.0 * high && 3.0 * ours >= low,
            "{kind}: rtscope p50 {ours:.2} us vs {peer} avg {theirs:.0} us (mean {low:.1}-{high:.1} us): not within 3x"
        );
    }
}
