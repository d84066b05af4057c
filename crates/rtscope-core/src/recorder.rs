//! What an explained run observes with (issue 68 item 4): its recorder, the trace events the
//! recorder enabled and the kernel stacks it took, in the words the tier line prints, the
//! run's record keeps (`rtscope-store`) and `runs show` and the report repeat. One type for
//! all of them: `rtscope-trace` fills it from the instance as the kernel set it up.

/// The recorder of a run, its trace events and its kernel stacks, in plain words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recorder {
    /// `tracefs instance rtscope-<pid>-<n>` (with ` (timerlat tracer)` in the timerlat tier),
    /// or `none` (the coarse tier: monitor samples only).
    pub recorder: String,
    /// The trace events enabled, `system:event` (empty without a recorder).
    pub events: Vec<String>,
    /// The kernel stacks taken: `none`, `late-only eBPF programs: …`, `late-only hist
    /// triggers: …`, `stacktrace triggers on every wake-up`, `none (unavailable)`.
    pub stacks: String,
}

impl Recorder {
    /// No recorder: the coarse tier reads the monitors' samples only.
    pub fn none() -> Recorder {
        Recorder {
            recorder: "none".into(),
            events: Vec::new(),
            stacks: "none".into(),
        }
    }

    /// Which recorder ran, read once from its words.
    pub fn kind(&self) -> RecorderKind {
        RecorderKind::of(&self.recorder)
    }

    /// Whether a trace recorder ran (a tracefs instance or the eBPF rings), whose cost the
    /// run's figures include.
    pub fn traced(&self) -> bool {
        matches!(
            self.kind(),
            RecorderKind::Tracefs | RecorderKind::Bpf { .. }
        )
    }

    /// Whether kernel stacks were taken.
    pub fn stacks_taken(&self) -> bool {
        !self.stacks.starts_with("none")
    }

    /// The event groups (tracefs systems) in the order first listed: `sched, irq, …`.
    pub fn groups(&self) -> Vec<&str> {
        let mut groups: Vec<&str> = Vec::new();
        for e in &self.events {
            let g = e.split(':').next().unwrap_or(e);
            if !groups.contains(&g) {
                groups.push(g);
            }
        }
        groups
    }

    /// `25 trace events (sched, irq, …)`, or `no trace events`.
    pub fn events_words(&self) -> String {
        match self.events.len() {
            0 => "no trace events".into(),
            1 => format!("1 trace event ({})", self.groups().join(", ")),
            n => format!("{n} trace events ({})", self.groups().join(", ")),
        }
    }

    /// The tier line's clause: `recorder: tracefs instance rtscope-4711-0, 25 trace events
    /// (sched, irq, …), stacks: none`; without a recorder `recorder: none, stacks: none`.
    pub fn describe(&self) -> String {
        if self.recorder == "none" {
            return format!("recorder: none, stacks: {}", self.stacks);
        }
        format!(
            "recorder: {}, {}, stacks: {}",
            self.recorder,
            self.events_words(),
            self.stacks
        )
    }

    /// What a report says of figures measured with the recorder on: `tracefs, 25 events` (with
    /// `, stacks: …` where stacks were taken); for the eBPF rings `eBPF rings on raw
    /// tracepoints, 23 tracepoints, its cost not yet measured (issue 68 item 3)`; `None` where
    /// no trace recorder ran.
    pub fn cost(&self) -> Option<String> {
        let mut s = match self.kind() {
            RecorderKind::Tracefs => format!("tracefs, {} events", self.events.len()),
            RecorderKind::Bpf { tracepoints } => {
                let n = tracepoints.map_or(String::new(), |n| format!(", {n} tracepoints"));
                format!("{RINGS}{n}, its cost not yet measured (issue 68 item 3)")
            }
            RecorderKind::None | RecorderKind::Other => return None,
        };
        if self.stacks_taken() {
            s.push_str(&format!(", stacks: {}", self.stacks));
        }
        Some(s)
    }
}

/// How the eBPF flight recorder's words begin (`rtscope-trace`'s `of_rings` writes them).
pub const RINGS: &str = "eBPF rings on raw tracepoints";

