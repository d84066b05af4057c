//! Unit tests: figures, rendering, tables, warnings and escaping, on synthetic runs written
//! through the real store.

use crate::figures;
use crate::histogram::histogram_points;
use crate::model::RunData;
use crate::plot::{self, colour, project, tick_label, Axis, Corner, Figure, Panel, Scale, Series};
use crate::scale::nines;
use crate::{table, warnings};
use rtscope_core::{Histogram, Nanos};
use rtscope_store::{LoadRow, Store};
use rtscope_testkit::synthetic::{write_run, SyntheticRun};
use std::path::PathBuf;

/// A fresh database path of its own: tests run in parallel threads of one process, and two of
/// them building the same run (`run_with(1, …)`) must not share (and delete) one file.
pub(crate) fn temp_db(name: &str) -> PathBuf {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let p = std::env::temp_dir().join(format!(
        "rtscope-report-{}-{n}-{name}.db",
        std::process::id()
    ));
    for ext in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{ext}", p.display()));
    }
    p
}

/// One synthetic run (2 CPUs, 20,000 samples each, monitors and a load), read back.
pub(crate) fn run_data(name: &str, label: &str) -> RunData {
    let mut store = Store::open(&temp_db(name)).unwrap();
    let spec = SyntheticRun {
        label: label.into(),
        samples: 20_000,
        ..SyntheticRun::default()
    };
    let id = write_run(&mut store, &spec).unwrap();
    RunData::from(store.bundle(id, false).unwrap())
}

/// A small run (2 CPUs, 2,000 samples each, no monitors) with id `id` and these tags; the
/// typical latency grows with the id.
pub(crate) fn run_with(id: i64, tags: &[(&str, &str)]) -> RunData {
    let mut store = Store::open(&temp_db(&format!("tags-{id}"))).unwrap();
    let spec = SyntheticRun {
        label: format!("run-{id}"),
        samples: 2_000,
        base_ns: 4_000 + 500 * id as u64,
        seed: id as u64,
        monitors: false,
        ..SyntheticRun::default()
    };
    let rid = write_run(&mut store, &spec).unwrap();
    let mut r = RunData::from(store.bundle(rid, false).unwrap());
    r.detail.summary.id = id;
    r.detail.summary.tags = tags
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    r
}

#[test]
fn a_run_reads_back_with_series_monitors_loads_and_top_threads() {
    let r = run_data("load", "idle");
    assert_eq!(r.detail.threads.len(), 2);
    assert_eq!(r.detail.summary.samples, 40_000);
    assert!(r.series.len() >= 2 * 20, "{} series rows", r.series.len());
    assert!(r.monitors.iter().any(|m| m.metric == "temp.cpu-thermal"));
    assert_eq!(r.loads[0].name, "messaging");
    assert!(!r.top.is_empty());
    assert_eq!(r.name(), "idle");
}

#[test]
fn histogram_png_has_the_right_size_and_is_not_blank() {
    let r = run_data("png", "idle");
    let png = crate::to_png(&Figure::single(crate::histogram::histogram(&r))).unwrap();
    let (w, h, colours, ink) = rtscope_testkit::image::png_facts(&png);
    assert_eq!((w, h), (960, 540));
    assert!(
        colours > 20,
        "only {colours} colours: text not antialiased or lines missing"
    );
    assert!(ink > 0.02 && ink < 0.6, "non-white share {ink}");
}

#[test]
fn svg_is_one_document_with_axis_labels_and_legend() {
    let r = run_data("svg", "idle");
    let svg = crate::to_svg(&Figure::single(crate::histogram::histogram(&r))).unwrap();
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    assert_eq!(svg.matches("<svg").count(), 1);
    assert_eq!(svg.matches("<text").count(), svg.matches("</text>").count());
    // 20,000 samples a CPU with a body a few µs wide, measured to the ns: bins of 0.2 µs.
    assert!(svg.contains("latency (µs)") && svg.contains("samples per 0.2 µs"));
    assert!(svg.contains("CPU 0 (max ") && svg.contains("CPU 1 (max "));
    assert!(svg.contains(plot::FONT_FAMILY));
}

