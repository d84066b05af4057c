//! The shepherd: `rtscope __shepherd '<plan JSON>'`, the parent of every load of one run.
//!
//! rtscope starts it with a pipe on its stdin and keeps the write end; the shepherd
//!
//! 1. blocks SIGINT, SIGTERM and SIGHUP (it handles them as "stop"), makes itself a child
//!    subreaper (`PR_SET_CHILD_SUBREAPER`), so any orphaned descendant of a load (hackbench
//!    forks its tasks; `sh -c 'sleep 100 &'` leaves one behind) is re-parented to it, and
//!    creates a cgroup v2 `rtscope-<pid>` when the cgroup2 mount is writable;
//! 2. starts each load — a built-in as `rtscope __load '<spec>'`, an external program
//!    directly — with stdin from /dev/null and stdout/stderr captured. Between fork and exec
//!    (async-signal-safe calls only) the child joins the cgroup, sets
//!    `PR_SET_PDEATHSIG(SIGKILL)`, checks that its parent is still the shepherd (else exits:
//!    the death signal would never come), and makes its own process group;
//! 3. prints one JSON line `{"event":"started","pids":[…]}` and then watches its stdin: the line
//!    `stop <grace ms>` or end of file (rtscope died, whatever killed it, SIGKILL included)
//!    or a stop signal starts the shutdown. Meanwhile it reaps whatever ends and reports a
//!    load that ended early with `{"event":"exited",…}`;
//! 4. shutdown: SIGTERM to each load's process group, to each process in the cgroup and to
//!    each child it has; waits up to the grace period for the loads, counted from the last
//!    of their processes that ended (at most three times the grace in all: [`StopWork`]); then SIGKILL to the
//!    process groups, `cgroup.kill`, and every remaining child, again and again, reaping until
//!    it has no child left; removes the cgroup; prints `{"event":"reports",…}` and exits.
//!
//! If the shepherd itself is SIGKILLed, the loads get their death signal. What can escape: a
//! process that left both the process group and the cgroup (or with no cgroup available, one
//! that left the process group and whose parent is alive outside the shepherd's subtree),
//! which only a deliberate daemon does.

use crate::cgroup::{self, Cgroup};
use crate::external::{find_program, hackbench_times};
use crate::sys::{self, Ended, SigSet, STOP_SIGNALS};
use crate::{LoadError, LoadReport, LoadSpec, Metric};
use rtscope_core::LoadStatus;
use serde::{Deserialize, Serialize};
use std::io::{BufRead, Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

/// Grace period for a shutdown that rtscope did not ask for (end of file, a signal).
pub const DEFAULT_GRACE: Duration = Duration::from_millis(1000);
/// How often the shepherd looks around.
const TICK: Duration = Duration::from_millis(20);
/// Bytes of each output stream kept.
const KEEP: usize = 64 << 10;
/// Bytes of output put into a report's `output_tail`.
const TAIL: usize = 2 << 10;

/// One line the shepherd prints on its stdout.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "lowercase")]
pub(crate) enum Event {
    /// All loads were started: their pids, in spec order.
    Started {
        pids: Vec<u32>,
        cgroup: Option<PathBuf>,
    },
    /// Load `index` ended before it was told to stop.
    Exited {
        index: usize,
        pid: u32,
        status: String,
    },
    /// The final reports, in spec order.
    Reports { reports: Vec<LoadReport> },
    /// Starting failed.
    Error { message: String },
}

/// What the shepherd is started with (its one argument, as JSON).
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Plan {
    pub specs: Vec<LoadSpec>,
    pub exe: PathBuf,
}

/// Output of one stream: the last [`KEEP`] bytes and the total.
#[derive(Default)]
struct Captured {
    tail: Vec<u8>,
    total: u64,
}

/// One started load.
struct Load {
    spec: LoadSpec,
    argv: Vec<String>,
    pid: i32,
    started: Instant,
    ended: Option<(Ended, Instant)>,
    early: bool,
    killed: bool,
    stdout: Receiver<Captured>,
    stderr: Receiver<Captured>,
}

/// Runs the shepherd. `args` are the arguments after `__shepherd`: the plan as JSON.
/// Returns the exit code: 0, or 2 when the plan is bad or a load could not be started.
pub fn shepherd_main(args: &[String]) -> i32 {
    let signals = SigSet::of(&STOP_SIGNALS);
    signals.block();
    crate::sys::set_name(c"rtscope-loads");
    let plan: Plan = match args.first().map(|a| serde_json::from_str(a)) {
        Some(Ok(p)) => p,
        _ => {
            {
                use std::io::Write as _;
                let _ = writeln!(
                    std::io::stderr(),
                    "error: __shepherd needs a plan (JSON); it is started by rtscope only"
                );
            };
            return 2;
        }
    };
    let me = sys::getpid();
    if let Err(e) = sys::set_child_subreaper() {
        {
            use std::io::Write as _;
            let _ = writeln!(
                std::io::stderr(),
                "warning: {e}; orphaned load processes are then found by process group only"
            );
        };
    }
    let cgroup = Cgroup::create(me);
    let mut loads = Vec::new();
    for spec in &plan.specs {
        match spawn(spec, &plan.exe, me, cgroup.as_ref()) {
            Ok(l) => loads.push(l),
            Err(e) => {
                emit(&Event::Error {
                    message: e.to_string(),
                });
                shutdown(&mut loads, Duration::ZERO, cgroup, me, &signals);
                return 2;
            }
        }
    }
    emit(&Event::Started {
        pids: loads.iter().map(|l| l.pid as u32).collect(),
        cgroup: cgroup.as_ref().map(|c| c.path().to_path_buf()),
    });
    let grace = watch(&signals, &mut loads);
    shutdown(&mut loads, grace, cgroup, me, &signals);
    let reports = loads.into_iter().map(report).collect();
    emit(&Event::Reports { reports });
    0
}

fn emit(e: &Event) {
    let line = serde_json::to_string(e).unwrap_or_default();
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}").and_then(|_| out.flush());
}

