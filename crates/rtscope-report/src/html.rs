//! `report.html`: one self-contained page (inline SVG and CSS, no script, no network). Every
//! text that comes from a run (labels, hostnames, command lines, load errors) is escaped.

use crate::figures::{NamedFigure, Section};
use crate::markup::figures;
use crate::model::RunData;
use crate::table::{us1, SummaryRow};
use crate::warnings::Warning;
use crate::ReportOptions;
use rtscope_core::PERCENTILES;
use std::fmt::Write;

use crate::escape::escape;

pub(crate) const CSS: &str = "body{font-family:'DejaVu Sans',Verdana,Arial,sans-serif;margin:1.5em auto;max-width:1280px;padding:0 1em;color:#222}\
h1{font-size:1.6em;margin-bottom:.2em}h2{border-bottom:2px solid #ddd;padding-bottom:.2em;margin-top:1.6em}\
table{border-collapse:collapse;margin:.6em 0;font-size:.88em}th,td{border:1px solid #ccc;padding:3px 7px;text-align:right;vertical-align:top}\
th{background:#f2f2f2}td.t,th.t{text-align:left}tr.all td{font-weight:bold;background:#fafafa}\
.warn{background:#fff4e0;border:1px solid #e0a040;border-radius:4px;padding:.5em 1em}.warn li{margin:.3em 0}\
.ok{background:#eef8ee;border:1px solid #8c8;border-radius:4px;padding:.5em 1em}\
figure{margin:1em 0}figure svg,figure img{max-width:100%;height:auto;border:1px solid #eee}figcaption{font-size:.9em;color:#444}\
code{font-size:.9em;word-break:break-all}.muted{color:#777}\
.answer{background:#eef3fb;border:1px solid #7a9cd0;border-radius:4px;padding:.2em 1em;margin:1em 0}.answer h2{border:0;margin:.4em 0}\
details.warn summary{cursor:pointer;font-weight:bold}";

/// The sections the navigation may link to, in its order: `(id, link text)`.
const NAV: [(&str, &str); 12] = [
    ("answer", "Answer"),
    ("noise-answer", "Noise answer"),
    ("warnings", "Warnings"),
    ("runs", "Runs"),
    ("noise", "OS noise"),
    ("statistics", "Statistics"),
    ("latency", "Latency plots"),
    ("events", "Events"),
    ("why", "Why late"),
    ("monitors", "Monitors"),
    ("loads", "Loads"),
    ("environment", "Environment"),
];

/// The runs of a report: all of them (runs, warnings, loads, environment), those with
/// wake-up latencies and those of kind `noise` (busy-loop gaps, [`crate::noise`]).
pub struct Selection<'a> {
    /// Every run, in the order given.
    pub all: &'a [RunData],
    /// The latency runs.
    pub latency: &'a [RunData],
    /// The noise runs.
    pub noise: &'a [RunData],
}

impl<'a> Selection<'a> {
    /// Latency runs alone.
    pub fn latency(runs: &'a [RunData]) -> Selection<'a> {
        Selection {
            all: runs,
            latency: runs,
            noise: &[],
        }
    }
}

/// The whole page: the latency sections over the latency runs, the noise section over the
/// noise runs, the rest over all.
pub fn page(
    sel: &Selection<'_>,
    grouping: &crate::group::Grouping,
    rows: &[SummaryRow],
    warns: &[Warning],
    figs: &[(&NamedFigure, &str)],
    opts: &ReportOptions,
) -> String {
    let (all, runs) = (sel.all, sel.latency);
    let title = opts.title.clone().unwrap_or_else(|| default_title(all));
    let mut h = String::with_capacity(1 << 20);
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{t}</title><style>{CSS}</style></head><body>\n<h1>{t}</h1>\n",
        t = escape(&title)
    );
    // The navigation is written last, with a link to each section the page has.
    let nav_at = h.len();
    if !runs.is_empty() {
        crate::headline::section(&mut h, runs, grouping);
    }
    // Noise runs' answer: the page's own on a page of noise runs alone.
    let noise_answer = if runs.is_empty() {
        "answer"
    } else {
        "noise-answer"
    };
    crate::noise::answer::section(&mut h, sel.noise, noise_answer);
    // The warnings, collapsed to one line with their count, right below the answer: the
    // Runs table of a campaign (20 rows in the seed-002 design) would push them off the first
    // screen.
    warnings(&mut h, warns);
    header(&mut h, all);
    if !runs.is_empty() {
        latency(&mut h, runs, grouping, rows, figs, opts.tail);
    }
    crate::noise::html::section(&mut h, sel.noise, figs);
    h.push_str("<h2 id=\"monitors\">Monitors</h2>\n");
    if !figs.iter().any(|(f, _)| f.section == Section::Monitors)
        && all.iter().all(|r| r.top.is_empty())
    {
        h.push_str("<p class=\"muted\">No monitor data was recorded for these runs.</p>\n");
    }
    figures(&mut h, figs, Section::Monitors);
    top(&mut h, all);
    loads(&mut h, all);
    environment(&mut h, all);
    let _ = write!(
        h,
        "<p class=\"muted\">Made by rtscope {}.</p>\n</body></html>\n",
        env!("CARGO_PKG_VERSION")
    );
    let nav = nav(&h);
    h.insert_str(nav_at, &nav);
    h
}

