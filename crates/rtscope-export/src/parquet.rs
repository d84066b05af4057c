//! A small Parquet writer: one table per file, in one or more row groups (streamed: see
//! [`Writer`]), uncompressed v1 data pages with
//! DELTA_BINARY_PACKED integers (see [`super::delta`]), PLAIN floats, text PLAIN or — where it
//! repeats — RLE_DICTIONARY after a dictionary page (see [`super::dict`]), RLE definition
//! levels for nullable columns, and the footer (`FileMetaData`) in the Thrift compact protocol.
//!
//! No compression codec: on the `samples` table, which is nearly all of a `--raw` run's bytes,
//! the delta encoding leaves only the latency noise, bit-packed: 4.65 B per sample on a noisy
//! run against 40 PLAIN. pyarrow's snappy and zstd on top of the same delta encoding took 1.3 %
//! more off (BENCHMARKS.md, "Export and raw-sample sizes"): not worth a codec crate.
//!
//! Column types: integers INT64, floats DOUBLE, text BYTE_ARRAY annotated STRING (logical
//! type) and UTF8 (converted type, for older readers); a nullable column is OPTIONAL, the
//! others REQUIRED. A file is `PAR1`, the column chunks, the footer, the footer's length
//! (4 bytes, little-endian) and `PAR1` again.
//!
//! Reference: <https://github.com/apache/parquet-format> (README.md, Encodings.md,
//! src/main/thrift/parquet.thrift); the field ids below are that file's.

use super::dict::Dictionary;
use super::table::{Cell, Column, Table, Values};
use super::thrift::Compact;
use std::io::{self, Write};

/// The first and last four bytes of a Parquet file.
pub const MAGIC: &[u8; 4] = b"PAR1";

/// Values per data page: bounds the memory a page takes while written and keeps page sizes
/// far below the format's 2 GiB limit.
const PAGE_ROWS: usize = 1 << 20;

// parquet.thrift enums.
const TYPE_INT64: i32 = 2;
const TYPE_DOUBLE: i32 = 5;
const TYPE_BYTE_ARRAY: i32 = 6;
const REQUIRED: i32 = 0;
const OPTIONAL: i32 = 1;
const CONVERTED_UTF8: i32 = 0;
const ENCODING_PLAIN: i32 = 0;
const ENCODING_RLE: i32 = 3;
const ENCODING_DELTA_BINARY_PACKED: i32 = 5;
const ENCODING_RLE_DICTIONARY: i32 = 8;
const CODEC_UNCOMPRESSED: i32 = 0;
const PAGE_DATA: i32 = 0;
const PAGE_DICTIONARY: i32 = 2;

/// Where a written column chunk lies.
#[derive(Debug, Clone, Copy)]
struct Chunk {
    /// Offset of its first page header (the dictionary page's, if any).
    offset: i64,
    /// Offset of its first data page header.
    data_offset: i64,
    /// Whether a dictionary page comes first and the data pages hold indices into it.
    dictionary: bool,
    /// Bytes, page headers included.
    size: i64,
}

/// Counts the bytes written, for the offsets the footer records.
struct Counting<'a> {
    inner: &'a mut dyn Write,
    pos: u64,
}

impl Counting<'_> {
    fn put(&mut self, b: &[u8]) -> io::Result<()> {
        self.inner.write_all(b)?;
        self.pos += b.len() as u64;
        Ok(())
    }
}

fn physical_type(v: &Values) -> i32 {
    match v {
        Values::Int(_) => TYPE_INT64,
        Values::Float(_) => TYPE_DOUBLE,
        Values::Text(_) => TYPE_BYTE_ARRAY,
    }
}

fn too_large(what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("{what} too large for Parquet"),
    )
}

fn rle_run(out: &mut Vec<u8>, (level, len): (bool, u64)) {
    super::thrift::varint(out, len << 1);
    out.push(u8::from(level));
}

/// Definition levels (1 = a value, 0 = null) in the RLE/bit-packing hybrid at bit width 1,
/// as RLE runs only: a ULEB128 header `run_length << 1`, then the level in one byte.
pub fn definition_levels(defined: impl Iterator<Item = bool>) -> Vec<u8> {
    let mut out = Vec::new();
    let mut run: Option<(bool, u64)> = None;
    for d in defined {
        run = match run {
            Some((level, len)) if level == d => Some((level, len + 1)),
            Some(done) => {
                rle_run(&mut out, done);
                Some((d, 1))
            }
            None => Some((d, 1)),
        };
    }
    if let Some(done) = run {
        rle_run(&mut out, done);
    }
    out
}

