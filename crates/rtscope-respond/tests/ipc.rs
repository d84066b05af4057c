//! Each IPC mechanism on the host: delivery, accounting (also in bursts that overflow a queue),
//! same- and cross-CPU placement, and the matching rt-tests program run with the same options.
//! No latency is asserted, absolute or against rt-tests: bench/respond-vs-rt-tests.sh compares
//! them (BENCHMARKS.md).

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
    let k = r.config.kind;
    // Intervals the sender was held off past are skipped (and counted), not sent late.
    let skipped = r.skipped_intervals * u64::from(r.config.burst);
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
    rtscope_testkit::require_root!("the rt-tests programs and the receivers at SCHED_FIFO");
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
            assert_eq!(r.config.placement, p);
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
        if r.config.kind == IpcKind::Mqueue
            || r.config.kind == IpcKind::UnixDgram
            || r.config.kind == IpcKind::Pipe
        {
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

/// What an rt-tests program printed: its cycles and min/avg/max (whole µs).
#[derive(Debug)]
struct PeerSummary {
    cycles: u64,
    min: u64,
    avg: u64,
    max: u64,
}

/// The number after `key` in `line` ("Cycles 50", "Min    3,").
fn field(line: &str, key: &str) -> Option<u64> {
    line.split(key)
        .nth(1)?
        .trim_start()
        .split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()
}

/// Runs an rt-tests program with both threads on `cpu`; returns its summary, or what it
/// printed when that has no summary line.
fn rt_tests_summary(
    program: &str,
    cpu: usize,
    prio: i32,
    loops: u64,
) -> Result<PeerSummary, String> {
    let out = Command::new(program)
        .args(["-a", &cpu.to_string(), "-p", &prio.to_string()])
        .args(["-i", "1000", "-l", &loops.to_string(), "-q"])
        .output()
        .map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&out.stdout);
    let cycles = text.lines().find_map(|l| field(l, "Cycles"));
    let sum = text.lines().find(|l| l.contains("->") && l.contains("Avg"));
    let parsed = cycles.zip(sum).and_then(|(cycles, l)| {
        Some(PeerSummary {
            cycles,
            min: field(l, "Min")?,
            avg: field(l, "Avg")?,
            max: field(l, "Max")?,
        })
    });
    parsed.ok_or_else(|| {
        format!(
            "{}; stdout {text:?}; stderr {:?}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// The tools side by side, as bench/respond-vs-rt-tests.sh sets them (that script compares
/// their latencies; a test never does): every mechanism with an rt-tests counterpart is
/// measured by rtscope and by that program with the same options, and both measure every
/// event they were asked for.
#[test]
fn each_mechanism_and_its_rt_tests_program_measure_the_same_events() {
    rtscope_testkit::require_root!("the rt-tests programs and the receivers at SCHED_FIFO");
    let _serial = serial();
    let cpu = cpus()[0];
    let (_, prio) = policy();
    const LOOPS: u64 = 200;
    for kind in IpcKind::ALL {
        let Some(peer) = kind.rt_tests_peer() else {
            continue;
        };
        rtscope_testkit::require!(
            rtscope_testkit::have(peer, "--help"),
            "{peer} is not installed (apt-get install rt-tests; .ci/run installs it)"
        );
        let r = run(kind, Placement::same(cpu), LOOPS, 1);
        assert_accounted(&r, LOOPS);
        assert!(r.received() > 0, "{kind}: {r:?}");
        // On a loaded machine the peer sometimes ends without its summary line (it is the
        // peer's output that is missing): up to three tries.
        let mut why = Vec::new();
        let theirs = (0..3)
            .find_map(|_| {
                rt_tests_summary(peer, cpu, prio, LOOPS)
                    .map_err(|e| why.push(e))
                    .ok()
            })
            .unwrap_or_else(|| panic!("cannot read {peer}'s summary in 3 tries: {why:?}"));
        assert_eq!(theirs.cycles, LOOPS, "{peer}: {theirs:?}");
        assert!(
            theirs.min <= theirs.avg && theirs.avg <= theirs.max,
            "{peer}: {theirs:?}"
        );
    }
}
