//! The flight recorder: a private instance, its reaper, and a housekeeping thread that drains
//! each traced CPU's `trace_pipe_raw` into a bounded window of decoded events.
//!
//! The thread is pinned to the CPUs that are not measured (when there are any) and runs at the
//! normal policy. It reads every `poll` interval; the kernel buffer (overwrite mode) only has to
//! hold the events of one interval. Events older than `window` behind the newest one of their
//! CPU are dropped, and each CPU keeps at most `max_events`.

use crate::analyze;
use crate::bpf_stacks::BpfStacks;
use crate::decode::{Event, Kind, Schema};
use crate::exits::ExitWatch;
use crate::keep::{Keep, PinKey};
use crate::machine::Machine;
use crate::model::{Attribution, MissingExits, NotTraced, SiblingActivity, Spike};
use crate::page::parse_page;
use crate::reaper::Reaper;
use crate::stacks::Namer;
use crate::tracefs::{Instance, InstanceConfig, StackChoice, Stacks, Tracefs};
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
    /// The reader thread's SCHED_FIFO priority; `None`: SCHED_OTHER. At SCHED_OTHER beside
    /// twenty busy load processes on a 2-CPU QEMU guest the reader fell minutes behind the
    /// trace, and the run's end waited for it while the loads ran on.
    pub reader_fifo: Option<i32>,
    /// How often the reader drains the buffers.
    pub poll: Duration,
    /// How much history each CPU keeps (ns).
    pub window_ns: u64,
    /// Events kept per CPU at most.
    pub max_events: usize,
    /// A CPU's buffer doubles after it lost events, up to this size (KiB).
    pub max_buffer_kb: usize,
    /// Events kept around waiting spikes at most, over all traced CPUs
    /// ([`crate::keep::kept_budget`]).
    pub kept_events: usize,
    /// The idle facts an idle exit is checked against.
    pub machine: Machine,
    /// Each measured CPU's SMT siblings ([`crate::sibling::smt_siblings`]): traced too (their
    /// `sched_switch` events), so each attribution says what they ran meanwhile.
    pub siblings: Vec<(usize, Vec<usize>)>,
    /// The events from the eBPF flight recorder's rings, of this many records per CPU (a
    /// power of two; [`rings::BPF_RECORDS`]), instead of the instance's trace events, which
    /// are then not enabled ([`rings`]); `None`: the tracefs pipes. Not with the timerlat
    /// tracer nor stacks at every wake-up (both are the instance's own events).
    pub bpf_records: Option<u32>,
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
                stacks: crate::tracefs::StackChoice::Off,
                late: crate::tracefs::late::Setting {
                    threshold_ns: u64::MAX,
                    monotonic: true,
                    ..Default::default()
                },
                formats_only: false,
            },
            housekeeping: Vec::new(),
            reader_fifo: None,
            poll: Duration::from_millis(50),
            window_ns: 3_000_000_000,
            max_events: 1 << 20,
            max_buffer_kb: MAX_BUFFER_KB,
            kept_events: crate::keep::kept_budget(),
            machine: Machine::default(),
            siblings: Vec::new(),
            bpf_records: None,
        }
    }
}

/// Events of one CPU.
#[derive(Debug, Default)]
struct CpuEvents {
    events: VecDeque<Event>,
    /// Time of the newest event read.
    newest: u64,
    /// Since when the tracer is live on this CPU: its first event (the timerlat tier: the
    /// first event of the tracer itself, its scheduler events come earlier).
    live: Option<u64>,
    /// Spans in which the kernel lost events (overwritten before they were read): from the
    /// newest event read before to the page that reported the loss.
    lost: VecDeque<(u64, u64)>,
    /// Whether the kernel's interrupt exits reach the trace ([`ExitWatch`]).
    exits: Option<ExitWatch>,
    /// What the window dropped that waiting spikes need ([`Keep`]).
    keep: Keep,
}