/// The encoding of the values of a column: DELTA_BINARY_PACKED integers, PLAIN others.
fn encoding(v: &Values) -> i32 {
    match v {
        Values::Int(_) => ENCODING_DELTA_BINARY_PACKED,
        Values::Float(_) | Values::Text(_) => ENCODING_PLAIN,
    }
}

/// The non-null values of `rows` in the column's [`encoding`].
fn encoded_values(v: &Values, rows: std::ops::Range<usize>) -> io::Result<Vec<u8>> {
    match v {
        Values::Int(v) => {
            let ints: Vec<i64> = v[rows].iter().flatten().copied().collect();
            Ok(super::delta::encode(&ints))
        }
        Values::Float(_) | Values::Text(_) => plain_values(v, rows),
    }
}

/// The PLAIN encoding of the non-null values of `rows`.
fn plain_values(v: &Values, rows: std::ops::Range<usize>) -> io::Result<Vec<u8>> {
    let mut out = Vec::new();
    match v {
        Values::Int(v) => v[rows].iter().flatten().for_each(|x| {
            out.extend_from_slice(&x.to_le_bytes());
        }),
        Values::Float(v) => v[rows].iter().flatten().for_each(|x| {
            out.extend_from_slice(&x.to_le_bytes());
        }),
        Values::Text(v) => {
            for s in v[rows].iter().flatten() {
                let len = u32::try_from(s.len()).map_err(|_| too_large("a text value"))?;
                out.extend_from_slice(&len.to_le_bytes());
                out.extend_from_slice(s.as_bytes());
            }
        }
    }
    Ok(out)
}

/// A v1 data page's body: definition levels (nullable columns only, with their byte length
/// in front), then the values, or their indices into `dict`.
fn page_body(
    c: &Column,
    rows: std::ops::Range<usize>,
    dict: Option<&Dictionary<'_>>,
) -> io::Result<Vec<u8>> {
    let mut body = Vec::new();
    if c.nullable {
        let levels = definition_levels(rows.clone().map(|r| c.values.cell(r) != Cell::Null));
        let len = u32::try_from(levels.len()).map_err(|_| too_large("a page"))?;
        body.extend_from_slice(&len.to_le_bytes());
        body.extend_from_slice(&levels);
    }
    match (dict, &c.values) {
        (Some(d), Values::Text(v)) => body.extend_from_slice(&d.indices(&v[rows])),
        _ => body.extend_from_slice(&encoded_values(&c.values, rows)?),
    }
    Ok(body)
}

fn page_header(values: usize, body: usize, encoding: i32) -> io::Result<Vec<u8>> {
    let size = i32::try_from(body).map_err(|_| too_large("a page"))?;
    let values = i32::try_from(values).map_err(|_| too_large("a page"))?;
    let mut h = Compact::new();
    h.i32(1, PAGE_DATA);
    h.i32(2, size); // uncompressed_page_size
    h.i32(3, size); // compressed_page_size
    h.strukt(5, |d| {
        d.i32(1, values); // num_values, nulls included
        d.i32(2, encoding);
        d.i32(3, ENCODING_RLE); // definition levels
        d.i32(4, ENCODING_RLE); // repetition levels (none: the schema is flat)
    });
    Ok(h.finish())
}

/// The header of a dictionary page of `entries` values, PLAIN, in `body` bytes.
fn dictionary_page_header(entries: usize, body: usize) -> io::Result<Vec<u8>> {
    let size = i32::try_from(body).map_err(|_| too_large("a dictionary page"))?;
    let entries = i32::try_from(entries).map_err(|_| too_large("a dictionary page"))?;
    let mut h = Compact::new();
    h.i32(1, PAGE_DICTIONARY);
    h.i32(2, size); // uncompressed_page_size
    h.i32(3, size); // compressed_page_size
    h.strukt(7, |d| {
        d.i32(1, entries); // num_values
        d.i32(2, ENCODING_PLAIN);
    });
    Ok(h.finish())
}

/// The encoding of `c`'s data pages.
fn page_encoding(c: &Column, dict: bool) -> i32 {
    if dict {
        ENCODING_RLE_DICTIONARY
    } else {
        encoding(&c.values)
    }
}

