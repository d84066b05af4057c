//! CPU checks: isolation (isolcpus, nohz_full, rcu_nocbs), cpufreq, SMT and idle states.

use super::{join_limited, per_cpu_summary, Ctx};
use crate::sys::{format_cpulist, isolcpus_list, parse_cpulist};
use crate::{CheckId, Finding, Verdict};

const CPU_DIR: &str = "/sys/devices/system/cpu";

/// Exit latency (µs) above which an idle state counts as deep.
pub(crate) const DEEP_IDLE_US: u64 = 10;

/// The measured CPUs that are not in `set`.
fn missing(ctx: &Ctx, set: &[u32]) -> Vec<u32> {
    ctx.cpus
        .iter()
        .copied()
        .filter(|c| !set.contains(c))
        .collect()
}

/// The CPUs to suggest for a boot parameter: the measured ones, minus CPU 0 if that would
/// leave no housekeeping CPU.
fn suggested(ctx: &Ctx) -> String {
    let mut cpus = ctx.cpus.clone();
    if ctx.others().is_empty() && cpus.len() > 1 {
        cpus.retain(|&c| c != ctx.online.first().copied().unwrap_or(0));
    }
    format_cpulist(&cpus)
}

fn isolation_finding(
    ctx: &Ctx,
    check: CheckId,
    set: &[u32],
    evidence: Vec<String>,
    fix: String,
) -> Finding {
    let out = missing(ctx, set);
    let verdict = if out.is_empty() {
        Verdict::Ok
    } else {
        Verdict::Warn
    };
    let mut evidence = evidence.join("; ");
    if !out.is_empty() {
        evidence.push_str(&format!(
            "; measured CPUs not covered: {}",
            format_cpulist(&out)
        ));
    }
    let setting = if set.is_empty() {
        "none".to_owned()
    } else {
        format_cpulist(set)
    };
    Finding::new(check, verdict, evidence)
        .fix_if_needed(fix)
        .setting(setting)
}

pub(crate) fn isolcpus(ctx: &Ctx) -> Finding {
    let mut set = Vec::new();
    let mut evidence = Vec::new();
    if let Some(v) = ctx.sys.read(&format!("{CPU_DIR}/isolated")) {
        evidence.push(format!("{CPU_DIR}/isolated = {v}"));
        set.extend(parse_cpulist(&v).unwrap_or_default());
    } else {
        evidence.push(format!("{CPU_DIR}/isolated empty"));
    }
    if let Some(v) = ctx.cmdline_value("isolcpus") {
        evidence.push(format!("/proc/cmdline: isolcpus={v}"));
        set.extend(isolcpus_list(v).unwrap_or_default());
    }
    if let Some(v) = ctx.sys.read("/sys/fs/cgroup/cpuset.cpus.isolated") {
        evidence.push(format!("cgroup isolated partition: {v}"));
        set.extend(parse_cpulist(&v).unwrap_or_default());
    }
    set.sort_unstable();
    set.dedup();
    let fix = format!(
        "boot with isolcpus=nohz,domain,managed_irq,{} (or make them an isolated cpuset partition) and measure only there",
        suggested(ctx)
    );
    isolation_finding(ctx, CheckId::Isolcpus, &set, evidence, fix)
}

/// The nohz_full CPUs and the evidence.
fn nohz_full_set(ctx: &Ctx) -> (Vec<u32>, Vec<String>) {
    let mut evidence = Vec::new();
    let mut set = Vec::new();
    match ctx.sys.read(&format!("{CPU_DIR}/nohz_full")) {
        Some(v) => {
            evidence.push(format!("{CPU_DIR}/nohz_full = {v}"));
            set.extend(parse_cpulist(&v).unwrap_or_default());
        }
        None => evidence.push(format!("no {CPU_DIR}/nohz_full")),
    }
    if let Some(v) = ctx.cmdline_value("nohz_full") {
        evidence.push(format!("/proc/cmdline: nohz_full={v}"));
        set.extend(parse_cpulist(v).unwrap_or_default());
    }
    set.sort_unstable();
    set.dedup();
    (set, evidence)
}