/// Which recorder a run's words name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecorderKind {
    /// No recorder (`none`: the coarse tier).
    None,
    /// A tracefs instance's trace events (with the timerlat tracer or not).
    Tracefs,
    /// The eBPF rings on raw tracepoints (`--explain-recorder ebpf|auto`), on this many
    /// tracepoints where the words say.
    Bpf {
        /// The raw tracepoints the rings follow.
        tracepoints: Option<usize>,
    },
    /// Words no rtscope wrote (a newer recorder read by an older rtscope).
    Other,
}

impl RecorderKind {
    /// The recorder the words `recorder` name: `none`, `tracefs instance …`, `eBPF rings on
    /// raw tracepoints (23 tracepoints, …)`.
    pub fn of(recorder: &str) -> RecorderKind {
        if recorder == "none" {
            RecorderKind::None
        } else if recorder.starts_with("tracefs") {
            RecorderKind::Tracefs
        } else if let Some(rest) = recorder.strip_prefix(RINGS) {
            let tracepoints = rest
                .trim_start()
                .strip_prefix('(')
                .and_then(|r| r.split_once(" tracepoints"))
                .and_then(|(n, _)| n.trim().parse().ok());
            RecorderKind::Bpf { tracepoints }
        } else {
            RecorderKind::Other
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recorder_is_told_in_words_and_none_is_none() {
        let r = Recorder {
            recorder: "tracefs instance rtscope-1-0".into(),
            events: vec![
                "sched:sched_switch".into(),
                "irq:irq_handler_entry".into(),
                "sched:sched_waking".into(),
            ],
            stacks: "none".into(),
        };
        assert_eq!(r.events_words(), "3 trace events (sched, irq)");
        assert_eq!(
            r.describe(),
            "recorder: tracefs instance rtscope-1-0, 3 trace events (sched, irq), stacks: none"
        );
        assert_eq!(r.cost().as_deref(), Some("tracefs, 3 events"));
        assert!(r.traced() && !r.stacks_taken());
        let n = Recorder::none();
        assert_eq!(
            (n.cost(), n.events_words()),
            (None, "no trace events".into())
        );
        assert_eq!(n.describe(), "recorder: none, stacks: none");
    }

    #[test]
    fn the_ebpf_recorders_words_read_as_a_traced_run_whose_cost_is_not_yet_measured() {
        // The words rtscope-trace's `of_rings` stores for an eBPF run.
        let r = Recorder {
            recorder: "eBPF rings on raw tracepoints (23 tracepoints, 65536 records per CPU; \
                       tracefs instance rtscope-4711-0 without its events)"
                .into(),
            events: Vec::new(),
            stacks: "none".into(),
        };
        assert_eq!(
            r.kind(),
            RecorderKind::Bpf {
                tracepoints: Some(23)
            }
        );
        assert!(r.traced());
        let cost = r.cost().unwrap();
        assert_eq!(
            cost,
            "eBPF rings on raw tracepoints, 23 tracepoints, its cost not yet measured \
             (issue 68 item 3)"
        );
        assert!(!cost.contains("tracefs"), "{cost}");
        let stacked = Recorder {
            stacks: "late-only eBPF programs: x".into(),
            ..r.clone()
        };
        assert!(stacked
            .cost()
            .unwrap()
            .ends_with(", stacks: late-only eBPF programs: x"));
        let odd = Recorder {
            recorder: "eBPF rings on raw tracepoints".into(),
            ..r
        };
        assert_eq!(odd.kind(), RecorderKind::Bpf { tracepoints: None });
        assert_eq!(RecorderKind::of("none"), RecorderKind::None);
        assert_eq!(
            RecorderKind::of("tracefs instance x (timerlat tracer)"),
            RecorderKind::Tracefs
        );
        assert_eq!(RecorderKind::of("perf"), RecorderKind::Other);
        let other = Recorder {
            recorder: "perf".into(),
            ..Recorder::none()
        };
        assert!(!other.traced() && other.cost().is_none());
    }
}
