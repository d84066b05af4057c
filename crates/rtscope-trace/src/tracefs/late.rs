//! Late-only kernel stacks: hist triggers and synthetic events that take a stack only when a
//! measured thread's wake-up is late, on kernels with `CONFIG_HIST_TRIGGERS` (Debian's,
//! Fedora's; not every custom kernel).
//!
//! Three chains, each a variable saved by a hist trigger on one event and read (once: the
//! kernel resets a variable another event reads) by a hist trigger on a later one, which fires
//! a synthetic event with the lateness; a `stacktrace` trigger on the synthetic event,
//! filtered `lat >= threshold`, takes the stack of whatever the CPU runs in that context:
//!
//! - **switch** (keyed by the measured thread's PID): `sched_waking` saves the time, the
//!   `sched_switch` into the thread computes how long it waited to run. The stack is of the
//!   task switched out, in its `__schedule` (a blocking thread; on a preemptible kernel the
//!   `preempt_enable` that ended a section).
//! - **timer** (keyed by the sleep's hrtimer): `hrtimer_start` of a measured thread saves the
//!   timer's expiry, `hrtimer_expire_entry` computes how late the interrupt came. The stack
//!   is where the interrupt found the CPU (the `local_irq_restore` that let it in).
//! - **held** (keyed by the CPU): `sched_waking` saves the time, the CPU's scheduler tick
//!   (`tick_sched_timer`) reads it while the thread still waits. The stack is where the tick
//!   found the CPU: a preempt-off section on a kernel that does not preempt at its end. The
//!   switch into the thread reads (and so clears) it too, through a synthetic event nothing
//!   listens to; only the first tick after the waking looks, so a tick that comes before the
//!   threshold takes none.
//!
//! Every trigger with `common_timestamp` names the instance's clock (`clock=mono`): without
//! it the kernel switches the instance's trace clock to `global` (seen on Debian's 6.1), and
//! the trace's times would no longer be the measured thread's `CLOCK_MONOTONIC`.
//!
//! A prompt wake-up fires the synthetic events with a lateness under the threshold: no stack.
//! The hist triggers live on the instance's own events (removed with it); the synthetic
//! events are global (`synthetic_events` has no per-instance file), named after the instance
//! (`rtscope_<pid>_<n>_<chain>`), and deleted after it on every exit path: by
//! [`remove`], by the reaper after a SIGKILL (the `!name` lines of [`Late::deletions`]) and
//! by the next run for a dead owner ([`remove_stale`]).

use crate::tracefs::{read_bounded, Tracefs, INSTANCE_PREFIX};
use crate::TraceError;
use std::path::Path;

/// The synthetic event names and the triggers of one instance's late-only stacks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Late {
    /// Name prefix of the instance's synthetic events (`rtscope_<pid>_<n>`).
    pub prefix: String,
    /// Lines appended to `synthetic_events`, in order.
    pub synthetic: Vec<String>,
    /// (file below the instance, trigger) appended in order.
    pub triggers: Vec<(String, String)>,
}

/// Kernel text addresses the timer chains filter on (`None`: that chain is left out).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TimerFunctions {
    /// `hrtimer_wakeup`: the function of a sleeping task's hrtimer.
    pub hrtimer_wakeup: Option<u64>,
    /// `tick_sched_timer`: the scheduler tick's hrtimer.
    pub tick_sched_timer: Option<u64>,
}

/// The synthetic-event prefix of the instance `dir` (`instances/rtscope-<pid>-<n>`):
/// `rtscope_<pid>_<n>`.
pub fn prefix(dir: &Path) -> Option<String> {
    let name = dir.file_name()?.to_str()?;
    let rest = name.strip_prefix(INSTANCE_PREFIX)?;
    let ok = !rest.is_empty() && rest.chars().all(|c| c.is_ascii_digit() || c == '-');
    ok.then(|| format!("rtscope_{}", rest.replace('-', "_")))
}

/// The filter on measured threads that sleep (`rtscope-m*`; the noise loop never sleeps).
const MEASURED: &str = "\"rtscope-m*\"";