/// Whether the events of one CPU cover a spike.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cover {
    /// The trace has not reached the wake-up yet.
    Pending,
    /// It never will.
    Not(NotTraced),
    /// It does; `lost_before`: events were lost in the history replayed before the deadline.
    Yes { lost_before: bool },
}

impl CpuEvents {
    fn cover(&self, spike: &Spike) -> Cover {
        if self.newest < spike.wakeup_ns {
            return Cover::Pending;
        }
        if self.live.is_none_or(|t| t > spike.deadline_ns) {
            return Cover::Not(NotTraced::TracerNotLive);
        }
        let kept = self.keep.covers(pin_key(spike));
        if !kept && self.events.front().is_none_or(|e| e.ts > spike.deadline_ns) {
            return Cover::Not(NotTraced::OutOfWindow);
        }
        let overlaps = |from: u64, to: u64| {
            self.lost
                .iter()
                .chain(self.keep.lost())
                .any(|&(a, b)| a < to && b > from)
        };
        if overlaps(spike.deadline_ns, spike.wakeup_ns) {
            return Cover::Not(NotTraced::LostEvents);
        }
        Cover::Yes {
            lost_before: overlaps(
                spike.deadline_ns.saturating_sub(LOOKBACK_NS),
                spike.deadline_ns,
            ),
        }
    }

    /// The events from `from` to `to` (inclusive): the kept ones, then the window's.
    fn range(&self, from: u64, to: u64) -> VecDeque<Event> {
        let start = self.events.partition_point(|e| e.ts < from);
        let end = self.events.partition_point(|e| e.ts <= to);
        let front = self.events.front().map_or(u64::MAX, |e| e.ts);
        self.keep
            .range(from, to.min(front.saturating_sub(1)))
            .chain(self.events.range(start..end.max(start)))
            .cloned()
            .collect()
    }

    /// The machine facts `spike` is attributed with: once interrupt exits went missing before
    /// its wake-up, an interrupt's time looks like time no event covers, so none of that time
    /// can be told to be the hypervisor's (it stays unexplained): not a guest, for it.
    fn machine_for(&self, spike: &Spike, machine: Machine) -> Machine {
        let blind = self
            .exits
            .as_ref()
            .and_then(ExitWatch::missing_since)
            .is_some_and(|since| since <= spike.wakeup_ns);
        Machine {
            guest: machine.guest && !blind,
            ..machine
        }
    }

    /// Takes the decoded events of one page; true when the kernel lost events before it.
    fn take_page(
        &mut self,
        timestamp: u64,
        missed: bool,
        events: Vec<Event>,
        timerlat: bool,
    ) -> bool {
        let exits = self.exits.get_or_insert_with(|| ExitWatch::new(timerlat));
        if missed {
            self.lost
                .push_back((self.newest, timestamp.max(self.newest)));
            exits.lost();
        }
        for e in events {
            exits.see(&e);
            if self.live.is_none()
                && (!timerlat || crate::timerlat::live_from(std::slice::from_ref(&e)).is_some())
            {
                self.live = Some(e.ts);
            }
            self.newest = self.newest.max(e.ts);
            // The eBPF rings' records come in index order per read: one a program took its
            // slot for after an interrupting one is a little older than the last kept.
            if self.events.back().is_some_and(|b| b.ts > e.ts) {
                let at = self.events.partition_point(|x| x.ts <= e.ts);
                self.events.insert(at, e);
            } else {
                self.events.push_back(e);
            }
        }
        missed
    }

    fn trim(&mut self, window_ns: u64, max_events: usize) {
        let horizon = self.newest.saturating_sub(window_ns);
        while self.events.front().is_some_and(|e| e.ts < horizon) || self.events.len() > max_events
        {
            if let Some(e) = self.events.pop_front() {
                self.keep.take(e);
            }
        }
        while self.lost.front().is_some_and(|&(_, b)| b < horizon) || self.lost.len() > 1024 {
            if let Some(span) = self.lost.pop_front() {
                self.keep.take_lost(span);
            }
        }
    }
}

