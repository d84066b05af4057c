//! A small deterministic pseudo-random generator (xorshift64) for synthetic data and seeded
//! mutation tests: the same seed gives the same stream everywhere. Not for cryptography.

/// xorshift64 state; never zero.
#[derive(Debug, Clone)]
pub struct XorShift64(u64);

impl XorShift64 {
    /// A generator seeded with `seed` (0 is replaced, as xorshift cannot leave 0).
    pub fn new(seed: u64) -> XorShift64 {
        XorShift64(if seed == 0 {
            0x9E37_79B9_7F4A_7C15
        } else {
            seed
        })
    }

    /// The next 64 bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// Uniform in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }

    /// Uniform in (0, 1].
    pub fn unit(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64 + 1.0) / (1u64 << 53) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::XorShift64;

    #[test]
    fn streams_are_reproducible_and_in_range() {
        let (mut a, mut b) = (XorShift64::new(7), XorShift64::new(7));
        for _ in 0..1000 {
            assert_eq!(a.next_u64(), b.next_u64());
            let u = a.unit();
            assert!(u > 0.0 && u <= 1.0);
            assert_eq!(u, b.unit());
            let k = a.below(10);
            assert!(k < 10);
            assert_eq!(k, b.below(10));
        }
        assert_ne!(XorShift64::new(0).next_u64(), 0);
    }
}
