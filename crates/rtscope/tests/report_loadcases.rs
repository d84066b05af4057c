//! Issue 51: the report of the seed-002 design (../shared/STUDIES.md, study 3: five load
//! cases on a regular and an RT kernel), as four short real campaigns — ten groups of two
//! runs — opened in headless Chromium: the answer first and within the first screen, each
//! load case's kernels compared like with like, the warnings right below it collapsed to
//! one counted line, then the runs; the page never wider than the window.

use crate::common;
use crate::common::browser::{assert_no_console_errors, chromium, layout_check, png_facts};
use std::path::Path;
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_rtscope");

const CASES: [&str; 5] = ["idle", "hackbench", "stress-m2", "stress-m4", "stress-m8"];

/// Measures the page as a first-time reader sees it at 1280 × 900 and writes JSON into
/// `<pre id="layout-check">`: the top and bottom of the answer, the warnings and the runs, the
/// warnings' summary line and whether it is open, the answer's group lines and comparisons,
/// and the page's width against the window's.
const CHECK_JS: &str = r#"<pre id="layout-check"></pre><script>
const box = sel => { const e = document.querySelector(sel); if (!e) return null;
  const b = e.getBoundingClientRect(); return {top: b.top, bottom: b.bottom, left: b.left, right: b.right}; };
const details = document.querySelector('details.warn');
document.getElementById('layout-check').textContent = JSON.stringify({
  answer: box('#answer'), warnings: box('#warnings'), summary: box('details.warn summary'),
  runs: box('#runs'), window: {w: window.innerWidth, h: window.innerHeight},
  page_width: document.documentElement.scrollWidth,
  summary_text: details ? details.querySelector('summary').textContent : null,
  groups: [...document.querySelectorAll('#answer > ul:not(.verdicts) > li')].map(l => l.textContent),
  verdicts: [...document.querySelectorAll('#answer ul.verdicts > li')].map(l => l.textContent),
  answer_overflows: [...document.querySelectorAll('#answer *')].some(e => e.scrollWidth > e.clientWidth + 1 && getComputedStyle(e).overflowX !== 'visible'),
});
</script>"#;

/// Four campaigns of the `loadcases` preset at 1 s a run: kernel=regular, rt, regular, rt.
fn four_campaigns(db: &Path) {
    for kernel in ["regular", "rt", "regular", "rt"] {
        let tag = format!("kernel={kernel}");
        let args = [
            "run",
            "--preset",
            "loadcases",
            "--duration",
            "1s",
            "--tag",
            &tag,
            "--explain",
            "off",
            "-q",
            "--db",
            db.to_str().unwrap(),
        ];
        let (o, timed_out) = common::run_for(BIN, &args, Duration::from_secs(180));
        assert!(
            !timed_out,
            "a campaign did not finish\n{}",
            common::dump(&o)
        );
        assert_eq!(o.status.code(), Some(0), "{}", common::dump(&o));
    }
}

#[test]
fn the_loadcases_report_reads_answer_then_warnings_on_the_first_screen_in_chromium() {
    rtscope_testkit::require_root!("campaigns at SCHED_FIFO with locked memory and their loads");
    let rt = common::rt_lock();
    let dir = common::fresh_dir("report-loadcases");
    let db = dir.join("lc.db");
    four_campaigns(&db);
    // The report and the browser run no SCHED_FIFO thread: the lock's other tests go on.
    drop(rt);
    let out = dir.join("out");
    let o = common::run(
        BIN,
        &[
            "report",
            "--db",
            db.to_str().unwrap(),
            "campaign=loadcases",
            "-o",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", common::dump(&o));
    let page = std::fs::read_to_string(out.join("report.html")).unwrap();
    // In the page's order: the answer, the warnings, the runs.
    let at = |s: &str| page.find(s).unwrap_or_else(|| panic!("{s} missing"));
    assert!(at("id=\"answer\"") < at("id=\"warnings\""));
    assert!(at("id=\"warnings\"") < at("id=\"runs\""));
    let check = out.join("check.html");
    std::fs::write(
        &check,
        page.replace("</body>", &format!("{CHECK_JS}</body>")),
    )
    .unwrap();
    let Some(o) = chromium(
        &check,
        &["--dump-dom", "--window-size=1280,900"],
        "chromium-report-loadcases",
    ) else {
        return;
    };
    assert_no_console_errors(&o);
    let v = layout_check(&o);
    let n = |p: &str| {
        v.pointer(p)
            .and_then(serde_json::Value::as_f64)
            .unwrap_or_else(|| panic!("{p} missing: {v}"))
    };
    // Ten groups, one line each, each with its worst wake-up; the answer starts on the first
    // screen and the warnings' counted line follows it directly.
    let groups = v["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 10, "{v}");
    for (g, (kernel, case)) in groups.iter().zip(
        ["regular", "rt"]
            .iter()
            .flat_map(|k| CASES.iter().map(move |c| (k, c))),
    ) {
        let g = g.as_str().unwrap();
        assert!(
            g.starts_with(&format!("kernel={kernel} · {case}: worst ")),
            "{g}"
        );
    }
    // Each load case's kernels compared, like with like.
    let verdicts: Vec<&str> = v["verdicts"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|x| x.as_str())
        .collect();
    assert_eq!(verdicts.len(), 5, "{v}");
    for (line, case) in verdicts.iter().zip(CASES) {
        assert!(
            line.starts_with(&format!("{case}: kernel=rt against kernel=regular: worst ")),
            "{line}"
        );
    }
    assert!(
        n("/answer/top") < n("/window/h"),
        "the answer starts below the first screen: {v}"
    );
    assert!(n("/warnings/top") >= n("/answer/bottom"), "{v}");
    assert!(
        n("/warnings/top") - n("/answer/bottom") < 80.0,
        "something between the answer and the warnings: {v}"
    );
    assert!(n("/summary/top") < n("/runs/top"), "{v}");
    let summary = v["summary_text"].as_str().unwrap_or_default();
    assert!(
        summary
            .split_whitespace()
            .next()
            .is_some_and(|c| c.parse::<u32>().is_ok())
            && summary.contains(" finding(s): "),
        "the warnings' line counts them: {summary}"
    );
    assert!(
        n("/page_width") <= n("/window/w"),
        "the page is wider than the window: {v}"
    );
    assert_eq!(v["answer_overflows"], false, "{v}");
    // The first screen as a picture: drawn, not blank.
    let shot = dir.join("first-screen.png");
    let arg = format!("--screenshot={}", shot.display());
    let Some(o) = chromium(
        &out.join("report.html"),
        &[&arg, "--window-size=1280,900"],
        "chromium-report-loadcases-shot",
    ) else {
        return;
    };
    assert_no_console_errors(&o);
    let (w, h, colours, ink) = png_facts(&shot);
    assert_eq!((w, h), (1280, 900));
    assert!(colours > 50 && ink > 0.05, "{colours} colours, {ink} ink");
}
