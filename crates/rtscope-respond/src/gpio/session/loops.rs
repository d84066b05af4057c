//! The three thread loops of a GPIO measurement: the responder (wait on I, read the clock,
//! answer on R, read the clock, store), the watcher (kernel timestamps on J and K) and the
//! stimulus (edges on O on a grid of deadlines).

use super::{Interval, Responder, Shared, DRAIN, POLL};
use crate::gpio::{Edge, GpioConfig, InputLine, OutputLine};
use rtscope_core::Nanos;
use rtscope_engine::{sys, Recorder, Sample};
use std::sync::atomic::Ordering::*;

fn now(clock: Option<libc::clockid_t>) -> u64 {
    clock.map_or(0, |c| sys::now(c).0)
}

/// Whether a waiting thread should end: stopped, or the stimulus is done and nothing came for
/// [`DRAIN`], or an external count is reached.
fn should_end(
    sh: &Shared,
    c: &GpioConfig,
    idle_since: &mut Option<std::time::Instant>,
    got: u64,
) -> bool {
    if sh.stop.load(Acquire) {
        return true;
    }
    if c.stimulus.is_none() {
        if c.count.is_some_and(|n| got >= n) || sys::now(libc::CLOCK_MONOTONIC).0 >= sh.end_ns {
            sh.stop.store(true, Release);
            return true;
        }
        return false;
    }
    if !sh.stimulus_done.load(Acquire) {
        *idle_since = None;
        return false;
    }
    let since = idle_since.get_or_insert_with(std::time::Instant::now);
    since.elapsed() >= DRAIN
}

fn slot_of(interval: Interval, edge: Edge) -> usize {
    Interval::ALL
        .iter()
        .position(|x| *x == interval)
        .unwrap_or(0)
        * 2
        + usize::from(edge == Edge::Falling)
}

type Recorders<'a> = [Option<Recorder<'a>>; 10];

/// The recorders of `intervals` this thread writes (each interval has exactly one writer).
fn recorders<'a>(sh: &'a Shared, intervals: &[Interval]) -> Recorders<'a> {
    let mut recs: Recorders<'a> = Default::default();
    for &i in intervals {
        for e in [Edge::Rising, Edge::Falling] {
            if let Some(t) = sh.recorder(i, e) {
                recs[slot_of(i, e)] = Some(Recorder::start(t, None));
            }
        }
    }
    recs
}

#[inline(always)]
fn record(recs: &mut Recorders<'_>, interval: Interval, edge: Edge, seq: u32, value: u64, at: u64) {
    if let Some(r) = &mut recs[slot_of(interval, edge)] {
        r.record(Sample {
            cycle: u64::from(seq),
            latency: Nanos(value),
            time: Nanos(at),
        });
    }
}

/// rtscope's responder: wait on I, read the clock, answer on R, read the clock, store.
pub(super) fn respond<I: InputLine, O: OutputLine>(
    sh: &Shared,
    mut input: I,
    mut response: Option<O>,
    c: &GpioConfig,
) {
    let clock = c.options.clock.clock_id();
    let mut recs = recorders(
        sh,
        &[
            Interval::StimulusToTimestamp,
            Interval::TimestampToWake,
            Interval::WakeToResponse,
        ],
    );
    let (mut last, mut got, mut idle) = (0u32, 0u64, None);
    loop {
        match input.wait(POLL) {
            Ok(true) => {}
            Ok(false) if should_end(sh, c, &mut idle, got) => break,
            Ok(false) => continue,
            Err(e) => return sh.fail(e),
        }
        let woke = now(clock);
        let ev = match input.read() {
            Ok(ev) => ev,
            Err(e) => return sh.fail(e),
        };
        let mut answered = None;
        if let Some(r) = &mut response {
            Shared::slot(&sh.input_ts, ev.line_seqno).store(ev.timestamp.0, Release);
            if let Err(e) = r.set(ev.edge.level()) {
                return sh.fail(e);
            }
            answered = Some(now(clock));
        }
        idle = None;
        got += 1;
        sh.input.count(&ev, &mut last);
        let (seq, ts) = (ev.line_seqno, ev.timestamp.0);
        if clock.is_some() {
            record(
                &mut recs,
                Interval::TimestampToWake,
                ev.edge,
                seq,
                woke.saturating_sub(ts),
                woke,
            );
            if c.stimulus.is_some() {
                let sent = Shared::slot(&sh.stim_time, seq).load(Acquire);
                record(
                    &mut recs,
                    Interval::StimulusToTimestamp,
                    ev.edge,
                    seq,
                    ts.saturating_sub(sent),
                    woke,
                );
            }
        }
        if let Some(t) = answered {
            record(
                &mut recs,
                Interval::WakeToResponse,
                ev.edge,
                seq,
                t.saturating_sub(woke),
                t,
            );
        }
        if c.stimulus.is_none() && should_end(sh, c, &mut None, got) {
            break;
        }
    }
}

