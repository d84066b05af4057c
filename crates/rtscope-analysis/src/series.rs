//! Choosing a watch series and a period of it (`report --watch SERIES --from T --to T`, and
//! compare's `watch:SERIES@FROM..TO`): the series found by name in the store, the period's
//! times parsed, and the series' stored rows that start in the period.

use rtscope_common::error::UsageError;
use rtscope_store::watch::{Level, SeriesSummary, WatchWindow};
use rtscope_store::Store;

/// A time of `--from`/`--to`, Unix ns.
pub fn parse_time(flag: &str, text: &str) -> Result<i64, UsageError> {
    rtscope_core::civil::parse_utc(text)
        .and_then(|s| s.checked_mul(1_000_000_000))
        .ok_or_else(|| {
            UsageError::new(format!("{flag} '{}': not a time", rtscope_core::text::escape(text)))
                .hint("write a UTC time as 2026-11-24, 2026-11-24 13:00, 2026-11-24T13:00:00+01:00 or @1795305600 (Unix seconds)")
        })
}

/// The period `[from, to)` of the flags, Unix ns; `None` when neither is given.
pub fn period(from: Option<&str>, to: Option<&str>) -> Result<Option<(i64, i64)>, UsageError> {
    if from.is_none() && to.is_none() {
        return Ok(None);
    }
    let a = from.map_or(Ok(i64::MIN), |t| parse_time("--from", t))?;
    let b = to.map_or(Ok(i64::MAX), |t| parse_time("--to", t))?;
    if a >= b {
        return Err(UsageError::new("--from is not before --to")
            .hint("give a period that ends after it starts"));
    }
    Ok(Some((a, b)))
}

/// The series named `name` in `store`.
pub fn series(store: &Store, name: &str) -> Result<SeriesSummary, UsageError> {
    let all = store.watch_series().map_err(UsageError::from_error)?;
    let names: Vec<String> = all
        .iter()
        .map(|s| rtscope_core::text::escape(&s.name).into_owned())
        .collect();
    all.into_iter().find(|s| s.name == name).ok_or_else(|| {
        let known = match names.len() {
            0 => "it holds none: `rtscope watch` records them".to_string(),
            _ => format!("it holds {}", names.join(", ")),
        };
        UsageError::new(format!(
            "no watch series named '{}' in {}",
            rtscope_core::text::escape(name),
            store.path().display()
        ))
        .hint(format!("{known}; `rtscope runs` lists them"))
    })
}

/// Every stored row of `series` that starts in `period`, at every level.
pub fn rows(
    store: &Store,
    series: &SeriesSummary,
    period: Option<(i64, i64)>,
) -> Result<Vec<WatchWindow>, UsageError> {
    let (from, to) = period.unwrap_or((i64::MIN, i64::MAX));
    let mut out = Vec::new();
    for level in [Level::Day, Level::Hour, Level::Window] {
        let got = store.windows(series.id, level, from, to);
        out.extend(got.map_err(UsageError::from_error)?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_period_is_from_inclusive_to_exclusive_in_unix_ns_and_either_end_may_be_open() {
        assert_eq!(period(None, None).unwrap(), None);
        let day = 86_400 * 1_000_000_000_i64;
        let a = parse_time("--from", "2026-11-24").unwrap();
        assert_eq!(
            period(Some("2026-11-24"), Some("2026-11-25")).unwrap(),
            Some((a, a + day))
        );
        assert_eq!(
            period(Some("2026-11-24"), None).unwrap(),
            Some((a, i64::MAX))
        );
        assert_eq!(
            period(None, Some("2026-11-24")).unwrap(),
            Some((i64::MIN, a))
        );
        assert_eq!(
            parse_time("--to", "@1795305600").unwrap(),
            1_795_305_600 * 1_000_000_000
        );
    }

    #[test]
    fn a_reversed_period_or_a_word_for_a_time_is_a_usage_error_naming_the_flag() {
        let e = period(Some("2026-11-25"), Some("2026-11-24")).unwrap_err();
        assert_eq!(e.message, "--from is not before --to");
        let e = period(None, Some("yesterday")).unwrap_err();
        assert_eq!(e.message, "--to 'yesterday': not a time");
        assert!(e.hint.unwrap().contains("2026-11-24 13:00"));
    }

    #[test]
    fn a_series_not_in_the_store_is_named_with_what_the_store_holds() {
        let dir = std::env::temp_dir().join(format!("rtscope-series-unit-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let store = Store::open(&dir.join("rtscope.db")).unwrap();
        let e = series(&store, "board-7").unwrap_err();
        assert!(
            e.message.starts_with("no watch series named 'board-7' in "),
            "{}",
            e.message
        );
        let hint = e.hint.unwrap();
        assert!(
            hint.starts_with("it holds none: `rtscope watch` records them"),
            "{hint}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
