//! The memory load, like stressapptest's copy threads: `threads` threads share `megabytes` MiB;
//! each fills a source buffer with a pattern that changes every round, copies it to a
//! destination buffer, and checks every copied word against the pattern.
//!
//! Reports `copied` (bytes copied and verified), `bandwidth` (MB/s, 10^6 bytes per second,
//! counting the copies only), `rounds` (whole-buffer copies) and `miscompares` (8-byte words
//! that read back wrong). Any miscompare fails the load with an error naming the first one.

use super::{rate, Outcome, Running, Stop, Workers};
use crate::{LoadError, Metric};

/// Words copied and checked between two looks at the stop flag (1 MiB).
const CHUNK: usize = (1 << 20) / 8;

/// Starts `threads` copy threads over `megabytes` MiB in total (half source, half destination).
pub fn start(threads: u32, megabytes: u64, stop: &Stop) -> Result<Box<dyn Running>, LoadError> {
    let words_per_thread = (megabytes << 20) as usize / 8 / threads as usize / 2;
    let words = words_per_thread.max(CHUNK);
    let w = Workers::spawn(threads, "memory", stop, move |i, stop| {
        Ok(copy_loop(words, i as u64, stop))
    })?;
    Ok(Box::new(Memory(w)))
}

/// What one copy thread counted.
#[derive(Default)]
struct Counts {
    copied: u64,
    rounds: u64,
    miscompares: u64,
    first: Option<(u64, u64, u64)>,
}

/// The pattern word `i` of round `seed`.
fn pattern(i: usize, seed: u64) -> u64 {
    (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ seed.rotate_left(17) ^ 0xA5A5_5A5A_0F0F_F0F0
}

/// Copies `words`-word buffers round after round until `stop`.
fn copy_loop(words: usize, thread: u64, stop: &Stop) -> Counts {
    let mut src = vec![0u64; words];
    let mut dst = vec![0u64; words];
    let mut c = Counts::default();
    let mut round = thread << 40;
    while !stop.is_set() {
        round += 1;
        for (i, w) in src.iter_mut().enumerate() {
            *w = pattern(i, round);
        }
        for (n, (s, d)) in src.chunks(CHUNK).zip(dst.chunks_mut(CHUNK)).enumerate() {
            if stop.is_set() {
                return c;
            }
            d.copy_from_slice(s);
            verify(std::hint::black_box(&*d), n * CHUNK, round, &mut c);
            c.copied += (d.len() * 8) as u64;
        }
        c.rounds += 1;
    }
    c
}

/// Checks `d`, which starts at word `base` of a round-`seed` buffer.
fn verify(d: &[u64], base: usize, seed: u64, c: &mut Counts) {
    for (j, &w) in d.iter().enumerate() {
        let want = pattern(base + j, seed);
        if w != want {
            c.miscompares += 1;
            c.first.get_or_insert((((base + j) * 8) as u64, want, w));
        }
    }
}

struct Memory(Workers<Counts>);

impl Running for Memory {
    fn finish(self: Box<Self>) -> Outcome {
        let (counts, mut error, took) = self.0.join();
        let copied = counts.iter().map(|c| c.copied).sum::<u64>() as f64;
        let rounds = counts.iter().map(|c| c.rounds).sum::<u64>() as f64;
        let miscompares: u64 = counts.iter().map(|c| c.miscompares).sum();
        if let Some((offset, expected, found)) = counts.iter().find_map(|c| c.first) {
            error.get_or_insert(LoadError::Miscompare {
                count: miscompares,
                offset,
                expected,
                found,
            });
        }
        Outcome {
            metrics: vec![
                Metric::new("copied", copied, "bytes"),
                Metric::new("bandwidth", rate(copied, took) / 1e6, "MB/s"),
                Metric::new("rounds", rounds, "copies"),
                Metric::new("miscompares", miscompares as f64, "words"),
            ],
            error,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_and_verifies_without_miscompares() {
        let stop = Stop::new();
        let load = start(2, 8, &stop).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(300));
        stop.set();
        let out = load.finish();
        assert!(out.error.is_none(), "{:?}", out.error);
        let get = |n: &str| out.metrics.iter().find(|m| m.name == n).unwrap().value;
        assert!(get("copied") >= (1 << 20) as f64);
        assert!(get("bandwidth") > 0.0);
        assert_eq!(get("miscompares"), 0.0);
    }

    #[test]
    fn a_corrupted_word_is_counted_and_named() {
        let mut c = Counts::default();
        let mut d: Vec<u64> = (0..16).map(|i| pattern(i, 7)).collect();
        d[5] ^= 1;
        verify(&d, 0, 7, &mut c);
        assert_eq!(c.miscompares, 1);
        assert_eq!(c.first, Some((40, pattern(5, 7), pattern(5, 7) ^ 1)));
    }
}
