//! What an explained run observes with (issue 68 item 4): the recorder (a tracefs instance,
//! with the timerlat tracer or not, or none), the trace events it enabled, and the kernel
//! stacks it takes — read from the instance as the kernel set it up, in the words the tier
//! line prints and the run's record keeps.

use super::late::Mechanism;
use super::Stacks;
use std::path::Path;

/// The recorder of a run, its trace events and its kernel stacks, in plain words (the type
/// the store keeps and `runs show` and the report read).
pub use rtscope_core::recorder::Recorder as Observed;

/// The recorder of the instance `dir` (whose events are read back from it), taking `stacks`;
/// `timerlat` where the instance runs the timerlat tracer.
pub fn of_instance(dir: &Path, timerlat: bool, stacks: &Stacks) -> Observed {
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tracer = if timerlat { " (timerlat tracer)" } else { "" };
    Observed {
        recorder: format!("tracefs instance {name}{tracer}"),
        events: enabled_events(dir),
        stacks: stacks_words(stacks),
    }
}

/// How many raw tracepoints the eBPF flight recorder follows, and how many of those by
/// BTF-typed (`tp_btf`) programs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Followed {
    /// The tracepoints followed.
    pub tracepoints: usize,
    /// Of them, those whose program is a `tp_btf` one.
    pub typed: usize,
}

/// The eBPF flight recorder's words (`--explain-recorder ebpf`): its rings on the raw
/// tracepoints `followed` (`23 tracepoints, 23 BTF-typed`), of `records` per CPU, beside the
/// instance `dir` (for the stacks and the handlers' formats), whose trace events are read back
/// from it (none enabled).
pub fn of_rings(dir: &Path, followed: Followed, records: u32, stacks: &Stacks) -> Observed {
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let Followed { tracepoints, typed } = followed;
    Observed {
        recorder: format!(
            "{RINGS} ({tracepoints} tracepoints, {typed} BTF-typed, {records} records per CPU; \
             tracefs instance {name} without its events)"
        ),
        events: enabled_events(dir),
        stacks: stacks_words(stacks),
    }
}

/// How the eBPF flight recorder's words begin (`rtscope_core::recorder::RecorderKind` reads
/// them back).
pub use rtscope_core::recorder::RINGS;

/// The kernel stacks an instance takes, in words: `none`; `late-only eBPF programs: …` or
/// `late-only hist triggers: …` (the chains, as the tier line names them); `stacktrace
/// triggers on every wake-up`; `none (unavailable)` where they were asked for and the kernel
/// cannot (the tier line's stacks note says why).
pub fn stacks_words(stacks: &Stacks) -> String {
    match stacks {
        Stacks::Off => "none".into(),
        Stacks::On | Stacks::EveryNotLate(_) => "stacktrace triggers on every wake-up".into(),
        // The eBPF chains' words say where the programs hang (`late::BpfChains`' Display).
        Stacks::Late {
            chains,
            mechanism: Mechanism::Bpf(_),
        } => format!("late-only eBPF programs: {chains}"),
        Stacks::Late {
            chains,
            mechanism: Mechanism::Triggers,
        } => format!("late-only hist triggers: {chains}"),
        Stacks::Unavailable(_) => "none (unavailable)".into(),
    }
}

/// The events enabled in the instance `dir`: its `set_event` file (`system:event` a line),
/// else (a tree that has none, as in the tests) each `events/SYSTEM/EVENT/enable` that
/// reads `1`, sorted.
pub fn enabled_events(dir: &Path) -> Vec<String> {
    if let Ok(text) = super::read_bounded(&dir.join("set_event")) {
        return text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(String::from)
            .collect();
    }
    let mut found = Vec::new();
    let Ok(systems) = std::fs::read_dir(dir.join("events")) else {
        return found;
    };
    for system in systems.flatten().filter(|e| e.path().is_dir()) {
        let Ok(events) = std::fs::read_dir(system.path()) else {
            continue;
        };
        for event in events.flatten() {
            let on =
                std::fs::read_to_string(event.path().join("enable")).is_ok_and(|s| s.trim() == "1");
            if on {
                found.push(format!(
                    "{}:{}",
                    system.file_name().to_string_lossy(),
                    event.file_name().to_string_lossy()
                ));
            }
        }
    }
    found.sort();
    found
}