fn spawn(spec: &LoadSpec, exe: &Path, me: i32, cg: Option<&Cgroup>) -> Result<Load, LoadError> {
    let (program, args) = match spec {
        LoadSpec::External { program, args } => (find_program(program)?, args.clone()),
        builtin => {
            let json = serde_json::to_string(builtin).unwrap_or_default();
            (exe.to_path_buf(), vec!["__load".to_string(), json])
        }
    };
    let mut cmd = Command::new(&program);
    cmd.args(&args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let cg_fd = cg.map(Cgroup::procs_fd);
    let stop = SigSet::of(&STOP_SIGNALS);
    // A built-in load's worker gets the stop signals blocked through the exec: a stop that
    // comes before its own `block` (a Ctrl-C right after the start, on a busy machine) waits
    // for it and gets its report, instead of killing it without one. Another program starts
    // with them unblocked, as programs expect.
    let builtin = !matches!(spec, LoadSpec::External { .. });
    // SAFETY: the closure runs between fork and exec and only makes async-signal-safe calls
    // (sigprocmask, write, prctl, getppid, setpgid, _exit); it allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            if builtin {
                stop.block_in_child();
            } else {
                stop.unblock();
            }
            if let Some(fd) = cg_fd {
                cgroup::join_self(fd);
            }
            sys::child_bind_to_parent(me, true)
        });
    }
    let mut child = cmd.spawn().map_err(|e| LoadError::Path {
        what: "cannot start load program",
        path: program.clone(),
        source: e,
    })?;
    let pid = child.id() as i32;
    sys::set_group(pid); // also from this side, so a kill right now reaches the group
    let mut argv = vec![program.display().to_string()];
    argv.extend(args);
    Ok(Load {
        spec: spec.clone(),
        argv,
        pid,
        started: Instant::now(),
        ended: None,
        early: false,
        killed: false,
        stdout: capture(child.stdout.take()),
        stderr: capture(child.stderr.take()),
    })
    // `child` is dropped without waiting: the shepherd reaps every child itself.
}

