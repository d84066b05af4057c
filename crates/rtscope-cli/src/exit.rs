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
