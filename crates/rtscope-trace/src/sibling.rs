//! The SMT sibling beside a gap: what the other hardware thread of the measured CPU's core ran
//! while the measured CPU lost time. A sibling busy through a gap that no kernel event on the
//! measured CPU explains points at the shared core (its execution units, caches, a microcode
//! assist) rather than the hypervisor or firmware; `rtla hwnoise`'s own documented example
//! only reached zero "HW" noise with hyper-threading off. The siblings come from the kernel's
//! topology (`thread_siblings_list`), their `sched_switch` events from the same tracefs
//! instance as the measured CPUs'.

use crate::decode::{Event, Kind, Tasks};
use crate::model::SiblingActivity;
use std::collections::VecDeque;
use std::path::Path;

/// Each of `cpus` with its SMT siblings (the other CPUs of its core, from
/// `root`/sys/devices/system/cpu/cpuN/topology/thread_siblings_list); CPUs without any (SMT off
/// or absent, an unreadable topology) are left out.
pub fn smt_siblings(root: &Path, cpus: &[usize]) -> Vec<(usize, Vec<usize>)> {
    cpus.iter()
        .filter_map(|&cpu| {
            let p = root.join(format!(
                "sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list"
            ));
            let text = crate::tracefs::read_bounded(&p).ok()?;
            let others: Vec<usize> = rtscope_core::cpulist::parse(text.trim())?
                .into_iter()
                .map(|c| c as usize)
                .filter(|&c| c != cpu)
                .collect();
            (!others.is_empty()).then_some((cpu, others))
        })
        .collect()
}

