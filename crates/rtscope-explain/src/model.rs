//! The typed results of spike attribution, serializable for JSON and the store.

use serde::{Deserialize, Serialize};
use std::fmt;

/// How much context the explanation of a run could get, chosen automatically at start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Tier {
    /// No usable tracefs (not root, lockdown, no kernel support): the monitors' per-second
    /// IRQ/softirq deltas, busiest threads and steal time of the spike's CPU.
    Coarse,
    /// A private tracefs instance records scheduler and interrupt events on the measured CPUs.
    FlightRecorder,
    /// The kernel has the timerlat tracer; its osnoise events split IRQ and thread noise.
    Timerlat,
}

impl Tier {
    /// The lowercase name used in text output.
    pub fn name(self) -> &'static str {
        match self {
            Tier::Coarse => "coarse",
            Tier::FlightRecorder => "flight-recorder",
            Tier::Timerlat => "timerlat",
        }
    }
}

/// Why the timer interrupt itself came late.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(tag = "cause", rename_all = "snake_case")]
pub enum LateCause {
    /// The CPU was idle: waking from a C-state.
    ExitFromIdle,
    /// Another interrupt handler was running when the timer was due.
    PreviousIrq {
        /// Its name (`eth0`, `local_timer`, `reschedule`).
        name: String,
    },
    /// A task or softirq ran without any traced event: interrupts were off, or the hypervisor
    /// did not run the vCPU.
    IrqsOffOrHypervisor {
        /// The task that ran meanwhile (the one that had interrupts off, if they were); none
        /// for a softirq or a summary stored before tasks were named here.
        #[serde(flatten, default, skip_serializing_if = "Option::is_none")]
        task: Option<Task>,
        /// The softirq that ran meanwhile, when it was one.
        #[serde(default, skip_serializing_if = "Option::is_none", rename = "vec")]
        softirq: Option<Softirq>,
    },
}

/// Softirq vectors (`include/linux/interrupt.h`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Softirq {
    /// 0
    Hi,
    /// 1
    Timer,
    /// 2
    NetTx,
    /// 3
    NetRx,
    /// 4
    Block,
    /// 5
    IrqPoll,
    /// 6
    Tasklet,
    /// 7
    Sched,
    /// 8
    Hrtimer,
    /// 9
    Rcu,
    /// A vector this list does not know.
    Other(u32),
}

impl Softirq {
    /// From the kernel's vector number.
    pub fn from_vec(v: u32) -> Softirq {
        use Softirq::*;
        [
            Hi, Timer, NetTx, NetRx, Block, IrqPoll, Tasklet, Sched, Hrtimer, Rcu,
        ]
        .get(v as usize)
        .copied()
        .unwrap_or(Other(v))
    }

    /// From the name in `/proc/softirqs` (`NET_RX`).
    pub fn from_name(name: &str) -> Option<Softirq> {
        (0..10)
            .map(Softirq::from_vec)
            .find(|s| s.to_string() == name)
    }
}

impl fmt::Display for Softirq {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use Softirq::*;
        let s = match self {
            Hi => "HI",
            Timer => "TIMER",
            NetTx => "NET_TX",
            NetRx => "NET_RX",
            Block => "BLOCK",
            IrqPoll => "IRQ_POLL",
            Tasklet => "TASKLET",
            Sched => "SCHED",
            Hrtimer => "HRTIMER",
            Rcu => "RCU",
            Other(v) => return write!(f, "vec{v}"),
        };
        f.write_str(s)
    }
}

/// A task as the scheduler events name it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Task {
    /// Its name.
    pub comm: String,
    /// Thread ID.
    pub pid: i32,
    /// Kernel priority: 0..=98 are SCHED_FIFO/RR 99..=1 (`99 - prio`), 100..=139 normal tasks
    /// (nice −20..=19); lower is more urgent.
    pub prio: i32,
}

impl fmt::Display for Task {
    /// `comm:pid:prio` with the user-facing priority (`culprit:4711:FIFO99`, `kworker:12:nice0`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.prio < 100 {
            write!(f, "{}:{}:rt{}", self.comm, self.pid, 99 - self.prio)
        } else {
            write!(f, "{}:{}:nice{}", self.comm, self.pid, self.prio - 120)
        }
    }
}

