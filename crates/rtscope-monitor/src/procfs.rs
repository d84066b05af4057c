//! Single-file sources under /proc: `/proc/stat`, `/proc/loadavg` and `/proc/meminfo`.
//!
//! These are tried at every sample; a file that cannot be read or parsed marks its source
//! unavailable (with the reason) until it reads again.

use crate::text::{first_u64, read_into};
use crate::{unit, Sample, Status};
use std::path::{Path, PathBuf};

/// Busy, steal and total jiffies of one `cpu` line of `/proc/stat`.
struct CpuTimes {
    /// `None` for the aggregate `cpu` line.
    id: Option<u32>,
    busy: u64,
    steal: u64,
    total: u64,
    /// `cpu_busy.cpu<N>` or `cpu_busy.all`.
    metric: String,
    /// `steal.cpu<N>` or `steal.all`.
    steal_metric: String,
}

/// The counters of one read of `/proc/stat`.
#[derive(Default)]
struct StatTotals {
    cpus: Vec<CpuTimes>,
    ctxt: Option<u64>,
    intr: Option<u64>,
    processes: Option<u64>,
}

/// `/proc/stat`: CPU busy share, context switch, interrupt and fork rates, runnable and
/// blocked task counts.
pub(crate) struct Stat {
    path: PathBuf,
    prev: StatTotals,
    cur: StatTotals,
    have_prev: bool,
    pub(crate) status: Status,
}

impl Stat {
    pub(crate) fn new(root: &Path) -> Self {
        Stat {
            path: root.join("proc/stat"),
            prev: StatTotals::default(),
            cur: StatTotals::default(),
            have_prev: false,
            status: probe_status(root, "proc/stat"),
        }
    }

    /// Pushes `procs.running`, `procs.blocked` and, with a previous sample and `dt` seconds,
    /// `ctxt_rate`, `intr_rate`, `fork_rate` and `cpu_busy.*`.
    pub(crate) fn sample(&mut self, buf: &mut String, dt: Option<f64>, out: &mut Sample) {
        let ok = read_into(&self.path, buf).is_ok() && parse_stat(buf, &mut self.cur, out);
        self.status
            .update(ok, || "/proc/stat unreadable or malformed".to_owned());
        if !ok {
            self.have_prev = false;
            return;
        }
        if let (Some(dt), true) = (dt, self.have_prev) {
            let (p, c) = (&self.prev, &self.cur);
            for (name, then, now) in [
                ("ctxt_rate", p.ctxt, c.ctxt),
                ("intr_rate", p.intr, c.intr),
                ("fork_rate", p.processes, c.processes),
            ] {
                if let Some(d) = now.zip(then).and_then(|(n, t)| n.checked_sub(t)) {
                    out.push(name.to_owned(), d as f64 / dt, unit::PER_SECOND);
                }
            }
            push_busy(p, c, out);
        }
        std::mem::swap(&mut self.prev, &mut self.cur);
        self.have_prev = true;
    }
}

/// `cpu_busy.*` and `steal.*` in % of the jiffies that passed on that CPU (busy = user +
/// nice + system + irq + softirq + steal; idle = idle + iowait).
fn push_busy(prev: &StatTotals, cur: &StatTotals, out: &mut Sample) {
    for c in &cur.cpus {
        let Some(p) = prev.cpus.iter().find(|p| p.id == c.id) else {
            continue;
        };
        let (Some(db), Some(dt)) = (c.busy.checked_sub(p.busy), c.total.checked_sub(p.total))
        else {
            continue;
        };
        if dt > 0 {
            let pct = |d: u64| (d as f64 * 100.0 / dt as f64).min(100.0);
            out.push(c.metric.clone(), pct(db), unit::PERCENT);
            if let Some(ds) = c.steal.checked_sub(p.steal) {
                out.push(c.steal_metric.clone(), pct(ds), unit::PERCENT);
            }
        }
    }
}

/// Each CPU's steal time so far, in clock ticks (`USER_HZ`, see
/// [`crate::DEFAULT_CLOCK_TICKS`]), from `<root>/proc/stat`: the time the hypervisor ran
/// something else while this virtual CPU wanted to run. `None` when the file cannot be read
/// or has no per-CPU line; a CPU whose line has no steal column (kernels before 2.6.11) reads 0.
pub fn steal_ticks(root: &Path) -> Option<Vec<(usize, u64)>> {
    let text = std::fs::read_to_string(root.join("proc/stat")).ok()?;
    let rows: Vec<(usize, u64)> = text
        .lines()
        .filter_map(|l| {
            let (key, rest) = l.split_once(' ')?;
            let cpu = key.strip_prefix("cpu")?.parse().ok()?;
            let steal = rest
                .split_ascii_whitespace()
                .nth(7)
                .map_or(Some(0), |t| t.parse().ok())?;
            Some((cpu, steal))
        })
        .collect();
    (!rows.is_empty()).then_some(rows)
}

