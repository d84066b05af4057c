//! The top CPU-consuming threads, from `/proc/<pid>/task/<tid>/stat`.
//!
//! Every thread's stat file is read exactly once per sample (one `open` + `read` each, into a
//! reused buffer); only the threads that enter the top N get their name copied. CPU share is
//! the thread's `utime + stime` delta (clock ticks) over the interval, in % of one CPU.

use crate::text::read_into;
use crate::{Status, ThreadShare};
use std::collections::HashMap;
use std::ffi::OsStr;
use std::fs;
use std::path::{Path, PathBuf};

/// `PF_KTHREAD` in the `flags` field: the task is a kernel thread.
const PF_KTHREAD: u64 = 0x0020_0000;

/// What a sample remembers of one thread for the next.
#[derive(Clone, Copy)]
struct Seen {
    /// `utime + stime` in clock ticks.
    ticks: u64,
    /// `starttime` in clock ticks after boot, to tell a reused TID from the same thread.
    start: u64,
    /// Whether it is a kernel thread (then it is the only thread of its process).
    kthread: bool,
}

/// The fields of a task `stat` line that the monitor uses.
#[derive(Debug, PartialEq)]
pub(crate) struct TaskStat<'a> {
    pub(crate) comm: &'a str,
    pub(crate) ppid: u32,
    pub(crate) kernel: bool,
    pub(crate) ticks: u64,
    pub(crate) start: u64,
    pub(crate) last_cpu: u32,
}

/// Parses `/proc/<pid>/task/<tid>/stat`. The name is whatever lies between the first `(` and
/// the last `)`, so names with spaces or parentheses parse. `None` if fields are missing.
pub(crate) fn parse_task_stat(s: &str) -> Option<TaskStat<'_>> {
    let open = s.find('(')?;
    let close = s.rfind(')')?;
    if close < open {
        return None;
    }
    // f[k] is field k + 3 of proc(5): state, ppid, ..., flags (9), utime (14), stime (15),
    // starttime (22), processor (39).
    let mut f = [""; 37];
    let mut n = 0;
    for tok in s[close + 1..].split_ascii_whitespace().take(37) {
        f[n] = tok;
        n += 1;
    }
    if n < 37 {
        return None;
    }
    let num = |i: usize| f[i].parse::<u64>().ok();
    Some(TaskStat {
        comm: &s[open + 1..close],
        ppid: f[1].parse().ok()?,
        kernel: num(6)? & PF_KTHREAD != 0,
        ticks: num(11)?.checked_add(num(12)?)?,
        start: num(19)?,
        last_cpu: f[36].parse().ok()?,
    })
}

/// The thread source: a walk of `/proc/*/task/*/stat` per sample.
pub(crate) struct Threads {
    proc_dir: PathBuf,
    /// Scratch path, pushed and popped while walking.
    path: PathBuf,
    prev: HashMap<u32, Seen>,
    cur: HashMap<u32, Seen>,
    /// Each process's parent, from its main thread's stat in this sample's walk.
    parents: HashMap<u32, u32>,
    /// The process whose threads (and its descendants') are marked own: this process.
    pub(crate) own_pid: u32,
    /// The threads that used CPU time in the interval (reused from sample to sample).
    busy: Vec<(u64, ThreadShare)>,
    pub(crate) status: Status,
}

/// How to turn tick deltas into shares, and how many to keep.
#[derive(Clone, Copy)]
pub(crate) struct TopParams {
    /// Seconds since the previous sample; `None` for the first sample (no shares).
    pub(crate) dt: Option<f64>,
    /// Clock ticks per second (`USER_HZ`).
    pub(crate) hz: u64,
    /// How many threads to return.
    pub(crate) n: usize,
}

impl Threads {
    pub(crate) fn new(root: &Path) -> Self {
        let proc_dir = root.join("proc");
        let status = if has_task_dir(&proc_dir) {
            Status::available("/proc/<pid>/task/<tid>/stat".to_owned())
        } else {
            Status::unavailable("no /proc/<pid>/task directories".to_owned())
        };
        Threads {
            path: proc_dir.clone(),
            proc_dir,
            prev: HashMap::new(),
            cur: HashMap::new(),
            parents: HashMap::new(),
            own_pid: std::process::id(),
            busy: Vec::new(),
            status,
        }
    }