/// Issue 49: a label or tag holding ESC, BEL or NUL (written into a database by anything but
/// rtscope) reaches panel titles, axis labels and legends; the SVG holds none of them raw (XML
/// 1.0 cannot) and shows them as `\x1b`.
#[test]
fn control_characters_in_titles_legends_and_axes_never_reach_the_svg_raw() {
    let hostile = "kernel=rt\u{1b}[31m\u{7}\u{0}<b>&";
    let mut axis = Axis::linear(format!("latency {hostile} (µs)"));
    axis.range = Some((0.0, 10.0));
    let panel = Panel {
        title: format!("Latency — {hostile}"),
        x: axis.clone(),
        y: Axis::linear("samples"),
        y2: Some(Axis::linear(hostile)),
        series: vec![Series::new(hostile, 0, vec![(1.0, 1.0), (5.0, 3.0)])],
        legend: Corner::UpperRight,
    };
    let fig = Figure::single(panel);
    let svg = crate::to_svg(&fig).unwrap();
    let raw: Vec<char> = svg
        .chars()
        .filter(|&c| c.is_control() && !matches!(c, '\n' | '\r' | '\t'))
        .collect();
    assert!(raw.is_empty(), "raw control characters {raw:?} in the SVG");
    assert!(
        svg.contains("kernel=rt\\x1b[31m\\x07\\x00&lt;b&gt;&amp;"),
        "{svg}"
    );
    // The figure itself is left as it was (the escaping is the drawing's), and a clean figure
    // is not copied.
    assert!(fig.panels[0].title.contains('\u{1b}'));
    let clean = Figure::single(crate::histogram::histogram(&run_data("clean-svg", "idle")));
    assert!(matches!(clean.printable(), std::borrow::Cow::Borrowed(_)));
    assert!(crate::to_png(&fig).unwrap().starts_with(b"\x89PNG"));
}

#[test]
fn empty_bins_are_drawn_at_the_bottom_of_a_log_axis() {
    let mut h = Histogram::new();
    h.record_n(Nanos(3_000), 100);
    h.record(Nanos(40_000));
    let pts = histogram_points(&h, 1, 40);
    assert!(pts.iter().any(|p| p.1 == 0.0), "zero bins kept as 0");
    assert!(pts.len() < 10, "runs of empty bins are thinned: {pts:?}");
    assert_eq!(project(Scale::Log, 0.0, -0.3), -0.3);
    let panel = Panel {
        title: "zeros".into(),
        x: Axis::linear("latency (µs)"),
        y: Axis::log("samples"),
        y2: None,
        legend: Corner::UpperRight,
        series: vec![Series::new("CPU 0", 0, pts)],
    };
    let (_, _, _, ink) =
        rtscope_testkit::image::png_facts(&crate::to_png(&Figure::single(panel)).unwrap());
    assert!(ink > 0.01);
}

#[test]
fn twenty_series_get_distinct_colours() {
    let c: std::collections::HashSet<_> = (0..20)
        .map(|i| colour(i).0 as u32 * 65536 + colour(i).1 as u32 * 256 + colour(i).2 as u32)
        .collect();
    assert_eq!(c.len(), 20);
}

#[test]
fn nines_axis_is_labelled_as_percentiles() {
    assert!((nines(0.999) - 3.0).abs() < 1e-9);
    assert_eq!(tick_label(Scale::Nines, 1.0), "p90");
    assert_eq!(tick_label(Scale::Nines, 2.0), "p99");
    assert_eq!(tick_label(Scale::Nines, 6.0), "p99.9999");
    assert_eq!(tick_label(Scale::Log, 3.0), "1000");
    assert_eq!(tick_label(Scale::Log, 2.5), "");
    assert_eq!(crate::fmt_num(1e-6), "1e-6");
    assert_eq!(crate::fmt_num(100_000.0), "100k");
}