pub(crate) fn nohz_full(ctx: &Ctx) -> Finding {
    let (set, mut evidence) = nohz_full_set(ctx);
    let built = ctx.config().map(|c| c.is_y("CONFIG_NO_HZ_FULL"));
    if let Some(b) = built {
        evidence.push(format!(
            "CONFIG_NO_HZ_FULL{}",
            if b { "=y" } else { " not set" }
        ));
    }
    let fix = if built == Some(false) {
        format!(
            "build the kernel with CONFIG_NO_HZ_FULL=y, then boot with nohz_full={}",
            suggested(ctx)
        )
    } else {
        format!("boot with nohz_full={}", suggested(ctx))
    };
    isolation_finding(ctx, CheckId::NohzFull, &set, evidence, fix)
}

pub(crate) fn rcu_nocbs(ctx: &Ctx) -> Finding {
    let mut evidence = Vec::new();
    let mut set = Vec::new();
    if ctx
        .config()
        .is_some_and(|c| c.is_y("CONFIG_RCU_NOCB_CPU_DEFAULT_ALL"))
    {
        evidence.push("CONFIG_RCU_NOCB_CPU_DEFAULT_ALL=y".to_owned());
        set.extend(ctx.online.iter().copied());
    }
    match ctx.cmdline_value("rcu_nocbs") {
        Some(v) => {
            evidence.push(format!("/proc/cmdline: rcu_nocbs={v}"));
            set.extend(parse_cpulist(v).unwrap_or_default());
        }
        None => evidence.push("no rcu_nocbs= on the command line".to_owned()),
    }
    let (nohz, _) = nohz_full_set(ctx);
    if !nohz.is_empty() {
        evidence.push(format!(
            "nohz_full={} (implies rcu_nocbs)",
            format_cpulist(&nohz)
        ));
        set.extend(nohz);
    }
    set.sort_unstable();
    set.dedup();
    let fix = format!(
        "boot with rcu_nocbs={} (needs CONFIG_RCU_NOCB_CPU=y)",
        suggested(ctx)
    );
    isolation_finding(ctx, CheckId::RcuNocbs, &set, evidence, fix)
}

/// `cpuN/cpufreq/<file>` for every measured CPU that has it.
fn cpufreq(ctx: &Ctx, file: &str) -> Vec<(u32, String)> {
    ctx.cpus
        .iter()
        .filter_map(|&c| {
            Some((
                c,
                ctx.sys.read(&format!("{CPU_DIR}/cpu{c}/cpufreq/{file}"))?,
            ))
        })
        .collect()
}

pub(crate) fn governor(ctx: &Ctx) -> Finding {
    let govs = cpufreq(ctx, "scaling_governor");
    if govs.is_empty() {
        return Finding::unavailable(
            CheckId::Governor,
            format!(
                "no {CPU_DIR}/cpuN/cpufreq/scaling_governor for CPUs {} (no cpufreq driver: a VM, or fixed clock)",
                ctx.cpu_list()
            ),
        );
    }
    let slow: Vec<u32> = govs
        .iter()
        .filter(|(_, g)| g != "performance")
        .map(|(c, _)| *c)
        .collect();
    let drivers = cpufreq(ctx, "scaling_driver");
    let mut evidence = format!("scaling_governor: {}", per_cpu_summary(&govs));
    if !drivers.is_empty() {
        evidence.push_str(&format!("; driver: {}", per_cpu_summary(&drivers)));
    }
    let verdict = if slow.is_empty() {
        Verdict::Ok
    } else {
        Verdict::Warn
    };
    Finding::new(CheckId::Governor, verdict, evidence)
        .fix_if_needed(format!(
            "cpupower -c {} frequency-set -g performance",
            format_cpulist(&slow)
        ))
        .setting(per_cpu_summary(&govs))
}