impl Late {
    /// The synthetic events and triggers for the instance `dir`, a stack taken at a lateness
    /// of `threshold_ns` or more.
    pub fn new(dir: &Path, threshold_ns: u64, f: TimerFunctions) -> Option<Late> {
        let p = prefix(dir)?;
        let t = threshold_ns;
        let mut synthetic = vec![format!("{p}_switch pid_t pid; u64 lat")];
        let mut triggers = vec![
            (
                "events/sched/sched_waking/trigger".to_string(),
                format!("hist:keys=pid:{p}_ts=common_timestamp:clock=mono if comm ~ {MEASURED}"),
            ),
            (
                "events/sched/sched_switch/trigger".to_string(),
                format!(
                    "hist:keys=next_pid:{p}_wait=common_timestamp-${p}_ts:\
                     onmatch(sched.sched_waking).trace({p}_switch,next_pid,${p}_wait):clock=mono \
                     if next_comm ~ {MEASURED}"
                ),
            ),
            (
                format!("events/synthetic/{p}_switch/trigger"),
                format!("stacktrace if lat >= {t}"),
            ),
        ];
        if let Some(a) = f.hrtimer_wakeup {
            synthetic.push(format!("{p}_timer s64 lat"));
            triggers.extend([
                (
                    "events/timer/hrtimer_start/trigger".to_string(),
                    format!(
                        "hist:keys=hrtimer:{p}_exp=expires \
                         if function == {a:#x} && comm ~ {MEASURED}"
                    ),
                ),
                (
                    "events/timer/hrtimer_expire_entry/trigger".to_string(),
                    format!(
                        "hist:keys=hrtimer:{p}_late=now-${p}_exp:\
                         onmatch(timer.hrtimer_start).trace({p}_timer,${p}_late) \
                         if function == {a:#x}"
                    ),
                ),
                (
                    format!("events/synthetic/{p}_timer/trigger"),
                    format!("stacktrace if lat >= {t}"),
                ),
            ]);
        }
        if let Some(a) = f.tick_sched_timer {
            synthetic.push(format!("{p}_held u64 lat"));
            synthetic.push(format!("{p}_ran u64 lat"));
            triggers.extend([
                (
                    "events/sched/sched_waking/trigger".to_string(),
                    format!("hist:keys=target_cpu:{p}_woke=common_timestamp:clock=mono if comm ~ {MEASURED}"),
                ),
                (
                    "events/sched/sched_switch/trigger".to_string(),
                    format!(
                        "hist:keys=common_cpu:{p}_rv=common_timestamp-${p}_woke:\
                         onmatch(sched.sched_waking).trace({p}_ran,${p}_rv):clock=mono \
                         if next_comm ~ {MEASURED}"
                    ),
                ),
                (
                    "events/timer/hrtimer_expire_entry/trigger".to_string(),
                    format!(
                        "hist:keys=common_cpu:{p}_hv=common_timestamp-${p}_woke:\
                         onmatch(sched.sched_waking).trace({p}_held,${p}_hv):clock=mono \
                         if function == {a:#x}"
                    ),
                ),
                (
                    format!("events/synthetic/{p}_held/trigger"),
                    format!("stacktrace if lat >= {t}"),
                ),
            ]);
        }
        Some(Late {
            prefix: p,
            synthetic,
            triggers,
        })
    }

    /// The lines that delete the synthetic events (`!name`), appended to `synthetic_events`
    /// once the instance (whose triggers use them) is gone.
    pub fn deletions(&self) -> Vec<String> {
        self.synthetic
            .iter()
            .filter_map(|l| l.split_whitespace().next())
            .map(|n| format!("!{n}"))
            .collect()
    }

    /// The `!` lines taking every trigger back, last set first (a variable's readers before
    /// the trigger that sets it), with their files below the instance `dir`.
    pub fn undo(&self, dir: &Path) -> Vec<(std::path::PathBuf, String)> {
        self.triggers
            .iter()
            .rev()
            .map(|(f, t)| (dir.join(f), format!("!{t}")))
            .collect()
    }

    /// The chains set up (`switch`, `timer`, `held`), for the tier line.
    pub fn chains(&self) -> Vec<&str> {
        self.synthetic
            .iter()
            .filter_map(|l| l.split_whitespace().next())
            .filter_map(|n| n.strip_prefix(&self.prefix)?.strip_prefix('_'))
            .filter(|c| *c != "ran")
            .collect()
    }

    /// Defines the synthetic events and appends the triggers to the instance `dir`. On an
    /// error the caller removes the instance, then the events ([`remove`]).
    pub fn set_up(&self, tfs: &Tracefs, dir: &Path) -> Result<(), TraceError> {
        let defs = tfs.root.join("synthetic_events");
        for line in &self.synthetic {
            append_file(&defs, line)?;
        }
        for (file, trigger) in &self.triggers {
            append_file(&dir.join(file), trigger)?;
        }
        Ok(())
    }
}

