//! The messaging load, like hackbench: `groups` groups of `fds` senders and `fds` receivers.
//! Each receiver has one channel (a `socketpair(AF_UNIX, SOCK_STREAM)` or a pipe); every sender
//! of a group writes `size`-byte messages to every receiver of its group, round after round,
//! and each receiver reads whatever arrives.
//!
//! Tasks are threads of the worker, or processes forked by it (`mode = processes`, hackbench's
//! default). Process mode forks before the worker starts any thread; the children share their
//! counters with the worker through an anonymous shared mapping, die with the worker
//! (`PR_SET_PDEATHSIG`), stay in its process group, and are killed and reaped by
//! [`Running::finish`].
//!
//! Reports `messages` (messages written), `bytes` (bytes read by the receivers) and
//! `message_rate` (messages/s).

use super::{rate, Outcome, Running, Stop};
use crate::sys::{self, Ended, Forked, SharedCounters, SigSet, STOP_SIGNALS};
use crate::{LoadError, LoadSpec, Metric, MsgMode, MsgTransport};
use std::fs::File;
use std::io::{Read, Write};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

/// One group: the receivers' read ends, and the write ends every sender of the group uses.
struct Group {
    readers: Vec<File>,
    writers: Arc<Vec<File>>,
}

/// Starts the load described by `spec` (a [`LoadSpec::Messaging`]).
pub fn start(spec: &LoadSpec, stop: &Stop) -> Result<Box<dyn Running>, LoadError> {
    let LoadSpec::Messaging {
        groups,
        fds,
        size,
        transport,
        mode,
    } = *spec
    else {
        unreachable!("messaging::start is called with a messaging spec");
    };
    let mut plan = Vec::with_capacity(groups as usize);
    for _ in 0..groups {
        plan.push(group(transport, fds)?);
    }
    let per_kind = (groups * fds) as usize;
    let counters = Arc::new(SharedCounters::new(2 * per_kind)?);
    let tasks = match mode {
        MsgMode::Threads => spawn_threads(plan, size as usize, &counters, stop)?,
        MsgMode::Processes => fork_processes(plan, size as usize, &counters)?,
    };
    Ok(Box::new(Messaging {
        tasks,
        counters,
        senders: per_kind,
        started: Instant::now(),
    }))
}

fn group(transport: MsgTransport, fds: u32) -> Result<Group, LoadError> {
    let (mut readers, mut writers) = (Vec::new(), Vec::new());
    for _ in 0..fds {
        let (r, w) = match transport {
            MsgTransport::Pipe => sys::pipe()?,
            MsgTransport::Socket => {
                let (a, b) = std::os::unix::net::UnixStream::pair()
                    .map_err(|e| LoadError::io("socketpair(AF_UNIX, SOCK_STREAM)", e))?;
                (a.into(), b.into())
            }
        };
        readers.push(File::from(r));
        writers.push(File::from(w));
    }
    Ok(Group {
        readers,
        writers: Arc::new(writers),
    })
}

/// Writes `msg` to every receiver, round after round, until `stop`; counts into `sent`.
fn send_loop(writers: &[File], msg: &[u8], sent: &std::sync::atomic::AtomicU64, stop: &Stop) {
    while !stop.is_set() {
        for mut w in writers {
            if w.write_all(msg).is_err() {
                return;
            }
            sent.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    }
}

/// Reads until end of file, one message-sized `read` at a time (as hackbench does, so each
/// message costs the receiver a system call and, often, a wake-up); counts bytes into `got`.
fn receive_loop(mut r: &File, size: usize, got: &std::sync::atomic::AtomicU64) {
    let mut buf = vec![0u8; size];
    while let Ok(n @ 1..) = r.read(&mut buf) {
        got.fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
    }
}

enum Tasks {
    Threads {
        senders: Vec<JoinHandle<()>>,
        receivers: Vec<JoinHandle<()>>,
        writers: Vec<Arc<Vec<File>>>,
    },
    Processes(Vec<libc::pid_t>),
}

fn spawn_threads(
    plan: Vec<Group>,
    size: usize,
    counters: &Arc<SharedCounters>,
    stop: &Stop,
) -> Result<Tasks, LoadError> {
    let (mut senders, mut receivers, mut writers) = (Vec::new(), Vec::new(), Vec::new());
    let fds = plan.first().map_or(0, |g| g.readers.len());
    let rx_base = fds * plan.len();
    let spawn = |name: String, f: Box<dyn FnOnce() + Send>| {
        std::thread::Builder::new()
            .name(name)
            .spawn(f)
            .map_err(|e| LoadError::io("start a messaging thread", e))
    };
    for (g, group) in plan.into_iter().enumerate() {
        for (i, r) in group.readers.into_iter().enumerate() {
            let c = Arc::clone(counters);
            let slot = rx_base + g * fds + i;
            receivers.push(spawn(
                format!("msg-rx-{g}-{i}"),
                Box::new(move || receive_loop(&r, size, c.get(slot))),
            )?);
        }
        for i in 0..fds {
            let (c, w, stop) = (
                Arc::clone(counters),
                Arc::clone(&group.writers),
                stop.clone(),
            );
            let msg = vec![0x42u8; size];
            let slot = g * fds + i;
            senders.push(spawn(
                format!("msg-tx-{g}-{i}"),
                Box::new(move || send_loop(&w, &msg, c.get(slot), &stop)),
            )?);
        }
        writers.push(group.writers);
    }
    Ok(Tasks::Threads {
        senders,
        receivers,
        writers,
    })
}

/// Forks one process per task. Must run while the worker has a single thread.
fn fork_processes(
    plan: Vec<Group>,
    size: usize,
    counters: &SharedCounters,
) -> Result<Tasks, LoadError> {
    let fds = plan.first().map_or(0, |g| g.readers.len());
    let worker = sys::getpid();
    let never = Stop::new();
    let msg = vec![0x42u8; size];
    let mut pids = Vec::new();
    for (g, group) in plan.iter().enumerate() {
        for i in 0..2 * fds {
            match sys::fork() {
                Err(e) => {
                    kill_and_reap(&pids);
                    return Err(e);
                }
                Ok(Forked::Parent(pid)) => pids.push(pid),
                Ok(Forked::Child) => {
                    SigSet::of(&STOP_SIGNALS).unblock();
                    if sys::child_bind_to_parent(worker, false).is_err() {
                        sys::exit_now(126);
                    }
                    sys::set_name(if i < fds {
                        c"load-msg-send"
                    } else {
                        c"load-msg-recv"
                    });
                    // Never unwind out of the child into the worker's code.
                    let task = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        if i < fds {
                            send_loop(&group.writers, &msg, counters.get(g * fds + i), &never);
                        } else {
                            let slot = fds * plan.len() + g * fds + (i - fds);
                            receive_loop(&group.readers[i - fds], size, counters.get(slot));
                        }
                    }));
                    sys::exit_now(if task.is_ok() { 1 } else { 101 }); // loops end on errors only
                }
            }
        }
    }
    Ok(Tasks::Processes(pids))
}

