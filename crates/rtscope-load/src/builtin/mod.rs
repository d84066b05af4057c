//! The built-in loads: one file per kind, each started by [`start`] and ended by
//! [`Running::finish`] once the shared [`Stop`] flag is set.
//!
//! A load runs until its [`Stop`] is set, by the worker (on SIGTERM, SIGINT or `--for`) or by
//! one of its own threads that hit an error it cannot go on after (a full disk, say). It then
//! joins its threads (or reaps its processes) and returns what it counted.

pub mod cpu;
pub mod io;
pub mod memory;
pub mod messaging;
pub mod network;

use crate::{LoadError, LoadSpec, Metric};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The flag that tells a load to stop; cheap to clone and to check.
#[derive(Clone, Debug, Default)]
pub struct Stop(Arc<AtomicBool>);

impl Stop {
    /// A flag not yet set.
    pub fn new() -> Stop {
        Stop::default()
    }
    /// Sets it.
    pub fn set(&self) {
        self.0.store(true, Ordering::Relaxed);
    }
    /// Whether it is set.
    pub fn is_set(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// What a finished built-in load counted, and the error that made it fail, if any.
#[derive(Debug)]
pub struct Outcome {
    /// The counts (see each load's module for names and units).
    pub metrics: Vec<Metric>,
    /// Why the load failed (an I/O error, miscompares), if it did.
    pub error: Option<LoadError>,
}

/// A started built-in load.
pub trait Running {
    /// Waits for the load to wind down (its [`Stop`] must be set first) and returns its counts.
    fn finish(self: Box<Self>) -> Outcome;
}

/// Starts the built-in load `spec` (not [`LoadSpec::External`]). Messaging in process mode
/// forks, so call this while the process has a single thread.
pub fn start(spec: &LoadSpec, stop: &Stop) -> Result<Box<dyn Running>, LoadError> {
    spec.check()?;
    match spec {
        LoadSpec::Messaging { .. } => messaging::start(spec, stop),
        LoadSpec::Memory { threads, megabytes } => memory::start(*threads, *megabytes, stop),
        LoadSpec::Cpu { threads } => cpu::start(*threads, stop),
        LoadSpec::Io {
            threads,
            dir,
            file_mb,
        } => io::start(*threads, dir.as_deref(), *file_mb, stop),
        LoadSpec::Network { threads, size } => network::start(*threads, *size, stop),
        LoadSpec::External { .. } => Err(LoadError::BadSpec {
            kind: "external",
            field: "kind",
            value: "external".into(),
            expected: "external programs are started by the supervisor, not as built-in loads"
                .into(),
        }),
    }
}

/// Threads running one body each, joined together.
pub(crate) struct Workers<T> {
    handles: Vec<JoinHandle<Result<T, LoadError>>>,
    started: Instant,
}

impl<T: Send + 'static> Workers<T> {
    /// Starts `n` threads named `name-<i>` running `body(i, stop)`. A body returning an error
    /// sets `stop`, so the whole load (and the worker) ends early.
    pub(crate) fn spawn<F>(n: u32, name: &str, stop: &Stop, body: F) -> Result<Self, LoadError>
    where
        F: Fn(usize, &Stop) -> Result<T, LoadError> + Send + Sync + 'static,
    {
        let body = Arc::new(body);
        let mut handles = Vec::with_capacity(n as usize);
        for i in 0..n as usize {
            let (body, own_stop) = (Arc::clone(&body), stop.clone());
            let h = std::thread::Builder::new()
                .name(format!("{name}-{i}"))
                .spawn(move || {
                    let r = body(i, &own_stop);
                    if r.is_err() {
                        own_stop.set();
                    }
                    r
                });
            match h {
                Ok(h) => handles.push(h),
                Err(e) => {
                    stop.set();
                    let _ = Workers {
                        handles,
                        started: Instant::now(),
                    }
                    .join();
                    return Err(LoadError::io(format!("start thread {name}-{i}"), e));
                }
            }
        }
        Ok(Workers {
            handles,
            started: Instant::now(),
        })
    }

    /// Joins all threads: their results, the first error, and the time since they started.
    pub(crate) fn join(self) -> (Vec<T>, Option<LoadError>, Duration) {
        let mut out = Vec::new();
        let mut first_err = None;
        for h in self.handles {
            let name = h.thread().name().unwrap_or("load").to_string();
            match h.join() {
                Ok(Ok(v)) => out.push(v),
                Ok(Err(e)) => {
                    first_err.get_or_insert(e);
                }
                Err(_) => {
                    first_err.get_or_insert(LoadError::Panicked(name.clone()));
                }
            }
        }
        (out, first_err, self.started.elapsed())
    }
}

/// `count / seconds`, 0 for an empty interval.
pub(crate) fn rate(count: f64, took: Duration) -> f64 {
    let s = took.as_secs_f64();
    if s > 0.0 {
        count / s
    } else {
        0.0
    }
}
