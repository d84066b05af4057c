//! Exit codes, the usage error and how an error reaches the terminal, in one place. Every
//! front end uses these exit codes:
//!
//! | code | meaning |
//! |---|---|
//! | 0 | success: the run completed and no limit was exceeded |
//! | 1 | a limit was exceeded (`--limit`, or cyclictest's `-b` break); `compare`: a regression |
//! | 2 | usage or setup error: bad option or value, no RT privilege, unreadable file |
//! | 3 | interrupted: SIGINT/SIGTERM ended a run before its length (results are still written) |
//!
//! An error is printed as `error:` with the message, one `caused by:` line per cause that adds
//! something, and the hints last, where the eye lands after the causes ([`render`]); a warning
//! goes to stderr by [`warn`].

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

/// The separator every error type of rtscope puts before its fix (`UsageError`'s `Display`,
/// the engine's permission errors, …).
const HINT: &str = "\n\nhint: ";

/// The text printed for an error chain (`messages`: the error's own `Display`, then each
/// cause's). A cause that only repeats the end of the line before it (`cannot write x: Not a
/// directory` caused by `Not a directory`) is left out; hints are gathered and printed after
/// every cause, each once.
pub fn render(messages: impl IntoIterator<Item = String>) -> String {
    let mut lines: Vec<String> = Vec::new();
    let mut hints: Vec<String> = Vec::new();
    let mut previous = String::new();
    for (i, text) in messages.into_iter().enumerate() {
        let mut parts = text.split(HINT);
        let body = parts.next().unwrap_or_default().trim_end().to_owned();
        for h in parts {
            let h = h.trim().to_owned();
            if !h.is_empty() && !hints.contains(&h) {
                hints.push(h);
            }
        }
        if i > 0 && (body.is_empty() || previous.ends_with(&body)) {
            continue;
        }
        lines.push(if i == 0 {
            format!("error: {body}")
        } else {
            format!("  caused by: {body}")
        });
        previous = body;
    }
    if !hints.is_empty() {
        lines.push(String::new());
        lines.extend(hints.into_iter().map(|h| format!("hint: {h}")));
    }
    lines.join("\n")
}

/// Writes `text` to stderr; a failing stderr (a full disk holding the log) is silence, never a
/// panic.
pub fn warn(text: &str) {
    use std::io::Write;
    let mut e = std::io::stderr().lock();
    let _ = e.write_all(text.as_bytes());
    let _ = e.write_all(b"\n");
    let _ = e.flush();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render_of(v: &[&str]) -> String {
        render(v.iter().map(|s| s.to_string()))
    }

    #[test]
    fn the_hint_comes_after_the_causes_and_a_repeated_cause_is_left_out() {
        let text = render_of(&[
            "cannot write afile/sub: Not a directory (os error 20)\n\nhint: choose a writable directory with -o DIR",
            "Not a directory (os error 20)",
        ]);
        assert_eq!(
            text,
            "error: cannot write afile/sub: Not a directory (os error 20)\n\nhint: choose a writable directory with -o DIR"
        );
    }

    #[test]
    fn causes_that_add_something_are_kept_in_order_before_every_hint() {
        let text = render_of(&[
            "cannot open the run database x.db\n\nhint: pass --db PATH",
            "database is locked\n\nhint: wait for the other rtscope",
            "disk I/O error",
        ]);
        assert_eq!(
            text,
            "error: cannot open the run database x.db\n  caused by: database is locked\n  caused by: disk I/O error\n\nhint: pass --db PATH\nhint: wait for the other rtscope"
        );
    }

    #[test]
    fn an_error_without_a_hint_or_cause_is_one_line() {
        assert_eq!(render_of(&["no such run: 7"]), "error: no such run: 7");
    }
}
