//! Arguments that must be text (the error chain itself is rendered by
//! `rtscope_common::errors::render`).

use std::ffi::OsString;

/// Refuses an argument that is not UTF-8 where `what` needs text, naming it (bytes that are
/// not UTF-8 shown as `\xNN`) instead of aborting.
pub(crate) fn require_utf8(argv: &[OsString], what: &str) -> Result<(), crate::UsageError> {
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
