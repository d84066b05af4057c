//! Driving a noise run: the loop that drains the gap rings (feeding a live explainer) until the
//! run ends or a stop signal comes, the configuration it records, the notes on what the loops
//! chose. [`super::NoiseSession`] drives the loops with these; the table, the limit lines and
//! the progress line are rtscope-present's (`noise`), printed by the front ends.

use super::kept::KeptGaps;
use super::platform::{PlatformCounters, PlatformTotals};
use super::record::NoiseRecorder;
use super::{CpuNoise, NoiseExplainer};
use rtscope_core::text::short;
use rtscope_core::Nanos;
use rtscope_engine::noise::{Gap, NoiseConfig, NoiseRun, NoiseThread, Threshold};
use rtscope_engine::{sys, Wake};
use rtscope_explain::book::ExplainSummary;
use serde_json::json;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::time::SystemTime;

/// How often the gap rings are drained.
pub const DRAIN_EVERY: Nanos = Nanos::from_ms(100);

/// The most one drain attributes gaps live ([`NoiseExplainer::push`]) before it writes the
/// checkpoint and looks at the signals again. Unbounded, under load, one drain could attribute
/// for tens of seconds: beside `stress-ng --cpu 4 --io 2 --vm 1` a debug build's 60 s run,
/// sent SIGINT seconds after its start, began its end analysis only at 64.2 s; with this bound
/// its loops stopped after 6.7 s of measuring (29 Nov 2026).
pub const ATTRIBUTE_PER_DRAIN: std::time::Duration = std::time::Duration::from_millis(100);

/// What the run produced.
pub struct Outcome {
    /// Each loop's result.
    pub threads: Vec<NoiseThread>,
    /// Each loop's kept gaps over the threshold (the longest, at most `--keep-gaps`), in time
    /// order.
    pub gaps: Vec<Vec<Gap>>,
    /// Each loop's gaps over the threshold not kept (counted in its totals).
    pub not_kept: Vec<u64>,
    /// The stop signal that ended it early.
    pub signal: Option<i32>,
    /// When the loops stopped (wall clock): the end of the measured time, before the
    /// `--explain` analysis of what was left.
    pub ended: SystemTime,
    /// The `--explain` summary.
    pub explained: Option<ExplainSummary>,
    /// The analysis of the gaps after the loops, when a stop signal or its bound ended it
    /// before every gap was attributed.
    pub analysis_cut: Option<super::analysis::AnalysisCut>,
    /// Steal time and SMIs per CPU over the run.
    pub platform: PlatformTotals,
}

impl Outcome {
    /// Each CPU's summary row, with its steal time and SMIs.
    pub fn rows(&self) -> Vec<CpuNoise> {
        self.threads
            .iter()
            .enumerate()
            .map(|(i, t)| CpuNoise {
                platform: self.platform.cpus.get(i).copied().unwrap_or_default(),
                gaps_not_kept: self.not_kept.get(i).copied().unwrap_or(0),
                ..CpuNoise::of(t)
            })
            .collect()
    }
}