/// Writes column `c` of a `rows`-row table as one chunk: a dictionary page for text that
/// repeats (see [`Dictionary::worth`]), then data pages.
fn write_chunk(
    w: &mut Counting<'_>,
    c: &Column,
    rows: usize,
    page_rows: usize,
) -> io::Result<Chunk> {
    let offset = w.pos;
    let dict = match &c.values {
        Values::Text(v) => Dictionary::worth(&v[..rows]),
        Values::Int(_) | Values::Float(_) => None,
    };
    if let Some(d) = &dict {
        let body = d.page();
        w.put(&dictionary_page_header(d.len(), body.len())?)?;
        w.put(&body)?;
    }
    let data_offset = w.pos;
    let mut start = 0;
    while start < rows {
        let end = rows.min(start + page_rows);
        let body = page_body(c, start..end, dict.as_ref())?;
        w.put(&page_header(
            end - start,
            body.len(),
            page_encoding(c, dict.is_some()),
        )?)?;
        w.put(&body)?;
        start = end;
    }
    let as_i64 = |v: u64| i64::try_from(v).map_err(|_| too_large("a file"));
    Ok(Chunk {
        offset: as_i64(offset)?,
        data_offset: as_i64(data_offset)?,
        dictionary: dict.is_some(),
        size: as_i64(w.pos - offset)?,
    })
}

fn schema_element(s: &mut Compact, c: &Column) {
    s.i32(1, physical_type(&c.values));
    s.i32(3, if c.nullable { OPTIONAL } else { REQUIRED });
    s.string(4, &c.name);
    if matches!(c.values, Values::Text(_)) {
        s.i32(6, CONVERTED_UTF8);
        s.strukt(10, |l| l.strukt(1, |_| {})); // LogicalType { STRING: StringType {} }
    }
}

fn column_chunk(cc: &mut Compact, c: &Column, chunk: Chunk, rows: i64) {
    cc.i64(2, chunk.offset); // file_offset (deprecated; the chunk's start)
    cc.strukt(3, |m| {
        m.i32(1, physical_type(&c.values));
        if chunk.dictionary {
            m.i32_list(2, &[ENCODING_PLAIN, ENCODING_RLE_DICTIONARY, ENCODING_RLE]);
        } else {
            m.i32_list(2, &[encoding(&c.values), ENCODING_RLE]);
        }
        m.string_list(3, &[&c.name]);
        m.i32(4, CODEC_UNCOMPRESSED);
        m.i64(5, rows); // num_values
        m.i64(6, chunk.size); // total_uncompressed_size
        m.i64(7, chunk.size); // total_compressed_size
        m.i64(9, chunk.data_offset); // data_page_offset
        if chunk.dictionary {
            m.i64(11, chunk.offset); // dictionary_page_offset
        }
    });
}

/// The schema of `t`: its columns without their values.
fn schema_of(t: &Table) -> Vec<Column> {
    let empty = |v: &Values| match v {
        Values::Int(_) => Values::Int(Vec::new()),
        Values::Float(_) => Values::Float(Vec::new()),
        Values::Text(_) => Values::Text(Vec::new()),
    };
    t.columns
        .iter()
        .map(|c| Column {
            name: c.name.clone(),
            nullable: c.nullable,
            values: empty(&c.values),
        })
        .collect()
}

/// One written row group: its column chunks and row count.
struct Group {
    chunks: Vec<Chunk>,
    rows: i64,
}

/// The footer: schema, the row groups (none for an empty table), key/value metadata.
fn file_metadata(columns: &[Column], groups: &[Group], created_by: &str, schema: &str) -> Vec<u8> {
    let mut f = Compact::new();
    f.i32(1, 1); // version
    let leaves: Vec<Option<&Column>> = std::iter::once(None)
        .chain(columns.iter().map(Some))
        .collect();
    f.struct_list(2, &leaves, |s, c| match c {
        Some(c) => schema_element(s, c),
        None => {
            s.string(4, "schema");
            s.i32(5, columns.len() as i32); // num_children
        }
    });
    f.i64(3, groups.iter().map(|g| g.rows).sum());
    f.struct_list(4, groups, |g, group| {
        let cols: Vec<(&Column, Chunk)> =
            columns.iter().zip(group.chunks.iter().copied()).collect();
        g.struct_list(1, &cols, |cc, (c, chunk)| {
            column_chunk(cc, c, *chunk, group.rows)
        });
        g.i64(2, group.chunks.iter().map(|c| c.size).sum()); // total_byte_size
        g.i64(3, group.rows);
    });
    f.struct_list(5, &[("rtscope.schema", schema)], |kv, (k, v)| {
        kv.string(1, k);
        kv.string(2, v);
    });
    f.string(6, created_by);
    f.finish()
}