pub(crate) fn frequency(ctx: &Ctx) -> Finding {
    let min = cpufreq(ctx, "scaling_min_freq");
    let max = cpufreq(ctx, "scaling_max_freq");
    let hw_max = cpufreq(ctx, "cpuinfo_max_freq");
    if min.is_empty() || max.is_empty() {
        return Finding::unavailable(
            CheckId::Frequency,
            format!(
                "no {CPU_DIR}/cpuN/cpufreq/scaling_min_freq for CPUs {}",
                ctx.cpu_list()
            ),
        );
    }
    let govs = cpufreq(ctx, "scaling_governor");
    let get = |list: &[(u32, String)], cpu: u32| -> Option<u64> {
        list.iter().find(|(c, _)| *c == cpu)?.1.parse().ok()
    };
    let mut varying = Vec::new();
    let mut capped = Vec::new();
    let mut ranges = Vec::new();
    for &(cpu, _) in &min {
        let (Some(lo), Some(hi)) = (get(&min, cpu), get(&max, cpu)) else {
            continue;
        };
        let perf = govs.iter().any(|(c, g)| *c == cpu && g == "performance");
        if lo < hi && !perf {
            varying.push(cpu);
        }
        if get(&hw_max, cpu).is_some_and(|h| hi < h) {
            capped.push(cpu);
        }
        ranges.push((cpu, format!("{}-{} MHz", lo / 1000, hi / 1000)));
    }
    let mut evidence = format!(
        "scaling_min_freq-scaling_max_freq: {}",
        per_cpu_summary(&ranges)
    );
    if !hw_max.is_empty() {
        evidence.push_str(&format!(
            "; cpuinfo_max_freq: {} kHz",
            per_cpu_summary(&hw_max)
        ));
    }
    if !capped.is_empty() {
        evidence.push_str(&format!(
            "; capped below the hardware maximum on CPUs {}",
            format_cpulist(&capped)
        ));
    }
    let verdict = if varying.is_empty() && capped.is_empty() {
        Verdict::Ok
    } else {
        Verdict::Warn
    };
    let list = format_cpulist(&[varying, capped].concat());
    Finding::new(CheckId::Frequency, verdict, evidence)
        .fix_if_needed(format!(
            "pin the clock: cpupower -c {list} frequency-set -g performance (or set scaling_min_freq = scaling_max_freq = cpuinfo_max_freq)"
        ))
        .setting(per_cpu_summary(&ranges))
}

/// The thread siblings of each measured CPU that has more than itself.
fn siblings(ctx: &Ctx) -> Vec<(u32, String)> {
    ctx.cpus
        .iter()
        .filter_map(|&c| {
            let s = ctx
                .sys
                .read(&format!("{CPU_DIR}/cpu{c}/topology/thread_siblings_list"))?;
            (parse_cpulist(&s)?.len() > 1).then_some((c, s))
        })
        .collect()
}

pub(crate) fn smt(ctx: &Ctx) -> Finding {
    let control = ctx.sys.read(&format!("{CPU_DIR}/smt/control"));
    let shared = siblings(ctx);
    let shared_text = shared
        .iter()
        .map(|(c, s)| format!("cpu{c} shares a core with {s}"))
        .collect::<Vec<_>>();
    let mut evidence = match &control {
        Some(c) => format!("{CPU_DIR}/smt/control = {c}"),
        None => format!("no {CPU_DIR}/smt/control"),
    };
    if !shared_text.is_empty() {
        evidence.push_str(&format!("; {}", join_limited(&shared_text, 4)));
    }
    let (verdict, setting) = match control.as_deref() {
        Some("off" | "forceoff") => (Verdict::Ok, "off"),
        Some("notsupported" | "notimplemented") => (Verdict::Ok, "not supported"),
        Some(_) if !shared.is_empty() => (Verdict::Warn, "on"),
        Some(_) => (Verdict::Ok, "on, no sibling on the measured CPUs"),
        None if shared.is_empty() => (Verdict::Ok, "no siblings"),
        None => (Verdict::Warn, "on"),
    };
    Finding::new(CheckId::Smt, verdict, evidence)
        .fix_if_needed(
            "echo off > /sys/devices/system/cpu/smt/control (at boot: nosmt), or keep the siblings idle (isolate them too)",
        )
        .setting(setting)
}

/// One idle state of one CPU.
pub(crate) struct IdleState {
    pub(crate) cpu: u32,
    pub(crate) name: String,
    /// Exit latency, µs.
    pub(crate) latency_us: u64,
    pub(crate) disabled: bool,
}