/// Runs the loops to their end or a stop signal, draining the gap rings as it goes (handing
/// the new gaps to the explainer when it analyses live, and to the recorder, which writes a
/// checkpoint about once a second) and keeping the longest `keep` gaps of each loop; `tick`
/// sees the loops after every drain (progress for people).
///
/// A stop signal (SIGINT, SIGTERM, SIGHUP; blocked in every thread, see
/// [`rtscope_common::signals::hold_signals`]) stops the loops at once, whatever the control thread is
/// doing: a watcher thread waits for it, so attributing gaps or writing a checkpoint never
/// keeps the loops spinning. The trace is analysed to its end only after the loops stopped;
/// the run's end ([`Outcome::ended`]) is when they did.
pub fn drive(
    run: NoiseRun,
    (mut explain, announce): (Option<NoiseExplainer>, bool),
    keep: usize,
    mut recorder: Option<&mut NoiseRecorder>,
    tick: &mut dyn FnMut(&NoiseRun),
) -> Outcome {
    let mut gaps: Vec<KeptGaps> = (0..run.threads().len())
        .map(|_| KeptGaps::new(keep))
        .collect();
    let cpus = run.config().cpus.clone();
    let root = std::path::Path::new("/");
    let platform = PlatformCounters::start(root, &cpus);
    // Attributing gaps as they come takes the control thread's time: at the trace reader's
    // priority, so that a load on the housekeeping CPUs cannot hold it off (back after).
    let fifo = explain.as_ref().and_then(NoiseExplainer::live_fifo);
    if let Some(p) = fifo {
        crate::housekeeping::Housekeeping::Fifo(p).apply_current();
    }
    let mut fresh = Vec::new();
    let mut drain = |run: &NoiseRun, gaps: &mut Vec<KeptGaps>| {
        let until = std::time::Instant::now() + ATTRIBUTE_PER_DRAIN;
        for (i, (sh, kept)) in run.threads().iter().zip(gaps.iter_mut()).enumerate() {
            fresh.clear();
            sh.ring().drain(|gap| fresh.push(gap));
            // Live: attributed now; deferred: queued, which keeps their trace to the end.
            if let Some(x) = explain.as_mut() {
                x.push(cpus[i], sh.tid(), &fresh, until);
            }
            if let Some(r) = recorder.as_deref_mut() {
                r.add_gaps(i, &fresh);
            }
            fresh.iter().for_each(|&g| kept.push(g));
        }
        if let Some(r) = recorder.as_deref_mut() {
            r.tick(run.threads(), &cpus);
        }
    };
    let stop = StopWatch::default();
    watched(&run, &stop, &mut || drain(&run, &mut gaps), tick);
    drain(&run, &mut gaps);
    let threads = run.finish();
    let ended = SystemTime::now();
    let platform = platform.finish(root);
    let not_kept = gaps.iter().map(KeptGaps::not_kept).collect();
    let gaps: Vec<Vec<Gap>> = gaps.into_iter().map(KeptGaps::into_sorted).collect();
    let (explained, analysis_cut, late) = analyse_rest(explain, announce);
    if fifo.is_some() {
        crate::housekeeping::reset_current();
    }
    let signal = stop.signal().or(late);
    Outcome {
        threads,
        gaps,
        not_kept,
        signal,
        ended,
        explained,
        analysis_cut,
        platform,
    }
}

/// Drains the loops every [`DRAIN_EVERY`] until they finish, `tick` between two drains, with
/// a watcher thread that stops them at a stop signal whatever the control thread is doing.
fn watched(
    run: &NoiseRun,
    stop: &StopWatch,
    drain: &mut dyn FnMut(),
    tick: &mut dyn FnMut(&NoiseRun),
) {
    std::thread::scope(|s| {
        // Without the watcher (no thread to be had) the control thread takes the signals
        // between two drains, as before.
        let watcher = std::thread::Builder::new()
            .name("rtscope-stop".into())
            .spawn_scoped(s, || stop.watch(run))
            .ok();
        loop {
            let wake = run.wait(DRAIN_EVERY);
            if let Wake::Signal(sig) = wake {
                stop.take(sig, run);
            }
            drain();
            if wake == Wake::Finished {
                break;
            }
            tick(run);
        }
        if let Some(w) = &watcher {
            stop.end(w);
        }
    });
}

/// The analysis of what is left once the loops have stopped ([`NoiseExplainer::finish`]):
/// nobody waits for the signals now, so it looks for a stop signal between its slices, and one
/// that comes before the end of it (or of the trace's teardown) is returned as the run's stop
/// signal (the run is then recorded as interrupted). Returns the summary, the cut when the
/// analysis ended early, and that signal.
fn analyse_rest(
    explain: Option<NoiseExplainer>,
    announce: bool,
) -> (
    Option<ExplainSummary>,
    Option<super::analysis::AnalysisCut>,
    Option<i32>,
) {
    let Some(x) = explain else {
        return (None, None, None);
    };
    let mut stop_now = rtscope_common::signals::pending_stop_signal;
    let (summary, cut) = x.finish(announce, &mut stop_now);
    let signal = cut.and_then(|c| c.signal()).or_else(stop_now);
    (Some(summary), cut, signal)
}

/// The first stop signal of a run, taken by whichever thread waits for it first: the control
/// thread between two drains, or the watcher while the control thread is busy.
#[derive(Default)]
struct StopWatch {
    /// The first stop signal (0: none yet).
    first: AtomicI32,
    /// Set when the loops have ended: the watcher returns.
    done: AtomicBool,
    /// The watcher's thread id (0 until it runs).
    tid: AtomicI32,
}

impl StopWatch {
    /// The watcher's body: waits for the run's signals and stops the loops at the first stop
    /// signal. Woken to return by [`StopWatch::end`] (a signal to its own thread), so it does
    /// not wake on a timer meanwhile.
    fn watch(&self, run: &NoiseRun) {
        self.tid.store(sys::gettid(), Ordering::Release);
        while !self.done.load(Ordering::Acquire) {
            if let Some(sig) = rtscope_common::signals::wait_run_signal(Nanos::from_secs(1)) {
                self.take(sig, run);
            }
        }
    }

