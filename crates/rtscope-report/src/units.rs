//! Numbers with their units as the figures' legends and keys show them: a latency or a noise
//! time in the unit that keeps it short (`812 ns`, `3.62 µs`, `41.3 µs`, `20.0 ms`, `47.6 s`),
//! a share in % — each with 3 significant digits, so no legend reads `47621777.6`.

/// A duration in ns with 3 significant digits and the unit that keeps it between 1 and 1,000.
pub fn latency(ns: u64) -> String {
    // Rounded to 3 significant digits first, so 999,999 ns is `1.00 ms`, not `1000 µs`.
    let ns = if ns >= 1000 {
        let step = 10u64.pow(ns.ilog10() - 2);
        (ns + step / 2) / step * step
    } else {
        ns
    };
    let (v, unit) = match ns {
        0..=999 => return format!("{ns} ns"),
        1_000..=999_999 => (ns as f64 / 1e3, "µs"),
        1_000_000..=999_999_999 => (ns as f64 / 1e6, "ms"),
        _ => (ns as f64 / 1e9, "s"),
    };
    format!("{} {unit}", sig3(v))
}

/// A share in % with 3 significant digits (`17.0 %`, `0.412 %`, `100 %`).
pub fn percent(p: f64) -> String {
    format!("{} %", sig3(p))
}

/// `v` with 3 significant digits (`1.00`, `12.3`, `412`, `4120`), rounding first so 999.6 is
/// `1000`, not `999.6`.
pub fn sig3(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    let digits = v.abs().log10().floor() as i32;
    let decimals = (2 - digits).max(0) as usize;
    let rounded = format!("{v:.decimals$}");
    // 9.996 rounds to 10.00: one decimal too many.
    let back: f64 = rounded.parse().unwrap_or(v);
    let digits2 = back.abs().log10().floor() as i32;
    if digits2 > digits && decimals > 0 {
        return format!("{back:.prec$}", prec = decimals - 1);
    }
    rounded
}

/// The unit a set of durations reads best in, with its divisor from ns: the unit of the
/// largest (`µs` up to 1 ms, `ms` up to 1 s, else `s`).
pub fn unit_of(max_ns: f64) -> (&'static str, f64) {
    if max_ns >= 1e9 {
        ("s", 1e9)
    } else if max_ns >= 1e6 {
        ("ms", 1e6)
    } else {
        ("µs", 1e3)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_with_three_significant_digits_in_their_unit() {
        assert_eq!(latency(812), "812 ns");
        assert_eq!(latency(3_620), "3.62 µs");
        assert_eq!(latency(41_300), "41.3 µs");
        assert_eq!(latency(412_000), "412 µs");
        assert_eq!(latency(20_012_300), "20.0 ms");
        assert_eq!(latency(47_621_777_600), "47.6 s");
        assert_eq!(latency(999_999), "1.00 ms");
        assert_eq!(latency(1_234_499), "1.23 ms");
        assert_eq!(percent(17.03472), "17.0 %");
        assert_eq!(percent(0.41234), "0.412 %");
        assert_eq!(sig3(9.996), "10.0");
        assert_eq!(unit_of(47e9), ("s", 1e9));
        assert_eq!(unit_of(3e5), ("µs", 1e3));
    }
}