/// The idle states of the measured CPUs.
pub(crate) fn idle_states_of(ctx: &Ctx) -> Vec<IdleState> {
    let mut out = Vec::new();
    for &cpu in &ctx.cpus {
        let dir = format!("{CPU_DIR}/cpu{cpu}/cpuidle");
        for k in ctx.sys.numbered(&dir, "state") {
            let s = format!("{dir}/state{k}");
            let Some(latency_us) = ctx.sys.read_i64(&format!("{s}/latency")) else {
                continue;
            };
            out.push(IdleState {
                cpu,
                name: ctx
                    .sys
                    .read(&format!("{s}/name"))
                    .unwrap_or_else(|| format!("state{k}")),
                latency_us: latency_us.max(0) as u64,
                disabled: ctx.sys.read_i64(&format!("{s}/disable")).unwrap_or(0) != 0,
            });
        }
    }
    out
}

/// The PM QoS CPU latency constraint now in force (µs), read from /dev/cpu_dma_latency: a
/// native-endian 32-bit integer. 2,000,000,000 means no request.
pub(crate) fn qos_constraint_us(ctx: &Ctx) -> Option<i64> {
    let bytes = ctx.sys.read_bytes("/dev/cpu_dma_latency")?;
    let word: [u8; 4] = bytes.get(..4)?.try_into().ok()?;
    Some(i64::from(i32::from_ne_bytes(word)))
}

/// The deepest exit latency (µs) the idle governor may use on the measured CPUs: enabled
/// states within the PM QoS constraint.
pub(crate) fn deepest_usable_us(states: &[IdleState], qos: Option<i64>) -> Option<u64> {
    let limit = qos.map_or(u64::MAX, |q| q.max(0) as u64);
    states
        .iter()
        .filter(|s| !s.disabled && s.latency_us <= limit)
        .map(|s| s.latency_us)
        .max()
}

pub(crate) fn idle_states(ctx: &Ctx) -> Finding {
    let governor = ctx
        .sys
        .read(&format!("{CPU_DIR}/cpuidle/current_governor"))
        .or_else(|| {
            ctx.sys
                .read(&format!("{CPU_DIR}/cpuidle/current_governor_ro"))
        });
    let driver = ctx.sys.read(&format!("{CPU_DIR}/cpuidle/current_driver"));
    let states = idle_states_of(ctx);
    let mut evidence = Vec::new();
    for key in ["idle", "processor.max_cstate", "intel_idle.max_cstate"] {
        if let Some(v) = ctx.cmdline_value(key) {
            evidence.push(format!("/proc/cmdline: {key}={v}"));
        }
    }
    if states.is_empty() {
        let polling = ctx.cmdline_value("idle") == Some("poll");
        let verdict = if polling {
            Verdict::Ok
        } else {
            Verdict::Unavailable
        };
        evidence.push(format!(
            "no {CPU_DIR}/cpuN/cpuidle/state* for CPUs {}",
            ctx.cpu_list()
        ));
        return Finding::new(CheckId::IdleStates, verdict, evidence.join("; "));
    }
    let qos = qos_constraint_us(ctx);
    let first = states[0].cpu;
    let list: Vec<String> = states
        .iter()
        .filter(|s| s.cpu == first)
        .map(|s| {
            let off = if s.disabled { " disabled" } else { "" };
            format!("{} {} µs{off}", s.name, s.latency_us)
        })
        .collect();
    evidence.push(format!("cpu{first}: {}", list.join(", ")));
    if let Some(g) = &governor {
        evidence.push(format!("governor {g}"));
    }
    if let Some(d) = &driver {
        evidence.push(format!("driver {d}"));
    }
    if let Some(q) = qos {
        evidence.push(format!("PM QoS limit {q} µs (/dev/cpu_dma_latency)"));
    }
    let deepest = deepest_usable_us(&states, qos).unwrap_or(0);
    evidence.push(format!("deepest usable exit latency {deepest} µs"));
    let verdict = if deepest > DEEP_IDLE_US {
        Verdict::Warn
    } else {
        Verdict::Ok
    };
    Finding::new(CheckId::IdleStates, verdict, evidence.join("; "))
        .fix_if_needed(format!(
            "hold /dev/cpu_dma_latency during the run (rtscope measure --latency 0), or cpupower -c {} idle-set -D {DEEP_IDLE_US} (at boot: processor.max_cstate=1 intel_idle.max_cstate=1)",
            ctx.cpu_list()
        ))
        .setting(format!("{deepest} µs"))
}