/// Parses `/proc/stat` into `t` (reusing its CPU rows) and pushes the level readings.
/// Returns false when the file has no `cpu` line at all.
fn parse_stat(text: &str, t: &mut StatTotals, out: &mut Sample) -> bool {
    let mut ncpu = 0;
    t.ctxt = None;
    t.intr = None;
    t.processes = None;
    for line in text.lines() {
        let Some((key, rest)) = line.split_once(' ') else {
            continue;
        };
        if let Some(cpu) = key.strip_prefix("cpu") {
            let id = if cpu.is_empty() {
                None
            } else {
                match cpu.parse() {
                    Ok(n) => Some(n),
                    Err(_) => continue,
                }
            };
            if let Some(times) = cpu_times(rest) {
                set_cpu(t, ncpu, id, times);
                ncpu += 1;
            }
            continue;
        }
        let v = first_u64(rest);
        match key {
            "ctxt" => t.ctxt = v,
            "intr" => t.intr = v,
            "processes" => t.processes = v,
            "procs_running" | "procs_blocked" => {
                if let Some(v) = v {
                    let m = if key == "procs_running" {
                        "procs.running"
                    } else {
                        "procs.blocked"
                    };
                    out.push(m.to_owned(), v as f64, unit::TASKS);
                }
            }
            _ => {}
        }
    }
    t.cpus.truncate(ncpu);
    ncpu > 0
}

fn set_cpu(t: &mut StatTotals, i: usize, id: Option<u32>, (busy, steal, total): (u64, u64, u64)) {
    if t.cpus.get(i).is_none_or(|c| c.id != id) {
        let suffix = id.map_or("all".to_owned(), |n| format!("cpu{n}"));
        let row = CpuTimes {
            id,
            busy,
            steal,
            total,
            metric: format!("cpu_busy.{suffix}"),
            steal_metric: format!("steal.{suffix}"),
        };
        if i < t.cpus.len() {
            t.cpus[i] = row;
        } else {
            t.cpus.push(row);
        }
    } else {
        t.cpus[i].busy = busy;
        t.cpus[i].steal = steal;
        t.cpus[i].total = total;
    }
}

/// (busy, steal, total) jiffies from the fields after `cpuN`; at least user, nice, system
/// and idle.
fn cpu_times(rest: &str) -> Option<(u64, u64, u64)> {
    let mut f = [0u64; 8];
    let mut n = 0;
    for tok in rest.split_ascii_whitespace().take(8) {
        f[n] = tok.parse().ok()?;
        n += 1;
    }
    if n < 4 {
        return None;
    }
    let [user, nice, system, idle, iowait, irq, softirq, steal] = f;
    let busy = user
        .checked_add(nice)?
        .checked_add(system)?
        .checked_add(irq)?
        .checked_add(softirq)?
        .checked_add(steal)?;
    Some((busy, steal, busy.checked_add(idle)?.checked_add(iowait)?))
}

fn probe_status(root: &Path, file: &str) -> Status {
    if root.join(file).is_file() {
        Status::available(format!("/{file}"))
    } else {
        Status::unavailable(format!("no /{file}"))
    }
}

/// `/proc/loadavg`: `load.1m`, `load.5m`, `load.15m` and `tasks.total`.
pub(crate) struct LoadAvg {
    path: PathBuf,
    pub(crate) status: Status,
}

impl LoadAvg {
    pub(crate) fn new(root: &Path) -> Self {
        LoadAvg {
            path: root.join("proc/loadavg"),
            status: probe_status(root, "proc/loadavg"),
        }
    }

    /// Pushes the three load averages (runnable + uninterruptible tasks) and the number of
    /// scheduling entities (threads) in the system.
    pub(crate) fn sample(&mut self, buf: &mut String, out: &mut Sample) {
        let ok = read_into(&self.path, buf).is_ok() && parse_loadavg(buf, out);
        self.status
            .update(ok, || "/proc/loadavg unreadable or malformed".to_owned());
    }
}

fn parse_loadavg(text: &str, out: &mut Sample) -> bool {
    let mut f = text.split_ascii_whitespace();
    let mut loads = [0.0f64; 3];
    for l in &mut loads {
        match f.next().and_then(|t| t.parse::<f64>().ok()) {
            Some(v) if v.is_finite() => *l = v,
            _ => return false,
        }
    }
    for (name, v) in ["load.1m", "load.5m", "load.15m"].into_iter().zip(loads) {
        out.push(name.to_owned(), v, unit::TASKS);
    }
    if let Some(total) = f
        .next()
        .and_then(|t| t.split_once('/'))
        .and_then(|(_, t)| t.parse::<u64>().ok())
    {
        out.push("tasks.total".to_owned(), total as f64, unit::TASKS);
    }
    true
}

/// `/proc/meminfo`: `mem.total` and `mem.available` in bytes.
pub(crate) struct MemInfo {
    path: PathBuf,
    pub(crate) status: Status,
}

impl MemInfo {
    pub(crate) fn new(root: &Path) -> Self {
        MemInfo {
            path: root.join("proc/meminfo"),
            status: probe_status(root, "proc/meminfo"),
        }
    }

