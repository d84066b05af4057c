//! Alerts: `--alert STAT>VALUE` thresholds checked on every window of every CPU. A breach marks
//! the window (its `alert` column), goes to syslog (`/dev/log`, which journald reads) as one
//! structured line with the window's worst wake-up and its explanation, and optionally runs
//! `--alert-command` through `sh -c` with the facts in its environment (`RTSCOPE_ALERT`,
//! `RTSCOPE_SERIES`, `RTSCOPE_CPU`, `RTSCOPE_WINDOW_START`, `RTSCOPE_MAX_NS`, …). One command
//! runs at a time: a breach while the last one still runs is logged, its command skipped and
//! counted, so a slow hook never piles up processes on a board. Each command runs in a process
//! group of its own, which the watch ends when it stops ([`Notifier::stop`]: SIGTERM, then
//! SIGKILL after a grace period), so nothing it started outlives the watch.
//!
//! A process group is easy to leave (`setsid …`, GNU `timeout …` makes a group of its own, a
//! daemon's double fork), so each command also carries a mark in its environment,
//! `RTSCOPE_ALERT_OF=<watch PID>:<its start time>:<notifier>`, which its descendants inherit whatever
//! group or session they move to: at the stop, every process with this watch's mark (found in
//! `/proc/*/environ`) is ended with the groups. What is guaranteed: everything an alert
//! command starts that keeps its environment (every fork, `exec`, `setsid`, `nohup`,
//! `timeout`, a double fork); not a program started with a cleared environment (`env -i`,
//! `sudo`, a service manager's start), which is no longer the command's.

use crate::error::ConfigError;
use rtscope_core::Nanos;
use rtscope_store::watch::WatchWindow;
use std::os::unix::net::UnixDatagram;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A statistic of a window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stat {
    /// Largest latency.
    Max,
    /// 99th percentile.
    P99,
    /// 99.99th percentile.
    P9999,
    /// Missed deadlines.
    Missed,
    /// Wake-ups at or above the spike threshold.
    Spikes,
}

/// One threshold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Threshold {
    /// What it checks.
    pub stat: Stat,
    /// A latency (for max and percentiles) in ns, or a count.
    pub over: u64,
}

/// Parses `max>200us`, `p99.99>100us`, `p99>50us`, `missed>0`, `spikes>10`.
pub fn parse(text: &str) -> Result<Threshold, ConfigError> {
    let bad = || ConfigError::AlertForm {
        text: text.to_string(),
    };
    let (stat, value) = text.split_once('>').ok_or_else(bad)?;
    let stat = match stat.trim() {
        "max" => Stat::Max,
        "p99" => Stat::P99,
        "p99.99" => Stat::P9999,
        "missed" => Stat::Missed,
        "spikes" => Stat::Spikes,
        _ => return Err(bad()),
    };
    let value = value.trim();
    let over = match stat {
        Stat::Missed | Stat::Spikes => value.parse::<u64>().map_err(|_| bad())?,
        _ => {
            Nanos::parse_with_default_unit(value, "us")
                .map_err(|error| ConfigError::AlertLatency {
                    text: text.to_string(),
                    error,
                })?
                .0
        }
    };
    Ok(Threshold { stat, over })
}

impl Threshold {
    /// The breach of `w`, as text (`max 212.3us > 200us`), if any.
    pub fn breach(&self, w: &WatchWindow) -> Option<String> {
        let h = &w.histogram;
        let (name, got) = match self.stat {
            Stat::Max => ("max", h.max().map(|n| n.0)),
            Stat::P99 => ("p99", h.value_at_quantile(0.99).map(|n| n.0)),
            Stat::P9999 => ("p99.99", h.value_at_quantile(0.9999).map(|n| n.0)),
            Stat::Missed => {
                return (w.missed > self.over)
                    .then(|| format!("missed {} > {}", w.missed, self.over))
            }
            Stat::Spikes => {
                return (w.spikes > self.over)
                    .then(|| format!("spikes {} > {}", w.spikes, self.over))
            }
        };
        got.filter(|&v| v > self.over)
            .map(|v| format!("{name} {} > {}", Nanos(v), Nanos(self.over)))
    }
}

