//! The pure parts of Prometheus' text exposition that every writer of it shares (the fleet's
//! textfile, `rtscope watch`'s `/metrics`): the fixed 1-2-5 log-spaced latency buckets from
//! 1 µs to 100 ms, the escaping of a label value, the text of an `le` label, and the one rule
//! that counts a lossless histogram's samples into an `le` bucket. No I/O.

/// Upper bounds of the histogram buckets, ns (then `+Inf`).
pub const BUCKETS_NS: [u64; 16] = [
    1_000,
    2_000,
    5_000,
    10_000,
    20_000,
    50_000,
    100_000,
    200_000,
    500_000,
    1_000_000,
    2_000_000,
    5_000_000,
    10_000_000,
    20_000_000,
    50_000_000,
    100_000_000,
];

/// The `le` label of the bucket bounded by `ns`, in seconds, written as Prometheus' own
/// clients and node_exporter write it (Go's `strconv.FormatFloat(v, 'g', -1, 64)`: the shortest
/// digits, an exponent below 1e-4 or from 1e6 on, at least two exponent digits): `1e-05`,
/// `2e-06`, `0.0001`, `0.1`. A watch scraped directly and the same page re-exposed by
/// node_exporter's textfile collector then give one `le` series per bound, where `0.00001` and
/// `1e-05` were two (a heat map summing `by (le)` got negative buckets).
pub fn le_label(ns: u64) -> String {
    let v = ns as f64 / 1e9;
    // Rust's `{:e}` is the shortest round-trip digits: `1e-5`, `2.5e-6`, `1e-1`.
    let sci = format!("{v:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if v == 0.0 || (-4..6).contains(&exp) {
        return format!("{v}");
    }
    let sign = if exp < 0 { '-' } else { '+' };
    format!("{mantissa}e{sign}{:02}", exp.unsigned_abs())
}

/// A label value with `\`, `"` and newlines escaped.
pub fn escape(value: &str) -> String {
    let mut s = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '\\' => s.push_str("\\\\"),
            '"' => s.push_str("\\\""),
            '\n' => s.push_str("\\n"),
            c => s.push(c),
        }
    }
    s
}

/// Samples of `h` at or below `le_ns`, each bucket counted at its midpoint clamped to
/// `min..=max` (the exact extremes): the rule of every `le` bucket rtscope exposes.
pub fn at_or_below(h: &rtscope_core::Histogram, min: u64, max: u64, le_ns: u64) -> u64 {
    h.buckets()
        .filter(|(low, width, _)| (low.0 + (width.0.max(1) - 1) / 2).clamp(min, max) <= le_ns)
        .map(|(_, _, c)| c)
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtscope_core::{Histogram, Nanos};

    #[test]
    fn le_labels_are_written_as_gos_shortest_g_format() {
        // As strconv.FormatFloat(v, 'g', -1, 64) prints them (node_exporter, client_golang).
        let want = [
            "1e-06", "2e-06", "5e-06", "1e-05", "2e-05", "5e-05", "0.0001", "0.0002", "0.0005",
            "0.001", "0.002", "0.005", "0.01", "0.02", "0.05", "0.1",
        ];
        let got: Vec<String> = BUCKETS_NS.iter().map(|&ns| le_label(ns)).collect();
        assert_eq!(got, want);
        assert_eq!(le_label(2_500), "2.5e-06");
        assert_eq!(le_label(1_000_000_000), "1");
        assert_eq!(le_label(1_500_000_000_000_000), "1.5e+06");
        assert_eq!(le_label(0), "0");
    }

    #[test]
    fn a_label_value_escapes_backslashes_quotes_and_newlines_only() {
        assert_eq!(escape("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
        assert_eq!(escape("cpu 3 µs"), "cpu 3 µs");
    }

    #[test]
    fn a_bucket_counts_the_samples_whose_midpoint_clamped_to_the_extremes_is_at_or_below_it() {
        let mut h = Histogram::new();
        h.record_n(Nanos::from_us(3), 5);
        h.record_n(Nanos::from_us(40), 2);
        let (min, max) = (h.min().unwrap().0, h.max().unwrap().0);
        assert_eq!(at_or_below(&h, min, max, 2_000), 0);
        assert_eq!(at_or_below(&h, min, max, 5_000), 5);
        assert_eq!(at_or_below(&h, min, max, 50_000), 7);
        assert_eq!(at_or_below(&h, min, max, *BUCKETS_NS.last().unwrap()), 7);
        assert!(BUCKETS_NS.windows(2).all(|w| w[0] < w[1]));
    }
}
