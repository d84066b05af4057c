//! `--explain`: the worst wake-up of every window charged to what ran on its CPU, by the same
//! explainer as `rtscope measure --explain` (a private tracefs instance: the flight recorder,
//! or timerlat on PREEMPT_RT; the monitors' coarse tier where tracefs is not usable). The
//! trace is a ring buffer per measured CPU, so its cost is bounded and only the trace around
//! each window's worst wake-up is looked at. The recorder keeps 3 s of trace, so the running
//! worst of each CPU's open window is handed over as it is seen (at each tick), not when the
//! window closes (a 1-minute window's worst is then up to a minute old: its trace gone); a
//! worse one replaces it ([`crate::asked`]). The window's row gets its worst wake-up's
//! explanation when the trace has passed it (within about 2 s), or the reason there is none
//! ([`Unexplained`]). No kernel stacks are taken ([`explain_config`]).

use crate::asked::{Answer, Explanation, Ledger, Missed};
use crate::cause::{Cause, MAX_CAUSES, MAX_PIDS};
use crate::roller::{Closed, Worst};
use rtscope_core::Nanos;
use rtscope_engine::CpuSet;
use rtscope_explain::book::Explained;
use rtscope_explain::cause::CauseLine;
use rtscope_explain::model::Spike;
use rtscope_explain::model::Tier;
use rtscope_explain::unexplained::Unexplained;
use rtscope_session::explain::TICK_BUDGET;
use rtscope_session::housekeeping::{Housekeeping, NormalWhy};
use rtscope_session::smi_sampler::SmiState;
use rtscope_trace::explain::{ExplainConfig, Explainer};
use rtscope_trace::tracefs::StackChoice;
use std::path::Path;
use std::time::{Duration, Instant};

/// Wake-ups waiting for their explanation, at most (about one per measured CPU and window
/// closed in the last seconds, and the running worst of each open window).
const MAX_ASKED: usize = 256;

/// The explainer of a watch session.
pub struct WindowExplainer {
    ex: Explainer,
    threshold: Nanos,
    /// What was handed over for which window.
    ledger: Ledger,
    /// The SMIs placed in time for the worst wake-ups (rtscope-session's sampler).
    smi: SmiState,
    /// Whether a trace is recorded (else no wake-up can be explained: watch feeds no monitor
    /// samples to the coarse tier).
    tracing: bool,
}

/// The explainer's configuration for a watch: `cpus` traced, the reader on `housekeeping`,
/// and no kernel stacks — a watch neither asks for nor stores them, and the stack triggers
/// would fire at every wake-up of the measured threads.
pub fn explain_config(
    threshold: Nanos,
    cpus: Vec<usize>,
    housekeeping: Vec<usize>,
) -> ExplainConfig {
    let mut cfg = ExplainConfig::new(threshold.0, cpus, StackChoice::Off);
    cfg.housekeeping = housekeeping;
    cfg
}

fn spike_of(e: &Explained) -> &Spike {
    match e {
        Explained::Traced(a) => &a.spike,
        Explained::Coarse(c) => &c.spike,
    }
}

/// The largest causes of an explanation: the charges of one command's threads added up under
/// its name (a command of many short-lived threads is one cause, not one per PID).
pub fn causes(e: &Explained) -> Vec<Cause> {
    let Explained::Traced(a) = e else {
        // The monitors name no time: their busiest thread is a lead, not a charge.
        return Vec::new();
    };
    let mut out: Vec<Cause> = Vec::new();
    // Charges come largest first, so each cause's PIDs do too.
    for c in &a.charges {
        let name = rtscope_explain::words::command_label(&c.category);
        let i = match out.iter().position(|x| x.name == name) {
            Some(i) => i,
            None => {
                out.push(Cause {
                    name,
                    pids: Vec::new(),
                    more_pids: 0,
                    time: Nanos(0),
                });
                out.len() - 1
            }
        };
        let x = &mut out[i];
        x.time = Nanos(x.time.0 + c.ns);
        if let Some(t) = c.category.named_task() {
            if x.pids.len() < MAX_PIDS {
                if !x.pids.contains(&t.pid) {
                    x.pids.push(t.pid);
                }
            } else if !x.pids.contains(&t.pid) {
                x.more_pids += 1;
            }
        }
    }
    out.sort_by(|a, b| b.time.cmp(&a.time).then(a.name.cmp(&b.name)));
    out.truncate(MAX_CAUSES);
    out
}