/// Marks the windows that breach any of `thresholds`; returns the indices marked.
pub fn mark(windows: &mut [WatchWindow], thresholds: &[Threshold]) -> Vec<usize> {
    let mut marked = Vec::new();
    for (i, w) in windows.iter_mut().enumerate() {
        let breaches: Vec<String> = thresholds.iter().filter_map(|t| t.breach(w)).collect();
        if !breaches.is_empty() {
            w.alert = Some(breaches.join(", "));
            marked.push(i);
        }
    }
    marked
}

/// A breach whose alert waits for the explanation of its window's worst wake-up (`--explain`,
/// worst at or above `--spike`): sent with the largest cause when the tracer explains it, or
/// without one at `due_ns`.
#[derive(Debug, Clone)]
pub struct Held {
    /// The window (with its `alert`).
    pub window: WatchWindow,
    /// Its worst wake-up: latency and Unix ns.
    pub worst: (Nanos, i64),
    /// When it goes out unexplained, Unix ns.
    pub due_ns: i64,
}

impl Held {
    /// Whether the explanation of the worst wake-up `latency` on `cpu` in the window starting
    /// at `start_ns` is this alert's: its CPU's row, or the all-CPUs row whose worst it is.
    pub fn is_for(&self, start_ns: i64, cpu: u32, latency: Nanos) -> bool {
        let w = &self.window;
        w.start_ns == start_ns
            && match w.cpu {
                Some(c) => c == cpu,
                None => self.worst.0 == latency,
            }
    }
}

/// Where alerts go.
#[derive(Debug)]
pub struct Notifier {
    /// `--alert-command`.
    pub command: Option<String>,
    running: Option<Child>,
    /// The process groups of the commands started that may still have members (a command's
    /// own children can outlive it), each named by its leader's PID.
    groups: Vec<i32>,
    /// Commands skipped because the previous one still ran.
    pub skipped: u64,
    /// This watch's mark in its commands' environment (`RTSCOPE_ALERT_OF=…`).
    mark: String,
    /// Whether a command was ever started (only then can a marked process exist).
    started: bool,
}

impl Default for Notifier {
    fn default() -> Self {
        Notifier::new(None)
    }
}

/// The environment variable that marks a command's descendants as this watch's.
const MARK: &str = "RTSCOPE_ALERT_OF";

/// The mark of this process: `PID:start time` (clock ticks after boot, from `/proc/self/stat`),
/// so a later process given the same PID is not this one.
fn own_mark() -> String {
    let start = std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|s| {
            // The fields after the command name (which may hold spaces) in parentheses;
            // starttime is field 22, the 20th after it.
            let rest = s.get(s.rfind(')')? + 2..)?.to_owned();
            rest.split(' ').nth(19).map(str::to_owned)
        })
        .unwrap_or_default();
    // One mark per notifier, not per process: two notifiers of one process (the tests' threads)
    // must not end each other's commands at a stop.
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("{}:{start}:{n}", std::process::id())
}

/// The processes (other than this one) whose environment holds `MARK=mark`: the alert
/// commands' descendants, in whatever group or session. A zombie's environment reads empty,
/// so only the living are listed.
fn marked(mark: &str) -> Vec<i32> {
    let want = format!("{MARK}={mark}");
    let me = std::process::id() as i32;
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| pid != me)
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|&b| b == 0).any(|v| v == want.as_bytes()))
        })
        .collect()
}

/// The facts of one breach.
#[derive(Debug, Clone)]
pub struct Breach<'a> {
    /// Series name.
    pub series: &'a str,
    /// The window (with its `alert`).
    pub window: &'a WatchWindow,
    /// The worst wake-up: latency and Unix ns, when known.
    pub worst: Option<(Nanos, i64)>,
    /// The explanation's one-line summary, when explained.
    pub cause: Option<&'a str>,
}

