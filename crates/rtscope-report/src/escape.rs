//! Escaping for HTML and SVG text (the report and the plots both write markup).

/// Escapes text for HTML element content and quoted attribute values.
pub fn escape(s: &str) -> String {
    // Control characters (ESC, BEL, NUL: invalid in HTML and XML) are shown as `\x1b`.
    let s = rtscope_core::text::escape(s);
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}