fn capture<R: Read + Send + 'static>(stream: Option<R>) -> Receiver<Captured> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut c = Captured::default();
        let mut buf = [0u8; 8192];
        if let Some(mut s) = stream {
            while let Ok(n @ 1..) = s.read(&mut buf) {
                c.total += n as u64;
                c.tail.extend_from_slice(&buf[..n]);
                if c.tail.len() > 2 * KEEP {
                    c.tail.drain(..c.tail.len() - KEEP);
                }
            }
        }
        let _ = tx.send(c);
    });
    rx
}

/// Watches stdin, signals and the loads until it is time to stop; returns the grace period.
fn watch(signals: &SigSet, loads: &mut [Load]) -> Duration {
    let stdin = std::io::stdin();
    loop {
        if sys::readable(0, TICK) {
            let mut line = String::new();
            match stdin.lock().read_line(&mut line) {
                Ok(0) | Err(_) => return DEFAULT_GRACE,
                Ok(_) => {
                    if let Some(ms) = line.trim().strip_prefix("stop ") {
                        return Duration::from_millis(ms.parse().unwrap_or(1000));
                    }
                }
            }
        }
        if signals.wait(Duration::ZERO).is_some() {
            return DEFAULT_GRACE;
        }
        reap(loads, true);
    }
}

/// Reaps every ended child; records loads that ended (and reports them when `running`).
fn reap(loads: &mut [Load], running: bool) {
    while let Some((pid, ended)) = sys::reap(-1) {
        let Some((index, l)) = loads.iter_mut().enumerate().find(|(_, l)| l.pid == pid) else {
            continue; // an orphaned descendant of a load
        };
        l.ended = Some((ended, Instant::now()));
        if running {
            l.early = true;
            emit(&Event::Exited {
                index,
                pid: pid as u32,
                status: ended.to_string(),
            });
        }
    }
}

