//! The timerlat tier: on kernels with the timerlat tracer (PREEMPT_RT flavours), the private
//! instance runs that tracer, and its `osnoise/*_noise` events say how long each interrupt,
//! softirq, NMI and thread kept the CPU, net of the noise nested in it, as rtla timerlat's
//! auto-analysis reads them. Attribution then needs no interrupt entry/exit events: the noise
//! events, `sched_waking` (which interrupt woke the measuring thread) and `sched_switch` (idle,
//! task priorities) suffice.
//!
//! The phases are those of [`crate::analyze`]: deadline → entry of the interrupt that woke the
//! measuring thread ([`Category::TimerIrqLate`]: a previous IRQ by name, exit from idle, or
//! interrupts off / hypervisor when a task or softirq ran without letting the timer in), the
//! interrupt itself ([`Category::TimerIrqHandler`]), then other IRQs, softirqs, NMIs and tasks
//! until the wake-up; what no noise covers after the interrupt is the switch to the measuring
//! thread ([`Category::ReturnToUser`]) or the task the scheduler events say was running.
//!
//! The noise events carry their start in the tracer's local clock; the start used here is the
//! event's time (trace clock, `mono`) minus the duration, which is exact for un-nested noise.

use crate::decode::{Event, Kind, NoiseSource, Tasks};
use crate::model::{Attribution, Category, Charge, LateCause, Softirq, Spike};
use crate::tracefs::{read_bounded, write_file, Tracefs};
use crate::TraceError;
use std::path::{Path, PathBuf};

/// The events the timerlat tier enables besides the tracer: (system, event).
pub use crate::tracefs::TIMERLAT_EVENTS as EVENTS;

/// Where a piece of time went, before the phase decides its category.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Src {
    Irq(String),
    Softirq(u32),
    Nmi,
    Thread(i32),
    /// No noise covers it: what the scheduler events say ran (`None`: unknown).
    Gap(Option<i32>),
}

/// A span of noise, on the trace clock.
#[derive(Debug, Clone)]
struct Span {
    from: u64,
    to: u64,
    src: Src,
}

fn irq_name(desc: &str, vector: i32) -> String {
    match desc.split_once(':') {
        // x86 vectors are described as `local_timer:236`.
        Some((name, _)) if !name.is_empty() => name.to_string(),
        _ if desc.is_empty() => format!("irq {vector}"),
        _ => format!("{desc} (irq {vector})"),
    }
}

/// The noise spans of `events` and the tasks the events named.
fn spans(events: &[Event]) -> (Vec<Span>, Tasks) {
    let mut out = Vec::new();
    let mut tasks = Tasks::default();
    for e in events {
        tasks.learn(e);
        let Kind::Noise {
            source,
            duration_ns,
        } = &e.kind
        else {
            continue;
        };
        let src = match source {
            NoiseSource::Irq { desc, vector } => Src::Irq(irq_name(desc, *vector)),
            NoiseSource::Softirq { vec } => Src::Softirq(*vec),
            NoiseSource::Nmi => Src::Nmi,
            NoiseSource::Thread { pid, comm } => {
                tasks.name(*pid, *comm);
                Src::Thread(*pid)
            }
        };
        out.push(Span {
            from: e.ts.saturating_sub(*duration_ns),
            to: e.ts,
            src,
        });
    }
    (out, tasks)
}

/// The task running at `at` by the last `sched_switch` before it.
fn running_at(events: &[Event], at: u64) -> Option<i32> {
    events
        .iter()
        .take_while(|e| e.ts <= at)
        .filter_map(|e| match e.kind {
            Kind::Switch { next_pid, .. } => Some(next_pid),
            _ => None,
        })
        .last()
}

