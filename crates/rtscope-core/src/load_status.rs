//! How a load ended: one enum for the loads that report it, the store that keeps it and the
//! report that warns about it; its string form (`ok`, `finished`, `failed`, `killed`) only at
//! the edges (the database, JSON, tables).

use std::fmt;

/// How a load ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LoadStatus {
    /// Ran until it was stopped at the end of the run, and stopped on SIGTERM.
    Ok,
    /// An external program that ended by itself, successfully, before the run did.
    Finished,
    /// Exited early or non-zero, or could not start.
    Failed,
    /// Had to be SIGKILLed after the grace period.
    Killed,
}

impl LoadStatus {
    /// Every status, in the order of [`LoadStatus::as_str`]'s documentation.
    pub const ALL: [LoadStatus; 4] = [
        LoadStatus::Ok,
        LoadStatus::Finished,
        LoadStatus::Failed,
        LoadStatus::Killed,
    ];

    /// The name shown and stored: `ok`, `finished`, `failed`, `killed`.
    pub fn as_str(self) -> &'static str {
        match self {
            LoadStatus::Ok => "ok",
            LoadStatus::Finished => "finished",
            LoadStatus::Failed => "failed",
            LoadStatus::Killed => "killed",
        }
    }

    /// The status named `s` (as [`LoadStatus::as_str`] writes it).
    pub fn parse(s: &str) -> Option<LoadStatus> {
        LoadStatus::ALL.into_iter().find(|l| l.as_str() == s)
    }
}

impl fmt::Display for LoadStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_status_reads_back_from_its_name_and_nothing_else_does() {
        for s in LoadStatus::ALL {
            assert_eq!(LoadStatus::parse(s.as_str()), Some(s));
            assert_eq!(s.to_string(), s.as_str());
        }
        assert_eq!(LoadStatus::parse("OK"), None);
        assert_eq!(LoadStatus::parse(""), None);
    }
}