#[test]
fn labels_are_escaped_in_the_page_and_tables() {
    let r = run_data("esc", "<script>alert(1)</script>, \"x\" | y");
    let files = crate::build(std::slice::from_ref(&r), &Default::default()).unwrap();
    let page = String::from_utf8(files[0].bytes.clone()).unwrap();
    assert!(!page.contains("<script>"), "raw script tag in the page");
    assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    let rows = table::summary_rows(std::slice::from_ref(&r));
    let csv = table::csv(&rows);
    assert!(csv.contains("\"<script>alert(1)</script>, \"\"x\"\" | y\""));
    let md = table::markdown(&rows);
    assert!(md.contains("\\| y") && !md.contains("<script>"));
    assert_eq!(crate::escape::escape("a&b'"), "a&amp;b&#39;");
}

#[test]
fn summary_has_one_row_per_cpu_and_an_all_row() {
    let r = run_data("summary", "idle");
    let rows = table::summary_rows(std::slice::from_ref(&r));
    let cpus: Vec<&str> = rows.iter().map(|x| x.cpu.as_str()).collect();
    assert_eq!(cpus, ["0", "1", "all"]);
    assert_eq!(rows[2].samples, 40_000);
    assert_eq!(
        rows[2].max_ns,
        rows.iter().take(2).filter_map(|x| x.max_ns).max()
    );
    let csv = table::csv(&rows);
    assert_eq!(csv.lines().count(), 4);
    assert!(csv.starts_with("run,label,case,cpu,samples,min_us,mean_us,p50_us,p90_us,p99_us,p99.9_us,p99.99_us,p99.999_us,p99.9999_us,max_us"));
}

#[test]
fn warnings_show_the_stored_preflight_audit_instead_of_guesses() {
    let path = temp_db("checks");
    let mut store = Store::open(&path).unwrap();
    let spec = SyntheticRun {
        label: "audited".into(),
        samples: 2_000,
        ..SyntheticRun::default()
    };
    let id = write_run(&mut store, &spec).unwrap();
    let row =
        |check: &str, verdict: &str, evidence: &str, fix: Option<&str>| rtscope_store::CheckRow {
            check: check.into(),
            verdict: verdict.into(),
            evidence: evidence.into(),
            fix: fix.map(Into::into),
            setting: None,
        };
    store
        .set_checks(
            id,
            &[
                row("preempt_rt", "ok", "/sys/kernel/realtime = 1", None),
                row(
                    "governor",
                    "warn",
                    "scaling_governor: powersave",
                    Some("cpupower -c 0-1 frequency-set -g performance"),
                ),
                row(
                    "preemption",
                    "bad",
                    "mode none",
                    Some("boot with preempt=full"),
                ),
                row("thermal", "unavailable", "no thermal zone", None),
            ],
        )
        .unwrap();
    let mut r = RunData::from(store.bundle(id, false).unwrap());
    // The environment would say "not PREEMPT_RT"; the stored audit decides instead.
    r.detail.environment.retain(|(k, _)| k != "kernel.realtime");
    let w = warnings::collect(std::slice::from_ref(&r));
    let pairs: Vec<(&str, &str)> = w
        .iter()
        .map(|w| (w.what.as_str(), w.hint.as_str()))
        .collect();
    assert_eq!(
        pairs,
        [
            (
                "check preemption is bad: mode none",
                "boot with preempt=full"
            ),
            (
                "check governor is warn: scaling_governor: powersave",
                "cpupower -c 0-1 frequency-set -g performance"
            ),
        ]
    );
}

