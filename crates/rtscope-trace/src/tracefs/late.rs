//! Late-only kernel stacks: hist triggers and synthetic events that take a stack only when a
//! measured thread's wake-up is late, on kernels with `CONFIG_HIST_TRIGGERS` (Debian's,
//! Fedora's; not every custom kernel).
//!
//! Up to three chains, each a variable saved by a hist trigger on one event and read (once:
//! the kernel resets a variable another event's trigger reads in an expression) by a hist
//! trigger on a later one, which fires a synthetic event with the lateness; a `stacktrace`
//! trigger on the synthetic event, filtered `lat >= threshold`, takes the stack of whatever
//! the CPU runs in that context:
//!
//! - **switch** (keyed by the measured thread's PID): the thread's `hrtimer_start` saves its
//!   timer's expiry (off the wake-up path: the thread arms it after its sample), the
//!   `sched_switch` into the thread computes how late it runs. Threads on another clock than
//!   the trace's `CLOCK_MONOTONIC` (or no `hrtimer_wakeup` symbol): `sched_waking` saves the
//!   time instead. The stack is of the task switched out, in its `__schedule` (a blocking
//!   thread; on a preemptible kernel the `preempt_enable` that ended a section).
//! - **timer** (keyed by the sleep's hrtimer): `hrtimer_start` of a measured thread saves the
//!   timer's expiry, `hrtimer_expire_entry` computes how late the interrupt came. The stack
//!   is where the interrupt found the CPU (the `local_irq_restore` that let it in).
//! - **held** (keyed by the CPU), only where the kernel does not preempt at a section's end
//!   ([`Preemption`]; on PREEMPT_RT and `preempt=full` the switch's stack names the section):
//!   `sched_waking` saves the time, the CPU's scheduler tick (`tick_sched_timer`) reads it
//!   while the thread still waits. The stack is where the tick found the CPU: a preempt-off
//!   section. The switch into the thread reads (and so clears) it too, by a hist trigger
//!   without an action: no synthetic event. Only the first tick after the waking looks, so a
//!   tick that comes before the threshold takes none.
//!
//! A prompt wake-up on a kernel that preempts at a section's end thus costs one hist trigger
//! at the timer interrupt and one at the switch (each a variable read and a map update) and
//! two synthetic events that take no stack; with the held chain, one trigger more at the
//! waking and one at the switch (docs/explain.md, "Kernel stacks").
//!
//! Every trigger with `common_timestamp` names the instance's clock (`clock=mono`): without
//! it the kernel switches the instance's trace clock to `global` (seen on Debian's 6.1), and
//! the trace's times would no longer be the measured thread's `CLOCK_MONOTONIC`.
//!
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
    /// Why the held chain is not set where it could be: the preemption model that makes it
    /// unneeded.
    pub held_skipped: Option<String>,
    /// How the stacks are taken: by this module's triggers, or by eBPF programs (no trigger
    /// is set here then).
    pub mechanism: Mechanism,
}

/// How the late-only stacks are taken, decided before the instance is set up
/// ([`Setting::mechanism`]).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Mechanism {
    /// The hist triggers and synthetic events of this module: the choice where no eBPF
    /// program was loaded (a [`Setting`] is built before the programs are tried).
    #[default]
    Triggers,
    /// eBPF programs (the `bpf_stacks` module): their chains and where they hang.
    Bpf(BpfChains),
}

/// The chains eBPF programs take, and where they hang: the tier line's words by [`Display`]
/// (`switch, timer (eBPF on raw tracepoints)`).
///
/// [`Display`]: std::fmt::Display
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BpfChains {
    /// The chains set (`switch`, `timer`, `held`).
    pub chains: Vec<&'static str>,
    /// Where the programs read the tracepoints' values (`raw tracepoints`, `trace events`).
    pub on: &'static str,
    /// Why they are not where the loader tried first (`None`: they are, or it was not tried):
    /// on the raw tracepoints, why not as BTF-typed programs; on the trace events, why not
    /// on the raw tracepoints.
    pub not_raw: Option<String>,
}

impl std::fmt::Display for BpfChains {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (eBPF on {}", self.chains.join(", "), self.on)?;
        if let Some(why) = &self.not_raw {
            let not = if self.on == "raw tracepoints" {
                "BTF-typed"
            } else {
                "raw tracepoints"
            };
            write!(f, "; not {not}: {why}")?;
        }
        f.write_str(")")
    }
}

