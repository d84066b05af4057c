//! One JSON document with every table: `{"schema": "rtscope.export/1", "run": [{…}], …}`.
//! Each table is an array of row objects whose keys are the column names, in column order; a
//! null is `null`. Written row by row, so a large table is never held as a JSON value.

use super::table::{Cell, Table};
use std::io::{self, Write};

/// The `schema` value; it changes (`/2`, …) on any incompatible change.
pub const SCHEMA: &str = "rtscope.export/1";

fn string(w: &mut dyn Write, s: &str) -> io::Result<()> {
    serde_json::to_writer(&mut *w, s).map_err(io::Error::from)
}

fn write_cell(w: &mut dyn Write, cell: Cell<'_>) -> io::Result<()> {
    match cell {
        Cell::Null => w.write_all(b"null"),
        Cell::Int(v) => write!(w, "{v}"),
        // serde_json writes the shortest round-trip form (`5073.25`, `12.0`); NaN and the
        // infinities, which JSON lacks, as null.
        Cell::Float(v) => serde_json::to_writer(&mut *w, &v).map_err(io::Error::from),
        Cell::Text(s) => string(w, s),
    }
}

fn write_table(w: &mut dyn Write, t: &Table) -> io::Result<()> {
    w.write_all(b",\n  ")?;
    string(w, t.name)?;
    w.write_all(b": [")?;
    write_rows(w, t, true)?;
    w.write_all(if t.rows() == 0 { b"]" } else { b"\n  ]" })
}

/// Writes the rows of `t` as array elements; `first`: no comma before the first one.
fn write_rows(w: &mut dyn Write, t: &Table, first: bool) -> io::Result<()> {
    for row in 0..t.rows() {
        w.write_all(if row == 0 && first {
            b"\n    {"
        } else {
            b",\n    {"
        })?;
        for (i, c) in t.columns.iter().enumerate() {
            if i > 0 {
                w.write_all(b", ")?;
            }
            string(w, &c.name)?;
            w.write_all(b": ")?;
            write_cell(w, c.values.cell(row))?;
        }
        w.write_all(b"}")?;
    }
    Ok(())
}

/// Where the parts of a streamed table go, one at a time.
pub type PartSink<'a> = dyn FnMut(&Table) -> io::Result<()> + 'a;

/// Writes the document like [`write`], the table named `streamed` taking its rows from
/// `parts` (called with a sink for each further part) instead of from its (empty) table.
pub fn write_streamed(
    w: &mut dyn Write,
    tables: &[Table],
    streamed: &str,
    parts: &mut dyn FnMut(&mut PartSink<'_>) -> io::Result<()>,
) -> io::Result<()> {
    w.write_all(b"{\n  \"schema\": ")?;
    string(w, SCHEMA)?;
    for t in tables {
        if t.name != streamed {
            write_table(w, t)?;
            continue;
        }
        w.write_all(b",\n  ")?;
        string(w, t.name)?;
        w.write_all(b": [")?;
        let mut any = false;
        parts(&mut |part: &Table| {
            write_rows(w, part, !any)?;
            any |= part.rows() > 0;
            Ok(())
        })?;
        w.write_all(if any { b"\n  ]" } else { b"]" })?;
    }
    w.write_all(b"\n}\n")
}

/// Writes all `tables` as one JSON document.
pub fn write(w: &mut dyn Write, tables: &[Table]) -> io::Result<()> {
    w.write_all(b"{\n  \"schema\": ")?;
    string(w, SCHEMA)?;
    for t in tables {
        write_table(w, t)?;
    }
    w.write_all(b"\n}\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    #[test]
    fn document_has_schema_and_tables_as_arrays_of_objects() {
        let a = Table::new("run")
            .int("run_id", [3])
            .opt_text("label", [Some("a \"q\"\n".into())]);
        let b = Table::new("series")
            .int("samples", [1, 2])
            .opt_float("mean_ns", [Some(1.5), Some(f64::NAN)]);
        let e = Table::new("events").int("cycle", []);
        let mut buf = Vec::new();
        write(&mut buf, &[a, b, e]).unwrap();
        let text = String::from_utf8(buf).unwrap();
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            v,
            json!({
                "schema": "rtscope.export/1",
                "run": [{"run_id": 3, "label": "a \"q\"\n"}],
                "series": [{"samples": 1, "mean_ns": 1.5}, {"samples": 2, "mean_ns": null}],
                "events": [],
            })
        );
        // Keys stay in column order.
        assert!(text.find("\"samples\"").unwrap() < text.find("\"mean_ns\"").unwrap());
    }
}
