//! The eBPF flight recorder and the tracefs recorder agree (issue 68, item 2, the host half):
//! both record the same CPU while a SCHED_FIFO thread sleeps 200 µs at a time on it for half
//! a second; the eBPF records of that window, converted ([`rtscope_trace::bpf_events`]), are
//! aligned with the trace events of the same window, kind by kind in order, and their fields
//! compared. As root (the programs, tracefs, SCHED_FIFO); otherwise it fails under
//! RTSCOPE_TEST_STRICT=1 and skips with the reason. Facts only: times are printed, not
//! asserted.
//!
//! Asserted in every window: no field of a matched pair differs (PIDs, priorities, states,
//! IRQ and softirq numbers, vectors, handler functions, NMI durations); the derived
//! `common_pid` differs only after a switch the eBPF side lacks, or where the trace's own
//! `common_pid` changed with no `sched_switch` (seen on the development VM: both recorders
//! lack the switch out of some tasks); the sleeper's wakings named from
//! `/proc`. Not compared: the switches from idle to the sleeper when the trace lacks all of
//! them ([`without_idle_switches_trace_events_lack`]: this VM's trace events never carry
//! them). Asserted in one of [`ATTEMPTS`] windows: 95 % of the events matched (on the
//! development VM 99.9 % in a quiet window; 99 % at worst beside other tests' eBPF programs;
//! the bar leaves room for what another tracer on the same CPU takes away, not for a recorder
//! that misses a kind of event: that fails in every window). Printed: the
//! counts per tracepoint (matched, only in tracefs, only in eBPF), the names that differ (a
//! task gone or renamed since), how far apart the two times of a pair are. Not compared:
//! names (read late by the eBPF path), `sched_waking`'s `target_cpu` (not recorded).

mod support;

use rtscope_bpf::recorder::{Recorder, Setting};
use rtscope_explain::model::HandlerKind;
use rtscope_testkit::require;
use rtscope_trace::bpf_events::Converter;
use rtscope_trace::decode::{decode_pages, Event, Kind, Schema};
use rtscope_trace::tracefs::{Instance, InstanceConfig, StackChoice, Tracefs};
use std::collections::BTreeMap;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use support::*;

/// Records per CPU in the eBPF rings (16 MiB each): the window's half second on a CPU beside
/// `stress-ng --cpu 4 --io 2 --vm 1` wrote more than 65,536 (29 Nov 2026); the test checks
/// that its ring did not wrap over the window.
const RECORDS: u32 = 1 << 19;

/// The tracepoint an event is from.
fn tracepoint(k: &Kind) -> String {
    let handler = |kind: &HandlerKind| match kind {
        HandlerKind::Csd => "csd_function",
        HandlerKind::Tasklet => "tasklet",
        HandlerKind::Timer => "timer_expire",
    };
    match k {
        Kind::Switch { .. } => "sched_switch".into(),
        Kind::Waking { .. } => "sched_waking".into(),
        Kind::IrqEntry { .. } => "irq_handler_entry".into(),
        Kind::IrqExit { .. } => "irq_handler_exit".into(),
        Kind::SoftirqEntry { .. } => "softirq_entry".into(),
        Kind::SoftirqExit { .. } => "softirq_exit".into(),
        Kind::VectorEntry(v) => format!("{}_entry", v.name()),
        Kind::VectorExit(v) => format!("{}_exit", v.name()),
        Kind::Nmi { .. } => "nmi_handler".into(),
        Kind::HandlerEntry { kind, .. } => format!("{}_entry", handler(kind)),
        Kind::HandlerExit { kind } => format!("{}_exit", handler(kind)),
        other => format!("{other:?}"),
    }
}

/// What aligns two events: their tracepoint, what it is about (the IRQ, the vector) and
/// whom (a switch's two PIDs, a waking's): a switch or waking of other tasks is another event.
type Key = (String, i64, i64, i64);

fn key(e: &Event) -> Key {
    let (about, who, whom) = match e.kind {
        Kind::IrqEntry { irq, .. } | Kind::IrqExit { irq } => (i64::from(irq), 0, 0),
        Kind::SoftirqEntry { vec } | Kind::SoftirqExit { vec } => (i64::from(vec), 0, 0),
        Kind::Switch {
            prev_pid, next_pid, ..
        } => (0, i64::from(prev_pid), i64::from(next_pid)),
        Kind::Waking { pid, .. } => (0, i64::from(pid), 0),
        _ => (0, 0, 0),
    };
    (tracepoint(&e.kind), about, who, whom)
}

