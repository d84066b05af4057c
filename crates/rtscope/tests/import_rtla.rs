//! `rtscope import` of real `rtla osnoise top` and `rtla osnoise hist` output (issue 33, item
//! 4; fixtures/import/rtla/README.md: Debian 12's rtla 6.1 on its PREEMPT_RT kernel): the runs
//! are noise runs in `rtscope runs`, `rtscope report` draws them in the noise section with
//! rtla's own figures, and `rtscope compare` sets them against an `rtscope noise` run and an
//! oslat import; hostile or broken files exit 2 and record nothing. No figure of the real
//! noise run is asserted, only that the stored figures are what is shown.

use crate::common::{dump, fresh_dir, import_refused as refused, ok_json, run};
use rtscope_report::model::RunData;
use rtscope_report::noise::html::{cells, row};
use rtscope_report::noise::CpuNoise;
use rtscope_store::Store;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Output;

const BIN: &str = env!("CARGO_BIN_EXE_rtscope");

fn rtscope(args: &[&str]) -> Output {
    run(BIN, args)
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/import")
        .join(name)
}

/// Imports `names` (under fixtures/import) into `db`; returns `import --json`'s array.
fn import(db: &Path, names: &[&str]) -> Value {
    let files: Vec<PathBuf> = names.iter().map(|n| fixture(n)).collect();
    let mut args = vec!["import", "--db", db.to_str().unwrap(), "--json"];
    args.extend(files.iter().map(|f| f.to_str().unwrap()));
    ok_json(rtscope(&args))
}

fn show(db: &Path, id: &Value) -> Value {
    let id = id.to_string();
    ok_json(rtscope(&[
        "runs",
        "--db",
        db.to_str().unwrap(),
        "show",
        &id,
        "--json",
    ]))
}

/// The number rows of the last rtla table in `text` (escapes cut out), split on whitespace.
fn rows(text: &str) -> Vec<Vec<u64>> {
    let plain: String = text
        .split('\x1b')
        .map(|p| {
            p.split_once('m')
                .filter(|_| p.starts_with('['))
                .map_or(p.trim_start_matches('c'), |(_, r)| r)
        })
        .collect();
    let mut rows = Vec::new();
    for line in plain.lines() {
        if line.contains("Period") {
            rows.clear();
        } else if line.trim_start().starts_with(|c: char| c.is_ascii_digit()) {
            let nums = line.split_whitespace().map(|w| {
                w.trim_start_matches('#')
                    .replace('.', "")
                    .parse::<u64>()
                    .unwrap()
            });
            rows.push(nums.collect());
        }
    }
    rows
}

#[test]
fn real_rtla_top_and_hist_output_become_noise_runs_with_every_figure() {
    let db = fresh_dir("import-rtla").join("r.db");
    let r = import(&db, &["rtla/top-q.txt", "rtla/hist.txt"]);
    assert_eq!(r[0]["format"], "rtla-osnoise-top", "{r}");
    assert_eq!(r[1]["format"], "rtla-osnoise-hist", "{r}");
    // top: one thread per CPU row, rtla's figures per CPU, nothing made up.
    let top = show(&db, &r[0]["run"]);
    assert_eq!(top["kind"], "noise", "{top}");
    let text = std::fs::read_to_string(fixture("rtla/top-q.txt")).unwrap();
    let want = rows(&text);
    let per = top["config"]["source"]["per_cpu"].as_array().unwrap();
    assert_eq!(per.len(), want.len());
    for ((t, p), w) in top["thread_stats"]
        .as_array()
        .unwrap()
        .iter()
        .zip(per)
        .zip(&want)
    {
        assert_eq!(t["cpu"].as_u64(), Some(w[0]), "{t}");
        assert_eq!(t["samples"].as_u64(), Some(0), "rtla counts no gaps: {t}");
        assert_eq!(t["max_ns"].as_u64(), Some(w[6] * 1000), "max single: {t}");
        assert_eq!(p["periods"].as_u64(), Some(w[1]));
        assert_eq!(p["runtime_ns"].as_u64(), Some(w[2] * 1000));
        assert_eq!(p["noise_ns"].as_u64(), Some(w[3] * 1000));
        assert_eq!(p["max_noise_ns"].as_u64(), Some(w[5] * 1000));
        let counts: Vec<u64> = ["hw", "nmi", "irq", "softirq", "thread"]
            .iter()
            .map(|k| p["counts"][k].as_u64().unwrap())
            .collect();
        assert_eq!(counts, w[7..], "{p}");
    }
    assert_eq!(
        top["config"]["source"]["start_time_from"],
        "file modification time minus the duration the source states"
    );
    // hist: the samples are the noises counted, rows + over.
    let hist = show(&db, &r[1]["run"]);
    assert_eq!(hist["kind"], "noise");
    let counts: Vec<u64> = hist["thread_stats"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["samples"].as_u64().unwrap())
        .collect();
    assert_eq!(counts, [2390, 2400], "hist.txt's count: line");
    let list = ok_json(rtscope(&["runs", "--db", db.to_str().unwrap(), "--json"]));
    let kinds: Vec<&Value> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|r| &r["kind"])
        .collect();
    assert_eq!(kinds, ["noise", "noise"], "{list}");
    let o = rtscope(&["runs", "--db", db.to_str().unwrap()]);
    assert!(o.status.success(), "{}", dump(&o));
    // `runs show` has the longest single noise of each CPU though rtla counted no samples.
    let id = r[0]["run"].to_string();
    let o = rtscope(&["runs", "--db", db.to_str().unwrap(), "show", &id]);
    let text = String::from_utf8_lossy(&o.stdout);
    for w in &want {
        assert!(text.contains(&format!("{}.0", w[6])), "{text}");
    }
}

