//! The eBPF flight recorder and the tracefs recorder agree spike by spike (issue 68, item 2,
//! the host half of "agreement spike by spike"): two explainers at once on the measured CPU,
//! one fed by the eBPF rings (`--explain-recorder ebpf`), one by the tracefs instance's trace
//! events, each its own instance; a SCHED_FIFO 98 thread measures 1 ms periods while a
//! SCHED_FIFO 99 `culprit` on the same CPU busy-loops 3 ms every 300 ms, so spikes of 1 ms
//! and more are certain and their cause is known. The same spikes go to both.
//!
//! Asserted: the eBPF explainer ran on the rings with no trace event enabled; the eBPF side
//! charges the culprit (by name and priority) first where a spike's deadline fell in a burst;
//! of the spikes both explain, at most one in [`DISAGREE_ONE_IN`] (each printed) has another
//! top charge or a category's charge apart by more than [`tolerance`], once the time either
//! side charges to a late timer interrupt or the hypervisor for want of a switch this VM's
//! trace events lack (the tracefs side: the idle exit and the hypervisor; the eBPF side:
//! interrupts off in the task it saw switched in) is set back on its largest other charge
//! ([`folded`]); each attribution accounts for every nanosecond. Printed, not asserted: how many spikes each
//! explained, and the largest differences. As root (eBPF programs, tracefs, SCHED_FIFO);
//! otherwise it fails under RTSCOPE_TEST_STRICT=1 and skips with the reason.

mod support;

use rtscope_explain::book::{ExplainSummary, Explained};
use rtscope_explain::model::{Attribution, Category};
use rtscope_testkit::require;
use rtscope_trace::explain::{ExplainConfig, Explainer, RecorderChoice};
use rtscope_trace::tracefs::observed::RINGS;
use rtscope_trace::tracefs::{StackChoice, Tracefs};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use support::*;

/// Spikes at or above this are explained: the culprit's bursts (3 ms) make spikes of about
/// 2 to 3 ms; a 1 ms spike on a quiet CPU has no other cause this test injects.
const THRESHOLD_NS: u64 = 1_000_000;

/// How far one category's charge may differ between the two recorders, once the idle
/// difference is folded ([`folded`]): an attribution cuts the spike at its events' times, and
/// the two recorders take each event's time in the same tracepoint call, the eBPF program's
/// and the trace event's probe one after the other: the agreement test (`bpf_agreement.rs`)
/// sees pairs a few microseconds apart at most, and a handful of boundaries fall inside a
/// spike. 20 µs, or 1 % of the spike where a vCPU preempted between the two probes stretches
/// one of them (the spikes are milliseconds here; on the development VM the folded charges
/// differ by 3 µs at most).
fn tolerance(latency_ns: u64) -> u64 {
    (latency_ns / 100).max(20_000)
}

/// Whether `c` is what an attribution charges when it believes the CPU idle at the deadline:
/// the timer interrupt late for the exit from idle, and the hypervisor (an idle exit longer
/// than a VM's idle states allow).
fn idle_derived(c: &Category) -> bool {
    matches!(c, Category::Hypervisor | Category::TimerIrqLate { .. })
}

/// `t`'s charges by category, with the idle-derived ones `b` has none of moved to `t`'s
/// largest other charge (each side is folded against the other: [`largest_difference`]). This VM's trace events lack the switch from the idle task into a task woken while
/// the CPU was idle (`bpf_agreement.rs`); the culprit is such a task (it sleeps 300 ms), so
/// the tracefs side believes the CPU idle at the deadline and charges the time to the
/// timer interrupt's exit from idle and the hypervisor, where the eBPF side, which has the
/// switch, charges the culprit that ran.
fn folded(t: &Attribution, b: &Attribution) -> (BTreeMap<String, u64>, u64) {
    let mut m = charges(t);
    let mut moved = 0;
    for c in t.charges.iter().filter(|c| idle_derived(&c.category)) {
        if !b.charges.iter().any(|x| x.category == c.category) {
            moved += c.ns;
            m.remove(&c.category.to_string());
        }
    }
    let onto = m
        .iter()
        .max_by_key(|(_, &ns)| ns)
        .map(|(k, _)| k.clone())
        .or_else(|| t.charges.first().map(|c| c.category.to_string()));
    if let Some(k) = onto {
        *m.entry(k).or_default() += moved;
    }
    (m, moved)
}

/// The category a folded view charges the most.
fn top_of(m: &BTreeMap<String, u64>) -> Option<&String> {
    m.iter().max_by_key(|(_, &ns)| ns).map(|(k, _)| k)
}