/// The navigation: a link to each of [`NAV`]'s sections the page has (an `id` of it), in
/// that order, and to `summary.csv`.
fn nav(page: &str) -> String {
    let links: Vec<String> = NAV
        .iter()
        .filter(|(id, _)| page.contains(&format!(" id=\"{id}\"")))
        .map(|(id, name)| format!("<a href=\"#{id}\">{name}</a>"))
        .chain(["<a href=\"summary.csv\">summary.csv</a>".to_string()])
        .collect();
    format!("<nav>{}</nav>\n", links.join(" · "))
}

/// The latency sections: per-case tables, statistics, plots, samples and why late.
fn latency(
    h: &mut String,
    runs: &[RunData],
    grouping: &crate::group::Grouping,
    rows: &[SummaryRow],
    figs: &[(&NamedFigure, &str)],
    tail: bool,
) {
    if runs.len() > 1 {
        if let Some(m) = crate::matrix::MaxMatrix::of(runs, grouping) {
            max_matrix(h, &m);
        }
        if crate::table::has_cases(runs) {
            cases(h, "load case", &crate::table::case_rows(runs));
        } else {
            cases(h, "group", &crate::table::group_rows(runs, grouping));
        }
    }
    stats(h, rows);
    h.push_str("<h2 id=\"latency\">Latency plots</h2>\n");
    figures(h, figs, Section::Latency);
    crate::worst::section(h, runs, figs, tail);
    crate::samples::section(h, runs, grouping);
    crate::explain::section(h, runs);
}

fn default_title(runs: &[RunData]) -> String {
    if let Some((c, _)) = &runs[0].campaign {
        if runs
            .iter()
            .all(|r| r.campaign.as_ref().map(|x| x.0.id) == Some(c.id))
        {
            return format!("rtscope report — campaign {}", c.name);
        }
    }
    match runs {
        [r] => format!("rtscope report — {} (run {})", r.name(), r.id()),
        _ => format!("rtscope report — {} runs", runs.len()),
    }
}

fn cell(h: &mut String, text: &str) {
    let _ = write!(h, "<td class=\"t\">{}</td>", escape(text));
}

/// A start time for people: `2026-11-27 07:35:07` (UTC) from the stored RFC 3339 text with
/// nanoseconds; any other text as it is.
fn started(t: &str) -> String {
    match (t.get(..10), t.get(11..19)) {
        (Some(d), Some(hms)) if t.as_bytes().get(10) == Some(&b'T') => format!("{d} {hms}"),
        _ => t.to_string(),
    }
}

fn header(h: &mut String, runs: &[RunData]) {
    h.push_str("<h2 id=\"runs\">Runs</h2>\n<table><tr><th>run</th><th class=\"t\">name</th><th class=\"t\">status</th><th class=\"t\">started (UTC)</th><th>measured (s)</th><th class=\"t\">host</th><th class=\"t\">kernel</th><th class=\"t\">campaign</th><th class=\"t\">tags</th><th class=\"t\">command line</th></tr>\n");
    for r in runs {
        let s = &r.detail.summary;
        let _ = write!(h, "<tr><td>{}</td>", s.id);
        cell(h, &r.name());
        cell(h, s.status.as_str());
        cell(h, &started(&s.started));
        let _ = write!(h, "<td>{:.1}</td>", s.progress_ns as f64 / 1e9);
        cell(h, r.env("uname.nodename").unwrap_or("-"));
        cell(h, r.env("uname.release").unwrap_or("-"));
        let camp = r.campaign.as_ref().map_or("-".to_string(), |(c, p)| {
            format!(
                "{} #{} ({} / {}, repeat {})",
                c.name, p.seq, p.scenario, p.load_case, p.repeat
            )
        });
        cell(h, &camp);
        let tags: Vec<String> = s.tags.iter().map(|(k, v)| format!("{k}={v}")).collect();
        cell(h, &tags.join(" "));
        let _ = writeln!(
            h,
            "<td class=\"t\"><code>{}</code></td></tr>",
            escape(&r.command_line())
        );
    }
    h.push_str("</table>\n");
    for r in runs {
        if let Some(cost) = r.recorder_cost() {
            let _ = writeln!(
                h,
                "<p class=\"muted\">Run {}: {}.</p>",
                r.id(),
                escape(&cost)
            );
        }
    }
}