/// The interrupt that woke the measuring thread: the irq noise span enclosing its last
/// `sched_waking` (at most 1 ms before the deadline); a waking outside any interrupt gives an
/// empty span at the waking.
fn wake_irq(events: &[Event], spans: &[Span], spike: &Spike) -> Option<(u64, u64)> {
    let at = events
        .iter()
        .take_while(|e| e.ts <= spike.wakeup_ns)
        .filter(|e| e.ts.saturating_add(1_000_000) >= spike.deadline_ns)
        .filter(|e| matches!(e.kind, Kind::Waking { pid, .. } if pid == spike.tid))
        .map(|e| e.ts)
        .last()?;
    let irq = spans
        .iter()
        .filter(|s| matches!(s.src, Src::Irq(_)) && s.from <= at && at <= s.to)
        .max_by_key(|s| s.to - s.from);
    Some(irq.map_or((at, at), |s| (s.from, s.to)))
}

/// Charges the time from the deadline to the wake-up of `spike` from the timerlat tier's
/// events of its CPU (time order, starting before the deadline).
pub fn attribute(events: &[Event], spike: &Spike, lost_events: bool) -> Attribution {
    let (mut noise, tasks) = spans(events);
    let wake = wake_irq(events, &noise, spike);
    // The wake-up interrupt is charged as the handler; the rest is painted over the gaps.
    noise.retain(|s| Some((s.from, s.to)) != wake || !matches!(s.src, Src::Irq(_)));
    noise.sort_by_key(|s| s.from);
    let own_prio = tasks.prio(spike.tid).unwrap_or(0);
    let before = |t: u64| wake.is_some_and(|w| t < w.0);
    let category = |src: &Src, t: u64| -> Category {
        let late = |cause| Category::TimerIrqLate { cause };
        match (src, before(t)) {
            (Src::Nmi, _) => Category::Nmi,
            (Src::Irq(name), true) => late(LateCause::PreviousIrq { name: name.clone() }),
            (Src::Irq(name), false) => Category::Irq { name: name.clone() },
            (Src::Softirq(_) | Src::Thread(_), true) => late(LateCause::IrqsOffOrHypervisor),
            (Src::Softirq(v), false) => Category::Softirq {
                vec: Softirq::from_vec(*v),
            },
            (Src::Gap(Some(0)), true) => late(LateCause::ExitFromIdle),
            (Src::Gap(Some(_)), true) => late(LateCause::IrqsOffOrHypervisor),
            (Src::Gap(None), _) => Category::Unexplained,
            (Src::Thread(p) | Src::Gap(Some(p)), false) if *p == spike.tid || *p == 0 => {
                Category::ReturnToUser
            }
            (Src::Thread(p) | Src::Gap(Some(p)), false) => {
                let t = tasks.task(*p);
                if t.prio <= own_prio {
                    Category::Thread { task: t }
                } else {
                    Category::Blocking { task: t }
                }
            }
        }
    };
    let mut charges: Vec<Charge> = Vec::new();
    let mut add = |cat: Category, ns: u64| match charges.iter_mut().find(|c| c.category == cat) {
        Some(c) => c.ns += ns,
        None if ns > 0 => charges.push(Charge { category: cat, ns }),
        None => {}
    };
    // Cut points: the phase boundaries; every piece between two is one category.
    let (d, w) = (spike.deadline_ns, spike.wakeup_ns);
    let mut cuts = vec![d, w];
    if let Some((a, b)) = wake {
        cuts.extend([a, b]);
    }
    for s in &noise {
        cuts.extend([s.from, s.to]);
    }
    cuts.retain(|&t| t >= d && t <= w);
    cuts.sort_unstable();
    cuts.dedup();
    for pair in cuts.windows(2) {
        let (from, to) = (pair[0], pair[1]);
        let in_wake = wake.is_some_and(|(a, b)| from >= a && to <= b && a < b);
        let covering = noise.iter().rev().find(|s| s.from <= from && to <= s.to);
        let cat = match covering {
            Some(s) => category(&s.src, from),
            None if in_wake => Category::TimerIrqHandler,
            None => category(&Src::Gap(running_at(events, from)), from),
        };
        add(cat, to - from);
    }
    charges.sort_by(|a, b| b.ns.cmp(&a.ns).then_with(|| a.category.cmp(&b.category)));
    Attribution {
        spike: *spike,
        charges,
        complete: wake.is_some(),
        lost_events,
    }
}

