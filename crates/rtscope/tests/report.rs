//! `rtscope report` as a person sees it: the real binary on a real database, the page opened
//! in headless Chromium (no console errors, every plot and key number present, a screenshot that
//! is not blank), the PNGs decoded, and run labels shown as text.

use crate::common;
use crate::common::browser::{assert_no_console_errors, chromium, png_facts, rendered_dom};

use rtscope_store::{CampaignRun, NewCampaign, RunStatus, Store};
use rtscope_testkit::synthetic::{write_run, SyntheticRun};
use std::path::{Path, PathBuf};
use std::process::Output;

fn rtscope(args: &[&str]) -> Output {
    common::run(env!("CARGO_BIN_EXE_rtscope"), args)
}

fn db_path(name: &str) -> PathBuf {
    let p = common::temp_path(&format!("{name}.db"));
    for ext in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{ext}", p.display()));
    }
    p
}

/// `rtscope report --campaign loadcases` of `db` into `dir`, with `extra` options.
fn report_campaign(db: &Path, dir: &Path, extra: &[&str]) -> Output {
    let (db_s, dir_s) = (db.to_str().unwrap(), dir.to_str().unwrap());
    let mut args = vec![
        "report",
        "--db",
        db_s,
        "--campaign",
        "loadcases",
        "-o",
        dir_s,
    ];
    args.extend(extra);
    rtscope(&args)
}

/// A campaign of three synthetic runs (with monitors and loads) in a fresh database.
fn campaign_db(name: &str) -> PathBuf {
    let db = db_path(name);
    let mut store = Store::open(&db).unwrap();
    let cid = store
        .begin_campaign(&NewCampaign {
            name: "loadcases".into(),
            source: "preset:test".into(),
            definition: String::new(),
            started: "2026-11-22T03:00:00Z".into(),
            planned_runs: 3,
            command_line: vec!["rtscope".into(), "run".into()],
        })
        .unwrap();
    for (seq, case) in ["idle", "cpu", "messaging"].iter().enumerate() {
        let spec = SyntheticRun {
            label: format!("{case}-run"),
            samples: 30_000,
            base_ns: 4_000 + 3_000 * seq as u64,
            seed: seq as u64 + 7,
            ..SyntheticRun::default()
        };
        let run_id = write_run(&mut store, &spec).unwrap();
        let place = CampaignRun {
            seq: seq as u32,
            run_id,
            scenario: "default".into(),
            load_case: case.to_string(),
            repeat: 1,
            status: RunStatus::Running,
        };
        store.add_campaign_run(cid, &place).unwrap();
    }
    store
        .finish_campaign(cid, RunStatus::Complete, "2026-11-22T04:00:00Z")
        .unwrap();
    db
}