/// SIGKILLs and reaps `pids`; returns the first that had ended on its own (not by a signal
/// that stops loads), if any.
fn kill_and_reap(pids: &[libc::pid_t]) -> Option<(libc::pid_t, Ended)> {
    let stopped = |e: &Ended| matches!(e, Ended::Signaled(s) if STOP_SIGNALS.contains(s));
    let early = pids
        .iter()
        .find_map(|&p| sys::reap(p).filter(|(_, e)| !stopped(e)));
    for &p in pids {
        sys::kill(p, libc::SIGKILL);
    }
    for &p in pids {
        sys::reap_blocking(p);
    }
    early
}

struct Messaging {
    tasks: Tasks,
    counters: Arc<SharedCounters>,
    senders: usize,
    started: Instant,
}

impl Running for Messaging {
    fn finish(self: Box<Self>) -> Outcome {
        let mut error = None;
        match self.tasks {
            Tasks::Threads {
                senders,
                receivers,
                writers,
            } => {
                senders.into_iter().for_each(|h| drop(h.join()));
                drop(writers); // the last write ends: receivers read end of file
                receivers.into_iter().for_each(|h| drop(h.join()));
            }
            Tasks::Processes(pids) => {
                if let Some((pid, ended)) = kill_and_reap(&pids) {
                    error = Some(LoadError::Os {
                        what: format!("messaging task {pid} ended early ({ended})"),
                        source: std::io::Error::other("task ended before the load was stopped"),
                    });
                }
            }
        }
        let took = self.started.elapsed();
        let messages: u64 = (0..self.senders)
            .map(|i| self.counters.get(i).load(ORD))
            .sum();
        let bytes = self.counters.sum() - messages;
        Outcome {
            metrics: vec![
                Metric::new("messages", messages as f64, "messages"),
                Metric::new("bytes", bytes as f64, "bytes"),
                Metric::new("message_rate", rate(messages as f64, took), "messages/s"),
            ],
            error,
        }
    }
}

const ORD: std::sync::atomic::Ordering = std::sync::atomic::Ordering::Relaxed;

#[cfg(test)]
mod tests {
    use super::*;

    fn run(transport: MsgTransport) -> Vec<Metric> {
        let spec = LoadSpec::Messaging {
            groups: 2,
            fds: 3,
            size: 100,
            transport,
            mode: MsgMode::Threads,
        };
        let stop = Stop::new();
        let load = start(&spec, &stop).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(200));
        stop.set();
        let out = load.finish();
        assert!(out.error.is_none(), "{:?}", out.error);
        out.metrics
    }

    #[test]
    fn threads_over_sockets_deliver_every_message() {
        let m = run(MsgTransport::Socket);
        assert!(m[0].value > 0.0);
        assert_eq!(m[1].value, m[0].value * 100.0, "all sent bytes were read");
    }

    #[test]
    fn threads_over_pipes_deliver_every_message() {
        let m = run(MsgTransport::Pipe);
        assert!(m[0].value > 0.0);
        assert_eq!(m[1].value, m[0].value * 100.0);
    }
}