    /// Pushes `MemTotal` and `MemAvailable` (kernels before 3.14 have no `MemAvailable`).
    pub(crate) fn sample(&mut self, buf: &mut String, out: &mut Sample) {
        let ok = read_into(&self.path, buf).is_ok() && parse_meminfo(buf, out);
        self.status.update(ok, || {
            "/proc/meminfo unreadable or has no MemTotal".to_owned()
        });
    }
}

fn parse_meminfo(text: &str, out: &mut Sample) -> bool {
    let mut found = 0;
    let mut have_total = false;
    for line in text.lines() {
        let Some((key, rest)) = line.split_once(':') else {
            continue;
        };
        let metric = match key {
            "MemTotal" => "mem.total",
            "MemAvailable" => "mem.available",
            _ => continue,
        };
        let Some(kib) = first_u64(rest).and_then(|k| k.checked_mul(1024)) else {
            continue;
        };
        out.push(metric.to_owned(), kib as f64, unit::BYTES);
        have_total |= key == "MemTotal";
        found += 1;
        if found == 2 {
            break;
        }
    }
    have_total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steal_is_read_per_cpu_and_as_a_share_between_samples() {
        let dir = std::env::temp_dir().join(format!("rtscope-steal-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("proc")).unwrap();
        let stat = |s0: u64, s1: u64| {
            format!(
                "cpu  10 0 10 60 0 0 0 {} 0 0\ncpu0 5 0 5 30 0 0 0 {s0} 0 0\ncpu1 5 0 5 30 0 0 0 {s1} 0 0\nctxt 1\n",
                s0 + s1
            )
        };
        std::fs::write(dir.join("proc/stat"), stat(3, 0)).unwrap();
        assert_eq!(steal_ticks(&dir), Some(vec![(0, 3), (1, 0)]));
        std::fs::write(dir.join("proc/stat"), "cpu0 1 2 3 4\n").unwrap();
        assert_eq!(
            steal_ticks(&dir),
            Some(vec![(0, 0)]),
            "no steal column reads 0"
        );
        std::fs::write(dir.join("proc/stat"), "ctxt 1\n").unwrap();
        assert_eq!(steal_ticks(&dir), None);
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(steal_ticks(&dir), None);

        // Between two samples: cpu0 had 10 more jiffies, 5 of them stolen.
        let (mut t, mut out) = (StatTotals::default(), Sample::default());
        assert!(parse_stat(&stat(3, 0), &mut t, &mut out));
        let mut t2 = StatTotals::default();
        let later =
            "cpu  10 0 10 65 0 0 0 8 0 0\ncpu0 5 0 5 30 0 0 0 8 0 0\ncpu1 5 0 5 35 0 0 0 0 0 0\n";
        assert!(parse_stat(later, &mut t2, &mut out));
        push_busy(&t, &t2, &mut out);
        assert_eq!(out.value("steal.cpu0"), Some(100.0));
        assert_eq!(out.value("steal.cpu1"), Some(0.0));
        assert_eq!(out.value("steal.all"), Some(50.0));
    }

    #[test]
    fn stat_lines() {
        assert_eq!(
            cpu_times("1 2 3 4 5 6 7 8 9 10"),
            Some((1 + 2 + 3 + 6 + 7 + 8, 8, 36))
        );
        assert_eq!(cpu_times("1 2 3 4"), Some((6, 0, 10)));
        assert_eq!(cpu_times("1 2 3"), None);
        assert_eq!(cpu_times("1 2 x 4"), None);
        assert_eq!(cpu_times("18446744073709551615 1 0 0"), None);
        let mut t = StatTotals::default();
        let mut out = Sample::default();
        assert!(!parse_stat("", &mut t, &mut out));
        assert!(!parse_stat(
            "garbage\nctxt x\ncpuX 1 2 3 4\n",
            &mut t,
            &mut out
        ));
        assert!(parse_stat(
            "cpu 1 2 3 4\ncpu0 1 2 3 4\nctxt 5\nprocs_running 2\n",
            &mut t,
            &mut out
        ));
        assert_eq!(t.ctxt, Some(5));
        assert_eq!(out.value("procs.running"), Some(2.0));
    }

    #[test]
    fn loadavg_and_meminfo() {
        let mut out = Sample::default();
        assert!(parse_loadavg("0.52 0.58 0.59 2/345 12345\n", &mut out));
        assert_eq!(out.value("load.5m"), Some(0.58));
        assert_eq!(out.value("tasks.total"), Some(345.0));
        assert!(!parse_loadavg("0.52 nan 0.59", &mut Sample::default()));
        assert!(!parse_loadavg("", &mut Sample::default()));
        let mut out = Sample::default();
        assert!(parse_meminfo(
            "MemTotal:  100 kB\nMemFree: 5 kB\nMemAvailable: 50 kB\n",
            &mut out
        ));
        assert_eq!(out.value("mem.available"), Some(51_200.0));
        assert!(!parse_meminfo(
            "MemAvailable: 50 kB\n",
            &mut Sample::default()
        ));
        assert!(!parse_meminfo("MemTotal: lots\n", &mut Sample::default()));
    }
}
