//! rtscope-monitor: what the system was doing while a run measured latency.
//!
//! A [`Monitor`] discovers its sources once ([`Monitor::new`], under a root directory: `/` in
//! production, a fixture tree in tests) and is then sampled during the run
//! ([`Monitor::sample`], by default every [`DEFAULT_INTERVAL`], from a non-real-time thread
//! pinned to one of the [`housekeeping_cpus`]). Each [`Sample`] carries numeric [`Reading`]s
//! and text states named by stable dotted metric names, plus the top CPU-consuming threads.
//! Rates and shares are deltas between consecutive samples over the elapsed run time, so the
//! first sample has levels only.
//!
//! A source that does not exist (no thermal zone in a VM, no cpufreq, not a Raspberry Pi) is
//! reported by [`Monitor::availability`] as unavailable with the reason; it is never an error.
//! Malformed files are skipped, never a panic.
//!
//! # Metrics
//!
//! | metric | unit | source |
//! |---|---|---|
//! | `temp.<zone type>` | `degC` | `/sys/class/thermal/thermal_zone<N>/{type,temp}` |
//! | `hwmon.<chip>.<label>` | `degC` | `/sys/class/hwmon/hwmon<N>/{name,temp<K>_input,temp<K>_label}` |
//! | `freq.cpu<N>` | `kHz` | `/sys/devices/system/cpu/cpu<N>/cpufreq/scaling_cur_freq` |
//! | `governor.cpu<N>` (text) | | `.../cpufreq/scaling_governor` |
//! | `throttle.core_count.cpu<N>` | `events` | `.../cpu<N>/thermal_throttle/core_throttle_count` (x86) |
//! | `throttle.package_count.pkg<P>` | `events` | `.../thermal_throttle/package_throttle_count` (x86) |
//! | `rpi.under_voltage`, `rpi.freq_capped`, `rpi.throttled`, `rpi.soft_temp_limit` | `flag` | `/sys/devices/platform/soc/soc:firmware/get_throttled` bits 0–3 (now) |
//! | `rpi.under_voltage_occurred`, `rpi.freq_capped_occurred`, `rpi.throttled_occurred`, `rpi.soft_temp_limit_occurred` | `flag` | bits 16–19 (since boot) |
//! | `rpi.get_throttled` (text) | | the raw word, e.g. `0x50005` |
//! | `irq_rate.<source>.cpu<N>` | `1/s` | `/proc/interrupts`; `<source>` is `<irq> <handlers>` (`39 dwc_otg`) or the symbol (`LOC`, `IPI0`) |
//! | `irq_rate.<source>.all` | `1/s` | `/proc/interrupts` lines with one system-wide count (`ERR`, `MIS`) |
//! | `softirq_rate.<NAME>.cpu<N>` | `1/s` | `/proc/softirqs` (`TIMER`, `NET_RX`, `SCHED`, ...) |
//! | `ctxt_rate`, `intr_rate`, `fork_rate` | `1/s` | `/proc/stat` `ctxt`, `intr`, `processes` |
//! | `cpu_busy.all`, `cpu_busy.cpu<N>` | `%` | `/proc/stat` `cpu` lines: (user+nice+system+irq+softirq+steal) / all jiffies |
//! | `steal.all`, `steal.cpu<N>` | `%` | `/proc/stat` `cpu` lines: steal / all jiffies (the time a hypervisor ran something else while this virtual CPU wanted to run) |
//! | `procs.running`, `procs.blocked` | `tasks` | `/proc/stat` `procs_running`, `procs_blocked` |
//! | `load.1m`, `load.5m`, `load.15m` | `tasks` | `/proc/loadavg` |
//! | `tasks.total` | `tasks` | `/proc/loadavg` (threads in the system) |
//! | `mem.total`, `mem.available` | `bytes` | `/proc/meminfo` `MemTotal`, `MemAvailable` |
//!
//! Rates (`*_rate`), `cpu_busy.*` and `steal.*` appear from the second sample on; everything else is a
//! level read at each sample. Names that would repeat (two zones of type `acpitz`) get the
//! directory as a suffix: `temp.acpitz.zone0`, `temp.acpitz.zone5`. The `<source>` part of an
//! IRQ metric is verbatim and may contain spaces, commas and dots (`14 fe00b880.mailbox`): it
//! is everything between the first and the last dot. [`Sample::top`] lists the top threads
//! ([`ThreadShare`], CPU share in % of one CPU), kernel threads (`irq/39-dwc_otg`,
//! `ksoftirqd/0`, `rcu_preempt`) included.
//!
//! Table and per-platform availability: docs/monitors.md.
//!
//! Re-exports (its facade): `housekeeping_cpus` and `steal_ticks` are named at the root for the
//! session; their modules (`cpus`, `procfs`) are private.

