//! Numbers as people read them in tables and status lines: the one microsecond formatter and
//! its companions, shared by every front end and the report.

use crate::Nanos;
use std::fmt::Write;

/// A latency in microseconds with one decimal, no unit: `12.3` for 12,345 ns.
pub fn us(v: Nanos) -> String {
    format!("{:.1}", v.as_us_f64())
}

/// [`us`], or `-` when there is no value.
pub fn us_or_dash(v: Option<Nanos>) -> String {
    v.map_or_else(|| "-".into(), us)
}

/// A percentile in µs ([`us`]): `≥400.0` when it is only a lower bound (its rank falls among
/// an imported histogram's overflows), `-` when unknown.
pub fn percentile(p: &crate::Percentile) -> String {
    match p.value {
        Some(v) if p.lower_bound => format!("≥{}", us(v)),
        v => us_or_dash(v),
    }
}

/// A duration in the largest unit that keeps it whole (`200us`, `25s`), else with decimals.
pub fn short(n: Nanos) -> String {
    let units = [(1_000_000_000, "s"), (1_000_000, "ms"), (1_000, "us")];
    match units.iter().find(|(d, _)| n.0 >= *d && n.0 % d == 0) {
        Some((d, u)) => format!("{}{u}", n.0 / d),
        None if n.0 == 0 => "0s".into(),
        None => n.to_string(),
    }
}

/// A count or rate: `5.13G`, `5.13M`, `26.5k`, `812`, `9.7`.
pub fn count(v: f64) -> String {
    match v.abs() {
        x if x >= 1e9 => format!("{:.2}G", v / 1e9),
        x if x >= 1e6 => format!("{:.2}M", v / 1e6),
        x if x >= 1e4 => format!("{:.1}k", v / 1e3),
        x if x.fract() == 0.0 => format!("{v:.0}"),
        _ => format!("{v:.1}"),
    }
}

/// `s` safe to print on a terminal: control characters (C0, DEL, C1: escape sequences, bells,
/// newlines, carriage returns) written as `\n`, `\r`, `\t`, `\x1b`, `\u{9b}`; a backslash
/// stays as it is. Untrusted text (labels, tags, names, file names) goes through this before
/// any terminal output.
pub fn escape(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.chars().any(char::is_control) {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x80 && c.is_control() => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if c.is_control() => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}

/// `s` as one CSV field (RFC 4180): quoted, its quotes doubled, when it holds a comma, a quote
/// or a line break; unchanged otherwise.
pub fn csv_field(s: &str) -> std::borrow::Cow<'_, str> {
    if s.contains([',', '"', '\r', '\n']) {
        std::borrow::Cow::Owned(format!("\"{}\"", s.replace('"', "\"\"")))
    } else {
        std::borrow::Cow::Borrowed(s)
    }
}

/// An untrusted text cell of a CSV file (labels, tags, names): control characters escaped as
/// for a terminal ([`escape`]) but for line breaks and tabs, which quoting keeps as data
/// (pandas reads them back), a leading `=`, `+`, `-` or `@` prefixed with `'` (a spreadsheet
/// would run it as a formula), then [`csv_field`]. The one CSV text rule of the report's
/// `summary.csv` and the exports.
pub fn csv_text(s: &str) -> std::borrow::Cow<'_, str> {
    let escaped = if s
        .chars()
        .any(|c| c.is_control() && !matches!(c, '\n' | '\r' | '\t'))
    {
        let kept: String = s
            .split_inclusive(['\n', '\r', '\t'])
            .map(|part| {
                let (body, end) = match part.char_indices().last() {
                    Some((i, '\n' | '\r' | '\t')) => part.split_at(i),
                    _ => (part, ""),
                };
                format!("{}{end}", escape(body))
            })
            .collect();
        std::borrow::Cow::Owned(kept)
    } else {
        std::borrow::Cow::Borrowed(s)
    };
    if escaped.starts_with(['=', '+', '-', '@']) {
        return std::borrow::Cow::Owned(csv_field(&format!("'{escaped}")).into_owned());
    }
    match escaped {
        std::borrow::Cow::Borrowed(b) => csv_field(b),
        std::borrow::Cow::Owned(o) => std::borrow::Cow::Owned(csv_field(&o).into_owned()),
    }
}