/// The timerlat tracer's own thread samples at or above `threshold_ns` as spikes of `cpu`
/// (its thread is the task current at a thread-context sample): the tier's self-check, and
/// how the fixtures of a real RT kernel are replayed in tests.
pub fn sample_spikes(events: &[Event], cpu: usize, threshold_ns: u64) -> Vec<Spike> {
    events
        .iter()
        .filter_map(|e| match e.kind {
            Kind::TimerlatSample {
                thread: true,
                latency_ns,
            } if latency_ns >= threshold_ns => Some(Spike {
                cpu,
                tid: e.pid,
                deadline_ns: e.ts.saturating_sub(latency_ns),
                wakeup_ns: e.ts,
            }),
            _ => None,
        })
        .collect()
}

/// The longest timerlat period the kernel accepts (µs): the tracer's own thread then wakes
/// once a second on each measured CPU, the least it can disturb the measurement.
pub const PERIOD_US: u64 = 1_000_000;

/// Who else runs the osnoise or timerlat tracer (the top-level buffer or an instance), whose
/// global settings the timerlat tier would change: the tier is not used then.
pub fn in_use(tfs: &Tracefs) -> Option<String> {
    let tracer = |dir: &Path| {
        read_bounded(&dir.join("current_tracer"))
            .ok()
            .map(|s| s.trim().to_string())
            .filter(|t| t == "timerlat" || t == "osnoise")
    };
    if let Some(t) = tracer(&tfs.root) {
        return Some(format!("the top-level buffer runs the {t} tracer"));
    }
    let dir = std::fs::read_dir(tfs.root.join("instances")).ok()?;
    dir.flatten().find_map(|e| {
        let t = tracer(&e.path())?;
        Some(format!(
            "instance {} runs the {t} tracer",
            e.file_name().to_string_lossy()
        ))
    })
}

/// The global osnoise settings the tier changes, with their values now: `osnoise/cpus` and
/// `osnoise/timerlat_period_us` (written back by [`restore`] and by the reaper).
pub fn saved_settings(tfs: &Tracefs) -> Result<Vec<(PathBuf, String)>, TraceError> {
    ["cpus", "timerlat_period_us"]
        .iter()
        .map(|f| {
            let p = tfs.root.join("osnoise").join(f);
            let v = read_bounded(&p)?.trim().to_string();
            Ok((p, v))
        })
        .collect()
}

/// Points the tracer at the measured `cpus` with the longest period.
pub fn apply_settings(tfs: &Tracefs, cpus: &[usize]) -> Result<(), TraceError> {
    let list = cpus
        .iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(",");
    let dir = tfs.root.join("osnoise");
    write_file(&dir.join("cpus"), &list)?;
    write_file(&dir.join("timerlat_period_us"), &PERIOD_US.to_string())
}

