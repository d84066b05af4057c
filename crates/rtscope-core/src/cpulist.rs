//! The kernel's CPU list format (`0-3,5,7-8`), as in `/sys/devices/system/cpu/online`,
//! `isolcpus=` and `Cpus_allowed_list`.

/// Parses a CPU list; `None` if any part is malformed. An empty (or all-whitespace) list is
/// `Some([])`. Ranges wider than 65,536 CPUs are refused (a hostile file cannot make it
/// allocate without bound). The result is sorted, without duplicates.
pub fn parse(s: &str) -> Option<Vec<u32>> {
    let mut out = Vec::new();
    for part in s.trim().split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (u32, u32) = (a.parse().ok()?, b.parse().ok()?);
                if b < a || b - a > 65_536 {
                    return None;
                }
                out.extend(a..=b);
            }
            None => out.push(part.parse().ok()?),
        }
    }
    out.sort_unstable();
    out.dedup();
    Some(out)
}

/// Formats CPUs as a CPU list (`0-3,5`), in order, ranges folded.
pub fn format(cpus: &[u32]) -> String {
    let mut sorted = cpus.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let start = sorted[i];
        let mut end = start;
        while i + 1 < sorted.len() && sorted[i + 1] == end + 1 {
            i += 1;
            end = sorted[i];
        }
        parts.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
        i += 1;
    }
    parts.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_parse_and_format_round_trip() {
        assert_eq!(parse("0-3,5\n"), Some(vec![0, 1, 2, 3, 5]));
        assert_eq!(parse("\n"), Some(vec![]));
        assert_eq!(parse(" 7 "), Some(vec![7]));
        assert_eq!(parse("3-1"), None);
        assert_eq!(parse("0-4294967295"), None);
        assert_eq!(parse("1,x"), None);
        assert_eq!(format(&[5, 0, 1, 2, 3, 3]), "0-3,5");
        assert_eq!(format(&[]), "");
        assert_eq!(parse(&format(&[0, 2, 4, 5, 6])), Some(vec![0, 2, 4, 5, 6]));
    }
}