#![warn(missing_docs)]

mod counters;
mod cpus;
mod procfs;
pub mod smi;
pub mod smi_timeline;
mod sysfs;
mod text;
mod threads;

pub use cpus::housekeeping_cpus;
pub use procfs::steal_ticks;

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The units of [`Reading::unit`].
pub mod unit {
    /// Degrees Celsius.
    pub const DEG_C: &str = "degC";
    /// Kilohertz (cpufreq's own unit).
    pub const KHZ: &str = "kHz";
    /// Events per second.
    pub const PER_SECOND: &str = "1/s";
    /// Percent.
    pub const PERCENT: &str = "%";
    /// Bytes.
    pub const BYTES: &str = "bytes";
    /// A cumulative event count.
    pub const EVENTS: &str = "events";
    /// 0 or 1.
    pub const FLAG: &str = "flag";
    /// A number of tasks (threads), or a load average (tasks runnable or in D state).
    pub const TASKS: &str = "tasks";
}

/// How often a run samples the monitors unless told otherwise: once a second.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(1);

/// How many top threads a sample lists unless told otherwise.
pub const DEFAULT_TOP_THREADS: usize = 10;

/// Clock ticks per second of `utime`/`stime` in `/proc/.../stat` (`USER_HZ`): 100 on every
/// architecture Linux supports today.
pub const DEFAULT_CLOCK_TICKS: u64 = 100;

/// One numeric reading.
#[derive(Clone, Debug, PartialEq)]
pub struct Reading {
    /// Stable dotted metric name, e.g. `temp.cpu-thermal` (see the crate docs).
    pub metric: String,
    /// The value, in `unit`.
    pub value: f64,
    /// One of [`mod@unit`]'s constants.
    pub unit: &'static str,
}

/// One thread's CPU use over the interval before a sample.
#[derive(Clone, Debug, PartialEq)]
pub struct ThreadShare {
    /// Process (thread group) ID.
    pub pid: u32,
    /// Thread ID.
    pub tid: u32,
    /// Thread name (`comm`), e.g. `irq/39-dwc_otg`, `ksoftirqd/0`.
    pub comm: String,
    /// CPU time used in the interval, in % of one CPU (a thread can use at most 100 %).
    pub cpu_percent: f64,
    /// The CPU it last ran on.
    pub last_cpu: u32,
    /// Whether it is a kernel thread (IRQ threads, ksoftirqd, rcu, kworkers).
    pub kernel_thread: bool,
    /// Whether its process is the monitoring process or one it started (directly or not):
    /// rtscope's own threads, its loads' supervisor and workers. Another program's thread
    /// named like rtscope's is not.
    pub own: bool,
}

/// Everything one [`Monitor::sample`] read.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Sample {
    /// When it was taken, on the run's time axis (the `now` passed to [`Monitor::sample`]).
    pub at: Duration,
    /// Time since the previous sample, over which rates and shares were computed; `None` for
    /// the first sample (levels only).
    pub interval: Option<Duration>,
    /// Numeric readings, in source order.
    pub readings: Vec<Reading>,
    /// Text states as (metric, value), e.g. (`governor.cpu0`, `performance`).
    pub states: Vec<(String, String)>,
    /// The top CPU-consuming threads, highest first; empty in the first sample.
    pub top: Vec<ThreadShare>,
}

