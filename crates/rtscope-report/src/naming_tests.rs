//! Issue 25, item 7: reports that name the right things — respond mechanisms, whose a busy
//! thread is, imported `--spike` lines, unknown missed counts, loads killed at the stop, repeat
//! tags, grid titles and summary-only imports.

use crate::figures;
use crate::group::Grouping;
use crate::model::RunData;
use crate::plot::{Axis, Corner, Figure, Panel, Series};
use crate::tests::{run_data, run_with};
use crate::{html, table, warnings};
use rtscope_store::{LoadRow, RunKind};

/// A respond run of `ipc eventfd,pipe,signal`: three rows, all received on CPU 1.
fn respond_run(id: i64) -> RunData {
    let mut r = run_with(id, &[]);
    let mut third = r.detail.threads[1].clone();
    third.thread = 2;
    r.detail.threads.push(third);
    for t in &mut r.detail.threads {
        t.cpu = Some(1);
    }
    r.detail.summary.kind = RunKind::Respond;
    r.detail.config_json = serde_json::json!({
        "ipc": ["eventfd", "pipe", "signal"],
        "rows": [
            {"thread": 0, "source": "eventfd", "path": "0→1 cross"},
            {"thread": 1, "source": "pipe", "path": "0→1 cross"},
            {"thread": 2, "source": "signal", "path": "0→1 cross"},
        ],
    })
    .to_string();
    r
}

/// An import of cyclictest `-q --spike` output: statistics, no histogram, two spikes.
fn summary_import(id: i64) -> RunData {
    let mut r = run_with(id, &[]);
    r.detail.summary.kind = RunKind::Import;
    r.detail.summary.histogram = rtscope_core::Histogram::new();
    for t in &mut r.detail.threads {
        t.histogram = rtscope_core::Histogram::new();
    }
    r.series.clear();
    r.detail.config_json = serde_json::json!({"source": {
        "format": "cyclictest-summary", "summary_only": true,
        "spikes": [
            {"thread": 1, "latency_us": 162, "ts_us": 2_162_688_834u64},
            {"thread": 0, "latency_us": 91, "ts_us": 2_163_688_834u64},
        ],
        "spike_lines": 2,
    }})
    .to_string();
    r
}

#[test]
fn respond_threads_are_named_by_their_mechanism_in_figures_and_tables() {
    let r = respond_run(201);
    assert_eq!(r.cpu_name(0), "eventfd 0->1 cross (CPU 1)");
    assert_eq!(r.cpu_name(2), "signal 0->1 cross (CPU 1)");
    let svg = crate::to_svg(&Figure::single(crate::histogram::histogram(&r))).unwrap();
    for m in [
        "eventfd 0-&gt;1 cross (CPU 1)",
        "pipe 0-&gt;1",
        "signal 0-&gt;1",
    ] {
        assert!(svg.contains(m), "histogram legend lacks {m}");
    }
    assert!(!svg.contains("thread 0 (CPU 1)"), "numbered, not named");
    let rows = table::summary_rows(std::slice::from_ref(&r));
    let cpus: Vec<&str> = rows.iter().map(|x| x.cpu.as_str()).collect();
    assert_eq!(
        cpus,
        [
            "eventfd 0->1 cross (CPU 1)",
            "pipe 0->1 cross (CPU 1)",
            "signal 0->1 cross (CPU 1)",
            "all"
        ]
    );
    // A measure run keeps its CPU numbers.
    assert_eq!(run_with(202, &[]).cpu_name(1), "CPU 1");
}

#[test]
fn an_import_shows_its_missed_periods_as_unknown_never_0() {
    let runs = vec![summary_import(211), run_with(212, &[])];
    assert_eq!(runs[0].missed(), None);
    assert_eq!(runs[1].missed(), Some(0));
    let rows = table::summary_rows(&runs);
    assert!(rows
        .iter()
        .filter(|x| x.run == 211)
        .all(|x| x.missed.is_none()));
    let md = table::markdown(&rows);
    let line = md.lines().find(|l| l.starts_with("| 211 |")).unwrap();
    assert!(
        line.contains("| — | - |"),
        "missed and miss % unknown: {line}"
    );
    let csv = table::csv(&rows);
    let line = csv.lines().find(|l| l.starts_with("211,")).unwrap();
    assert!(
        line.ends_with(",,"),
        "missed and ratio empty in CSV: {line}"
    );
    let cases = table::case_rows(&runs);
    assert_eq!(cases[0].missed, None, "a sum with an unknown is unknown");
}