#[test]
fn warnings_name_a_stock_kernel_and_a_failed_load() {
    let mut r = run_data("warn", "idle");
    assert!(warnings::collect(std::slice::from_ref(&r)).is_empty());
    r.detail.environment.retain(|(k, _)| k != "kernel.realtime");
    r.loads.push(LoadRow {
        name: "io".into(),
        spec_json: "{}".into(),
        command_line: vec!["fio".into()],
        status: rtscope_core::LoadStatus::Failed,
        error: Some("fio: not found".into()),
        ran_ns: 0,
        metrics: Vec::new(),
    });
    r.detail.summary.status = rtscope_store::RunStatus::Incomplete;
    r.detail.summary.missed = 3;
    let w = warnings::collect(std::slice::from_ref(&r));
    let text: Vec<&str> = w.iter().map(|w| w.what.as_str()).collect();
    assert!(text.contains(&"the kernel is not PREEMPT_RT"), "{text:?}");
    assert!(
        text.iter().any(|t| t.ends_with("is incomplete")),
        "{text:?}"
    );
    assert!(
        text.iter()
            .any(|t| t.ends_with("missed 3 deadlines (0.0075 % of 40003)")),
        "{text:?}"
    );
    assert!(
        !text.iter().any(|t| t.contains("old sample rule")),
        "{text:?}"
    );
    r.detail
        .environment
        .retain(|(k, _)| k != rtscope_store::SAMPLE_RULE_KEY);
    let w = warnings::collect(std::slice::from_ref(&r));
    assert!(
        w.iter().any(|w| w.what.contains("old sample rule")),
        "a run without the sample-rule key is marked: {w:?}"
    );
    assert!(text
        .iter()
        .any(|t| t.contains("load 'io'") && t.contains("fio: not found")));
}

#[test]
fn a_stalled_housekeeping_cadence_is_a_warning() {
    let mut r = run_data("cadence", "idle");
    let env = &mut r.detail.environment;
    env.push((
        "rtscope.cadence.control".into(),
        "periods=29 late=0 longest=1.010s period=1s".into(),
    ));
    assert!(warnings::collect(std::slice::from_ref(&r)).is_empty());
    let env = &mut r.detail.environment;
    env.push((
        "rtscope.cadence.monitor".into(),
        "periods=25 late=2 longest=6400ms period=1s".into(),
    ));
    env.push((
        "rtscope.housekeeping".into(),
        "other (--housekeeping-prio off)".into(),
    ));
    let w = warnings::collect(std::slice::from_ref(&r));
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0].what
            .contains("monitor samples stalled: 2 of 25 periods"),
        "{w:?}"
    );
    assert!(w[0].what.contains("longest 6400ms") && w[0].what.contains("prio off"));
}

#[test]
fn a_report_has_every_file_and_every_figure_inline() {
    let r = run_data("files", "idle");
    let files = crate::build(std::slice::from_ref(&r), &Default::default()).unwrap();
    let names: Vec<&str> = files.iter().map(|f| f.name.as_str()).collect();
    for n in [
        "report.html",
        "summary.csv",
        "summary.md",
        "histogram.png",
        "tail.svg",
        "cdf.png",
        "exceedance.svg",
        "over-time.png",
        "monitor-temperature.png",
        "monitor-interrupts.svg",
    ] {
        assert!(names.contains(&n), "{n} missing from {names:?}");
    }
    let page = String::from_utf8(files[0].bytes.clone()).unwrap();
    let figs = names.iter().filter(|n| n.ends_with(".svg")).count();
    assert_eq!(page.matches("<svg").count(), figs);
    assert!(
        !page.contains("http://")
            || page.matches("http://").count()
                == page.matches("xmlns=\"http://www.w3.org/2000/svg\"").count()
    );
}

#[test]
fn raw_samples_give_an_exact_cdf() {
    let pts = crate::raw::raw_cdf_of(&[vec![4_000, 1_000, 3_000, 2_000]]).all;
    assert_eq!(pts.first(), Some(&(1.0, 0.25)));
    assert!(pts.contains(&(3.0, 0.75)));
    assert_eq!(pts.last(), Some(&(4.0, 1.0)));
}

