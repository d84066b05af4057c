//! Memory checks (THP, swap, NUMA balancing, vmstat) and the process's limits for locking
//! memory and real-time priority.

use super::Ctx;
use crate::sys::{Resource, Rlimit};
use crate::{CheckId, Finding, Verdict};

/// `CAP_IPC_LOCK` and `CAP_SYS_NICE` bit numbers.
const CAP_IPC_LOCK: u32 = 14;
const CAP_SYS_NICE: u32 = 23;

/// Below this RLIMIT_MEMLOCK (bytes), `mlockall(MCL_FUTURE)` makes allocations fail soon.
const MEMLOCK_TOO_SMALL: u64 = 32 << 20;

pub(crate) fn thp(ctx: &Ctx) -> Finding {
    let dir = "/sys/kernel/mm/transparent_hugepage";
    let Some(enabled) = ctx.sys.read(&format!("{dir}/enabled")) else {
        return Finding::new(
            CheckId::Thp,
            Verdict::Ok,
            format!("no {dir}/enabled (kernel without transparent huge pages)"),
        )
        .setting("absent");
    };
    let mode = bracketed(&enabled).unwrap_or("unknown").to_owned();
    let mut evidence = format!("{dir}/enabled: {enabled}");
    if let Some(d) = ctx.sys.read(&format!("{dir}/defrag")) {
        evidence.push_str(&format!("; defrag: {d}"));
    }
    let verdict = if mode == "always" {
        Verdict::Warn
    } else {
        Verdict::Ok
    };
    Finding::new(CheckId::Thp, verdict, evidence)
        .fix_if_needed(format!(
            "echo never > {dir}/enabled (at boot: transparent_hugepage=never)"
        ))
        .setting(mode)
}

/// The `[selected]` word of a sysfs choice list.
fn bracketed(s: &str) -> Option<&str> {
    s.split_whitespace()
        .find_map(|w| w.strip_prefix('[')?.strip_suffix(']'))
}

pub(crate) fn swap(ctx: &Ctx) -> Finding {
    let Some(swaps) = ctx.sys.read("/proc/swaps") else {
        return Finding::unavailable(CheckId::Swap, "no /proc/swaps");
    };
    let devices: Vec<String> = swaps
        .lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let kib: u64 = f.get(2)?.parse().ok()?;
            Some(format!("{} ({} MiB)", f.first()?, kib / 1024))
        })
        .collect();
    let swappiness = ctx.sys.read("/proc/sys/vm/swappiness");
    let mut evidence = if devices.is_empty() {
        "/proc/swaps: no swap".to_owned()
    } else {
        format!("/proc/swaps: {}", devices.join(", "))
    };
    if let Some(s) = &swappiness {
        evidence.push_str(&format!("; vm.swappiness = {s}"));
    }
    let verdict = if devices.is_empty() {
        Verdict::Ok
    } else {
        Verdict::Warn
    };
    Finding::new(CheckId::Swap, verdict, evidence)
        .fix_if_needed("swapoff -a (and remove the swap entries from /etc/fstab), or at least sysctl -w vm.swappiness=0")
        .setting(if devices.is_empty() { "off" } else { "on" })
}

pub(crate) fn numa_balancing(ctx: &Ctx) -> Finding {
    let nodes = ctx.sys.numbered("/sys/devices/system/node", "node").len();
    let file = "/proc/sys/kernel/numa_balancing";
    let Some(v) = ctx.sys.read_i64(file) else {
        return Finding::new(
            CheckId::NumaBalancing,
            Verdict::Ok,
            format!("no {file} (not built in); {nodes} NUMA nodes"),
        )
        .setting("absent");
    };
    let verdict = if v == 0 || nodes <= 1 {
        Verdict::Ok
    } else {
        Verdict::Warn
    };
    Finding::new(
        CheckId::NumaBalancing,
        verdict,
        format!("{file} = {v}; {nodes} NUMA nodes (balancing does nothing with one)"),
    )
    .fix_if_needed("sysctl -w kernel.numa_balancing=0")
    .setting(if v == 0 { "off" } else { "on" })
}