/// Whether the instance `dir` has a stacktrace trigger on any of its events (the triggers at
/// every wake-up, [`super::STACK_TRIGGER`], [`super::WAKE_STACK_TRIGGER`]) or a hist
/// trigger: what a run that asks for no stacks must not set.
pub fn stack_triggers(dir: &Path) -> Vec<String> {
    let mut set = Vec::new();
    for (system, event) in [
        ("sched", "sched_switch"),
        ("sched", "sched_waking"),
        ("timer", "hrtimer_start"),
        ("timer", "hrtimer_expire_entry"),
        ("irq_vectors", "local_timer_entry"),
    ] {
        let file = dir.join("events").join(system).join(event).join("trigger");
        let Ok(text) = super::read_bounded(&file) else {
            continue;
        };
        set.extend(
            text.lines()
                .map(str::trim)
                .filter(|l| !l.is_empty() && !l.starts_with('#'))
                .map(|l| format!("{system}:{event}: {l}")),
        );
    }
    set
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_stack_mechanism_is_named_in_words() {
        assert_eq!(stacks_words(&Stacks::Off), "none");
        assert_eq!(
            stacks_words(&Stacks::On),
            "stacktrace triggers on every wake-up"
        );
        assert_eq!(
            stacks_words(&Stacks::EveryNotLate("no hist".into())),
            "stacktrace triggers on every wake-up"
        );
        assert_eq!(
            stacks_words(&Stacks::Late {
                chains: "switch, timer (eBPF on raw tracepoints)".into(),
                mechanism: Mechanism::Bpf(crate::tracefs::late::BpfChains {
                    chains: vec!["switch", "timer"],
                    on: "raw tracepoints",
                    not_raw: None,
                }),
            }),
            "late-only eBPF programs: switch, timer (eBPF on raw tracepoints)"
        );
        assert_eq!(
            stacks_words(&Stacks::Late {
                chains: "switch, timer".into(),
                mechanism: Mechanism::Triggers,
            }),
            "late-only hist triggers: switch, timer"
        );
        assert_eq!(
            stacks_words(&Stacks::Unavailable("x".into())),
            "none (unavailable)"
        );
    }

    #[test]
    fn the_instance_says_its_name_events_and_groups() {
        let dir = std::env::temp_dir().join(format!("observed-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for (s, e, on) in [
            ("sched", "sched_switch", "1"),
            ("sched", "sched_waking", "1"),
            ("irq", "softirq_entry", "1"),
            ("irq", "tasklet_entry", "0"),
        ] {
            let d = dir.join("events").join(s).join(e);
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("enable"), on).unwrap();
        }
        let o = of_instance(&dir, false, &Stacks::Off);
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        assert_eq!(o.recorder, format!("tracefs instance {name}"));
        assert_eq!(
            o.events,
            [
                "irq:softirq_entry",
                "sched:sched_switch",
                "sched:sched_waking"
            ]
        );
        assert_eq!(
            o.describe(),
            format!("recorder: tracefs instance {name}, 3 trace events (irq, sched), stacks: none")
        );
        std::fs::write(dir.join("set_event"), "sched:sched_switch\n").unwrap();
        let t = of_instance(&dir, true, &Stacks::On);
        assert_eq!(t.events, ["sched:sched_switch"]);
        assert!(t.recorder.ends_with(" (timerlat tracer)"), "{}", t.recorder);
        assert!(t
            .describe()
            .contains("1 trace event (sched), stacks: stacktrace triggers on every wake-up"));
        assert!(stack_triggers(&dir).is_empty());
        std::fs::write(
            dir.join("events/sched/sched_switch/trigger"),
            "# Available triggers:\nstacktrace if next_comm ~ \"rtscope-*\"\n",
        )
        .unwrap();
        assert_eq!(stack_triggers(&dir).len(), 1);
        assert_eq!(Observed::none().describe(), "recorder: none, stacks: none");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
