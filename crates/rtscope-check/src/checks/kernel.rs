//! Kernel checks: PREEMPT_RT, the preemption model, debugging options, RT throttling, timer
//! migration, the lockup watchdogs, the clocksource, lockdown and tracefs.

use super::Ctx;
use crate::sys::parse_cpulist;
use crate::{CheckId, Finding, Verdict};

/// Whether the running kernel is PREEMPT_RT, with the evidence.
pub(crate) fn is_rt(ctx: &Ctx) -> (Option<bool>, Vec<String>) {
    let mut evidence = Vec::new();
    let mut votes = Vec::new();
    match ctx.sys.read("/sys/kernel/realtime") {
        Some(v) => {
            votes.push(v == "1");
            evidence.push(format!("/sys/kernel/realtime = {v}"));
        }
        None => evidence.push("no /sys/kernel/realtime".to_owned()),
    }
    if let Some(u) = &ctx.uname {
        votes.push(u.version.split_whitespace().any(|w| w == "PREEMPT_RT"));
        evidence.push(format!("uname -v: {}", u.version));
    }
    if let Some(cfg) = ctx.config() {
        let rt = cfg.is_y("CONFIG_PREEMPT_RT");
        votes.push(rt);
        evidence.push(format!(
            "{}: CONFIG_PREEMPT_RT{}",
            cfg.source,
            if rt { "=y" } else { " not set" }
        ));
    }
    let verdict = if votes.is_empty() {
        None
    } else {
        Some(votes.iter().any(|&v| v))
    };
    (verdict, evidence)
}

pub(crate) fn preempt_rt(ctx: &Ctx) -> Finding {
    let (rt, evidence) = is_rt(ctx);
    let release = ctx
        .uname
        .as_ref()
        .map_or("unknown kernel", |u| u.release.as_str());
    let Some(rt) = rt else {
        return Finding::unavailable(CheckId::PreemptRt, evidence.join("; "));
    };
    let package = match ctx.uname.as_ref().map(|u| u.machine.as_str()) {
        Some("aarch64") => "linux-image-rt-arm64",
        Some("armv7l") => "linux-image-rt-armmp",
        _ => "linux-image-rt-amd64",
    };
    let verdict = if rt { Verdict::Ok } else { Verdict::Warn };
    Finding::new(CheckId::PreemptRt, verdict, evidence.join("; "))
        .fix_if_needed(format!(
            "install a PREEMPT_RT kernel (Debian: apt install {package}) or build one with CONFIG_PREEMPT_RT=y (mainline since 6.12)"
        ))
        .setting(format!("{release} {}", if rt { "PREEMPT_RT" } else { "not-RT" }))
}

/// The preemption model and where it was read.
fn preemption_mode(ctx: &Ctx) -> Option<(String, String, bool)> {
    let dynamic = ctx
        .uname
        .as_ref()
        .is_some_and(|u| u.version.contains("PREEMPT_DYNAMIC"))
        || ctx
            .config()
            .is_some_and(|c| c.is_y("CONFIG_PREEMPT_DYNAMIC"));
    if let Some(line) = ctx.sys.read("/sys/kernel/debug/sched/preempt") {
        let current = line
            .split_whitespace()
            .find_map(|w| w.strip_prefix('(')?.strip_suffix(')'));
        if let Some(c) = current {
            return Some((
                c.to_owned(),
                format!("/sys/kernel/debug/sched/preempt: {line}"),
                true,
            ));
        }
    }
    if dynamic {
        if let Some(v) = ctx.cmdline_value("preempt") {
            return Some((v.to_owned(), format!("/proc/cmdline: preempt={v}"), true));
        }
    }
    if let Some(cfg) = ctx.config() {
        let mode = [
            ("CONFIG_PREEMPT_NONE", "none"),
            ("CONFIG_PREEMPT_VOLUNTARY", "voluntary"),
            ("CONFIG_PREEMPT", "full"),
            ("CONFIG_PREEMPT_LAZY", "lazy"),
        ]
        .into_iter()
        .find(|(k, _)| cfg.is_y(k));
        if let Some((key, mode)) = mode {
            let how = if dynamic {
                "the build default of PREEMPT_DYNAMIC, no preempt= on the command line"
            } else {
                "built in"
            };
            return Some((
                mode.to_owned(),
                format!("{}: {key}=y ({how})", cfg.source),
                dynamic,
            ));
        }
    }
    let version = &ctx.uname.as_ref()?.version;
    let words: Vec<&str> = version.split_whitespace().collect();
    let mode = if words.contains(&"PREEMPT_LAZY") {
        "lazy"
    } else if words.contains(&"PREEMPT") {
        "full"
    } else if dynamic {
        return None;
    } else {
        "none or voluntary"
    };
    Some((mode.to_owned(), format!("uname -v: {version}"), dynamic))
}

