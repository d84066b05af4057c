//! Where versioned documents are defined: every `"rtscope.<name>/<version>"` string literal in
//! the workspace's production code (`crates/*/src`, without `#[cfg(test)]` code and test files)
//! lives in rtscope-present, or in rtscope-export (a run as CSV / JSON / Parquet), save the
//! exceptions listed in [`EXCEPTIONS`], each with the reason it is still elsewhere. A schema
//! defined in another crate fails the test, and so does an exception that no longer occurs
//! (remove it from the list when its document moves). Help text that names a schema inside a
//! sentence is not a definition and is not counted.

use std::path::{Path, PathBuf};

/// The crates that may define a versioned document.
const HOMES: [&str; 2] = ["rtscope-present", "rtscope-export"];

/// Documents still defined elsewhere: (file below `crates/`, schema, why).
const EXCEPTIONS: [(&str, &str, &str); 0] = [];

/// A schema literal found: the file (below `crates/`), its line, the schema.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Found {
    file: String,
    line: usize,
    schema: String,
}

/// Whether `s` is a schema name: `rtscope.<name>/<version>`, the name lower-case letters,
/// digits, `-` and `_`, the version digits.
fn is_schema(s: &str) -> bool {
    let Some(rest) = s.strip_prefix("rtscope.") else {
        return false;
    };
    let Some((name, version)) = rest.split_once('/') else {
        return false;
    };
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
        && !version.is_empty()
        && version.chars().all(|c| c.is_ascii_digit())
}

/// The lines of `text` outside `#[cfg(test)]` items (a `mod tests;` line, or a block from its
/// opening brace to the matching closing one), numbered from 1.
fn production_lines(text: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let (mut skipping, mut depth, mut opened) = (false, 0i64, false);
    for (i, line) in text.lines().enumerate() {
        if !skipping && line.trim() == "#[cfg(test)]" {
            skipping = true;
            depth = 0;
            opened = false;
            continue;
        }
        if !skipping {
            out.push((i + 1, line));
            continue;
        }
        for c in line.chars() {
            match c {
                '{' => {
                    depth += 1;
                    opened = true;
                }
                '}' => depth -= 1,
                _ => {}
            }
        }
        // An attribute before the item keeps the skip going; a `;` item or a closed block
        // ends it.
        let attribute = line.trim_start().starts_with("#[") && !opened;
        if !attribute && (opened && depth <= 0 || !opened && line.trim_end().ends_with(';')) {
            skipping = false;
        }
    }
    out
}

/// Every whole string literal of `text`'s production lines that is a schema name.
fn schemas_in(file: &str, text: &str) -> Vec<Found> {
    let mut found = Vec::new();
    for (line, l) in production_lines(text) {
        let mut rest = l;
        while let Some(at) = rest.find("\"rtscope.") {
            let literal = &rest[at + 1..];
            let Some(end) = literal.find('"') else {
                break;
            };
            if is_schema(&literal[..end]) {
                found.push(Found {
                    file: file.to_string(),
                    line,
                    schema: literal[..end].to_string(),
                });
            }
            rest = &literal[end + 1..];
        }
    }
    found
}

/// The `.rs` files below `dir` that are not test files (`tests.rs`, `*_tests.rs`, a `tests`
/// directory).
fn source_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let path = e.path();
        let name = e.file_name().to_string_lossy().into_owned();
        if path.is_dir() {
            if name != "tests" {
                source_files(&path, out);
            }
        } else if name.ends_with(".rs") && name != "tests.rs" && !name.ends_with("_tests.rs") {
            out.push(path);
        }
    }
}

/// Every schema literal of the workspace's production code.
fn workspace_schemas() -> Vec<Found> {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    for krate in std::fs::read_dir(&crates)
        .expect("the crates directory")
        .flatten()
    {
        source_files(&krate.path().join("src"), &mut files);
    }
    files.sort();
    let mut found = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).expect("a source file");
        let rel = f.strip_prefix(&crates).unwrap_or(&f).to_string_lossy();
        found.extend(schemas_in(&rel, &text));
    }
    found
}

#[test]
fn every_versioned_document_is_defined_in_present_or_export_or_listed_with_its_reason() {
    let found = workspace_schemas();
    let home = |f: &Found| HOMES.iter().any(|h| f.file.starts_with(&format!("{h}/")));
    let excepted = |f: &Found| {
        EXCEPTIONS
            .iter()
            .any(|(file, schema, _)| f.file == *file && f.schema == *schema)
    };
    let outside: Vec<String> = found
        .iter()
        .filter(|f| !home(f) && !excepted(f))
        .map(|f| format!("{}:{}: \"{}\"", f.file, f.line, f.schema))
        .collect();
    assert!(
        outside.is_empty(),
        "versioned documents defined outside rtscope-present and rtscope-export (move them, \
         or list them in EXCEPTIONS with the reason):\n{}",
        outside.join("\n")
    );
    let stale: Vec<String> = EXCEPTIONS
        .iter()
        .filter(|(file, schema, _)| !found.iter().any(|f| f.file == *file && f.schema == *schema))
        .map(|(file, schema, why)| format!("{file}: \"{schema}\" ({why})"))
        .collect();
    assert!(
        stale.is_empty(),
        "exceptions that no longer occur (remove them from EXCEPTIONS):\n{}",
        stale.join("\n")
    );
    // The walk reads the workspace: present's own documents are among what it found.
    for schema in [
        "rtscope.compare/3",
        "rtscope.measure/1",
        "rtscope.respond/1",
        "rtscope.noise/1",
        "rtscope.hwnoise/1",
        "rtscope.tail/1",
    ] {
        assert!(
            found
                .iter()
                .any(|f| f.schema == schema && f.file.starts_with("rtscope-present/")),
            "{schema} not found in rtscope-present: {found:?}"
        );
    }
}

#[test]
fn the_scan_counts_whole_literals_outside_test_code_and_not_schemas_named_in_sentences() {
    let text = r#"
const A: &str = "rtscope.alpha/2";
const HELP: &str = "Write JSON (schema rtscope.beta/1)";
let doc = json!({"schema": "rtscope.gamma/10", "x": "rtscope.delta"});
#[cfg(test)]
mod tests;
const B: &str = "rtscope.epsilon/1";
#[cfg(test)]
#[allow(dead_code)]
mod tests {
    fn f() {
        let s = "rtscope.zeta/1";
    }
}
const C: &str = "rtscope.eta/3";
"#;
    let found: Vec<(usize, String)> = schemas_in("x.rs", text)
        .into_iter()
        .map(|f| (f.line, f.schema))
        .collect();
    assert_eq!(
        found,
        vec![
            (2, "rtscope.alpha/2".to_string()),
            (4, "rtscope.gamma/10".to_string()),
            (7, "rtscope.epsilon/1".to_string()),
            (15, "rtscope.eta/3".to_string()),
        ]
    );
    assert!(!is_schema("rtscope.Noise/1") && !is_schema("rtscope.noise/v1"));
}