/// What a window's row gets for an explained wake-up: its causes, the whole explanation and
/// its cause line; a wake-up explained from the monitors only is not explained (they name no
/// time: their busiest thread is a lead, not a charge), with the trace's reason.
pub fn explanation(e: &Explained) -> Result<Explanation, Unexplained> {
    match e {
        Explained::Traced(a) => Ok(Explanation {
            causes: causes(e),
            json: serde_json::to_string(e).unwrap_or_default(),
            line: CauseLine::of(a).map(|l| l.to_string()),
        }),
        Explained::Coarse(c) => Err(c.not_traced.map_or(Unexplained::NoTrace, Into::into)),
    }
}

impl WindowExplainer {
    /// Starts tracing `cpus` (the reader on `housekeeping`); wake-ups at or above `threshold`
    /// are explained. Before the measuring threads start: its reaper is forked while the
    /// process is small and not real-time.
    /// The flight recorder takes its events from `recorder` (`--explain-recorder`).
    pub fn start(
        threshold: Nanos,
        cpus: Vec<usize>,
        housekeeping: Vec<usize>,
        recorder: rtscope_trace::explain::RecorderChoice,
    ) -> Self {
        // At SCHED_OTHER: a late read widens the interval an SMI is placed in, never hides it.
        let normal = Housekeeping::Normal(NormalWhy::Asked);
        let ours = CpuSet::from_cpus(housekeeping.iter().copied());
        let smi = SmiState::start(Path::new("/"), Some(&ours), &cpus, normal);
        let mut cfg = explain_config(threshold, cpus, housekeeping);
        cfg.recorder = recorder;
        WindowExplainer::with(cfg, smi)
    }

    /// The explainer of `cfg` (its threshold the watch's `--spike`), SMIs from `smi`.
    fn with(cfg: ExplainConfig, smi: SmiState) -> Self {
        let threshold = Nanos(cfg.threshold_ns);
        let mut ex = Explainer::start(cfg);
        ex.keep_explained();
        WindowExplainer {
            tracing: ex.tier() != Tier::Coarse,
            ex,
            threshold,
            ledger: Ledger::new(MAX_ASKED),
            smi,
        }
    }

    /// The tier in use, with the reason it is not better.
    pub fn tier_line(&self) -> String {
        self.smi
            .with_line(self.ex.tier_line("each window's worst wake-up"))
    }

    /// Hands over `worst`, the running worst wake-up of `cpu`'s open window starting at
    /// `start_ns`, when at or above the threshold and not handed before (`tid`: the CPU's
    /// measuring thread): its trace is pinned now, while the recorder still holds it. `out`
    /// gets the answers of closed windows let go to stay within [`MAX_ASKED`].
    pub fn hand(&mut self, cpu: u32, tid: i32, start_ns: i64, worst: Worst, out: &mut Vec<Answer>) {
        if worst.latency < self.threshold
            || !self
                .ledger
                .hand(cpu, start_ns, worst.mono_ns, worst.latency, out)
        {
            return;
        }
        let deadline_ns = worst.mono_ns.saturating_sub(worst.latency.0);
        self.ex.push_spike(Spike {
            cpu: cpu as usize,
            tid,
            deadline_ns,
            wakeup_ns: worst.mono_ns,
            smis: self.smi.smis_over(deadline_ns, worst.mono_ns),
        });
    }

    /// The windows of `closed` are final: each CPU's row at or above the threshold gets its
    /// worst wake-up's answer (now, when it came already, else from [`WindowExplainer::poll`]),
    /// or the reason it cannot have one. `tid` gives the measuring thread of a CPU.
    pub fn close(&mut self, closed: &Closed, tid: impl Fn(u32) -> Option<i32>) -> Vec<Answer> {
        let mut out = Vec::new();
        for (w, worst) in closed.windows.iter().zip(&closed.worst) {
            let Some(cpu) = w.cpu else { continue };
            let max = w.histogram.max().unwrap_or(Nanos(0));
            if max < self.threshold {
                continue;
            }
            let missed = |why| {
                Answer::Missed(Missed {
                    start_ns: w.start_ns,
                    cpu,
                    latency: max,
                    why,
                })
            };
            let (Some(worst), Some(tid)) = (worst, tid(cpu)) else {
                self.ledger.forget(cpu, w.start_ns);
                let why = match worst {
                    None => Unexplained::WorstUnknown,
                    Some(_) => Unexplained::CpuNotTraced,
                };
                out.push(missed(why));
                continue;
            };
            if !self.tracing {
                self.ledger.forget(cpu, w.start_ns);
                out.push(missed(Unexplained::NoTrace));
                continue;
            }
            self.hand(cpu, tid, w.start_ns, *worst, &mut out);
            out.extend(self.ledger.close(cpu, w.start_ns, worst.mono_ns));
        }
        out
    }

