//! Parquet's DELTA_BINARY_PACKED encoding of INT64 values: the differences between
//! consecutive values, less their minimum per block, bit-packed at the width the largest of
//! each miniblock needs. A run's cycles (delta 1), run ids and thread numbers (delta 0) cost
//! nothing beyond the block headers; wake-up offsets (one interval plus the latency change)
//! and latencies cost the bits their noise needs: about 2–3 bytes per value on a noisy run,
//! against 8 for PLAIN.
//!
//! Layout (Encodings.md in <https://github.com/apache/parquet-format>): a header `<block size
//! in values> <miniblocks per block> <value count> <zigzag first value>` (ULEB128), then per
//! block of 128 deltas `<zigzag min delta>`, one bit-width byte per miniblock of 32 deltas and
//! the miniblocks, each packed least-significant bit first. A last, partial miniblock is
//! padded with zeros; the miniblocks a last block does not need are absent, their widths 0.

use super::thrift::{varint, zigzag};

/// Deltas per block.
const BLOCK: usize = 128;
/// Miniblocks per block.
const MINIBLOCKS: usize = 4;
/// Deltas per miniblock.
const MINI: usize = BLOCK / MINIBLOCKS;

/// Bits needed for `v` (0 for 0).
fn width(v: u64) -> u8 {
    (64 - v.leading_zeros()) as u8
}

/// Appends `values` (zero-padded to a whole miniblock) bit-packed at `bits` each.
fn pack(out: &mut Vec<u8>, values: &[u64], bits: u8) {
    if bits == 0 {
        return;
    }
    let mut acc: u128 = 0;
    let mut filled = 0u32;
    for i in 0..MINI {
        let v = values.get(i).copied().unwrap_or(0);
        acc |= u128::from(v) << filled;
        filled += u32::from(bits);
        while filled >= 8 {
            out.push(acc as u8);
            acc >>= 8;
            filled -= 8;
        }
    }
    // MINI × bits is a multiple of 8: nothing is left over.
    debug_assert_eq!(filled, 0);
}

/// One block of at most [`BLOCK`] deltas.
fn block(out: &mut Vec<u8>, deltas: &[i64]) {
    let min = deltas.iter().copied().min().unwrap_or(0);
    varint(out, zigzag(min));
    let shifted: Vec<u64> = deltas.iter().map(|d| d.wrapping_sub(min) as u64).collect();
    let minis: Vec<&[u64]> = shifted.chunks(MINI).collect();
    let widths: Vec<u8> = minis
        .iter()
        .map(|m| m.iter().copied().map(width).max().unwrap_or(0))
        .collect();
    for i in 0..MINIBLOCKS {
        out.push(widths.get(i).copied().unwrap_or(0));
    }
    for (m, &bits) in minis.iter().zip(&widths) {
        pack(out, m, bits);
    }
}

/// The DELTA_BINARY_PACKED encoding of `values`.
pub fn encode(values: &[i64]) -> Vec<u8> {
    let mut out = Vec::with_capacity(16 + values.len() * 3);
    varint(&mut out, BLOCK as u64);
    varint(&mut out, MINIBLOCKS as u64);
    varint(&mut out, values.len() as u64);
    varint(&mut out, zigzag(values.first().copied().unwrap_or(0)));
    let deltas: Vec<i64> = values.windows(2).map(|w| w[1].wrapping_sub(w[0])).collect();
    for b in deltas.chunks(BLOCK) {
        block(&mut out, b);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constant_steps_cost_only_the_headers() {
        // 1, 2, 3, 4, 5: block 128 (0x80 0x01), 4 miniblocks, 5 values, first zigzag(1) = 2;
        // one block: min delta zigzag(1) = 2, widths 0 0 0 0, no packed bytes.
        assert_eq!(
            encode(&[1, 2, 3, 4, 5]),
            [0x80, 0x01, 4, 5, 2, 2, 0, 0, 0, 0]
        );
        assert_eq!(encode(&[7]), [0x80, 0x01, 4, 1, 14]);
        assert_eq!(encode(&[]), [0x80, 0x01, 4, 0, 0]);
    }

    #[test]
    fn miniblocks_are_packed_lsb_first_and_padded() {
        // Deltas -1, 2, 0: min -1 (zigzag 1), shifted 0, 3, 1 at 2 bits: 0b01_11_00 in the
        // first byte, then zero padding to 32 values × 2 bits = 8 bytes.
        let e = encode(&[10, 9, 11, 11]);
        let mut want = vec![0x80, 0x01, 4, 4, 20, 1, 2, 0, 0, 0, 0b0001_1100];
        want.extend([0; 7]);
        assert_eq!(e, want);
    }

    #[test]
    fn extreme_deltas_take_64_bits() {
        let e = encode(&[i64::MIN, i64::MAX, i64::MIN]);
        // Deltas -1 and 1 (wrapping): min -1, shifted 0 and 2 at 2 bits.
        assert_eq!(
            &e[..10],
            [0x80, 0x01, 4, 3, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]
        );
        let wide = encode(&[0, i64::MAX, 0]);
        // Deltas MAX and -MAX: their range needs all 64 bits: 32 × 8 bytes packed.
        let body = &wide[wide.len() - 32 * 8 - 4..];
        assert_eq!(body[..4], [64, 0, 0, 0]);
    }

    #[test]
    fn blocks_split_every_128_deltas() {
        let v: Vec<i64> = (0..300).map(|i| i * 3).collect();
        // 299 deltas: 3 blocks, each min 3 (zigzag 6) and four zero widths.
        let e = encode(&v);
        assert_eq!(&e[..5], [0x80, 0x01, 4, 0xac, 0x02]);
        assert_eq!(&e[5..], [0, 6, 0, 0, 0, 0, 6, 0, 0, 0, 0, 6, 0, 0, 0, 0]);
    }
}
