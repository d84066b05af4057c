//! Whether a started load works yet: the CPU time its processes have used, read from
//! `/proc/PID/stat` below a root that tests may point elsewhere.
//!
//! A load is started when its program runs, but a program may take long before it loads
//! anything (a tool that allocates and fills its memory first, a script that sleeps): a run
//! measured meanwhile is not under load. Each load leads a process group of its own, so its
//! CPU time is that of every process in the group (user and system, and the children they
//! reaped). A load has started working once that reaches [`WORKING_CPU`]: a program that only
//! sleeps or waits uses a few milliseconds to start, a load uses a CPU.

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

/// CPU time a load's processes must have used for it to count as working.
pub const WORKING_CPU: Duration = Duration::from_millis(100);

/// The CPU time used by the processes of each process group in `groups` (each load's PID is
/// its group's ID), from `proc_root` (`/proc`); `None` for a group with no process left.
pub fn group_cpu(proc_root: &Path, groups: &[u32]) -> Vec<Option<Duration>> {
    let mut ticks: HashMap<u32, u64> = HashMap::new();
    if let Ok(dir) = std::fs::read_dir(proc_root) {
        for e in dir.flatten() {
            let name = e.file_name();
            let Some(pid) = name.to_str().and_then(|n| n.parse::<u32>().ok()) else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(proc_root.join(pid.to_string()).join("stat"))
            else {
                continue; // ended meanwhile
            };
            if let Some((pgrp, t)) = parse_stat(&stat) {
                if groups.contains(&pgrp) {
                    *ticks.entry(pgrp).or_default() += t;
                }
            }
        }
    }
    let hz = clock_ticks();
    groups
        .iter()
        .map(|g| {
            ticks
                .get(g)
                .map(|&t| Duration::from_nanos(t.saturating_mul(1_000_000_000) / hz))
        })
        .collect()
}

/// The process group and the CPU ticks (utime, stime, cutime, cstime) of a `stat` line. The
/// command name (field 2) may hold spaces and parentheses: fields are counted after its last
/// `)`.
fn parse_stat(stat: &str) -> Option<(u32, u64)> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // After the name: state(3) ppid(4) pgrp(5) … utime(14) stime(15) cutime(16) cstime(17).
    let pgrp = f.get(2)?.parse().ok()?;
    let mut t = 0u64;
    for i in 11..=14 {
        t = t.saturating_add(f.get(i)?.parse::<i64>().ok()?.max(0) as u64);
    }
    Some((pgrp, t))
}

/// The kernel's clock ticks per second for `/proc` times (USER_HZ, 100 on Linux).
fn clock_ticks() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if hz > 0 {
        hz as u64
    } else {
        100
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stat_line_gives_its_group_and_ticks_whatever_the_command_name() {
        let line = "4711 (a) b (c)) S 1 4700 4700 0 -1 4194560 100 0 0 0 7 3 2 1 20 0 1 0 5 0 0";
        assert_eq!(parse_stat(line), Some((4700, 13)));
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn a_groups_cpu_time_adds_its_processes_and_a_gone_group_has_none() {
        let dir = std::env::temp_dir().join(format!("rtscope-working-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let stat = |pid: u32, pgrp: u32, utime: u64| {
            std::fs::create_dir_all(dir.join(pid.to_string())).unwrap();
            let l = format!("{pid} (x) R 1 {pgrp} {pgrp} 0 -1 0 0 0 0 0 {utime} 0 0 0 20 0 1 0");
            std::fs::write(dir.join(pid.to_string()).join("stat"), l).unwrap();
        };
        stat(10, 10, 5);
        stat(11, 10, 20);
        stat(12, 12, 1);
        std::fs::create_dir_all(dir.join("self")).unwrap();
        let hz = clock_ticks();
        let got = group_cpu(&dir, &[10, 12, 99]);
        assert_eq!(got[0], Some(Duration::from_nanos(25 * 1_000_000_000 / hz)));
        assert_eq!(got[1], Some(Duration::from_nanos(1_000_000_000 / hz)));
        assert_eq!(got[2], None);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn this_process_group_has_used_cpu_time() {
        // SAFETY: getpgrp has no preconditions.
        let group = unsafe { libc::getpgrp() } as u32;
        let got = group_cpu(Path::new("/proc"), &[group]);
        assert!(got[0].is_some(), "{got:?}");
    }
}