/// The fields an aligned pair must agree on (names, `target_cpu` and times apart).
fn fields(e: &Event) -> Vec<(&'static str, i64)> {
    match &e.kind {
        Kind::Switch {
            prev_pid,
            prev_prio,
            prev_state,
            next_pid,
            next_prio,
            ..
        } => vec![
            ("prev_pid", i64::from(*prev_pid)),
            ("prev_prio", i64::from(*prev_prio)),
            ("prev_state", *prev_state as i64),
            ("next_pid", i64::from(*next_pid)),
            ("next_prio", i64::from(*next_prio)),
        ],
        Kind::Waking { pid, prio, .. } => {
            vec![("pid", i64::from(*pid)), ("prio", i64::from(*prio))]
        }
        Kind::Nmi { delta_ns } => vec![("delta_ns", *delta_ns as i64)],
        Kind::HandlerEntry { func, .. } => vec![("func", *func as i64)],
        _ => vec![],
    }
}

/// The names an aligned pair gives (compared, not asserted: the eBPF path reads them late).
fn names(e: &Event) -> Vec<String> {
    match &e.kind {
        Kind::Switch {
            prev_comm,
            next_comm,
            ..
        } => vec![prev_comm.as_string(), next_comm.as_string()],
        Kind::Waking { comm, .. } => vec![comm.as_string()],
        Kind::IrqEntry { name, .. } => vec![name.clone()],
        _ => vec![],
    }
}

/// One step of an alignment: both, only the first sequence's, only the second's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    Both(usize, usize),
    OnlyA(usize),
    OnlyB(usize),
}

/// The shortest edit script between `a` and `b` (Myers' O((N+M)D) greedy algorithm), in
/// order; `None` when they differ by more than `max_d` edits.
fn align<T: PartialEq>(a: &[T], b: &[T], max_d: usize) -> Option<Vec<Step>> {
    let (n, m) = (a.len() as isize, b.len() as isize);
    let off = max_d as isize + 1;
    let mut v = vec![0isize; 2 * off as usize + 1];
    let mut trace: Vec<Vec<isize>> = Vec::new();
    let at = |k: isize| (k + off) as usize;
    let mut found = None;
    'd: for d in 0..=max_d as isize {
        trace.push(v[at(-d - 1)..=at(d + 1)].to_vec());
        for k in (-d..=d).step_by(2) {
            let mut x = if k == -d || (k != d && v[at(k - 1)] < v[at(k + 1)]) {
                v[at(k + 1)]
            } else {
                v[at(k - 1)] + 1
            };
            let mut y = x - k;
            while x < n && y < m && a[x as usize] == b[y as usize] {
                x += 1;
                y += 1;
            }
            v[at(k)] = x;
            if x >= n && y >= m {
                found = Some(d);
                break 'd;
            }
        }
    }
    let dmax = found?;
    let (mut x, mut y) = (n, m);
    let mut steps = Vec::new();
    for d in (0..=dmax).rev() {
        let snap = &trace[d as usize];
        let get = |k: isize| snap[(k + d + 1) as usize];
        let k = x - y;
        let (px, py) = if d == 0 {
            (0, 0)
        } else {
            let pk = if k == -d || (k != d && get(k - 1) < get(k + 1)) {
                k + 1
            } else {
                k - 1
            };
            (get(pk), get(pk) - pk)
        };
        while x > px && y > py {
            x -= 1;
            y -= 1;
            steps.push(Step::Both(x as usize, y as usize));
        }
        if d > 0 {
            if x == px {
                y -= 1;
                steps.push(Step::OnlyB(y as usize));
            } else {
                x -= 1;
                steps.push(Step::OnlyA(x as usize));
            }
        }
    }
    steps.reverse();
    Some(steps)
}

#[test]
fn the_alignment_is_the_shortest_edit_script() {
    let a: Vec<char> = "abcabba".chars().collect();
    let b: Vec<char> = "cbabac".chars().collect();
    let s = align(&a, &b, 20).unwrap();
    let both = s.iter().filter(|s| matches!(s, Step::Both(..))).count();
    assert_eq!((both, s.len() - both), (4, 5));
    for step in &s {
        if let Step::Both(i, j) = step {
            assert_eq!(a[*i], b[*j]);
        }
    }
    let same = align(&a, &a, 0).unwrap();
    assert!(same.iter().enumerate().all(|(i, s)| *s == Step::Both(i, i)));
    assert_eq!(align(&a, &[], 7).unwrap().len(), 7);
    assert_eq!(align(&a, &b, 3), None);
}

