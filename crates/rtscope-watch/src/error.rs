//! Why a watch's configuration was refused: typed, so a caller (and a test) can tell a file
//! that is not TOML from an unknown key, a value of the wrong type, a bad
//! `--alert` or retention limits out of order. Each is a usage error (exit 2) at the top.

use rtscope_core::ParseDurationError;

/// Why the configuration (file or flags) was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ConfigError {
    /// The file is not TOML (the parser's words).
    #[error("line {line}: {error}")]
    Syntax {
        /// The line, from 1.
        line: usize,
        /// What is wrong with it.
        error: String,
    },
    /// A key that is no `rtscope watch` option.
    #[error("line {line}: unknown key '{key}'")]
    UnknownKey {
        /// The line, from 1.
        line: usize,
        /// The key.
        key: String,
    },
    /// A value of the wrong kind for its key.
    #[error("line {line}: {key} takes {want}")]
    WrongType {
        /// The line, from 1.
        line: usize,
        /// The key.
        key: String,
        /// What it takes.
        want: &'static str,
    },
    /// An `--alert` that is not `STAT>VALUE`.
    #[error("--alert '{text}': expected STAT>VALUE with STAT max, p99, p99.99 (a latency such as 200us), missed or spikes (a count), e.g. 'max>200us'")]
    AlertForm {
        /// The alert as given.
        text: String,
    },
    /// An `--alert` latency that is not a duration.
    #[error("--alert '{text}': {error}")]
    AlertLatency {
        /// The alert as given.
        text: String,
        /// Why its value is not a duration.
        #[source]
        error: ParseDurationError,
    },
    /// Retention limits out of order, or a budget below its floor.
    #[error("{0}")]
    Retention(&'static str),
}