/// What `cpu` ran over `[from, to]` from its retained events (ascending): the time a task other
/// than the idle task ran, and the one that ran longest. The task current at `from` is the one
/// the last `sched_switch` before it switched in, or, with none retained, the one the first
/// switch after `from` switched out (another event's `common_pid` at worst). `None` when
/// nothing on `cpu` says what ran (no event retained at all: an idle CPU without ticks keeps
/// silent, and silence is not proof of idleness).
pub fn activity(
    cpu: usize,
    events: &VecDeque<Event>,
    from: u64,
    to: u64,
) -> Option<SiblingActivity> {
    let start = events.partition_point(|e| e.ts < from);
    let end = events.partition_point(|e| e.ts <= to);
    // The names come from the events that can say who ran: the last switch before the gap,
    // the gap's own and the first after it; not every retained event of the sibling, which
    // would cost each gap the whole lookback on an SMT machine.
    let lo = events
        .range(..start)
        .rposition(|e| matches!(e.kind, Kind::Switch { .. }))
        .unwrap_or(start);
    let mut tasks = Tasks::default();
    events
        .range(lo..(end + 1).min(events.len()))
        .for_each(|e| tasks.learn(e));
    let mut current = match start.checked_sub(1).map(|i| &events[i]) {
        Some(Event {
            kind: Kind::Switch { next_pid, .. },
            ..
        }) => *next_pid,
        Some(e) => e.pid,
        None => match events.get(start) {
            Some(Event {
                kind: Kind::Switch { prev_pid, .. },
                ..
            }) => *prev_pid,
            Some(e) => e.pid,
            None => return None,
        },
    };
    let mut busy: Vec<(i32, u64)> = Vec::new();
    let mut at = from;
    let mut account = |pid: i32, ns: u64| {
        if pid != 0 && ns > 0 {
            match busy.iter_mut().find(|(p, _)| *p == pid) {
                Some((_, t)) => *t += ns,
                None => busy.push((pid, ns)),
            }
        }
    };
    for e in events.range(start..end) {
        if let Kind::Switch { next_pid, .. } = e.kind {
            account(current, e.ts - at);
            at = e.ts;
            current = next_pid;
        }
    }
    account(current, to.saturating_sub(at));
    let top = busy
        .iter()
        .max_by_key(|&&(pid, ns)| (ns, -pid))
        .map(|&(pid, _)| pid);
    Some(SiblingActivity {
        cpu,
        busy_ns: busy.iter().map(|&(_, ns)| ns).sum(),
        span_ns: to.saturating_sub(from),
        task: top.map(|pid| tasks.task(pid)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::{Comm, TaskState};

    fn switch(ts: u64, prev: i32, next: i32, next_comm: &str) -> Event {
        Event {
            ts,
            pid: prev,
            kind: Kind::Switch {
                prev_pid: prev,
                prev_prio: 120,
                prev_comm: Comm::new(if prev == 0 { b"swapper/0" } else { b"prev" }),
                prev_state: TaskState::Preempted,
                next_pid: next,
                next_prio: 120,
                next_comm: Comm::new(next_comm.as_bytes()),
            },
        }
    }

    fn irq(ts: u64, pid: i32) -> Event {
        Event {
            ts,
            pid,
            kind: Kind::IrqExit { irq: 3 },
        }
    }

    #[test]
    fn the_busy_time_and_the_longest_task_come_from_the_switches_around_and_in_the_gap() {
        // Before the gap [1000, 2000]: stress (pid 7) runs; at 1300 idle, at 1600 yes (pid 9).
        let ev: VecDeque<Event> = [
            switch(500, 0, 7, "stress"),
            irq(900, 7),
            switch(1300, 7, 0, "swapper/1"),
            switch(1600, 0, 9, "yes"),
            switch(2500, 9, 0, "swapper/1"),
        ]
        .into();
        let a = activity(3, &ev, 1000, 2000).unwrap();
        assert_eq!((a.cpu, a.busy_ns, a.span_ns), (3, 300 + 400, 1000));
        assert_eq!(a.task.unwrap().comm, "yes", "400 ns against stress's 300");
        // Idle through a gap: nothing busy, no task.
        let idle = activity(3, &ev, 1310, 1590).unwrap();
        assert_eq!((idle.busy_ns, idle.task), (0, None));
    }

    #[test]
    fn with_no_switch_before_the_gap_the_first_switch_in_it_says_who_ran() {
        let ev: VecDeque<Event> = [switch(1500, 7, 0, "swapper/1")].into();
        let a = activity(1, &ev, 1000, 2000).unwrap();
        assert_eq!(a.busy_ns, 500);
        assert_eq!(a.task.unwrap().pid, 7);
        // Only an interrupt, in the gap: its common_pid ran throughout.
        let ev: VecDeque<Event> = [irq(1200, 42)].into();
        assert_eq!(activity(1, &ev, 1000, 2000).unwrap().busy_ns, 1000);
        // Nothing retained: unknown, not idle.
        assert_eq!(activity(1, &VecDeque::new(), 1000, 2000), None);
    }

    #[test]
    fn the_running_task_is_named_by_the_switch_that_put_it_there_however_far_back() {
        // stress switched in at 100, then a thousand of its interrupts before the gap.
        let ev: VecDeque<Event> = std::iter::once(switch(100, 0, 7, "stress"))
            .chain((0..1000).map(|i| irq(200 + i, 7)))
            .chain([irq(5500, 7)])
            .collect();
        let a = activity(1, &ev, 5000, 6000).unwrap();
        assert_eq!(a.busy_ns, 1000);
        assert_eq!(a.task.unwrap().comm, "stress");
    }

    #[test]
    fn siblings_are_read_from_the_topology_without_the_cpu_itself() {
        let root = std::env::temp_dir().join(format!("rtscope-smt-{}", std::process::id()));
        for (cpu, list) in [(1, "1,5\n"), (2, "2\n"), (3, "2-3\n")] {
            let d = root.join(format!("sys/devices/system/cpu/cpu{cpu}/topology"));
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("thread_siblings_list"), list).unwrap();
        }
        assert_eq!(
            smt_siblings(&root, &[1, 2, 3, 4]),
            vec![(1, vec![5]), (3, vec![2])],
            "CPU 2 has no sibling, CPU 4 no topology"
        );
        std::fs::remove_dir_all(&root).unwrap();
    }
}
