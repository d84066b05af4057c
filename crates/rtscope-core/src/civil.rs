//! Calendar dates without a date library (proleptic Gregorian, UTC): the days of a date and
//! the date of a day (Howard Hinnant's algorithms), RFC 3339 timestamps as the store writes
//! them, and the UTC text of a Unix time for reports.

/// Days from 1970-01-01 to the date `y-m-d`.
pub fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date `(year, month, day)` of day `days` after 1970-01-01.
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// The UTC date and time of Unix second `secs`, to the second, with `sep` between them.
fn date_time(secs: i64, sep: char) -> String {
    let (y, m, d) = civil_from_days(secs.div_euclid(86_400));
    let s = secs.rem_euclid(86_400);
    format!(
        "{y:04}-{m:02}-{d:02}{sep}{:02}:{:02}:{:02}",
        s / 3600,
        s / 60 % 60,
        s % 60
    )
}

/// `2026-11-24 13:05:09`: the UTC date and time of Unix second `secs`.
pub fn utc_text(secs: i64) -> String {
    date_time(secs, ' ')
}

/// `2026-11-22T02:01:18.000000005Z`: a time as every run record stores it (RFC 3339, UTC, with
/// nanoseconds; a time before the epoch is the epoch).
pub fn rfc3339(t: std::time::SystemTime) -> String {
    let d = t.duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let secs = i64::try_from(d.as_secs()).unwrap_or(i64::MAX);
    format!("{}.{:09}Z", date_time(secs, 'T'), d.subsec_nanos())
}

/// Nanoseconds since the Unix epoch of `t` (0 before it, `i64::MAX` past 2262): how run
/// records store wall-clock times as numbers.
pub fn unix_ns(t: std::time::SystemTime) -> i64 {
    t.duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

/// A UTC time as people type it: `2026-11-24`, `2026-11-24 13:05`, `2026-11-24T13:05:09`,
/// an RFC 3339 timestamp with its offset, or `@SECONDS` since the Unix epoch. Unix seconds.
pub fn parse_utc(text: &str) -> Option<i64> {
    let t = text.trim();
    if let Some(secs) = t.strip_prefix('@') {
        return secs.parse().ok();
    }
    if let Some(v) = parse_rfc3339(t) {
        return Some(v.floor() as i64);
    }
    let (date, time) = match t.split_once(['T', ' ']) {
        Some((d, tm)) => (d, Some(tm)),
        None => (t, None),
    };
    let mut parts = date.split('-');
    let (y, m, d) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() || y.len() != 4 || m.len() != 2 || d.len() != 2 {
        return None;
    }
    let (y, m, d): (i64, u32, u32) = (y.parse().ok()?, m.parse().ok()?, d.parse().ok()?);
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        return None;
    }
    let mut secs = days_from_civil(y, m, d) * 86_400;
    if let Some(tm) = time {
        let f: Vec<&str> = tm.split(':').collect();
        if !(2..=3).contains(&f.len()) || f.iter().any(|p| p.len() != 2) {
            return None;
        }
        let n = |i: usize, hi: i64| {
            f.get(i).map_or(Some(0), |p| {
                p.parse::<i64>().ok().filter(|v| (0..=hi).contains(v))
            })
        };
        secs += n(0, 23)? * 3600 + n(1, 59)? * 60 + n(2, 60)?;
    }
    Some(secs)
}

/// Seconds since the epoch, or `None` when `text` is not RFC 3339.
pub fn parse_rfc3339(text: &str) -> Option<f64> {
    let b = text.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    let num = |r: std::ops::Range<usize>| text.get(r)?.parse::<i64>().ok();
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, s) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || s > 60 {
        return None;
    }
    let mut rest = &text[19..];
    let mut frac = 0.0;
    if let Some(r) = rest.strip_prefix('.') {
        let n = r.bytes().take_while(u8::is_ascii_digit).count();
        frac = format!("0.{}", &r[..n]).parse().ok()?;
        rest = &r[n..];
    }
    let offset = match rest {
        "Z" | "z" => 0,
        o if o.len() == 6 && (o.starts_with('+') || o.starts_with('-')) => {
            let v = o[1..3].parse::<i64>().ok()? * 3600 + o[4..6].parse::<i64>().ok()? * 60;
            if o.starts_with('-') {
                -v
            } else {
                v
            }
        }
        _ => return None,
    };
    let secs = days_from_civil(y, mo as u32, d as u32) * 86_400 + h * 3600 + mi * 60 + s - offset;
    Some(secs as f64 + frac)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_store_timestamps() {
        let t = std::time::UNIX_EPOCH + std::time::Duration::new(1_795_312_878, 5);
        assert_eq!(rfc3339(t), "2026-11-22T02:01:18.000000005Z");
        assert_eq!(
            rfc3339(std::time::UNIX_EPOCH),
            "1970-01-01T00:00:00.000000000Z"
        );
    }

    #[test]
    fn parses_store_timestamps() {
        assert_eq!(parse_rfc3339("1970-01-01T00:00:00Z"), Some(0.0));
        assert_eq!(parse_rfc3339("2026-11-22T03:00:00Z"), Some(1_795_316_400.0));
        assert_eq!(
            parse_rfc3339("2026-11-22T03:00:00.25Z"),
            Some(1_795_316_400.25)
        );
        assert_eq!(
            parse_rfc3339("2026-11-22T04:00:00+01:00"),
            Some(1_795_316_400.0)
        );
        for bad in [
            "",
            "2026-11-22",
            "2026-13-22T03:00:00Z",
            "2026-11-22T03:00:00",
            "x",
        ] {
            assert_eq!(parse_rfc3339(bad), None, "{bad}");
        }
    }

    #[test]
    fn days_and_dates_round_trip() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
        for days in (-800_000..800_000).step_by(997) {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days, "{y}-{m}-{d}");
        }
        assert_eq!(civil_from_days(20_416), (2025, 11, 24));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(utc_text(1_795_316_400), "2026-11-22 03:00:00");
        assert_eq!(utc_text(-1), "1969-12-31 23:59:59");
    }

    #[test]
    fn typed_times_parse() {
        assert_eq!(parse_utc("2026-11-22"), Some(1_795_305_600));
        assert_eq!(parse_utc("2026-11-22 03:00"), Some(1_795_316_400));
        assert_eq!(parse_utc("2026-11-22T03:00:00"), Some(1_795_316_400));
        assert_eq!(parse_utc("2026-11-22T04:00:00+01:00"), Some(1_795_316_400));
        assert_eq!(parse_utc("@1795316400"), Some(1_795_316_400));
        for bad in [
            "",
            "2026-11",
            "2026-13-01",
            "2026-11-22 25:00",
            "2026-11-22 3:00",
            "yesterday",
        ] {
            assert_eq!(parse_utc(bad), None, "{bad}");
        }
    }
}