pub(crate) fn preemption(ctx: &Ctx) -> Finding {
    if is_rt(ctx).0 == Some(true) {
        return Finding::new(
            CheckId::Preemption,
            Verdict::Ok,
            "full (PREEMPT_RT kernel, see preempt_rt)",
        )
        .setting("rt");
    }
    let Some((mode, evidence, dynamic)) = preemption_mode(ctx) else {
        return Finding::unavailable(
            CheckId::Preemption,
            "PREEMPT_DYNAMIC kernel, but /sys/kernel/debug/sched/preempt is not readable (debugfs not mounted?), no preempt= on the command line and no kernel config",
        )
        .fix("mount -t debugfs none /sys/kernel/debug && cat /sys/kernel/debug/sched/preempt");
    };
    let verdict = match mode.as_str() {
        "full" | "lazy" => Verdict::Ok,
        _ => Verdict::Bad,
    };
    let fix = if dynamic && ctx.sys.read("/sys/kernel/debug/sched/preempt").is_some() {
        "boot with preempt=full (or now: echo full > /sys/kernel/debug/sched/preempt)"
    } else if dynamic {
        "boot with preempt=full (or now, debugfs is not mounted: mount -t debugfs none /sys/kernel/debug && echo full > /sys/kernel/debug/sched/preempt)"
    } else {
        "use a kernel built with CONFIG_PREEMPT=y, better CONFIG_PREEMPT_RT=y"
    };
    Finding::new(
        CheckId::Preemption,
        verdict,
        format!("mode {mode}; {evidence}"),
    )
    .fix_if_needed(fix)
    .setting(mode)
}

/// Kernel options that slow every lock or allocation.
const DEBUG_OPTIONS: &[&str] = &[
    "CONFIG_PROVE_LOCKING",
    "CONFIG_LOCKDEP",
    "CONFIG_DEBUG_LOCK_ALLOC",
    "CONFIG_DEBUG_PREEMPT",
    "CONFIG_DEBUG_OBJECTS",
    "CONFIG_DEBUG_PAGEALLOC_ENABLE_DEFAULT",
    "CONFIG_KASAN",
    "CONFIG_KCSAN",
    "CONFIG_KMSAN",
    "CONFIG_SLUB_DEBUG_ON",
    "CONFIG_DEBUG_ATOMIC_SLEEP",
    "CONFIG_PREEMPT_TRACER",
    "CONFIG_IRQSOFF_TRACER",
];

pub(crate) fn kernel_debug(ctx: &Ctx) -> Finding {
    let Some(cfg) = ctx.config() else {
        return Finding::unavailable(
            CheckId::KernelDebug,
            "no kernel config (/proc/config.gz needs CONFIG_IKCONFIG_PROC; /boot/config-<release> absent)",
        );
    };
    let on: Vec<&str> = DEBUG_OPTIONS
        .iter()
        .copied()
        .filter(|k| cfg.is_y(k))
        .collect();
    if on.is_empty() {
        return Finding::new(
            CheckId::KernelDebug,
            Verdict::Ok,
            format!("{}: none of {} set", cfg.source, DEBUG_OPTIONS.len()),
        )
        .setting("none");
    }
    Finding::new(
        CheckId::KernelDebug,
        Verdict::Warn,
        format!("{}: {}", cfg.source, on.join("=y, ") + "=y"),
    )
    .fix(format!("build the kernel without {}", on.join(", ")))
    .setting(on.join(","))
}

