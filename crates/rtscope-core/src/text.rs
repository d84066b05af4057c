//! Numbers as people read them in tables and status lines: the one microsecond formatter and
//! its companions, shared by every front end and the report.

use crate::Nanos;
use std::fmt::Write;

/// A latency in microseconds with one decimal, no unit: `12.3` for 12,345 ns.
pub fn us(v: Nanos) -> String {
    format!("{:.1}", v.as_us_f64())
}

/// [`us`], or `-` when there is no value.
pub fn us_or_dash(v: Option<Nanos>) -> String {
    v.map_or_else(|| "-".into(), us)
}

/// A duration in the largest unit that keeps it whole (`200us`, `25s`), else with decimals.
pub fn short(n: Nanos) -> String {
    let units = [(1_000_000_000, "s"), (1_000_000, "ms"), (1_000, "us")];
    match units.iter().find(|(d, _)| n.0 >= *d && n.0 % d == 0) {
        Some((d, u)) => format!("{}{u}", n.0 / d),
        None if n.0 == 0 => "0s".into(),
        None => n.to_string(),
    }
}

/// A count or rate: `5.13G`, `5.13M`, `26.5k`, `812`, `9.7`.
pub fn count(v: f64) -> String {
    match v.abs() {
        x if x >= 1e9 => format!("{:.2}G", v / 1e9),
        x if x >= 1e6 => format!("{:.2}M", v / 1e6),
        x if x >= 1e4 => format!("{:.1}k", v / 1e3),
        x if x.fract() == 0.0 => format!("{v:.0}"),
        _ => format!("{v:.1}"),
    }
}

/// Lays out rows of cells as aligned columns under a rule: the first row is the header; columns
/// before `right_from` are left-aligned, the others right-aligned (numbers).
pub fn columns(cells: &[Vec<String>], right_from: usize) -> String {
    let n = cells.first().map_or(0, |r| r.len());
    let widths: Vec<usize> = (0..n)
        .map(|i| {
            cells
                .iter()
                .map(|r| r.get(i).map_or(0, |c| c.chars().count()))
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut s = String::new();
    for (row_no, row) in cells.iter().enumerate() {
        let line: Vec<String> = row
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(i, (c, w))| {
                if i < right_from {
                    format!("{c:<w$}")
                } else {
                    format!("{c:>w$}")
                }
            })
            .collect();
        let _ = writeln!(s, "{}", line.join("  ").trim_end());
        if row_no == 0 {
            let rule = widths.iter().sum::<usize>() + 2 * n.saturating_sub(1);
            let _ = writeln!(s, "{}", "-".repeat(rule));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(us(Nanos(12_345)), "12.3");
        assert_eq!(us_or_dash(None), "-");
        assert_eq!(short(Nanos::from_us(200)), "200us");
        assert_eq!(short(Nanos::from_secs(25)), "25s");
        assert_eq!(count(5_130_000.0), "5.13M");
        assert_eq!(count(812.0), "812");
        let t = columns(
            &[vec!["a".into(), "n".into()], vec!["xy".into(), "7".into()]],
            1,
        );
        assert_eq!(t, "a   n\n-----\nxy  7\n");
    }
}
