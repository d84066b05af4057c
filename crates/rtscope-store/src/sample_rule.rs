//! How a run's samples were counted. Runs recorded since the rule "samples are wake-ups" carry
//! the environment key [`SAMPLE_RULE_KEY`]; older measured runs lack it and used the old rule.

use std::fmt;

/// The environment key a run records its sample rule under.
pub const SAMPLE_RULE_KEY: &str = "rtscope.sample_rule";

/// How the samples of a run were counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SampleRule {
    /// One sample per wake-up; deadlines passed without a wake-up are counted as missed, not
    /// sampled (rtscope since the key exists, cyclictest and every imported tool).
    WakeUp,
    /// The old rtscope rule: a wake-up late by `L ≥ I` was recorded as `floor(L/I) + 1`
    /// samples (`L`, `L − I`, …), so a stall weighs `floor(L/I) + 1` times in percentiles and
    /// the mean, and the minimum can be a fraction of a µs.
    Deadline,
}

impl SampleRule {
    /// The value written under [`SAMPLE_RULE_KEY`].
    pub fn as_str(self) -> &'static str {
        match self {
            SampleRule::WakeUp => "wake-up",
            SampleRule::Deadline => "deadline",
        }
    }

    /// The rule of a run from its kind and environment: the recorded key when present; a
    /// measured run without it (written before the key existed) used [`SampleRule::Deadline`];
    /// an imported one carries its source tool's wake-ups, and a respond run's samples are the
    /// events it received (it has no deadlines: its losses are lost events).
    pub fn of(kind: crate::RunKind, environment: &[(String, String)]) -> SampleRule {
        use crate::RunKind::{Import, Noise, Respond};
        match environment.iter().find(|(k, _)| k == SAMPLE_RULE_KEY) {
            Some((_, v)) if v == SampleRule::Deadline.as_str() => SampleRule::Deadline,
            Some(_) => SampleRule::WakeUp,
            None if matches!(kind, Import | Respond | Noise) => SampleRule::WakeUp,
            None => SampleRule::Deadline,
        }
    }

    /// One line for people, saying what a sample is in this run.
    pub fn describe(self) -> &'static str {
        match self {
            SampleRule::WakeUp => "one sample per wake-up; missed deadlines counted separately",
            SampleRule::Deadline => {
                "OLD RULE (recorded before rtscope counted samples as wake-ups): every missed \
                 deadline was also recorded as a synthetic sample, so the sample count, mean, \
                 minimum and percentiles include samples no wake-up produced"
            }
        }
    }
}

impl fmt::Display for SampleRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RunKind;

    #[test]
    fn old_measured_runs_used_the_deadline_rule_and_imports_never_did() {
        let env = |v: &str| vec![(SAMPLE_RULE_KEY.to_string(), v.to_string())];
        assert_eq!(SampleRule::of(RunKind::Measure, &[]), SampleRule::Deadline);
        assert_eq!(
            SampleRule::of(RunKind::Cyclictest, &[]),
            SampleRule::Deadline
        );
        assert_eq!(SampleRule::of(RunKind::Import, &[]), SampleRule::WakeUp);
        // A respond run was reported as "recorded with the old sample rule" (issue 25).
        assert_eq!(SampleRule::of(RunKind::Respond, &[]), SampleRule::WakeUp);
        assert_eq!(
            SampleRule::of(RunKind::Measure, &env("wake-up")),
            SampleRule::WakeUp
        );
        assert_eq!(
            SampleRule::of(RunKind::Import, &env("deadline")),
            SampleRule::Deadline
        );
    }
}
