//! `--explain`: the worst wake-up of every window charged to what ran on its CPU, by the same
//! explainer as `rtscope measure --explain` (a private tracefs instance: the flight recorder,
//! or timerlat on PREEMPT_RT; the monitors' coarse tier where tracefs is not usable). The
//! trace is a ring buffer per measured CPU, so its cost is bounded and only the trace around
//! each window's worst wake-up is looked at: one spike per CPU per window is handed over, and
//! its explanation reaches the window's row when the trace has passed it (within about 2 s).

use crate::roller::Closed;
use rtscope_core::Nanos;
use rtscope_engine::CpuSet;
use rtscope_explain::book::Explained;
use rtscope_explain::model::Spike;
use rtscope_explain::render;
use rtscope_session::housekeeping::{Housekeeping, NormalWhy};
use rtscope_session::smi_sampler::SmiState;
use rtscope_trace::explain::{ExplainConfig, Explainer};
use std::path::Path;
use std::time::{Duration, Instant};

/// Windows whose worst wake-up still waits for its explanation, at most.
const MAX_ASKED: usize = 256;

/// A window's worst wake-up, explained.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    /// The window's start (Unix ns).
    pub start_ns: i64,
    /// Its CPU.
    pub cpu: u32,
    /// The wake-up's latency.
    pub latency: Nanos,
    /// The largest causes, largest first: label and time.
    pub causes: Vec<(String, Nanos)>,
    /// The whole explanation (JSON, as `runs explain` stores it).
    pub json: String,
}

/// The explainer of a watch session.
pub struct WindowExplainer {
    ex: Explainer,
    threshold: Nanos,
    /// (CPU, wake-up on the trace clock, window start).
    asked: Vec<(usize, u64, i64)>,
    /// The SMIs placed in time for the worst wake-ups (rtscope-session's sampler).
    smi: SmiState,
}

fn spike_of(e: &Explained) -> &Spike {
    match e {
        Explained::Traced(a) => &a.spike,
        Explained::Coarse(c) => &c.spike,
    }
}

fn causes(e: &Explained) -> Vec<(String, Nanos)> {
    match e {
        Explained::Traced(a) => a
            .charges
            .iter()
            .take(3)
            .map(|c| (render::label(&c.category), Nanos(c.ns)))
            .collect(),
        // The monitors name no time: their busiest thread is a lead, not a charge.
        Explained::Coarse(_) => Vec::new(),
    }
}

impl WindowExplainer {
    /// Starts tracing `cpus` (the reader on `housekeeping`); wake-ups at or above `threshold`
    /// are explained. Before the measuring threads start: its reaper is forked while the
    /// process is small and not real-time.
    pub fn start(threshold: Nanos, cpus: Vec<usize>, housekeeping: Vec<usize>) -> Self {
        // At SCHED_OTHER: a late read widens the interval an SMI is placed in, never hides it.
        let normal = Housekeeping::Normal(NormalWhy::Asked);
        let ours = CpuSet::from_cpus(housekeeping.iter().copied());
        let smi = SmiState::start(Path::new("/"), Some(&ours), &cpus, normal);
        let mut cfg = ExplainConfig::new(threshold.0, cpus);
        cfg.housekeeping = housekeeping;
        let mut ex = Explainer::start(cfg);
        ex.keep_explained();
        WindowExplainer {
            ex,
            threshold,
            asked: Vec::new(),
            smi,
        }
    }

    /// The tier in use, with the reason it is not better.
    pub fn tier_line(&self) -> String {
        self.smi
            .with_line(self.ex.tier_line("each window's worst wake-up"))
    }

    /// Hands over the worst wake-up of each CPU's row of `closed` at or above the threshold;
    /// `tid` gives the measuring thread of a CPU.
    pub fn ask(&mut self, closed: &Closed, tid: impl Fn(u32) -> Option<i32>) {
        for (w, worst) in closed.windows.iter().zip(&closed.worst) {
            let (Some(cpu), Some(worst)) = (w.cpu, worst) else {
                continue;
            };
            if worst.latency < self.threshold {
                continue;
            }
            let Some(tid) = tid(cpu) else { continue };
            if self.asked.len() >= MAX_ASKED {
                self.asked.remove(0);
            }
            self.asked.push((cpu as usize, worst.mono_ns, w.start_ns));
            let deadline_ns = worst.mono_ns.saturating_sub(worst.latency.0);
            self.ex.push_spike(Spike {
                cpu: cpu as usize,
                tid,
                deadline_ns,
                wakeup_ns: worst.mono_ns,
                smis: self.smi.smis_over(deadline_ns, worst.mono_ns),
            });
        }
    }

    /// The windows whose worst wake-up was explained since the last call.
    pub fn poll(&mut self) -> Vec<Found> {
        self.ex.poll();
        self.found()
    }

    /// At the end of a session: waits up to `patience` for the last traces, then gives the
    /// rest the monitors' explanation.
    pub fn drain(&mut self, patience: Duration) -> Vec<Found> {
        let until = Instant::now() + patience;
        while self.ex.pending() > 0 && Instant::now() < until {
            self.ex.poll();
            std::thread::sleep(Duration::from_millis(20));
        }
        self.ex.give_up();
        self.found()
    }

    fn found(&mut self) -> Vec<Found> {
        let mut out = Vec::new();
        for e in self.ex.take_explained() {
            let s = spike_of(&e);
            let Some(i) = self
                .asked
                .iter()
                .position(|&(c, w, _)| c == s.cpu && w == s.wakeup_ns)
            else {
                continue;
            };
            let (cpu, _, start_ns) = self.asked.remove(i);
            out.push(Found {
                start_ns,
                cpu: cpu as u32,
                latency: Nanos(s.latency_ns()),
                causes: causes(&e),
                json: serde_json::to_string(&e).unwrap_or_default(),
            });
        }
        out
    }
}