    /// Reads every thread's stat once and returns the top `p.n` by CPU share, then up to `p.n`
    /// more of rtscope's own threads (its loads' included) below them, so that under a heavier
    /// load than rtscope's its own cost stays on record (threads that used no CPU time in the
    /// interval are left out). The first sample returns nothing.
    pub(crate) fn sample(&mut self, buf: &mut String, p: TopParams) -> Vec<ThreadShare> {
        let mut walk = Walk {
            p,
            busy: std::mem::take(&mut self.busy),
        };
        walk.busy.clear();
        let Ok(procs) = fs::read_dir(&self.proc_dir) else {
            self.status.update(false, || "cannot list /proc".to_owned());
            return Vec::new();
        };
        for entry in procs.flatten() {
            let name = entry.file_name();
            let Some(pid) = name.to_str().and_then(|n| n.parse::<u32>().ok()) else {
                continue;
            };
            self.path.push(&name);
            self.path.push("task");
            // A kernel thread is a process of one thread: read its stat without listing
            // its task directory (which costs five system calls).
            let kthread = self.prev.get(&pid).is_some_and(|s| s.kthread);
            if !(kthread && self.visit(pid, pid, &name, buf, &mut walk, true)) {
                self.walk_tasks(pid, buf, &mut walk);
            }
            self.path.pop();
            self.path.pop();
        }
        self.status
            .update(!self.cur.is_empty(), || "no readable task stat".to_owned());
        std::mem::swap(&mut self.prev, &mut self.cur);
        self.cur.clear();
        for (_, t) in &mut walk.busy {
            t.own = self.descends(t.pid);
        }
        let top = select(&mut walk.busy, p.n);
        self.busy = walk.busy;
        self.parents.clear();
        top
    }

    /// Whether process `pid` is [`Threads::own_pid`] or one of its descendants (a load
    /// supervisor, its workers), by the parents seen in this sample.
    fn descends(&self, pid: u32) -> bool {
        let mut p = pid;
        // A chain longer than any real process tree means a cycle of reused PIDs.
        for _ in 0..64 {
            if p == self.own_pid {
                return true;
            }
            match self.parents.get(&p) {
                Some(&parent) if parent != 0 && parent != p => p = parent,
                _ => return false,
            }
        }
        false
    }

    /// Visits every thread of process `pid` (whose task directory is `self.path`).
    fn walk_tasks(&mut self, pid: u32, buf: &mut String, walk: &mut Walk) {
        let Ok(tasks) = fs::read_dir(&self.path) else {
            return; // the process exited
        };
        for entry in tasks.flatten() {
            let name = entry.file_name();
            if let Some(tid) = name.to_str().and_then(|n| n.parse::<u32>().ok()) {
                self.visit(pid, tid, &name, buf, walk, false);
            }
        }
    }

    /// Reads `<task dir>/<tid>/stat`, remembers it for the next sample and offers it to the
    /// top list. With `same_kthread`, only a kernel thread seen in the previous sample (same
    /// start time) is accepted. Returns whether the thread was taken.
    fn visit(
        &mut self,
        pid: u32,
        tid: u32,
        name: &OsStr,
        buf: &mut String,
        walk: &mut Walk,
        same_kthread: bool,
    ) -> bool {
        self.path.push(name);
        self.path.push("stat");
        let read = read_into(&self.path, buf);
        self.path.pop();
        self.path.pop();
        let Some(st) = read.ok().and_then(|()| parse_task_stat(buf)) else {
            return false;
        };
        let before = self.prev.get(&tid).copied();
        let same = before.is_some_and(|b| b.start == st.start);
        if same_kthread && !(same && st.kernel) {
            return false;
        }
        let seen = Seen {
            ticks: st.ticks,
            start: st.start,
            kthread: st.kernel,
        };
        self.cur.insert(tid, seen);
        if tid == pid {
            self.parents.insert(pid, st.ppid);
        }
        let Some(dt) = walk.p.dt else {
            return true;
        };
        let delta = match before {
            Some(b) if same => st.ticks.saturating_sub(b.ticks),
            _ => st.ticks, // born (or TID reused) during the interval
        };
        if delta > 0 {
            let hz = walk.p.hz as f64;
            walk.busy.push((
                delta,
                ThreadShare {
                    pid,
                    tid,
                    comm: st.comm.to_owned(),
                    // Tick accounting can credit a whole tick to a thread that ran part of it;
                    // over a short interval that overshoots, and no thread uses more than one CPU.
                    cpu_percent: (delta as f64 * 100.0 / (hz * dt)).min(100.0),
                    last_cpu: st.last_cpu,
                    kernel_thread: st.kernel,
                    own: false, // set after the walk, when every parent is known
                },
            ));
        }
        true
    }
}