#[test]
fn report_draws_rtla_imports_in_the_noise_section_with_rtla_s_figures() {
    let dir = fresh_dir("import-rtla-report");
    let db = dir.join("r.db");
    let r = import(
        &db,
        &[
            "rtla/top-c1-T5-culprit.txt",
            "rtla/hist-c1-b10-E50-culprit.txt",
        ],
    );
    let out = dir.join("report");
    let (top, hist) = (r[0]["run"].to_string(), r[1]["run"].to_string());
    let o = rtscope(&[
        "report",
        "--db",
        db.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        &top,
        &hist,
    ]);
    assert!(o.status.success(), "{}", dump(&o));
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("OS noise per CPU"));
    assert!(
        !html.contains("Latency per CPU"),
        "never as wake-up latency"
    );
    let store = Store::open(&db).unwrap();
    for id in [&top, &hist] {
        let d = RunData::from(store.bundle(id.parse().unwrap(), false).unwrap());
        for c in CpuNoise::of_run(&d) {
            let want = row(&cells(&d, &c));
            assert!(html.contains(&want), "{want} not in the page");
        }
    }
    // The top import's row: CPU 1, 45.62 % available, its five counts; the hist import's: no
    // runtime (available -) and no counts (-), never 0.
    let d = RunData::from(store.bundle(top.parse().unwrap(), false).unwrap());
    let c = &CpuNoise::of_run(&d)[0];
    let cells = cells(&d, c);
    assert_eq!(cells[2], "CPU 1");
    assert_eq!(cells[5], "45.62");
    assert_eq!(cells[11..16], ["1702", "0", "1789", "0", "437"]);
    // rtla reads no steal time or SMIs: unknown.
    assert_eq!(cells[16..], ["-", "-"]);
    let d = RunData::from(store.bundle(hist.parse().unwrap(), false).unwrap());
    let c = &CpuNoise::of_run(&d)[0];
    let cells = rtscope_report::noise::html::cells(&d, c);
    assert_eq!((cells[5].as_str(), cells[7].as_str()), ("-", "5041"));
    assert!(cells[11..].iter().all(|c| c == "-"), "{cells:?}");
    assert!(out.join("noise-histogram.svg").exists());
}

/// `compare A B` in `db`: (exit code, stdout).
fn compare(db: &Path, a: &str, b: &str) -> (Option<i32>, String) {
    let o = rtscope(&["compare", a, b, "--db", db.to_str().unwrap()]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", dump(&o));
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
    )
}

/// The row of statistic `stat` in compare's table, split on whitespace.
fn stat_row<'a>(out: &'a str, stat: &str) -> Vec<&'a str> {
    out.lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|w| w.first() == Some(&stat))
        .unwrap_or_else(|| panic!("no {stat} row:\n{out}"))
}