/// Per tracepoint: matched, only in tracefs, only in eBPF.
type Counts = BTreeMap<String, [usize; 3]>;

/// What the comparison of one window found.
#[derive(Default)]
struct Agreement {
    counts: Counts,
    /// (tracepoint, field): how many matched pairs differ in it.
    mismatches: BTreeMap<(String, &'static str), usize>,
    /// Pairs matched out of order ([`REORDERED`]).
    reordered: usize,
    /// Matched pairs whose `common_pid` differs: after a switch the eBPF side lacks (its
    /// derivation follows the switches it has), where the trace's own `common_pid` is not the
    /// task its last switch switched in ([`unswitched`]), and otherwise.
    common_pid: (usize, usize, usize),
    /// Matched pairs whose names differ: (the eBPF one empty, both named differently).
    names: (usize, usize),
    /// The largest time difference of a matched pair (ns), and the sum, for the mean.
    dt_max: u64,
    dt_sum: u64,
}

impl Agreement {
    fn total(&self, i: usize) -> usize {
        self.counts.values().map(|c| c[i]).sum()
    }
}

/// How far apart in the alignment an event only one side has may be from the same event
/// only the other has, to be taken as the same event recorded in another order: an interrupt
/// that came between the two recorders' callbacks on one tracepoint.
const REORDERED: usize = 32;

/// Indices into the two sides (or a place in the alignment and an index).
type Pairs = Vec<(usize, usize)>;

/// What [`pairs`] found.
struct Paired {
    /// The pairs (tracefs, eBPF).
    both: Pairs,
    /// The events left unpaired on each side.
    only_t: Vec<usize>,
    only_b: Vec<usize>,
    /// How many pairs were taken out of order.
    reordered: usize,
}

/// Aligns `t` (tracefs) and `b` (eBPF) and pairs what the alignment left alone on each side
/// within [`REORDERED`] steps; when they differ too much to align, their counts by
/// tracepoint.
fn pairs(t: &[Event], b: &[Event]) -> Result<Paired, String> {
    let (kt, kb): (Vec<Key>, Vec<Key>) = (t.iter().map(key).collect(), b.iter().map(key).collect());
    let max_d = (t.len() + b.len()) / 20 + 50;
    let Some(steps) = align(&kt, &kb, max_d) else {
        let mut n: BTreeMap<&str, [usize; 2]> = BTreeMap::new();
        kt.iter().for_each(|k| n.entry(&k.0).or_default()[0] += 1);
        kb.iter().for_each(|k| n.entry(&k.0).or_default()[1] += 1);
        return Err(format!(
            "the two recorders differ by more than {max_d} events: tracefs, eBPF: {n:?}"
        ));
    };
    let mut both = Vec::new();
    let (mut only_t, mut only_b): (Pairs, Pairs) = (vec![], vec![]);
    for (at, s) in steps.into_iter().enumerate() {
        match s {
            Step::Both(i, j) => both.push((i, j)),
            Step::OnlyA(i) => only_t.push((at, i)),
            Step::OnlyB(j) => only_b.push((at, j)),
        }
    }
    let mut reordered = 0;
    only_t.retain(|&(at, i)| {
        let near = only_b
            .iter()
            .position(|&(bt, j)| bt.abs_diff(at) <= REORDERED && kb[j] == kt[i]);
        match near {
            Some(n) => {
                both.push((i, only_b.remove(n).1));
                reordered += 1;
                false
            }
            None => true,
        }
    });
    let strip = |v: Pairs| v.into_iter().map(|p| p.1).collect();
    Ok(Paired {
        both,
        only_t: strip(only_t),
        only_b: strip(only_b),
        reordered,
    })
}

/// Per tracefs event: whether a switch the eBPF side lacks came before it, since the last
/// switch both have.
fn after_lost_switch(t: &[Event], only_t: &[usize]) -> Vec<bool> {
    let mut lost = false;
    t.iter()
        .enumerate()
        .map(|(i, e)| {
            let now = lost;
            if matches!(e.kind, Kind::Switch { .. }) {
                lost = only_t.contains(&i);
            }
            now
        })
        .collect()
}

/// Per tracefs event: whether its `common_pid` is not the task the last switch before it
/// switched in (the kernel's `current` changed with no `sched_switch` either recorder saw:
/// no derivation from switches can know it).
fn unswitched(t: &[Event]) -> Vec<bool> {
    let mut current: Option<i32> = None;
    t.iter()
        .map(|e| {
            let off = current.is_some_and(|c| c != e.pid);
            if let Kind::Switch { next_pid, .. } = e.kind {
                current = Some(next_pid);
            }
            off
        })
        .collect()
}

fn compare(t: &[Event], b: &[Event]) -> Result<Agreement, String> {
    let Paired {
        both,
        only_t,
        only_b,
        reordered,
    } = pairs(t, b)?;
    let mut g = Agreement {
        reordered,
        ..Agreement::default()
    };
    for (side, only, events) in [(1, &only_t, t), (2, &only_b, b)] {
        for (n, &i) in only.iter().enumerate() {
            if n < 12 {
                eprintln!("only in {}: {:?}", ["", "tracefs", "eBPF"][side], events[i]);
            }
            g.counts.entry(tracepoint(&events[i].kind)).or_default()[side] += 1;
        }
    }
    let after_lost = after_lost_switch(t, &only_t);
    let unswitched = unswitched(t);
    for (i, j) in both {
        let (x, y) = (&t[i], &b[j]);
        let tp = tracepoint(&x.kind);
        g.counts.entry(tp.clone()).or_default()[0] += 1;
        for ((f, vx), (_, vy)) in fields(x).into_iter().zip(fields(y)) {
            if vx != vy {
                *g.mismatches.entry((tp.clone(), f)).or_default() += 1;
                eprintln!("{f} differs: tracefs {x:?}, eBPF {y:?}");
            }
        }
        if x.pid != y.pid {
            match (after_lost[i], unswitched[i]) {
                (true, _) => g.common_pid.0 += 1,
                (false, true) => g.common_pid.1 += 1,
                (false, false) => {
                    g.common_pid.2 += 1;
                    eprintln!("common_pid differs: tracefs {x:?}, eBPF {y:?}");
                }
            }
        }
        for (nx, ny) in names(x).into_iter().zip(names(y)) {
            match (nx == ny, ny.is_empty()) {
                (true, _) => {}
                (false, true) => g.names.0 += 1,
                (false, false) => {
                    g.names.1 += 1;
                    if g.names.1 <= 5 {
                        eprintln!("named {nx:?} by tracefs, {ny:?} from /proc");
                    }
                }
            }
        }
        let dt = x.ts.abs_diff(y.ts);
        g.dt_max = g.dt_max.max(dt);
        g.dt_sum += dt;
    }
    Ok(g)
}

/// Reads `cpu`'s `trace_pipe_raw` pages from a thread on `hk` until `stop`, then drains it.
fn pages_of(
    inst: &Instance,
    cpu: usize,
    hk: usize,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<Vec<u8>> {
    let path = inst.pipe_raw(cpu);
    let size = inst.page_size;
    std::thread::spawn(move || {
        pin_and_name(hk, c"agree-reader", None);
        let mut f = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(path)
            .expect("trace_pipe_raw");
        let mut pages = Vec::new();
        loop {
            let done = stop.load(Ordering::Relaxed);
            let mut buf = vec![0u8; size];
            match f.read(&mut buf) {
                Ok(n) if n > 0 => pages.extend_from_slice(&buf),
                _ if done => return pages,
                _ => std::thread::sleep(std::time::Duration::from_millis(10)),
            }
        }
    })
}

/// A thread on `cpu` at SCHED_FIFO 50 sleeping 200 µs at a time for half a second; sends its
/// TID and the window it slept in, then waits to be released (alive: its name is read).
fn sleeper(cpu: usize, release: mpsc::Receiver<()>) -> mpsc::Receiver<(i32, u64, u64)> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        pin_and_name(cpu, c"agree-fifo", Some(50));
        // SAFETY: gettid has no preconditions.
        let tid = unsafe { libc::syscall(libc::SYS_gettid) } as i32;
        let t0 = now_ns();
        let mut t = t0;
        while t < t0 + 500_000_000 {
            sleep_until(now_ns() + 200_000);
            t = now_ns();
        }
        tx.send((tid, t0, t)).unwrap();
        let _ = release.recv();
    });
    rx
}

