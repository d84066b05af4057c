//! Late-only kernel stacks taken by eBPF programs ([`rtscope_bpf::late`]): the switch, timer
//! and held chains of [`crate::tracefs::late`] where the kernel runs BPF programs on trace
//! events, at less cost to a prompt wake-up than hist triggers, and on kernels without hist
//! triggers. The programs hang on the raw tracepoints where the kernel's BTF
//! ([`rtscope_bpf::btf`], `RTSCOPE_BTF` or `/sys/kernel/btf/vmlinux`) gives what they read,
//! else on the trace events. The reader thread drains their ring buffer; a spike's events get
//! the stacks of its CPU merged in where the `stacktrace` trigger of the same chain would have
//! written them (after the switch into the thread; before its waking; between the two), so
//! that [`crate::stacks::find`] reads them the same way.

use crate::decode::{Event, Kind};
use crate::format::EventFormat;
use crate::tracefs::late::{BpfChains, Preemption, Setting};
use crate::tracefs::Tracefs;
use rtscope_bpf::btf::Layout;
use rtscope_bpf::late::{Programs, Source};
use rtscope_bpf::{BpfError, Chain, Formats, StackRecord};
use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

/// Stacks kept per CPU for the spikes still to be explained (late wake-ups only: far more
/// than a window holds).
const KEPT: usize = 4096;

/// How far from a switch into the measured thread its switch chain's stack may be (ns): the
/// program runs in the same tracepoint call as the trace's record.
const SWITCH_SLACK_NS: u64 = 200_000;

/// Where the kernel's BTF is read from instead of [`rtscope_bpf::btf::VMLINUX`] (as
/// bpftrace's `BPFTRACE_BTF`): a kernel whose BTF is elsewhere, or a path that does not exist
/// to hang the programs on the trace events.
pub const BTF_VAR: &str = "RTSCOPE_BTF";

/// The tracefs `format` files of the events the programs read.
struct TracefsFormats(Vec<EventFormat>);

impl Formats for TracefsFormats {
    fn id(&self, name: &str) -> Option<u64> {
        self.0
            .iter()
            .find(|f| f.name == name)
            .map(|f| u64::from(f.id))
    }

    fn offset(&self, event: &str, field: &str) -> Option<usize> {
        let f = self.0.iter().find(|f| f.name == event)?;
        f.fields.iter().find(|x| x.name == field).map(|x| x.offset)
    }
}

/// Why the late-only stacks' eBPF programs were not set: the tier line's words by `Display`.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The measured threads' hrtimer function has no address to filter on.
    #[error("no hrtimer_wakeup symbol in /proc/kallsyms")]
    NoHrtimerWakeup,
    /// The programs measure from the timer's expiry, on the trace's clock.
    #[error("the measured threads sleep on another clock than the trace's")]
    OtherClock,
    /// Neither on the trace events nor on the raw tracepoints (whose error comes second).
    #[error("{events} (raw tracepoints: {raw})")]
    Load {
        /// Why not on the trace events.
        events: BpfError,
        /// Why not on the raw tracepoints.
        raw: BpfError,
    },
}

/// The loaded programs and the stacks they took, per CPU.
pub struct BpfStacks {
    programs: Mutex<Programs>,
    /// Why the programs are not where they were tried first: not BTF-typed where they are on
    /// the raw tracepoints, not on those where they are on the trace events (`None`: they are
    /// on the first tried).
    not_raw: Option<BpfError>,
    kept: Mutex<Kept>,
}

/// The stacks drained: per CPU, and those the reader has not yet written to its dump.
#[derive(Default)]
struct Kept {
    cpus: HashMap<usize, VecDeque<StackRecord>>,
    undumped: Vec<StackRecord>,
}

impl BpfStacks {
    /// Loads and attaches the programs for `s`, on the raw tracepoints where the kernel's BTF
    /// ([`BTF_VAR`], else [`rtscope_bpf::btf::VMLINUX`]) serves; why not, when the kernel or
    /// the run cannot.
    pub fn start(tfs: &Tracefs, s: &Setting) -> Result<BpfStacks, StartError> {
        let btf = std::env::var_os(BTF_VAR).unwrap_or_else(|| rtscope_bpf::btf::VMLINUX.into());
        BpfStacks::start_with(tfs, s, std::path::Path::new(&btf))
    }

