//! The configuration file read by hand: the subset of TOML it needs — `key = value` lines with
//! basic (`"…"`, escapes `\" \\ \n \t`) or literal (`'…'`) strings, integers, booleans and
//! one-line arrays of strings; `#` comments; no tables. Not the `toml` crate's derive: its
//! deserializer for one more struct cost about 7 KB of the x86-64 binary, which sat at its
//! 4.5 MB budget (BENCHMARKS.md). Anything else is refused with its line, never guessed.

use crate::error::{ConfigError, SyntaxError};

/// A value of the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// A string.
    Str(String),
    /// An integer.
    Int(i64),
    /// A boolean.
    Bool(bool),
    /// An array of strings.
    List(Vec<String>),
}

/// Reads a string starting at the quote `q` of `s`; returns it and the rest after the quote.
fn string(s: &str, q: char) -> Result<(String, &str), SyntaxError> {
    let mut out = String::new();
    let mut chars = s[1..].char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            c if c == q => return Ok((out, &s[i + 2..])),
            '\\' if q == '"' => match chars.next().map(|(_, e)| e) {
                Some('"') => out.push('"'),
                Some('\\') => out.push('\\'),
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                other => return Err(SyntaxError::Escape(other.unwrap_or(' '))),
            },
            c if c.is_control() && c != '\t' => return Err(SyntaxError::Control),
            c => out.push(c),
        }
    }
    Err(SyntaxError::Unterminated)
}

/// What may follow a value: spaces and a comment.
fn end(rest: &str) -> Result<(), SyntaxError> {
    match rest.trim_start() {
        "" => Ok(()),
        r if r.starts_with('#') => Ok(()),
        r => Err(SyntaxError::Trailing(r.chars().take(20).collect())),
    }
}

fn list(mut s: &str) -> Result<Vec<String>, SyntaxError> {
    let mut items = Vec::new();
    s = s[1..].trim_start();
    loop {
        if let Some(rest) = s.strip_prefix(']') {
            end(rest)?;
            return Ok(items);
        }
        let q = s
            .chars()
            .next()
            .filter(|c| *c == '"' || *c == '\'')
            .ok_or(SyntaxError::ListItem)?;
        let (item, rest) = string(s, q)?;
        items.push(item);
        s = rest.trim_start();
        if let Some(rest) = s.strip_prefix(',') {
            s = rest.trim_start();
        } else if !s.starts_with(']') {
            return Err(SyntaxError::ListEnd);
        }
    }
}

fn value(s: &str) -> Result<Value, SyntaxError> {
    match s.chars().next() {
        Some(q @ ('"' | '\'')) => {
            let (v, rest) = string(s, q)?;
            end(rest).map(|()| Value::Str(v))
        }
        Some('[') => list(s).map(Value::List),
        _ => {
            let word = s.split('#').next().unwrap_or("").trim();
            match word {
                "true" => Ok(Value::Bool(true)),
                "false" => Ok(Value::Bool(false)),
                w => w
                    .replace('_', "")
                    .parse()
                    .map(Value::Int)
                    .map_err(|_| SyntaxError::NotAValue(w.to_string())),
            }
        }
    }
}

/// The `(line, key, value)` entries of `text`, in order; a repeated key is an error.
pub fn parse(text: &str) -> Result<Vec<(usize, String, Value)>, ConfigError> {
    let mut out: Vec<(usize, String, Value)> = Vec::new();
    for (n, raw) in text.lines().enumerate() {
        let line = raw.trim();
        let no = n + 1;
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let at = |error| ConfigError::Syntax { line: no, error };
        let (key, rest) = line
            .split_once('=')
            .ok_or_else(|| at(SyntaxError::NotKeyValue))?;
        let key = key.trim();
        if key.is_empty()
            || !key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            return Err(at(SyntaxError::BadKey(key.to_string())));
        }
        if out.iter().any(|(_, k, _)| k == key) {
            return Err(at(SyntaxError::Twice(key.to_string())));
        }
        let v = value(rest.trim()).map_err(at)?;
        out.push((no, key.to_string(), v));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_subset_and_refuses_the_rest_by_line() {
        let t = "# c\nseries = \"press \\\"7\\\"\" # comment\nlisten='127.0.0.1:9464'\npriority = 9_0\nexplain = true\nalert = [\"max>200us\", 'missed>0',]\n\n";
        let v = parse(t).unwrap();
        assert_eq!(v[0], (2, "series".into(), Value::Str("press \"7\"".into())));
        assert_eq!(v[1].2, Value::Str("127.0.0.1:9464".into()));
        assert_eq!(
            (v[2].2.clone(), v[3].2.clone()),
            (Value::Int(90), Value::Bool(true))
        );
        assert_eq!(
            v[4].2,
            Value::List(vec!["max>200us".into(), "missed>0".into()])
        );
        for (bad, what) in [
            ("[table]", "line 1"),
            ("a = \"x", "unterminated"),
            ("a = 1\na = 2", "line 2: 'a' is given twice"),
            ("a = [1]", "quoted strings"),
            ("a = \"x\" y", "unexpected 'y'"),
            ("a = yes", "'yes' is not"),
            ("a b = 1", "bare key"),
            ("a = \"\\q\"", "escape"),
            ("a = [\"x\"", "expected ','"),
        ] {
            let e = parse(bad).unwrap_err().to_string();
            assert!(e.contains(what), "{bad}: {e}");
        }
    }
}
