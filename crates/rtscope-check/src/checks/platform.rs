//! Platform checks: Raspberry Pi throttling, thermal zones, virtual machines and containers.

use super::{join_limited, Ctx};
use crate::{CheckId, Finding, Verdict};

const RPI_THROTTLED: &str = "/sys/devices/platform/soc/soc:firmware/get_throttled";

/// The get_throttled bits: (bit, meaning). Bits 0–3 are now, 16–19 since boot.
const RPI_BITS: [(u32, &str); 4] = [
    (0, "under-voltage"),
    (1, "ARM frequency capped"),
    (2, "throttled"),
    (3, "soft temperature limit"),
];

pub(crate) fn rpi_throttled(ctx: &Ctx) -> Finding {
    let model = ctx
        .sys
        .read("/proc/device-tree/model")
        .map(|m| m.trim_end_matches('\0').to_owned());
    let Some(raw) = ctx.sys.read(RPI_THROTTLED) else {
        let what = model.map_or("not a Raspberry Pi".to_owned(), |m| format!("model {m}"));
        return Finding::unavailable(
            CheckId::RpiThrottled,
            format!("no {RPI_THROTTLED} ({what})"),
        );
    };
    let Ok(word) = u32::from_str_radix(raw.trim_start_matches("0x"), 16) else {
        return Finding::unavailable(
            CheckId::RpiThrottled,
            format!("{RPI_THROTTLED}: unreadable value {raw:?}"),
        );
    };
    let now: Vec<&str> = RPI_BITS
        .iter()
        .filter(|(b, _)| word & (1 << b) != 0)
        .map(|(_, m)| *m)
        .collect();
    let past: Vec<&str> = RPI_BITS
        .iter()
        .filter(|(b, _)| word & (1 << (b + 16)) != 0)
        .map(|(_, m)| *m)
        .collect();
    let mut evidence = format!("{RPI_THROTTLED} = 0x{word:x}");
    if let Some(m) = &model {
        evidence.push_str(&format!(" ({m})"));
    }
    if !now.is_empty() {
        evidence.push_str(&format!("; now: {}", now.join(", ")));
    }
    if !past.is_empty() {
        evidence.push_str(&format!("; since boot: {}", past.join(", ")));
    }
    let verdict = if !now.is_empty() {
        Verdict::Bad
    } else if !past.is_empty() {
        Verdict::Warn
    } else {
        Verdict::Ok
    };
    Finding::new(CheckId::RpiThrottled, verdict, evidence)
        .fix_if_needed("use the official power supply (Pi 4: 5.1 V 3 A, Pi 5: 5.1 V 5 A) and a heatsink or fan; watch vcgencmd get_throttled")
        .setting(format!("0x{word:x}"))
}

/// One thermal zone: type, temperature and lowest passive/hot trip (m°C).
struct Zone {
    name: String,
    temp: i64,
    trip: Option<(String, i64)>,
}

fn zones(ctx: &Ctx) -> Vec<Zone> {
    let base = "/sys/class/thermal";
    ctx.sys
        .numbered(base, "thermal_zone")
        .into_iter()
        .filter_map(|n| {
            let dir = format!("{base}/thermal_zone{n}");
            let temp = ctx.sys.read_i64(&format!("{dir}/temp"))?;
            let name = ctx
                .sys
                .read(&format!("{dir}/type"))
                .unwrap_or_else(|| format!("zone{n}"));
            let trip = ctx
                .sys
                .list(&dir)
                .iter()
                .filter_map(|f| f.strip_suffix("_type")?.strip_prefix("trip_point_"))
                .filter_map(|k| {
                    let kind = ctx.sys.read(&format!("{dir}/trip_point_{k}_type"))?;
                    let t = ctx.sys.read_i64(&format!("{dir}/trip_point_{k}_temp"))?;
                    (t > 0 && matches!(kind.as_str(), "passive" | "hot" | "critical"))
                        .then_some((kind, t))
                })
                .min_by_key(|(_, t)| *t);
            Some(Zone { name, temp, trip })
        })
        .collect()
}

/// Warn when a zone is within this many m°C of its trip point.
const TRIP_MARGIN: i64 = 10_000;

pub(crate) fn thermal(ctx: &Ctx) -> Finding {
    let zones = zones(ctx);
    if zones.is_empty() {
        return Finding::unavailable(
            CheckId::Thermal,
            "no /sys/class/thermal/thermal_zone*/temp (usual in a VM)",
        );
    }
    let c = |m: i64| format!("{:.1} °C", m as f64 / 1000.0);
    let mut verdict = Verdict::Ok;
    let mut parts = Vec::new();
    for z in &zones {
        match &z.trip {
            Some((kind, t)) => {
                let v = if z.temp >= *t {
                    Verdict::Bad
                } else if t - z.temp <= TRIP_MARGIN {
                    Verdict::Warn
                } else {
                    Verdict::Ok
                };
                verdict = verdict.max(v);
                parts.push(format!("{} {} ({kind} trip {})", z.name, c(z.temp), c(*t)));
            }
            None => parts.push(format!("{} {} (no trip point)", z.name, c(z.temp))),
        }
    }
    let hottest = zones.iter().map(|z| z.temp).max().unwrap_or(0);
    Finding::new(CheckId::Thermal, verdict, join_limited(&parts, 6))
        .fix_if_needed("cool the board (heatsink, fan, airflow) and let it settle before measuring; latency rises as the CPU is throttled")
        .setting(format!("max {}", c(hottest)))
}

