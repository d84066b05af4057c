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

/// A time in words: `1 h`, `2.5 d`, `3.2 y`.
pub fn span(s: f64) -> String {
    let year = 365.25 * 86400.0;
    match s {
        s if s < 120.0 => format!("{s:.0} s"),
        s if s < 7200.0 => format!("{:.0} min", s / 60.0),
        s if s < 2.0 * 86400.0 => format!("{:.1} h", s / 3600.0),
        s if s < year => format!("{:.1} d", s / 86400.0),
        s => format!("{:.1} y", s / year),
    }
}