#[test]
fn a_campaign_report_renders_in_chromium_with_every_plot_and_number() {
    let db = campaign_db("campaign");
    let dir = common::fresh_dir("report-campaign");
    let o = report_campaign(&db, &dir, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", common::dump(&o));
    let csv = std::fs::read_to_string(dir.join("summary.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + 3 * 3, "{csv}");
    let page = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(page.contains("Maximum latency per load case"));
    for fig in [
        "histogram",
        "tail",
        "cdf",
        "exceedance",
        "over-time",
        "monitor-temperature",
    ] {
        assert!(page.contains(&format!("id=\"fig-{fig}\"")), "{fig} missing");
        let (w, h, colours, ink) = png_facts(&dir.join(format!("{fig}.png")));
        assert!(
            w >= 900 && h >= 500 && colours > 20 && ink > 0.02,
            "{fig}.png: {w}×{h}, {colours} colours, {ink} ink"
        );
    }
    let all_idle = csv
        .lines()
        .find(|l| l.contains(",idle,all,"))
        .expect("idle all row");
    let max_us = all_idle.split(',').nth(14).unwrap();
    assert!(
        page.contains(&format!("<td>{:.1}</td>", max_us.parse::<f64>().unwrap())),
        "max {max_us} µs not in the page"
    );
    let shot = dir.join("screenshot.png");
    let arg = format!("--screenshot={}", shot.display());
    let Some(out) = chromium(
        &dir.join("report.html"),
        &[&arg, "--window-size=1280,2000"],
        "chromium-campaign",
    ) else {
        return;
    };
    assert_no_console_errors(&out);
    let (w, h, colours, ink) = png_facts(&shot);
    assert_eq!((w, h), (1280, 2000));
    assert!(
        colours > 50 && ink > 0.05,
        "screenshot looks blank: {colours} colours, {ink} ink"
    );
}

#[test]
fn a_measured_run_labelled_as_a_script_renders_as_text_in_the_browser() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    let db = db_path("script");
    let o = {
        let _rt = common::rt_lock();
        rtscope(&[
            "measure",
            "-D",
            "2s",
            "-i",
            "1ms",
            "-q",
            "--raw",
            "--db",
            db.to_str().unwrap(),
            "--label",
            "<script>alert(1)</script>",
        ])
    };
    assert_eq!(o.status.code(), Some(0), "{}", common::dump(&o));
    let dir = common::fresh_dir("report-script");
    let o = rtscope(&[
        "report",
        "--raw",
        "--db",
        db.to_str().unwrap(),
        "-o",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", common::dump(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("report.html"));
    let page = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(
        page.contains("Drawn from raw samples"),
        "--raw did not use the raw samples"
    );
    let Some(dom) = rendered_dom(&dir.join("report.html"), "chromium-script") else {
        return;
    };
    assert!(
        dom.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
        "label not shown as text"
    );
    assert!(
        !dom.contains("<script>"),
        "a script element made it into the page"
    );
    assert!(
        dom.contains("Latency per CPU") && dom.contains("over-time.png"),
        "page content missing"
    );
}

#[test]
fn bad_selectors_and_missing_databases_exit_2_with_a_hint() {
    let missing = common::temp_path("no-such.db");
    let o = rtscope(&["report", "--db", missing.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no run database at"));
    let db = campaign_db("selectors");
    let db_s = db.to_str().unwrap();
    let o = rtscope(&["report", "--db", db_s, "999"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("no run 999"),
        "{}",
        common::dump(&o)
    );
    let o = rtscope(&["report", "--db", db_s, "--campaign", "nope"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("no campaign named 'nope'") && err.contains("hint:"),
        "{err}"
    );
}

#[test]
fn without_a_selector_the_newest_run_and_its_campaign_are_reported() {
    let db = campaign_db("newest");
    let dir = common::fresh_dir("report-newest");
    let (db_s, dir_s) = (db.to_str().unwrap(), dir.to_str().unwrap());
    let o = rtscope(&["report", "--db", db_s, "-o", dir_s]);
    assert_eq!(o.status.code(), Some(0), "{}", common::dump(&o));
    // The newest run belongs to a campaign of 3 runs: all of them.
    assert!(String::from_utf8_lossy(&o.stdout).contains("report of 3 runs"));
    let o = rtscope(&["report", "last", "--db", db_s, "-o", dir_s]);
    assert_eq!(o.status.code(), Some(0), "{}", common::dump(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("report of run 3"));
    let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(
        md.contains("| 3 | messaging-run | messaging | all |"),
        "{md}"
    );
}

/// `--cols kernel --rows case --xmax`: the studies' table with one column per kernel, the
/// histograms cut at the limit, the events section, all rendered by Chromium without errors.
#[test]
fn rows_cols_and_xmax_lay_out_the_study_table_and_render_in_chromium() {
    let db = campaign_db("layout");
    {
        let mut store = Store::open(&db).unwrap();
        for spec in [("std", 1), ("rt", 2), ("std", 3)] {
            store.set_tag(spec.1, "kernel", Some(spec.0)).unwrap();
        }
    }
    let dir = common::fresh_dir("report-layout");
    let o = report_campaign(
        &db,
        &dir,
        &["--cols", "kernel", "--rows", "case", "--xmax", "20"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", common::dump(&o));
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap();
    for (file, want) in [
        ("summary.md", "| case | kernel=std | kernel=rt |"),
        ("histogram.svg", "later samples counted at 20 µs"),
    ] {
        assert!(read(file).contains(want), "{file} lacks {want}");
    }
    let Some(dom) = rendered_dom(&dir.join("report.html"), "chromium-layout") else {
        return;
    };
    assert!(
        dom.contains("id=\"events\"") && dom.contains("id=\"groups\""),
        "sections missing"
    );
}