/// Why this kernel cannot take late-only stacks (`None`: it can).
pub fn unsupported(tfs: &Tracefs) -> Option<String> {
    if !tfs.root.join("synthetic_events").exists() {
        return Some(
            "no synthetic events (a kernel without CONFIG_SYNTH_EVENTS/CONFIG_HIST_TRIGGERS)"
                .into(),
        );
    }
    if !tfs.root.join("events/sched/sched_waking/hist").exists() {
        return Some("no hist triggers (a kernel without CONFIG_HIST_TRIGGERS)".into());
    }
    None
}

/// Appends `line` to a tracefs file (`synthetic_events`, an event's `trigger`): never
/// truncating, which would delete every synthetic event or every trigger there.
pub fn append_file(path: &Path, line: &str) -> Result<(), TraceError> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let err = |source| TraceError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .map_err(err)?;
    f.write_all(line.as_bytes()).map_err(err)
}

/// Deletes the synthetic events of `late` (after its instance is gone); the errors are
/// ignored (an event already deleted, or still used by an instance being removed).
pub fn remove(tfs: &Tracefs, late: &Late) {
    let defs = tfs.root.join("synthetic_events");
    for d in late.deletions() {
        let _ = append_file(&defs, &d);
    }
}

/// Takes back the late-only triggers of a dead owner's instance `dir` (as its trigger files
/// list them, without ` [active]`; readers before setters), so that the instance can be
/// removed: the kernel refuses while hist triggers hold variables.
pub fn untrigger(dir: &Path) {
    let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(dir.join("events/synthetic"))
        .map(|r| r.flatten().map(|e| e.path().join("trigger")).collect())
        .unwrap_or_default();
    files.extend(
        [
            "timer/hrtimer_expire_entry",
            "sched/sched_switch",
            "timer/hrtimer_start",
            "sched/sched_waking",
        ]
        .iter()
        .map(|e| dir.join("events").join(e).join("trigger")),
    );
    for file in files {
        let Ok(text) = read_bounded(&file) else {
            continue;
        };
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let line = line.trim_end().trim_end_matches("[active]").trim_end();
            if line.starts_with("hist:") || line.starts_with("stacktrace") {
                let _ = append_file(&file, &format!("!{line}"));
            }
        }
    }
}

/// The owner PID of a synthetic event named `rtscope_<pid>_<n>_<chain>`.
pub fn owner_of(name: &str) -> Option<i32> {
    name.strip_prefix("rtscope_")?
        .split('_')
        .next()?
        .parse()
        .ok()
}

