//! The flight recorder: a private instance, its reaper, and a housekeeping thread that drains
//! each traced CPU's `trace_pipe_raw` into a bounded window of decoded events.
//!
//! The thread is pinned to the CPUs that are not measured (when there are any) and runs at the
//! normal policy. It reads every `poll` interval; the kernel buffer (overwrite mode) only has to
//! hold the events of one interval. Events older than `window` behind the newest one of their
//! CPU are dropped, and each CPU keeps at most `max_events`.

use crate::analyze;
use crate::decode::{Event, Schema};
use crate::model::{Attribution, Spike};
use crate::page::parse_page;
use crate::reaper::Reaper;
use crate::tracefs::{Instance, InstanceConfig, Tracefs};
use crate::TraceError;
use std::collections::{HashMap, VecDeque};
use std::fs::File;
use std::io::{ErrorKind, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

/// Settings of the recorder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecorderConfig {
    /// The instance.
    pub instance: InstanceConfig,
    /// CPUs the reader thread may run on (the housekeeping CPUs); empty keeps its affinity.
    pub housekeeping: Vec<usize>,
    /// How often the reader drains the buffers.
    pub poll: Duration,
    /// How much history each CPU keeps (ns).
    pub window_ns: u64,
    /// Events kept per CPU at most.
    pub max_events: usize,
}

impl RecorderConfig {
    /// Defaults for tracing `cpus`: 2 MiB per CPU, 50 ms polls, 3 s of history.
    pub fn new(cpus: Vec<usize>) -> RecorderConfig {
        RecorderConfig {
            instance: InstanceConfig {
                cpus,
                buffer_kb: 2048,
                hrtimer_events: false,
                timerlat: false,
            },
            housekeeping: Vec::new(),
            poll: Duration::from_millis(50),
            window_ns: 3_000_000_000,
            max_events: 1 << 20,
        }
    }
}

/// Events of one CPU.
#[derive(Debug, Default)]
struct CpuEvents {
    events: VecDeque<Event>,
    /// Time of the newest event read.
    newest: u64,
    /// Times of pages that reported lost events.
    lost_at: VecDeque<u64>,
}

#[derive(Debug, Default)]
struct Shared {
    cpus: HashMap<usize, CpuEvents>,
    pages: u64,
    bad_pages: u64,
}

/// What [`FlightRecorder::attribute`] could do with a spike.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Attributed.
    Done(Attribution),
    /// The trace of that CPU has not reached the wake-up yet: ask again later.
    Pending,
    /// The trace does not cover the spike (not traced CPU, or already out of the window).
    NoContext,
}

/// The running flight recorder. Dropping it stops the reader, then removes the instance.
pub struct FlightRecorder {
    shared: Arc<Mutex<Shared>>,
    stop: Arc<AtomicBool>,
    reader: Option<JoinHandle<()>>,
    // Field order matters on drop: the reader closes its files before the instance goes.
    instance: Arc<Instance>,
    /// The timerlat tier's global osnoise settings as they were (restored after the instance).
    saved: Vec<(std::path::PathBuf, String)>,
    timerlat: bool,
    _reaper: Reaper,
}

