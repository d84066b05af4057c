//! cyclictest's `start_time` (`Sun, 22 Nov 2026 01:41:18
//! +0000`, strftime `%a, %d %b %Y %H:%M:%S %z` in the C locale) to seconds since the Unix epoch.

use rtscope_core::civil::days_from_civil;

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// Parses `[Sun, ]22 Nov 2026 01:41:18 +0000` to seconds since the Unix epoch (UTC).
pub fn parse_rfc2822(text: &str) -> Option<i64> {
    let text = text.trim();
    let text = match text.split_once(',') {
        Some((_, rest)) => rest.trim(),
        None => text,
    };
    let mut it = text.split_whitespace();
    let day: u32 = it.next()?.parse().ok()?;
    let month = MONTHS.iter().position(|m| Some(*m) == it.clone().next())? as u32 + 1;
    it.next();
    let year: i64 = it.next()?.parse().ok()?;
    let mut hms = it.next()?.split(':').map(|p| p.parse::<i64>().ok());
    let (h, mi, s) = (
        hms.next()??,
        hms.next()??,
        hms.next().flatten().unwrap_or(0),
    );
    let zone = it.next().unwrap_or("+0000");
    let offset = zone_offset(zone)?;
    let plausible = (1970..=2200).contains(&year) && (1..=31).contains(&day);
    // Negative fields parse as i64 too; range-checked here, they cannot overflow below.
    if !plausible || !(0..=23).contains(&h) || !(0..=59).contains(&mi) || !(0..=60).contains(&s) {
        return None;
    }
    Some(days_from_civil(year, month, day) * 86_400 + h * 3600 + mi * 60 + s - offset)
}

/// `+0130` → 5400 s; `UTC`/`GMT`/`Z` → 0.
fn zone_offset(zone: &str) -> Option<i64> {
    if matches!(zone, "UTC" | "GMT" | "Z") {
        return Some(0);
    }
    let (sign, digits) = match zone.as_bytes().first()? {
        b'+' => (1, &zone[1..]),
        b'-' => (-1, &zone[1..]),
        _ => return None,
    };
    if digits.len() != 4 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let h: i64 = digits[..2].parse().ok()?;
    let m: i64 = digits[2..].parse().ok()?;
    Some(sign * (h * 3600 + m * 60))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cyclictest_dates_convert_to_unix_time() {
        assert_eq!(
            parse_rfc2822("Sun, 22 Nov 2026 01:41:18 +0000"),
            Some(1_795_311_678)
        );
        assert_eq!(
            parse_rfc2822("Fri, 28 Aug 2026 00:00:00 -0500"),
            parse_rfc2822("Fri, 28 Aug 2026 05:00:00 +0000")
        );
        assert_eq!(
            parse_rfc2822("29 Feb 2024 12:00:00 GMT"),
            Some(1_709_208_000)
        );
        assert_eq!(parse_rfc2822("Sun, 22 Foo 2026 01:41:18 +0000"), None);
        assert_eq!(parse_rfc2822("Sun, 22 Nov 2026 25:41:18 +0000"), None);
        assert_eq!(parse_rfc2822(""), None);
    }

    #[test]
    fn negative_times_are_refused_not_overflowed() {
        // Found with the fuzz targets (import_cyclictest_json crashes on it): `h * 3600`
        // overflowed (a panic with overflow checks) for a hugely negative hour, which passed
        // `h > 23`.
        assert_eq!(
            parse_rfc2822("Sun, 22 Nov 2026 -9223372036854775807:41:18 +0000"),
            None
        );
        assert_eq!(parse_rfc2822("22 Nov 2026 01:-1:18 +0000"), None);
        assert_eq!(
            parse_rfc2822("22 Nov 2026 01:41:-9223372036854775808 +0000"),
            None
        );
    }
}
