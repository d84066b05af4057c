//! Strings already in a database — written by any SQLite writer, a merged board's database or
//! an older rtscope, never checked by this rtscope's input rules — reach every output escaped
//! (issue 49 item 4): a tag value holding ESC and BEL, set with SQL, in the report of several
//! runs (HTML, every SVG parsed as XML by xmllint, CSV, Markdown), on the terminal of `report`,
//! `runs` and `compare`, in `export`'s CSV and JSON files, and in compare's JUnit.

use crate::common;
use crate::fleet_ssh::xsd_valid;

use std::path::Path;
use std::process::{Command, Output};

/// The hostile text added to every `kernel` tag value and label: an escape sequence, a bell,
/// markup.
const HOSTILE: &str = "\u{1b}[31m\u{7}<b>&";

/// Four runs (labels `ka`, `kb`; tags `kernel=a`, `kernel=b`), then [`HOSTILE`] appended to
/// each tag value and label with SQL.
fn hostile_db(dir: &Path) -> std::path::PathBuf {
    let db = dir.join("r.db");
    let mut store = rtscope_store::Store::open(&db).unwrap();
    for (kernel, seed) in [("a", 1), ("a", 2), ("b", 3), ("b", 4)] {
        let spec = rtscope_testkit::synthetic::SyntheticRun {
            label: format!("k{kernel}"),
            samples: 3_000,
            seed,
            tags: vec![("kernel".into(), kernel.into())],
            ..Default::default()
        };
        rtscope_testkit::synthetic::write_run(&mut store, &spec).unwrap();
    }
    drop(store);
    let c = rusqlite::Connection::open(&db).unwrap();
    let n = c
        .execute(
            "UPDATE tags SET value = value || ?1 WHERE key = 'kernel'",
            [HOSTILE],
        )
        .unwrap();
    assert_eq!(n, 4);
    c.execute("UPDATE runs SET label = label || ?1", [HOSTILE])
        .unwrap();
    db
}

/// The control characters (but newline, carriage return, tab) in `bytes`.
fn raw_controls(bytes: &[u8]) -> usize {
    bytes
        .iter()
        .filter(|&&b| (b < 0x20 && !matches!(b, b'\n' | b'\r' | b'\t')) || b == 0x7f)
        .count()
}

fn rtscope(args: &[&str], db: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rtscope"))
        .args(args)
        .arg("--db")
        .arg(db)
        .output()
        .unwrap()
}

/// The repro: 14 ESC in report.html and 7 SVGs that were not XML (cdf, exceedance,
/// histogram, monitor-cpu-busy, monitor-interrupts, over-time, tail) for a tag holding
/// ESC/BEL in a report of several runs.
#[test]
fn a_tag_holding_esc_and_bel_never_reaches_a_report_raw() {
    rtscope_testkit::require!(
        rtscope_testkit::have("xmllint", "--version"),
        "xmllint is not installed (apt-get install libxml2-utils; .ci/run installs it)"
    );
    let dir = common::fresh_dir("hostile-db-report");
    let db = hostile_db(&dir);
    let rep = dir.join("rep");
    let o = rtscope(
        &["report", "1", "2", "3", "4", "-o", rep.to_str().unwrap()],
        &db,
    );
    assert_eq!(o.status.code(), Some(0), "{}", common::dump(&o));
    assert_eq!(raw_controls(&o.stdout) + raw_controls(&o.stderr), 0);
    let mut svgs = Vec::new();
    for e in std::fs::read_dir(&rep).unwrap() {
        let p = e.unwrap().path();
        let ext = p.extension().and_then(|x| x.to_str()).unwrap_or("");
        if !matches!(ext, "svg" | "html" | "csv" | "md") {
            continue;
        }
        let body = std::fs::read(&p).unwrap();
        assert_eq!(
            raw_controls(&body),
            0,
            "{} holds a control character",
            p.display()
        );
        if ext == "svg" {
            svgs.push(p);
        }
    }
    // The figures the issue found broken, at least, each well-formed XML.
    let names: Vec<String> = svgs
        .iter()
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    for want in ["cdf", "exceedance", "histogram", "over-time", "tail"] {
        assert!(names.iter().any(|n| n == want), "{want} not in {names:?}");
    }
    for svg in &svgs {
        let v = Command::new("xmllint")
            .arg("--noout")
            .arg(svg)
            .output()
            .unwrap();
        assert!(
            v.status.success(),
            "{}: {}",
            svg.display(),
            String::from_utf8_lossy(&v.stderr)
        );
    }
    // Shown, not dropped: the escape is visible where the tag is named.
    let html = std::fs::read_to_string(rep.join("report.html")).unwrap();
    assert!(
        html.contains("\\x1b[31m\\x07&lt;b&gt;&amp;"),
        "the tag is shown escaped"
    );
    assert!(std::fs::read_to_string(rep.join("cdf.svg"))
        .unwrap()
        .contains("\\x1b[31m\\x07"));
}

/// The same database on the terminal of `runs` and `compare` (its groups selected by the
/// hostile labels), in `export`'s CSV and JSON files, and in compare's JUnit (valid against the
/// XSD).
#[test]
fn a_tag_holding_esc_and_bel_never_reaches_the_terminal_or_junit_raw() {
    let dir = common::fresh_dir("hostile-db-terminal");
    let db = hostile_db(&dir);
    for args in [&["runs"][..], &["runs", "show", "1"], &["runs", "--json"]] {
        let o = rtscope(args, &db);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", common::dump(&o));
        assert_eq!(
            raw_controls(&o.stdout) + raw_controls(&o.stderr),
            0,
            "{args:?}: {}",
            common::dump(&o)
        );
    }
    // CSV and JSON exports of a run: its tags and label escaped in every file.
    let exp = dir.join("exp");
    for f in ["csv", "json"] {
        let o = rtscope(&["export", "1", "-f", f, "-o", exp.to_str().unwrap()], &db);
        assert_eq!(o.status.code(), Some(0), "{f}: {}", common::dump(&o));
    }
    let mut files = 0;
    for e in std::fs::read_dir(&exp).unwrap() {
        let p = e.unwrap().path();
        assert_eq!(
            raw_controls(&std::fs::read(&p).unwrap()),
            0,
            "{}",
            p.display()
        );
        files += 1;
    }
    assert!(files > 1, "the exports were written");
    let junit = dir.join("cmp.xml");
    let ci = format!("--ci-output=junit={}", junit.display());
    let (a, b) = (format!("label:ka{HOSTILE}"), format!("label:kb{HOSTILE}"));
    let o = rtscope(&["compare", &a, &b, &ci], &db);
    assert!(
        matches!(o.status.code(), Some(0 | 1)),
        "{}",
        common::dump(&o)
    );
    assert_eq!(raw_controls(&o.stdout) + raw_controls(&o.stderr), 0);
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("\\x1b"),
        "{}",
        common::dump(&o)
    );
    assert_eq!(raw_controls(&std::fs::read(&junit).unwrap()), 0);
    xsd_valid(&junit);
}
