//! The nanosecond newtype.

use std::fmt;
use std::ops::{Add, Sub};

/// A duration or latency in nanoseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Nanos(pub u64);

impl Nanos {
    /// Zero nanoseconds.
    pub const ZERO: Nanos = Nanos(0);
    /// The largest representable duration.
    pub const MAX: Nanos = Nanos(u64::MAX);

    /// From whole microseconds (saturating).
    pub const fn from_us(us: u64) -> Nanos {
        Nanos(us.saturating_mul(1_000))
    }
    /// From whole milliseconds (saturating).
    pub const fn from_ms(ms: u64) -> Nanos {
        Nanos(ms.saturating_mul(1_000_000))
    }
    /// From whole seconds (saturating).
    pub const fn from_secs(s: u64) -> Nanos {
        Nanos(s.saturating_mul(1_000_000_000))
    }
    /// The value in nanoseconds.
    pub const fn as_ns(self) -> u64 {
        self.0
    }
    /// Whole microseconds, truncated (as cyclictest prints them).
    pub const fn as_us_trunc(self) -> u64 {
        self.0 / 1_000
    }
    /// Microseconds as a float.
    pub fn as_us_f64(self) -> f64 {
        self.0 as f64 / 1_000.0
    }
    /// Seconds as a float.
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e9
    }
    /// Saturating subtraction.
    pub const fn saturating_sub(self, rhs: Nanos) -> Nanos {
        Nanos(self.0.saturating_sub(rhs.0))
    }

    /// Parses a duration such as `30` (seconds unless `default_unit` says otherwise), `250ms`,
    /// `100us`, `10m`, `2h`, `1d`, `1.5s`. Units: `ns`, `us`, `ms`, `s`, `m`, `h`, `d`.
    pub fn parse_with_default_unit(
        text: &str,
        default_unit: &str,
    ) -> Result<Nanos, ParseDurationError> {
        let t = text.trim();
        let split = t
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(t.len());
        let (num, unit) = t.split_at(split);
        let unit = if unit.is_empty() { default_unit } else { unit };
        let scale: f64 = match unit {
            "ns" => 1.0,
            "us" | "µs" => 1e3,
            "ms" => 1e6,
            "s" | "sec" => 1e9,
            "m" | "min" => 60e9,
            "h" => 3600e9,
            "d" => 86_400e9,
            _ => return Err(ParseDurationError::Invalid(text.to_string())),
        };
        let value: f64 = num
            .parse()
            .map_err(|_| ParseDurationError::Invalid(text.to_string()))?;
        if !value.is_finite() || value < 0.0 {
            return Err(ParseDurationError::Invalid(text.to_string()));
        }
        let ns = (value * scale).round();
        if ns > MAX_DURATION.0 as f64 {
            return Err(ParseDurationError::TooLarge(text.to_string()));
        }
        Ok(Nanos(ns as u64))
    }
}

/// The longest duration accepted: 100 years (far above any run, far below `u64` ns).
pub const MAX_DURATION: Nanos = Nanos(100 * 365 * 86_400 * 1_000_000_000);

/// A duration text that could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParseDurationError {
    /// Not a number with a known unit.
    Invalid(String),
    /// A duration, but longer than [`MAX_DURATION`].
    TooLarge(String),
}

impl fmt::Display for ParseDurationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParseDurationError::Invalid(t) => write!(
                f,
                "'{t}' is not a duration (examples: 30, 500ms, 200us, 10m, 2h, 1d)"
            ),
            ParseDurationError::TooLarge(t) => {
                write!(f, "'{t}' is too long: at most 100 years (36500d)")
            }
        }
    }
}

impl std::error::Error for ParseDurationError {}

impl Add for Nanos {
    type Output = Nanos;
    fn add(self, rhs: Nanos) -> Nanos {
        Nanos(self.0.saturating_add(rhs.0))
    }
}

impl Sub for Nanos {
    type Output = Nanos;
    fn sub(self, rhs: Nanos) -> Nanos {
        Nanos(self.0.saturating_sub(rhs.0))
    }
}

impl fmt::Display for Nanos {
    /// Human form with a unit: `850ns`, `12.3us`, `4.56ms`, `1.23s`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = self.0;
        if v < 1_000 {
            write!(f, "{v}ns")
        } else if v < 1_000_000 {
            write!(f, "{:.1}us", v as f64 / 1e3)
        } else if v < 1_000_000_000 {
            write!(f, "{:.2}ms", v as f64 / 1e6)
        } else {
            write!(f, "{:.3}s", v as f64 / 1e9)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_cyclictest_durations_in_seconds_by_default() {
        assert_eq!(
            Nanos::parse_with_default_unit("30", "s"),
            Ok(Nanos::from_secs(30))
        );
        assert_eq!(
            Nanos::parse_with_default_unit("10m", "s"),
            Ok(Nanos::from_secs(600))
        );
        assert_eq!(
            Nanos::parse_with_default_unit("2h", "s"),
            Ok(Nanos::from_secs(7200))
        );
        assert_eq!(
            Nanos::parse_with_default_unit("1d", "s"),
            Ok(Nanos::from_secs(86_400))
        );
        assert_eq!(
            Nanos::parse_with_default_unit("1.5s", "s"),
            Ok(Nanos::from_ms(1500))
        );
        assert_eq!(
            Nanos::parse_with_default_unit("200us", "s"),
            Ok(Nanos::from_us(200))
        );
        assert_eq!(
            Nanos::parse_with_default_unit("200", "us"),
            Ok(Nanos::from_us(200))
        );
    }

    #[test]
    fn rejects_garbage_durations() {
        for bad in ["", "x", "10q", "-5", "1..2s", "ms"] {
            assert!(Nanos::parse_with_default_unit(bad, "s").is_err(), "{bad}");
        }
    }

    #[test]
    fn displays_with_units() {
        assert_eq!(Nanos(850).to_string(), "850ns");
        assert_eq!(Nanos(12_345).to_string(), "12.3us");
        assert_eq!(Nanos(4_560_000).to_string(), "4.56ms");
    }
}