/// Where nanoseconds of a late wake-up went (the categories of rtla timerlat's auto-analysis).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Category {
    /// From the deadline to the entry of the timer interrupt that woke the thread.
    TimerIrqLate {
        /// What held it back.
        #[serde(flatten)]
        cause: LateCause,
    },
    /// The timer interrupt handler that woke the thread (all hrtimers it expired included).
    TimerIrqHandler,
    /// Another hard interrupt after the timer interrupt.
    Irq {
        /// Its name: the handler name with its number (`eth0 (irq 24)`) or an x86 vector.
        name: String,
    },
    /// A softirq.
    Softirq {
        /// Its vector.
        vec: Softirq,
    },
    /// A non-maskable interrupt.
    Nmi,
    /// A task of higher or equal priority ran while the measuring thread was runnable.
    Thread {
        /// The task.
        #[serde(flatten)]
        task: Task,
    },
    /// A task of lower priority kept the CPU (a non-preemptible section).
    Blocking {
        /// The task.
        #[serde(flatten)]
        task: Task,
    },
    /// The scheduler switching to the measuring thread and its return to user space.
    ReturnToUser,
    /// The measuring thread, runnable at a real-time priority, was switched out for a normal
    /// task or the idle task: the scheduler took the CPU from it on purpose, by RT throttling
    /// (`sched_rt_runtime_us` of every `sched_rt_period_us`) or, since Linux 6.12, by the
    /// fair server that gives normal tasks their share. Neither a higher-priority thread nor
    /// a task holding the CPU: the time is the throttle's.
    RtThrottling,
    /// The measuring thread was not asleep on its timer: it was blocked in the kernel
    /// (`sched_switch` state `D`: a page fault, a lock, I/O) past the deadline, so no timer
    /// could be late and nothing that ran meanwhile held it back.
    MeasuringThreadBlocked,
    /// Time the guest could not see: the vCPU was not running (an idle exit longer than any
    /// idle state of a virtual machine allows).
    Hypervisor,
    /// Time below the kernel in a spike across which the CPU's SMI counter advanced: firmware
    /// (System Management Mode) stopped the CPU, which no kernel event can show.
    Firmware,
    /// Time no trace event covers, or that cannot be classified: never folded into a context.
    Unexplained,
}

impl Category {
    /// True for the categories of the timer interrupt itself (late or long), including a
    /// previous timer interrupt that delayed it.
    pub fn is_timer_irq(&self) -> bool {
        match self {
            Category::TimerIrqHandler => true,
            Category::TimerIrqLate {
                cause: LateCause::PreviousIrq { name },
            } => name == "local_timer" || name.contains("timer"),
            Category::TimerIrqLate { .. } => true,
            _ => false,
        }
    }

    /// The culprit task, for thread interference and blocking.
    pub fn task(&self) -> Option<&Task> {
        match self {
            Category::Thread { task } | Category::Blocking { task } => Some(task),
            _ => None,
        }
    }

    /// The task a culprit row names: [`Category::task`], or the task that ran while the timer
    /// interrupt was late with interrupts off (or the hypervisor holding the vCPU).
    pub fn named_task(&self) -> Option<&Task> {
        match self {
            Category::TimerIrqLate {
                cause:
                    LateCause::IrqsOffOrHypervisor {
                        task: Some(task), ..
                    },
            } => Some(task),
            _ => self.task(),
        }
    }
}

impl fmt::Display for Category {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Category::TimerIrqLate {
                cause: LateCause::ExitFromIdle,
            } => f.write_str("timer IRQ late: exit from idle"),
            Category::TimerIrqLate {
                cause: LateCause::PreviousIrq { name },
            } => {
                write!(f, "timer IRQ late: previous IRQ {name}")
            }
            Category::TimerIrqLate {
                cause: LateCause::IrqsOffOrHypervisor { task, softirq },
            } => {
                f.write_str("timer IRQ late: IRQs off or hypervisor")?;
                match (task, softirq) {
                    (Some(task), _) => write!(f, ", {task} running"),
                    (None, Some(vec)) => write!(f, ", softirq {vec} running"),
                    (None, None) => Ok(()),
                }
            }
            Category::TimerIrqHandler => f.write_str("timer IRQ handler"),
            Category::Irq { name } => write!(f, "IRQ {name}"),
            Category::Softirq { vec } => write!(f, "softirq {vec}"),
            Category::Nmi => f.write_str("NMI"),
            Category::Thread { task } => write!(f, "thread {task}"),
            Category::Blocking { task } => write!(f, "blocking by {task}"),
            Category::ReturnToUser => f.write_str("scheduling and return to user"),
            Category::MeasuringThreadBlocked => {
                f.write_str("measuring thread blocked in the kernel (D state)")
            }
            Category::RtThrottling => {
                f.write_str("RT throttling (a real-time thread taken off for normal tasks)")
            }
            Category::Hypervisor => f.write_str("hypervisor/steal"),
            Category::Firmware => f.write_str("firmware (SMI)"),
            Category::Unexplained => f.write_str("unexplained (not covered by the trace)"),
        }
    }
}

