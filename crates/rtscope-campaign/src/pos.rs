//! Positions in a campaign file: `file:line:column` for every complaint, and the translation
//! of the TOML parser's errors into rtscope's `error:` / `hint:` form.

use rtscope_common::error::UsageError;
use std::ops::Range;

/// Keys of each table, for "did you mean" hints (docs/campaigns.md lists the same).
const CAMPAIGN_KEYS: &[&str] = &[
    "name",
    "description",
    "tags",
    "repeats",
    "order",
    "until_tail",
];
const MEASURE_KEYS: &[&str] = &[
    "threads",
    "threads_per_cpu",
    "cpus",
    "interval",
    "distance",
    "duration",
    "loops",
    "policy",
    "priority",
    "priospread",
    "dl_runtime",
    "dl_deadline",
    "dl_period",
    "clock",
    "relative",
    "mlock",
    "latency",
    "limits",
    "event_above",
    "event_capacity",
    "explain",
    "explain_recorder",
    "raw",
    "load_start",
    "settle",
];
const CASE_KEYS: &[&str] = &["name", "description", "load"];
const LOAD_KEYS: &[&str] = &[
    "kind",
    "groups",
    "fds",
    "size",
    "transport",
    "mode",
    "threads",
    "megabytes",
    "file_mb",
    "dir",
    "program",
    "args",
];
const TOP_KEYS: &[&str] = &["campaign", "measure", "scenario", "load_case"];

/// The text of a campaign and the name its positions are reported under.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Source<'a> {
    /// The file path as given, or `preset:NAME`.
    pub name: &'a str,
    /// The TOML text.
    pub text: &'a str,
}

impl Source<'_> {
    /// `name:line:column` of a byte offset (both 1-based; the column counts characters).
    pub fn at(&self, offset: usize) -> String {
        let offset = offset.min(self.text.len());
        let before = &self.text[..offset];
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let col = before[line_start..].chars().count() + 1;
        format!("{}:{line}:{col}", self.name)
    }

    /// A usage error located at the start of `span`.
    pub fn error(&self, span: Range<usize>, msg: impl AsRef<str>) -> UsageError {
        UsageError::new(format!("{}: {}", self.at(span.start), msg.as_ref()))
    }

    /// The header of the table `offset` lies in: `[measure]`, `[[scenario]]`, or `the top
    /// level` before any header.
    pub fn table_at(&self, offset: usize) -> String {
        let before = &self.text[..offset.min(self.text.len())];
        let earlier_lines = &before[..before.rfind('\n').map_or(0, |i| i + 1)];
        earlier_lines
            .lines()
            .rev()
            .map(str::trim)
            .find(|l| l.starts_with('['))
            .and_then(|l| l.find(']').map(|i| l[..=i].to_string()))
            .map(|h| {
                if h.starts_with("[[") {
                    format!("{h}]")
                } else {
                    h
                }
            })
            .unwrap_or_else(|| "the top level".to_string())
    }

    /// The key whose value starts at `offset` (`key = value` on that line), if any.
    fn key_before(&self, offset: usize) -> Option<String> {
        let before = &self.text[..offset.min(self.text.len())];
        let line = &before[before.rfind('\n').map_or(0, |i| i + 1)..];
        let lhs = line.trim_end().strip_suffix('=')?;
        let key = lhs.trim().rsplit([',', '{', ' ']).next()?.trim();
        (!key.is_empty()).then(|| key.to_string())
    }

    /// Translates a TOML parse or type error into a located usage error with a hint.
    pub fn toml_error(&self, e: &toml::de::Error) -> UsageError {
        let start = e.span().map_or(0, |s| s.start);
        let msg = e.message().trim().to_string();
        if let Some(key) = msg
            .strip_prefix("unknown field `")
            .and_then(|r| r.split('`').next())
        {
            let table = table_of_fields(&msg).unwrap_or_else(|| self.table_at(start));
            let keys = keys_of(&table);
            let mut hint = match suggest(key, keys) {
                Some(s) => format!("did you mean '{s}'? "),
                None => String::new(),
            };
            hint.push_str(&format!("(keys: {})", keys.join(", ")));
            return UsageError::new(format!(
                "{}: unknown key '{key}' in {table}",
                self.at(start)
            ))
            .hint(hint + "; see docs/campaigns.md");
        }
        let detail = msg
            .strip_prefix("invalid type: ")
            .or_else(|| msg.strip_prefix("invalid value: "));
        if let Some(detail) = detail {
            let what = self
                .key_before(start)
                .map_or(String::new(), |k| format!(" for '{k}'"));
            let detail = plain_types(detail);
            return UsageError::new(format!("{}: invalid value{what}: {detail}", self.at(start)))
                .hint("docs/campaigns.md lists every key with its type");
        }
        UsageError::new(format!("{}: {msg}", self.at(start)))
            .hint("the file must be TOML (https://toml.io); docs/campaigns.md describes the tables")
    }
}

