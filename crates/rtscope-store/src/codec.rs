//! The histogram BLOB: the non-empty buckets of rtscope's log-linear layout as LEB128 varints,
//! `[version=1] [min_ns] [max_ns] [pairs] (index delta, count)*`. A few hundred bytes for a
//! typical run, lossless.

use rtscope_core::{Histogram, Nanos};

fn put(out: &mut Vec<u8>, mut v: u64) {
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

fn get(data: &[u8], at: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let b = *data.get(*at)?;
        *at += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

/// Encodes a histogram.
pub fn encode(h: &Histogram) -> Vec<u8> {
    let mut out = vec![1u8];
    put(&mut out, h.min().map_or(0, |n| n.0));
    put(&mut out, h.max().map_or(0, |n| n.0));
    let pairs: Vec<(usize, u64)> = h.nonzero().collect();
    put(&mut out, pairs.len() as u64);
    let mut last = 0usize;
    for (i, c) in pairs {
        put(&mut out, (i - last) as u64);
        put(&mut out, c);
        last = i;
    }
    out
}

/// Decodes a histogram; `None` when the bytes are not a valid encoding.
pub fn decode(data: &[u8]) -> Option<Histogram> {
    if data.first() != Some(&1) {
        return None;
    }
    let mut at = 1;
    let min = get(data, &mut at)?;
    let max = get(data, &mut at)?;
    let n = get(data, &mut at)?;
    if n > data.len() as u64 {
        return None;
    }
    let mut pairs = Vec::with_capacity(n as usize);
    let mut idx = 0u64;
    for _ in 0..n {
        idx = idx.checked_add(get(data, &mut at)?)?;
        pairs.push((usize::try_from(idx).ok()?, get(data, &mut at)?));
    }
    (at == data.len()).then(|| Histogram::from_sparse(pairs, Nanos(min), Nanos(max)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_rejects_garbage() {
        let mut h = Histogram::new();
        for v in [5u64, 5, 900, 12_345, 7_000_000, 60_000_000_000] {
            h.record(Nanos(v));
        }
        let bytes = encode(&h);
        assert_eq!(decode(&bytes), Some(h));
        assert_eq!(
            decode(&encode(&Histogram::new())).map(|h| h.count()),
            Some(0)
        );
        for bad in [&[][..], &[2, 0], &[1, 0x80], &bytes[..bytes.len() - 1]] {
            assert_eq!(decode(bad), None, "{bad:?}");
        }
    }
}