impl Sample {
    /// The reading named `metric`.
    pub fn reading(&self, metric: &str) -> Option<&Reading> {
        self.readings.iter().find(|r| r.metric == metric)
    }

    /// The value of the reading named `metric`.
    pub fn value(&self, metric: &str) -> Option<f64> {
        self.reading(metric).map(|r| r.value)
    }

    /// The text state named `metric`.
    pub fn state(&self, metric: &str) -> Option<&str> {
        self.states
            .iter()
            .find(|(m, _)| m == metric)
            .map(|(_, v)| v.as_str())
    }

    fn push(&mut self, metric: String, value: f64, unit: &'static str) {
        self.readings.push(Reading {
            metric,
            value,
            unit,
        });
    }
}

/// Whether one source could be read, and why (not).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceStatus {
    /// The source: `thermal`, `hwmon`, `cpufreq`, `cpu_throttle`, `rpi_throttled`,
    /// `interrupts`, `softirqs`, `stat`, `loadavg`, `meminfo` or `threads`.
    pub source: &'static str,
    /// Whether it yields readings.
    pub available: bool,
    /// What was found (`3 thermal zones`) or why it is unavailable
    /// (`no /sys/class/thermal/thermal_zone*`).
    pub why: String,
}

impl fmt::Display for SourceStatus {
    /// `thermal: unavailable (no /sys/class/thermal/thermal_zone*)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = if self.available {
            "available"
        } else {
            "unavailable"
        };
        write!(f, "{}: {state} ({})", self.source, self.why)
    }
}

/// A source's availability as tracked inside the crate.
#[derive(Clone, Debug)]
pub(crate) struct Status {
    pub(crate) available: bool,
    pub(crate) why: String,
}

impl Status {
    pub(crate) fn available(why: String) -> Self {
        Status {
            available: true,
            why,
        }
    }

    pub(crate) fn unavailable(why: String) -> Self {
        Status {
            available: false,
            why,
        }
    }

    /// Records the outcome of a sample: becoming unavailable takes the reason from `why`;
    /// becoming available again says so. No allocation while the state stays the same.
    pub(crate) fn update(&mut self, ok: bool, why: impl FnOnce() -> String) {
        if ok != self.available {
            self.available = ok;
            self.why = if ok {
                "readable again".to_owned()
            } else {
                why()
            };
        }
    }
}

/// Why a monitor could not be created.
#[derive(Debug, thiserror::Error)]
pub enum MonitorError {
    /// The root directory does not exist or is not a directory.
    #[error("monitor root {path} is not a directory")]
    NotADirectory {
        /// The root given to [`Monitor::new`].
        path: PathBuf,
    },
}

/// The system monitors of one run. Not shared between threads: one non-real-time thread owns
/// it and calls [`Monitor::sample`]. No global state, so several can coexist (tests do).
pub struct Monitor {
    root: PathBuf,
    top_n: usize,
    clock_ticks: u64,
    thermal: sysfs::ProbeSet,
    hwmon: sysfs::ProbeSet,
    cpufreq: sysfs::ProbeSet,
    throttle: sysfs::ProbeSet,
    rpi: sysfs::RpiThrottled,
    interrupts: counters::Counters,
    softirqs: counters::Counters,
    stat: procfs::Stat,
    loadavg: procfs::LoadAvg,
    meminfo: procfs::MemInfo,
    threads: threads::Threads,
    prev_at: Option<Duration>,
    /// Reused file buffer: one allocation for every file of every sample.
    buf: String,
}