/// The findings below the answer: collapsed, with a count and how many concern the runs
/// themselves (open when any does), one line per kind with its runs.
fn warnings(h: &mut String, warns: &[Warning]) {
    h.push_str("<h2 id=\"warnings\">Warnings</h2>\n");
    if warns.is_empty() {
        h.push_str("<div class=\"ok\">Nothing to act on was found.</div>\n");
        return;
    }
    let about_runs = warns.iter().filter(|w| w.rank == 0).count();
    let bad = warns.iter().filter(|w| w.rank == 1).count();
    let _ = writeln!(
        h,
        "<details class=\"warn\"{}><summary>{} finding(s): {about_runs} about the runs themselves, \
         {bad} bad setting(s), {} to improve</summary><ul>",
        if about_runs > 0 { " open" } else { "" },
        warns.len(),
        warns.len() - about_runs - bad
    );
    for w in warns {
        let ids: Vec<String> = w.runs.iter().map(|i| i.to_string()).collect();
        let _ = writeln!(
            h,
            "<li><b>{}</b> <span class=\"muted\">(run {})</span><br>{}</li>",
            escape(&w.what),
            ids.join(", "),
            escape(&w.hint)
        );
    }
    h.push_str("</ul></details>\n");
}

fn stats(h: &mut String, rows: &[SummaryRow]) {
    h.push_str("<h2 id=\"statistics\">Latency per CPU (µs)</h2>\n<table><tr><th>run</th><th class=\"t\">case</th><th>CPU</th><th>samples</th><th>min</th><th>mean</th>");
    for (l, _) in PERCENTILES {
        let _ = write!(h, "<th>{l}</th>");
    }
    h.push_str("<th>max</th><th>max at (s)</th><th>missed</th></tr>\n");
    for r in rows {
        let class = if r.cpu == "all" { " class=\"all\"" } else { "" };
        let _ = write!(h, "<tr{class}><td>{}</td>", r.run);
        cell(h, if r.case.is_empty() { &r.label } else { &r.case });
        let mean = r
            .mean_ns
            .map_or("-".into(), |m| format!("{:.1}", m / 1000.0));
        let _ = write!(
            h,
            "<td>{}</td><td>{}</td><td>{}</td><td>{mean}</td>",
            escape(&r.cpu),
            r.samples,
            us1(r.min_ns)
        );
        for i in 0..r.percentiles.len() {
            let _ = write!(h, "<td>{}</td>", crate::table::pct_cell(r, i));
        }
        let at = r
            .max_offset_ns
            .map_or("-".into(), |o| format!("{:.1}", o as f64 / 1e9));
        let _ = writeln!(
            h,
            "<td>{}</td><td>{at}</td><td>{}</td></tr>",
            us1(r.max_ns),
            crate::table::missed_cell(r.missed)
        );
    }
    let _ = writeln!(
        h,
        "</table>\n<p class=\"muted\">{}</p>",
        crate::table::STAR_NOTE
    );
}