impl FlightRecorder {
    /// Creates the instance, starts its reaper and the reader thread.
    pub fn start(tfs: &Tracefs, cfg: RecorderConfig) -> Result<FlightRecorder, TraceError> {
        // The reaper watches the directory before it exists: a SIGKILL while the instance is
        // being set up leaves nothing behind either.
        let dir = Instance::next_dir(tfs);
        let timerlat = cfg.instance.timerlat;
        let saved = if timerlat {
            crate::timerlat::saved_settings(tfs)?
        } else {
            Vec::new()
        };
        let reaper = Reaper::spawn_restoring(&dir, &saved)?;
        let made = if timerlat {
            crate::timerlat::apply_settings(tfs, &cfg.instance.cpus)
                .and_then(|()| Instance::create_in(tfs, dir, &cfg.instance))
        } else {
            Instance::create_in(tfs, dir, &cfg.instance)
        };
        let instance = made.inspect_err(|_| crate::timerlat::restore(&saved))?;
        let schema = Schema::new(instance.formats.iter().cloned());
        let mut files = Vec::new();
        for &cpu in &instance.cpus {
            let p = instance.pipe_raw(cpu);
            let f = std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(&p)
                .map_err(|source| TraceError::Io { path: p, source })?;
            files.push((cpu, f));
        }
        let instance = Arc::new(instance);
        let shared = Arc::new(Mutex::new(Shared::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let reader = {
            let (shared, stop, inst) = (shared.clone(), stop.clone(), instance.clone());
            std::thread::Builder::new()
                .name("rtscope-trace".into())
                .spawn(move || read_loop(files, &inst, &schema, &shared, &stop, &cfg))
                .map_err(|source| TraceError::Io {
                    path: instance.dir.clone(),
                    source,
                })?
        };
        Ok(FlightRecorder {
            shared,
            stop,
            reader: Some(reader),
            instance,
            saved,
            timerlat,
            _reaper: reaper,
        })
    }

    /// The instance directory.
    pub fn instance_dir(&self) -> &std::path::Path {
        &self.instance.dir
    }

    /// Pages read and pages that failed to parse so far.
    pub fn pages(&self) -> (u64, u64) {
        let s = lock(&self.shared);
        (s.pages, s.bad_pages)
    }

    /// Attributes a spike if the trace of its CPU covers it.
    pub fn attribute(&self, spike: &Spike) -> Outcome {
        let s = lock(&self.shared);
        let Some(c) = s.cpus.get(&spike.cpu) else {
            return if self.instance.cpus.contains(&spike.cpu) {
                Outcome::Pending
            } else {
                Outcome::NoContext
            };
        };
        if c.newest < spike.wakeup_ns {
            return Outcome::Pending;
        }
        let from = spike.deadline_ns.saturating_sub(LOOKBACK_NS);
        if c.events.front().is_none_or(|e| e.ts > spike.deadline_ns) {
            return Outcome::NoContext;
        }
        let start = c.events.partition_point(|e| e.ts < from);
        let end = c.events.partition_point(|e| e.ts <= spike.wakeup_ns);
        let events: Vec<Event> = c.events.range(start..end).cloned().collect();
        let lost = c
            .lost_at
            .iter()
            .any(|&t| t >= from && t <= spike.wakeup_ns.saturating_add(LOOKBACK_NS));
        drop(s);
        Outcome::Done(if self.timerlat {
            crate::timerlat::attribute(&events, spike, lost)
        } else {
            analyze::attribute(&events, spike, lost)
        })
    }
}

/// History replayed before a deadline to know the CPU's state at the deadline (ns).
pub const LOOKBACK_NS: u64 = 50_000_000;

fn lock(m: &Mutex<Shared>) -> MutexGuard<'_, Shared> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Drop for FlightRecorder {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(r) = self.reader.take() {
            let _ = r.join();
        }
        let _ = self.instance.remove();
        crate::timerlat::restore(&self.saved);
    }
}

fn pin_to(cpus: &[usize]) {
    if cpus.is_empty() {
        return;
    }
    // SAFETY: a zeroed cpu_set_t is a valid empty set; CPU_SET and sched_setaffinity only touch
    // that local set.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &c in cpus {
            libc::CPU_SET(c, &mut set);
        }
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

fn read_loop(
    mut files: Vec<(usize, File)>,
    inst: &Instance,
    schema: &Schema,
    shared: &Mutex<Shared>,
    stop: &AtomicBool,
    cfg: &RecorderConfig,
) {
    pin_to(&cfg.housekeeping);
    let mut buf = vec![0u8; inst.page_size];
    loop {
        let stopping = stop.load(Ordering::Relaxed);
        for (cpu, f) in &mut files {
            drain_cpu(*cpu, f, &mut buf, inst, schema, shared, cfg);
        }
        if stopping {
            return;
        }
        std::thread::sleep(cfg.poll);
    }
}

fn drain_cpu(
    cpu: usize,
    f: &mut File,
    buf: &mut [u8],
    inst: &Instance,
    schema: &Schema,
    shared: &Mutex<Shared>,
    cfg: &RecorderConfig,
) {
    // At most a buffer's worth per poll, so one busy CPU cannot starve the others.
    let max_pages = (cfg.instance.buffer_kb * 1024 / buf.len().max(1)).max(16);
    for _ in 0..max_pages {
        let n = match f.read(buf) {
            Ok(0) => return,
            Ok(n) => n,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(_) => return, // EAGAIN: empty
        };
        let mut s = lock(shared);
        s.pages += 1;
        let Ok(page) = parse_page(&buf[..n], &inst.layout) else {
            s.bad_pages += 1;
            continue;
        };
        let c = s.cpus.entry(cpu).or_default();
        if page.missed_events {
            c.lost_at.push_back(page.timestamp);
        }
        for r in &page.records {
            if let Some(e) = schema.decode(r) {
                c.newest = c.newest.max(e.ts);
                c.events.push_back(e);
            }
        }
        let horizon = c.newest.saturating_sub(cfg.window_ns);
        while c.events.front().is_some_and(|e| e.ts < horizon) || c.events.len() > cfg.max_events {
            c.events.pop_front();
        }
        while c.lost_at.front().is_some_and(|&t| t < horizon) || c.lost_at.len() > 1024 {
            c.lost_at.pop_front();
        }
    }
}