#[test]
fn imported_spike_lines_are_drawn_and_listed() {
    let runs = vec![summary_import(221), run_with(222, &[])];
    assert_eq!(
        runs[0].imported_spikes(),
        [(1, 162_000, 2_162_688_834), (0, 91_000, 2_163_688_834)]
    );
    let g = Grouping::new(&runs, None);
    let figs = figures::all(&runs, &g);
    let spikes = figs
        .iter()
        .find(|f| f.name == "spikes")
        .expect("a spike plot");
    let pts = &spikes.figure.panels[0].series[0].points;
    assert_eq!(pts, &[(0.0, 162.0), (1.0, 91.0)]);
    let mut page = String::new();
    crate::samples::section(&mut page, &runs, &g);
    assert!(page.contains("id=\"spikes\""), "{page}");
    assert!(page.contains("<td>162.0</td><td>2162688834</td>"), "{page}");
}

#[test]
fn a_summary_only_import_gets_no_empty_histogram_panel() {
    let runs = vec![summary_import(231), run_with(232, &[]), run_with(233, &[])];
    let g = Grouping::new(&runs, None);
    let figs = figures::all(&runs, &g);
    let hist = figs.iter().find(|f| f.name == "histogram").unwrap();
    assert_eq!(
        hist.figure.panels.len(),
        2,
        "only the runs with a histogram"
    );
    assert!(hist.figure.panels.iter().all(|p| !p.series.is_empty()));
    assert!(
        hist.caption.contains("Not drawn: run-231 (run 231)"),
        "{}",
        hist.caption
    );
    // Only summaries: no histogram figure at all.
    let only = vec![summary_import(234)];
    let figs = figures::all(&only, &Grouping::new(&only, None));
    assert!(figs.iter().all(|f| f.name != "histogram"));
}

/// Data in every corner of a small grid cell and a legend of four long entries (an `-h400`
/// import's CPUs and overflows): the legend must not take a strip that squashes the plot.
#[test]
fn a_wide_legend_in_a_grid_cell_never_squashes_the_plot() {
    let busy: Vec<(f64, f64)> = (0..=100)
        .map(|i| (1.0 + i as f64 * 40.0, if i % 2 == 0 { 1.0 } else { 5000.0 }))
        .collect();
    let series = (0..4)
        .map(|i| {
            let name = format!("thread {i}: 19 overflows ≥400.0 µs (values unknown) and more");
            Series::new(name, i, busy.clone())
        })
        .collect();
    let p = Panel {
        title: "Latency histogram — hist-h400.txt (run 2)".into(),
        x: Axis::log("latency (µs, log axis)"),
        y: Axis::log("samples"),
        y2: None,
        legend: Corner::UpperRight,
        series,
    };
    let cell = (600, 320);
    let l = crate::draw::layout(&p, cell);
    let strip = l.outside.unwrap_or(0);
    assert!(
        f64::from(strip) <= 0.3 * f64::from(cell.0),
        "a {strip} px legend strip beside a {} px cell",
        cell.0
    );
}

/// Long group names at 1 to 6 columns: every drawn title fits its cell (so none overlaps its
/// neighbour) and a shortened one keeps its end (`(run N)`) and carries the full title as a
/// tooltip.
#[test]
fn grid_titles_fit_their_cells_at_every_column_count() {
    for columns in 1..=6u32 {
        let panels: Vec<Panel> = (0..columns * 2)
            .map(|i| Panel {
                title: format!(
                    "Latency histogram — kernel=6.12-rt-preempt · mechanism=eventfd · case=stress-ng-cpu-{i} (run {i})"
                ),
                x: Axis::linear("latency (µs)"),
                y: Axis::linear("samples"),
                y2: None,
                legend: Corner::UpperRight,
                series: vec![Series::new("CPU 0", 0, vec![(1.0, 1.0), (2.0, 3.0)])],
            })
            .collect();
        let fig = Figure {
            width: 400 * columns,
            panel_height: 320,
            columns,
            panels,
        };
        let svg = crate::to_svg(&fig).unwrap();
        let cell = fig.width / columns;
        for i in 0..columns * 2 {
            let full = &fig.panels[i as usize].title;
            let drawn = crate::draw::fit_title(full, cell - 2 * crate::draw::MARGIN);
            assert!(
                crate::draw::title_width(&drawn) <= f64::from(cell - 2 * crate::draw::MARGIN),
                "{columns} columns: '{drawn}' is wider than its cell"
            );
            assert!(drawn.ends_with(&format!("(run {i})")), "'{drawn}'");
            let tip = if drawn == *full {
                String::new()
            } else {
                format!("<title>{full}</title>")
            };
            assert!(
                svg.contains(&format!(">{tip}\n{drawn}\n</text>")),
                "'{drawn}' not drawn with its tooltip"
            );
        }
    }
}