pub(crate) fn vmstat_interval(ctx: &Ctx) -> Finding {
    let file = "/proc/sys/vm/stat_interval";
    let Some(v) = ctx.sys.read_i64(file) else {
        return Finding::unavailable(CheckId::VmstatInterval, format!("no {file}"));
    };
    let verdict = if v >= 10 { Verdict::Ok } else { Verdict::Warn };
    Finding::new(CheckId::VmstatInterval, verdict, format!("{file} = {v} s"))
        .fix_if_needed("sysctl -w vm.stat_interval=10")
        .setting(format!("{v} s"))
}

/// Whether this process has capability `bit` in effect (`CapEff` of /proc/self/status).
fn has_cap(ctx: &Ctx, bit: u32) -> Option<bool> {
    let status = ctx.sys.read("/proc/self/status")?;
    let hex = status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))?
        .trim();
    let caps = u64::from_str_radix(hex, 16).ok()?;
    Some(caps & (1 << bit) != 0)
}

fn limit_text(l: Option<u64>) -> String {
    l.map_or("unlimited".to_owned(), |v| v.to_string())
}

fn rlimit_evidence(name: &str, l: &Rlimit, unit: &str) -> String {
    format!(
        "{name} soft {}{unit}, hard {}{unit}",
        limit_text(l.soft),
        limit_text(l.hard)
    )
}

pub(crate) fn memlock(ctx: &Ctx) -> Finding {
    let cap = has_cap(ctx, CAP_IPC_LOCK);
    let Some(lim) = ctx.sys.probe().rlimit(Resource::Memlock) else {
        return Finding::unavailable(CheckId::Memlock, "getrlimit(RLIMIT_MEMLOCK) failed");
    };
    let mut evidence = rlimit_evidence("RLIMIT_MEMLOCK", &lim, " bytes");
    if let Some(c) = cap {
        evidence.push_str(&format!("; CAP_IPC_LOCK {}", if c { "yes" } else { "no" }));
    }
    let verdict = match (cap, lim.soft) {
        (Some(true), _) | (_, None) => Verdict::Ok,
        (_, Some(n)) if n < MEMLOCK_TOO_SMALL => Verdict::Bad,
        _ => Verdict::Warn,
    };
    Finding::new(CheckId::Memlock, verdict, evidence)
        .fix_if_needed("run as root, or ulimit -l unlimited (persistently: '@realtime - memlock unlimited' in /etc/security/limits.conf)")
        .setting(if verdict == Verdict::Ok { "unlimited".to_owned() } else { limit_text(lim.soft) })
}

pub(crate) fn rtprio(ctx: &Ctx) -> Finding {
    let cap = has_cap(ctx, CAP_SYS_NICE);
    let Some(lim) = ctx.sys.probe().rlimit(Resource::Rtprio) else {
        return Finding::unavailable(CheckId::Rtprio, "getrlimit(RLIMIT_RTPRIO) failed");
    };
    let mut evidence = rlimit_evidence("RLIMIT_RTPRIO", &lim, "");
    if let Some(c) = cap {
        evidence.push_str(&format!("; CAP_SYS_NICE {}", if c { "yes" } else { "no" }));
    }
    let enough = lim.soft.is_none_or(|s| s >= u64::from(ctx.priority));
    let verdict = if cap == Some(true) || enough {
        Verdict::Ok
    } else {
        Verdict::Bad
    };
    evidence.push_str(&format!("; priority needed {}", ctx.priority));
    Finding::new(CheckId::Rtprio, verdict, evidence)
        .fix_if_needed("run as root, or '@realtime - rtprio 99' in /etc/security/limits.conf (log in again), or setcap cap_sys_nice,cap_ipc_lock+ep on the rtscope binary")
        .setting(if verdict == Verdict::Ok { "allowed" } else { "refused" })
}