    /// [`BpfStacks::start`] with the kernel's BTF read from `btf`.
    pub fn start_with(
        tfs: &Tracefs,
        s: &Setting,
        btf: &std::path::Path,
    ) -> Result<BpfStacks, StartError> {
        let wakeup = s
            .functions
            .hrtimer_wakeup
            .ok_or(StartError::NoHrtimerWakeup)?;
        if !s.monotonic {
            return Err(StartError::OtherClock);
        }
        let tick = match s.preemption {
            Preemption::Later => s.functions.tick_sched_timer,
            Preemption::AtSectionEnd(_) => None,
        };
        let setting = rtscope_bpf::late::Setting {
            threshold_ns: s.threshold_ns,
            hrtimer_wakeup: wakeup,
            tick_sched_timer: tick,
            tgid: std::process::id(),
        };
        // BTF-typed first (plain loads behind the arguments), then raw (helper reads), then
        // the trace events' records; the tier line says why not the one before.
        let raw = Layout::read(btf).and_then(|layout| match layout.typed {
            Some(_) => Programs::start(&setting, Source::Typed(&layout))
                .map(|p| (p, None))
                .or_else(|typed| {
                    Programs::start(&setting, Source::Raw(&layout)).map(|p| (p, Some(typed)))
                }),
            None => Programs::start(&setting, Source::Raw(&layout)).map(|p| (p, None)),
        });
        let (programs, not_raw) = match raw {
            Ok(p) => p,
            Err(why) => {
                let formats = TracefsFormats(
                    [
                        ("timer", "hrtimer_start"),
                        ("timer", "hrtimer_expire_entry"),
                        ("sched", "sched_switch"),
                    ]
                    .iter()
                    .filter_map(|(system, event)| tfs.event_format(system, event))
                    .collect(),
                );
                match Programs::start(&setting, Source::Events(&formats)) {
                    Ok(p) => (p, Some(why)),
                    Err(events) => return Err(StartError::Load { events, raw: why }),
                }
            }
        };
        Ok(BpfStacks {
            programs: Mutex::new(programs),
            not_raw,
            kept: Mutex::new(Kept::default()),
        })
    }

    /// The chains set and where the programs hang (on trace events, why not raw): the late
    /// stacks' mechanism, whose `Display` is the tier line's words
    /// (`switch, timer (eBPF on raw tracepoints)`).
    pub fn chains(&self) -> BpfChains {
        let p = self.programs.lock().unwrap_or_else(|e| e.into_inner());
        BpfChains {
            chains: p.chains().iter().map(|c| c.name()).collect(),
            on: p.source(),
            not_raw: self.not_raw.as_ref().map(ToString::to_string),
        }
    }

    /// Takes the stacks the programs wrote since the last call and keeps them (by the reader
    /// thread at each poll, and before a spike's stacks are looked for: a stack written just
    /// before its switch was read is not missed).
    fn drain_into(&self, kept: &mut Kept) {
        let mut new = Vec::new();
        self.programs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .drain(&mut new);
        for r in &new {
            let q = kept.cpus.entry(r.cpu as usize).or_default();
            if q.len() == KEPT {
                q.pop_front();
            }
            q.push_back(r.clone());
        }
        kept.undumped.extend(new);
    }

    /// Drains the programs' stacks; returns those not yet handed out here (for the reader's
    /// dump).
    pub fn drain(&self) -> Vec<StackRecord> {
        let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        self.drain_into(&mut kept);
        std::mem::take(&mut kept.undumped)
    }

    /// `events` (one CPU's, in time order, up to a spike's wake-up) with that CPU's stacks
    /// from the first event to `until` merged in ([`merge`]).
    pub fn merged(&self, cpu: usize, events: &[Event], until: u64) -> Vec<Event> {
        let from = events.first().map_or(0, |e| e.ts);
        let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        self.drain_into(&mut kept);
        let stacks: Vec<&StackRecord> = kept
            .cpus
            .get(&cpu)
            .into_iter()
            .flatten()
            .filter(|r| r.ts >= from && r.ts <= until)
            .collect();
        merge(events, &stacks)
    }
}

