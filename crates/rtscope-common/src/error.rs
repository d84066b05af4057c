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
    /// Every exit status, in code order: the man pages' EXIT STATUS sections are made from
    /// this list and [`ExitStatus::meaning`] (with each command's own words where it has them).
    pub const ALL: [ExitStatus; 4] = [
        ExitStatus::Success,
        ExitStatus::LimitExceeded,
        ExitStatus::Usage,
        ExitStatus::Interrupted,
    ];

    /// The numeric code.
    pub fn code(self) -> i32 {
        self as i32
    }

    /// The status of a run: interrupted before a failed limit, a failed limit before success.
    pub fn of_run(interrupted: bool, limit_failed: bool) -> ExitStatus {
        if interrupted {
            ExitStatus::Interrupted
        } else if limit_failed {
            ExitStatus::LimitExceeded
        } else {
            ExitStatus::Success
        }
    }

    /// What the code means for every command.
    pub const fn meaning(self) -> &'static str {
        match self {
            ExitStatus::Success => "Success.",
            ExitStatus::LimitExceeded => {
                "A limit was exceeded (measure --limit, cyclictest -b, a campaign's limits); \
                 compare: a candidate regressed; check: a check is bad."
            }
            ExitStatus::Usage => {
                "Usage or setup error: bad option or value, CPU not online, no real-time \
                 privilege, unreadable or unwritable file (the message names it, often with a \
                 hint)."
            }
            ExitStatus::Interrupted => {
                "Interrupted by SIGINT, SIGTERM or SIGHUP before the run's length; everything \
                 measured so far is still printed and recorded."
            }
        }
    }
}

impl From<ExitStatus> for std::process::ExitCode {
    fn from(s: ExitStatus) -> Self {
        std::process::ExitCode::from(s as u8)
    }
}

/// A bad command line, input or setup: message, optional hint, the cause, exit code 2.
#[derive(Debug, Clone)]
pub struct UsageError {
    /// What is wrong, naming the option, file or value.
    pub message: String,
    /// How to fix it.
    pub hint: Option<String>,
    /// What caused it, printed as `caused by:` lines at the top level.
    pub cause: Option<std::sync::Arc<dyn std::error::Error + Send + Sync + 'static>>,
}

impl PartialEq for UsageError {
    fn eq(&self, other: &Self) -> bool {
        self.message == other.message && self.hint == other.hint
    }
}

impl UsageError {
    /// A usage error with a message.
    pub fn new(message: impl Into<String>) -> Self {
        UsageError {
            message: message.into(),
            hint: None,
            cause: None,
        }
    }

    /// A usage error that says what `e` says and keeps `e`'s own causes as its causes, so the
    /// chain is still printed in full.
    pub fn from_error(e: impl std::error::Error + Send + Sync + 'static) -> Self {
        let message = e.to_string();
        let cause = e.source().map(|s| {
            let chain: Box<dyn std::error::Error + Send + Sync> = Box::new(Chained::of(s));
            std::sync::Arc::from(chain)
        });
        UsageError {
            message,
            hint: None,
            cause,
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

impl std::error::Error for UsageError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.cause
            .as_deref()
            .map(|c| c as &(dyn std::error::Error + 'static))
    }
}

/// A borrowed cause chain, copied as text so it can outlive the error it came from.
#[derive(Debug)]
struct Chained {
    message: String,
    next: Option<Box<Chained>>,
}

impl Chained {
    fn of(e: &(dyn std::error::Error + 'static)) -> Chained {
        Chained {
            message: e.to_string(),
            next: e.source().map(|s| Box::new(Chained::of(s))),
        }
    }
}

impl fmt::Display for Chained {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Chained {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.next
            .as_deref()
            .map(|c| c as &(dyn std::error::Error + 'static))
    }
}