/// A Parquet file written one row group at a time, so that a table of any size is never
/// whole in memory: [`Writer::row_group`] writes a part's column chunks at once and keeps only
/// their offsets (a few dozen bytes per column) for the footer that [`Writer::finish`] writes.
pub struct Writer<'a> {
    w: Counting<'a>,
    columns: Vec<Column>,
    groups: Vec<Group>,
    created_by: String,
    schema: String,
    page_rows: usize,
}

impl<'a> Writer<'a> {
    /// Starts a file whose schema is `template`'s columns (its rows are not written).
    /// `created_by` names the writer (`rtscope version 0.1.0`); `schema` is stored as the
    /// key/value metadata `rtscope.schema`.
    pub fn new(
        w: &'a mut dyn Write,
        template: &Table,
        created_by: &str,
        schema: &str,
    ) -> io::Result<Writer<'a>> {
        let mut w = Counting { inner: w, pos: 0 };
        w.put(MAGIC)?;
        Ok(Writer {
            w,
            columns: schema_of(template),
            groups: Vec::new(),
            created_by: created_by.to_string(),
            schema: schema.to_string(),
            page_rows: PAGE_ROWS,
        })
    }

    /// Writes the rows of `part` as one row group (nothing for an empty part). Its columns
    /// must be the template's: same names, types and nullability, in the same order.
    pub fn row_group(&mut self, part: &Table) -> io::Result<()> {
        if schema_of(part) != self.columns {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "a part of table {} has other columns than its schema",
                    part.name
                ),
            ));
        }
        let rows = part.rows();
        if rows == 0 {
            return Ok(());
        }
        let chunks = part
            .columns
            .iter()
            .map(|c| write_chunk(&mut self.w, c, rows, self.page_rows))
            .collect::<io::Result<Vec<Chunk>>>()?;
        let rows = i64::try_from(rows).map_err(|_| too_large("a row group"))?;
        self.groups.push(Group { chunks, rows });
        Ok(())
    }

    /// Rows written so far.
    pub fn rows(&self) -> u64 {
        self.groups.iter().map(|g| g.rows as u64).sum()
    }

    /// Writes the footer and the closing magic.
    pub fn finish(mut self) -> io::Result<()> {
        let footer = file_metadata(&self.columns, &self.groups, &self.created_by, &self.schema);
        self.w.put(&footer)?;
        let len = u32::try_from(footer.len()).map_err(|_| too_large("the footer"))?;
        self.w.put(&len.to_le_bytes())?;
        self.w.put(MAGIC)
    }
}

/// Writes `t` as a Parquet file of one row group. `created_by` names the writer
/// (`rtscope version 0.1.0`); `schema` is stored as the key/value metadata `rtscope.schema`.
pub fn write(w: &mut dyn Write, t: &Table, created_by: &str, schema: &str) -> io::Result<()> {
    write_paged(w, t, created_by, schema, PAGE_ROWS)
}

fn write_paged(
    w: &mut dyn Write,
    t: &Table,
    created_by: &str,
    schema: &str,
    page_rows: usize,
) -> io::Result<()> {
    let mut pw = Writer::new(w, t, created_by, schema)?;
    pw.page_rows = page_rows;
    pw.row_group(t)?;
    pw.finish()
}

#[cfg(test)]
mod tests {
    use super::super::delta;
    use super::*;

    fn table() -> Table {
        Table::new("t")
            .int("thread", [0, 1, 2, 3, 4])
            .opt_float("mean_ns", [Some(1.5), None, None, Some(2.0), Some(3.0)])
            .opt_text(
                "label",
                [Some("a".into()), None, Some("é".into()), None, None],
            )
    }

    fn file(t: &Table, page_rows: usize) -> Vec<u8> {
        let mut buf = Vec::new();
        write_paged(
            &mut buf,
            t,
            "rtscope version 0",
            "rtscope.export/1",
            page_rows,
        )
        .unwrap();
        buf
    }

    /// The footer, checked against the length stored before the final magic.
    fn footer(f: &[u8]) -> &[u8] {
        assert_eq!(&f[..4], MAGIC);
        assert_eq!(&f[f.len() - 4..], MAGIC);
        let len = u32::from_le_bytes(f[f.len() - 8..f.len() - 4].try_into().unwrap()) as usize;
        assert!(len + 12 <= f.len(), "footer length {len} exceeds the file");
        &f[f.len() - 8 - len..f.len() - 8]
    }