/// [`escape`] on each line of `s`, keeping its line breaks: for a block of text made of
/// untrusted pieces.
pub fn escape_lines(s: &str) -> String {
    s.split('\n').map(escape).collect::<Vec<_>>().join("\n")
}

/// At most `max` bytes of `s` (cut at a character boundary), with `…` when cut: the part of
/// an untrusted line an error message quotes.
pub fn clip(s: &str, max: usize) -> std::borrow::Cow<'_, str> {
    if s.len() <= max {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    std::borrow::Cow::Owned(format!("{}…", &s[..end]))
}

/// Lays out rows of cells as aligned columns under a rule: the first row is the header; columns
/// before `right_from` are left-aligned, the others right-aligned (numbers). Cells are
/// [`escape`]d: a label with a newline or an escape sequence never breaks the table.
pub fn columns(cells: &[Vec<String>], right_from: usize) -> String {
    let cells: Vec<Vec<String>> = cells
        .iter()
        .map(|r| r.iter().map(|c| escape(c).into_owned()).collect())
        .collect();
    let cells = &cells[..];
    let n = cells.first().map_or(0, |r| r.len());
    let widths: Vec<usize> = (0..n)
        .map(|i| {
            cells
                .iter()
                .map(|r| r.get(i).map_or(0, |c| c.chars().count()))
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut s = String::new();
    for (row_no, row) in cells.iter().enumerate() {
        let line: Vec<String> = row
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(i, (c, w))| {
                // Padded by hand: `format!("{c:<w$}")` panics on widths above 65,535.
                let pad = " ".repeat(w.saturating_sub(c.chars().count()));
                if i < right_from {
                    format!("{c}{pad}")
                } else {
                    format!("{pad}{c}")
                }
            })
            .collect();
        let _ = writeln!(s, "{}", line.join("  ").trim_end());
        if row_no == 0 {
            let rule = widths.iter().sum::<usize>() + 2 * n.saturating_sub(1);
            let _ = writeln!(s, "{}", "-".repeat(rule));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_text_escapes_quotes_and_disarms_formulas() {
        assert_eq!(csv_text("idle"), "idle");
        assert_eq!(csv_text("a,b"), "\"a,b\"");
        assert_eq!(csv_text("say \"x\""), "\"say \"\"x\"\"\"");
        assert_eq!(csv_text("evil\u{1b}[31m\u{7}"), "evil\\x1b[31m\\x07");
        assert_eq!(csv_text("line\nbreak"), "\"line\nbreak\"");
        assert_eq!(csv_text("bel\u{7}\nesc\u{1b}"), "\"bel\\x07\nesc\\x1b\"");
        assert_eq!(csv_text("=HYPERLINK(\"x\")"), "\"'=HYPERLINK(\"\"x\"\")\"");
        assert_eq!(csv_text("-1+2"), "'-1+2");
        assert_eq!(csv_field("a\r\nb"), "\"a\r\nb\"");
    }

    #[test]
    fn escapes_control_characters() {
        assert_eq!(escape("plain µs"), "plain µs");
        assert_eq!(
            escape("a\x1b]0;pwned\x07b\nc\rd"),
            "a\\x1b]0;pwned\\x07b\\nc\\rd"
        );
        assert_eq!(escape("\u{9b}2J"), "\\u{9b}2J");
        let t = columns(&[vec!["h".into()], vec!["x\ny".into()]], 1);
        assert_eq!(t.lines().count(), 3, "{t}");
        let huge = "x".repeat(70_000);
        assert_eq!(
            columns(&[vec!["h".into(), "n".into()], vec![huge, "1".into()]], 1)
                .lines()
                .count(),
            3
        );
    }

    #[test]
    fn clips_at_a_character_boundary() {
        assert_eq!(clip("abc", 5), "abc");
        assert_eq!(clip("aéb", 2), "a…");
    }

    #[test]
    fn formats() {
        assert_eq!(us(Nanos(12_345)), "12.3");
        assert_eq!(us_or_dash(None), "-");
        assert_eq!(short(Nanos::from_us(200)), "200us");
        assert_eq!(short(Nanos::from_secs(25)), "25s");
        assert_eq!(count(5_130_000.0), "5.13M");
        assert_eq!(count(812.0), "812");
        let t = columns(
            &[vec!["a".into(), "n".into()], vec!["xy".into(), "7".into()]],
            1,
        );
        assert_eq!(t, "a   n\n-----\nxy  7\n");
    }
}
