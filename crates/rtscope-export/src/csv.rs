//! CSV, RFC 4180: a header row of column names, then one record per row, CRLF line ends. A
//! field holding a comma, a double quote, CR or LF is enclosed in double quotes, with each
//! double quote inside doubled. A null is an empty field. A text cell starting with `=`, `+`,
//! `-`, `@`, a tab or CR gets a leading `'` so that a spreadsheet shows it instead of running
//! it as a formula (labels and tags come from whoever recorded the run).

use super::table::{Cell, Table};
use std::borrow::Cow;
use std::io::{self, Write};

/// Line end (RFC 4180 §2.1).
const EOL: &[u8] = b"\r\n";

/// `s` as one CSV field: unchanged unless it needs quoting (rtscope-core's rule).
pub fn field(s: &str) -> Cow<'_, str> {
    rtscope_core::text::csv_field(s)
}

/// A text cell safe to open in a spreadsheet: a leading `'` before `= + - @ TAB CR`.
pub fn text_field(s: &str) -> Cow<'_, str> {
    rtscope_core::text::csv_text(s)
}

fn write_cell(w: &mut dyn Write, cell: Cell<'_>) -> io::Result<()> {
    match cell {
        Cell::Null => Ok(()),
        Cell::Int(v) => write!(w, "{v}"),
        // Rust prints the shortest text that reads back as the same f64, never in exponent
        // form: pandas parses it exactly.
        Cell::Float(v) => write!(w, "{v}"),
        Cell::Text(s) => w.write_all(text_field(s).as_bytes()),
    }
}

/// Writes `t` as CSV.
pub fn write(w: &mut dyn Write, t: &Table) -> io::Result<()> {
    for (i, c) in t.columns.iter().enumerate() {
        if i > 0 {
            w.write_all(b",")?;
        }
        w.write_all(field(&c.name).as_bytes())?;
    }
    w.write_all(EOL)?;
    write_rows(w, t)
}

/// Writes the rows of `t` alone (a further part of a table streamed in parts).
pub fn write_rows(w: &mut dyn Write, t: &Table) -> io::Result<()> {
    for row in 0..t.rows() {
        for (i, c) in t.columns.iter().enumerate() {
            if i > 0 {
                w.write_all(b",")?;
            }
            write_cell(w, c.values.cell(row))?;
        }
        w.write_all(EOL)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn csv(t: &Table) -> String {
        let mut buf = Vec::new();
        write(&mut buf, t).unwrap();
        String::from_utf8(buf).unwrap()
    }

    #[test]
    fn formula_text_gets_a_leading_quote() {
        assert_eq!(
            text_field("=HYPERLINK(\"x\")"),
            "\"'=HYPERLINK(\"\"x\"\")\""
        );
        assert_eq!(text_field("@SUM(A1)"), "'@SUM(A1)");
        assert_eq!(text_field("-1+2"), "'-1+2");
        assert_eq!(text_field("idle"), "idle");
    }

    #[test]
    fn plain_fields_stay_unquoted() {
        assert_eq!(field("abc"), "abc");
        assert_eq!(field(""), "");
        assert_eq!(field(" spaced out "), " spaced out ");
        assert!(matches!(field("abc"), Cow::Borrowed(_)));
    }

    #[test]
    fn comma_quote_cr_lf_are_quoted_and_quotes_doubled() {
        assert_eq!(field("a,b"), "\"a,b\"");
        assert_eq!(field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(field("\""), "\"\"\"\"");
        assert_eq!(field("line1\nline2"), "\"line1\nline2\"");
        assert_eq!(field("cr\rhere"), "\"cr\rhere\"");
        assert_eq!(field("x,\"y\"\r\n"), "\"x,\"\"y\"\"\r\n\"");
    }

    #[test]
    fn table_has_header_crlf_rows_and_empty_nulls() {
        let t = Table::new("t")
            .int("thread", [0, -1])
            .opt_float("mean_ns", [Some(5073.25), None])
            .opt_text("label", [Some("a,b".into()), None]);
        assert_eq!(
            csv(&t),
            "thread,mean_ns,label\r\n0,5073.25,\"a,b\"\r\n-1,,\r\n"
        );
    }

    #[test]
    fn empty_table_is_a_header_only() {
        let t = Table::new("t").int("a_ns", []).text("b", []);
        assert_eq!(csv(&t), "a_ns,b\r\n");
    }

    #[test]
    fn floats_read_back_exactly_and_never_use_exponents() {
        for v in [0.1, 1e-7, 123456789.125, 1e20] {
            let t = Table::new("t").opt_float("x", [Some(v)]);
            let text = csv(&t);
            let cell = text.lines().nth(1).unwrap();
            assert!(!cell.contains('e'), "{cell}");
            assert_eq!(cell.parse::<f64>().unwrap(), v);
        }
    }
}
