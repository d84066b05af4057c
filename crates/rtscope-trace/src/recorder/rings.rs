//! The eBPF flight recorder as the reader thread's source (`--explain-recorder ebpf`, issue
//! 68): the programs on the raw tracepoints behind the trace events write each traced CPU's
//! ring ([`rtscope_bpf::recorder`]); at each poll the reader takes every traced CPU's new
//! records ([`Recorder::since`]), converts them with one long-lived [`Converter`] into the
//! events the tracefs path decodes, and feeds the same per-CPU stores: what follows
//! ([`FlightRecorder::attribute`], the keeping of waiting spikes' trace) is the tracefs
//! path's. Records overwritten before they were read are lost events, as a page's
//! `missed_events` is: the span from the newest event read before to the first record read
//! after them is marked, and a spike whose window overlaps it says so.

use super::*;
use crate::bpf_events::Converter;
use rtscope_bpf::recorder::{Recorder, Setting, TRACEPOINTS};

/// Records per CPU in the rings by default (1 MiB per possible CPU): the reader takes them
/// every poll (50 ms); 32,768 records hold about 650 ms at 50,000 events/s on one CPU.
pub const BPF_RECORDS: u32 = 1 << 15;

/// Starts the eBPF recorder with `records` per CPU, the kernel's BTF from
/// [`crate::bpf_stacks::BTF_VAR`] (else `/sys/kernel/btf/vmlinux`); refused when it cannot
/// follow a tracepoint whose trace event the tracefs recorder would enable on this kernel
/// (the attribution would miss what it records), saying which and why.
pub(super) fn start(tfs: &Tracefs, records: u32) -> Result<Recorder, TraceError> {
    // A trace event with no program at all (arm64's `ipi` events) refuses before anything is
    // loaded: loading every program first took 8 s of an emulated arm64 guest's set-up.
    let unfollowed: Vec<String> = enabled_here(tfs)
        .filter(|(_, event)| !TRACEPOINTS.iter().any(|(tp, _)| tp == event))
        .map(|(system, event)| format!("{system}:{event} (no program for it)"))
        .collect();
    if !unfollowed.is_empty() {
        return Err(TraceError::Bpf(format!(
            "it cannot follow {}",
            unfollowed.join("; ")
        )));
    }
    let btf = std::env::var_os(crate::bpf_stacks::BTF_VAR)
        .unwrap_or_else(|| rtscope_bpf::btf::VMLINUX.into());
    let setting = Setting {
        records,
        btf: btf.into(),
    };
    let rec = Recorder::start(&setting).map_err(|e| TraceError::Bpf(e.to_string()))?;
    let lacking = lacking(tfs, &rec);
    if !lacking.is_empty() {
        return Err(TraceError::Bpf(format!(
            "it cannot follow {}",
            lacking.join("; ")
        )));
    }
    Ok(rec)
}

/// The trace events the tracefs recorder enables here whose tracepoint `rec` does not follow,
/// each with why.
fn lacking(tfs: &Tracefs, rec: &Recorder) -> Vec<String> {
    enabled_here(tfs)
        .filter(|(_, event)| !rec.attached().contains(event))
        .map(|(system, event)| {
            let why = rec
                .missing()
                .iter()
                .find(|m| m.tracepoint == event)
                .map_or("no program for it".to_string(), |m| m.reason.clone());
            format!("{system}:{event} ({why})")
        })
        .collect()
}

/// The trace events the tracefs recorder enables on this kernel (those it has), as
/// `(system, event)`.
fn enabled_here(tfs: &Tracefs) -> impl Iterator<Item = (&'static str, &'static str)> + '_ {
    crate::tracefs::lean_events(false)
        .into_iter()
        .chain(crate::tracefs::HANDLER_EVENTS)
        .filter(|(system, event)| tfs.event_format(system, event).is_some())
}

/// Where a batch's events are dumped: its CPU, the end of its lost span, whether records
/// were lost, the events.
pub(super) type DumpPage<'a> = dyn FnMut(usize, u64, bool, &[Event]) + 'a;

/// The reader's eBPF source: the recorder, and where each traced CPU was read up to.
pub(crate) struct Rings {
    rec: Arc<Recorder>,
    next: Vec<(usize, u64)>,
    convert: Converter,
}

impl Rings {
    /// Follows `cpus` from the records written once every program is attached: the programs
    /// are attached one after the other, and what came before is partial (an interrupt's
    /// entry recorded, its exit's program not yet attached, would read as an exit missing).
    pub(super) fn new(rec: Arc<Recorder>, cpus: &[usize]) -> Rings {
        Rings {
            next: cpus.iter().map(|&c| (c, rec.written(c as u32))).collect(),
            rec,
            convert: Converter::default(),
        }
    }

    /// Takes each traced CPU's new records into the `shared` stores (until `stop`), each
    /// batch's events given to `dump` too (the reader's `RTSCOPE_TRACE_DUMP`).
    pub(super) fn drain(
        &mut self,
        shared: &Mutex<Shared>,
        stop: &AtomicBool,
        cfg: &RecorderConfig,
        dump: &mut DumpPage,
    ) {
        for i in 0..self.next.len() {
            if stop.load(Ordering::Relaxed) {
                return;
            }
            let (cpu, next) = self.next[i];
            let got = self.rec.since(cpu as u32, next);
            self.next[i].1 = got.next;
            if got.records.is_empty() && got.lost == 0 {
                continue;
            }
            // The lost records are the oldest asked for (or one never published): the span
            // ends at the first whole record after them, else now.
            let lost_until = got
                .records
                .iter()
                .filter(|x| x.index >= got.lost_upto)
                .map(|x| x.ts)
                .min()
                .unwrap_or_else(now_ns);
            let mut records = got.records;
            records.sort_by_key(|x| (x.ts, x.index));
            let events = self.convert.events(&records);
            dump(cpu, lost_until, got.lost > 0, &events);
            let mut s = lock(shared);
            s.pages += 1;
            let c = s.cpus.entry(cpu).or_default();
            c.take_page(lost_until, got.lost > 0, events, false);
            c.trim(cfg.window_ns, cfg.max_events);
            c.keep.shrink_to(cfg.kept_events / self.next.len().max(1));
        }
    }
}

/// `CLOCK_MONOTONIC` now (ns): the rings' clock.
fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the live timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}
