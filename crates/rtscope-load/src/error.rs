//! The errors of this crate.

use std::path::PathBuf;

/// What can go wrong when validating, starting, running or stopping a load.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// A spec value is out of range (e.g. `groups = 0`).
    #[error("load '{kind}': {field} = {value} is not allowed ({expected})")]
    BadSpec {
        /// The load kind (`messaging`, `memory`, …).
        kind: &'static str,
        /// The field, e.g. `groups`.
        field: &'static str,
        /// The value given.
        value: String,
        /// What is allowed, e.g. `1 to 1000`.
        expected: String,
    },
    /// The spec JSON given to a worker could not be parsed.
    #[error("cannot parse the load spec '{text}': {source}")]
    SpecJson {
        /// The text given.
        text: String,
        /// The parser's complaint.
        source: serde_json::Error,
    },
    /// An external program is not installed (not on `PATH`, or not executable).
    #[error("load program '{program}' was not found on PATH or is not executable")]
    ProgramNotFound {
        /// The program as given.
        program: String,
        /// How to install it, when known (e.g. `apt install rt-tests`).
        hint: Option<&'static str>,
    },
    /// A system call failed.
    #[error("{what}: {source}")]
    Os {
        /// What was being done.
        what: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// A file-system operation failed.
    #[error("{what} '{}': {source}", path.display())]
    Path {
        /// What was being done.
        what: &'static str,
        /// The path.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// A memory copy read back different data.
    #[error("memory load: {count} miscompare(s); first at byte {offset} of a copy (expected {expected:#018x}, read {found:#018x})")]
    Miscompare {
        /// Miscompared 8-byte words.
        count: u64,
        /// Offset of the first one in its buffer, in bytes.
        offset: u64,
        /// The word written.
        expected: u64,
        /// The word read back.
        found: u64,
    },
    /// A load thread panicked.
    #[error("load thread '{0}' panicked")]
    Panicked(String),
    /// The shepherd process did not behave (no start-up answer, garbled output, early death).
    #[error("load shepherd: {0}")]
    Shepherd(String),
}

impl LoadError {
    /// How to fix it, for the `hint:` line of a message, when there is something to say.
    pub fn hint(&self) -> Option<String> {
        match self {
            LoadError::ProgramNotFound { hint: Some(h), .. } => {
                Some(format!("install it (`{h}`) or give its full path"))
            }
            LoadError::ProgramNotFound { hint: None, .. } => {
                Some("install it, or give its full path".to_string())
            }
            LoadError::BadSpec { field, .. } => Some(format!(
                "change `{field}` (in the load spec, or the option of the same name of `rtscope load`)"
            )),
            LoadError::SpecJson { .. } => {
                Some("a spec is a JSON object with a \"kind\" tag, see docs/loads.md".to_string())
            }
            _ => None,
        }
    }

    /// An [`LoadError::Os`] from the last OS error.
    pub fn last_os(what: impl Into<String>) -> LoadError {
        LoadError::Os {
            what: what.into(),
            source: std::io::Error::last_os_error(),
        }
    }
    /// An [`LoadError::Os`] from an I/O error.
    pub fn io(what: impl Into<String>, source: std::io::Error) -> LoadError {
        LoadError::Os {
            what: what.into(),
            source,
        }
    }
}
