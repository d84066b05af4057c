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

    /// Whether a trace recorder ran (a tracefs instance), whose cost the run's figures include.
    pub fn traced(&self) -> bool {
        self.recorder.starts_with("tracefs")
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
    /// `, stacks: …` where stacks were taken); `None` where no trace recorder ran.
    pub fn cost(&self) -> Option<String> {
        if !self.traced() {
            return None;
        }
        let mut s = format!("tracefs, {} events", self.events.len());
        if self.stacks_taken() {
            s.push_str(&format!(", stacks: {}", self.stacks));
        }
        Some(s)
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
}
