//! Turns cyclictest options into an engine [`RunConfig`] plus output settings, applying
//! cyclictest's rules (thread count, CPU placement, priorities, distance) and rtscope's checks.

use super::args::{CtOptions, Threads};
use rtscope_common::error::UsageError;
use rtscope_core::Nanos;
use rtscope_engine::{
    sys, Alignment, ClockKind, CpuSet, LinearSpec, Policy, RunConfig, SleepMode, ThreadSpec,
};

/// Largest histogram accepted (`-h`, buckets); a larger size is refused.
pub const HIST_MAX: usize = 1_000_000;

/// Most spikes kept per thread (`--spike-nodes`): 24 bytes each, 24 MB at most.
pub const SPIKE_NODES_MAX: usize = 1_000_000;
/// Per-thread sample buffer for `-v` (samples), drained by the control thread.
pub const VERBOSE_RING: usize = 1 << 16;

/// What the front end needs besides the run config.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The engine configuration.
    pub config: RunConfig,
    /// Priority shown per thread (`P:`).
    pub prios: Vec<i32>,
    /// Policy name for the live status line (`fifo`, `other/other`, ...).
    pub policy_label: String,
    /// CPU of each thread (-1 when not pinned), as cyclictest reports it.
    pub cpus: Vec<i32>,
    /// The verbose preamble's "Interval:" value per thread (interval + distance, a cyclictest quirk).
    pub verbose_intervals: Vec<u64>,
    /// Lines for stderr before the run (cyclictest's warnings and notices).
    pub notices: Vec<String>,
    /// Main-thread affinity, if requested.
    pub main_affinity: Option<CpuSet>,
    /// The CPU set given with `-a`, for the verbose "Using N cpus." line.
    pub affinity_mask: Option<CpuSet>,
    /// Display unit (1 µs, or 1 ns with -N).
    pub unit: Nanos,
}

/// Lowers `o` against the online CPUs.
pub fn lower(o: &CtOptions, online: &CpuSet) -> Result<Plan, UsageError> {
    let mut notices = Vec::new();
    if o.raw && o.db.is_none() {
        return Err(UsageError::new(
            "--raw keeps samples in a database: give --db PATH too",
        ));
    }
    if o.legacy_nanosleep {
        notices.push(
            "rtscope: note: -n is obsolete and ignored: absolute clock_nanosleep is always used"
                .to_string(),
        );
    }
    let affinity_mask = affinity(o, online, &mut notices)?;
    check_smi(o)?;
    if o.smp && o.threads.is_some() {
        notices.push("WARN: -t ignored due to smp mode".into());
    }
    let available = affinity_mask.clone().unwrap_or_else(|| online.clone());
    let n = thread_count(o, &available)?;
    let unit = if o.nsecs { Nanos(1) } else { Nanos::from_us(1) };
    check_values(o)?;
    if o.histogram.is_some() && o.distance.is_some() {
        notices.push("WARN: distance is ignored and set to 0, if histogram enabled".into());
    }
    let (policy, mut prio, policy_label) = policy_and_priority(o, n, &mut notices);
    let pin_all = o.smp || o.affinity.is_some();
    let distance = if o.histogram.is_some() {
        0
    } else {
        o.distance.unwrap_or(500)
    };
    check_intervals(o.interval, distance, n)?;
    let pins = |i: usize| match &affinity_mask {
        Some(m) => Some(m.nth_cyclic(i)),
        None if pin_all => Some(online.nth_cyclic(i)),
        None => None,
    };
    let mut threads = Vec::with_capacity(n);
    let (mut prios, mut cpus, mut verbose_intervals) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..n {
        let cpu = pins(i);
        let interval_us = o.interval + i as u64 * distance;
        let thread_policy = if prio > 0 { policy } else { Policy::Other };
        threads.push(ThreadSpec {
            affinity: cpu.map(|c| CpuSet::from_cpus([c])),
            policy: thread_policy,
            priority: prio,
            interval: Nanos::from_us(interval_us),
        });
        prios.push(prio);
        cpus.push(cpu.map_or(-1, |c| c as i32));
        verbose_intervals.push(interval_us + distance);
        if o.priospread && prio > 1 {
            prio -= 1;
        }
    }
    let config = run_config(o, threads, unit);
    let main_affinity = cpu_list(o.mainaffinity.as_deref(), online, "--mainaffinity")?;
    Ok(Plan {
        config,
        prios,
        policy_label,
        cpus,
        verbose_intervals,
        notices,
        main_affinity,
        affinity_mask,
        unit,
    })
}

