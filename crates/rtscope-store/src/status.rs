//! The states of runs and campaigns and the kinds of runs, as types. They are stored as their
//! lower-case names; a name this version does not know reads back as [`RunStatus::Unknown`]
//! rather than failing (a newer rtscope may write more).

use std::fmt;

/// Where a run or a campaign is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RunStatus {
    /// Being measured by a live process.
    Running,
    /// Finished its whole length.
    Complete,
    /// Ended early by a signal; its results cover the part that ran.
    Interrupted,
    /// Could not go on (a campaign without RT privilege, a load that could not start).
    Failed,
    /// Its writer died (SIGKILL, power cut): everything up to the last checkpoint is kept.
    Incomplete,
    /// A status this version does not know.
    Unknown,
}

impl RunStatus {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Complete => "complete",
            RunStatus::Interrupted => "interrupted",
            RunStatus::Failed => "failed",
            RunStatus::Incomplete => "incomplete",
            RunStatus::Unknown => "unknown",
        }
    }

    /// The status a stored name means.
    pub fn parse(name: &str) -> RunStatus {
        [
            RunStatus::Running,
            RunStatus::Complete,
            RunStatus::Interrupted,
            RunStatus::Failed,
            RunStatus::Incomplete,
        ]
        .into_iter()
        .find(|s| s.as_str() == name)
        .unwrap_or(RunStatus::Unknown)
    }
}

impl fmt::Display for RunStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl serde::Serialize for RunStatus {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// What recorded a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RunKind {
    /// `rtscope measure` or a campaign run.
    Measure,
    /// `rtscope cyclictest` (or the `cyclictest` symlink).
    Cyclictest,
    /// `rtscope import`.
    Import,
    /// `rtscope respond` (event response latency; one "thread" per reported row).
    Respond,
    /// `rtscope noise` (OS noise: one "thread" per measured CPU, samples are loop gaps).
    Noise,
    /// A kind this version does not know.
    Unknown,
}

impl RunKind {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            RunKind::Measure => "measure",
            RunKind::Cyclictest => "cyclictest",
            RunKind::Import => "import",
            RunKind::Respond => "respond",
            RunKind::Noise => "noise",
            RunKind::Unknown => "unknown",
        }
    }

    /// The kind a stored name means.
    pub fn parse(name: &str) -> RunKind {
        [
            RunKind::Measure,
            RunKind::Cyclictest,
            RunKind::Import,
            RunKind::Respond,
            RunKind::Noise,
        ]
        .into_iter()
        .find(|k| k.as_str() == name)
        .unwrap_or(RunKind::Unknown)
    }
}

impl fmt::Display for RunKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl serde::Serialize for RunKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_names_are_kept_apart() {
        for s in ["running", "complete", "interrupted", "failed", "incomplete"] {
            assert_eq!(RunStatus::parse(s).as_str(), s);
        }
        assert_eq!(RunStatus::parse("paused"), RunStatus::Unknown);
        assert_eq!(RunKind::parse("cyclictest"), RunKind::Cyclictest);
        assert_eq!(RunKind::parse("respond"), RunKind::Respond);
        assert_eq!(RunKind::parse("noise"), RunKind::Noise);
        assert_eq!(RunKind::parse("x"), RunKind::Unknown);
    }
}
