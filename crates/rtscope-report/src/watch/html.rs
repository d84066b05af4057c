//! The watch report's page: the series, each CPU's statistics over the period, the figures, the
//! worst periods with what their worst wake-up was charged to, and the alerts. Every text that
//! comes from the database (series and host names, causes, alerts) is escaped.

use super::cells::{cpus, Cell};
use super::{WatchData, WatchOptions};
use crate::escape::escape;
use crate::figures::{NamedFigure, Section};
use crate::html::CSS;
use crate::markup::figures;
use rtscope_core::civil::utc_text;
use rtscope_core::Histogram;
use rtscope_store::watch::Level;
use std::fmt::Write;

/// Rows of the worst-periods table.
pub const WORST_ROWS: usize = 20;
/// Rows of the alerts table (the newest).
pub const ALERT_ROWS: usize = 50;

fn when(ns: i64) -> String {
    utc_text(ns.div_euclid(1_000_000_000))
}

fn us(v: Option<rtscope_core::Nanos>) -> String {
    v.map_or("-".into(), |n| crate::us(n.0))
}

/// The whole page.
pub fn page(
    data: &WatchData,
    level: Level,
    cells: &[Cell],
    figs: &[(&NamedFigure, &str)],
    opts: &WatchOptions,
) -> String {
    let s = &data.series;
    let title = opts
        .title
        .clone()
        .unwrap_or_else(|| format!("rtscope watch — {}", s.name));
    let mut h = String::with_capacity(1 << 20);
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{t}</title><style>{CSS}</style></head><body>\n<h1>{t}</h1>\n\
         <nav><a href=\"#series\">Series</a> · <a href=\"#statistics\">Statistics</a> · \
         <a href=\"#latency\">Over time</a> · <a href=\"#worst\">Worst periods</a> · \
         <a href=\"#alerts\">Alerts</a> · <a href=\"watch.csv\">watch.csv</a></nav>\n",
        t = escape(&title)
    );
    series(&mut h, data, level, cells);
    stats(&mut h, cells);
    h.push_str("<h2 id=\"latency\">Over time</h2>\n");
    figures(&mut h, figs, Section::Latency);
    worst(&mut h, cells);
    alerts(&mut h, cells);
    let _ = write!(
        h,
        "<p class=\"muted\">Times in UTC; latencies in µs. Made by rtscope {}.</p>\n</body></html>\n",
        env!("CARGO_PKG_VERSION")
    );
    h
}

fn series(h: &mut String, data: &WatchData, level: Level, cells: &[Cell]) {
    let s = &data.series;
    let (from, to) = match (data.period, cells.first(), cells.last()) {
        (_, Some(a), Some(b)) => (
            when(a.start_ns),
            when(cells.iter().map(|c| c.end_ns).max().unwrap_or(b.end_ns)),
        ),
        _ => ("-".into(), "-".into()),
    };
    let period = match data.period {
        Some((a, b)) => format!("{} to {}", when(a), when(b)),
        None => "all of it".into(),
    };
    let _ = writeln!(
        h,
        "<h2 id=\"series\">Series</h2>\n<table>\
         <tr><th class=\"t\">name</th><td class=\"t\">{}</td></tr>\
         <tr><th class=\"t\">host</th><td class=\"t\">{}</td></tr>\
         <tr><th class=\"t\">period asked</th><td class=\"t\">{period}</td></tr>\
         <tr><th class=\"t\">data from</th><td class=\"t\">{from} to {to}</td></tr>\
         <tr><th class=\"t\">kept as windows / hours / days</th><td class=\"t\">{} / {} / {}</td></tr>\
         <tr><th class=\"t\">drawn per</th><td class=\"t\">{} (finer rows merged into it, coarser kept)</td></tr>\
         <tr><th class=\"t\">restarts resumed</th><td class=\"t\">{}</td></tr></table>",
        escape(&s.name),
        escape(s.host.as_deref().unwrap_or("-")),
        s.windows[0],
        s.windows[1],
        s.windows[2],
        level.name(),
        s.resumed,
    );
}