/// The `-a` CPU set, none in smp mode (with cyclictest's warning).
fn affinity(
    o: &CtOptions,
    online: &CpuSet,
    notices: &mut Vec<String>,
) -> Result<Option<CpuSet>, UsageError> {
    let mask = cpu_list(o.affinity.as_ref().and_then(|a| a.as_deref()), online, "-a")?;
    if o.smp && o.affinity.is_some() {
        notices.push("WARN: -a ignored due to smp mode".into());
        return Ok(None);
    }
    Ok(mask)
}

/// `--smi` needs every thread pinned and cannot give a count per sample (`-v`).
fn check_smi(o: &CtOptions) -> Result<(), UsageError> {
    if o.smi && o.affinity.is_none() && !o.smp {
        return Err(UsageError::new(
            "option '--smi' needs '-a': the SMI counter is read per CPU, so every thread must be pinned",
        )
        .hint("add -a (all CPUs) or -a LIST, as cyclictest requires"));
    }
    if o.smi && o.verbose {
        return Err(UsageError::new(
            "option '--smi' cannot be combined with '-v': rtscope reads the SMI counter outside the measuring threads, so it has no count per sample",
        )
        .hint("drop -v: the SMI column is in the T: lines and under the -h histogram"));
    }
    Ok(())
}

fn cpu_list(text: Option<&str>, online: &CpuSet, flag: &str) -> Result<Option<CpuSet>, UsageError> {
    text.map(|t| rtscope_session::cpus::cpu_list(t, online, flag))
        .transpose()
}

fn thread_count(o: &CtOptions, available: &CpuSet) -> Result<usize, UsageError> {
    let n = match (o.smp, o.threads) {
        (true, _) | (false, Some(Threads::PerCpu)) => available.len(),
        (false, Some(Threads::Count(n))) => n,
        (false, None) => 1,
    };
    if n == 0 {
        return Err(UsageError::new(
            "invalid value for '-t': at least one thread is needed",
        ));
    }
    let limit = rtscope_session::cpus::max_threads();
    if n > limit {
        return Err(UsageError::new(format!(
            "invalid value for '-t': {n} threads is more than this system allows ({limit})"
        )));
    }
    Ok(n)
}

/// The longest `-i`, µs: the engine's 1 hour. (cyclictest reads `-i` into a C `int`: at most
/// 2147483647 µs, about 36 minutes; larger values overflow `atoi`.)
pub const INTERVAL_MAX_US: u64 = rtscope_engine::MAX_INTERVAL.0 / 1_000;

/// Every thread's interval (`-i` + index × `-d`) within 1..=[`INTERVAL_MAX_US`].
fn check_intervals(interval: u64, distance: u64, threads: usize) -> Result<(), UsageError> {
    if interval > INTERVAL_MAX_US {
        return Err(UsageError::new(format!(
            "invalid value '{interval}' for '-i': use 1..{INTERVAL_MAX_US} (microseconds, at most 1 hour)"
        )));
    }
    let last = interval.saturating_add(distance.saturating_mul(threads.saturating_sub(1) as u64));
    if last > INTERVAL_MAX_US {
        return Err(UsageError::new(format!(
            "invalid value '{distance}' for '-d': thread {} would run at {last} us; \
             -i + (threads - 1) x -d must be at most {INTERVAL_MAX_US} (microseconds, 1 hour)",
            threads - 1
        )));
    }
    Ok(())
}

