//! Checks that walk /proc: the process's allowed CPUs, who holds /dev/cpu_dma_latency and the
//! real-time tasks that may run on the measured CPUs.

use super::cpu::{deepest_usable_us, idle_states_of, qos_constraint_us, DEEP_IDLE_US};
use super::{join_limited, Ctx};
use crate::sys::{format_cpulist, parse_cpulist, System};
use crate::{CheckId, Finding, Verdict};

/// The PM QoS CPU latency value meaning "no request" (`PM_QOS_DEFAULT_VALUE`), µs.
const NO_REQUEST: i64 = 2_000_000_000;

/// `PF_KTHREAD` in the flags field of /proc/PID/stat.
const PF_KTHREAD: u64 = 0x0020_0000;

/// Scheduling policies (`sched_setscheduler(2)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Policy {
    Other,
    Fifo,
    Rr,
    Batch,
    Idle,
    Deadline,
}

impl Policy {
    fn from_raw(v: u32) -> Policy {
        match v {
            1 => Policy::Fifo,
            2 => Policy::Rr,
            3 => Policy::Batch,
            5 => Policy::Idle,
            6 => Policy::Deadline,
            _ => Policy::Other,
        }
    }

    fn is_rt(self) -> bool {
        matches!(self, Policy::Fifo | Policy::Rr | Policy::Deadline)
    }

    fn name(self) -> &'static str {
        match self {
            Policy::Other => "OTHER",
            Policy::Fifo => "FIFO",
            Policy::Rr => "RR",
            Policy::Batch => "BATCH",
            Policy::Idle => "IDLE",
            Policy::Deadline => "DEADLINE",
        }
    }
}

/// One thread, as /proc/PID/task/TID/stat describes it.
pub(crate) struct Task {
    pub(crate) pid: u32,
    pub(crate) tid: u32,
    pub(crate) comm: String,
    pub(crate) policy: Policy,
    /// 1–99 for FIFO/RR, 0 otherwise.
    pub(crate) rt_priority: u32,
    pub(crate) kernel_thread: bool,
    /// CPUs it may run on; read only for real-time threads.
    pub(crate) allowed: Option<Vec<u32>>,
}

/// Parses a /proc/PID/stat line into (comm, flags, rt_priority, policy).
fn parse_stat(line: &str) -> Option<(String, u64, u32, u32)> {
    let open = line.find('(')?;
    let close = line.rfind(')')?;
    let comm = line.get(open + 1..close)?.to_owned();
    let rest: Vec<&str> = line.get(close + 1..)?.split_whitespace().collect();
    // rest[0] is field 3 (state); field N is rest[N - 3].
    let flags = rest.get(9 - 3)?.parse().ok()?;
    let rt_priority = rest.get(40 - 3)?.parse().ok()?;
    let policy = rest.get(41 - 3)?.parse().ok()?;
    Some((comm, flags, rt_priority, policy))
}

/// The `Cpus_allowed_list:` of a status file.
fn allowed_cpus(sys: &System, status_file: &str) -> Option<Vec<u32>> {
    let status = sys.read(status_file)?;
    let line = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))?;
    parse_cpulist(line)
}

/// Every thread under /proc.
pub(crate) fn scan(sys: &System) -> Vec<Task> {
    let mut out = Vec::new();
    for pid in sys.pids() {
        for tid in sys.numbered(&format!("/proc/{pid}/task"), "") {
            let dir = format!("/proc/{pid}/task/{tid}");
            let Some((comm, flags, rt_priority, policy)) = sys
                .read(&format!("{dir}/stat"))
                .and_then(|l| parse_stat(&l))
            else {
                continue;
            };
            let policy = Policy::from_raw(policy);
            let allowed = if policy.is_rt() {
                allowed_cpus(sys, &format!("{dir}/status"))
            } else {
                None
            };
            out.push(Task {
                pid,
                tid,
                comm,
                policy,
                rt_priority,
                kernel_thread: flags & PF_KTHREAD != 0,
                allowed,
            });
        }
    }
    out
}

