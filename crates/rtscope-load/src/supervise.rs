//! Starting and stopping the loads of a run: [`start`] and [`RunningLoads`].
//!
//! rtscope never starts a load itself. It starts one shepherd process (the rtscope executable
//! with the hidden argument `__shepherd`, see [`crate::shepherd`]) with a pipe on its stdin,
//! and the shepherd starts, watches, stops and reaps the loads. Because the shepherd reacts to
//! end of file on that pipe, the loads are stopped however rtscope ends: a normal end, an
//! error, SIGINT/SIGTERM, a panic (`panic = "abort"` included) or SIGKILL. [`RunningLoads`]
//! stops them explicitly in [`RunningLoads::stop`] and, when dropped without that, closes the
//! pipe and waits for the shepherd.

use crate::shepherd::{Event, Plan, DEFAULT_GRACE, GRACE_STRETCH};
use crate::{validate, LoadError, LoadReport, LoadSpec, Metric};
use rtscope_core::LoadStatus;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

/// How long [`start`] waits for the shepherd to say that all loads run: a hang's bound, not a
/// speed's. 10 s was too short for an emulated arm64 board starved by a loaded host (the
/// rt-arm64 guest beside `stress-ng --cpu 4 --io 2 --vm 1`: "no answer from the shepherd",
/// its campaign refused, 30 Nov 2026).
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// A load that ended before it was told to stop.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EarlyExit {
    /// Its position in the specs given to [`start`].
    pub index: usize,
    /// Its name ([`LoadSpec::name`]).
    pub name: String,
    /// Its process id.
    pub pid: u32,
    /// How it ended, e.g. `exit status 1` or `killed by signal 9`.
    pub status: String,
}

/// The loads of one run, running under their shepherd.
#[derive(Debug)]
pub struct RunningLoads {
    shepherd: Child,
    control: Option<ChildStdin>,
    events: Receiver<Event>,
    specs: Vec<LoadSpec>,
    pids: Vec<u32>,
    started: Instant,
    /// How long each load took to start working, where waited for.
    start_waits: Vec<Option<Duration>>,
}

/// Validates `specs` (see [`validate`]) and starts them under a shepherd, `exe` being the
/// rtscope executable (it must dispatch `__shepherd` and `__load`). Returns once every load
/// has been started.
pub fn start(specs: &[LoadSpec], exe: &Path) -> Result<RunningLoads, LoadError> {
    for spec in specs {
        validate(spec)?;
    }
    let plan = Plan {
        specs: specs.to_vec(),
        exe: exe.to_path_buf(),
    };
    let mut cmd = Command::new(exe);
    cmd.arg("__shepherd")
        .arg(serde_json::to_string(&plan).unwrap_or_default())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    // SAFETY: setpgid is async-signal-safe and the closure allocates nothing. Its own process
    // group keeps a terminal's Ctrl-C away from the shepherd: rtscope decides what it means.
    unsafe {
        cmd.pre_exec(|| {
            libc::setpgid(0, 0);
            Ok(())
        });
    }
    let mut shepherd = cmd.spawn().map_err(|e| LoadError::Path {
        what: "cannot start the load shepherd",
        path: exe.to_path_buf(),
        source: e,
    })?;
    let events = read_events(shepherd.stdout.take());
    let mut running = RunningLoads {
        control: shepherd.stdin.take(),
        shepherd,
        events,
        specs: specs.to_vec(),
        pids: Vec::new(),
        started: Instant::now(),
        start_waits: vec![None; specs.len()],
    };
    match running.events.recv_timeout(START_TIMEOUT) {
        Ok(Event::Started { pids, .. }) => running.pids = pids,
        Ok(Event::Error { message }) => return Err(LoadError::Shepherd(message)),
        Ok(other) => return Err(LoadError::Shepherd(format!("unexpected {other:?}"))),
        Err(_) => return Err(LoadError::Shepherd("no answer from the shepherd".into())),
    }
    Ok(running)
}