    /// Keeps `sig` when it is the first stop signal and stops the loops (a repeated one
    /// changes nothing: the loops are stopping already).
    fn take(&self, sig: i32, run: &NoiseRun) {
        if rtscope_common::signals::is_stop_signal(sig) {
            let _ = self
                .first
                .compare_exchange(0, sig, Ordering::AcqRel, Ordering::Acquire);
            run.stop();
        }
    }

    /// Ends the watcher once the loops have ended.
    fn end(&self, watcher: &std::thread::ScopedJoinHandle<'_, ()>) {
        self.done.store(true, Ordering::Release);
        while !watcher.is_finished() {
            let tid = self.tid.load(Ordering::Acquire);
            if tid != 0 {
                rtscope_common::signals::signal_thread(tid, libc::SIGUSR2);
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }

    fn signal(&self) -> Option<i32> {
        Some(self.first.load(Ordering::Acquire)).filter(|&s| s != 0)
    }
}

/// The run's configuration as the JSON its record keeps: `threshold_ns` is the one the loops
/// ran with (`threshold_requested_ns` the one asked for, `threshold_rule` `given` or
/// `default`, raised to the loops' resolution), `resolution_ns` each loop's shortest gap in
/// its pre-heat, `counter` what the loops read (`clock`, `tsc`, `cntvct`; `clock` names it in
/// full) and `counter_hz` each raw counter's calibrated rate (`null` for the vDSO clock).
pub fn config_json(run: &NoiseRun, keep: usize) -> serde_json::Value {
    let (c, threshold, resolutions) = (run.config(), run.threshold(), run.resolutions());
    let rule = match c.threshold {
        Threshold::Given(_) => "given",
        Threshold::Default(_) => "default",
    };
    json!({
        "cpus": c.cpus, "policy": c.policy.name(), "priority": c.priority,
        "threshold_ns": threshold.0, "threshold_requested_ns": c.threshold.requested().0,
        "threshold_rule": rule, "preheat_ns": c.preheat.0,
        "resolution_ns": resolutions.iter().map(|r| r.0).collect::<Vec<_>>(),
        "runtime_ns": c.runtime.0, "period_ns": c.period.0,
        "duration_ns": c.duration.0, "gap_capacity": c.gap_capacity, "keep_gaps": keep,
        "mlock": c.mlock, "clock": run.counter().name(), "counter": run.counter().short(),
        "counter_hz": run.counter_hz(),
    })
}

/// The run's configuration as its record keeps it from its row's start, before the loops ran
/// their pre-heat (which decides the threshold, the resolution and the counter's rate):
/// replaced by [`config_json`] once they start. A run killed in its set-up keeps this one.
pub fn setup_json(c: &NoiseConfig, keep: usize) -> serde_json::Value {
    json!({
        "cpus": c.cpus, "policy": c.policy.name(), "priority": c.priority,
        "threshold_requested_ns": c.threshold.requested().0, "preheat_ns": c.preheat.0,
        "runtime_ns": c.runtime.0, "period_ns": c.period.0,
        "duration_ns": c.duration.0, "gap_capacity": c.gap_capacity, "keep_gaps": keep,
        "mlock": c.mlock, "set_up": false,
    })
}

/// The line that says the default threshold was raised, and why (the threshold's setting
/// named the front end's way); `None` when it was not.
pub fn raised_threshold_note(
    c: &NoiseConfig,
    threshold: Nanos,
    resolutions: &[Nanos],
    naming: crate::field::Naming,
) -> Option<String> {
    let requested = c.threshold.requested();
    if threshold == requested {
        return None;
    }
    let (cpu, slowest) = c.cpus.iter().zip(resolutions).max_by_key(|(_, r)| **r)?;
    Some(format!(
        "note: threshold raised from the default {} to {}: the loop's resolution on CPU {cpu} is {} ns \
         (its shortest gap in the pre-heat), and a threshold at or near it would count the loop's \
         own iterations as noise; give {} to choose another",
        short(requested),
        short(threshold),
        slowest.0,
        naming.name(crate::field::Field::Threshold)
    ))
}

/// Why `--counter auto` did not take the raw counter, when it was asked to choose and the loops
/// read the vDSO clock (read from the running system's CPU description); `None` otherwise.
pub fn raw_counter_note(asked_auto: bool, run: &NoiseRun) -> Option<String> {
    if !asked_auto || run.counter() != rtscope_engine::noise::CounterKind::Clock {
        return None;
    }
    rtscope_engine::noise::CounterProbe::read(std::path::Path::new("/")).auto_note()
}
