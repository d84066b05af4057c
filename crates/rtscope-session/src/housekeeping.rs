//! rtscope's own threads during a run — the control thread (it drains the sample rings,
//! records checkpoints and series points, prints live output, analyses the spikes), the
//! monitor thread and `--explain`'s trace reader — and how steadily they keep their cadence.
//!
//! Under load a SCHED_OTHER housekeeping thread can wait seconds for a CPU: series points then
//! stretch to 2–3 s, the monitor skips and bunches samples. So by default both run at
//! SCHED_FIFO [`DEFAULT_PRIORITY`] (1): above every normal task and load, below every measuring
//! thread (a housekeeping thread must never delay a wake-up it measures). They do so only when
//! every measuring thread is real-time at a higher priority; otherwise (`--policy other`, or a
//! measuring priority of 1) they stay SCHED_OTHER. `--housekeeping-prio N` changes the
//! priority, `--housekeeping-prio off` keeps them SCHED_OTHER. The policy is set with
//! `SCHED_RESET_ON_FORK`: loads, programs and threads started from the control thread start
//! as SCHED_OTHER, never inherit it; the control thread takes its priority before it sets up
//! `--explain`'s tracing (a campaign's loads already run then) and goes back to SCHED_OTHER once the
//! measurement and the spikes' analysis have ended (the loads run until then). Which CPUs they run on is [`crate::placement`]'s: the housekeeping CPUs,
//! never a measured one. What was applied and the cadence gaps (periods
//! more than 1.5× the planned one) of the control thread's ticks and of the monitor samples are stored in
//! the run's environment (`rtscope.housekeeping`, `rtscope.cadence.control`,
//! `rtscope.cadence.monitor`) and reported.

use rtscope_core::Nanos;
use rtscope_engine::{Policy, RunConfig};

/// The default real-time priority of the housekeeping threads (SCHED_FIFO).
pub const DEFAULT_PRIORITY: i32 = 1;

/// A period this many times longer than planned is a cadence gap.
pub const LATE_FACTOR: f64 = 1.5;

/// How the housekeeping threads are scheduled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Housekeeping {
    /// SCHED_OTHER: asked for (`off`), or some measuring thread is not real-time above it.
    Normal(NormalWhy),
    /// SCHED_FIFO at this priority.
    Fifo(i32),
}

/// Why the housekeeping threads stay SCHED_OTHER.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NormalWhy {
    /// `--housekeeping-prio off`.
    Asked,
    /// A measuring thread is not SCHED_FIFO/RR above the housekeeping priority.
    MeasuringNotAbove,
}

impl Housekeeping {
    /// The scheduling for a run of `config` when `asked` (`None`: off).
    pub fn for_run(asked: Option<i32>, config: &RunConfig) -> Housekeeping {
        Housekeeping::for_threads(asked, config.threads.iter().map(|t| (t.policy, t.priority)))
    }

    /// The scheduling when `asked` (`None`: off) for measuring threads of these policies and
    /// priorities: FIFO `asked` only when every one is SCHED_FIFO/RR at a higher priority.
    pub fn for_threads(
        asked: Option<i32>,
        threads: impl IntoIterator<Item = (Policy, i32)>,
    ) -> Housekeeping {
        let Some(p) = asked else {
            return Housekeeping::Normal(NormalWhy::Asked);
        };
        let mut any = false;
        let above = threads.into_iter().all(|(policy, prio)| {
            any = true;
            policy.is_realtime_priority() && prio > p
        });
        if above && any {
            Housekeeping::Fifo(p)
        } else {
            Housekeeping::Normal(NormalWhy::MeasuringNotAbove)
        }
    }