fn print(g: &Agreement, tracefs_only_kinds: &[String], missing: &[String]) {
    eprintln!("tracepoint: matched, only in tracefs, only in eBPF");
    for (tp, c) in &g.counts {
        eprintln!("  {tp}: {} {} {}", c[0], c[1], c[2]);
    }
    let n = g.total(0).max(1) as u64;
    eprintln!(
        "all: {} matched ({} of them out of order), {} only in tracefs, {} only in eBPF; field mismatches {:?}; \
         common_pid differs in {} after a switch eBPF lacks, {} where tracefs's own \
         changed with no switch, {} otherwise; names differ in {} (eBPF's gone) + {} (renamed); \
         time apart: max {} ns, mean {} ns; not compared: {tracefs_only_kinds:?} (tracefs \
         only), eBPF missing {missing:?}",
        g.total(0),
        g.reordered,
        g.total(1),
        g.total(2),
        g.mismatches,
        g.common_pid.0,
        g.common_pid.1,
        g.common_pid.2,
        g.names.0,
        g.names.1,
        g.dt_max,
        g.dt_sum / n
    );
}

/// One window of both recorders around [`sleeper`]: the events of each, converted and
/// kept to the tracepoints both follow, the sleeper's TID, and what only one side follows.
struct Window {
    t: Vec<Event>,
    b: Vec<Event>,
    tid: i32,
    tracefs_only: Vec<String>,
}