fn check_values(o: &CtOptions) -> Result<(), UsageError> {
    if o.interval == 0 {
        return Err(UsageError::new(
            "invalid value for '-i': the interval must be at least 1 us",
        ));
    }
    // `-D 0` and `-l 0` mean "no limit" as in cyclictest; a positive duration shorter than
    // the interval would end before the first wake-up (a run without samples).
    if let Some(d) = o.duration.filter(|d| d.0 > 0) {
        if d < Nanos::from_us(o.interval) {
            return Err(UsageError::new(format!(
                "invalid value '{d}' for '-D': shorter than the interval ({}us), no thread would wake up once",
                o.interval
            )));
        }
    }
    if o.clock > 1 {
        return Err(UsageError::new(format!(
            "invalid value '{}' for '-c': use 0 (CLOCK_MONOTONIC) or 1 (CLOCK_REALTIME)",
            o.clock
        )));
    }
    if o.histogram == Some(0) {
        return Err(UsageError::new(
            "invalid value for '-h': the histogram size must be at least 1 us",
        ));
    }
    if let Some(p) = o.priority {
        if !(0..=99).contains(&p) {
            return Err(UsageError::new(format!(
                "invalid value '{p}' for '-p': the priority must be 0..99"
            )));
        }
    }
    if o.oscope == 0 || (o.oscope > 1 && !o.verbose) {
        return Err(UsageError::new(
            "invalid value for '-o': it must be >= 1 and is meaningful only with -v",
        ));
    }
    if o.aligned.is_some() && o.secaligned.is_some() {
        return Err(UsageError::new(
            "'-A' and '--secaligned' cannot be combined",
        ));
    }
    if o.relative && (o.aligned.is_some() || o.secaligned.is_some()) {
        return Err(UsageError::new("'-r' cannot be combined with '-A' or '--secaligned': aligned wake-ups need absolute sleeps"));
    }
    if o.spike_nodes == 0 && o.spike.is_some() {
        return Err(UsageError::new(
            "invalid value for '--spike-nodes': at least 1",
        ));
    }
    if o.spike_nodes > SPIKE_NODES_MAX {
        return Err(UsageError::new(format!(
            "invalid value '{}' for '--spike-nodes': use 1..{SPIKE_NODES_MAX}",
            o.spike_nodes
        )));
    }
    if let Some(h) = o.histogram.filter(|&h| h > HIST_MAX) {
        return Err(UsageError::new(format!(
            "invalid value '{h}' for '-h': use 1..{HIST_MAX} (buckets of 1 us or 1 ns)"
        )));
    }
    Ok(())
}

fn policy_and_priority(
    o: &CtOptions,
    n: usize,
    notices: &mut Vec<String>,
) -> (Policy, i32, String) {
    let mut policy = match o.policy.as_deref() {
        Some("fifo") => Policy::Fifo,
        Some("rr") => Policy::Rr,
        Some("batch") => Policy::Batch,
        Some("idle") => Policy::Idle,
        Some(_) => Policy::Other,
        None if o.priority.is_some() => Policy::Fifo,
        None => Policy::Other,
    };
    let mut prio = o.priority.unwrap_or(0);
    let rt = |p: Policy| matches!(p, Policy::Fifo | Policy::Rr);
    if o.priospread && prio == 0 {
        notices.push(format!("defaulting realtime priority to {}", n + 1));
        prio = n as i32 + 1;
    }
    if prio > 0 && !rt(policy) {
        notices.push("policy and priority don't match: setting policy to SCHED_FIFO".into());
        policy = Policy::Fifo;
    }
    if rt(policy) && prio == 0 {
        notices.push(format!("defaulting realtime priority to {}", n + 1));
        prio = n as i32 + 1;
    }
    let label = if prio > 0 {
        policy.name().to_string()
    } else {
        format!("{}/other", policy.name())
    };
    (policy, prio.min(99), label)
}

fn run_config(o: &CtOptions, threads: Vec<ThreadSpec>, unit: Nanos) -> RunConfig {
    let mut c = RunConfig::new(threads);
    c.clock = if o.clock == 1 {
        ClockKind::Realtime
    } else {
        ClockKind::Monotonic
    };
    c.sleep = if o.relative {
        SleepMode::Relative
    } else {
        SleepMode::Absolute
    };
    c.loops = (o.loops > 0).then_some(o.loops);
    c.duration = o.duration.filter(|d| d.0 > 0);
    c.mlock = o.mlockall;
    // cyclictest compares truncated units: `latency_units > limit` <=> `ns >= (limit + 1) × unit`.
    let above = |limit: u64| Nanos((limit + 1).saturating_mul(unit.0) - 1);
    c.break_threshold = o.breaktrace.filter(|&b| b > 0).map(above);
    c.tracemark = o.tracemark && c.break_threshold.is_some();
    c.alignment = match (o.aligned, o.secaligned) {
        (Some(us), _) => Alignment::Aligned(Nanos::from_us(us)),
        (_, Some(us)) => Alignment::Second(Nanos::from_us(us)),
        _ => Alignment::None,
    };
    c.linear = o.histogram.map(|h| {
        let buckets = h.min(HIST_MAX);
        LinearSpec {
            unit,
            buckets,
            overflow_cycles: buckets,
        }
    });
    c.sample_ring = (o.verbose || o.raw).then_some(VERBOSE_RING);
    c.event_threshold = o.spike.map(above);
    c.event_capacity = o.spike_nodes;
    c
}

