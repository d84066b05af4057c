//! The tier and the recorder a run explains with: the eBPF flight recorder where it was asked
//! for (`--explain-recorder ebpf|auto`) and can give the run's events, else the timerlat
//! tier where the kernel has the tracer, else the tracefs flight recorder, else the coarse
//! tier; each step not taken said in the tier reason.

use super::ExplainConfig;
use crate::machine::Machine;
use crate::model::Tier;
use crate::recorder::{FlightRecorder, RecorderConfig};
use crate::tracefs::{StackChoice, Tracefs};

/// Where the flight recorder's events come from (`--explain-recorder`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RecorderChoice {
    /// The tracefs instance's trace events (`tracefs`, the default).
    #[default]
    Tracefs,
    /// The eBPF rings on the raw tracepoints behind the same events (`ebpf`); the tracefs
    /// recorder, saying why, where they cannot give the run's events.
    Bpf,
    /// The eBPF rings where they load with every tracepoint the tracefs recorder would
    /// trace here, else the tracefs recorder (`auto`).
    Auto,
}

impl RecorderChoice {
    /// The flag's word: `tracefs`, `ebpf`, `auto`.
    pub fn name(self) -> &'static str {
        match self {
            RecorderChoice::Tracefs => "tracefs",
            RecorderChoice::Bpf => "ebpf",
            RecorderChoice::Auto => "auto",
        }
    }
}

/// Why the run's settings keep it from the eBPF recorder, before anything is loaded: what
/// it asks for are the instance's own events (`None`: nothing does).
pub(crate) fn bpf_refusal(cfg: &ExplainConfig) -> Option<&'static str> {
    if cfg.recorder == RecorderChoice::Tracefs {
        return None;
    }
    if cfg.hrtimer_events {
        return Some("the hrtimer expiry events have no program in it");
    }
    (cfg.stacks == StackChoice::Every)
        .then_some("stacks at every wake-up are the trace's stacktrace triggers")
}

/// The tier reason's clause for an eBPF recorder asked for and not used.
fn not_used(why: &dyn std::fmt::Display) -> String {
    format!("eBPF recorder not used, tracefs instead: {why}")
}

/// The recorder's settings for `cfg` (the tracefs pipes).
fn recorder_config(cfg: &ExplainConfig) -> RecorderConfig {
    let mut rc = RecorderConfig::new(cfg.cpus.clone());
    rc.machine = cfg
        .machine
        .unwrap_or_else(|| Machine::read(std::path::Path::new("/"), &cfg.cpus));
    rc.housekeeping = cfg.housekeeping.clone();
    rc.window_ns = cfg.trace_window_ns;
    rc.siblings = cfg
        .siblings
        .clone()
        .unwrap_or_else(|| crate::sibling::smt_siblings(std::path::Path::new("/"), &cfg.cpus));
    rc.reader_fifo = cfg.reader_fifo;
    rc.instance.hrtimer_events = cfg.hrtimer_events;
    rc.instance.buffer_kb = cfg.buffer_kb;
    rc.instance.stacks = cfg.stacks;
    rc.instance.late.threshold_ns = cfg.threshold_ns;
    rc.instance.late.monotonic = cfg.monotonic;
    rc.instance.late.preemption = cfg.preemption.clone();
    rc
}

/// The eBPF recorder where `cfg` asks for it and it starts; else why not (`None`: not asked).
fn try_rings(
    tfs: &Tracefs,
    cfg: &ExplainConfig,
    rc: &RecorderConfig,
) -> Result<Option<FlightRecorder>, String> {
    if cfg.recorder == RecorderChoice::Tracefs {
        return Ok(None);
    }
    if let Some(why) = bpf_refusal(cfg) {
        return Err(not_used(&why));
    }
    let mut b = rc.clone();
    b.bpf_records = Some(cfg.bpf_records);
    FlightRecorder::start(tfs, b)
        .map(Some)
        .map_err(|e| not_used(&e))
}