fn explainer(cpu: usize, hk: &[usize], recorder: RecorderChoice) -> Explainer {
    let mut cfg = ExplainConfig::new(THRESHOLD_NS, vec![cpu], StackChoice::Off);
    cfg.housekeeping = hk.to_vec();
    cfg.per_window = 10_000;
    cfg.recorder = recorder;
    cfg.bpf_records = 1 << 16;
    // The reader at rtscope's housekeeping priority (SCHED_FIFO 1), as every run's: at
    // SCHED_OTHER beside CI's hog the eBPF side's reader fell behind its 65,536 records a CPU
    // and traced 1 of 16 spikes (29 Nov 2026).
    cfg.reader_fifo = Some(1);
    Explainer::start(cfg)
}

fn traced(s: &ExplainSummary) -> BTreeMap<(u64, u64), &Attribution> {
    s.worst
        .iter()
        .filter_map(|e| match e {
            Explained::Traced(a) => Some(((a.spike.deadline_ns, a.spike.wakeup_ns), a)),
            _ => None,
        })
        .collect()
}

fn is_culprit(c: &Category) -> bool {
    matches!(c, Category::Thread { task } if task.comm == "culprit" && task.prio == 0)
}

/// Each category's charge (by its words), for comparing two attributions.
fn charges(a: &Attribution) -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    for c in &a.charges {
        *m.entry(c.category.to_string()).or_default() += c.ns;
    }
    m
}

/// The largest difference of one category's charge between `b` and `t`, each folded against
/// the other ([`folded`]: the eBPF side too, where it charged a late timer interrupt to a task
/// it saw running with interrupts off and the tracefs side, without the switch into that
/// task, the hypervisor), the category, how much of `t` was folded, and whether both folded
/// views charge the same category the most.
fn largest_difference(b: &Attribution, t: &Attribution) -> (u64, String, u64, bool) {
    let ((cb, _), (ct, moved)) = (folded(b, t), folded(t, b));
    let same_top = top_of(&cb) == top_of(&ct);
    let (d, what) = cb
        .keys()
        .chain(ct.keys())
        .map(|k| {
            let (x, y) = (cb.get(k).copied(), ct.get(k).copied());
            (x.unwrap_or(0).abs_diff(y.unwrap_or(0)), k.clone())
        })
        .max()
        .unwrap_or_default();
    (d, what, moved, same_top)
}

/// At most one spike in this many both recorders explained may disagree (printed). On 30 Nov
/// 2026, 14 runs of 30 spikes on a quiet host: 12 disagreements, at most 2 in a run; most
/// often (8) a few hundred µs to 1.8 ms of a culprit's spike charged to the culprit by eBPF
/// and to the return to user by tracefs (the measured thread switched in earlier by the
/// trace events' account). Not explained yet (issue 68); the others were this VM's trace
/// events lacking a switch from the idle task, beyond what folding sets back.
const DISAGREE_ONE_IN: usize = 10;

#[test]
fn the_ebpf_and_tracefs_recorders_explain_the_same_spikes_alike() {
    let Some((cpu, hk)) = bpf_cpus() else { return };
    require!(Tracefs::discover().is_ok(), "tracefs");
    let _serial = serial();
    let mut b = explainer(cpu, &hk, RecorderChoice::Bpf);
    let rings = b.observed().recorder.starts_with(RINGS);
    require!(rings, "the eBPF recorder: {}", b.tier_line("spikes"));
    assert!(b.observed().events.is_empty(), "{:?}", b.observed());
    let mut t = explainer(cpu, &hk, RecorderChoice::Tracefs);
    assert!(
        t.observed().recorder.starts_with("tracefs instance"),
        "{}",
        t.tier_line("spikes")
    );
    eprintln!("{}\n{}", b.tier_line("spikes"), t.tier_line("spikes"));
    let dirs = [b.instance_dir(), t.instance_dir()].map(|d| d.unwrap().to_path_buf());
    let bursts = Arc::new(Mutex::new(Vec::new()));
    let spikes = {
        let _culprit = culprit(cpu, 3, bursts.clone());
        measure(cpu, 5, THRESHOLD_NS, |new| {
            for s in new {
                b.push_spike(*s);
                t.push_spike(*s);
            }
            b.poll();
            t.poll();
        })
    };
    let (sb, st) = (
        b.finish(Duration::from_secs(3)),
        t.finish(Duration::from_secs(3)),
    );
    for d in &dirs {
        assert!(!d.exists(), "instance {} left behind", d.display());
    }
    eprintln!(
        "interrupt exits missing: eBPF {:?}, tracefs {:?}",
        sb.missing_exits, st.missing_exits
    );
    assert!(
        sb.missing_exits.is_empty() && st.missing_exits.is_empty(),
        "interrupt exits missing: eBPF {:?}, tracefs {:?}",
        sb.missing_exits,
        st.missing_exits
    );
    let bursts = bursts.lock().unwrap().clone();
    let in_burst = |a: &Attribution| {
        bursts
            .iter()
            .any(|&(s, e)| a.spike.deadline_ns >= s && a.spike.deadline_ns <= e)
    };
    eprintln!(
        "counts: eBPF {:?}\n        tracefs {:?}",
        sb.counts, st.counts
    );
    compare(&traced(&sb), &traced(&st), &in_burst, spikes.len());
}

