//! A run waits for its loads to work before it settles and measures. A load is started when
//! its program runs, but a program may take long before it loads anything (seed 002: a load
//! that took 50 s to start made an 8-second run take 62 s, without a word): the run says that
//! it waits, for which load and how long, and each load's wait is recorded with the run (the
//! load's `start_wait` metric, seconds). Whether a load works is the CPU time of its processes
//! (rtscope_load::working).

use rtscope_common::clock::Clock;
use rtscope_load::working::WORKING_CPU;
use rtscope_load::RunningLoads;
use std::io::{self, Write};
use std::time::Duration;

/// A wait shorter than this is recorded without a word.
const SAY_AFTER: Duration = Duration::from_secs(1);
/// How often a long wait is said again.
const SAY_EVERY: Duration = Duration::from_secs(10);
/// How often the loads are looked at.
const POLL: Duration = Duration::from_millis(200);

/// Waits until every load of `loads` (named `names`, in order) has worked, or ended (its
/// report says how), or `most` passed (the campaign's `load_start`; zero: no wait, nothing
/// recorded); a wait over a second is said on `out`, headed `head`. Records each load's wait
/// (`most` for one that did no work). Returns the stop signal that ended the wait.
pub(crate) fn wait_for_loads(
    loads: &mut RunningLoads,
    (names, most): (&[String], Duration),
    head: &str,
    clock: &dyn Clock,
    out: &mut dyn Write,
) -> io::Result<Option<i32>> {
    if most.is_zero() {
        return Ok(None);
    }
    let t0 = clock.now();
    let mut pending: Vec<usize> = (0..names.len()).collect();
    let mut said: Option<Duration> = None;
    loop {
        let waited = clock.now().saturating_duration_since(t0);
        let cpu = loads.cpu_used();
        let mut started = Vec::new();
        pending.retain(|&i| match cpu.get(i).copied().flatten() {
            Some(t) if t >= WORKING_CPU => {
                started.push(i);
                false
            }
            Some(_) => true,
            None => false, // ended: its report says how
        });
        for i in started {
            loads.set_start_wait(i, waited);
            if said.is_some() {
                writeln!(
                    out,
                    "{head}: load {} started working after {:.1} s",
                    names[i],
                    waited.as_secs_f64()
                )?;
            }
        }
        let Some(&first) = pending.first() else {
            return Ok(None);
        };
        if waited >= most {
            for &i in &pending {
                loads.set_start_wait(i, waited);
                writeln!(
                    out,
                    "{head}: load {} did no work within {:.0} s: measured anyway, the wait recorded (load_start sets the wait)",
                    names[i],
                    most.as_secs_f64()
                )?;
            }
            return Ok(None);
        }
        if waited >= SAY_AFTER && said.is_none_or(|s| waited >= s + SAY_EVERY) {
            writeln!(
                out,
                "{head}: waiting for load {} to start ({} s)…",
                names[first],
                waited.as_secs()
            )?;
            said = Some(waited);
        }
        if let Some(s) = clock.wait_signal(POLL) {
            if rtscope_common::signals::is_stop_signal(s) {
                return Ok(Some(s));
            }
        }
    }
}