#[test]
fn a_load_killed_at_the_stop_counts_as_having_run() {
    let mut r = run_data("killed-load", "idle");
    let load = |status: rtscope_core::LoadStatus, ran_ns: u64| LoadRow {
        name: "hackbench".into(),
        spec_json: "{}".into(),
        command_line: vec!["hackbench".into()],
        status,
        error: Some("did not end within the grace period after SIGTERM".into()),
        ran_ns,
        metrics: Vec::new(),
    };
    let measured = r.detail.summary.progress_ns;
    r.loads = vec![load(
        rtscope_core::LoadStatus::Killed,
        measured + 500_000_000,
    )];
    let w = warnings::collect(std::slice::from_ref(&r));
    let load_w: Vec<&warnings::Warning> = w.iter().filter(|w| w.what.contains("load")).collect();
    assert_eq!(load_w.len(), 1);
    assert!(
        !load_w[0].hint.contains("not measured under the load"),
        "{}",
        load_w[0].hint
    );
    assert!(load_w[0].hint.contains("ran for the whole measurement"));
    // Killed before the measurement ended, or failed: not measured under it.
    for (status, ran) in [
        (rtscope_core::LoadStatus::Killed, measured / 2),
        (rtscope_core::LoadStatus::Failed, 0),
    ] {
        r.loads = vec![load(status, ran)];
        let w = warnings::collect(std::slice::from_ref(&r));
        assert!(
            w.iter()
                .any(|w| w.hint.contains("not measured under the load")),
            "{status}"
        );
    }
}

#[test]
fn top_consumers_tell_rtscope_own_threads_from_another_program_of_the_same_name() {
    let mut r = run_with(241, &[]);
    let t = |pid: u32, own: Option<bool>, pct: f64| rtscope_store::TopThread {
        offset_ns: 0,
        rank: 0,
        pid,
        tid: pid + 1,
        comm: "rtscope-m1".into(),
        cpu_percent: pct,
        last_cpu: 1,
        kernel: false,
        own,
    };
    r.top = vec![
        t(700, Some(true), 10.0),
        t(900, Some(false), 50.0),
        t(50, None, 5.0),
    ];
    let top = crate::monitors::top_consumers(&r, 10);
    let got: Vec<(u32, u32, &str)> = top
        .iter()
        .map(|c| (c.pid, c.tid, c.origin.text()))
        .collect();
    assert_eq!(
        got,
        [
            (900, 901, "other program"),
            (700, 701, "rtscope (this run)"),
            (50, 51, "unknown")
        ]
    );
    let g = Grouping::new(std::slice::from_ref(&r), None);
    let rows = table::summary_rows(std::slice::from_ref(&r));
    let page = html::page(
        &html::Selection::latency(std::slice::from_ref(&r)),
        &g,
        &rows,
        &[],
        &[],
        &crate::ReportOptions::default(),
    );
    assert!(page.contains("<th>PID</th><th>TID</th><th class=\"t\">whose</th>"));
    assert!(page.contains("<td>900</td><td>901</td><td class=\"t\">other program</td>"));
}

/// A legend wider than the plot of a small grid panel (a respond run's mechanisms with their
/// maxima) stays whole inside its panel: before, its left part with the colour keys was cut
/// off at the plot's left edge.
#[test]
fn a_legend_wider_than_a_small_plot_stays_inside_its_panel() {
    let busy: Vec<(f64, f64)> = (0..=50)
        .map(|i| (i as f64, if i % 2 == 0 { 1.0 } else { 100.0 }))
        .collect();
    let panel = |k: usize| Panel {
        title: format!("panel {k}"),
        x: Axis::linear("latency (µs)"),
        y: Axis::linear("samples"),
        y2: None,
        legend: Corner::UpperLeft,
        series: ["eventfd", "pipe", "signal"]
            .iter()
            .enumerate()
            .map(|(i, m)| {
                let name = format!("{m} 1->1 same (CPU 1) (max 1120.9 µs)");
                Series::new(name, i, busy.clone())
            })
            .collect(),
    };
    let fig = Figure {
        width: 1600,
        panel_height: 320,
        columns: 4,
        panels: (0..4).map(panel).collect(),
    };
    let svg = crate::to_svg(&fig).unwrap();
    let (w, _) = crate::draw::legend::size(&crate::draw::legend::entries(&fig.panels[0]));
    let boxes = crate::layout_tests::rects(&svg, "#FDFDFD");
    assert_eq!(boxes.len(), 4, "{boxes:?}");
    for (k, b) in boxes.iter().enumerate() {
        let (lo, hi) = (400.0 * k as f64, 400.0 * (k + 1) as f64);
        assert!(
            b.0 >= lo && b.2 <= hi,
            "legend {k} {b:?} leaves its panel {lo}..{hi}"
        );
        assert_eq!(b.2 - b.0, f64::from(w), "legend {k} cut: {b:?}");
    }
}