/// Why the late-only stacks cannot be set by hist triggers: the tier line's words by
/// `Display`, unchanged from the text they replace.
#[derive(Debug, thiserror::Error)]
pub enum LateError {
    /// The kernel has no synthetic events or no hist triggers.
    #[error("{0}")]
    Unsupported(#[from] Unsupported),
    /// The kernel writes no stack entries.
    #[error("the kernel has no ftrace/kernel_stack event (CONFIG_STACKTRACE)")]
    NoKernelStack,
    /// The instance's directory name gives no synthetic event prefix ([`prefix`]).
    #[error("the instance's name makes no synthetic event name")]
    NoEventName,
    /// The kernel refused a synthetic event or a trigger (everything set was taken back).
    #[error("a hist trigger was refused ({0})")]
    Refused(TraceError),
}

/// What this kernel lacks for the late-only hist triggers ([`unsupported`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unsupported {
    /// No `synthetic_events` file.
    #[error("no synthetic events (a kernel without CONFIG_SYNTH_EVENTS/CONFIG_HIST_TRIGGERS)")]
    NoSyntheticEvents,
    /// No event has a `hist` file.
    #[error("no hist triggers (a kernel without CONFIG_HIST_TRIGGERS)")]
    NoHistTriggers,
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

/// The most a switch chain measured from the timer's expiry reads as late (ns): a thread
/// switched in after arming its timer and before sleeping reads its expiry ahead, which the
/// kernel's unsigned arithmetic turns into a huge lateness; this bound leaves those out.
const MAX_LATE_NS: u64 = 1_000_000_000_000;

/// Whether the kernel switches to a woken real-time thread at the end of a preempt-off
/// section (where the **held** chain is not needed: the switch's stack names the section).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Preemption {
    /// It does: the model that says so (`PREEMPT_RT`, `preempt=full`).
    AtSectionEnd(String),
    /// It does not (`none`, `voluntary`), or the model could not be read.
    #[default]
    Later,
}

impl Preemption {
    /// From the kernel's preemption model as `rtscope check` reads it
    /// (`rtscope_check::preemption_model`: `rt`, `full`, …). Unknown is [`Preemption::Later`]:
    /// the held chain is then set.
    pub fn of_model(model: Option<&str>) -> Preemption {
        match model {
            Some("rt") => Preemption::AtSectionEnd("PREEMPT_RT".into()),
            Some("full") => Preemption::AtSectionEnd("preempt=full".into()),
            _ => Preemption::Later,
        }
    }
}

/// What the late-only triggers are set for.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Setting {
    /// The lateness at which a stack is taken (ns).
    pub threshold_ns: u64,
    /// The timer functions the timer chains filter on.
    pub functions: TimerFunctions,
    /// Whether the measured threads sleep on `CLOCK_MONOTONIC`: the expiry their
    /// `hrtimer_start` shows is then on the trace's clock, and the switch chain is measured
    /// from it (no trigger on `sched_waking`).
    pub monotonic: bool,
    /// The kernel's preemption model: the held chain only where it does not preempt at a
    /// section's end.
    pub preemption: Preemption,
    /// How the stacks are taken: [`Mechanism::Triggers`] until eBPF programs are loaded
    /// (the `bpf_stacks` module), which then take them: no trigger is set here.
    pub mechanism: Mechanism,
}

impl Late {
    /// The synthetic events and triggers for the instance `dir`.
    pub fn new(dir: &Path, s: &Setting) -> Option<Late> {
        let p = prefix(dir)?;
        let mut late = Late {
            synthetic: Vec::new(),
            triggers: Vec::new(),
            held_skipped: match &s.preemption {
                Preemption::AtSectionEnd(m) if s.functions.tick_sched_timer.is_some() => {
                    Some(m.clone())
                }
                _ => None,
            },
            prefix: p,
            mechanism: s.mechanism.clone(),
        };
        if let Mechanism::Bpf(_) = s.mechanism {
            late.held_skipped = None;
            return Some(late);
        }
        match s.functions.hrtimer_wakeup {
            Some(a) if s.monotonic => late.switch_from_expiry(a, s.threshold_ns),
            _ => late.switch_from_waking(s.threshold_ns),
        }
        if let Some(a) = s.functions.hrtimer_wakeup {
            late.timer(a, s.threshold_ns);
        }
        if let (Some(a), None) = (s.functions.tick_sched_timer, &late.held_skipped) {
            late.held(a, s.threshold_ns);
        }
        Some(late)
    }

