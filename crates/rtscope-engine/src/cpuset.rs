//! CPU sets as users type them: `0`, `0-3`, `0,2,5-7`, `!1` (all online CPUs but 1), `0-7,!3`.

use std::fmt;

/// An ordered set of CPU numbers (ascending, no duplicates).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CpuSet(Vec<usize>);

/// A CPU list that could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("'{text}' is not a CPU list: {why} (examples: 0, 0-3, 0,2,4-7, !1)")]
pub struct CpuSetError {
    /// The text given.
    pub text: String,
    /// What is wrong with it.
    pub why: String,
}

impl CpuSet {
    /// A set of the given CPUs.
    pub fn from_cpus(cpus: impl IntoIterator<Item = usize>) -> Self {
        let mut v: Vec<usize> = cpus.into_iter().collect();
        v.sort_unstable();
        v.dedup();
        CpuSet(v)
    }

    /// Parses a CPU list. Terms starting with `!` remove CPUs; a list of only negations starts
    /// from `all` (the online CPUs).
    pub fn parse(text: &str, all: &CpuSet) -> Result<Self, CpuSetError> {
        let err = |why: &str| CpuSetError {
            text: text.to_string(),
            why: why.to_string(),
        };
        // The spellings of libnuma's cpu-string parser, which cyclictest's -a uses: `all`, and
        // a leading `+` numbering the CPUs relative to the available ones.
        if text.trim() == "all" {
            return Ok(all.clone());
        }
        if let Some(rest) = text.trim().strip_prefix('+') {
            let available: Vec<usize> = all.iter().collect();
            let relative = CpuSet::parse(rest, &CpuSet::from_cpus(0..available.len()))?;
            let cpus = relative.iter().map(|i| available.get(i).copied());
            return cpus
                .collect::<Option<Vec<usize>>>()
                .map(CpuSet::from_cpus)
                .ok_or_else(|| err("a relative CPU is beyond the available ones"));
        }
        let mut add = Vec::new();
        let mut remove = Vec::new();
        let mut only_negations = true;
        for term in text.split(',').map(str::trim) {
            if term.is_empty() {
                return Err(err("empty term"));
            }
            let (neg, body) = match term.strip_prefix('!') {
                Some(b) => (true, b),
                None => (false, term),
            };
            let (lo, hi) = match body.split_once('-') {
                Some((a, b)) => (
                    parse_cpu(a).ok_or_else(|| err("bad number"))?,
                    parse_cpu(b).ok_or_else(|| err("bad number"))?,
                ),
                None => {
                    let c = parse_cpu(body).ok_or_else(|| err("bad number"))?;
                    (c, c)
                }
            };
            if lo > hi {
                return Err(err("range runs backwards"));
            }
            if neg {
                remove.extend(lo..=hi);
            } else {
                only_negations = false;
                add.extend(lo..=hi);
            }
        }
        if only_negations {
            add.extend(all.iter());
        }
        add.retain(|c| !remove.contains(c));
        if add.is_empty() {
            return Err(err("it selects no CPU"));
        }
        Ok(CpuSet::from_cpus(add))
    }

    /// The CPUs, ascending.
    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.0.iter().copied()
    }
    /// Number of CPUs.
    pub fn len(&self) -> usize {
        self.0.len()
    }
    /// Whether it is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    /// Whether `cpu` is in the set.
    pub fn contains(&self, cpu: usize) -> bool {
        self.0.binary_search(&cpu).is_ok()
    }
    /// The CPU of index `i` (round-robin over the set).
    pub fn nth_cyclic(&self, i: usize) -> usize {
        self.0[i % self.0.len()]
    }
    /// The CPUs as a slice.
    pub fn as_slice(&self) -> &[usize] {
        &self.0
    }
}

fn parse_cpu(s: &str) -> Option<usize> {
    let s = s.trim();
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok().filter(|&c| c < 65_536)
}

impl fmt::Display for CpuSet {
    /// Compact list form: `0-3,6`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        let mut i = 0;
        while i < self.0.len() {
            let start = self.0[i];
            let mut end = start;
            while i + 1 < self.0.len() && self.0[i + 1] == end + 1 {
                i += 1;
                end = self.0[i];
            }
            if !first {
                f.write_str(",")?;
            }
            first = false;
            if start == end {
                write!(f, "{start}")?;
            } else {
                write!(f, "{start}-{end}")?;
            }
            i += 1;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all4() -> CpuSet {
        CpuSet::from_cpus(0..4)
    }

    #[test]
    fn parses_lists_ranges_and_negations() {
        assert_eq!(CpuSet::parse("0", &all4()).unwrap().as_slice(), &[0]);
        assert_eq!(
            CpuSet::parse("3-5,0", &all4()).unwrap().as_slice(),
            &[0, 3, 4, 5]
        );
        assert_eq!(CpuSet::parse("!1", &all4()).unwrap().as_slice(), &[0, 2, 3]);
        assert_eq!(
            CpuSet::parse("0-3,!2", &all4()).unwrap().as_slice(),
            &[0, 1, 3]
        );
        assert_eq!(
            CpuSet::parse("0-3,!2", &all4()).unwrap().to_string(),
            "0-1,3"
        );
    }

    #[test]
    fn parses_libnumas_all_and_relative_spellings() {
        let online = CpuSet::from_cpus([0, 2, 3]);
        assert_eq!(CpuSet::parse("all", &online).unwrap(), online);
        assert_eq!(
            CpuSet::parse("+1-2", &online).unwrap(),
            CpuSet::from_cpus([2, 3])
        );
        assert!(CpuSet::parse("+3", &online).is_err());
    }

    #[test]
    fn rejects_bad_lists() {
        for bad in ["", "a", "3-1", "0,,1", "!0-3", "1-", "-1"] {
            assert!(CpuSet::parse(bad, &all4()).is_err(), "{bad}");
        }
    }
}
