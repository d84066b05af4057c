//! The BLOB encodings, LEB128 varints throughout.
//!
//! * Histograms: the non-empty buckets of rtscope's log-linear layout,
//!   `[1] [min_ns] [max_ns] [pairs] (index delta, count)*`. A few hundred bytes, lossless.
//! * Raw samples: `[2] [interval_ns] [count]`, then the first sample as
//!   `(cycle, latency_ns, offset_ns)`, then per sample `(cycle delta, latency_ns, zigzag(offset −
//!   expected))`, where `expected = previous offset + cycle delta × interval`. On a fixed grid the
//!   last term is the change of latency, so a sample costs about 4–5 bytes, lossless.

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

/// One raw sample: cycle, latency (ns) and wake-up time from the run's start (ns).
pub type RawSample = (u64, u64, u64);

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// Encodes a chunk of raw samples of one thread (cycles ascending) with its interval (ns).
pub fn encode_samples(samples: &[RawSample], interval_ns: u64) -> Vec<u8> {
    let mut out = vec![2u8];
    put(&mut out, interval_ns);
    put(&mut out, samples.len() as u64);
    let mut prev: Option<RawSample> = None;
    for &(cycle, latency, offset) in samples {
        match prev {
            None => {
                put(&mut out, cycle);
                put(&mut out, latency);
                put(&mut out, offset);
            }
            Some((pc, _, po)) => {
                let delta = cycle.wrapping_sub(pc);
                let expected = po.wrapping_add(delta.wrapping_mul(interval_ns));
                put(&mut out, delta);
                put(&mut out, latency);
                put(&mut out, zigzag(offset.wrapping_sub(expected) as i64));
            }
        }
        prev = Some((cycle, latency, offset));
    }
    out
}

/// Decodes a chunk of raw samples; `None` when the bytes are not a valid encoding.
pub fn decode_samples(data: &[u8]) -> Option<Vec<RawSample>> {
    if data.first() != Some(&2) {
        return None;
    }
    let mut at = 1;
    let interval = get(data, &mut at)?;
    let n = get(data, &mut at)?;
    if n > data.len() as u64 {
        return None;
    }
    let mut out: Vec<RawSample> = Vec::with_capacity(n as usize);
    for _ in 0..n {
        let a = get(data, &mut at)?;
        let latency = get(data, &mut at)?;
        let c = get(data, &mut at)?;
        let s = match out.last() {
            None => (a, latency, c),
            Some(&(pc, _, po)) => {
                let expected = po.wrapping_add(a.wrapping_mul(interval));
                (
                    pc.wrapping_add(a),
                    latency,
                    expected.wrapping_add(unzigzag(c) as u64),
                )
            }
        };
        out.push(s);
    }
    (at == data.len()).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_samples_round_trip_in_about_four_bytes_each() {
        let interval = 200_000u64;
        let mut samples = Vec::new();
        for c in 0..10_000u64 {
            let latency = 4_000 + (c * 7919) % 3_000;
            samples.push((c, latency, 1_000 + c * interval + latency));
        }
        samples.push((10_001, 5_000, samples.last().unwrap().2)); // a missed period: same wake-up
        let bytes = encode_samples(&samples, interval);
        assert_eq!(decode_samples(&bytes).as_deref(), Some(&samples[..]));
        assert!(
            bytes.len() < samples.len() * 6,
            "{} bytes for {} samples",
            bytes.len(),
            samples.len()
        );
        assert_eq!(decode_samples(&bytes[..bytes.len() - 1]), None);
        assert_eq!(decode_samples(&[1, 0]), None);
    }

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
