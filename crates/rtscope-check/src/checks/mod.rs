//! The checks, grouped by subsystem. Each is a function from [`Ctx`] to a [`Finding`].

mod cpu;
mod irq;
mod kernel;
mod memory;
mod platform;
mod procs;

use crate::sys::{format_cpulist, KernelConfig, System, Uname};
use crate::{CheckId, Finding, Options};
use std::cell::OnceCell;

/// What every check gets: the system, the measured CPUs and facts read once.
pub(crate) struct Ctx<'s, 'p> {
    pub(crate) sys: &'s System<'p>,
    /// Measured CPUs, ascending.
    pub(crate) cpus: Vec<u32>,
    pub(crate) online: Vec<u32>,
    pub(crate) priority: u32,
    pub(crate) cmdline: Option<String>,
    pub(crate) uname: Option<Uname>,
    config: OnceCell<Option<KernelConfig>>,
    procs: OnceCell<Vec<procs::Task>>,
}

impl<'s, 'p> Ctx<'s, 'p> {
    pub(crate) fn new(sys: &'s System<'p>, opts: &Options) -> Self {
        let online = sys.online_cpus();
        let mut cpus = if opts.cpus.is_empty() {
            online.clone()
        } else {
            opts.cpus.clone()
        };
        cpus.sort_unstable();
        cpus.dedup();
        Ctx {
            sys,
            cpus,
            online,
            priority: opts.priority,
            cmdline: sys.cmdline(),
            uname: sys.probe().uname(),
            config: OnceCell::new(),
            procs: OnceCell::new(),
        }
    }

    /// The kernel configuration, read (and decompressed) on first use.
    pub(crate) fn config(&self) -> Option<&KernelConfig> {
        self.config
            .get_or_init(|| self.sys.kernel_config())
            .as_ref()
    }

    /// Every thread of every process, read on first use.
    pub(crate) fn tasks(&self) -> &[procs::Task] {
        self.procs.get_or_init(|| procs::scan(self.sys))
    }

    /// The value of `key` on the kernel command line.
    pub(crate) fn cmdline_value(&self, key: &str) -> Option<&str> {
        crate::sys::cmdline_value(self.cmdline.as_deref()?, key)
    }

    /// The measured CPUs as a CPU list.
    pub(crate) fn cpu_list(&self) -> String {
        format_cpulist(&self.cpus)
    }

    /// The online CPUs that are not measured (housekeeping candidates).
    pub(crate) fn others(&self) -> Vec<u32> {
        self.online
            .iter()
            .copied()
            .filter(|c| !self.cpus.contains(c))
            .collect()
    }

    pub(crate) fn run(&self, check: CheckId) -> Finding {
        use CheckId as C;
        match check {
            C::PreemptRt => kernel::preempt_rt(self),
            C::Preemption => kernel::preemption(self),
            C::KernelDebug => kernel::kernel_debug(self),
            C::Isolcpus => cpu::isolcpus(self),
            C::NohzFull => cpu::nohz_full(self),
            C::RcuNocbs => cpu::rcu_nocbs(self),
            C::Affinity => procs::affinity(self),
            C::Governor => cpu::governor(self),
            C::Frequency => cpu::frequency(self),
            C::Smt => cpu::smt(self),
            C::RtThrottling => kernel::rt_throttling(self),
            C::Irqbalance => irq::irqbalance(self),
            C::IrqAffinity => irq::irq_affinity(self),
            C::IdleStates => cpu::idle_states(self),
            C::CpuDmaLatency => procs::cpu_dma_latency(self),
            C::TimerMigration => kernel::timer_migration(self),
            C::Thp => memory::thp(self),
            C::Swap => memory::swap(self),
            C::NumaBalancing => memory::numa_balancing(self),
            C::VmstatInterval => memory::vmstat_interval(self),
            C::NmiWatchdog => kernel::nmi_watchdog(self),
            C::SoftWatchdog => kernel::soft_watchdog(self),
            C::Clocksource => kernel::clocksource(self),
            C::RtTasks => procs::rt_tasks(self),
            C::Memlock => memory::memlock(self),
            C::Rtprio => memory::rtprio(self),
            C::RpiThrottled => platform::rpi_throttled(self),
            C::Thermal => platform::thermal(self),
            C::Lockdown => kernel::lockdown(self),
            C::Tracefs => kernel::tracefs(self),
            C::Virtualization => platform::virtualization(self),
            C::Container => platform::container(self),
        }
    }
}

/// Joins up to `max` items with `, `, then `… (N more)`.
pub(crate) fn join_limited(items: &[String], max: usize) -> String {
    let mut s = items
        .iter()
        .take(max)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if items.len() > max {
        s.push_str(&format!(", … ({} more)", items.len() - max));
    }
    s
}

/// `value` per CPU as `cpu0=a cpu1=b`, or `a` when every CPU agrees.
pub(crate) fn per_cpu_summary(values: &[(u32, String)]) -> String {
    match values.first() {
        None => String::new(),
        Some((_, first)) if values.iter().all(|(_, v)| v == first) => first.clone(),
        Some(_) => values
            .iter()
            .map(|(c, v)| format!("cpu{c}={v}"))
            .collect::<Vec<_>>()
            .join(" "),
    }
}