#[test]
fn compare_sets_rtla_imports_against_an_rtscope_noise_run_and_an_oslat_import() {
    let dir = fresh_dir("import-rtla-compare");
    let db = dir.join("r.db");
    let r = import(
        &db,
        &["rtla/top-c1-T5-culprit.txt", "rtla/hist.txt", "oslat.json"],
    );
    let (top, hist, oslat) = (
        r[0]["run"].to_string(),
        r[1]["run"].to_string(),
        r[2]["run"].to_string(),
    );
    // A real rtscope noise run, 1 s on CPU 0.
    let o = crate::noise::one_second_on_cpu_0(&["--db", db.to_str().unwrap()]);
    assert!(o.status.success(), "{}", dump(&o));
    let noise = Store::open(&db)
        .unwrap()
        .last_run()
        .unwrap()
        .unwrap()
        .to_string();
    // top against rtscope noise: both have runtime and noise, so both shares are known;
    // the top import has no histogram: its percentiles are unknown.
    let (_, out) = compare(&db, &noise, &top);
    let avail = stat_row(&out, "available");
    assert_eq!(avail[2], "45.62%", "rtla's runtime and noise: {out}");
    assert_ne!(avail[1], "-", "both shares known: {out}");
    assert_eq!(
        stat_row(&out, "max")[2],
        "32.70ms",
        "rtla's max single: {out}"
    );
    assert!(
        out.contains("interval differs: A 1.000s, B unknown"),
        "{out}"
    );
    assert_eq!(stat_row(&out, "p50")[2], "-", "{out}");
    // hist against rtscope noise: every gap of a loop against noises over the threshold.
    let (_, out) = compare(&db, &noise, &hist);
    assert_eq!(stat_row(&out, "p50")[1..3], ["-", "-"], "{out}");
    assert_eq!(
        stat_row(&out, "available")[2],
        "-",
        "no runtime in hist: {out}"
    );
    assert!(out.contains("not comparable"), "{out}");
    // top against an oslat import (no threshold: its shares are unknown, never 0).
    let (_, out) = compare(&db, &oslat, &top);
    assert_eq!(stat_row(&out, "available")[1], "-", "{out}");
    assert_eq!(stat_row(&out, "max")[1], "9.64ms", "{out}");
}

#[test]
fn hostile_and_broken_rtla_files_exit_2_and_record_nothing() {
    let d = fresh_dir("import-rtla-bad");
    let top = std::fs::read_to_string(fixture("rtla/top-q.txt")).unwrap();
    let hist = std::fs::read_to_string(fixture("rtla/hist.txt")).unwrap();
    let stop = std::fs::read(fixture("rtla/top-stop-culprit.txt")).unwrap();
    refused(&d, "stopped.txt", &stop, "no CPU row");
    let huge = top.replace("9023264", "99999999999999999999999");
    refused(&d, "huge.txt", huge.as_bytes(), "line 4: the runtime");
    let plausible = hist.replace("146       145", "72057594037927936       145");
    refused(&d, "huge-count.txt", plausible.as_bytes(), "not plausible");
    let name = hist.replace("CPU-001", "CPU-\x1b]0;pwned\x07");
    refused(&d, "escape.txt", name.as_bytes(), "line 4");
    let long = format!("{}{}\n", top, "7".repeat(2 << 20));
    refused(&d, "long.txt", long.as_bytes(), "longer than");
    refused(
        &d,
        "cut-top.txt",
        &top.as_bytes()[..top.len() - 40],
        "line 5",
    );
    let half = hist[..hist.len() / 2].rfind('\n').unwrap() + 1;
    refused(
        &d,
        "cut-hist.txt",
        &hist.as_bytes()[..half],
        "no 'over:' line",
    );
    let timerlat =
        "# RTLA timerlat histogram\n# Time unit is microseconds (us)\nIndex   IRQ-000   Thr-000\n";
    refused(&d, "timerlat.txt", timerlat.as_bytes(), "not timerlat");
    // A file forced to the other rtla format.
    let file = d.join("top-as-hist.txt");
    std::fs::write(&file, &top).unwrap();
    let db = d.join("forced.db");
    let o = rtscope(&[
        "import",
        "--db",
        db.to_str().unwrap(),
        "--format",
        "rtla-osnoise-hist",
        file.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", dump(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("line 1"),
        "{}",
        dump(&o)
    );
    assert!(!db.exists());
}
