//! Exit codes, in one place. Every front end uses these:
//!
//! | code | meaning |
//! |---|---|
//! | 0 | success: the run completed and no limit was exceeded |
//! | 1 | a limit was exceeded (`--limit`, or cyclictest's `-b` break); `compare`: a regression |
//! | 2 | usage or setup error: bad option or value, no RT privilege, unreadable file |
//! | 3 | interrupted: SIGINT/SIGTERM ended a run before its length (results are still written) |

use std::fmt;

/// The process exit status of rtscope.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitStatus {
    /// 0: completed, within limits.
    Success = 0,
    /// 1: a limit was exceeded.
    LimitExceeded = 1,
    /// 2: usage or setup error.
    Usage = 2,
    /// 3: interrupted before the end.
    Interrupted = 3,
}

impl ExitStatus {
    /// The numeric code.
    pub fn code(self) -> i32 {
        self as i32
    }
}

impl From<ExitStatus> for std::process::ExitCode {
    fn from(s: ExitStatus) -> Self {
        std::process::ExitCode::from(s as u8)
    }
}

/// A bad command line or input: message, optional hint, exit code 2.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageError {
    /// What is wrong, naming the option, file or value.
    pub message: String,
    /// How to fix it.
    pub hint: Option<String>,
}

impl UsageError {
    /// A usage error with a message.
    pub fn new(message: impl Into<String>) -> Self {
        UsageError {
            message: message.into(),
            hint: None,
        }
    }
    /// Adds a hint.
    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }
}

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)?;
        if let Some(h) = &self.hint {
            write!(f, "\n\nhint: {h}")?;
        }
        Ok(())
    }
}

impl std::error::Error for UsageError {}

/// Whether an error chain ends in a closed pipe (`rtscope ... | head`), which is not an error.
pub fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|e| {
        e.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