fn cpu_text(w: &WatchWindow) -> String {
    w.cpu.map_or("all".into(), |c| c.to_string())
}

impl Breach<'_> {
    /// The syslog line: `key=value` pairs, values quoted and free of control characters.
    pub fn line(&self) -> String {
        let q = |s: &str| {
            let clean: String = s
                .chars()
                .map(|c| if c.is_control() || c == '"' { '?' } else { c })
                .collect();
            format!("\"{clean}\"")
        };
        let w = self.window;
        // The time for people (UTC, to the second) first; the nanoseconds for programs.
        let at = rtscope_core::civil::utc_text(w.start_ns.div_euclid(1_000_000_000));
        let mut l = format!(
            "alert series={} cpu={} window_start={} window_start_ns={} breach={}",
            q(self.series),
            cpu_text(w),
            q(&format!("{at} UTC")),
            w.start_ns,
            q(w.alert.as_deref().unwrap_or(""))
        );
        if let Some((lat, at)) = self.worst {
            l.push_str(&format!(" worst_ns={} worst_at_ns={at}", lat.0));
        }
        if let Some(c) = self.cause {
            l.push_str(&format!(" cause={}", q(c)));
        }
        l
    }
}

impl Notifier {
    /// A notifier that runs `command` on each breach, if given.
    pub fn new(command: Option<String>) -> Notifier {
        Notifier {
            command,
            running: None,
            groups: Vec::new(),
            skipped: 0,
            mark: own_mark(),
            started: false,
        }
    }

    /// Logs `b` to syslog and starts the command. Never fails: a missing `/dev/log` (no
    /// syslog daemon, a container) is reported once by the caller through `logged` = false.
    pub fn notify(&mut self, b: &Breach) -> bool {
        let logged = syslog(&b.line());
        self.reap();
        let Some(cmd) = self.command.clone() else {
            return logged;
        };
        if self.running.is_some() {
            self.skipped += 1;
            return logged;
        }
        let w = b.window;
        let mut c = Command::new("/bin/sh");
        c.arg("-c")
            .arg(&cmd)
            .stdin(Stdio::null())
            .env(MARK, &self.mark)
            .env("RTSCOPE_ALERT", w.alert.as_deref().unwrap_or(""))
            .env("RTSCOPE_SERIES", b.series)
            .env("RTSCOPE_CPU", cpu_text(w))
            .env("RTSCOPE_WINDOW_START", w.start_ns.to_string())
            .env("RTSCOPE_WINDOW_END", w.end_ns.to_string())
            .env(
                "RTSCOPE_MAX_NS",
                w.histogram.max().map_or(0, |n| n.0).to_string(),
            );
        if let Some((lat, at)) = b.worst {
            c.env("RTSCOPE_WORST_NS", lat.0.to_string())
                .env("RTSCOPE_WORST_AT", at.to_string());
        }
        if let Some(cause) = b.cause {
            c.env("RTSCOPE_CAUSE", cause);
        }
        // A group of its own: the watch ends it, and a Ctrl-C at a terminal reaches the
        // watch (which stops in order), not the command.
        c.process_group(0);
        // With the watch's signals held in every thread, the command would start with SIGTERM
        // blocked (under a shell that keeps the mask, bash) and outlive its group's SIGTERM.
        rtscope_common::signals::unblocked_in_child(&mut c);
        self.started = true;
        self.running = c.spawn().ok();
        if let Some(ch) = &self.running {
            self.groups.push(ch.id() as i32);
        }
        logged
    }

    /// Reaps the last command if it ended, and forgets the groups that have no member left.
    pub fn reap(&mut self) {
        self.reap_leader();
        self.groups.retain(|&g| group_alive(g));
    }

