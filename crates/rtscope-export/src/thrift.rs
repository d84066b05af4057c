//! The part of the Thrift compact protocol that Parquet's page headers and footer need:
//! structs of i32, i64, binary, struct and list fields.
//!
//! Reference: <https://github.com/apache/thrift/blob/master/doc/specs/thrift-compact-protocol.md>

/// Compact-protocol type codes.
pub mod ty {
    /// 32-bit integer.
    pub const I32: u8 = 5;
    /// 64-bit integer.
    pub const I64: u8 = 6;
    /// Binary or string.
    pub const BINARY: u8 = 8;
    /// List.
    pub const LIST: u8 = 9;
    /// Struct (and union).
    pub const STRUCT: u8 = 12;
}

const STOP: u8 = 0;

/// A struct being encoded. [`Compact::finish`] ends it and returns the bytes.
#[derive(Debug, Default)]
pub struct Compact {
    buf: Vec<u8>,
    last_id: i16,
}

/// ZigZag: small negative and positive numbers both become small unsigned ones.
pub fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

/// Unsigned LEB128.
pub fn varint(buf: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        buf.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    buf.push(v as u8);
}

impl Compact {
    /// An empty top-level struct.
    pub fn new() -> Compact {
        Compact::default()
    }

    /// Ends the top-level struct.
    pub fn finish(mut self) -> Vec<u8> {
        self.buf.push(STOP);
        self.buf
    }

    /// A field header: the id as a delta from the previous field's where it fits in 4 bits.
    fn field(&mut self, id: i16, t: u8) {
        let delta = i32::from(id) - i32::from(self.last_id);
        if (1..=15).contains(&delta) {
            self.buf.push(((delta as u8) << 4) | t);
        } else {
            self.buf.push(t);
            varint(&mut self.buf, zigzag(i64::from(id)));
        }
        self.last_id = id;
    }

    fn list_header(&mut self, elem: u8, len: usize) {
        if len < 15 {
            self.buf.push(((len as u8) << 4) | elem);
        } else {
            self.buf.push(0xf0 | elem);
            varint(&mut self.buf, len as u64);
        }
    }

    fn bytes(&mut self, b: &[u8]) {
        varint(&mut self.buf, b.len() as u64);
        self.buf.extend_from_slice(b);
    }

    /// The fields `body` writes, then STOP; field ids restart inside.
    fn nested(&mut self, body: impl FnOnce(&mut Compact)) {
        let outer = std::mem::replace(&mut self.last_id, 0);
        body(self);
        self.buf.push(STOP);
        self.last_id = outer;
    }

    /// An i32 field.
    pub fn i32(&mut self, id: i16, v: i32) {
        self.field(id, ty::I32);
        varint(&mut self.buf, zigzag(i64::from(v)));
    }

    /// An i64 field.
    pub fn i64(&mut self, id: i16, v: i64) {
        self.field(id, ty::I64);
        varint(&mut self.buf, zigzag(v));
    }

    /// A string (binary) field.
    pub fn string(&mut self, id: i16, s: &str) {
        self.field(id, ty::BINARY);
        self.bytes(s.as_bytes());
    }

    /// A struct field (also a union: a struct with one field set).
    pub fn strukt(&mut self, id: i16, body: impl FnOnce(&mut Compact)) {
        self.field(id, ty::STRUCT);
        self.nested(body);
    }

    /// A list<i32> field (also list<enum>).
    pub fn i32_list(&mut self, id: i16, items: &[i32]) {
        self.field(id, ty::LIST);
        self.list_header(ty::I32, items.len());
        for &v in items {
            varint(&mut self.buf, zigzag(i64::from(v)));
        }
    }

    /// A list<string> field.
    pub fn string_list(&mut self, id: i16, items: &[&str]) {
        self.field(id, ty::LIST);
        self.list_header(ty::BINARY, items.len());
        for s in items {
            self.bytes(s.as_bytes());
        }
    }

    /// A list<struct> field, `body` writing the fields of each element.
    pub fn struct_list<T>(&mut self, id: i16, items: &[T], mut body: impl FnMut(&mut Compact, &T)) {
        self.field(id, ty::LIST);
        self.list_header(ty::STRUCT, items.len());
        for item in items {
            self.nested(|c| body(c, item));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zigzag_and_varint() {
        assert_eq!(zigzag(0), 0);
        assert_eq!(zigzag(-1), 1);
        assert_eq!(zigzag(1), 2);
        assert_eq!(zigzag(i64::MIN), u64::MAX);
        let mut b = Vec::new();
        varint(&mut b, 300);
        assert_eq!(b, [0xac, 0x02]);
    }

    #[test]
    fn fields_use_short_headers_for_small_deltas_and_long_ones_otherwise() {
        let mut c = Compact::new();
        c.i32(1, 1); // delta 1: 0x15
        c.i64(3, -2); // delta 2: 0x26
        c.string(20, "ab"); // delta 17: long form, id 20 zigzag 40
        c.i32(2, 0); // going back: long form
        assert_eq!(
            c.finish(),
            [0x15, 0x02, 0x26, 0x03, 0x08, 40, 0x02, b'a', b'b', 0x05, 0x04, 0x00, 0x00]
        );
    }

    #[test]
    fn nested_structs_restart_field_ids_and_lists_carry_sizes() {
        let mut c = Compact::new();
        c.i32(1, 0);
        c.strukt(2, |c| c.i32(1, 7));
        c.i32(3, 0); // delta from 2, not from the inner 1
        c.i32_list(4, &[0, 3]);
        c.struct_list(5, &[(); 15], |_, _| {});
        let mut want = vec![0x15, 0x00, 0x1c, 0x15, 0x0e, 0x00, 0x15, 0x00];
        want.extend([0x19, 0x25, 0x00, 0x06]);
        want.extend([0x19, 0xfc, 15]);
        want.extend([0x00; 15]);
        want.push(0x00);
        assert_eq!(c.finish(), want);
    }
}