fn stats(h: &mut String, cells: &[Cell]) {
    h.push_str("<h2 id=\"statistics\">Statistics over the period</h2>\n<table><tr><th class=\"t\">CPU</th><th>wake-ups</th><th>p99</th><th>p99.9</th><th>p99.99</th><th>max</th><th>missed</th><th>spikes</th><th>periods with an alert</th></tr>\n");
    let cpus = cpus(cells);
    let all = (cpus.len() > 1).then_some(None);
    for cpu in cpus.iter().copied().map(Some).chain(all) {
        let mine: Vec<&Cell> = match cpu {
            Some(_) => cells.iter().filter(|c| c.cpu == cpu).collect(),
            None => super::cells::all_cpus(cells).collect(),
        };
        let mut hist = Histogram::new();
        for c in &mine {
            hist.merge(&c.histogram);
        }
        let q = |v: f64| us(hist.value_at_quantile(v));
        let sum = |f: fn(&Cell) -> u64| mine.iter().map(|c| f(c)).sum::<u64>();
        let _ = writeln!(
            h,
            "<tr{}><td class=\"t\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            if cpu.is_none() { " class=\"all\"" } else { "" },
            cpu.map_or("all".to_string(), |c| c.to_string()),
            hist.count(),
            q(0.99),
            q(0.999),
            q(0.9999),
            us(hist.max()),
            sum(|c| c.missed),
            sum(|c| c.spikes),
            mine.iter().filter(|c| c.alert.is_some()).count(),
        );
    }
    h.push_str("</table>\n");
}

fn worst(h: &mut String, cells: &[Cell]) {
    let mut keys: Vec<(i64, i64, usize)> = cells
        .iter()
        .enumerate()
        .filter(|(_, c)| c.cpu.is_some())
        .map(|(i, c)| {
            (
                -(c.histogram.max().map_or(0, |m| m.0) as i64),
                c.start_ns,
                i,
            )
        })
        .collect();
    keys.sort();
    let ranked: Vec<&Cell> = keys.iter().map(|k| &cells[k.2]).collect();
    h.push_str("<h2 id=\"worst\">Worst periods</h2>\n");
    if ranked.is_empty() {
        h.push_str("<p class=\"muted\">No period was measured.</p>\n");
        return;
    }
    h.push_str("<table><tr><th class=\"t\">period start</th><th class=\"t\">kept as</th><th>CPU</th><th>max</th><th class=\"t\">worst wake-up at</th><th class=\"t\">cause</th><th>largest cause's time</th><th class=\"t\">alert</th></tr>\n");
    for c in ranked.into_iter().take(WORST_ROWS) {
        let w = c.worst.as_ref();
        let _ = writeln!(
            h,
            "<tr><td class=\"t\">{}</td><td class=\"t\">{}</td><td>{}</td><td>{}</td><td class=\"t\">{}</td><td class=\"t\">{}</td><td>{}</td><td class=\"t\">{}</td></tr>",
            when(c.start_ns),
            c.level.name(),
            c.cpu.unwrap_or_default(),
            us(c.histogram.max()),
            w.map_or("-".into(), |w| when(w.at_ns)),
            escape(&w.and_then(|w| w.cause_text()).unwrap_or_else(|| {
                c.why_not_explained()
                    .map_or("-".into(), |why| format!("not explained: {why}"))
            })),
            us(w.and_then(|w| w.culprit_ns).map(rtscope_core::Nanos)),
            escape(c.alert.as_deref().unwrap_or("")),
        );
    }
    h.push_str("</table>\n");
}

fn alerts(h: &mut String, cells: &[Cell]) {
    let alerted: Vec<&Cell> = cells.iter().filter(|c| c.alert.is_some()).collect();
    h.push_str("<h2 id=\"alerts\">Alerts</h2>\n");
    if alerted.is_empty() {
        h.push_str("<p class=\"ok\">No period breached an alert threshold.</p>\n");
        return;
    }
    let _ = writeln!(
        h,
        "<p>{} periods breached a threshold; the newest {} (a period merged from several keeps their alerts, joined):</p>\n<table><tr><th class=\"t\">period start</th><th class=\"t\">CPU</th><th>max</th><th class=\"t\">breach</th></tr>",
        alerted.len(),
        alerted.len().min(ALERT_ROWS)
    );
    for c in alerted.iter().rev().take(ALERT_ROWS) {
        let _ = writeln!(
            h,
            "<tr><td class=\"t\">{}</td><td class=\"t\">{}</td><td>{}</td><td class=\"t\">{}</td></tr>",
            when(c.start_ns),
            c.cpu.map_or("all".to_string(), |n| n.to_string()),
            us(c.histogram.max()),
            escape(c.alert.as_deref().unwrap_or("")),
        );
    }
    h.push_str("</table>\n");
}