/// Picks the tier and starts its recorder, each step not taken said in the reason.
pub(super) fn choose(cfg: &ExplainConfig) -> (Tier, Option<String>, Option<FlightRecorder>) {
    if cfg.force_coarse {
        return (Tier::Coarse, Some("coarse tier requested".into()), None);
    }
    let tfs = match &cfg.tracefs_root {
        Some(root) => Tracefs::at(root.clone()),
        None => Tracefs::discover(),
    };
    let tfs = match tfs {
        Ok(t) => t,
        Err(e) => return (Tier::Coarse, Some(e.to_string()), None),
    };
    let rc = recorder_config(cfg);
    let mut notes: Vec<String> = Vec::new();
    let mut bpf_note = None;
    match try_rings(&tfs, cfg, &rc) {
        Ok(Some(r)) => {
            let note = (tfs.has_timerlat() && !cfg.hrtimer_events).then(|| {
                "timerlat tier not used: the eBPF recorder was asked for (the timerlat tier's \
                 events are the timerlat tracer's own, in tracefs)"
                    .to_string()
            });
            return (Tier::FlightRecorder, note, Some(r));
        }
        Ok(None) => {}
        Err(why) => {
            notes.push(why.clone());
            bpf_note = Some(why);
        }
    }
    let said = |notes: &[String]| (!notes.is_empty()).then(|| notes.join("; "));
    if tfs.has_timerlat() && !cfg.hrtimer_events {
        match crate::timerlat::in_use(&tfs) {
            Some(other) => notes.push(format!("timerlat tier not used: {other}")),
            None => {
                let mut t = rc.clone();
                t.instance.timerlat = true;
                match FlightRecorder::start(&tfs, t) {
                    Ok(r) => return (Tier::Timerlat, said(&notes), Some(r)),
                    Err(e) => notes.push(format!("timerlat tier not used: {e}")),
                }
            }
        }
    }
    match FlightRecorder::start(&tfs, rc) {
        Ok(r) => (Tier::FlightRecorder, said(&notes), Some(r)),
        // As before the eBPF recorder: the reason tracefs failed (and why not eBPF).
        Err(e) => {
            let notes: Vec<String> = bpf_note.into_iter().chain([e.to_string()]).collect();
            (Tier::Coarse, said(&notes), None)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::explain::Explainer;

    #[test]
    fn what_only_the_trace_events_give_keeps_a_run_from_the_ebpf_recorder() {
        let mut cfg = ExplainConfig::new(1000, vec![0], StackChoice::Off);
        assert_eq!(cfg.recorder, RecorderChoice::Tracefs);
        assert_eq!(bpf_refusal(&cfg), None);
        cfg.stacks = StackChoice::Every;
        assert_eq!(
            bpf_refusal(&cfg),
            None,
            "tracefs asked for: nothing refused"
        );
        for choice in [RecorderChoice::Bpf, RecorderChoice::Auto] {
            cfg.recorder = choice;
            let why = bpf_refusal(&cfg).expect("stacks at every wake-up");
            assert!(why.contains("stacktrace triggers"), "{why}");
            cfg.stacks = StackChoice::Auto;
            assert_eq!(
                bpf_refusal(&cfg),
                None,
                "late-only stacks: their own programs"
            );
            cfg.hrtimer_events = true;
            assert!(bpf_refusal(&cfg).unwrap().contains("hrtimer"));
            cfg.hrtimer_events = false;
            cfg.stacks = StackChoice::Every;
        }
        let words: Vec<_> = [
            RecorderChoice::Tracefs,
            RecorderChoice::Bpf,
            RecorderChoice::Auto,
        ]
        .map(RecorderChoice::name)
        .into();
        assert_eq!(words, ["tracefs", "ebpf", "auto"]);
    }

    /// Where the eBPF recorder was asked for and cannot start (here: rings of 1,000 records,
    /// not a power of two; stacks at every wake-up), the tracefs recorder runs and the tier
    /// reason, the tier line and what the run records name it and say why.
    #[test]
    fn an_ebpf_recorder_that_cannot_start_falls_back_to_tracefs_and_says_why() {
        rtscope_testkit::require!(rtscope_testkit::is_root(), "root: tracefs");
        let tfs = Tracefs::discover();
        rtscope_testkit::require!(tfs.is_ok(), "tracefs: {:?}", tfs.err());
        let mut cfg = ExplainConfig::new(1_000_000, vec![0], StackChoice::Off);
        cfg.recorder = RecorderChoice::Bpf;
        cfg.bpf_records = 1000;
        let ex = Explainer::start(cfg.clone());
        assert_eq!(ex.tier(), Tier::FlightRecorder, "{:?}", ex.tier_reason());
        let why = ex.tier_reason().expect("a reason");
        assert!(
            why.starts_with("eBPF recorder not used, tracefs instead: ")
                && why.contains("1000 records"),
            "{why}"
        );
        assert!(ex.observed().recorder.starts_with("tracefs instance"));
        assert!(!ex.observed().events.is_empty());
        let line = ex.tier_line("spikes");
        assert!(
            line.contains("eBPF recorder not used") && line.contains("recorder: tracefs instance"),
            "{line}"
        );
        drop(ex.finish(std::time::Duration::ZERO));
        cfg.recorder = RecorderChoice::Auto;
        cfg.bpf_records = 1 << 12;
        cfg.stacks = StackChoice::Every;
        let ex = Explainer::start(cfg);
        let why = ex.tier_reason().unwrap_or_default().to_string();
        assert!(
            why.contains("eBPF recorder not used, tracefs instead: stacks at every wake-up"),
            "{why}"
        );
        assert!(ex.observed().recorder.starts_with("tracefs instance"));
    }
}
