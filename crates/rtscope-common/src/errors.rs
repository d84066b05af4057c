//! How an error reaches the terminal: `error:` with the message, one `caused by:` line per
//! cause that adds something, and the hints last, where the eye lands after the causes.

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