#[derive(Debug, Default)]
struct Shared {
    cpus: HashMap<usize, CpuEvents>,
    pages: u64,
    bad_pages: u64,
    /// The largest per-CPU buffer size in force (KiB).
    buffer_kb: usize,
}

/// What [`FlightRecorder::attribute`] could do with a spike.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Attributed.
    Done(Attribution),
    /// The trace of that CPU has not reached the wake-up yet: ask again later.
    Pending,
    /// The trace does not cover the spike, and why.
    NotTraced(NotTraced),
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
    machine: Machine,
    siblings: Vec<(usize, Vec<usize>)>,
    /// Whether spikes get kernel stacks, and the symbols they are named with.
    namer: Namer,
    /// The handlers spikes' time in interrupt context went to, and their names.
    handlers: crate::handlers::Handlers,
    /// The late-only stacks' eBPF programs, where they take them.
    bpf: Option<Arc<BpfStacks>>,
    /// The eBPF flight recorder, when the events are its records ([`rings`]).
    rings: Option<Arc<rtscope_bpf::recorder::Recorder>>,
    /// Taken back when the instance is left behind ([`teardown`]): it then removes it once
    /// rtscope exits.
    reaper: Option<Reaper>,
}

/// The late-only chains in eBPF ([`BpfStacks`]) where the run asks for late-only stacks and
/// the kernel can: the instance then sets no trigger of its own. Else the hist
/// triggers; for `auto` on a kernel without them either, no stacks, saying why.
fn late_in_bpf(
    tfs: &Tracefs,
    cfg: &mut RecorderConfig,
    namer: &mut Namer,
) -> Option<Arc<BpfStacks>> {
    let asked = matches!(cfg.instance.stacks, StackChoice::On | StackChoice::Auto);
    if !asked || !namer.wants_trigger() {
        return None;
    }
    match BpfStacks::start(tfs, &cfg.instance.late) {
        Ok(b) => {
            cfg.instance.late.mechanism = crate::tracefs::late::Mechanism::Bpf(b.chains());
            Some(Arc::new(b))
        }
        Err(why) => {
            if let (StackChoice::Auto, Some(hist)) =
                (cfg.instance.stacks, crate::tracefs::late::unsupported(tfs))
            {
                let both = format!("{hist}; eBPF: {why}");
                *namer = Namer::unavailable(crate::tracefs::late_unavailable(&both));
            }
            None
        }
    }
}

/// The reaper of the instance at `dir`, started before it exists. The late-only stacks' hist
/// triggers hold the instance (the kernel refuses its removal while they are set) and their
/// synthetic events are global: the reaper takes both back, with the `saved` tracer settings.
fn reaper_for(
    tfs: &Tracefs,
    dir: &std::path::Path,
    saved: &[(std::path::PathBuf, String)],
    cfg: &RecorderConfig,
) -> Result<Reaper, TraceError> {
    let late = match cfg.instance.stacks {
        StackChoice::On | StackChoice::Auto => {
            crate::tracefs::late::Late::new(dir, &cfg.instance.late)
        }
        StackChoice::Off | StackChoice::Every => None,
    };
    let undo = late.as_ref().map_or_else(Vec::new, |l| l.undo(dir));
    let deletions: Vec<_> = late
        .iter()
        .flat_map(|l| l.deletions())
        .map(|d| (tfs.root.join("synthetic_events"), d))
        .collect();
    Reaper::spawn_cleaning(dir, saved, &undo, &deletions)
}

/// The instance's settings with the siblings' CPUs traced beside the measured ones (the
/// timerlat tracer runs on the measured ones only).
fn traced_with_siblings(cfg: &RecorderConfig) -> InstanceConfig {
    let mut traced = cfg.instance.clone();
    traced
        .cpus
        .extend(cfg.siblings.iter().flat_map(|(_, s)| s.iter().copied()));
    traced.cpus.sort_unstable();
    traced.cpus.dedup();
    traced
}