/// The watcher: kernel timestamps on J (and K), paired with ts(I) by sequence number.
pub(super) fn watch_loop<I: InputLine>(sh: &Shared, mut input: I, c: &GpioConfig) {
    let offsets = input.offsets();
    let k_offset = (offsets.len() == 2).then(|| offsets[0]);
    let own = c.responder == Responder::Own;
    let mut recs = recorders(sh, &[Interval::Response, Interval::StimulusToResponse]);
    let (mut last_j, mut last_k, mut idle) = (0u32, 0u32, None);
    loop {
        match input.wait(POLL) {
            Ok(true) => {}
            Ok(false) if should_end(sh, c, &mut idle, 0) => break,
            Ok(false) => continue,
            Err(e) => return sh.fail(e),
        }
        let ev = match input.read() {
            Ok(ev) => ev,
            Err(e) => return sh.fail(e),
        };
        idle = None;
        let ts = ev.timestamp.0;
        if Some(ev.offset) == k_offset {
            last_k = ev.line_seqno;
            Shared::slot(&sh.input_ts, ev.line_seqno).store(ts, Release);
            continue;
        }
        sh.watch.count(&ev, &mut last_j);
        let seq = ev.line_seqno;
        if own || k_offset.is_some() {
            if k_offset.is_some() && last_k < seq {
                continue; // the stimulus edge for this response was not seen on K
            }
            let t_i = Shared::slot(&sh.input_ts, seq).load(Acquire);
            record(
                &mut recs,
                Interval::Response,
                ev.edge,
                seq,
                ts.saturating_sub(t_i),
                ts,
            );
        } else {
            let sent = Shared::slot(&sh.stim_time, seq).load(Acquire);
            record(
                &mut recs,
                Interval::StimulusToResponse,
                ev.edge,
                seq,
                ts.saturating_sub(sent),
                ts,
            );
        }
    }
}

/// The stimulus: a rising edge on O every interval, a falling one half an interval later.
pub(super) fn stimulate<O: OutputLine>(sh: &Shared, mut out: O, c: &GpioConfig) {
    let clock = c.options.clock.clock_id().unwrap_or(libc::CLOCK_MONOTONIC);
    let half = Nanos(c.interval.0 / 2);
    let start = sys::now(libc::CLOCK_MONOTONIC);
    let end = c.duration.map_or(u64::MAX, |d| (start + d).0);
    let mut deadline = sys::Deadline::new(start + c.interval, half);
    let (mut seq, mut edges) = (0u32, 0u64);
    let mut level = false;
    let periods = c.count.unwrap_or(u64::MAX);
    while edges < periods.saturating_mul(2) && deadline.ns() < end && !sh.stop.load(Acquire) {
        deadline.sleep(libc::CLOCK_MONOTONIC);
        level = !level;
        let edge = if level { Edge::Rising } else { Edge::Falling };
        let t = sys::now(clock).0;
        if c.options.edges.includes(edge) {
            seq = seq.wrapping_add(1);
            Shared::slot(&sh.stim_time, seq).store(t, Release);
        }
        if let Err(e) = out.set(level) {
            return sh.fail(e);
        }
        edges += 1;
        sh.stimulus_edges.store(edges, Release);
        deadline.advance();
    }
    if level && !sh.stop.load(Acquire) {
        // End low, so a rerun starts from the same level; the edge is measured like the others.
        sys::sleep_until(libc::CLOCK_MONOTONIC, Nanos(deadline.ns()));
        if c.options.edges.includes(Edge::Falling) {
            seq = seq.wrapping_add(1);
            Shared::slot(&sh.stim_time, seq).store(sys::now(clock).0, Release);
        }
        if out.set(false).is_ok() {
            sh.stimulus_edges.store(edges + 1, Release);
        }
    }
    sh.stimulus_done.store(true, Release);
}