fn compare(
    b: &BTreeMap<(u64, u64), &Attribution>,
    t: &BTreeMap<(u64, u64), &Attribution>,
    in_burst: &dyn Fn(&Attribution) -> bool,
    spikes: usize,
) {
    let mut both = 0;
    let mut largest: Vec<(u64, String, u64)> = Vec::new();
    let mut folded_ns: Vec<u64> = Vec::new();
    let mut disagree: Vec<String> = Vec::new();
    for (key, x) in b {
        for a in [x].into_iter().chain(t.get(key)) {
            let sum: u64 = a.charges.iter().map(|c| c.ns).sum();
            assert_eq!(sum, a.spike.latency_ns(), "{a:?}");
        }
        let Some(y) = t.get(key) else { continue };
        // A recorder whose trace of the spike is incomplete (its reader behind the load: beside
        // CI's hog tracefs gave one of the culprit's spikes only `Unexplained`, 29 Nov 2026)
        // has nothing to compare; `both` counts the spikes both traced whole.
        if !x.complete || !y.complete {
            eprintln!(
                "incomplete in one recorder, not compared:\n  eBPF    {x:?}\n  tracefs {y:?}"
            );
            continue;
        }
        both += 1;
        // Outside the culprit's bursts there is no injected truth: a host task's spike on this
        // VM (its agent, `tokio-rt-worker`) was charged to its blocking by eBPF and to a late
        // timer interrupt by tracefs, on 29 Nov 2026 in two runs of two (issue 68, open).
        // Printed, not asserted; the spikes the culprit caused are held to both recorders.
        let (d, what, moved, same_top) = largest_difference(x, y);
        if !in_burst(x) && !same_top {
            eprintln!("outside a burst, top charges differ:\n  eBPF    {x:?}\n  tracefs {y:?}");
            continue;
        }
        if in_burst(x) {
            let top = x.charges.first().map(|c| &c.category);
            assert!(top.is_some_and(is_culprit), "{x:?}");
        }
        let lat = x.spike.latency_ns();
        if !same_top || d > tolerance(lat) {
            let why = if same_top {
                format!("{what}: {d} ns apart in a {lat} ns spike")
            } else {
                "top charges differ".into()
            };
            eprintln!("disagree: {why}:\n  eBPF    {x:?}\n  tracefs {y:?}");
            disagree.push(why);
        }
        if largest.iter().all(|l| l.0 < d) {
            eprintln!(
                "largest so far:\n  eBPF    {:?}\n  tracefs {:?}",
                charges(x),
                charges(y)
            );
        }
        folded_ns.push(moved);
        largest.push((d, what, lat));
    }
    largest.sort_unstable_by(|p, q| q.cmp(p));
    let caused = b.values().filter(|a| in_burst(a)).count();
    eprintln!(
        "{spikes} spikes ≥ {THRESHOLD_NS} ns; traced: {} by eBPF, {} by tracefs, {both} by \
         both ({caused} of eBPF's in a burst); only eBPF {}, only tracefs {}",
        b.len(),
        t.len(),
        b.keys().filter(|k| !t.contains_key(k)).count(),
        t.keys().filter(|k| !b.contains_key(k)).count()
    );
    eprintln!(
        "tracefs charged the idle exit and the hypervisor where eBPF charged the culprit in {} \
         spikes, at most {} ns",
        folded_ns.iter().filter(|&&n| n > 0).count(),
        folded_ns.iter().max().unwrap_or(&0)
    );
    for (d, what, lat) in largest.iter().take(5) {
        eprintln!("  largest difference: {d} ns in {what} (spike {lat} ns)");
    }
    assert!(both >= 5, "{both} spikes explained by both");
    assert!(
        disagree.len() * DISAGREE_ONE_IN <= both,
        "{} of {both} spikes disagree (at most one in {DISAGREE_ONE_IN}): {disagree:?}",
        disagree.len()
    );
}