/// Why the eBPF recorder cannot give this run's events (the tier reason): the stacks it asks
/// for are the instance's own events (the triggers at every wake-up; the late-only hist
/// triggers where their eBPF programs could not start), which only its trace pipes carry.
fn refuse_rings(cfg: &RecorderConfig, late_in_bpf: bool) -> Result<(), TraceError> {
    if cfg.bpf_records.is_none() {
        return Ok(());
    }
    if cfg.instance.timerlat {
        return Err(TraceError::Bpf(
            "the timerlat tier's events are the timerlat tracer's own".into(),
        ));
    }
    let why = match cfg.instance.stacks {
        StackChoice::Off => return Ok(()),
        StackChoice::On | StackChoice::Auto if late_in_bpf => return Ok(()),
        StackChoice::Every => "stacks at every wake-up are the trace's stacktrace triggers",
        StackChoice::On | StackChoice::Auto => {
            "the late-only stacks' eBPF programs did not start and their hist triggers are \
             trace events"
        }
    };
    Err(TraceError::Bpf(why.into()))
}

/// The formats of the events recorded: the instance's, or with the eBPF recorder those of
/// the tracepoints it follows.
fn recorded_formats(
    instance: &Instance,
    rings: &Option<Arc<rtscope_bpf::recorder::Recorder>>,
) -> Vec<crate::format::EventFormat> {
    let followed = |name: &str| rings.as_ref().is_none_or(|r| r.attached().contains(&name));
    instance
        .formats
        .iter()
        .filter(|f| followed(&f.name))
        .cloned()
        .collect()
}

impl FlightRecorder {
    /// Creates the instance, starts its reaper and the reader thread.
    pub fn start(tfs: &Tracefs, cfg: RecorderConfig) -> Result<FlightRecorder, TraceError> {
        // The reaper watches the directory before it exists: a SIGKILL while the instance is
        // being set up leaves nothing behind either.
        let dir = Instance::next_dir(tfs);
        let timerlat = cfg.instance.timerlat;
        let cfg_machine = cfg.machine;
        let siblings = cfg.siblings.clone();
        // Symbols first: without them a stack would name no function, so none is taken.
        let mut cfg = cfg;
        let mut namer = Namer::load(cfg.instance.stacks != StackChoice::Off);
        cfg.instance.late.functions = namer.timer_functions();
        let bpf = late_in_bpf(tfs, &mut cfg, &mut namer);
        if !namer.wants_trigger() {
            cfg.instance.stacks = StackChoice::Off;
        }
        refuse_rings(&cfg, bpf.is_some())?;
        let saved = if timerlat {
            crate::timerlat::saved_settings(tfs)?
        } else {
            Vec::new()
        };
        let reaper = reaper_for(tfs, &dir, &saved, &cfg)?;
        let rings = match cfg.bpf_records {
            Some(records) => Some(Arc::new(rings::start(tfs, records)?)),
            None => None,
        };
        let mut traced = traced_with_siblings(&cfg);
        if rings.is_some() {
            // No event is enabled: the instance's buffers stay at their least.
            traced.formats_only = true;
            traced.buffer_kb = 64;
        }
        let made = if timerlat {
            crate::timerlat::apply_settings(tfs, &cfg.instance.cpus)
                .and_then(|()| Instance::create_in(tfs, dir, &traced))
        } else {
            Instance::create_in(tfs, dir, &traced)
        };
        let instance = made.inspect_err(|_| crate::timerlat::restore(&saved))?;
        let schema = Schema::new(instance.formats.iter().cloned());
        let source = match &rings {
            Some(r) => Source::Rings(rings::Rings::new(r.clone(), &instance.cpus)),
            None => Source::Pipes(pipes(&instance)?),
        };
        namer.settle(&instance.stacks);
        let handlers = crate::handlers::Handlers::new(&recorded_formats(&instance, &rings));
        let instance = Arc::new(instance);
        let shared = Arc::new(Mutex::new(Shared {
            buffer_kb: cfg.instance.buffer_kb,
            ..Shared::default()
        }));
        let stop = Arc::new(AtomicBool::new(false));
        let reader = spawn_reader(
            source,
            schema,
            cfg,
            instance.clone(),
            shared.clone(),
            stop.clone(),
            bpf.clone(),
        )?;
        Ok(FlightRecorder {
            shared,
            stop,
            reader: Some(reader),
            instance,
            saved,
            timerlat,
            machine: cfg_machine,
            siblings,
            namer,
            handlers,
            bpf,
            rings,
            reaper: Some(reaper),
        })
    }