/// One sample's walk: its parameters and the threads that used CPU time.
struct Walk {
    p: TopParams,
    /// (tick delta, share), in walk order.
    busy: Vec<(u64, ThreadShare)>,
}

/// The first `n` of `busy` by tick delta (ties keep the walk order: TIDs ascend within a
/// process), then up to `n` of the own threads below them, in the same order. Drains `busy`.
fn select(busy: &mut Vec<(u64, ThreadShare)>, n: usize) -> Vec<ThreadShare> {
    // Stable: equal deltas stay in walk order.
    busy.sort_by_key(|(d, _)| std::cmp::Reverse(*d));
    let mut own_below = 0;
    busy.drain(..)
        .enumerate()
        .filter(|(i, (_, t))| {
            let below = *i >= n;
            let keep = !below || (t.own && own_below < n);
            own_below += usize::from(below && keep);
            keep
        })
        .map(|(_, (_, t))| t)
        .collect()
}

fn has_task_dir(proc_dir: &Path) -> bool {
    let Ok(rd) = fs::read_dir(proc_dir) else {
        return false;
    };
    rd.flatten().any(|e| {
        e.file_name()
            .to_str()
            .is_some_and(|n| n.parse::<u32>().is_ok())
            && e.path().join("task").is_dir()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const LINE: &str = "123 (irq/39-dwc otg) S 2 0 0 0 -1 2129984 0 0 0 0 17 42 0 0 -51 0 1 0 \
                        310 0 0 18446744073709551615 0 0 0 0 0 0 0 2147483647 0 0 0 0 17 2 50 1 \
                        0 0 0 0 0 0 0 0 0 0 0";

    #[test]
    fn task_stat_fields() {
        let st = parse_task_stat(LINE).expect("parses");
        assert_eq!(
            st,
            TaskStat {
                comm: "irq/39-dwc otg",
                ppid: 2,
                kernel: true,
                ticks: 59,
                start: 310,
                last_cpu: 2
            }
        );
        let odd = LINE.replace("(irq/39-dwc otg)", "(a) b (c))");
        assert_eq!(parse_task_stat(&odd).map(|s| s.comm), Some("a) b (c)"));
    }

    #[test]
    fn malformed_task_stat() {
        assert!(parse_task_stat("").is_none());
        assert!(parse_task_stat(") 1 2 (").is_none());
        assert!(parse_task_stat("1 (x) S 1 2 3").is_none());
        assert!(parse_task_stat(&LINE.replace(" 17 42 ", " 17 x ")).is_none());
    }

    fn share(tid: u32) -> ThreadShare {
        ThreadShare {
            pid: 1,
            tid,
            comm: String::new(),
            cpu_percent: 0.0,
            last_cpu: 0,
            kernel_thread: false,
            own: false,
        }
    }

    #[test]
    fn top_n_selection() {
        let mut busy: Vec<(u64, ThreadShare)> = [(1, 5), (2, 9), (3, 5), (4, 1), (5, 7)]
            .into_iter()
            .map(|(tid, d)| (d, share(tid)))
            .collect();
        let got: Vec<u32> = select(&mut busy, 3).iter().map(|t| t.tid).collect();
        assert_eq!(got, [2, 5, 1], "ties keep the walk order");
        assert!(busy.is_empty());
        let mut one = vec![(5, share(1))];
        assert!(select(&mut one, 0).is_empty());
    }

    /// rtscope's own threads below the first n are kept, up to n of them.
    #[test]
    fn own_threads_below_the_top_are_kept_up_to_n() {
        let own = |tid: u32| ThreadShare {
            own: true,
            ..share(tid)
        };
        let mut busy: Vec<(u64, ThreadShare)> = vec![
            (90, share(10)),
            (3, own(1)),
            (80, share(11)),
            (2, own(2)),
            (70, share(12)),
            (1, own(3)),
            (50, own(4)),
        ];
        let got: Vec<u32> = select(&mut busy, 2).iter().map(|t| t.tid).collect();
        // 12 (another program's) is below the cut; 4 and 1 are rtscope's, 2 and 3 past n.
        assert_eq!(got, [10, 11, 4, 1]);
    }
}