#[test]
fn load_cases_are_summarised_with_their_worst_run() {
    let a = run_data("case-a", "a");
    let mut b = run_data("case-b", "b");
    b.detail.summary.max_ns = Some(1_000_000);
    b.detail.summary.id = 99;
    let rows = table::case_rows(&[a, b]);
    assert_eq!(rows.len(), 2);
    assert_eq!((rows[1].case.as_str(), rows[1].worst_run), ("b", 99));
    assert!(table::case_markdown(&rows).contains("| b | 1 | 40000 |"));
}

#[test]
fn whole_microsecond_samples_land_one_per_bin() {
    // cyclictest histograms import as whole µs; every µs must keep its own bin.
    let mut h = Histogram::new();
    for us in 2..200 {
        h.record(Nanos(us * 1000));
    }
    let pts = histogram_points(&h, 1, 200);
    let counts: Vec<f64> = pts
        .iter()
        .filter(|p| (2.0..200.0).contains(&p.0))
        .map(|p| p.1)
        .collect();
    assert_eq!(counts.len(), 198);
    assert!(counts.iter().all(|&c| c == 1.0), "{counts:?}");
}

/// 2 kernels × 2 load cases × 2 repeats.
pub(crate) fn study_runs() -> Vec<RunData> {
    let mut runs = Vec::new();
    let mut id = 20;
    for case in ["idle", "cpu"] {
        for kernel in ["std", "rt"] {
            for _ in 0..2 {
                id += 1;
                runs.push(run_with(id, &[("kernel", kernel), ("case", case)]));
            }
        }
    }
    runs
}

/// The names a panel's legend shows.
pub(crate) fn legend_names(p: &Panel) -> Vec<&str> {
    p.series
        .iter()
        .map(|s| s.name.as_str())
        .filter(|n| !n.is_empty())
        .collect()
}

/// The numeric `<text>` labels of an SVG, split by the text `title` that starts each panel.
pub(crate) fn tick_labels_per_panel(svg: &str, title: &str) -> Vec<Vec<String>> {
    let mut panels: Vec<Vec<String>> = Vec::new();
    for chunk in svg.split("<text").skip(1) {
        let Some(body) = chunk.split_once('>').map(|(_, b)| b) else {
            continue;
        };
        let text = body.split("</text>").next().unwrap_or("").trim();
        // A title shortened to fit its cell carries the full one as a tooltip.
        let text = text
            .strip_prefix("<title>")
            .and_then(|t| t.split_once("</title>"))
            .map_or(text, |(full, _)| full);
        if text.starts_with(title) {
            panels.push(Vec::new());
        } else if !text.is_empty()
            && text
                .chars()
                .all(|c| c.is_ascii_digit() || ".kMe-".contains(c))
        {
            if let Some(p) = panels.last_mut() {
                p.push(text.to_string());
            }
        }
    }
    panels
}

/// Every `points="x,y …"` list of an SVG's polylines.
pub(crate) fn polylines(svg: &str) -> Vec<Vec<(f64, f64)>> {
    svg.split("<polyline")
        .skip(1)
        .filter_map(|c| c.split("points=\"").nth(1))
        .map(|c| {
            c.split('"')
                .next()
                .unwrap_or("")
                .split_whitespace()
                .filter_map(|p| {
                    let (x, y) = p.split_once(',')?;
                    Some((x.parse().ok()?, y.parse().ok()?))
                })
                .collect()
        })
        .collect()
}

