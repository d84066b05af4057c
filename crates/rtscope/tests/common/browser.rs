//! Headless Chromium for the report tests: a page opened as a user's browser opens it, its
//! console checked for errors, its DOM or a screenshot taken.

use super::{dump, fresh_dir, run_for};
use std::path::Path;
use std::process::Output;
use std::time::Duration;

/// Where Debian's chromium package puts the browser.
pub const CHROMIUM: &str = "/usr/bin/chromium";

/// Chromium on `page` with `extra` args (one invocation, 90 s at most); `None` when Chromium is
/// not installed (a failure under RTSCOPE_TEST_STRICT=1).
pub fn chromium(page: &Path, extra: &[&str], profile: &str) -> Option<Output> {
    rtscope_testkit::require!(
        Path::new(CHROMIUM).exists(),
        "the browser check needs {CHROMIUM} (apt-get install chromium; .ci/run installs it)"
    );
    let profile = fresh_dir(profile);
    let user_data = format!("--user-data-dir={}", profile.display());
    let url = format!("file://{}", page.display());
    let mut args = vec![
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--enable-logging=stderr",
        "--v=0",
        &user_data,
    ];
    args.extend(extra);
    args.push(&url);
    let (out, timed_out) = run_for(CHROMIUM, &args, Duration::from_secs(90));
    assert!(!timed_out, "chromium did not finish\n{}", dump(&out));
    Some(out)
}

/// (width, height, distinct colours, share of non-white pixels) of a PNG file.
pub fn png_facts(path: &Path) -> (u32, u32, usize, f64) {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    rtscope_testkit::image::png_facts(&bytes)
}

pub fn assert_no_console_errors(o: &Output) {
    let err = String::from_utf8_lossy(&o.stderr);
    let bad: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("CONSOLE") || l.contains("Uncaught"))
        .collect();
    assert!(bad.is_empty(), "console messages:\n{}", bad.join("\n"));
}

/// The DOM Chromium renders from `page`, after checking it logged no console error; `None`
/// when Chromium is not installed.
pub fn rendered_dom(page: &Path, profile: &str) -> Option<String> {
    let out = chromium(page, &["--dump-dom"], profile)?;
    assert_no_console_errors(&out);
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The JSON a test page's script put into `<pre id="layout-check">`, read from the DOM that
/// Chromium dumped (`--dump-dom`) into `o`.
pub fn layout_check(o: &Output) -> serde_json::Value {
    let dom = String::from_utf8_lossy(&o.stdout);
    let json = dom
        .split("<pre id=\"layout-check\">")
        .nth(1)
        .and_then(|s| s.split("</pre>").next())
        .unwrap_or_else(|| panic!("no layout check in the DOM:\n{}", dump(o)));
    let json = json
        .replace("&amp;", "&")
        .replace("&lt;", "<")
        .replace("&gt;", ">");
    serde_json::from_str(&json).unwrap()
}
