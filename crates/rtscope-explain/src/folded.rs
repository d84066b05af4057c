//! Folded stacks, the format of Brendan Gregg's `flamegraph.pl` and of inferno: one line per
//! stack, its frames root first joined by `;`, a space and its weight (`python3;(user space)
//! 3100000`). Here each stack is a spike's folded kernel stack ([`crate::stack::folded_of`])
//! under its task's command, weighted by the nanoseconds charged to that task
//! ([`crate::stack::charged_ns`]); rtscope's own tracing frames, the scheduler, interrupt
//! entry and the way into a sleep are never in it ([`crate::stack::is_plumbing`],
//! [`crate::stack::is_sleep`]). Pure data, no I/O.

use crate::model::Attribution;
use crate::stack::{folded_of, leading_handler};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One folded stack and the time charged under it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FoldedStack {
    /// Its frames, root first, joined by `;` (the task's command, then the outermost kernel
    /// frame … the function; a leading handler under its context: `tasklet;noisy_tasklet`).
    pub stack: String,
    /// The time charged under it (ns).
    pub ns: u64,
    /// How many spikes.
    pub spikes: u64,
}

/// The most stacks a [`FoldedTable`] keeps by their frames; later new ones are summed under
/// [`OTHER_STACKS`].
pub const MAX_STACKS: usize = 1024;

/// The stack of the stacks beyond [`MAX_STACKS`].
pub const OTHER_STACKS: &str = "(other stacks)";

/// Time by folded stack over every traced spike of a run, bounded: [`MAX_STACKS`] stacks,
/// the rest summed as one, never dropped.
#[derive(Debug, Clone, Default)]
pub struct FoldedTable {
    rows: BTreeMap<String, (u64, u64)>,
}

impl FoldedTable {
    /// Counts `ns` of `a` under its folded stack ([`folded_line`]); nothing without one.
    pub fn add(&mut self, a: &Attribution, ns: u64) {
        let Some(line) = folded_line(a) else {
            return;
        };
        let key = match self.rows.contains_key(&line) || self.rows.len() < MAX_STACKS {
            true => line,
            false => OTHER_STACKS.to_string(),
        };
        let e = self.rows.entry(key).or_default();
        e.0 = e.0.saturating_add(ns);
        e.1 += 1;
    }

    /// The stacks, in name order.
    pub fn rows(&self) -> Vec<FoldedStack> {
        self.rows
            .iter()
            .map(|(stack, &(ns, spikes))| FoldedStack {
                stack: stack.clone(),
                ns,
                spikes,
            })
            .collect()
    }
}

/// A frame as a folded line can hold it: `;` (the separator) as `:`, white space other than
/// a plain space and control characters as `_` (a line is one stack; its weight follows the
/// last space).
fn frame(f: &str) -> String {
    f.chars()
        .map(|c| match c {
            ';' => ':',
            ' ' => ' ',
            c if c.is_whitespace() || c.is_control() => '_',
            c => c,
        })
        .collect()
}

/// `a`'s folded stack, root first: its task's command (not for a leading handler, whose
/// context is its root), then [`folded_of`]'s frames outermost first; `None` without one.
pub fn folded_line(a: &Attribution) -> Option<String> {
    let frames = folded_of(a);
    if frames.is_empty() {
        return None;
    }
    let task = match (leading_handler(a), &a.stack) {
        (None, Some(s)) => Some(frame(&s.task.comm)).filter(|c| !c.trim().is_empty()),
        _ => None,
    };
    let line: Vec<String> = task
        .into_iter()
        .chain(frames.iter().rev().map(|f| frame(f)))
        .collect();
    Some(line.join(";"))
}

/// The folded text of `stacks` (`flamegraph.pl`'s and inferno's input): `stack ns` per line,
/// stacks with no time left out.
pub fn text(stacks: &[FoldedStack]) -> String {
    stacks
        .iter()
        .filter(|s| s.ns > 0)
        .map(|s| format!("{} {}\n", s.stack, s.ns))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Category, Charge, KernelStack, Spike, Task};

    fn spinner() -> Task {
        Task {
            comm: "spin;ner\tx".into(),
            pid: 40,
            prio: 49,
        }
    }

    fn traced(frames: &[&str], charged: u64) -> Attribution {
        Attribution {
            spike: Spike {
                cpu: 1,
                tid: 7,
                deadline_ns: 1_000,
                wakeup_ns: 1_000 + 5 * charged,
                smis: None,
            },
            charges: vec![
                Charge {
                    category: Category::Hypervisor,
                    ns: 4 * charged,
                    times: 0,
                },
                Charge {
                    category: Category::Thread { task: spinner() },
                    ns: charged,
                    times: 1,
                },
            ],
            complete: true,
            lost_events: false,
            siblings: Vec::new(),
            stack: Some(KernelStack {
                task: spinner(),
                frames: frames.iter().map(|f| f.to_string()).collect(),
            }),
            handler: None,
        }
    }

    /// The spinner's sleep (a raw tracepoint's BPF program took it: `bpf_trace_run4` at its
    /// tip) is user space under its command; a kernel function's stack is root first, the
    /// tracer's frames cut; each weighted by the spinner's charged time, not the latency.
    #[test]
    fn folded_lines_are_root_first_weighted_by_charged_time_without_tracing_frames() {
        let sleep = traced(
            &[
                "bpf_trace_run4",
                "__bpf_trace_sched_switch",
                "__traceiter_sched_switch",
                "__schedule",
                "schedule",
                "do_nanosleep",
                "hrtimer_nanosleep",
                "common_nsleep_timens",
                "__x64_sys_clock_nanosleep",
                "do_syscall_64",
                "entry_SYSCALL_64_after_hwframe",
            ],
            3_000,
        );
        let kernel = traced(
            &[
                "bpf_trace_run2",
                "__schedule",
                "noisy_hold_preempt_off [noisy]",
                "kthread",
            ],
            2_000,
        );
        assert_eq!(
            folded_line(&sleep).as_deref(),
            Some("spin:ner_x;(user space)")
        );
        let mut t = FoldedTable::default();
        for a in [&sleep, &sleep, &kernel] {
            t.add(a, crate::stack::charged_ns(a));
        }
        assert_eq!(
            text(&t.rows()),
            "spin:ner_x;(user space) 6000\nspin:ner_x;kthread;noisy_hold_preempt_off [noisy] 2000\n"
        );
        assert!(!text(&t.rows()).contains("bpf_"));
    }

    #[test]
    fn stacks_beyond_the_bound_are_summed_as_one_not_dropped() {
        let mut t = FoldedTable::default();
        for i in 0..MAX_STACKS + 3 {
            t.add(&traced(&[&format!("f{i}")], 10), 10);
        }
        let rows = t.rows();
        assert_eq!(rows.len(), MAX_STACKS + 1);
        let other = rows.iter().find(|r| r.stack == OTHER_STACKS).unwrap();
        assert_eq!((other.ns, other.spikes), (30, 3));
        assert_eq!(
            rows.iter().map(|r| r.ns).sum::<u64>(),
            10 * (MAX_STACKS as u64 + 3)
        );
    }
}