#[test]
fn a_study_report_groups_by_kernel_and_case_in_a_grid_on_shared_axes() {
    let runs = study_runs();
    let g = crate::group::Grouping::new(&runs, None);
    let figs = figures::all(&runs, &g);
    let fig = |name: &str| &figs.iter().find(|f| f.name == name).unwrap().figure;
    // Repeats merge within a group, never across kernels: four lines, told apart by colour
    // (the load case) and dash (the kernel), the legend naming each once.
    let tail = &fig("tail").panels[0];
    let lines = tail
        .series
        .iter()
        .filter(|s| s.shape == plot::Shape::Line && !s.points.is_empty());
    assert_eq!(lines.count(), 4);
    assert_eq!(
        legend_names(tail),
        ["idle", "cpu", "kernel=std", "kernel=rt"]
    );
    // The histogram grid: one row per load case, kernels and repeats side by side.
    let hist = fig("histogram");
    assert_eq!(hist.columns, 4);
    assert!(hist.panels[0].title.contains("kernel=std · idle #1"));
    assert!(hist.panels[4].title.contains("kernel=std · cpu #1"));
    // The same axes in every panel, read back from the SVG's tick labels.
    let svg = crate::to_svg(hist).unwrap();
    let labels = tick_labels_per_panel(&svg, "Latency histogram");
    assert_eq!(labels.len(), 8, "{labels:?}");
    assert!(labels[0].len() >= 4, "{labels:?}");
    assert!(labels.iter().all(|l| *l == labels[0]), "{labels:?}");
    let time = crate::to_svg(fig("over-time")).unwrap();
    let labels = tick_labels_per_panel(&time, "Latency over time");
    assert!(labels.iter().all(|l| *l == labels[0]), "{labels:?}");
    // The report says it in the per-case table, one column per kernel.
    let md = crate::matrix::MaxMatrix::of(&runs, &g).unwrap().markdown();
    assert!(md.contains("| case | kernel=std | kernel=rt |"), "{md}");
}

#[test]
fn nothing_is_drawn_outside_its_panel() {
    let runs = study_runs();
    let g = crate::group::Grouping::new(&runs, None);
    let mut checked = 0;
    for f in figures::all(&runs, &g) {
        let svg = crate::to_svg(&f.figure).unwrap();
        checked += polylines(&svg).len();
        let (w, h) = f.figure.size();
        let cols = f.figure.columns.max(1) as f64;
        let cell_w = w as f64 / cols;
        let cell_h = f.figure.panel_height as f64;
        for line in polylines(&svg) {
            let Some(&(x, y)) = line.first() else {
                continue;
            };
            let (col, row) = ((x / cell_w).floor(), (y / cell_h).floor());
            for &(px, py) in &line {
                assert!(
                    (px / cell_w).floor() == col && (py / cell_h).floor() == row,
                    "{}: a line leaves its panel at ({px}, {py}) (figure {w}×{h})",
                    f.name
                );
            }
        }
    }
    assert!(checked > 50, "{checked} polylines");
}

#[test]
fn the_tail_plot_marks_the_exact_max_and_hollows_weak_points() {
    let runs = study_runs();
    let panel = figures::tail(&runs[..1]);
    let max = runs[0].merged().max().unwrap().0 as f64 / 1000.0;
    let marker = panel
        .series
        .iter()
        .find(|s| s.shape == plot::Shape::MaxMarker)
        .expect("a max marker");
    assert_eq!(marker.points.len(), 1);
    assert!((marker.points[0].1 - max).abs() < 1e-9);
    let line = &panel.series[0];
    // 4,000 samples: p99.9 rests on 4 samples beyond it, p99 on 40.
    let weak: Vec<bool> = line.weak.clone();
    assert_eq!(weak.len(), line.points.len());
    assert!(
        weak.last() == Some(&true) && weak.first() == Some(&false),
        "{weak:?}"
    );
    // The axis stops one step past the data, not at p99.9999.
    let (_, right) = panel.x.range.unwrap();
    assert!(right <= 4.25, "{right}");
}