/// Deletes the synthetic events of rtscope processes that no longer exist (their instances
/// already removed by [`crate::tracefs::remove_stale`]); returns their names.
pub fn remove_stale(tfs: &Tracefs, alive: impl Fn(i32) -> bool) -> Vec<String> {
    let defs = tfs.root.join("synthetic_events");
    let Ok(text) = read_bounded(&defs) else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    for name in text.lines().filter_map(|l| l.split_whitespace().next()) {
        if owner_of(name).is_some_and(|pid| !alive(pid))
            && append_file(&defs, &format!("!{name}")).is_ok()
        {
            removed.push(name.to_string());
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn dir() -> PathBuf {
        PathBuf::from("/sys/kernel/tracing/instances/rtscope-4711-2")
    }

    #[test]
    fn synthetic_event_names_come_from_the_instance_and_nothing_else() {
        assert_eq!(prefix(&dir()).as_deref(), Some("rtscope_4711_2"));
        assert_eq!(prefix(Path::new("/x/instances/rtla")), None);
        assert_eq!(prefix(Path::new("/x/instances/rtscope-4711-2;x")), None);
        assert_eq!(owner_of("rtscope_4711_2_switch"), Some(4711));
        assert_eq!(owner_of("wakeup_latency"), None);
    }

    #[test]
    fn the_switch_chain_alone_is_set_without_timer_symbols() {
        let l = Late::new(&dir(), 1_500_000, TimerFunctions::default()).unwrap();
        assert_eq!(l.synthetic, ["rtscope_4711_2_switch pid_t pid; u64 lat"]);
        assert_eq!(
            l.triggers,
            [
                (
                    "events/sched/sched_waking/trigger".to_string(),
                    "hist:keys=pid:rtscope_4711_2_ts=common_timestamp:clock=mono if comm ~ \"rtscope-m*\""
                        .to_string()
                ),
                (
                    "events/sched/sched_switch/trigger".to_string(),
                    "hist:keys=next_pid:rtscope_4711_2_wait=common_timestamp-$rtscope_4711_2_ts:\
                     onmatch(sched.sched_waking).trace(rtscope_4711_2_switch,next_pid,\
                     $rtscope_4711_2_wait):clock=mono if next_comm ~ \"rtscope-m*\""
                        .to_string()
                ),
                (
                    "events/synthetic/rtscope_4711_2_switch/trigger".to_string(),
                    "stacktrace if lat >= 1500000".to_string()
                ),
            ]
        );
        assert_eq!(l.deletions(), ["!rtscope_4711_2_switch"]);
        assert_eq!(l.chains(), ["switch"]);
    }

    #[test]
    fn the_timer_chains_filter_on_the_timer_functions_address() {
        let f = TimerFunctions {
            hrtimer_wakeup: Some(0xffff_ffff_8110_0000),
            tick_sched_timer: Some(0xffff_ffff_8120_0000),
        };
        let l = Late::new(&dir(), 20_000, f).unwrap();
        assert_eq!(l.chains(), ["switch", "timer", "held"]);
        assert_eq!(
            l.deletions(),
            [
                "!rtscope_4711_2_switch",
                "!rtscope_4711_2_timer",
                "!rtscope_4711_2_held",
                "!rtscope_4711_2_ran"
            ]
        );
        let find = |file: &str, what: &str| {
            l.triggers
                .iter()
                .find(|(f, t)| f == file && t.contains(what))
                .map(|(_, t)| t.clone())
                .unwrap_or_else(|| panic!("no {what} on {file}"))
        };
        assert_eq!(
            find("events/timer/hrtimer_start/trigger", "expires"),
            "hist:keys=hrtimer:rtscope_4711_2_exp=expires if function == 0xffffffff81100000 \
             && comm ~ \"rtscope-m*\""
        );
        assert_eq!(
            find("events/timer/hrtimer_expire_entry/trigger", "keys=hrtimer"),
            "hist:keys=hrtimer:rtscope_4711_2_late=now-$rtscope_4711_2_exp:\
             onmatch(timer.hrtimer_start).trace(rtscope_4711_2_timer,$rtscope_4711_2_late) \
             if function == 0xffffffff81100000"
        );
        assert_eq!(
            find("events/timer/hrtimer_expire_entry/trigger", "common_cpu"),
            "hist:keys=common_cpu:rtscope_4711_2_hv=common_timestamp-$rtscope_4711_2_woke:\
             onmatch(sched.sched_waking).trace(rtscope_4711_2_held,$rtscope_4711_2_hv):clock=mono \
             if function == 0xffffffff81200000"
        );
        // The switch into the thread clears the tick chain's variable, taking no stack.
        let ran = find("events/sched/sched_switch/trigger", "common_cpu");
        assert!(ran.contains(".trace(rtscope_4711_2_ran,"), "{ran}");
        assert!(!l
            .triggers
            .iter()
            .any(|(f, _)| f.contains("synthetic/rtscope_4711_2_ran")));
        for chain in ["switch", "timer", "held"] {
            assert_eq!(
                find(
                    &format!("events/synthetic/rtscope_4711_2_{chain}/trigger"),
                    "stacktrace"
                ),
                "stacktrace if lat >= 20000"
            );
        }
    }

    #[test]
    fn a_tracefs_without_synthetic_events_or_hist_files_says_which_is_missing() {
        let base = std::env::temp_dir().join(format!("rtscope-late-{}", std::process::id()));
        let tfs = Tracefs { root: base.clone() };
        std::fs::create_dir_all(base.join("events/sched/sched_waking")).unwrap();
        assert!(unsupported(&tfs).unwrap().contains("CONFIG_SYNTH_EVENTS"));
        std::fs::write(base.join("synthetic_events"), "").unwrap();
        assert!(unsupported(&tfs).unwrap().contains("no hist triggers"));
        std::fs::write(base.join("events/sched/sched_waking/hist"), "").unwrap();
        assert_eq!(unsupported(&tfs), None);
        // Stale events: a dead owner's are deleted by appending `!name`; others stay.
        std::fs::write(
            base.join("synthetic_events"),
            "rtscope_1_0_switch pid_t pid; u64 lat\nwakeup_latency u64 lat\n\
             rtscope_2_0_switch pid_t pid; u64 lat\n",
        )
        .unwrap();
        let removed = remove_stale(&tfs, |pid| pid == 2);
        assert_eq!(removed, ["rtscope_1_0_switch"]);
        let text = std::fs::read_to_string(base.join("synthetic_events")).unwrap();
        assert!(text.ends_with("!rtscope_1_0_switch"), "{text}");
        std::fs::remove_dir_all(base).unwrap();
    }
}