    /// Ends every command's process group and every process that carries this watch's mark
    /// (a command's descendant that left its group): what has not ended by itself within
    /// `finish` (a command started for the last window) gets SIGTERM, then SIGKILL after
    /// `grace`. Returns once none is left (or 1 s after the SIGKILL) with the number of groups
    /// and marked processes outside them that had to be signalled. The leader of the running
    /// command is reaped here, so its PID, which names the group, stays ours until the group
    /// is gone.
    pub fn stop(&mut self, finish: Duration, grace: Duration) -> usize {
        self.reap();
        if !self.started || self.wait_groups(Instant::now() + finish) {
            self.groups.clear();
            return 0;
        }
        let ended = self.groups.len() + self.strays().len();
        self.signal_groups(libc::SIGTERM);
        if !self.wait_groups(Instant::now() + grace) {
            self.signal_groups(libc::SIGKILL);
            self.wait_groups(Instant::now() + Duration::from_secs(1));
        }
        self.groups.clear();
        ended
    }

    /// The marked processes outside the groups still known (those left them).
    fn strays(&self) -> Vec<i32> {
        if !self.started {
            return Vec::new();
        }
        let pgid = |pid: i32| {
            // SAFETY: getpgid(2) takes a PID; no pointers.
            unsafe { libc::getpgid(pid) }
        };
        marked(&self.mark)
            .into_iter()
            .filter(|&p| !self.groups.contains(&pgid(p)))
            .collect()
    }

    fn signal_groups(&self, sig: i32) {
        for &g in &self.groups {
            // SAFETY: kill(2) with a negative PID signals a process group; no pointers.
            unsafe { libc::kill(-g, sig) };
        }
        for p in self.strays() {
            // SAFETY: kill(2) signals one process, found by its mark just now; no pointers.
            unsafe { libc::kill(p, sig) };
        }
    }

    /// Reaps the running leader if it ended (without forgetting its group).
    fn reap_leader(&mut self) {
        if let Some(ch) = self.running.as_mut() {
            if !matches!(ch.try_wait(), Ok(None)) {
                self.running = None;
            }
        }
    }