/// The online CPUs of this machine.
pub fn online() -> CpuSet {
    sys::online_cpus()
}

#[cfg(test)]
mod tests {
    use super::super::args::parse;
    use super::*;

    fn plan(v: &str) -> Result<Plan, UsageError> {
        let o = parse(&v.split_whitespace().map(String::from).collect::<Vec<_>>()).unwrap();
        lower(&o, &CpuSet::from_cpus(0..4))
    }

    #[test]
    fn smi_needs_pinned_threads_and_no_per_sample_output() {
        let e = plan("--smi -p90 -l1").err().unwrap().to_string();
        assert!(e.contains("'--smi' needs '-a'"), "{e}");
        let e = plan("--smi -a -v -l1").err().unwrap().to_string();
        assert!(e.contains("cannot be combined with '-v'"), "{e}");
        assert!(plan("--smi -a 1 -l1").is_ok());
        assert!(plan("--smi -S -l1").is_ok());
    }

    #[test]
    fn smp_runs_one_pinned_thread_per_cpu_with_the_distance() {
        let p = plan("-S -p90 -i200").unwrap();
        assert_eq!(p.cpus, vec![0, 1, 2, 3]);
        assert_eq!(p.prios, vec![90; 4]);
        let iv: Vec<u64> = p
            .config
            .threads
            .iter()
            .map(|t| t.interval.as_us_trunc())
            .collect();
        assert_eq!(iv, vec![200, 700, 1200, 1700]);
        assert_eq!(p.policy_label, "fifo");
    }

    #[test]
    fn histogram_forces_distance_zero_and_warns_on_explicit_distance() {
        let p = plan("-S -p90 -i200 -h400 -d100").unwrap();
        assert!(p
            .config
            .threads
            .iter()
            .all(|t| t.interval == Nanos::from_us(200)));
        assert!(p.notices.iter().any(|n| n.contains("distance is ignored")));
        assert_eq!(p.config.linear.unwrap().buckets, 400);
    }

    #[test]
    fn threads_spread_over_an_affinity_set() {
        let p = plan("-t5 -a 3,0 -p80").unwrap();
        assert_eq!(p.cpus, vec![0, 3, 0, 3, 0]);
        let p = plan("-t3").unwrap();
        assert_eq!(p.cpus, vec![-1, -1, -1]);
        assert_eq!(p.policy_label, "other/other");
    }

    #[test]
    fn priospread_and_default_priorities() {
        let p = plan("-t3 -p50 --priospread").unwrap();
        assert_eq!(p.prios, vec![50, 49, 48]);
        let p = plan("-t2 --policy=fifo").unwrap();
        assert_eq!(p.prios, vec![3, 3]);
    }

    #[test]
    fn an_hour_is_the_longest_interval_and_a_histogram_ignores_the_distance() {
        let p = plan("-i 3600000000 -l2").unwrap();
        assert_eq!(p.config.threads[0].interval, rtscope_engine::MAX_INTERVAL);
        // -h sets the distance to 0: a huge -d then changes nothing.
        assert!(plan("-t2 -i 1000 -d 99999999999 -h 10").is_ok());
    }

    #[test]
    fn break_threshold_matches_truncated_microseconds() {
        let p = plan("-b 100").unwrap();
        assert_eq!(p.config.break_threshold, Some(Nanos(100_999)));
    }

    #[test]
    fn rejects_invalid_values_naming_the_flag() {
        for (args, needle) in [
            ("-i 0", "'-i'"),
            ("-p 100", "'-p'"),
            ("-a 7", "CPU 7 is not online"),
            ("-h 0", "'-h'"),
            ("-c 3", "'-c'"),
            ("-t 100000", "more than this system allows"),
            ("-o 5", "'-o'"),
            (
                "-i 3600000001",
                "use 1..3600000000 (microseconds, at most 1 hour)",
            ),
            ("-i 99999999999", "invalid value '99999999999' for '-i'"),
            (
                "-t3 -i 1000 -d 1800000000",
                "invalid value '1800000000' for '-d': thread 2 would run at 3600001000 us",
            ),
        ] {
            let e = plan(args).unwrap_err().to_string();
            assert!(e.contains(needle), "{args}: {e}");
        }
    }
}