pub(crate) fn virtualization(ctx: &Ctx) -> Finding {
    let mut evidence = rtscope_core::virt::evidence(&|p| ctx.sys.read(p));
    if evidence.is_empty() {
        return Finding::new(
            CheckId::Virtualization,
            Verdict::Ok,
            "no hypervisor flag in /proc/cpuinfo, no /sys/hypervisor, no hypervisor DMI vendor, device-tree node or QEMU virt machine",
        )
        .setting("bare metal");
    }
    if let Some(steal) = steal_seconds(ctx) {
        evidence.push(format!("steal time so far {steal:.1} s"));
    }
    Finding::new(CheckId::Virtualization, Verdict::Warn, evidence.join("; "))
        .fix("measure on bare metal for results that stand for the hardware; in a VM, pin the vCPUs to isolated host CPUs and use tuned's realtime-virtual-host/-guest profiles")
        .setting("vm")
}

/// Steal time of all CPUs from /proc/stat, in seconds (USER_HZ = 100).
fn steal_seconds(ctx: &Ctx) -> Option<f64> {
    let stat = ctx.sys.read("/proc/stat")?;
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let steal: u64 = line.split_whitespace().nth(8)?.parse().ok()?;
    Some(steal as f64 / 100.0)
}

/// cgroup path fragments container runtimes use.
const CGROUP_RUNTIMES: &[&str] = &["docker", "kubepods", "libpod", "lxc", "containerd", "crio"];

pub(crate) fn container(ctx: &Ctx) -> Finding {
    let sys = ctx.sys;
    let mut strong = Vec::new();
    let mut weak = Vec::new();
    if let Some(cg) = sys.read("/proc/1/cgroup") {
        if let Some(l) = cg
            .lines()
            .find(|l| CGROUP_RUNTIMES.iter().any(|r| l.contains(r)))
        {
            strong.push(format!("/proc/1/cgroup: {l}"));
        }
    }
    if let Some(env) = sys.read_bytes("/proc/1/environ") {
        if let Some(v) = env
            .split(|&b| b == 0)
            .map(String::from_utf8_lossy)
            .find(|v| v.starts_with("container="))
        {
            strong.push(format!("/proc/1/environ: {v}"));
        }
    }
    if let Some(kind) = sys.read("/run/systemd/container") {
        strong.push(format!("/run/systemd/container = {kind}"));
    }
    if sys.exists("/run/.containerenv") {
        strong.push("/run/.containerenv exists (podman)".to_owned());
    }
    if let Some(first) = sys
        .read("/proc/1/sched")
        .and_then(|s| s.lines().next().map(str::to_owned))
    {
        let pid = first
            .rsplit_once('(')
            .and_then(|(_, r)| r.split(',').next()?.trim().parse::<u32>().ok());
        if pid.is_some_and(|p| p != 1) {
            strong.push(format!(
                "/proc/1/sched: {first} (PID 1 is another PID outside)"
            ));
        }
    }
    if sys.exists("/.dockerenv") {
        weak.push(
            "/.dockerenv exists (also left by images converted to VMs: not proof)".to_owned(),
        );
    }
    if let Some(c) = sys.read("/proc/1/comm") {
        if !["systemd", "init"].contains(&c.as_str()) {
            weak.push(format!("PID 1 is {c}, not an init system"));
        }
    }
    let root_overlay = sys
        .read("/proc/self/mountinfo")
        .and_then(|m| {
            m.lines()
                .find(|l| l.split_whitespace().nth(4) == Some("/"))
                .map(str::to_owned)
        })
        .is_some_and(|l| l.contains(" - overlay "));
    if root_overlay {
        weak.push("/ is an overlay mount".to_owned());
    }
    let mut evidence = strong.clone();
    if !weak.is_empty() {
        evidence.push(format!("weak hints: {}", weak.join(", ")));
    }
    if strong.is_empty() {
        let text = if evidence.is_empty() {
            "no container runtime in /proc/1/cgroup, no container= in /proc/1/environ, no /run/systemd/container or /run/.containerenv, /proc/1/sched shows PID 1".to_owned()
        } else {
            format!(
                "no container runtime in /proc/1/cgroup or /proc/1/environ, PID 1 is PID 1; {}",
                evidence.join("; ")
            )
        };
        return Finding::new(CheckId::Container, Verdict::Ok, text).setting("none");
    }
    Finding::new(CheckId::Container, Verdict::Warn, join_limited(&evidence, 5))
        .fix("measure on the host, or give the container the CPUs and rights: --cpuset-cpus, --cap-add SYS_NICE --cap-add IPC_LOCK, --ulimit rtprio=99 --ulimit memlock=-1")
        .setting("container")
}