    fn add(&mut self, file: &str, trigger: String) {
        self.triggers.push((file.to_string(), trigger));
    }

    /// A synthetic event and its `stacktrace` trigger, taken at `filter`.
    fn stack_at(&mut self, chain: &str, fields: &str, filter: String) {
        let p = &self.prefix;
        self.synthetic.push(format!("{p}_{chain} {fields}"));
        let file = format!("events/synthetic/{p}_{chain}/trigger");
        self.add(&file, format!("stacktrace if {filter}"));
    }

    /// **switch**, from the thread's timer: `hrtimer_start` of a measured thread saves the
    /// expiry under its PID, the `sched_switch` into it computes how late it runs.
    fn switch_from_expiry(&mut self, a: u64, t: u64) {
        let p = self.prefix.clone();
        self.add(
            "events/timer/hrtimer_start/trigger",
            format!(
                "hist:keys=common_pid:{p}_dl=expires if function == {a:#x} && comm ~ {MEASURED}"
            ),
        );
        self.switch_from(
            "dl",
            "timer.hrtimer_start",
            format!("lat >= {t} && lat < {MAX_LATE_NS}"),
        );
    }

    /// **switch**, from the waking (another clock, or no `hrtimer_wakeup` symbol):
    /// `sched_waking` saves the time under the thread's PID, the `sched_switch` into it
    /// computes how long it waited.
    fn switch_from_waking(&mut self, t: u64) {
        let p = self.prefix.clone();
        self.add(
            "events/sched/sched_waking/trigger",
            format!("hist:keys=pid:{p}_ts=common_timestamp:clock=mono if comm ~ {MEASURED}"),
        );
        self.switch_from("ts", "sched.sched_waking", format!("lat >= {t}"));
    }

    /// The **switch** chain's reader: the `sched_switch` into a measured thread computes how
    /// late it runs from the variable `var` (saved under its PID by the `from` event), and its
    /// synthetic event takes a stack at `filter`.
    fn switch_from(&mut self, var: &str, from: &str, filter: String) {
        let p = self.prefix.clone();
        self.add(
            "events/sched/sched_switch/trigger",
            format!(
                "hist:keys=next_pid:{p}_wait=common_timestamp-${p}_{var}:\
                 onmatch({from}).trace({p}_switch,next_pid,${p}_wait):clock=mono \
                 if next_comm ~ {MEASURED}"
            ),
        );
        self.stack_at("switch", "pid_t pid; u64 lat", filter);
    }

    /// **timer**: `hrtimer_start` saves the expiry under the timer, `hrtimer_expire_entry`
    /// computes how late the interrupt came.
    fn timer(&mut self, a: u64, t: u64) {
        let p = self.prefix.clone();
        self.add(
            "events/timer/hrtimer_start/trigger",
            format!("hist:keys=hrtimer:{p}_exp=expires if function == {a:#x} && comm ~ {MEASURED}"),
        );
        self.add(
            "events/timer/hrtimer_expire_entry/trigger",
            format!(
                "hist:keys=hrtimer:{p}_late=now-${p}_exp:\
                 onmatch(timer.hrtimer_start).trace({p}_timer,${p}_late) \
                 if function == {a:#x}"
            ),
        );
        self.stack_at("timer", "s64 lat", format!("lat >= {t}"));
    }

