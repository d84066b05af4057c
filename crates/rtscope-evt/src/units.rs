//! Times for people, shared by the analysis and its text: latencies and spans of time.

/// A latency for people: `850 ns`, `12.3 µs`, `38.5 ms`, `6.80 s`.
pub fn us(ns: f64) -> String {
    match ns {
        ns if ns < 1e3 => format!("{ns:.0} ns"),
        ns if ns < 1e7 => format!("{:.1} µs", ns / 1e3),
        ns if ns < 1e9 => format!("{:.1} ms", ns / 1e6),
        ns => format!("{:.2} s", ns / 1e9),
    }
}

/// A time in words: `250 ms`, `1 h`, `2.5 d`, `3.2 y` (never `0 s` for a time above 0).
pub fn span(s: f64) -> String {
    let year = 365.25 * 86400.0;
    match s {
        s if s < 1e-3 => format!("{:.0} µs", s * 1e6),
        s if s < 1.0 => format!("{:.0} ms", s * 1e3),
        s if s < 10.0 => format!("{s:.1} s"),
        s if s < 120.0 => format!("{s:.0} s"),
        s if s < 7200.0 => format!("{:.0} min", s / 60.0),
        s if s < 2.0 * 86400.0 => format!("{:.1} h", s / 3600.0),
        s if s < year => format!("{:.1} d", s / 86400.0),
        s => format!("{:.1} y", s / year),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_short_span_is_not_zero_seconds() {
        assert_eq!(super::span(0.1), "100 ms");
        assert_eq!(super::span(2.5), "2.5 s");
        assert_eq!(super::span(30.0), "30 s");
        assert_eq!(super::span(600.0), "10 min");
    }
}
