//! Parquet's dictionary encoding of a text column chunk: its distinct values once, in a
//! dictionary page (PLAIN), and each value as an index into it (RLE_DICTIONARY: a bit-width
//! byte, then the RLE/bit-packing hybrid, written as RLE runs only). The monitor table's
//! `metric` and `unit` columns repeat a few dozen names over thousands of rows, in runs; a
//! chunk is dictionary-encoded only when that is smaller than PLAIN.
//!
//! Reference: Encodings.md in <https://github.com/apache/parquet-format>.

use super::thrift::varint;
use std::collections::HashMap;

/// The distinct values of a text column chunk, in order of first appearance.
pub struct Dictionary<'a> {
    values: Vec<&'a str>,
    index: HashMap<&'a str, u32>,
}

/// Bits needed for the largest index (at least 1).
fn bit_width(distinct: usize) -> u8 {
    let max = distinct.saturating_sub(1) as u64;
    (64 - max.leading_zeros()).max(1) as u8
}

/// The PLAIN encoding of text values: a 4-byte little-endian length, then the bytes.
fn plain_len<'s>(v: impl Iterator<Item = &'s str>) -> usize {
    v.map(|s| 4 + s.len()).sum()
}

impl<'a> Dictionary<'a> {
    /// The dictionary of `values`, when it and the indices take fewer bytes than PLAIN.
    pub fn worth(values: &'a [Option<String>]) -> Option<Dictionary<'a>> {
        let mut d = Dictionary {
            values: Vec::new(),
            index: HashMap::new(),
        };
        for s in values.iter().flatten() {
            if !d.index.contains_key(s.as_str()) {
                let i = u32::try_from(d.values.len()).ok()?;
                d.index.insert(s, i);
                d.values.push(s);
            }
        }
        let dict = plain_len(d.values.iter().copied()) + d.indices(values).len();
        let plain = plain_len(values.iter().flatten().map(String::as_str));
        (!d.values.is_empty() && dict < plain).then_some(d)
    }

    /// Entries in the dictionary.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether the dictionary is empty (never, for one [`Dictionary::worth`] returns).
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// The dictionary page's body: the values, PLAIN.
    pub fn page(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(plain_len(self.values.iter().copied()));
        for s in &self.values {
            // A value longer than u32::MAX bytes is refused by PLAIN text before this.
            out.extend_from_slice(&(s.len() as u32).to_le_bytes());
            out.extend_from_slice(s.as_bytes());
        }
        out
    }

    /// The RLE_DICTIONARY encoding of the non-null `values` (all of them in the dictionary).
    pub fn indices(&self, values: &[Option<String>]) -> Vec<u8> {
        let width = bit_width(self.values.len());
        let bytes = usize::from(width).div_ceil(8);
        let mut out = vec![width];
        let mut run: Option<(u32, u64)> = None;
        let flush = |out: &mut Vec<u8>, (i, len): (u32, u64)| {
            varint(out, len << 1);
            out.extend_from_slice(&i.to_le_bytes()[..bytes]);
        };
        for s in values.iter().flatten() {
            let i = self.index[s.as_str()];
            run = match run {
                Some((j, len)) if j == i => Some((j, len + 1)),
                Some(done) => {
                    flush(&mut out, done);
                    Some((i, 1))
                }
                None => Some((i, 1)),
            };
        }
        if let Some(done) = run {
            flush(&mut out, done);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(v: &[Option<&str>]) -> Vec<Option<String>> {
        v.iter().map(|s| s.map(String::from)).collect()
    }

    #[test]
    fn repeated_names_are_indices_in_runs() {
        let v = texts(&[
            Some("cpu"),
            Some("cpu"),
            None,
            Some("cpu"),
            Some("irq"),
            Some("cpu"),
        ]);
        let d = Dictionary::worth(&v).expect("smaller than PLAIN");
        assert_eq!(d.len(), 2);
        assert_eq!(
            d.page(),
            [3, 0, 0, 0, b'c', b'p', b'u', 3, 0, 0, 0, b'i', b'r', b'q']
        );
        // Bit width 1; runs (length << 1, then the index in one byte): 3 × 0, 1 × 1, 1 × 0.
        assert_eq!(d.indices(&v), [1, 6, 0, 2, 1, 2, 0]);
    }

    #[test]
    fn indices_take_as_many_bytes_as_their_width_needs() {
        let names: Vec<String> = (0..300).map(|i| format!("metric.{i}")).collect();
        let mut v: Vec<Option<String>> = names.iter().cloned().map(Some).collect();
        v.extend(names.iter().cloned().map(Some));
        let d = Dictionary::worth(&v).expect("300 names twice");
        let idx = d.indices(&v);
        // Width 9: two bytes per run value; index 299 = 0x012b.
        assert_eq!(idx[0], 9);
        assert_eq!(idx.len(), 1 + 600 * 3);
        assert_eq!(idx[idx.len() - 3..], [2, 0x2b, 0x01]);
    }

    #[test]
    fn distinct_or_empty_values_stay_plain() {
        assert!(Dictionary::worth(&texts(&[Some("a"), Some("b"), Some("c")])).is_none());
        assert!(Dictionary::worth(&texts(&[None, None])).is_none());
        assert!(Dictionary::worth(&[]).is_none());
    }
}