#[test]
fn long_tails_get_a_log_latency_axis() {
    let mut body = Histogram::new();
    body.record_n(Nanos(5_000), 10_000);
    body.record_n(Nanos(9_000), 100);
    let (c, e) = figures::cdf_of(vec![figures::Line::new("a", body.clone())]);
    assert_eq!((c.x.scale, e.x.scale), (Scale::Linear, Scale::Linear));
    let mut tail = body.clone();
    tail.record(Nanos(12_000_000));
    let (c, e) = figures::cdf_of(vec![
        figures::Line::new("a", body),
        figures::Line::new("b", tail),
    ]);
    assert_eq!((c.x.scale, e.x.scale), (Scale::Log, Scale::Log));
    let svg = crate::to_svg(&Figure::single(e)).unwrap();
    assert!(svg.contains("log axis"));
}

#[test]
fn a_day_long_over_time_plot_stays_small_and_keeps_every_max() {
    let mut run = run_with(40, &[]);
    let mut series = Vec::new();
    for thread in 0..2u32 {
        for i in 0..86_400u64 {
            let max = if i == 51_234 {
                9_000_000
            } else {
                20_000 + (i * 7919) % 5_000
            };
            series.push(rtscope_store::SeriesRow {
                thread,
                offset_ns: (i + 1) * 1_000_000_000,
                length_ns: 1_000_000_000,
                samples: 1000,
                min_ns: Some(4_000),
                max_ns: Some(max),
                mean_ns: Some(6_000.0),
                p99_ns: Some(15_000),
                missed: 0,
            });
        }
    }
    run.series = series;
    let panel = figures::over_time(&run).unwrap();
    let top = panel.series[0]
        .points
        .iter()
        .map(|p| p.1)
        .fold(0.0, f64::max);
    assert_eq!(top, 9_000.0, "the one 9 ms interval survives decimation");
    assert!(panel.series[0].points.len() <= 2 * figures::MAX_TIME_STEPS + 2);
    let svg = crate::to_svg(&Figure::single(panel)).unwrap();
    assert!(svg.len() < 500_000, "{} bytes", svg.len());
}

#[test]
fn zero_rates_are_gaps_and_temperatures_fit_their_data() {
    let pts = vec![(0.0, 50.0), (1.0, 0.0), (2.0, 40.0), (3.0, 60.0)];
    let svg_of = |gaps: bool| {
        let s = Series {
            gaps_at_zero: gaps,
            ..Series::new("", 0, pts.clone())
        };
        let panel = Panel {
            title: "t".into(),
            x: Axis::linear("s"),
            y: Axis::log("1/s"),
            y2: None,
            legend: Corner::UpperRight,
            series: vec![s],
        };
        polylines(&crate::to_svg(&Figure::single(panel)).unwrap()).len()
    };
    assert_eq!(
        svg_of(true),
        svg_of(false) + 1,
        "the zero splits the line in two"
    );
    let run = run_data("temps", "idle");
    let panels = crate::monitors::monitor_panels(&run);
    let temp = panels
        .iter()
        .find(|(n, _, _)| n == "monitor-temperature")
        .expect("a temperature plot");
    let (lo, _) = temp.2.y.range.expect("a fitted range");
    assert!(lo > 10.0, "the temperature axis starts at {lo}, not 0");
}

/// The text of every `<text>` element of an SVG, trimmed.
pub(crate) fn texts(svg: &str) -> Vec<String> {
    svg.split("<text")
        .skip(1)
        .filter_map(|c| c.split_once('>'))
        .map(|(_, b)| b.split("</text>").next().unwrap_or("").trim().to_string())
        .collect()
}

