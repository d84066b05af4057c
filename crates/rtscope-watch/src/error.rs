//! Why a watch's configuration was refused: typed, so a caller (and a test) can tell a line of
//! the file that is not the TOML subset from an unknown key, a value of the wrong type, a bad
//! `--alert` or retention limits out of order. Each is a usage error (exit 2) at the top.

use rtscope_core::ParseDurationError;

/// A line of the configuration file that is not the TOML subset it reads.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SyntaxError {
    /// Not `key = value`.
    #[error("expected key = value (no tables)")]
    NotKeyValue,
    /// A key with other characters than letters, digits, `_` and `-`.
    #[error("'{0}' is not a bare key")]
    BadKey(String),
    /// The same key twice.
    #[error("'{0}' is given twice")]
    Twice(String),
    /// An escape other than `\" \\ \n \t`.
    #[error("unsupported escape \\{0}")]
    Escape(char),
    /// A control character in a string.
    #[error("control character in a string")]
    Control,
    /// A string without its closing quote.
    #[error("unterminated string")]
    Unterminated,
    /// Text after a value (the first 20 characters).
    #[error("unexpected '{0}' after the value")]
    Trailing(String),
    /// An array item that is not a quoted string.
    #[error("arrays hold quoted strings")]
    ListItem,
    /// An array not closed on its line.
    #[error("expected ',' or ']' (arrays are on one line)")]
    ListEnd,
    /// A value that is none of the kinds read.
    #[error("'{0}' is not a quoted string, an integer, true or false")]
    NotAValue(String),
}

/// Why the configuration (file or flags) was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ConfigError {
    /// A line of the file that is not the subset of TOML read.
    #[error("line {line}: {error}")]
    Syntax {
        /// The line, from 1.
        line: usize,
        /// What is wrong with it.
        #[source]
        error: SyntaxError,
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