fn max_matrix(h: &mut String, m: &crate::matrix::MaxMatrix) {
    let _ = write!(
        h,
        "<h2 id=\"groups\">Maximum latency per {} and group (µs)</h2>\n<table><tr><th class=\"t\">{}</th>",
        if m.rows_by == "case" { "load case" } else { "scenario" },
        escape(&m.rows_by)
    );
    for c in &m.columns {
        let _ = write!(h, "<th>{}</th>", escape(c));
    }
    h.push_str("</tr>\n");
    for (case, cells) in &m.rows {
        h.push_str("<tr>");
        cell(h, case);
        for c in cells {
            let _ = write!(h, "<td>{}</td>", crate::matrix::MaxMatrix::cell(*c));
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</table>\n<p class=\"muted\">The largest latency of the runs of each load case and group; (n): runs merged.</p>\n");
}

fn cases(h: &mut String, by: &str, rows: &[crate::table::CaseRow]) {
    let _ = write!(
        h,
        "<h2 id=\"cases\">Maximum latency per {by} (µs)</h2>\n<table><tr><th class=\"t\">{by}</th>"
    );
    h.push_str("<th>runs</th><th>samples</th><th>p99</th><th>p99.99</th><th>max</th><th>worst run</th><th>missed</th></tr>\n");
    for r in rows {
        h.push_str("<tr>");
        cell(h, &r.case);
        let _ = writeln!(
            h,
            "<td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            r.runs,
            r.samples,
            rtscope_core::text::percentile(&r.p99),
            rtscope_core::text::percentile(&r.p9999),
            us1(r.max_ns),
            r.worst_run,
            crate::table::missed_cell(r.missed)
        );
    }
    h.push_str("</table>\n");
}

fn top(h: &mut String, runs: &[RunData]) {
    for r in runs.iter().filter(|r| !r.top.is_empty()) {
        let _ = write!(h, "<h3>Top CPU consumers — {} (run {})</h3>\n<table><tr><th class=\"t\">thread</th><th>PID</th><th>TID</th><th class=\"t\">whose</th><th>CPU</th><th class=\"t\">kind</th><th>mean % of a CPU</th><th>peak %</th><th>samples</th></tr>\n", escape(&r.name()), r.id());
        for c in crate::monitors::top_consumers(r, 10) {
            h.push_str("<tr>");
            cell(h, &c.comm);
            let _ = write!(h, "<td>{}</td><td>{}</td>", c.pid, c.tid);
            cell(h, c.origin.text());
            let kind = if c.kernel { "kernel" } else { "user" };
            let _ = writeln!(
                h,
                "<td>{}</td><td class=\"t\">{kind}</td><td>{:.1}</td><td>{:.1}</td><td>{}</td></tr>",
                c.cpu, c.mean, c.peak, c.samples
            );
        }
        h.push_str("</table>\n");
    }
}

fn loads(h: &mut String, runs: &[RunData]) {
    h.push_str("<h2 id=\"loads\">Loads</h2>\n");
    if runs.iter().all(|r| r.loads.is_empty()) {
        h.push_str("<p class=\"muted\">No load was recorded: the runs were measured without a load rtscope started.</p>\n");
        return;
    }
    h.push_str("<table><tr><th>run</th><th class=\"t\">load</th><th class=\"t\">status</th><th>ran (s)</th><th class=\"t\">what it did</th><th class=\"t\">command line</th><th class=\"t\">error</th></tr>\n");
    for r in runs {
        for l in &r.loads {
            let did: Vec<String> = l
                .metrics
                .iter()
                .map(|m| format!("{} {} {}", m.name, crate::fmt_num(m.value), m.unit))
                .collect();
            let _ = write!(h, "<tr><td>{}</td>", r.id());
            cell(h, &l.name);
            cell(h, l.status.as_str());
            let _ = write!(h, "<td>{:.1}</td>", l.ran_ns as f64 / 1e9);
            cell(h, &did.join(", "));
            let _ = write!(
                h,
                "<td class=\"t\"><code>{}</code></td>",
                escape(&l.command_line.join(" "))
            );
            cell(h, l.error.as_deref().unwrap_or(""));
            h.push_str("</tr>\n");
        }
    }
    h.push_str("</table>\n");
}

fn environment(h: &mut String, runs: &[RunData]) {
    h.push_str("<h2 id=\"environment\">Environment</h2>\n<table><tr><th class=\"t\">fact</th><th class=\"t\">value</th></tr>\n");
    let mut keys: Vec<&str> = runs
        .iter()
        .flat_map(|r| r.detail.environment.iter().map(|(k, _)| k.as_str()))
        .collect();
    keys.sort();
    keys.dedup();
    for k in keys {
        let mut vals: Vec<&str> = runs.iter().filter_map(|r| r.env(k)).collect();
        vals.dedup();
        let _ = write!(h, "<tr>");
        cell(h, k);
        cell(h, &vals.join(" / "));
        h.push_str("</tr>\n");
    }
    h.push_str("</table>\n");
}