#[test]
fn a_report_of_many_runs_links_its_figures_instead_of_holding_them() {
    let one = run_with(1, &[("kernel", "rt")]);
    let many: Vec<RunData> = (1..=crate::INLINE_FIGURES_MAX_RUNS as i64 + 1)
        .map(|id| {
            let mut r = one.clone();
            r.detail.summary.id = id;
            r
        })
        .collect();
    let files = crate::build(&many, &Default::default()).unwrap();
    let page = String::from_utf8(files[0].bytes.clone()).unwrap();
    let svgs: Vec<&str> = files
        .iter()
        .map(|f| f.name.as_str())
        .filter(|n| n.ends_with(".svg"))
        .collect();
    assert!(!svgs.is_empty());
    assert_eq!(page.matches("<svg").count(), 0, "no figure inline");
    for n in &svgs {
        assert!(
            page.contains(&format!("<img src=\"{n}\"")),
            "{n} not linked"
        );
    }
}

/// Seeds 000/001: runs without load cases (two kernels, two repeats each) are summarised per
/// group, the grouping of every plot, not per label as if labels were cases.
#[test]
fn runs_without_load_cases_are_summarised_per_group_not_per_label() {
    let runs: Vec<RunData> = [(1, "std"), (2, "std"), (3, "rt"), (4, "rt")]
        .iter()
        .map(|&(id, k)| run_with(id, &[("kernel", k)]))
        .collect();
    assert!(!crate::table::has_cases(&runs));
    let g = crate::group::Grouping::new(&runs, None);
    let rows = crate::table::group_rows(&runs, &g);
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert!(rows.iter().all(|r| r.runs == 2));
    let names: Vec<&str> = g.groups.iter().map(|g| g.name.as_str()).collect();
    assert_eq!(
        rows.iter().map(|r| r.case.as_str()).collect::<Vec<_>>(),
        names
    );
    let with_cases = study_runs();
    assert!(crate::table::has_cases(&with_cases));
}

#[test]
fn a_run_measured_with_a_recorder_on_says_its_figures_include_its_cost() {
    let plain = run_data("recorder-plain", "plain");
    let mut traced = run_data("recorder-traced", "traced");
    traced.detail.summary.id = plain.id() + 1;
    traced.recorder = rtscope_store::Recorded::Ran(
        "flight_recorder".into(),
        rtscope_store::Recorder {
            recorder: "tracefs instance rtscope-4711-0".into(),
            events: vec![
                "sched:sched_switch".into(),
                "sched:sched_waking".into(),
                "irq:softirq_entry".into(),
            ],
            stacks: "late-only eBPF programs: switch (eBPF on raw tracepoints)".into(),
        },
    );
    assert_eq!(plain.recorder_cost(), None, "no recorder ran");
    let cost = traced.recorder_cost().unwrap();
    assert_eq!(
        cost,
        "figures include the recorder's cost (tracefs, 3 events, stacks: late-only eBPF programs: switch (eBPF on raw tracepoints))"
    );
    let files = crate::build(&[plain.clone(), traced.clone()], &Default::default()).unwrap();
    let page = String::from_utf8(files[0].bytes.clone()).unwrap();
    let line = format!("Run {}: {}.", traced.id(), crate::escape::escape(&cost));
    assert!(page.contains(&line), "{line} missing");
    assert!(
        !page.contains(&format!("Run {}: figures include", plain.id())),
        "the plain run ran no recorder"
    );
}

#[test]
fn a_run_on_the_ebpf_recorder_names_it_and_quotes_no_tracefs_cost() {
    let mut run = run_data("recorder-ebpf", "ebpf");
    run.recorder = rtscope_store::Recorded::Ran(
        "flight_recorder".into(),
        rtscope_store::Recorder {
            recorder: "eBPF rings on raw tracepoints (23 tracepoints, 65536 records per CPU; \
                       tracefs instance rtscope-4711-0 without its events)"
                .into(),
            events: Vec::new(),
            stacks: "none".into(),
        },
    );
    let cost = run.recorder_cost().unwrap();
    assert_eq!(
        cost,
        "figures include the recorder's cost (eBPF rings on raw tracepoints, 23 tracepoints, \
         its cost not yet measured (issue 68 item 3))"
    );
    assert!(!cost.contains("tracefs"), "{cost}");
}