pub(crate) fn rt_throttling(ctx: &Ctx) -> Finding {
    let Some(runtime) = ctx.sys.read_i64("/proc/sys/kernel/sched_rt_runtime_us") else {
        return Finding::unavailable(
            CheckId::RtThrottling,
            "no /proc/sys/kernel/sched_rt_runtime_us",
        );
    };
    let period = ctx.sys.read_i64("/proc/sys/kernel/sched_rt_period_us");
    let mut evidence = format!("/proc/sys/kernel/sched_rt_runtime_us = {runtime}");
    if let Some(p) = period {
        evidence.push_str(&format!("; sched_rt_period_us = {p}"));
        if runtime >= 0 && p > 0 {
            evidence.push_str(&format!(
                " (RT tasks get at most {:.0} % of each period)",
                runtime as f64 * 100.0 / p as f64
            ));
        }
    }
    let verdict = if runtime < 0 {
        Verdict::Ok
    } else {
        Verdict::Warn
    };
    Finding::new(CheckId::RtThrottling, verdict, evidence)
        .fix_if_needed("sysctl -w kernel.sched_rt_runtime_us=-1")
        .setting(runtime.to_string())
}

/// A 0/1 sysctl whose recommended value is 0.
fn off_sysctl(ctx: &Ctx, check: CheckId, file: &str, fix: &str) -> Finding {
    match ctx.sys.read_i64(file) {
        None => Finding::unavailable(check, format!("no {file}")),
        Some(v) => {
            let verdict = if v == 0 { Verdict::Ok } else { Verdict::Warn };
            Finding::new(check, verdict, format!("{file} = {v}"))
                .fix_if_needed(fix)
                .setting(if v == 0 { "off" } else { "on" })
        }
    }
}

pub(crate) fn timer_migration(ctx: &Ctx) -> Finding {
    off_sysctl(
        ctx,
        CheckId::TimerMigration,
        "/proc/sys/kernel/timer_migration",
        "sysctl -w kernel.timer_migration=0",
    )
}

pub(crate) fn nmi_watchdog(ctx: &Ctx) -> Finding {
    let file = "/proc/sys/kernel/nmi_watchdog";
    if ctx.sys.read_i64("/proc/sys/kernel/watchdog") == Some(0) {
        return Finding::new(
            CheckId::NmiWatchdog,
            Verdict::Ok,
            "/proc/sys/kernel/watchdog = 0 (both lockup detectors off)",
        )
        .setting("off");
    }
    if ctx.sys.exists(file) {
        return off_sysctl(
            ctx,
            CheckId::NmiWatchdog,
            file,
            "sysctl -w kernel.nmi_watchdog=0 (at boot: nmi_watchdog=0)",
        );
    }
    match ctx.cmdline_value("nmi_watchdog") {
        Some(v) => Finding::new(
            CheckId::NmiWatchdog,
            if v == "0" { Verdict::Ok } else { Verdict::Warn },
            format!("no {file}; /proc/cmdline: nmi_watchdog={v}"),
        ),
        None => Finding::new(
            CheckId::NmiWatchdog,
            Verdict::Ok,
            format!("no {file}: this kernel has no hard lockup detector"),
        )
        .setting("absent"),
    }
}

pub(crate) fn soft_watchdog(ctx: &Ctx) -> Finding {
    let sys = ctx.sys;
    if ctx.cmdline_value("nosoftlockup").is_some() {
        return Finding::new(
            CheckId::SoftWatchdog,
            Verdict::Ok,
            "/proc/cmdline: nosoftlockup",
        )
        .setting("off");
    }
    let on = match (
        sys.read_i64("/proc/sys/kernel/watchdog"),
        sys.read_i64("/proc/sys/kernel/soft_watchdog"),
    ) {
        (None, None) => {
            return Finding::unavailable(
                CheckId::SoftWatchdog,
                "no /proc/sys/kernel/soft_watchdog or /proc/sys/kernel/watchdog",
            )
        }
        (w, s) => w != Some(0) && s != Some(0),
    };
    let mask = sys.read("/proc/sys/kernel/watchdog_cpumask");
    let mut evidence = format!(
        "/proc/sys/kernel/soft_watchdog = {}",
        sys.read("/proc/sys/kernel/soft_watchdog")
            .unwrap_or_else(|| "(absent)".to_owned())
    );
    if let Some(m) = &mask {
        evidence.push_str(&format!("; watchdog_cpumask = {m}"));
    }
    let covered: Vec<u32> = match mask.as_deref().and_then(parse_cpulist) {
        Some(list) => ctx
            .cpus
            .iter()
            .copied()
            .filter(|c| list.contains(c))
            .collect(),
        None => ctx.cpus.clone(),
    };
    let verdict = if on && !covered.is_empty() {
        Verdict::Warn
    } else {
        Verdict::Ok
    };
    let others = crate::sys::format_cpulist(&ctx.others());
    let fix = if others.is_empty() {
        "sysctl -w kernel.soft_watchdog=0 (at boot: nosoftlockup)".to_owned()
    } else {
        format!("sysctl -w kernel.watchdog_cpumask={others}, or sysctl -w kernel.soft_watchdog=0 (at boot: nosoftlockup)")
    };
    Finding::new(CheckId::SoftWatchdog, verdict, evidence)
        .fix_if_needed(fix)
        .setting(if on { "on" } else { "off" })
}