    /// The eBPF flight recorder the events come from (`None`: the instance's trace events).
    pub fn rings(&self) -> Option<&rtscope_bpf::recorder::Recorder> {
        self.rings.as_deref()
    }

    /// The instance directory.
    pub fn instance_dir(&self) -> &std::path::Path {
        &self.instance.dir
    }

    /// Whether spikes get kernel stacks (why not, when asked for and impossible).
    pub fn stacks(&self) -> &Stacks {
        self.namer.state()
    }

    /// The handlers spikes are named by.
    pub fn handlers(&self) -> &crate::handlers::Handlers {
        &self.handlers
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
                Outcome::NotTraced(NotTraced::CpuNotTraced)
            };
        };
        let lost = match c.cover(spike) {
            Cover::Pending => return Outcome::Pending,
            Cover::Not(why) => return Outcome::NotTraced(why),
            Cover::Yes { lost_before } => lost_before,
        };
        let machine = c.machine_for(spike, self.machine);
        let from = spike.deadline_ns.saturating_sub(LOOKBACK_NS);
        let events: Vec<Event> = c.range(from, spike.wakeup_ns).into();
        let siblings = self.siblings_over(&s, spike);
        drop(s);
        let mut a = if self.timerlat {
            crate::timerlat::attribute_on(&events, spike, lost, machine)
        } else {
            analyze::attribute_on(&events, spike, lost, machine)
        };
        a.siblings = siblings;
        a.handler = self.handlers.of(&events, spike, self.namer.symbols());
        match &self.bpf {
            Some(b) => {
                let until = spike.wakeup_ns + crate::stacks::STACK_AFTER_SWITCH_NS;
                self.namer
                    .attach(&mut a, &b.merged(spike.cpu, &events, until));
            }
            None => self.namer.attach(&mut a, &events),
        }
        Outcome::Done(a)
    }

    /// Keeps the trace `spike` needs on its CPU and that CPU's SMT siblings until
    /// [`FlightRecorder::unpin`], even past the rolling window ([`crate::keep`]).
    pub fn pin(&self, spike: &Spike) {
        let mut s = lock(&self.shared);
        let from = spike.deadline_ns.saturating_sub(LOOKBACK_NS);
        for cpu in self.cpus_of(spike) {
            let c = s.cpus.entry(cpu).or_default();
            let front = c.events.front().map(|e| e.ts);
            c.keep.pin(pin_key(spike), from, front, spike.latency_ns());
        }
    }

    /// Lets go what [`FlightRecorder::pin`] kept for `spike`.
    pub fn unpin(&self, spike: &Spike) {
        let mut s = lock(&self.shared);
        for cpu in self.cpus_of(spike) {
            if let Some(c) = s.cpus.get_mut(&cpu) {
                c.keep.unpin(pin_key(spike));
            }
        }
    }

    /// Events kept around waiting spikes now, over all CPUs.
    pub fn kept_events(&self) -> usize {
        lock(&self.shared).cpus.values().map(|c| c.keep.len()).sum()
    }

    /// `spike`'s CPU and its SMT siblings.
    fn cpus_of(&self, spike: &Spike) -> Vec<usize> {
        let sibs = self.siblings.iter().find(|(c, _)| *c == spike.cpu);
        std::iter::once(spike.cpu)
            .chain(sibs.into_iter().flat_map(|(_, s)| s.iter().copied()))
            .collect()
    }

    /// What the SMT siblings of `spike`'s CPU ran over it, from their events read so far (the
    /// reader drains every traced CPU in each round, so once the spike's CPU is read past the
    /// wake-up its siblings are read to about the same time).
    fn siblings_over(&self, s: &Shared, spike: &Spike) -> Vec<SiblingActivity> {
        let Some((_, sibs)) = self.siblings.iter().find(|(c, _)| *c == spike.cpu) else {
            return Vec::new();
        };
        sibs.iter()
            .filter_map(|&cpu| {
                let c = s.cpus.get(&cpu)?;
                // The window itself when it still holds the spike (the names may come from a
                // switch long before it); else the kept trace and the window.
                if c.events.front().is_some_and(|e| e.ts <= spike.deadline_ns) {
                    return crate::sibling::activity(
                        cpu,
                        &c.events,
                        spike.deadline_ns,
                        spike.wakeup_ns,
                    );
                }
                let events = c.range(0, u64::MAX);
                crate::sibling::activity(cpu, &events, spike.deadline_ns, spike.wakeup_ns)
            })
            .collect()
    }

    /// Whether the tracer has produced its first event on `cpu` (the timerlat tier: its own).
    pub fn is_live(&self, cpu: usize) -> bool {
        lock(&self.shared)
            .cpus
            .get(&cpu)
            .is_some_and(|c| c.live.is_some())
    }

    /// Waits until the tracer is live on each of `cpus` ([`FlightRecorder::is_live`]) or
    /// `limit` has passed, checking every 10 ms; returns the CPUs it is still not live on.
    pub fn wait_live(&self, cpus: &[usize], limit: Duration) -> Vec<usize> {
        let until = std::time::Instant::now() + limit;
        loop {
            let not: Vec<usize> = cpus.iter().copied().filter(|&c| !self.is_live(c)).collect();
            if not.is_empty() || std::time::Instant::now() >= until {
                return not;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Waits until whether interrupt exits reach the trace is known on each of `cpus` (an
    /// exit was due: [`ExitWatch::checked`]) or `limit` has passed, checking every 10 ms: on
    /// the timerlat tier that is the tracer's second timer sample, a period after it is live.
    /// Spikes attributed before it would name the hypervisor for time a lost exit hid.
    pub fn wait_checked(&self, cpus: &[usize], limit: Duration) {
        let until = std::time::Instant::now() + limit;
        let checked = |cpu: &usize| {
            lock(&self.shared)
                .cpus
                .get(cpu)
                .and_then(|c| c.exits.as_ref())
                .is_some_and(ExitWatch::checked)
        };
        while !cpus.iter().all(checked) && std::time::Instant::now() < until {
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// The traced CPUs whose interrupt exits stopped reaching the trace, in CPU order.
    pub fn missing_exits(&self) -> Vec<MissingExits> {
        let s = lock(&self.shared);
        let mut out: Vec<MissingExits> = s
            .cpus
            .iter()
            .filter_map(|(&cpu, c)| {
                let w = c.exits.as_ref()?;
                Some(MissingExits {
                    cpu,
                    since_ns: w.missing_since()?,
                    missed: w.missed(),
                })
            })
            .collect();
        out.sort_unstable_by_key(|m| m.cpu);
        out
    }

    /// The largest per-CPU buffer the reader has grown to after losses (KiB).
    pub fn buffer_kb(&self) -> usize {
        lock(&self.shared).buffer_kb
    }
}

fn pin_key(spike: &Spike) -> PinKey {
    PinKey {
        tid: spike.tid,
        deadline_ns: spike.deadline_ns,
        wakeup_ns: spike.wakeup_ns,
    }
}

/// History replayed before a deadline to know the CPU's state at the deadline (ns).
pub const LOOKBACK_NS: u64 = 50_000_000;
/// The largest a traced CPU's buffer grows after losses (KiB).
pub const MAX_BUFFER_KB: usize = 32 * 1024;

fn lock(m: &Mutex<Shared>) -> MutexGuard<'_, Shared> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

mod reader;
use reader::{pipes, spawn_reader, Source};
pub mod rings;
mod teardown;

#[cfg(test)]
mod tests;