/// A traced CPU whose interrupt exits stopped reaching the trace: an interrupt was still open
/// at a context switch (rtscope-trace's `exits` module). From `since_ns` on, time no event
/// covers there is unexplained, never the hypervisor's: it may be an interrupt's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct MissingExits {
    /// The CPU.
    pub cpu: usize,
    /// The last interrupt exit traced before the first one missed (trace clock, ns; the
    /// CPU's first event when none was).
    pub since_ns: u64,
    /// Interrupts seen without their exit.
    pub missed: u64,
}

/// Why a spike above the threshold got no trace-based explanation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NotTraced {
    /// The tracer had not produced its first event on that CPU before the spike's deadline.
    TracerNotLive,
    /// The kernel overwrote or lost events between the deadline and the wake-up (the reader
    /// fell behind: buffer overrun).
    LostEvents,
    /// The events of the spike had already left the recorder's window when it was analysed:
    /// it was handed over after the window had passed it, or its trace was let go when the
    /// memory kept for waiting spikes was full (rtscope-trace's `keep`).
    OutOfWindow,
    /// The spike's CPU is not traced.
    CpuNotTraced,
    /// More spikes waited than the explainer keeps; smaller ones make room for worse ones.
    QueueFull,
    /// The trace of the spike's CPU did not reach its wake-up in time.
    TimedOut,
}

impl NotTraced {
    /// All, in the order printed.
    pub const ALL: [NotTraced; 6] = [
        NotTraced::TracerNotLive,
        NotTraced::LostEvents,
        NotTraced::OutOfWindow,
        NotTraced::CpuNotTraced,
        NotTraced::QueueFull,
        NotTraced::TimedOut,
    ];

    /// Words for people.
    pub fn describe(self) -> &'static str {
        match self {
            NotTraced::TracerNotLive => "tracer not yet live",
            NotTraced::LostEvents => "events lost (buffer overrun)",
            NotTraced::OutOfWindow => "out of the trace window (dropped before its analysis)",
            NotTraced::CpuNotTraced => "CPU not traced",
            NotTraced::QueueFull => "queue full",
            NotTraced::TimedOut => "trace late (timed out)",
        }
    }

    /// What to change so that such spikes are traced, for people.
    pub fn fix(self) -> &'static str {
        match self {
            NotTraced::TracerNotLive => {
                "the run started before the tracer was live on that CPU: measure longer, the \
                 first seconds matter less"
            }
            NotTraced::LostEvents => {
                "the kernel's trace buffer overran before it was read: leave one CPU unmeasured \
                 for rtscope's reader (e.g. --cpus 1-N), or run lighter loads"
            }
            NotTraced::OutOfWindow => {
                "the trace was dropped before the spike was analysed (the trace of the smallest \
                 is let go to bound memory): raise the explain threshold (--explain DUR) so \
                 that fewer are kept"
            }
            NotTraced::CpuNotTraced => {
                "the thread ran on a CPU that is not traced: pin each thread to one CPU"
            }
            NotTraced::QueueFull => {
                "more waited than the explainer holds (16,384), the smallest were dropped: raise \
                 the explain threshold (--explain DUR)"
            }
            NotTraced::TimedOut => {
                "the trace reader fell behind: leave one CPU unmeasured for it (e.g. --cpus 1-N)"
            }
        }
    }
}

/// Nanoseconds charged to one category.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Charge {
    /// The category.
    #[serde(flatten)]
    pub category: Category,
    /// Time charged (ns).
    pub ns: u64,
    /// Separate occurrences that took that time: interrupt entries, softirq and thread runs,
    /// NMIs, as the kernel's osnoise tracer counts them (the interference counts). 0 in
    /// attributions recorded before they were counted, and for time of no occurrence (the
    /// return to user space, the hypervisor).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub times: u32,
}

