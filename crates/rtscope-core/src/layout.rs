//! The bucket layout of the lossless log-linear histogram.
//!
//! Values below [`EXACT_LIMIT`] (2,048 ns) have a bucket each. Above, every power-of-two range
//! `[2^e, 2^(e+1))` is split into [`SUB_BUCKETS`] (1,024) equal buckets of width `2^(e-10)`, so a
//! bucket is never wider than 1/1024 of its lowest value: reporting the bucket midpoint is off by
//! at most 0.049 % from the true sample, the lowest value by at most 0.098 %. The top bucket ends
//! at [`MAX_TRACKABLE`] (2^36 ns, about 68.7 s); a larger value (a process stopped with SIGSTOP,
//! say) is counted in the top bucket, and the exact maximum is kept beside the histogram anyway.
//! 27,648 buckets: 216 KiB of u64 counters per thread.
//!
//! These functions are what the timing loop calls for every sample: branch-light integer math.

/// Number of sub-buckets in each power-of-two range above [`EXACT_LIMIT`].
pub const SUB_BUCKETS: u64 = 1024;
/// Values below this (ns) are counted exactly, one bucket per nanosecond.
pub const EXACT_LIMIT: u64 = 2 * SUB_BUCKETS;
/// Upper end (exclusive, ns) of the top bucket.
pub const MAX_TRACKABLE: u64 = 1 << 36;
const MAX_SHIFT: u64 = 36 - 11;
/// Number of buckets of the layout.
pub const BUCKETS: usize = (EXACT_LIMIT + MAX_SHIFT * SUB_BUCKETS) as usize;

/// The bucket index of a value in nanoseconds.
#[inline(always)]
pub fn index_of(ns: u64) -> usize {
    if ns < EXACT_LIMIT {
        return ns as usize;
    }
    let ns = if ns >= MAX_TRACKABLE {
        MAX_TRACKABLE - 1
    } else {
        ns
    };
    let exp = 63 - u64::from(ns.leading_zeros()); // >= 11
    let shift = exp - 10;
    (EXACT_LIMIT + (shift - 1) * SUB_BUCKETS + ((ns >> shift) - SUB_BUCKETS)) as usize
}

/// The lowest value (ns) counted in bucket `index`.
pub fn lowest_of(index: usize) -> u64 {
    let i = index as u64;
    if i < EXACT_LIMIT {
        return i;
    }
    let shift = (i - EXACT_LIMIT) / SUB_BUCKETS + 1;
    let sub = (i - EXACT_LIMIT) % SUB_BUCKETS + SUB_BUCKETS;
    sub << shift
}

/// The width (ns) of bucket `index`.
pub fn width_of(index: usize) -> u64 {
    let i = index as u64;
    if i < EXACT_LIMIT {
        1
    } else {
        1 << ((i - EXACT_LIMIT) / SUB_BUCKETS + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_value_falls_inside_its_bucket() {
        let mut v = 0u64;
        while v < MAX_TRACKABLE {
            let i = index_of(v);
            assert!(i < BUCKETS);
            let lo = lowest_of(i);
            assert!(lo <= v && v < lo + width_of(i), "v={v} i={i} lo={lo}");
            v = v * 17 / 16 + 1;
        }
        assert_eq!(index_of(u64::MAX), BUCKETS - 1);
    }

    #[test]
    fn buckets_are_contiguous_and_relative_width_is_bounded() {
        for i in 1..BUCKETS {
            assert_eq!(lowest_of(i), lowest_of(i - 1) + width_of(i - 1), "i={i}");
            let lo = lowest_of(i).max(1);
            assert!(width_of(i) as f64 / lo as f64 <= 1.0 / 1024.0 || lo < EXACT_LIMIT);
        }
        assert_eq!(
            lowest_of(BUCKETS - 1) + width_of(BUCKETS - 1),
            MAX_TRACKABLE
        );
    }

    #[test]
    fn exact_region_is_one_ns_wide() {
        for v in 0..EXACT_LIMIT {
            assert_eq!(index_of(v), v as usize);
        }
        assert_eq!(index_of(2048), 2048);
        assert_eq!(index_of(2049), 2048);
        assert_eq!(index_of(2050), 2049);
    }
}