    /// Applies this to the calling thread (with `SCHED_RESET_ON_FORK`); returns what holds
    /// (an error is described, never fatal: the thread then keeps its policy).
    pub fn apply_current(self) -> String {
        match self {
            Housekeeping::Fifo(p) => match set_current(libc::SCHED_FIFO, p) {
                Ok(()) => format!("fifo {p}"),
                Err(e) => format!("other (fifo {p} failed: {e})"),
            },
            Housekeeping::Normal(NormalWhy::Asked) => "other (--housekeeping-prio off)".into(),
            Housekeeping::Normal(NormalWhy::MeasuringNotAbove) => {
                "other (a measuring thread is not real-time above it)".into()
            }
        }
    }
}

/// Puts the calling thread back to SCHED_OTHER (after [`Housekeeping::apply_current`]).
pub fn reset_current() {
    let _ = set_current(libc::SCHED_OTHER, 0);
}

fn set_current(policy: libc::c_int, priority: i32) -> std::io::Result<()> {
    // SAFETY: sched_param is plain data; zeroing covers musl's extra fields.
    let mut param: libc::sched_param = unsafe { std::mem::zeroed() };
    param.sched_priority = priority;
    let policy = policy | libc::SCHED_RESET_ON_FORK;
    // SAFETY: pthread_self() is the calling thread; `param` is a valid sched_param.
    let rc = unsafe { libc::pthread_setschedparam(libc::pthread_self(), policy, &param) };
    match rc {
        0 => Ok(()),
        e => Err(std::io::Error::from_raw_os_error(e)),
    }
}

/// Counts the gaps in a periodic thread's cadence: periods longer than [`LATE_FACTOR`] × the
/// planned one. Times (ns on any one clock) are handed in, so the counting is tested without
/// sleeping.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cadence {
    period: Nanos,
    last: Option<Nanos>,
    /// Periods seen.
    pub periods: u64,
    /// Of those, the late ones.
    pub late: u64,
    /// The longest period seen.
    pub longest: Nanos,
}

impl Cadence {
    /// A cadence of `period`.
    pub fn new(period: Nanos) -> Cadence {
        Cadence {
            period,
            last: None,
            periods: 0,
            late: 0,
            longest: Nanos::ZERO,
        }
    }

    /// The thread did its periodic work at `now`.
    pub fn tick(&mut self, now: Nanos) {
        if let Some(last) = self.last.replace(now) {
            let gap = Nanos(now.0.saturating_sub(last.0));
            self.periods += 1;
            self.longest = self.longest.max(gap);
            if gap.0 as f64 > self.period.0 as f64 * LATE_FACTOR {
                self.late += 1;
            }
        }
    }

    /// `periods=N late=M longest=X period=P` for the run's environment.
    pub fn describe(&self) -> String {
        format!(
            "periods={} late={} longest={} period={}",
            self.periods,
            self.late,
            rtscope_core::text::short(self.longest),
            rtscope_core::text::short(self.period)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gaps_longer_than_one_and_a_half_periods_are_counted() {
        let mut c = Cadence::new(Nanos::from_ms(1000));
        for ms in [0, 1000, 2000, 3400, 6000, 7000, 7100] {
            c.tick(Nanos::from_ms(500 + ms));
        }
        assert_eq!((c.periods, c.late), (6, 1), "only the 2.6 s gap is late");
        assert_eq!(c.longest, Nanos::from_ms(2600));
        assert_eq!(c.describe(), "periods=6 late=1 longest=2600ms period=1s");
    }

    #[test]
    fn fifo_only_below_every_measuring_thread() {
        let mut c = vec![(Policy::Fifo, 90), (Policy::Fifo, 80)];
        let hk = |asked, c: &[(Policy, i32)]| Housekeeping::for_threads(asked, c.iter().copied());
        assert_eq!(hk(Some(1), &c), Housekeeping::Fifo(1));
        let not_above = Housekeeping::Normal(NormalWhy::MeasuringNotAbove);
        assert_eq!(hk(Some(80), &c), not_above);
        assert_eq!(hk(None, &c), Housekeeping::Normal(NormalWhy::Asked));
        assert_eq!(hk(Some(1), &[]), not_above);
        c.push((Policy::Other, 0));
        assert_eq!(hk(Some(1), &c), not_above);
    }
}