impl Category {
    /// Whether this time comes in occurrences the osnoise tracer counts — an interrupt, a
    /// softirq run, an NMI, another thread's run — rather than being the measuring thread's
    /// own (the return to user space, blocked) or no one's (the hypervisor, unexplained).
    pub fn counts_occurrences(&self) -> bool {
        matches!(
            self,
            Category::Nmi
                | Category::TimerIrqLate { .. }
                | Category::TimerIrqHandler
                | Category::Irq { .. }
                | Category::Softirq { .. }
                | Category::Thread { .. }
                | Category::Blocking { .. }
                | Category::RtThrottling
        )
    }
}

impl Charge {
    /// `ns` charged to `category`, no occurrence counted.
    pub fn new(category: Category, ns: u64) -> Charge {
        Charge {
            category,
            ns,
            times: 0,
        }
    }
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// A wake-up above the threshold, on CLOCK_MONOTONIC.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Spike {
    /// CPU the measuring thread ran on.
    pub cpu: usize,
    /// Thread ID of the measuring thread.
    pub tid: i32,
    /// Programmed deadline (ns, CLOCK_MONOTONIC).
    pub deadline_ns: u64,
    /// Clock reading at the wake-up (ns, CLOCK_MONOTONIC).
    pub wakeup_ns: u64,
    /// System Management Interrupts the CPU's counter (MSR 0x34) advanced by across the
    /// spike, read right after it (`rtscope noise` on a CPU with the counter); `None` where it
    /// was not read. Not serialized: the noise JSON's gaps carry it (`gaps[].smis`), and the
    /// attribution it decided is in the charges (`firmware`); kept out of every explanation's
    /// serializer, it costs the static binary nothing there.
    #[serde(skip)]
    pub smis: Option<u32>,
}

impl Spike {
    /// Wake-up latency (ns).
    pub fn latency_ns(&self) -> u64 {
        self.wakeup_ns.saturating_sub(self.deadline_ns)
    }
}

/// The attribution of one spike from a trace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attribution {
    /// The spike.
    pub spike: Spike,
    /// Every nanosecond of the latency, by category, largest first; they sum to the latency.
    pub charges: Vec<Charge>,
    /// False when the waking of the measuring thread was not found in the trace, so the phases
    /// (before, in and after the timer interrupt) are guessed.
    pub complete: bool,
    /// The kernel lost trace events around the spike (the reader fell behind).
    pub lost_events: bool,
    /// What the spike's CPU's SMT siblings ran meanwhile (traced with it where the core has
    /// them); empty without SMT, and in summaries recorded before they were traced.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub siblings: Vec<SiblingActivity>,
    /// Where in the kernel: the stack of the task the measured thread got the CPU back from,
    /// when the kernel took one (folded by the `stack` module); none without a switch from a task (an
    /// interrupt or the idle task), on kernels without stack triggers, with
    /// `--explain-stacks off`, and in explanations stored before stacks were taken.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stack: Option<KernelStack>,
    /// Where in the kernel, for time in interrupt context: the handler function that ran the
    /// longest over the spike (an IPI's function call, a tasklet, a `timer_list` callback),
    /// named by the kernel's own events where it has them (`csd:csd_function_entry`: not in
    /// Linux 6.1, in 6.12; `irq:tasklet_entry`: in Debian's 6.1 and later;
    /// `timer:timer_expire_entry`: every kernel); none elsewhere, when no such handler ran,
    /// and in explanations stored before handlers were traced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handler: Option<Handler>,
}

/// What an SMT sibling of a spike's CPU ran over the spike's interval (`rtscope noise`: a gap).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SiblingActivity {
    /// The sibling CPU.
    pub cpu: usize,
    /// Time a task other than the idle task ran on it (ns).
    pub busy_ns: u64,
    /// The interval's length (ns).
    pub span_ns: u64,
    /// The task that ran longest, when any did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<Task>,
}

impl SiblingActivity {
    /// Busy for more than half of the interval.
    pub fn is_busy(&self) -> bool {
        self.busy_ns.saturating_mul(2) > self.span_ns
    }
}

impl fmt::Display for SiblingActivity {
    /// `SMT sibling cpu5 busy 98 % (stress-ng:123:nice0)`, `SMT sibling cpu5 idle`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.busy_ns == 0 {
            return write!(f, "SMT sibling cpu{} idle", self.cpu);
        }
        let pct = 100.0 * self.busy_ns as f64 / self.span_ns.max(1) as f64;
        write!(f, "SMT sibling cpu{} busy {pct:.0} %", self.cpu)?;
        match &self.task {
            Some(t) => write!(f, " ({t})"),
            None => Ok(()),
        }
    }
}