pub(crate) fn clocksource(ctx: &Ctx) -> Finding {
    let dir = "/sys/devices/system/clocksource/clocksource0";
    let Some(current) = ctx.sys.read(&format!("{dir}/current_clocksource")) else {
        return Finding::unavailable(
            CheckId::Clocksource,
            format!("no {dir}/current_clocksource"),
        );
    };
    let available = ctx
        .sys
        .read(&format!("{dir}/available_clocksource"))
        .unwrap_or_default();
    let verdict = match current.as_str() {
        "jiffies" | "refined-jiffies" => Verdict::Bad,
        "hpet" | "acpi_pm" | "pit" => Verdict::Warn,
        _ => Verdict::Ok,
    };
    let better = ["tsc", "arch_sys_counter", "kvm-clock"]
        .into_iter()
        .find(|c| available.split_whitespace().any(|a| a == *c));
    let fix = match better {
        Some(b) => format!("echo {b} > {dir}/current_clocksource (at boot: clocksource={b}); check dmesg for 'clocksource' watchdog messages"),
        None => "check dmesg for why the TSC or architected timer was marked unstable".to_owned(),
    };
    Finding::new(
        CheckId::Clocksource,
        verdict,
        format!("{dir}/current_clocksource = {current}; available: {available}"),
    )
    .fix_if_needed(fix)
    .setting(current)
}

pub(crate) fn lockdown(ctx: &Ctx) -> Finding {
    let file = "/sys/kernel/security/lockdown";
    let Some(line) = ctx.sys.read(file) else {
        return Finding::unavailable(
            CheckId::Lockdown,
            format!("no {file} (lockdown LSM not built in, or securityfs not mounted)"),
        );
    };
    let current = line
        .split_whitespace()
        .find_map(|w| w.strip_prefix('[')?.strip_suffix(']'))
        .unwrap_or("unknown")
        .to_owned();
    let verdict = if current == "confidentiality" {
        Verdict::Warn
    } else {
        Verdict::Ok
    };
    Finding::new(CheckId::Lockdown, verdict, format!("{file}: {line}"))
        .fix_if_needed("boot without lockdown=confidentiality (and with Secure Boot's lockdown relaxed) to trace latency spikes")
        .setting(current)
}

pub(crate) fn tracefs(ctx: &Ctx) -> Finding {
    let dir = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"]
        .into_iter()
        .find(|d| ctx.sys.exists(&format!("{d}/trace")));
    let Some(dir) = dir else {
        return Finding::new(
            CheckId::Tracefs,
            Verdict::Warn,
            "no /sys/kernel/tracing/trace or /sys/kernel/debug/tracing/trace (tracefs not mounted, or not root)",
        )
        .fix("mount -t tracefs nodev /sys/kernel/tracing")
        .setting("absent");
    };
    let tracers = ctx.sys.read(&format!("{dir}/available_tracers"));
    let instances = ctx.sys.exists(&format!("{dir}/instances"));
    let sched = ctx.sys.exists(&format!("{dir}/events/sched/sched_switch"));
    let mut evidence = format!(
        "{dir}: instances {}, sched_switch event {}",
        if instances { "yes" } else { "no" },
        if sched { "yes" } else { "no" }
    );
    match &tracers {
        Some(t) => evidence.push_str(&format!("; available_tracers: {t}")),
        None => evidence.push_str("; available_tracers not readable (needs root)"),
    }
    let timerlat = tracers
        .as_deref()
        .is_some_and(|t| t.split_whitespace().any(|w| w == "timerlat"));
    let verdict = if instances && sched && tracers.is_some() {
        Verdict::Ok
    } else {
        Verdict::Warn
    };
    Finding::new(CheckId::Tracefs, verdict, evidence)
        .fix_if_needed("run as root with tracefs mounted at /sys/kernel/tracing and CONFIG_FTRACE / sched events built in")
        .setting(if timerlat { "timerlat" } else if verdict == Verdict::Ok { "events" } else { "limited" })
}