fn read_events(stdout: Option<std::process::ChildStdout>) -> Receiver<Event> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let Some(out) = stdout else { return };
        for line in BufReader::new(out).lines() {
            let Ok(line) = line else { return };
            if let Ok(e) = serde_json::from_str::<Event>(&line) {
                if tx.send(e).is_err() {
                    return;
                }
            }
        }
    });
    rx
}

impl RunningLoads {
    /// The process ids of the loads, in spec order (each leads its own process group).
    pub fn pids(&self) -> &[u32] {
        &self.pids
    }

    /// The shepherd's process id (the parent of every load).
    pub fn shepherd_pid(&self) -> u32 {
        self.shepherd.id()
    }

    /// Loads that ended on their own since the last call (does not block).
    pub fn poll(&mut self) -> Vec<EarlyExit> {
        let mut out = Vec::new();
        while let Ok(e) = self.events.try_recv() {
            if let Event::Exited { index, pid, status } = e {
                let name = self
                    .specs
                    .get(index)
                    .map_or_else(String::new, LoadSpec::name);
                out.push(EarlyExit {
                    index,
                    name,
                    pid,
                    status,
                });
            }
        }
        out
    }

    /// The CPU time each load's processes have used so far (in spec order; `None` for a load
    /// with no process left): [`crate::working`].
    pub fn cpu_used(&self) -> Vec<Option<Duration>> {
        crate::working::group_cpu(Path::new("/proc"), &self.pids)
    }

    /// Records that load `index` took `wait` to start working: its report gets the metric
    /// `start_wait` (seconds).
    pub fn set_start_wait(&mut self, index: usize, wait: Duration) {
        if let Some(w) = self.start_waits.get_mut(index) {
            *w = Some(wait);
        }
    }

    /// Stops every load: SIGTERM, up to `grace` (milliseconds resolution) for them to end,
    /// then SIGKILL for the rest and all they started. Returns one report per spec, in order.
    pub fn stop(mut self, grace: Duration) -> Vec<LoadReport> {
        let mut reports = None;
        if let Some(mut c) = self.control.take() {
            let _ = writeln!(c, "stop {}", grace.as_millis()).and_then(|_| c.flush());
            // The shepherd's grace stretches while the loads stop (GRACE_STRETCH), then up
            // to 3 s of SIGKILLs.
            let until = Instant::now() + grace * GRACE_STRETCH + Duration::from_secs(5);
            while reports.is_none() {
                let left = until.saturating_duration_since(Instant::now());
                match self.events.recv_timeout(left) {
                    Ok(Event::Reports { reports: r }) => reports = Some(r),
                    Ok(_) => {}
                    Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => break,
                }
            }
        }
        self.reap_shepherd(Duration::from_secs(1));
        let mut reports = reports.unwrap_or_else(|| self.missing_reports());
        for (r, w) in reports.iter_mut().zip(&self.start_waits) {
            if let Some(w) = w {
                r.metrics.push(Metric {
                    name: "start_wait".into(),
                    value: w.as_secs_f64(),
                    unit: "s".into(),
                });
            }
        }
        reports
    }

    fn missing_reports(&self) -> Vec<LoadReport> {
        let ran_ns = self.started.elapsed().as_nanos() as u64;
        self.specs
            .iter()
            .map(|s| LoadReport {
                name: s.name(),
                spec: s.clone(),
                command_line: Vec::new(),
                ran_ns,
                status: LoadStatus::Failed,
                error: Some("the load shepherd gave no report".into()),
                metrics: Vec::new(),
                output_tail: None,
            })
            .collect()
    }

    /// Waits up to `wait` for the shepherd to exit, then kills it (its loads then die with
    /// their death signal).
    fn reap_shepherd(&mut self, wait: Duration) {
        let until = Instant::now() + wait;
        while Instant::now() < until {
            if matches!(self.shepherd.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let _ = self.shepherd.kill();
        let _ = self.shepherd.wait();
    }
}

impl Drop for RunningLoads {
    /// Closes the control pipe (the shepherd stops everything, as when rtscope dies) and waits
    /// for the shepherd to finish.
    fn drop(&mut self) {
        if self.control.take().is_some() {
            self.reap_shepherd(DEFAULT_GRACE * GRACE_STRETCH + Duration::from_secs(4));
        }
    }
}