    /// The answers for closed windows that came since the last call.
    pub fn poll(&mut self) -> Vec<Answer> {
        // At most a control tick's budget, as `rtscope measure --explain`: the windows are
        // closed and stored at the ticks, and a slow analysis (an emulated guest beside a
        // loaded host) must not hold them back, or a SIGKILL loses more than the open window.
        // The spikes not looked at wait, first, for the next tick.
        self.ex.poll_until(Instant::now() + TICK_BUDGET);
        self.answers()
    }

    /// At the end of a session (every window closed): waits up to `patience` for the last
    /// traces, then gives the rest their reason.
    pub fn drain(&mut self, patience: Duration) -> Vec<Answer> {
        let until = Instant::now() + patience;
        while self.ex.pending() > 0 && Instant::now() < until {
            self.ex.poll();
            std::thread::sleep(Duration::from_millis(20));
        }
        self.ex.give_up();
        let mut out = self.answers();
        out.extend(self.ledger.give_up(Unexplained::TimedOut));
        out
    }

    fn answers(&mut self) -> Vec<Answer> {
        let mut out = Vec::new();
        for e in self.ex.take_explained() {
            let s = spike_of(&e);
            out.extend(
                self.ledger
                    .answer(s.cpu as u32, s.wakeup_ns, explanation(&e)),
            );
        }
        for (s, why) in self.ex.take_unexplained() {
            let why = why.map_or(Unexplained::NoTrace, Into::into);
            out.extend(self.ledger.answer(s.cpu as u32, s.wakeup_ns, Err(why)));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtscope_explain::model::{Attribution, Category, Charge, NotTraced, Task};

    fn thread(comm: &str, pid: i32) -> Category {
        Category::Thread {
            task: Task {
                comm: comm.into(),
                pid,
                prio: 0,
            },
        }
    }

    #[test]
    fn a_wake_up_explained_by_the_monitors_only_is_not_explained_and_says_why() {
        let coarse = |why| {
            Explained::Coarse(rtscope_explain::coarse::CoarseExplanation {
                spike: Spike {
                    cpu: 1,
                    tid: 9,
                    deadline_ns: 1_000,
                    wakeup_ns: 3_000,
                    smis: None,
                },
                start_ns: 0,
                end_ns: 5_000,
                top_irqs: Vec::new(),
                top_softirqs: Vec::new(),
                steal_ns: 0,
                top_threads: Vec::new(),
                not_traced: why,
            })
        };
        assert_eq!(
            explanation(&coarse(Some(NotTraced::LostEvents))),
            Err(Unexplained::LostEvents)
        );
        assert_eq!(explanation(&coarse(None)), Err(Unexplained::NoTrace));
    }

    fn row(cpu: u32, max_ns: u64) -> rtscope_store::watch::WatchWindow {
        let mut h = rtscope_core::Histogram::new();
        h.record(Nanos(max_ns));
        rtscope_store::watch::WatchWindow {
            level: rtscope_store::watch::Level::Window,
            start_ns: 60,
            end_ns: 120,
            cpu: Some(cpu),
            spikes: u64::from(max_ns >= 100_000),
            histogram: h,
            missed: 0,
            alert: None,
            explain: None,
        }
    }

    #[test]
    fn every_window_at_or_above_the_threshold_that_cannot_be_explained_gets_its_reason() {
        // No trace (the coarse tier, which a watch feeds no monitor samples).
        let mut cfg = explain_config(Nanos::from_us(100), vec![1, 2, 3], vec![0]);
        cfg.force_coarse = true;
        let mut x = WindowExplainer::with(cfg, SmiState::Off("not counted in tests".into()));
        let worst = |latency: u64| Worst {
            latency: Nanos(latency),
            at_ns: 70,
            mono_ns: 5_000_000,
        };
        let closed = Closed {
            windows: vec![row(1, 500_000), row(2, 300_000), row(3, 40_000)],
            // CPU 2's worst wake-up is not known (its ring lost samples); CPU 3's is below
            // the threshold.
            worst: vec![Some(worst(500_000)), None, Some(worst(40_000))],
            sums: vec![0, 0, 0],
        };
        let answers = x.close(&closed, |cpu| Some(100 + cpu as i32));
        let got: Vec<(u32, Unexplained, u64)> = answers
            .iter()
            .map(|a| match a {
                Answer::Missed(m) => (m.cpu, m.why, m.latency.0),
                Answer::Found(f) => panic!("explained without a trace: {f:?}"),
            })
            .collect();
        assert_eq!(
            got,
            [
                (1, Unexplained::NoTrace, 500_000),
                (2, Unexplained::WorstUnknown, 300_000)
            ]
        );
        assert!(x.drain(Duration::ZERO).is_empty(), "nothing left waiting");
    }

    #[test]
    fn the_watchs_explain_config_takes_no_kernel_stacks() {
        let cfg = explain_config(Nanos::from_us(100), vec![1, 2], vec![0]);
        assert_eq!(cfg.stacks, StackChoice::Off, "a watch stores no stacks");
        assert_eq!(
            (cfg.threshold_ns, cfg.cpus.as_slice()),
            (100_000, &[1, 2][..])
        );
        assert_eq!(cfg.housekeeping, vec![0]);
    }

    /// The eBPF programs this process holds (`anon_inode:bpf-prog` descriptors).
    fn bpf_programs() -> usize {
        std::fs::read_dir("/proc/self/fd")
            .map(|d| {
                d.flatten()
                    .filter_map(|e| std::fs::read_link(e.path()).ok())
                    .filter(|l| l.to_string_lossy().contains("bpf-prog"))
                    .count()
            })
            .unwrap_or(0)
    }

    #[test]
    fn the_watchs_recorder_sets_no_stack_trigger_and_loads_no_program() {
        rtscope_testkit::require_root!("a tracefs instance");
        let before = bpf_programs();
        let ex = Explainer::start(explain_config(Nanos::from_us(100), vec![0], vec![]));
        rtscope_testkit::require!(
            ex.tier() != Tier::Coarse,
            "tracefs is not usable here: {:?}",
            ex.tier_reason()
        );
        let dir = ex
            .instance_dir()
            .expect("a traced tier records")
            .to_path_buf();
        let triggers = rtscope_trace::tracefs::observed::stack_triggers(&dir);
        assert!(triggers.is_empty(), "triggers set: {triggers:?}");
        assert_eq!(bpf_programs(), before, "an eBPF program was loaded");
        assert!(!ex.stacks_on());
        let o = ex.observed();
        assert_eq!(o.stacks, "none");
        assert!(o.recorder.starts_with("tracefs instance rtscope-"), "{o:?}");
        assert!(o.events.iter().any(|e| e == "sched:sched_switch"), "{o:?}");
        let line = ex.tier_line("each window's worst wake-up");
        eprintln!("{line}");
        assert!(line.contains("kernel stacks off"), "{line}");
        assert!(line.contains(", stacks: none)"), "{line}");
        drop(ex);
        // The check sees a trigger where one is set: the triggers at every wake-up.
        let mut every = explain_config(Nanos::from_us(100), vec![0], vec![]);
        every.stacks = StackChoice::Every;
        let ex = Explainer::start(every);
        if ex.stacks_on() {
            let dir = ex.instance_dir().expect("a traced tier records");
            assert!(!rtscope_trace::tracefs::observed::stack_triggers(dir).is_empty());
            assert_eq!(ex.observed().stacks, "stacktrace triggers on every wake-up");
        }
    }

    #[test]
    fn the_threads_of_one_command_are_one_cause_with_their_pids_listed() {
        let charges = [
            (thread("stress-ng", 811), 400),
            (Category::TimerIrqHandler, 350),
            (thread("stress-ng", 812), 300),
            (thread("culprit", 4711), 200),
            (thread("stress-ng", 815), 100),
            (thread("stress-ng", 816), 50),
            (thread("stress-ng", 817), 40),
            (thread("stress-ng", 818), 30),
        ];
        let e = Explained::Traced(Attribution {
            spike: Spike {
                cpu: 1,
                tid: 9,
                deadline_ns: 1_000,
                wakeup_ns: 3_000,
                smis: None,
            },
            charges: charges
                .iter()
                .map(|(c, ns)| Charge::new(c.clone(), *ns))
                .collect(),
            complete: true,
            lost_events: false,
            siblings: Vec::new(),
            stack: None,
            handler: None,
        });
        let c = causes(&e);
        let names: Vec<&str> = c.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            names,
            ["thread stress-ng", "timer IRQ handler", "thread culprit"]
        );
        assert_eq!(c[0].time, Nanos(920));
        assert_eq!(
            (c[0].pids.as_slice(), c[0].more_pids),
            (&[811, 812, 815, 816][..], 2)
        );
        assert_eq!(
            c[0].text(),
            "thread stress-ng (6 PIDs: 811, 812, 815, 816 +2 more)"
        );
        assert_eq!(c[2].text(), "thread culprit (PID 4711)");
        // The printed cause follows the one rule: no cause holds half of the 2 µs wake-up, so
        // none is named as "the" cause, and every share is printed.
        let x = explanation(&e).unwrap();
        let line = x.line.unwrap();
        let Explained::Traced(a) = &e else {
            unreachable!()
        };
        assert_eq!(line, CauseLine::of(a).unwrap().to_string());
        assert!(CauseLine::of(a).unwrap().named().is_none(), "{line}");
        assert!(line.contains(" %"), "{line}");
        assert_eq!(x.causes, c);
        assert_eq!(c[1].text(), "timer IRQ handler");
        assert!(c[1].pids.is_empty());
    }
}