fn window(rec: &Recorder, tfs: &Tracefs, cpu: usize, hk: usize) -> Result<Window, String> {
    let cfg = InstanceConfig {
        cpus: vec![cpu],
        buffer_kb: 8192,
        hrtimer_events: false,
        timerlat: false,
        stacks: StackChoice::Off,
        late: Default::default(),
        formats_only: false,
    };
    let inst = Instance::create(tfs, &cfg).map_err(|e| format!("a tracefs instance: {e}"))?;
    let clock = std::fs::read_to_string(inst.dir.join("trace_clock")).unwrap_or_default();
    assert!(clock.contains("[mono]"), "the instance's clock: {clock}");
    let stop = Arc::new(AtomicBool::new(false));
    let reader = pages_of(&inst, cpu, hk, stop.clone());
    let written_before = rec.written(cpu as u32);
    let (release, released) = mpsc::channel();
    let (tid, t0, t1) = sleeper(cpu, released).recv().unwrap();
    let written = rec.written(cpu as u32) - written_before;
    std::thread::sleep(std::time::Duration::from_millis(50));
    stop.store(true, Ordering::Relaxed);
    let pages = reader.join().unwrap();
    let stats = std::fs::read_to_string(inst.dir.join(format!("per_cpu/cpu{cpu}/stats")));
    eprintln!(
        "tracefs cpu{cpu}: {}",
        stats.unwrap_or_default().replace('\n', "; ")
    );
    let schema = Schema::new(inst.formats.iter().cloned());
    let (events, lost, bad) = decode_pages(&pages, inst.page_size, &inst.layout, &schema);
    assert!(
        !lost && bad == 0,
        "tracefs lost events ({lost}) or bad pages ({bad})"
    );
    assert!(
        written <= u64::from(RECORDS),
        "the eBPF ring wrapped: {written} records"
    );
    // Converted while the sleeper lives: its name is read from /proc.
    let bpf = Converter::default().events(&rec.window(cpu as u32, t0, t1));
    drop(release);
    let attached: Vec<String> = rec.attached().iter().map(|s| s.to_string()).collect();
    let traced: Vec<String> = inst.formats.iter().map(|f| f.name.clone()).collect();
    let mut tracefs_only: Vec<String> = Vec::new();
    let t = events
        .into_iter()
        .filter(|e| e.ts >= t0 && e.ts <= t1)
        .filter(|e| {
            let tp = tracepoint(&e.kind);
            let keep = attached.contains(&tp);
            if !keep && !tracefs_only.contains(&tp) {
                tracefs_only.push(tp);
            }
            keep
        })
        .collect();
    let b = bpf
        .into_iter()
        .filter(|e| traced.contains(&tracepoint(&e.kind)))
        .collect();
    Ok(Window {
        t,
        b,
        tid,
        tracefs_only,
    })
}