impl Attribution {
    /// The category with the most time.
    pub fn culprit(&self) -> Option<&Category> {
        self.charges.first().map(|c| &c.category)
    }

    /// Time charged to categories matching `pred` (ns).
    pub fn ns_where(&self, pred: impl Fn(&Category) -> bool) -> u64 {
        self.charges
            .iter()
            .filter(|c| pred(&c.category))
            .map(|c| c.ns)
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::{Category, Charge, LateCause, Softirq, Task};

    /// The task a late timer IRQ ran over is kept through JSON, and a charge stored before
    /// it was named reads back without one.
    #[test]
    fn a_late_timer_irqs_task_round_trips_and_old_charges_still_read() {
        let task = Task {
            comm: "noisy-irq".into(),
            pid: 93,
            prio: 120,
        };
        let c = Charge {
            category: Category::TimerIrqLate {
                cause: LateCause::IrqsOffOrHypervisor {
                    task: Some(task),
                    softirq: None,
                },
            },
            ns: 7,
            times: 0,
        };
        let json = serde_json::to_string(&c).unwrap();
        assert_eq!(
            json,
            r#"{"kind":"timer_irq_late","cause":"irqs_off_or_hypervisor","comm":"noisy-irq","pid":93,"prio":120,"ns":7}"#
        );
        assert_eq!(serde_json::from_str::<Charge>(&json).unwrap(), c);
        assert_eq!(
            c.category.to_string(),
            "timer IRQ late: IRQs off or hypervisor, noisy-irq:93:nice0 running"
        );
        let old = r#"{"kind":"timer_irq_late","cause":"irqs_off_or_hypervisor","ns":5}"#;
        let back: Charge = serde_json::from_str(old).unwrap();
        assert_eq!(
            back.category,
            Category::TimerIrqLate {
                cause: LateCause::IrqsOffOrHypervisor {
                    task: None,
                    softirq: None
                }
            }
        );
        assert_eq!(serde_json::to_string(&back).unwrap(), old);
        let softirq = Category::TimerIrqLate {
            cause: LateCause::IrqsOffOrHypervisor {
                task: None,
                softirq: Some(Softirq::Timer),
            },
        };
        let json = serde_json::to_string(&Charge::new(softirq.clone(), 3)).unwrap();
        assert_eq!(
            json,
            r#"{"kind":"timer_irq_late","cause":"irqs_off_or_hypervisor","vec":"TIMER","ns":3}"#
        );
        assert_eq!(
            serde_json::from_str::<Charge>(&json).unwrap().category,
            softirq
        );
        assert_eq!(
            softirq.to_string(),
            "timer IRQ late: IRQs off or hypervisor, softirq TIMER running"
        );
    }
}

/// The kernel stack of the context that held the CPU when the measured thread got it back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelStack {
    /// The task the stack is of: the one switched out for the measured thread (a preempt-off
    /// or interrupts-off section ends in its `__schedule`; a thread that blocked the measured
    /// one is where it gave the CPU up).
    pub task: Task,
    /// Function names, innermost first (`name [module]` for a module's; `0x…` where the
    /// address is in no known symbol); at most 64 (`stack::MAX_FRAMES`).
    pub frames: Vec<String>,
}

/// The kind of an interrupt-context handler the kernel names by its function.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HandlerKind {
    /// A function called on this CPU by another one's IPI (`smp_call_function*`):
    /// `csd:csd_function_entry/exit`, in the hard interrupt.
    Csd,
    /// A tasklet (`irq:tasklet_entry/exit`), in softirq TASKLET or HI.
    Tasklet,
    /// A `timer_list` callback (`timer:timer_expire_entry/exit`), in softirq TIMER.
    Timer,
}

impl HandlerKind {
    /// Where it runs, as a frame of a folded stack: `IPI function call`, `tasklet`, `timer`.
    pub fn context(self) -> &'static str {
        match self {
            HandlerKind::Csd => "IPI function call",
            HandlerKind::Tasklet => "tasklet",
            HandlerKind::Timer => "timer_list",
        }
    }
}

/// The handler that ran the longest in interrupt context over one spike.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Handler {
    /// What kind of handler.
    pub kind: HandlerKind,
    /// Its function (`name [module]` for a module's, `0x…` where no symbol has the address).
    pub function: String,
    /// Its time within the spike, nested handlers' time apart (ns).
    pub ns: u64,
    /// How many runs of it that time took.
    pub times: u32,
}