    /// Waits until every group is empty or `until`; whether they all are.
    fn wait_groups(&mut self, until: Instant) -> bool {
        loop {
            self.reap_leader();
            if self.running.is_none()
                && !self.groups.iter().any(|&g| group_alive(g))
                && self.strays().is_empty()
            {
                return true;
            }
            if Instant::now() >= until {
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Notifier {
    fn drop(&mut self) {
        self.stop(Duration::ZERO, Duration::from_secs(2));
    }
}

/// Whether process group `g` still has a member (a zombie leader not yet reaped counts).
fn group_alive(g: i32) -> bool {
    // SAFETY: kill(2) with signal 0 only checks; a negative PID names the group.
    unsafe { libc::kill(-g, 0) == 0 }
}

/// Sends `msg` to the local syslog socket (facility daemon, severity warning, RFC 3164 as
/// journald and rsyslog read it). Returns whether it was sent.
pub fn syslog(msg: &str) -> bool {
    let Ok(sock) = UnixDatagram::unbound() else {
        return false;
    };
    // <28>: facility daemon (3) * 8 + severity warning (4).
    let line = format!("<28>rtscope-watch[{}]: {msg}", std::process::id());
    sock.send_to(line.as_bytes(), "/dev/log").is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtscope_core::Histogram;
    use rtscope_store::watch::Level;

    fn window(values: &[u64], missed: u64) -> WatchWindow {
        let mut h = Histogram::new();
        values.iter().for_each(|&v| h.record(Nanos(v)));
        WatchWindow {
            level: Level::Window,
            start_ns: 0,
            end_ns: 1,
            cpu: Some(2),
            spikes: 0,
            histogram: h,
            missed,
            alert: None,
            explain: None,
        }
    }

    #[test]
    fn thresholds_parse_and_mark_only_breaching_windows() {
        let t = [parse("max>200us").unwrap(), parse("missed>0").unwrap()];
        assert_eq!(
            t[0],
            Threshold {
                stat: Stat::Max,
                over: 200_000
            }
        );
        assert!(
            parse("max>=200us").is_err() && parse("p42>1").is_err() && parse("missed>x").is_err()
        );
        let mut w = [
            window(&[1_000, 250_000], 0),
            window(&[1_000], 3),
            window(&[200_000], 0),
        ];
        assert_eq!(mark(&mut w, &t), vec![0, 1]);
        assert_eq!(w[0].alert.as_deref(), Some("max 250.0us > 200.0us"));
        assert_eq!(w[1].alert.as_deref(), Some("missed 3 > 0"));
        assert_eq!(w[2].alert, None, "at the threshold is not over it");
    }

    /// The PIDs whose command line holds `word` (found without the watch's mark).
    fn with_arg(word: &str) -> Vec<i32> {
        let dir = std::fs::read_dir("/proc").unwrap();
        dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
            .filter(|pid| {
                let state =
                    std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
                let zombie = state
                    .rsplit_once(") ")
                    .is_some_and(|(_, r)| r.starts_with('Z'));
                !zombie
                    && std::fs::read(format!("/proc/{pid}/cmdline"))
                        .is_ok_and(|c| c.split(|&b| b == 0).any(|a| a == word.as_bytes()))
            })
            .collect()
    }

    /// Issue 67 item 9: commands that leave their process group (`setsid`, GNU `timeout` in a
    /// group of its own) are ended at the stop all the same.
    #[test]
    fn a_command_that_leaves_its_group_does_not_outlive_the_stop() {
        // A length no other process uses, to find the sleeps by their command line.
        let n = std::process::id();
        let (a, b) = (format!("1000.{n}1"), format!("1000.{n}2"));
        let mut w = window(&[250_000], 0);
        mark(std::slice::from_mut(&mut w), &[parse("max>200us").unwrap()]);
        let breach = Breach {
            series: "s",
            window: &w,
            worst: None,
            cause: None,
        };
        // The command as the issue gave it (the shell waits for it), and one that leaves a
        // GNU timeout in a group of its own behind the shell that started it.
        for (cmd, word) in [
            (format!("setsid sleep {a}"), &a),
            (format!("timeout 2000 sleep {b} & exit 0"), &b),
        ] {
            let mut notifier = Notifier::new(Some(cmd.clone()));
            notifier.notify(&breach);
            let end = Instant::now() + Duration::from_secs(30);
            while with_arg(word).is_empty() {
                assert!(Instant::now() < end, "{cmd}: never started");
                std::thread::sleep(Duration::from_millis(20));
            }
            let ended = notifier.stop(Duration::ZERO, Duration::from_secs(2));
            assert!(ended >= 1, "{cmd}: {ended}");
            assert_eq!(
                with_arg(word),
                Vec::<i32>::new(),
                "{cmd}: outlived the stop"
            );
        }
    }

    #[test]
    fn the_command_gets_the_facts_and_a_slow_one_is_not_stacked() {
        let dir = std::env::temp_dir().join(format!("rtscope-alert-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let out = dir.join("env");
        let cmd = format!(
            "echo \"$RTSCOPE_ALERT|$RTSCOPE_CPU|$RTSCOPE_CAUSE\" >> {}; sleep 1",
            out.display()
        );
        let mut n = Notifier::new(Some(cmd));
        let mut w = window(&[250_000], 0);
        mark(std::slice::from_mut(&mut w), &[parse("max>200us").unwrap()]);
        let b = Breach {
            series: "s",
            window: &w,
            worst: Some((Nanos(250_000), 5)),
            cause: Some("thread x\n"),
        };
        assert!(b.line().contains("cause=\"thread x?\""), "{}", b.line());
        assert!(
            b.line()
                .contains("window_start=\"1970-01-01 00:00:00 UTC\" window_start_ns=0"),
            "{}",
            b.line()
        );
        n.notify(&b);
        n.notify(&b);
        assert_eq!(n.skipped, 1);
        n.running.take().unwrap().wait().unwrap();
        let text = std::fs::read_to_string(&out).unwrap();
        assert_eq!(text, "max 250.0us > 200.0us|2|thread x\n\n");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
