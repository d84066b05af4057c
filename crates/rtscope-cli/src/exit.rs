//! Exit codes, in one place. Every front end uses these:
//!
//! | code | meaning |
//! |---|---|
//! | 0 | success: the run completed and no limit was exceeded |
//! | 1 | a limit was exceeded (`--limit`, or cyclictest's `-b` break); `compare`: a regression |
//! | 2 | usage or setup error: bad option or value, no RT privilege, unreadable file |
//! | 3 | interrupted: SIGINT/SIGTERM ended a run before its length (results are still written) |
//!
//! And the CLI's own errors: a closed pipe is no error, an argument that must be text and is
//! not is named (the error chain itself is rendered by `rtscope_common::error::render`).

/// Whether an error chain ends in a closed pipe (`rtscope ... | head`), which is not an error.
pub fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|e| {
        e.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// Standard output as every command writes it: the one rule for a write that fails, applied
/// at the top for every command.
///
/// * A closed pipe (`rtscope check --json | head -c 100`) is the reader's choice and changes
///   no exit code; nothing is printed. For a command that prints its result once (`check`,
///   `runs`, `tail`, `compare`, `export`, …) the write is swallowed (it reports success and
///   the rest of the output is dropped), so the command goes on to its own end and its own
///   exit code. A measurement that streams (`measure`, `cyclictest -v`, `noise`, `run`,
///   `watch`, [`StdoutGuard::streaming`]) is told instead: it stops its live output
///   where the reader left, as cyclictest does, and ends with its own code (its record kept).
/// * Any other failure (`> /dev/full`, EIO) is remembered and returned to the command, which
///   may say so itself (a measurement records exit code 2 and prints one line); the top
///   level ([`StdoutGuard::verdict`]) then prints the error once, never a second time for the
///   same failure.
pub struct StdoutGuard<W: std::io::Write> {
    inner: W,
    error: Option<std::io::Error>,
    /// A closed pipe is returned to the command (a streaming one), not swallowed.
    streaming: bool,
}

impl<W: std::io::Write> StdoutGuard<W> {
    /// Wraps standard output (or a test's writer).
    pub fn new(inner: W) -> Self {
        StdoutGuard {
            inner,
            error: None,
            streaming: false,
        }
    }

    /// For a command that streams: a closed pipe is returned to it as `BrokenPipe` (every
    /// time), so it stops its live output; it keeps its own exit code itself.
    pub fn streaming(&mut self) -> &mut Self {
        self.streaming = true;
        self
    }

    /// The first error writing failed with.
    pub fn error(&self) -> Option<&std::io::Error> {
        self.error.as_ref()
    }

    fn closed(&self) -> bool {
        self.error
            .as_ref()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    }

    fn keep<T>(&mut self, r: std::io::Result<T>, ok: T) -> std::io::Result<T> {
        match r {
            Ok(v) => Ok(v),
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
                self.error.get_or_insert(e);
                self.swallowed(ok)
            }
            Err(e) => {
                let again = std::io::Error::new(e.kind(), e.to_string());
                self.error.get_or_insert(e);
                Err(again)
            }
        }
    }

    /// What a write after the reader left returns: success, or for a streaming command the
    /// closed pipe again.
    fn swallowed<T>(&self, ok: T) -> std::io::Result<T> {
        match self.streaming {
            true => Err(std::io::ErrorKind::BrokenPipe.into()),
            false => Ok(ok),
        }
    }

    /// The exit status and the one message (if any) of a command that ended with `result`,
    /// after the final flush: a closed pipe changes neither; another failure of standard
    /// output is printed once (`error: cannot write to standard output: …`) and turns a
    /// success into exit 2, unless the command already ended with its own status after
    /// being told (it reported it: a failed limit or an interruption keeps its code).
    pub fn verdict(
        &mut self,
        result: anyhow::Result<crate::ExitStatus>,
    ) -> (crate::ExitStatus, Option<String>) {
        use crate::ExitStatus;
        let told = self.error.is_some() && !self.closed();
        self.streaming = false;
        let flushed = std::io::Write::flush(self);
        let cannot = |e: &std::io::Error| {
            rtscope_common::error::render([format!("cannot write to standard output: {e}")])
        };
        match result {
            // Told, and ended with its own status: it reported the failure (a measurement's
            // one line); a success means it went on as if nothing had failed.
            Ok(status) if told && status != ExitStatus::Success => (status, None),
            Ok(status) => match self.error.as_ref() {
                Some(e) if told || flushed.is_err() => {
                    let status = match status {
                        ExitStatus::Success => ExitStatus::Usage,
                        other => other,
                    };
                    (status, Some(cannot(e)))
                }
                _ => (status, None),
            },
            Err(e) if is_broken_pipe(&e) => (ExitStatus::Success, None),
            Err(e) => match self.error.as_ref() {
                // A streaming command that stopped on the closed pipe (serde_json's error hides
                // its `io::Error` from the chain): the quiet exit.
                Some(w) if self.closed() && is_stdout_error(&e, w) => (ExitStatus::Success, None),
                // The command stopped on standard output's own error: said once, as that.
                Some(w) if !self.closed() && is_stdout_error(&e, w) => {
                    (ExitStatus::Usage, Some(cannot(w)))
                }
                _ => (
                    ExitStatus::Usage,
                    Some(rtscope_common::error::render(
                        e.chain().map(|c| c.to_string()),
                    )),
                ),
            },
        }
    }
}