    fn contains(hay: &[u8], needle: &[u8]) -> bool {
        hay.windows(needle.len()).any(|w| w == needle)
    }

    #[test]
    fn file_has_magic_at_both_ends_and_a_footer_of_the_stated_length() {
        let f = file(&table(), PAGE_ROWS);
        let meta = footer(&f);
        // FileMetaData starts with field 1 (version, i32) = 1 and ends with STOP.
        assert_eq!(&meta[..2], [0x15, 0x02]);
        assert_eq!(meta[meta.len() - 1], 0);
        for name in ["schema", "thread", "mean_ns", "label", "rtscope.export/1"] {
            assert!(contains(meta, name.as_bytes()), "footer lacks {name}");
        }
        // The column chunks fill the space between the leading magic and the footer.
        let data = f.len() - 12 - meta.len();
        assert!(data > 5 * 8 + 3 * 8, "only {data} bytes of column data");
    }

    #[test]
    fn empty_table_has_a_schema_and_no_row_group() {
        let t = Table::new("e").int("cycle", []).text("key", []);
        let f = file(&t, PAGE_ROWS);
        let meta = footer(&f);
        assert_eq!(f.len(), 12 + meta.len(), "no column data");
        assert!(contains(meta, b"cycle") && contains(meta, b"key"));
        // num_rows (field 3, i64) = 0, then row_groups (field 4): an empty list of structs.
        assert!(contains(meta, &[0x16, 0x00, 0x19, 0x0c]));
    }

    #[test]
    fn pages_split_a_column_and_integers_are_delta_encoded() {
        let t = Table::new("t").int("v", [1, 2, 3, 4, 5]);
        let one = file(&t, PAGE_ROWS);
        let three = file(&t, 2);
        let data = |f: &[u8]| f.len() - 12 - footer(f).len();
        assert!(data(&three) > data(&one), "three page headers, not one");
        assert!(contains(&one, &delta::encode(&[1, 2, 3, 4, 5])));
        assert!(contains(&three, &delta::encode(&[3, 4])));
    }

    #[test]
    fn row_groups_are_written_apart_and_the_footer_lists_each() {
        let part = |v: Vec<i64>| Table::new("t").int("v", v);
        let mut buf = Vec::new();
        let mut w = Writer::new(&mut buf, &part(vec![]), "rtscope version 0", "s").unwrap();
        w.row_group(&part(vec![1, 2])).unwrap();
        w.row_group(&part(vec![])).unwrap();
        w.row_group(&part(vec![3, 4, 5])).unwrap();
        assert_eq!(w.rows(), 5);
        w.finish().unwrap();
        let meta = footer(&buf);
        // num_rows (field 3, i64 zigzag 5 = 10), then row_groups: a list of 2 structs.
        assert!(contains(meta, &[0x16, 0x0a, 0x19, 0x2c]), "{meta:x?}");
        // Values of both groups are in the file, in order.
        let (a, b) = (delta::encode(&[1, 2]), delta::encode(&[3, 4, 5]));
        let at = |n: &[u8]| buf.windows(n.len()).position(|w| w == n);
        assert!(at(&a).is_some() && at(&a) < at(&b), "{buf:x?}");
        let other = Table::new("t").opt_int("v", [Some(1)]);
        let mut sink = Vec::new();
        let mut w = Writer::new(&mut sink, &part(vec![]), "x", "s").unwrap();
        let e = w.row_group(&other).unwrap_err();
        assert!(e.to_string().contains("other columns"), "{e}");
    }

    #[test]
    fn definition_levels_are_rle_runs() {
        let levels = definition_levels([true, true, false, true].into_iter());
        assert_eq!(levels, [0x04, 1, 0x02, 0, 0x02, 1]);
        let long = definition_levels(std::iter::repeat_n(true, 300));
        assert_eq!(long, [0xd8, 0x04, 1]);
        assert!(definition_levels(std::iter::empty()).is_empty());
    }

    #[test]
    fn nullable_page_body_has_level_length_levels_then_non_null_values() {
        let t = table();
        let body = page_body(&t.columns[2], 0..5, None).unwrap();
        let levels = definition_levels([true, false, true, false, false].into_iter());
        let mut want = (levels.len() as u32).to_le_bytes().to_vec();
        want.extend(&levels);
        want.extend([1, 0, 0, 0, b'a', 2, 0, 0, 0, 0xc3, 0xa9]);
        assert_eq!(body, want);
    }
}