/// The table whose struct serde names in `unknown field ..., expected one of ...`, for the
/// tables the header above cannot tell (inline tables such as `load = [{ ... }]`).
fn table_of_fields(msg: &str) -> Option<String> {
    let expected = msg.split_once("expected ")?.1;
    let table = if expected.starts_with("one of `kind`") {
        "[[load_case.load]]"
    } else if expected.starts_with("one of `name`, `description`, `load`") {
        "[[load_case]]"
    } else if expected.starts_with("one of `name`, `description`, `tags`") {
        "[campaign]"
    } else {
        return None;
    };
    Some(table.to_string())
}

/// serde's type names in words: `expected u32` → `expected a whole number`.
fn plain_types(detail: &str) -> String {
    ["u32", "u64", "i32", "i64", "usize"]
        .iter()
        .fold(detail.to_string(), |d, t| {
            d.replace(&format!("expected {t}"), "expected a whole number")
        })
        .replace("expected a boolean", "expected true or false")
}

fn keys_of(table: &str) -> &'static [&'static str] {
    match table {
        "[campaign]" => CAMPAIGN_KEYS,
        "[measure]" => MEASURE_KEYS,
        "[[scenario]]" => &SCENARIO_KEYS,
        "[[load_case]]" => CASE_KEYS,
        "[[load_case.load]]" => LOAD_KEYS,
        _ => TOP_KEYS,
    }
}

const SCENARIO_KEYS: [&str; MEASURE_KEYS.len() + 2] = {
    let mut k = [""; MEASURE_KEYS.len() + 2];
    k[0] = "name";
    k[1] = "description";
    let mut i = 0;
    while i < MEASURE_KEYS.len() {
        k[i + 2] = MEASURE_KEYS[i];
        i += 1;
    }
    k
};

/// The candidate closest to `word` (by edit distance), if it is close enough to be a typo.
pub(crate) fn suggest<'a>(word: &str, candidates: &[&'a str]) -> Option<&'a str> {
    candidates
        .iter()
        .map(|c| (edit_distance(word, c), *c))
        .filter(|(d, c)| *d <= (c.len() / 3).max(1))
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur.push(sub.min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_are_one_based_lines_and_character_columns() {
        let s = Source {
            name: "f.toml",
            text: "a = 1\n[measure]\n  µx = 2\n",
        };
        assert_eq!(s.at(0), "f.toml:1:1");
        assert_eq!(s.at(6), "f.toml:2:1");
        let x = s.text.find('x').unwrap();
        assert_eq!(s.at(x), "f.toml:3:4");
        assert_eq!(s.table_at(x), "[measure]");
        assert_eq!(s.table_at(2), "the top level");
    }

    #[test]
    fn serde_types_read_as_words() {
        assert_eq!(
            plain_types("string \"x\", expected u32"),
            "string \"x\", expected a whole number"
        );
    }

    #[test]
    fn suggestions_catch_typos_only() {
        assert_eq!(suggest("intervall", MEASURE_KEYS), Some("interval"));
        assert_eq!(suggest("thread", MEASURE_KEYS), Some("threads"));
        assert_eq!(suggest("banana", MEASURE_KEYS), None);
        assert_eq!(SCENARIO_KEYS[2], "threads");
        assert_eq!(SCENARIO_KEYS[SCENARIO_KEYS.len() - 1], "settle");
    }
}