/// The events with each stack placed where the `stacktrace` trigger of its chain writes its
/// entry: a switch stack right after the switch into its measured thread nearest in time (the
/// program and the trace's record come from the same tracepoint call, in either order), the
/// others by time (a late timer's before the waking it causes, the tick's where it came).
pub fn merge(events: &[Event], stacks: &[&StackRecord]) -> Vec<Event> {
    let mut out = events.to_vec();
    for r in stacks {
        let stack = Event {
            ts: r.ts,
            pid: r.pid as i32,
            kind: Kind::KernelStack {
                frames: r.frames.clone(),
            },
        };
        let by_time = out.partition_point(|e| e.ts <= r.ts);
        let at = match r.chain {
            Chain::Switch => out
                .iter()
                .enumerate()
                .filter(|(_, e)| {
                    matches!(e.kind, Kind::Switch { next_pid, .. } if next_pid == r.tid as i32)
                        && e.ts.abs_diff(r.ts) <= SWITCH_SLACK_NS
                })
                .min_by_key(|(_, e)| e.ts.abs_diff(r.ts))
                .map_or(by_time, |(i, _)| i + 1),
            Chain::Timer | Chain::Held => by_time,
        };
        out.insert(at, stack);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Spike;
    use crate::stacks::tests::{switch, waking};

    fn record(ts: u64, pid: u32, chain: Chain, frame: u64) -> StackRecord {
        StackRecord {
            ts,
            lat: 2_000_000,
            cpu: 1,
            pid,
            tid: 7,
            chain,
            frames: vec![frame],
        }
    }

    #[test]
    fn why_the_programs_were_not_set_reads_as_before() {
        assert_eq!(
            StartError::NoHrtimerWakeup.to_string(),
            "no hrtimer_wakeup symbol in /proc/kallsyms"
        );
        assert_eq!(
            StartError::OtherClock.to_string(),
            "the measured threads sleep on another clock than the trace's"
        );
        let e = StartError::Load {
            events: BpfError::Event("no event sched_switch".into()),
            raw: BpfError::Btf("/x: No such file or directory (os error 2)".into()),
        };
        assert_eq!(
            e.to_string(),
            "no event sched_switch (raw tracepoints: BTF: /x: No such file or directory (os \
             error 2))"
        );
    }

    #[test]
    fn a_setting_without_the_wakeup_symbol_or_on_another_clock_loads_nothing() {
        let tfs = Tracefs {
            root: "/nonexistent-rtscope-tracefs".into(),
        };
        let mut s = Setting::default();
        let no_symbol = BpfStacks::start_with(&tfs, &s, std::path::Path::new("/nonexistent"));
        assert!(matches!(no_symbol, Err(StartError::NoHrtimerWakeup)));
        s.functions.hrtimer_wakeup = Some(0xffff_ffff_8110_0000);
        s.monotonic = false;
        let other_clock = BpfStacks::start_with(&tfs, &s, std::path::Path::new("/nonexistent"));
        assert!(matches!(other_clock, Err(StartError::OtherClock)));
    }

    #[test]
    fn stacks_land_where_the_triggers_would_write_them_and_find_reads_them() {
        let spike = Spike {
            cpu: 1,
            tid: 7,
            deadline_ns: 1_000_000,
            wakeup_ns: 9_000_000,
            smis: None,
        };
        let events = vec![waking(1_000_100, 40), switch(8_000_000, 40, 7)];
        // The program ran before the trace's probe: its stack's time is before the switch's,
        // and it still lands after it.
        let sw = record(7_999_990, 40, Chain::Switch, 0xb);
        let merged = merge(&events, &[&sw]);
        assert!(matches!(merged[2].kind, Kind::KernelStack { .. }));
        let culprit = crate::model::Task {
            comm: "culprit".into(),
            pid: 40,
            prio: 120,
        };
        assert_eq!(
            crate::stacks::find(&merged, &spike, std::slice::from_ref(&culprit))
                .unwrap()
                .1,
            vec![0xb]
        );
        // The tick found the culprit between the waking and the switch: its stack wins.
        let held = record(3_000_000, 40, Chain::Held, 0xc);
        let merged = merge(&events, &[&held, &sw]);
        assert_eq!(
            crate::stacks::find(&merged, &spike, std::slice::from_ref(&culprit))
                .unwrap()
                .1,
            vec![0xc]
        );
        // A late timer's stack comes before the waking it causes.
        let late = vec![
            switch(600_000, 7, 40),
            waking(7_000_020, 40),
            switch(8_000_000, 40, 7),
        ];
        let timer = record(7_000_010, 40, Chain::Timer, 0xa);
        let merged = merge(&late, &[&timer]);
        assert!(matches!(merged[1].kind, Kind::KernelStack { .. }));
        assert_eq!(
            crate::stacks::find(&merged, &spike, std::slice::from_ref(&culprit))
                .unwrap()
                .1,
            vec![0xa]
        );
    }
}