/// Whether `err` is the failure `written` of standard output passed up (as an `io::Error`
/// or inside another error's text: serde_json's error hides its `io::Error` from the chain).
fn is_stdout_error(err: &anyhow::Error, written: &std::io::Error) -> bool {
    let text = written.to_string();
    err.chain().any(|e| {
        e.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == written.kind())
            || e.to_string().ends_with(&text)
    })
}

impl<W: std::io::Write> std::io::Write for StdoutGuard<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.closed() {
            return self.swallowed(buf.len());
        }
        let r = self.inner.write(buf);
        self.keep(r, buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if self.closed() {
            return self.swallowed(());
        }
        let r = self.inner.flush();
        self.keep(r, ())
    }
}

/// Refuses an argument that is not UTF-8 where `what` needs text, naming it (bytes that are
/// not UTF-8 shown as `\xNN`) instead of aborting.
pub(crate) fn require_utf8(
    argv: &[std::ffi::OsString],
    what: &str,
) -> Result<(), crate::UsageError> {
    use std::os::unix::ffi::OsStrExt;
    match argv.iter().skip(1).find(|a| a.to_str().is_none()) {
        None => Ok(()),
        Some(bad) => Err(crate::UsageError::new(format!(
            "argument '{}' is not valid UTF-8, which {what} must be",
            bad.as_bytes().escape_ascii()
        ))
        .hint("pass the value in UTF-8 (file names may use any bytes with the native options)")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsString;

    /// A writer that fails every write and flush with `kind`.
    struct Failing(std::io::ErrorKind);

    impl std::io::Write for Failing {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(self.0.into())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Err(self.0.into())
        }
    }

    /// Issue 67 item 11: a closed pipe keeps the command's own exit code (1 here: `check`
    /// with a bad check) and prints nothing; the command's writes all "succeed".
    #[test]
    fn a_closed_pipe_keeps_the_commands_own_exit_code_and_says_nothing() {
        use std::io::Write;
        let mut out = StdoutGuard::new(Failing(std::io::ErrorKind::BrokenPipe));
        assert!(writeln!(out, "x").is_ok() && out.flush().is_ok());
        let (status, said) = out.verdict(Ok(crate::ExitStatus::LimitExceeded));
        assert_eq!((status, said), (crate::ExitStatus::LimitExceeded, None));
    }

    /// A streaming command is told of the closed pipe (it stops its live output) and still
    /// ends with its own code, nothing said.
    #[test]
    fn a_streaming_command_is_told_of_a_closed_pipe() {
        use std::io::Write;
        let mut out = StdoutGuard::new(Failing(std::io::ErrorKind::BrokenPipe));
        out.streaming();
        let e = writeln!(out, "x").unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe);
        assert!(writeln!(out, "y").is_err(), "told again");
        let status = crate::ExitStatus::Interrupted;
        assert_eq!(out.verdict(Ok(status)), (status, None));
    }

    /// `> /dev/full`: the command is told (its `?` ends it), and the top level says it once.
    #[test]
    fn a_full_device_is_told_to_the_command_and_said_once() {
        use std::io::Write;
        let mut out = StdoutGuard::new(Failing(std::io::ErrorKind::StorageFull));
        let e = writeln!(out, "x").unwrap_err();
        let (status, said) = out.verdict(Err(e.into()));
        assert_eq!(status, crate::ExitStatus::Usage);
        let said = said.unwrap();
        assert_eq!(said.lines().count(), 1, "{said}");
        assert!(
            said.starts_with("error: cannot write to standard output: "),
            "{said}"
        );
        // A command that reported it itself and ended with its own code: nothing more.
        let mut out = StdoutGuard::new(Failing(std::io::ErrorKind::StorageFull));
        let _ = writeln!(out, "x");
        assert_eq!(
            out.verdict(Ok(crate::ExitStatus::Usage)),
            (crate::ExitStatus::Usage, None)
        );
        // One that went on as if nothing had failed: said, and not a success.
        let mut out = StdoutGuard::new(Failing(std::io::ErrorKind::StorageFull));
        let _ = writeln!(out, "x");
        let (status, said) = out.verdict(Ok(crate::ExitStatus::Success));
        assert_eq!(status, crate::ExitStatus::Usage);
        assert!(said.is_some());
    }

    #[test]
    fn a_non_utf8_argument_is_named_not_a_panic() {
        use std::os::unix::ffi::OsStringExt;
        let argv = vec![
            OsString::from("cyclictest"),
            OsString::from_vec(vec![b'-', 0xff]),
        ];
        let e = require_utf8(&argv, "cyclictest's options").unwrap_err();
        assert!(e.message.contains(r"'-\xff'"), "{}", e.message);
        assert!(require_utf8(&argv[..1], "x").is_ok());
    }
}