pub(crate) fn affinity(ctx: &Ctx) -> Finding {
    let file = "/proc/self/status";
    let Some(allowed) = allowed_cpus(ctx.sys, file) else {
        return Finding::unavailable(CheckId::Affinity, format!("no Cpus_allowed_list in {file}"));
    };
    let outside: Vec<u32> = ctx
        .cpus
        .iter()
        .copied()
        .filter(|c| !allowed.contains(c))
        .collect();
    let mut evidence = format!("{file}: Cpus_allowed_list = {}", format_cpulist(&allowed));
    if !outside.is_empty() {
        evidence.push_str(&format!(
            "; measured CPUs not allowed: {}",
            format_cpulist(&outside)
        ));
    }
    let verdict = if outside.is_empty() {
        Verdict::Ok
    } else {
        Verdict::Bad
    };
    Finding::new(CheckId::Affinity, verdict, evidence)
        .fix_if_needed(format!(
            "run rtscope in a cpuset that contains CPUs {} (taskset -c, systemd AllowedCPUs=, docker --cpuset-cpus), or measure only CPUs {}",
            format_cpulist(&outside),
            format_cpulist(&allowed)
        ))
        .setting(format_cpulist(&allowed))
}

/// Processes that have /dev/cpu_dma_latency open, as `comm[pid]`, and how many processes'
/// file descriptors could not be read.
fn dma_latency_holders(ctx: &Ctx) -> (Vec<String>, usize) {
    let mut holders = Vec::new();
    let mut unreadable = 0;
    for pid in ctx.sys.pids() {
        let fd_dir = format!("/proc/{pid}/fd");
        let fds = match std::fs::read_dir(ctx.sys.path(&fd_dir)) {
            Ok(rd) => rd,
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
                unreadable += 1;
                continue;
            }
            Err(_) => continue,
        };
        let held = fds
            .filter_map(Result::ok)
            .take(crate::sys::MAX_PROC_ENTRIES)
            .any(|fd| {
                std::fs::read_link(fd.path()).is_ok_and(|l| l.as_os_str() == "/dev/cpu_dma_latency")
            });
        if held {
            let comm = ctx
                .sys
                .read(&format!("/proc/{pid}/comm"))
                .unwrap_or_else(|| "?".to_owned());
            holders.push(format!("{comm}[{pid}]"));
        }
    }
    (holders, unreadable)
}

pub(crate) fn cpu_dma_latency(ctx: &Ctx) -> Finding {
    if !ctx.sys.exists("/dev/cpu_dma_latency") {
        return Finding::unavailable(
            CheckId::CpuDmaLatency,
            "no /dev/cpu_dma_latency (CONFIG_CPU_IDLE or PM QoS not built)",
        );
    }
    let qos = qos_constraint_us(ctx);
    // Holders are looked for (a readlink of every open file of every process) only when a
    // request is in force or its value cannot be read: a holder without a request changes
    // nothing, and the walk would lengthen every run's start.
    let (holders, unreadable) = match qos {
        Some(q) if q >= NO_REQUEST => (Vec::new(), 0),
        _ => dma_latency_holders(ctx),
    };
    let deepest = deepest_usable_us(&idle_states_of(ctx), None);
    let mut evidence = if holders.is_empty() {
        "not held by any process with a request".to_owned()
    } else {
        format!("held by {}", join_limited(&holders, 6))
    };
    match qos {
        Some(q) if q >= NO_REQUEST => evidence.push_str("; no latency request in force"),
        Some(q) => evidence.push_str(&format!("; request in force {q} µs")),
        None => evidence.push_str("; value not readable (needs root)"),
    }
    if unreadable > 0 {
        evidence.push_str(&format!("; {unreadable} processes' fds not readable"));
    }
    let limit_ok = qos.is_some_and(|q| q <= DEEP_IDLE_US as i64);
    let deep = deepest.is_some_and(|d| d > DEEP_IDLE_US);
    if let Some(d) = deepest {
        evidence.push_str(&format!("; deepest enabled idle state {d} µs"));
    }
    let verdict = if !deep || limit_ok {
        Verdict::Ok
    } else {
        Verdict::Warn
    };
    let setting = match (holders.is_empty(), qos) {
        (false, Some(q)) if q < NO_REQUEST => format!("held ({q} µs)"),
        (false, _) => "held".to_owned(),
        (true, _) => "not held".to_owned(),
    };
    Finding::new(CheckId::CpuDmaLatency, verdict, evidence)
        .fix_if_needed("rtscope measure --latency 0 holds it for the run (cyclictest does the same by default)")
        .setting(setting)
}