/// Other tracefs instances and other processes' rtscope runs: what may disturb the window.
fn others(tfs: &Tracefs) -> Vec<String> {
    let mine = format!("rtscope-{}-", std::process::id());
    std::fs::read_dir(tfs.root.join("instances"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with(&mine))
        .collect()
}

/// How many times the window is taken before the recorders are said to disagree: other tests
/// on this host trace the same CPU at the same time (`rtscope --explain` runs, with their
/// own instances and eBPF programs), and a window they disturb is taken again.
const ATTEMPTS: usize = 3;

#[test]
fn the_ebpf_and_tracefs_recorders_agree_event_by_event() {
    let Some((cpu, hk)) = bpf_cpus() else { return };
    let tfs = Tracefs::discover();
    require!(tfs.is_ok(), "tracefs: {:?}", tfs.err());
    let tfs = tfs.unwrap();
    let _serial = serial();
    let setting = Setting {
        records: RECORDS,
        ..Setting::default()
    };
    let rec = Recorder::start(&setting);
    require!(rec.is_ok(), "the eBPF recorder: {:?}", rec.err());
    let rec = rec.unwrap();
    let missing: Vec<String> = rec
        .missing()
        .iter()
        .map(|m| m.tracepoint.to_string())
        .collect();
    for attempt in 1..=ATTEMPTS {
        let w = window(&rec, &tfs, cpu, hk[0]);
        require!(w.is_ok(), "{}", w.as_ref().err().map_or("", |e| e));
        let mut w = w.unwrap();
        eprintln!("attempt {attempt}; other instances: {:?}", others(&tfs));
        let dropped = without_idle_switches_trace_events_lack(&mut w);
        if dropped > 0 {
            eprintln!(
                "{dropped} switches from the idle task to the sleeper only in eBPF: this \
                 kernel's trace events carry none of them (not compared)"
            );
        }
        let g = match compare(&w.t, &w.b) {
            Ok(g) => g,
            Err(why) => {
                assert!(attempt < ATTEMPTS, "in each of {ATTEMPTS} windows: {why}");
                eprintln!("{why}");
                continue;
            }
        };
        print(&g, &w.tracefs_only, &missing);
        check(&g, &w);
        // A record being written while the window is read (at the ring's head, on a busy
        // CPU) is refused as torn rather than read half-written: counted, not a disagreement.
        eprintln!("torn records refused so far: {}", rec.torn());
        let (matched, n) = (g.total(0), w.t.len().max(w.b.len()));
        if matched * 100 >= 95 * n {
            return;
        }
        assert!(
            attempt < ATTEMPTS,
            "{matched} of {} (tracefs) and {} (eBPF) matched: {} only in tracefs, {} only \
             in eBPF, in each of {ATTEMPTS} windows",
            w.t.len(),
            w.b.len(),
            g.total(1),
            g.total(2)
        );
    }
}

/// The switches from the idle task to the sleeper, taken out of the eBPF side when the trace
/// has none of them. The development VM's kernel (6.18.44-fc, `cpuidle-haltpoll`) calls the
/// `sched_switch` tracepoint there for raw-tracepoint programs but its trace events never
/// record it: a quiet CPU 1 woke its 200 µs sleeper 5,016 times in a second and tracefs and
/// `perf stat -e sched:sched_switch -C 1` alike counted about 5,000 switches, all of them the
/// sleeper's to idle (29 Nov 2026). On a kernel whose trace has them they stay and are
/// compared; on a busy CPU the sleeper preempts a task, not the idle one, and they do not
/// arise. Returns how many were taken out.
fn without_idle_switches_trace_events_lack(w: &mut Window) -> usize {
    let tid = w.tid;
    let from_idle =
        |e: &Event| matches!(e.kind, Kind::Switch { prev_pid: 0, next_pid, .. } if next_pid == tid);
    if w.t.iter().any(from_idle) {
        return 0;
    }
    let before = w.b.len();
    w.b.retain(|e| !from_idle(e));
    before - w.b.len()
}

/// What holds in every window: the sleeper's wakings recorded and named, no field of a
/// matched pair different, `common_pid` different only after a switch the eBPF side lacks
/// (torn records are refused by the reader, counted and printed).
fn check(g: &Agreement, w: &Window) {
    let mine = |e: &&Event| matches!(e.kind, Kind::Waking { pid, .. } if pid == w.tid);
    assert!(
        w.b.iter().filter(mine).count() >= 100,
        "the sleeper's wakings"
    );
    for e in w.b.iter().filter(mine) {
        assert!(
            matches!(&e.kind, Kind::Waking { comm, prio: 49, .. } if comm.as_string() == "agree-fifo"),
            "{e:?}"
        );
    }
    assert!(g.mismatches.is_empty(), "fields differ: {:?}", g.mismatches);
    assert_eq!(g.common_pid.2, 0, "common_pid differs unexplained");
}
