//! The environment a run is recorded with: the facts that explain latency differences between
//! boards, kernels and configurations. Every file is read under a root directory, so tests can
//! use fixture trees; a fact that cannot be read is simply absent.

use crate::sysinfo::SysInfo;
use std::path::Path;

/// Kernel configuration options worth recording (prefix match).
const CONFIG_KEYS: &[&str] = &[
    "CONFIG_PREEMPT",
    "CONFIG_HZ",
    "CONFIG_NO_HZ",
    "CONFIG_HIGH_RES_TIMERS",
    "CONFIG_CPU_FREQ_DEFAULT_GOV",
    "CONFIG_CPU_IDLE",
    "CONFIG_RCU_NOCB_CPU",
    "CONFIG_IRQ_FORCED_THREADING",
];

fn read(root: &Path, path: &str) -> Option<String> {
    let p = root.join(path.trim_start_matches('/'));
    std::fs::read_to_string(p)
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// Facts read as they are from one file below the root: `(key, path)`.
const FILES: [(&str, &str); 15] = [
    ("kernel.realtime", "/sys/kernel/realtime"),
    ("kernel.preempt", "/sys/kernel/debug/sched/preempt"),
    (
        "kernel.sched_rt_runtime_us",
        "/proc/sys/kernel/sched_rt_runtime_us",
    ),
    (
        "kernel.sched_rt_period_us",
        "/proc/sys/kernel/sched_rt_period_us",
    ),
    ("cpu.online", "/sys/devices/system/cpu/online"),
    ("cpu.isolated", "/sys/devices/system/cpu/isolated"),
    ("cpu.nohz_full", "/sys/devices/system/cpu/nohz_full"),
    ("cpu.smt_active", "/sys/devices/system/cpu/smt/active"),
    (
        "cpu.idle_driver",
        "/sys/devices/system/cpu/cpuidle/current_driver",
    ),
    (
        "clocksource",
        "/sys/devices/system/clocksource/clocksource0/current_clocksource",
    ),
    ("loadavg", "/proc/loadavg"),
    ("cgroup.cpu_max", "/sys/fs/cgroup/cpu.max"),
    ("cgroup.cpuset", "/sys/fs/cgroup/cpuset.cpus.effective"),
    // The host's identity (copied to the run's row: mergeable records, docs/fleet.md).
    ("host.machine_id", "/etc/machine-id"),
    ("kernel.cmdline", "/proc/cmdline"),
];

/// The boot parameters kept one by one (`kernel.cmdline.KEY`).
const CMDLINE_KEYS: [&str; 9] = [
    "isolcpus",
    "nohz_full",
    "rcu_nocbs",
    "irqaffinity",
    "threadirqs",
    "preempt",
    "idle",
    "processor.max_cstate",
    "intel_idle.max_cstate",
];

/// Collects the environment under `root` (`/` for this machine) as sorted `(key, value)` pairs.
pub fn capture(root: &Path) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = Vec::new();
    let mut put = |k: &str, v: Option<String>| {
        if let Some(v) = v {
            env.push((k.to_string(), v));
        }
    };
    if root == Path::new("/") {
        let u = SysInfo::read();
        for (k, v) in [
            ("uname.sysname", u.sysname),
            ("uname.nodename", u.nodename),
            ("uname.release", u.release),
            ("uname.version", u.version),
            ("uname.machine", u.machine),
        ] {
            put(k, Some(v));
        }
    }
    for (key, path) in FILES {
        put(key, read(root, path));
    }
    put(
        "host.board_model",
        read(root, "/proc/device-tree/model").map(|m| m.trim_end_matches('\0').to_string()),
    );
    let cmdline = read(root, "/proc/cmdline");
    for key in CMDLINE_KEYS {
        put(
            &format!("kernel.cmdline.{key}"),
            cmdline.as_deref().and_then(|c| cmdline_value(c, key)),
        );
    }
    put(
        "cpu.model",
        read(root, "/proc/cpuinfo").and_then(|c| cpu_model(&c)),
    );
    put("cpu.governors", per_cpu(root, "cpufreq/scaling_governor"));
    put(
        "cpu.max_freq_khz",
        per_cpu(root, "cpufreq/cpuinfo_max_freq"),
    );
    put(
        "memory.total",
        read(root, "/proc/meminfo").and_then(|m| {
            m.lines()
                .next()
                .map(|l| l.split_whitespace().skip(1).collect::<Vec<_>>().join(" "))
        }),
    );
    if let Some(release) = env
        .iter()
        .find(|(k, _)| k == "uname.release")
        .map(|(_, v)| v.clone())
    {
        for (k, v) in
            kernel_config(&read(root, &format!("/boot/config-{release}")).unwrap_or_default())
        {
            env.push((format!("kernel.config.{k}"), v));
        }
    }
    env.sort();
    env
}