/// Writes saved settings back (errors ignored: best effort on the way out).
pub fn restore(saved: &[(PathBuf, String)]) {
    for (p, v) in saved {
        let _ = write_file(p, v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::{Comm, Kind};

    const TID: i32 = 500;
    const D: u64 = 10_000_000;

    fn ev(ts: u64, kind: Kind) -> Event {
        Event { ts, pid: 0, kind }
    }

    fn noise(ts: u64, source: NoiseSource, duration_ns: u64) -> Event {
        ev(
            ts,
            Kind::Noise {
                source,
                duration_ns,
            },
        )
    }

    fn switch(ts: u64, prev: i32, next: (i32, i32), name: &str) -> Event {
        ev(
            ts,
            Kind::Switch {
                prev_pid: prev,
                prev_prio: 120,
                prev_comm: Comm::new(b"prev"),
                next_pid: next.0,
                next_prio: next.1,
                next_comm: Comm::new(name.as_bytes()),
            },
        )
    }

    fn timer(entry: u64, exit: u64) -> Vec<Event> {
        vec![
            ev(
                entry + 100,
                Kind::Waking {
                    pid: TID,
                    prio: 10,
                    comm: Comm::new(b"rtscope-m0"),
                    target_cpu: 1,
                },
            ),
            noise(
                exit,
                NoiseSource::Irq {
                    desc: "local_timer".into(),
                    vector: 236,
                },
                exit - entry,
            ),
        ]
    }

    fn spike(wakeup: u64) -> Spike {
        Spike {
            cpu: 1,
            tid: TID,
            deadline_ns: D,
            wakeup_ns: wakeup,
        }
    }

    fn check(mut e: Vec<Event>, wakeup: u64) -> Attribution {
        e.sort_by_key(|e| e.ts);
        let a = attribute(&e, &spike(wakeup), false);
        assert_eq!(
            a.charges.iter().map(|c| c.ns).sum::<u64>(),
            wakeup - D,
            "{a:?}"
        );
        a
    }

    #[test]
    fn a_previous_irq_then_a_lower_priority_thread_are_late_and_blocking() {
        let mut e = vec![switch(D - 500_000, TID, (88, 120), "kworker")];
        e.push(noise(
            D + 30_000,
            NoiseSource::Irq {
                desc: "eth0".into(),
                vector: 24,
            },
            40_000,
        ));
        e.extend(timer(D + 30_000, D + 35_000));
        e.push(noise(
            D + 80_000,
            NoiseSource::Thread {
                pid: 88,
                comm: Comm::new(b"kworker"),
            },
            45_000,
        ));
        e.push(switch(D + 80_000, 88, (TID, 10), "rtscope-m0"));
        let a = check(e, D + 82_000);
        let late = Category::TimerIrqLate {
            cause: LateCause::PreviousIrq {
                name: "eth0 (irq 24)".into(),
            },
        };
        assert_eq!(a.ns_where(|c| *c == late), 30_000);
        assert_eq!(a.ns_where(|c| *c == Category::TimerIrqHandler), 5_000);
        let blocking = a.ns_where(|c| matches!(c, Category::Blocking { task } if task.pid == 88));
        assert_eq!(blocking, 45_000);
        assert_eq!(a.ns_where(|c| *c == Category::ReturnToUser), 2_000);
        assert!(a.complete);
    }

    #[test]
    fn idle_softirq_and_nmi_noise_are_charged_by_kind() {
        let mut e = vec![switch(D - 500_000, TID, (0, 120), "swapper/1")];
        e.extend(timer(D + 20_000, D + 25_000));
        e.push(noise(D + 40_000, NoiseSource::Softirq { vec: 3 }, 10_000));
        e.push(noise(D + 50_000, NoiseSource::Nmi, 3_000));
        e.push(switch(D + 55_000, 0, (TID, 10), "rtscope-m0"));
        let a = check(e, D + 56_000);
        let idle = Category::TimerIrqLate {
            cause: LateCause::ExitFromIdle,
        };
        assert_eq!(a.culprit(), Some(&idle));
        assert_eq!(a.ns_where(|c| *c == idle), 20_000);
        assert_eq!(
            a.ns_where(|c| *c
                == Category::Softirq {
                    vec: Softirq::NetRx
                }),
            10_000
        );
        assert_eq!(a.ns_where(|c| *c == Category::Nmi), 3_000);
    }

    #[test]
    fn without_the_waking_the_attribution_is_incomplete_but_sums() {
        let e = vec![switch(D - 500_000, TID, (0, 120), "swapper/1")];
        let a = check(e, D + 10_000);
        assert!(!a.complete);
    }

    #[test]
    fn thread_samples_above_the_threshold_become_spikes() {
        let e = vec![
            Event {
                ts: 5_000,
                pid: 149,
                kind: Kind::TimerlatSample {
                    thread: true,
                    latency_ns: 3_000,
                },
            },
            ev(
                6_000,
                Kind::TimerlatSample {
                    thread: false,
                    latency_ns: 9_000,
                },
            ),
        ];
        let s = sample_spikes(&e, 1, 2_000);
        assert_eq!(s.len(), 1);
        assert_eq!(
            (s[0].tid, s[0].deadline_ns, s[0].wakeup_ns),
            (149, 2_000, 5_000)
        );
    }
}