/// SIGTERM, grace, SIGKILL, reap everything, remove the cgroup. A stop signal during the grace
/// period (a second Ctrl-C, or rtscope in a hurry) cuts it short.
fn shutdown(
    loads: &mut [Load],
    grace: Duration,
    cgroup: Option<Cgroup>,
    me: i32,
    signals: &SigSet,
) {
    reap(loads, true);
    let signal_all = |loads: &[Load], sig| {
        for l in loads {
            sys::kill(-l.pid, sig);
            sys::kill(l.pid, sig);
        }
        let in_cgroup = cgroup.as_ref().map(Cgroup::pids).unwrap_or_default();
        for pid in in_cgroup.into_iter().chain(sys::children_of(me)) {
            sys::kill(pid, sig);
        }
    };
    signal_all(loads, libc::SIGTERM);
    let mut grace = StopWork::new(grace, members(loads, cgroup.as_ref()));
    while loads.iter().any(|l| l.ended.is_none()) && !grace.over() {
        if signals.wait(Duration::from_millis(5)).is_some() {
            break;
        }
        reap(loads, false);
        grace.progress(members(loads, cgroup.as_ref()));
    }
    loads
        .iter_mut()
        .filter(|l| l.ended.is_none())
        .for_each(|l| l.killed = true);
    let until = Instant::now() + Duration::from_secs(3);
    loop {
        signal_all(loads, libc::SIGKILL);
        if let Some(c) = &cgroup {
            c.kill_all();
        }
        reap(loads, false);
        let empty = cgroup.as_ref().is_none_or(Cgroup::is_empty);
        if (!sys::has_children() && empty) || Instant::now() >= until {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    if let Some(c) = cgroup {
        c.remove(Duration::from_millis(500));
    }
}

/// How many times the grace period a shutdown may take in all while the loads keep ending
/// processes ([`StopWork`]).
pub const GRACE_STRETCH: u32 = 3;

/// The grace period counted from the loads' last sign of stopping: the deadline is the grace
/// after the SIGTERM, and again the grace after each process of theirs that ends (a messaging
/// load's 400 tasks take their time to exit on a busy machine, and its worker reports once
/// they are gone), never more than [`GRACE_STRETCH`] times the grace in all. A load that
/// ignores SIGTERM makes no progress: it is SIGKILLed when the grace runs out, as before.
struct StopWork {
    grace: Duration,
    until: Instant,
    cap: Instant,
    left: usize,
}

impl StopWork {
    fn new(grace: Duration, left: usize) -> StopWork {
        StopWork::new_at(grace, left, Instant::now())
    }

    fn new_at(grace: Duration, left: usize, now: Instant) -> StopWork {
        StopWork {
            grace,
            until: now + grace,
            cap: now + grace * GRACE_STRETCH,
            left,
        }
    }

    /// The loads have `left` processes now: fewer than before is progress.
    fn progress(&mut self, left: usize) {
        self.progress_at(left, Instant::now());
    }

    fn progress_at(&mut self, left: usize, now: Instant) {
        if left < self.left {
            self.until = self.until.max((now + self.grace).min(self.cap));
        }
        self.left = left;
    }

    fn over(&self) -> bool {
        self.over_at(Instant::now())
    }

    fn over_at(&self, now: Instant) -> bool {
        now >= self.until
    }
}

/// The processes of the loads still running: those in the cgroup, else those in the process
/// groups of the loads not reaped yet (a worker's forked tasks stay in its group).
fn members(loads: &[Load], cgroup: Option<&Cgroup>) -> usize {
    if let Some(c) = cgroup {
        return c.pids().len();
    }
    let groups: Vec<i32> = loads
        .iter()
        .filter(|l| l.ended.is_none())
        .map(|l| l.pid)
        .collect();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return groups.len();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| sys::group_of(pid).is_some_and(|g| groups.contains(&g)))
        .count()
}

fn text(c: &Captured, max: usize) -> String {
    let s = String::from_utf8_lossy(&c.tail);
    let mut start = s.len().saturating_sub(max);
    while !s.is_char_boundary(start) {
        start += 1;
    }
    s[start..].to_string()
}

/// How long the report waits for a load's output after the load ended: its readers hand it
/// over at the pipes' end, which a process the load left behind can hold open. Beside
/// `stress-ng --cpu 4 --io 2 --vm 1` and QEMU guests 500 ms was too short: a messaging worker
/// that exited 0 was recorded as failed, "ended (exit status 0) without a report", and its
/// campaign with it (29 Nov 2026).
const OUTPUT_WAIT: Duration = Duration::from_secs(5);

/// The report of a load after shutdown.
fn report(l: Load) -> LoadReport {
    let wait = OUTPUT_WAIT;
    let out = l.stdout.recv_timeout(wait).unwrap_or_default();
    let err = l.stderr.recv_timeout(wait).unwrap_or_default();
    let ended_at = l.ended.map_or_else(Instant::now, |(_, t)| t);
    let ran_ns = ended_at.duration_since(l.started).as_nanos() as u64;
    let ended = l.ended.map_or(Ended::Signaled(libc::SIGKILL), |(e, _)| e);
    if matches!(l.spec, LoadSpec::External { .. }) {
        return external_report(l, ran_ns, ended, &out, &err);
    }
    let stdout = String::from_utf8_lossy(&out.tail).into_owned();
    let parsed = stdout
        .lines()
        .rev()
        .find_map(|line| serde_json::from_str::<LoadReport>(line).ok());
    let stderr = (err.total > 0).then(|| text(&err, TAIL));
    match parsed {
        Some(mut r) => {
            if l.killed {
                r.status = LoadStatus::Killed;
            }
            r.output_tail = stderr;
            r
        }
        None => LoadReport {
            name: l.spec.name(),
            spec: l.spec,
            command_line: l.argv,
            ran_ns,
            status: if l.killed {
                LoadStatus::Killed
            } else {
                LoadStatus::Failed
            },
            error: Some(format!("the load worker ended ({ended}) without a report")),
            metrics: Vec::new(),
            output_tail: stderr,
        },
    }
}

fn external_report(
    l: Load,
    ran_ns: u64,
    ended: Ended,
    out: &Captured,
    err: &Captured,
) -> LoadReport {
    let mut metrics = vec![Metric::new("runtime", ran_ns as f64 / 1e9, "s")];
    match ended {
        Ended::Exited(c) => metrics.push(Metric::new("exit_code", c as f64, "code")),
        Ended::Signaled(s) => metrics.push(Metric::new("signal", s as f64, "signal")),
    }
    metrics.push(Metric::new("stdout_bytes", out.total as f64, "bytes"));
    metrics.push(Metric::new("stderr_bytes", err.total as f64, "bytes"));
    let times = hackbench_times(&String::from_utf8_lossy(&out.tail));
    if !times.is_empty() {
        metrics.push(Metric::new("hackbench_runs", times.len() as f64, "runs"));
        let mean = times.iter().sum::<f64>() / times.len() as f64;
        metrics.push(Metric::new("hackbench_time", mean, "s"));
    }
    let (status, error) = external_status(l.killed, l.early, ended);
    let mut tail = text(out, TAIL);
    if err.total > 0 {
        tail.push_str(&text(err, TAIL));
    }
    LoadReport {
        name: l.spec.name(),
        spec: l.spec,
        command_line: l.argv,
        ran_ns,
        status,
        error,
        metrics,
        output_tail: (!tail.is_empty()).then_some(tail),
    }
}

/// The status (and error) of an external load: whether it had to be SIGKILLed, whether it
/// ended before it was told to stop, and how it ended.
fn external_status(killed: bool, early: bool, ended: Ended) -> (LoadStatus, Option<String>) {
    if killed {
        let e = "did not end within the grace period after SIGTERM";
        (LoadStatus::Killed, Some(e.to_string()))
    } else if early && ended == Ended::Exited(0) {
        (LoadStatus::Finished, None)
    } else if early {
        (
            LoadStatus::Failed,
            Some(format!("ended before the run did ({ended})")),
        )
    } else {
        (LoadStatus::Ok, None)
    }
}

#[cfg(test)]
mod tests {

    /// Issue 67 item 12: the grace counts from the loads' last process that ended (a
    /// messaging load's tasks exiting one by one), within three times the grace; a load that
    /// ends nothing (ignores SIGTERM) gets the plain grace. Instants are made up, not measured.
    #[test]
    fn the_grace_counts_from_the_last_process_that_ended_within_a_bound() {
        let t0 = Instant::now();
        let s = |n: u64| t0 + Duration::from_secs(n);
        let grace = Duration::from_secs(2);
        let mut stuck = StopWork::new_at(grace, 401, t0);
        stuck.progress_at(401, s(1));
        assert!(!stuck.over_at(s(1)) && stuck.over_at(s(2)));
        let mut w = StopWork::new_at(grace, 401, t0);
        w.progress_at(300, s(1));
        assert!(
            !w.over_at(s(2)) && w.over_at(s(3)),
            "2 s after the last progress"
        );
        w.progress_at(300, s(2));
        w.progress_at(1, s(5));
        assert!(
            !w.over_at(s(5)) && w.over_at(s(6)),
            "never past 3 × the grace"
        );
    }

    use super::*;

    #[test]
    fn external_statuses_follow_how_and_when_the_program_ended() {
        let term = Ended::Signaled(libc::SIGTERM);
        assert_eq!(external_status(false, false, term), (LoadStatus::Ok, None));
        assert_eq!(
            external_status(false, true, Ended::Exited(0)),
            (LoadStatus::Finished, None)
        );
        let (s, e) = external_status(false, true, Ended::Exited(3));
        assert_eq!(
            (s, e.unwrap()),
            (
                LoadStatus::Failed,
                "ended before the run did (exit status 3)".into()
            )
        );
        assert_eq!(
            external_status(true, false, Ended::Signaled(9)).0,
            LoadStatus::Killed
        );
    }

    #[test]
    fn events_are_one_json_object_with_an_event_tag() {
        let line = serde_json::to_string(&Event::Exited {
            index: 1,
            pid: 42,
            status: "exit status 1".into(),
        })
        .unwrap();
        assert_eq!(
            line,
            r#"{"event":"exited","index":1,"pid":42,"status":"exit status 1"}"#
        );
        assert!(matches!(
            serde_json::from_str::<Event>(&line).unwrap(),
            Event::Exited {
                index: 1,
                pid: 42,
                ..
            }
        ));
    }

    #[test]
    fn tails_keep_the_end_on_a_character_boundary() {
        let c = Captured {
            tail: "aé€z".as_bytes().to_vec(),
            total: 7,
        };
        assert_eq!(text(&c, 4), "€z");
        assert_eq!(text(&c, 100), "aé€z");
    }
}
