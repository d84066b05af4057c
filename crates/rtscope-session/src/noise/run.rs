//! Driving a noise run and its text: the loop that drains the gap rings (feeding a live
//! explainer) until the run ends or a stop signal comes, the per-CPU table, the limit lines.
//! [`super::NoiseSession`] drives the loops with these; front ends print the text.

use super::kept::KeptGaps;
use super::platform::{PlatformCounters, PlatformTotals};
use super::record::NoiseRecorder;
use super::{CpuNoise, NoiseCheck, NoiseExplainer};
use rtscope_core::text::{count, short, us_or_dash};
use rtscope_core::Nanos;
use rtscope_engine::noise::{Gap, NoiseConfig, NoiseRun, NoiseThread, Threshold};
use rtscope_engine::{sys, Wake};
use rtscope_explain::book::ExplainSummary;
use serde_json::json;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::time::SystemTime;

/// How often the gap rings are drained.
pub const DRAIN_EVERY: Nanos = Nanos::from_ms(100);

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
        for (i, (sh, kept)) in run.threads().iter().zip(gaps.iter_mut()).enumerate() {
            fresh.clear();
            sh.ring().drain(|gap| fresh.push(gap));
            // Live: attributed now; deferred: queued, which keeps their trace to the end.
            if let Some(x) = explain.as_mut() {
                x.push(cpus[i], sh.tid(), &fresh);
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

/// The per-CPU table, `rtla osnoise top`'s columns (the settings its notes name spelt the
/// front end's way).
pub fn table(rows: &[CpuNoise], naming: crate::field::Naming) -> String {
    let n = |f: crate::field::Field| naming.name(f);
    let mut s = format!(
        "{:>4} {:>10} {:>12} {:>11} {:>11} {:>9} {:>9} {:>10} {:>8} {:>5}\n",
        "CPU",
        "RUNTIME",
        "NOISE",
        "AVAILABLE",
        "MAX SINGLE",
        "GAPS>THR",
        "ITER/S",
        "RESOLUTION",
        "STEAL",
        "SMI"
    );
    for r in rows {
        s.push_str(&format!(
            "{:>4} {:>10} {:>12} {:>11} {:>11} {:>9} {:>9} {:>10} {:>8} {:>5}\n",
            r.cpu,
            short(Nanos(r.runtime_ns / 1_000_000 * 1_000_000)),
            time_cell(r.noise_ns),
            r.available_percent
                .map_or("unknown".into(), |p| format!("{p:.5}%")),
            r.max_single_ns.map_or("-".into(), time_cell),
            r.gaps_over_threshold,
            r.iterations_per_s.map_or("-".into(), count),
            r.resolution_ns.map_or("-".into(), |v| format!("{v}ns")),
            r.platform
                .steal_ns
                .map_or("-".into(), |v| format!("{}ms", v / 1_000_000)),
            r.platform.smis.map_or("-".into(), |v| v.to_string()),
        ));
    }
    let dropped: u64 = rows.iter().map(|r| r.gaps_dropped).sum();
    if dropped > 0 {
        s.push_str(&format!(
            "{dropped} gaps over the threshold were counted but not kept (the ring was full: raise {})\n",
            n(crate::field::Field::GapCapacity)
        ));
    }
    let not_kept: u64 = rows.iter().map(|r| r.gaps_not_kept).sum();
    if not_kept > 0 {
        s.push_str(&format!(
            "{not_kept} shorter gaps over the threshold were counted but not kept (only the longest {} per CPU are)\n",
            n(crate::field::Field::KeepGaps)
        ));
    }
    s.push_str("RESOLUTION is the loop's shortest gap: one counter read and a histogram store.\n");
    s
}

/// A time of the table with its unit, in the unit that keeps it short: µs below 1 ms
/// (`412.3us`), ms below 1 s (`35.412ms`), seconds above (`8.792s`, not `8791850.0us`).
pub fn time_cell(ns: u64) -> String {
    match ns {
        0..=999_999 => format!("{}us", us_or_dash(Some(Nanos(ns)))),
        1_000_000..=999_999_999 => format!("{:.3}ms", ns as f64 / 1e6),
        _ => format!("{:.3}s", ns as f64 / 1e9),
    }
}

/// The limit verdicts, one line each.
pub fn render_checks(checks: &[NoiseCheck]) -> String {
    checks
        .iter()
        .map(|c| {
            let verdict = if c.passed { "pass" } else { "FAIL" };
            format!(
                "limit {}: CPU {} {} = {} (limit {})\n",
                verdict, c.cpu, c.stat, c.value, c.limit
            )
        })
        .collect()
}

/// What the loops read, its calibrated rate, and why `--counter auto` did not take the raw
/// counter when it did not.
pub fn counter_line(asked_auto: bool, run: &NoiseRun) -> String {
    let kind = run.counter();
    let mut line = format!("noise: the loops read {}", kind.name());
    let hz: Vec<f64> = run.counter_hz().into_iter().flatten().collect();
    if let (Some(lo), Some(hi)) = (
        hz.iter().copied().reduce(f64::min),
        hz.iter().copied().reduce(f64::max),
    ) {
        line.push_str(&format!(" at {:.6} GHz", lo / 1e9));
        if hi - lo > 1e-6 * lo {
            line.push_str(&format!(" to {:.6} GHz", hi / 1e9));
        }
    }
    if asked_auto && kind == rtscope_engine::noise::CounterKind::Clock {
        let probe = rtscope_engine::noise::CounterProbe::read(std::path::Path::new("/"));
        if let Some(why) = probe.auto_note() {
            line.push_str(&format!(" (not the raw counter: {why})"));
        }
    }
    line
}