impl Monitor {
    /// Discovers the sources under `root` (`/` in production). Missing sources are recorded
    /// as unavailable; only a `root` that is not a directory is an error.
    pub fn new(root: &Path) -> Result<Self, MonitorError> {
        if !root.is_dir() {
            return Err(MonitorError::NotADirectory {
                path: root.to_owned(),
            });
        }
        let mut buf = String::with_capacity(64 * 1024);
        let interrupts = counters::Counters::discover(root, counters::Kind::Interrupts, &mut buf);
        let softirqs = counters::Counters::discover(root, counters::Kind::Softirqs, &mut buf);
        Ok(Monitor {
            root: root.to_owned(),
            top_n: DEFAULT_TOP_THREADS,
            clock_ticks: DEFAULT_CLOCK_TICKS,
            thermal: sysfs::thermal(root),
            hwmon: sysfs::hwmon(root),
            cpufreq: sysfs::cpufreq(root),
            throttle: sysfs::throttle(root),
            rpi: sysfs::RpiThrottled::discover(root),
            interrupts,
            softirqs,
            stat: procfs::Stat::new(root),
            loadavg: procfs::LoadAvg::new(root),
            meminfo: procfs::MemInfo::new(root),
            threads: threads::Threads::new(root),
            prev_at: None,
            buf,
        })
    }

    /// Lists `n` top threads per sample instead of [`DEFAULT_TOP_THREADS`] (0 skips the
    /// thread walk's ranking but still reads the stats, so shares stay correct later).
    pub fn with_top_threads(mut self, n: usize) -> Self {
        self.top_n = n;
        self
    }

    /// Marks the threads of process `pid` and its descendants as own instead of this
    /// process's (for fixture trees).
    pub fn with_own_process(mut self, pid: u32) -> Self {
        self.threads.own_pid = pid;
        self
    }

    /// Uses `hz` clock ticks per second for thread CPU times instead of
    /// [`DEFAULT_CLOCK_TICKS`] (a value of 0 is taken as 1).
    pub fn with_clock_ticks(mut self, hz: u64) -> Self {
        self.clock_ticks = hz.max(1);
        self
    }

    /// The root directory the sources were discovered under.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Every source, whether it is available and why (not), in a fixed order. Sources under
    /// /proc are re-checked at each sample; sources under /sys reflect discovery.
    pub fn availability(&self) -> Vec<SourceStatus> {
        let all: [(&'static str, &Status); 11] = [
            ("thermal", &self.thermal.status),
            ("hwmon", &self.hwmon.status),
            ("cpufreq", &self.cpufreq.status),
            ("cpu_throttle", &self.throttle.status),
            ("rpi_throttled", &self.rpi.status),
            ("interrupts", &self.interrupts.status),
            ("softirqs", &self.softirqs.status),
            ("stat", &self.stat.status),
            ("loadavg", &self.loadavg.status),
            ("meminfo", &self.meminfo.status),
            ("threads", &self.threads.status),
        ];
        all.into_iter()
            .map(|(source, s)| SourceStatus {
                source,
                available: s.available,
                why: s.why.clone(),
            })
            .collect()
    }

    /// Reads every available source once. `now` is the time on the run's axis; rates and
    /// shares are over `now` minus the previous sample's `now` (none if that is not positive,
    /// as in the first sample).
    pub fn sample(&mut self, now: Duration) -> Sample {
        let interval = self
            .prev_at
            .and_then(|p| now.checked_sub(p))
            .filter(|d| !d.is_zero());
        self.prev_at = Some(now);
        let dt = interval.map(|d| d.as_secs_f64());
        let buf = &mut self.buf;
        let mut out = Sample {
            at: now,
            interval,
            ..Sample::default()
        };
        self.thermal.sample(buf, &mut out);
        self.hwmon.sample(buf, &mut out);
        self.cpufreq.sample(buf, &mut out);
        self.throttle.sample(buf, &mut out);
        self.rpi.sample(buf, &mut out);
        self.interrupts.sample(buf, dt, &mut out);
        self.softirqs.sample(buf, dt, &mut out);
        self.stat.sample(buf, dt, &mut out);
        self.loadavg.sample(buf, &mut out);
        self.meminfo.sample(buf, &mut out);
        let params = threads::TopParams {
            dt,
            hz: self.clock_ticks,
            n: self.top_n,
        };
        out.top = self.threads.sample(buf, params);
        out
    }
}