/// Per-CPU kernel threads every CPU has, which run at high priority by design.
fn per_cpu_kthread(t: &Task) -> bool {
    t.kernel_thread
        && t.allowed.as_ref().is_some_and(|a| a.len() == 1)
        && ["migration/", "cpuhp/", "idle_inject/", "watchdog/"]
            .iter()
            .any(|p| t.comm.starts_with(p))
}

pub(crate) fn rt_tasks(ctx: &Ctx) -> Finding {
    let tasks = ctx.tasks();
    if tasks.is_empty() {
        return Finding::unavailable(CheckId::RtTasks, "no readable /proc/PID/task/TID/stat");
    }
    let mut above = Vec::new();
    let mut below_user = Vec::new();
    let (mut ignored, mut below_kernel) = (0usize, 0usize);
    for t in tasks.iter().filter(|t| t.policy.is_rt()) {
        let Some(allowed) = &t.allowed else { continue };
        let on: Vec<u32> = ctx
            .cpus
            .iter()
            .copied()
            .filter(|c| allowed.contains(c))
            .collect();
        if on.is_empty() {
            continue;
        }
        if per_cpu_kthread(t) {
            ignored += 1;
            continue;
        }
        let high = t.policy == Policy::Deadline || t.rt_priority >= ctx.priority;
        let desc = format!(
            "{}[{}{}] {} {}{} on CPUs {}",
            t.comm,
            t.pid,
            if t.tid != t.pid {
                format!("/{}", t.tid)
            } else {
                String::new()
            },
            t.policy.name(),
            t.rt_priority,
            if t.kernel_thread { " (kernel)" } else { "" },
            format_cpulist(&on)
        );
        match (high, t.kernel_thread) {
            (true, _) => above.push(desc),
            (false, false) => below_user.push(desc),
            (false, true) => below_kernel += 1,
        }
    }
    let mut parts = Vec::new();
    if !above.is_empty() {
        parts.push(format!(
            "at priority {} or above: {}",
            ctx.priority,
            join_limited(&above, 6)
        ));
    }
    if !below_user.is_empty() {
        parts.push(format!("below it: {}", join_limited(&below_user, 6)));
    }
    parts.push(format!(
        "{below_kernel} lower-priority kernel RT threads (IRQ threads, ktimers, rcuc); {ignored} per-CPU migration/cpuhp/watchdog threads"
    ));
    let verdict = if !above.is_empty() {
        Verdict::Bad
    } else if !below_user.is_empty() {
        Verdict::Warn
    } else {
        Verdict::Ok
    };
    let others = format_cpulist(&ctx.others());
    Finding::new(CheckId::RtTasks, verdict, parts.join("; "))
        .fix_if_needed(format!(
            "move them off the measured CPUs (taskset -pc {} TID), make them SCHED_OTHER (chrt -o -p 0 TID) or stop them",
            if others.is_empty() { "CPUS".to_owned() } else { others }
        ))
        .setting((above.len() + below_user.len()).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_stat_with_spaces_and_parens_in_comm() {
        let mut fields = vec!["S"; 39];
        fields[9 - 3] = "2097216"; // PF_KTHREAD | 0x40
        fields[40 - 3] = "50";
        fields[41 - 3] = "1";
        let line = format!("123 (irq/26-a (b) c) {}", fields.join(" "));
        let (comm, flags, prio, policy) = parse_stat(&line).expect("parse");
        assert_eq!(comm, "irq/26-a (b) c");
        assert_ne!(flags & PF_KTHREAD, 0);
        assert_eq!((prio, policy), (50, 1));
        assert!(parse_stat("1 (x) S 0").is_none());
    }
}