fn cmdline_value(cmdline: &str, key: &str) -> Option<String> {
    cmdline
        .split_whitespace()
        .find_map(|w| match w.split_once('=') {
            Some((k, v)) if k == key => Some(v.to_string()),
            None if w == key => Some("1".to_string()),
            _ => None,
        })
}

fn cpu_model(cpuinfo: &str) -> Option<String> {
    ["model name", "Model", "Hardware", "cpu model"]
        .iter()
        .find_map(|key| {
            cpuinfo.lines().find_map(|l| {
                l.split_once(':')
                    .filter(|(k, _)| k.trim() == *key)
                    .map(|(_, v)| v.trim().to_string())
            })
        })
}

/// A per-CPU sysfs value, as `cpu0=x cpu1=y`, or `x` when all CPUs agree.
fn per_cpu(root: &Path, file: &str) -> Option<String> {
    let dir = root.join("sys/devices/system/cpu");
    let mut vals: Vec<(u32, String)> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let n: u32 = name.strip_prefix("cpu")?.parse().ok()?;
            Some((
                n,
                std::fs::read_to_string(e.path().join(file))
                    .ok()?
                    .trim()
                    .to_string(),
            ))
        })
        .collect();
    vals.sort();
    match vals.first() {
        None => None,
        Some((_, first)) if vals.iter().all(|(_, v)| v == first) => Some(first.clone()),
        Some(_) => Some(
            vals.iter()
                .map(|(n, v)| format!("cpu{n}={v}"))
                .collect::<Vec<_>>()
                .join(" "),
        ),
    }
}

fn kernel_config(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter(|l| CONFIG_KEYS.iter().any(|k| l.starts_with(k)))
        .filter_map(|l| {
            l.split_once('=')
                .map(|(k, v)| (k.to_string(), v.to_string()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, path: &str, text: &str) {
        let p = root.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    #[test]
    fn reads_a_raspberry_pi_like_fixture_tree() {
        let root = std::env::temp_dir().join(format!("rtscope-env-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        write(
            &root,
            "proc/cmdline",
            "console=ttyS0 isolcpus=2,3 nohz_full=2,3 rcu_nocbs=2,3 threadirqs\n",
        );
        write(&root, "proc/cpuinfo", "processor\t: 0\nBogoMIPS\t: 108.00\n\nHardware\t: BCM2835\nModel\t: Raspberry Pi 4 Model B Rev 1.4\n");
        write(&root, "sys/kernel/realtime", "1\n");
        write(&root, "sys/devices/system/cpu/online", "0-3\n");
        for (cpu, gov) in [(0, "performance"), (1, "performance"), (2, "ondemand")] {
            write(
                &root,
                &format!("sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_governor"),
                gov,
            );
        }
        let env = capture(&root);
        let get = |k: &str| {
            env.iter()
                .find(|(key, _)| key == k)
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(get("kernel.realtime"), Some("1"));
        assert_eq!(get("kernel.cmdline.isolcpus"), Some("2,3"));
        assert_eq!(get("kernel.cmdline.threadirqs"), Some("1"));
        assert_eq!(get("cpu.model"), Some("Raspberry Pi 4 Model B Rev 1.4"));
        assert_eq!(
            get("cpu.governors"),
            Some("cpu0=performance cpu1=performance cpu2=ondemand")
        );
        assert_eq!(get("clocksource"), None, "absent facts are left out");
    }

    #[test]
    fn reads_this_machine() {
        let env = capture(Path::new("/"));
        let keys: Vec<&str> = env.iter().map(|(k, _)| k.as_str()).collect();
        for k in [
            "uname.release",
            "kernel.cmdline",
            "cpu.online",
            "loadavg",
            "clocksource",
        ] {
            assert!(keys.contains(&k), "{k} missing from {keys:?}");
        }
    }
}