    /// **held**: `sched_waking` saves the time under the CPU, the CPU's scheduler tick reads
    /// how long the thread has waited. The switch into the thread reads (and so clears) it
    /// too: a variable in an expression is read once, whether or not an action follows, so
    /// that trigger fires no event.
    fn held(&mut self, a: u64, t: u64) {
        let p = self.prefix.clone();
        self.add(
            "events/sched/sched_waking/trigger",
            format!(
                "hist:keys=target_cpu:{p}_woke=common_timestamp:clock=mono if comm ~ {MEASURED}"
            ),
        );
        self.add(
            "events/sched/sched_switch/trigger",
            format!(
                "hist:keys=common_cpu:{p}_rv=common_timestamp-${p}_woke:clock=mono \
                 if next_comm ~ {MEASURED}"
            ),
        );
        self.add(
            "events/timer/hrtimer_expire_entry/trigger",
            format!(
                "hist:keys=common_cpu:{p}_hv=common_timestamp-${p}_woke:\
                 onmatch(sched.sched_waking).trace({p}_held,${p}_hv):clock=mono \
                 if function == {a:#x}"
            ),
        );
        self.stack_at("held", "u64 lat", format!("lat >= {t}"));
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

    /// The chains set up with hist triggers (`switch`, `timer`, `held`), for the tier line.
    pub fn chains(&self) -> Vec<&str> {
        self.synthetic
            .iter()
            .filter_map(|l| l.split_whitespace().next())
            .filter_map(|n| n.strip_prefix(&self.prefix)?.strip_prefix('_'))
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

/// The tier line's words: the chains set, and why the held chain is not
/// (`switch, timer (no held: PREEMPT_RT preempts at a section's end)`); with eBPF programs,
/// theirs ([`BpfChains`]).
impl std::fmt::Display for Late {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.mechanism {
            Mechanism::Bpf(chains) => write!(f, "{chains}")?,
            Mechanism::Triggers => f.write_str(&self.chains().join(", "))?,
        }
        match &self.held_skipped {
            Some(model) => write!(f, " (no held: {model} preempts at a section's end)"),
            None => Ok(()),
        }
    }
}

/// Why this kernel cannot take late-only stacks by hist triggers (`None`: it can).
pub fn unsupported(tfs: &Tracefs) -> Option<Unsupported> {
    if !tfs.root.join("synthetic_events").exists() {
        return Some(Unsupported::NoSyntheticEvents);
    }
    if !tfs.root.join("events/sched/sched_waking/hist").exists() {
        return Some(Unsupported::NoHistTriggers);
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

    fn setting(f: TimerFunctions, monotonic: bool, preemption: Preemption) -> Setting {
        Setting {
            threshold_ns: 20_000,
            functions: f,
            monotonic,
            preemption,
            mechanism: Mechanism::Triggers,
        }
    }

    const BOTH: TimerFunctions = TimerFunctions {
        hrtimer_wakeup: Some(0xffff_ffff_8110_0000),
        tick_sched_timer: Some(0xffff_ffff_8120_0000),
    };

    /// The triggers on one event file (`sched/sched_waking` …).
    fn on<'a>(l: &'a Late, event: &str) -> Vec<&'a str> {
        let file = format!("events/{event}/trigger");
        l.triggers
            .iter()
            .filter(|(f, _)| *f == file)
            .map(|(_, t)| t.as_str())
            .collect()
    }

    #[test]
    fn the_switch_chain_alone_is_set_without_timer_symbols() {
        let mut s = setting(TimerFunctions::default(), true, Preemption::Later);
        s.threshold_ns = 1_500_000;
        let l = Late::new(&dir(), &s).unwrap();
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
        assert_eq!(l.to_string(), "switch");
    }

    #[test]
    fn a_kernel_that_does_not_preempt_at_a_sections_end_gets_all_three_chains() {
        let l = Late::new(&dir(), &setting(BOTH, true, Preemption::Later)).unwrap();
        assert_eq!(l.chains(), ["switch", "timer", "held"]);
        assert_eq!(l.to_string(), "switch, timer, held");
        assert_eq!(
            l.deletions(),
            [
                "!rtscope_4711_2_switch",
                "!rtscope_4711_2_timer",
                "!rtscope_4711_2_held"
            ]
        );
        // The switch chain reads the thread's own timer's expiry: no trigger of its own on
        // the waking; the waking saves only the held chain's time.
        assert_eq!(
            on(&l, "timer/hrtimer_start"),
            [
                "hist:keys=common_pid:rtscope_4711_2_dl=expires if function == \
                 0xffffffff81100000 && comm ~ \"rtscope-m*\"",
                "hist:keys=hrtimer:rtscope_4711_2_exp=expires if function == 0xffffffff81100000 \
                 && comm ~ \"rtscope-m*\""
            ]
        );
        assert_eq!(
            on(&l, "sched/sched_waking"),
            [
                "hist:keys=target_cpu:rtscope_4711_2_woke=common_timestamp:clock=mono \
              if comm ~ \"rtscope-m*\""
            ]
        );
        // At the switch into the thread: the switch chain fires its event; the held
        // chain's variable is read (and so cleared) by a trigger that fires none.
        assert_eq!(
            on(&l, "sched/sched_switch"),
            [
                "hist:keys=next_pid:rtscope_4711_2_wait=common_timestamp-$rtscope_4711_2_dl:\
                 onmatch(timer.hrtimer_start).trace(rtscope_4711_2_switch,next_pid,\
                 $rtscope_4711_2_wait):clock=mono if next_comm ~ \"rtscope-m*\"",
                "hist:keys=common_cpu:rtscope_4711_2_rv=common_timestamp-$rtscope_4711_2_woke:\
                 clock=mono if next_comm ~ \"rtscope-m*\""
            ]
        );
        assert_eq!(
            on(&l, "timer/hrtimer_expire_entry"),
            [
                "hist:keys=hrtimer:rtscope_4711_2_late=now-$rtscope_4711_2_exp:\
                 onmatch(timer.hrtimer_start).trace(rtscope_4711_2_timer,$rtscope_4711_2_late) \
                 if function == 0xffffffff81100000",
                "hist:keys=common_cpu:rtscope_4711_2_hv=common_timestamp-$rtscope_4711_2_woke:\
                 onmatch(sched.sched_waking).trace(rtscope_4711_2_held,$rtscope_4711_2_hv):\
                 clock=mono if function == 0xffffffff81200000"
            ]
        );
        assert_eq!(
            on(&l, "synthetic/rtscope_4711_2_switch"),
            ["stacktrace if lat >= 20000 && lat < 1000000000000"]
        );
        for chain in ["timer", "held"] {
            assert_eq!(
                on(&l, &format!("synthetic/rtscope_4711_2_{chain}")),
                ["stacktrace if lat >= 20000"]
            );
        }
        // Taken back readers first: every trigger reading a variable before its setter.
        let undo = l.undo(&dir());
        let pos = |what: &str| undo.iter().position(|(_, t)| t.contains(what)).unwrap();
        assert!(pos("_wait=") < pos("_dl=expires"));
        assert!(pos("_late=") < pos("_exp=expires"));
        assert!(pos("_rv=") < pos("_woke=common") && pos("_hv=") < pos("_woke=common"));
    }

    #[test]
    fn a_kernel_that_preempts_at_a_sections_end_gets_no_held_chain_and_says_why() {
        for model in ["PREEMPT_RT", "preempt=full"] {
            let p = Preemption::AtSectionEnd(model.into());
            let l = Late::new(&dir(), &setting(BOTH, true, p)).unwrap();
            assert_eq!(l.chains(), ["switch", "timer"]);
            assert_eq!(
                l.to_string(),
                format!("switch, timer (no held: {model} preempts at a section's end)")
            );
            // Nothing on the waking; one trigger each on the switch and the timer interrupt.
            assert!(on(&l, "sched/sched_waking").is_empty());
            assert_eq!(on(&l, "sched/sched_switch").len(), 1);
            assert_eq!(on(&l, "timer/hrtimer_expire_entry").len(), 1);
            assert!(!l.triggers.iter().any(|(_, t)| t.contains("woke")));
        }
        // Without the tick's symbol there is no held chain to leave out.
        let f = TimerFunctions {
            tick_sched_timer: None,
            ..BOTH
        };
        let p = Preemption::AtSectionEnd("PREEMPT_RT".into());
        let l = Late::new(&dir(), &setting(f, true, p)).unwrap();
        assert_eq!(l.to_string(), "switch, timer");
    }

    #[test]
    fn with_the_chains_in_ebpf_no_trigger_or_synthetic_event_is_set() {
        let mut s = setting(BOTH, true, Preemption::AtSectionEnd("PREEMPT_RT".into()));
        s.mechanism = Mechanism::Bpf(BpfChains {
            chains: vec!["switch", "timer"],
            on: "raw tracepoints",
            not_raw: None,
        });
        let l = Late::new(&dir(), &s).unwrap();
        assert!(l.synthetic.is_empty() && l.deletions().is_empty() && l.triggers.is_empty());
        assert_eq!(l.to_string(), "switch, timer (eBPF on raw tracepoints)");
    }

    #[test]
    fn the_ebpf_tier_text_names_the_chains_where_they_hang_and_why_not_raw() {
        let mut b = BpfChains {
            chains: vec!["switch", "timer", "held"],
            on: "raw tracepoints",
            not_raw: None,
        };
        assert_eq!(
            b.to_string(),
            "switch, timer, held (eBPF on raw tracepoints)"
        );
        b.on = "trace events";
        b.not_raw = Some("BTF: no struct hrtimer".into());
        assert_eq!(
            b.to_string(),
            "switch, timer, held (eBPF on trace events; not raw tracepoints: BTF: no struct \
             hrtimer)"
        );
        b.on = "raw tracepoints";
        b.not_raw = Some("rtscope_switch refused: invalid argument".into());
        assert_eq!(
            b.to_string(),
            "switch, timer, held (eBPF on raw tracepoints; not BTF-typed: rtscope_switch \
             refused: invalid argument)"
        );
        // A setting is built for the triggers until the programs are loaded.
        assert_eq!(Setting::default().mechanism, Mechanism::Triggers);
    }

    #[test]
    fn why_the_hist_triggers_cannot_be_set_reads_as_before() {
        let cases: [(LateError, &str); 5] = [
            (
                Unsupported::NoSyntheticEvents.into(),
                "no synthetic events (a kernel without CONFIG_SYNTH_EVENTS/CONFIG_HIST_TRIGGERS)",
            ),
            (
                Unsupported::NoHistTriggers.into(),
                "no hist triggers (a kernel without CONFIG_HIST_TRIGGERS)",
            ),
            (
                LateError::NoKernelStack,
                "the kernel has no ftrace/kernel_stack event (CONFIG_STACKTRACE)",
            ),
            (
                LateError::NoEventName,
                "the instance's name makes no synthetic event name",
            ),
            (
                LateError::Refused(TraceError::Io {
                    path: "/t/synthetic_events".into(),
                    source: std::io::Error::from_raw_os_error(libc::EINVAL),
                }),
                "a hist trigger was refused (/t/synthetic_events: Invalid argument (os error 22))",
            ),
        ];
        for (e, text) in cases {
            assert_eq!(e.to_string(), text);
        }
    }

    #[test]
    fn threads_on_another_clock_are_measured_from_their_waking() {
        let l = Late::new(&dir(), &setting(BOTH, false, Preemption::Later)).unwrap();
        assert_eq!(l.chains(), ["switch", "timer", "held"]);
        assert_eq!(on(&l, "sched/sched_waking").len(), 2);
        assert!(on(&l, "sched/sched_switch")[0].contains("onmatch(sched.sched_waking)"));
        assert_eq!(on(&l, "timer/hrtimer_start").len(), 1);
        assert_eq!(
            on(&l, "synthetic/rtscope_4711_2_switch"),
            ["stacktrace if lat >= 20000"]
        );
    }

    #[test]
    fn the_preemption_model_of_rtscope_check_says_whether_the_held_chain_is_needed() {
        assert_eq!(
            Preemption::of_model(Some("rt")),
            Preemption::AtSectionEnd("PREEMPT_RT".into())
        );
        assert_eq!(
            Preemption::of_model(Some("full")),
            Preemption::AtSectionEnd("preempt=full".into())
        );
        for other in [
            Some("voluntary"),
            Some("none"),
            Some("none or voluntary"),
            None,
        ] {
            assert_eq!(Preemption::of_model(other), Preemption::Later, "{other:?}");
        }
    }

    #[test]
    fn a_tracefs_without_synthetic_events_or_hist_files_says_which_is_missing() {
        let base = std::env::temp_dir().join(format!("rtscope-late-{}", std::process::id()));
        let tfs = Tracefs { root: base.clone() };
        std::fs::create_dir_all(base.join("events/sched/sched_waking")).unwrap();
        assert_eq!(unsupported(&tfs), Some(Unsupported::NoSyntheticEvents));
        std::fs::write(base.join("synthetic_events"), "").unwrap();
        assert_eq!(unsupported(&tfs), Some(Unsupported::NoHistTriggers));
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
