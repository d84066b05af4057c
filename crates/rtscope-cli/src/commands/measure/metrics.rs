//! `--metrics-file`: the live threads' statistics handed to the fleet's textfile writer, which
//! works on plain data (the fleet crate does not link the engine).

use rtscope_engine::{Run, RunResult};
use rtscope_formats::metrics_file::{unix_s, MetricsFile};
use rtscope_store::RunStatus;
use std::time::SystemTime;

/// At a tick: the threads' statistics so far.
pub fn update(m: &mut MetricsFile, run: &Run) {
    let threads = run.threads().iter().enumerate().map(|(i, t)| {
        (
            i as u32,
            t.cpu().map(|c| c as u32),
            t.stats(),
            t.histogram(),
        )
    });
    let measured = run.started().elapsed().map_or(0.0, |d| d.as_secs_f64());
    let now = unix_s(SystemTime::now());
    m.put(threads, measured, now, RunStatus::Running);
}

/// At the end: the final statistics.
pub fn finish(m: &mut MetricsFile, result: &RunResult, interrupted: bool) {
    let threads = result.threads.iter().map(|t| {
        (
            t.index as u32,
            t.cpu.map(|c| c as u32),
            t.stats,
            t.histogram.clone(),
        )
    });
    let measured = result
        .ended
        .duration_since(result.started)
        .map_or(0.0, |d| d.as_secs_f64());
    let status = if interrupted {
        RunStatus::Interrupted
    } else {
        RunStatus::Complete
    };
    m.put(threads, measured, unix_s(result.ended), status);
}
