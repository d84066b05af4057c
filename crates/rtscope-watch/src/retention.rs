//! What a watch keeps: measured windows for `windows`, then merged into hours; hours for
//! `hours`, then merged into days; nothing older than `max_age`; and never more than
//! `budget` bytes of database (the oldest windows go first). Applied after every window, with
//! the window's time as "now", so tests run a simulated month through the real store.

use crate::error::ConfigError;
use rtscope_core::Nanos;
use rtscope_store::watch::{Housekept, Level, SeriesId};
use rtscope_store::Store;

/// The retention of a watch database.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    /// How long measured windows are kept before they are merged into hours.
    pub windows: Nanos,
    /// How long hours are kept before they are merged into days.
    pub hours: Nanos,
    /// Nothing older than this is kept.
    pub max_age: Nanos,
    /// The database file uses at most this many bytes (its free pages are reused).
    pub budget: u64,
}

const DAY: u64 = 86_400;

impl Default for Retention {
    /// Windows 2 days, hours 90 days, days 5 years, 64 MB.
    fn default() -> Self {
        Retention {
            windows: Nanos::from_secs(2 * DAY),
            hours: Nanos::from_secs(90 * DAY),
            max_age: Nanos::from_secs(5 * 365 * DAY),
            budget: 64 << 20,
        }
    }
}

impl Retention {
    /// Checks the durations' order and the budget's floor.
    pub fn check(&self) -> Result<(), ConfigError> {
        let refuse = |why| Err(ConfigError::Retention(why));
        if self.windows < Nanos::from_secs(3600) {
            return refuse(
                "--keep-windows: keep measured windows at least 1h (they merge into hours)",
            );
        }
        if self.hours < Nanos::from_secs(DAY) || self.hours < self.windows {
            return refuse(
                "--keep-hours: keep hours at least 1 day and at least as long as --keep-windows",
            );
        }
        if self.max_age < self.hours {
            return refuse("--keep: keep the series at least as long as --keep-hours");
        }
        if self.budget < 1 << 20 {
            return refuse("--disk-budget: at least 1MB");
        }
        Ok(())
    }

    /// Merges, expires and trims `series` as of `now_ns` (Unix ns).
    pub fn apply(
        &self,
        store: &mut Store,
        series: SeriesId,
        now_ns: i64,
    ) -> rtscope_store::Result<Housekept> {
        let ago = |d: Nanos| now_ns.saturating_sub(d.0 as i64);
        let mut done = Housekept {
            merged: store.roll_up(series, Level::Window, Level::Hour, ago(self.windows))?,
            ..Housekept::default()
        };
        done.merged += store.roll_up(series, Level::Hour, Level::Day, ago(self.hours))?;
        done.expired = store.expire_windows(ago(self.max_age))?;
        done.over_budget = store.trim_to_budget(self.budget)?;
        Ok(done)
    }
}
