//! Unit tests of the report's layout rules: legends that cover no data, time and percentile
//! axes, bins, repeats, monitor overlays, events and the raw scatter.

use crate::figures;
use crate::plot::{self, Figure, Scale};
use crate::tests::{legend_names, polylines, run_data, run_with, study_runs, texts};
use rtscope_core::{Histogram, Nanos};

/// Every `<rect>` of an SVG filled with `fill`, as (x0, y0, x1, y1).
pub(crate) fn rects(svg: &str, fill: &str) -> Vec<(f64, f64, f64, f64)> {
    let attr = |c: &str, name: &str| -> Option<f64> {
        c.split(&format!(" {name}=\""))
            .nth(1)?
            .split('"')
            .next()?
            .parse()
            .ok()
    };
    svg.split("<rect")
        .skip(1)
        .filter(|c| {
            c.split('>')
                .next()
                .unwrap_or("")
                .contains(&format!("fill=\"{fill}\""))
        })
        .filter_map(|c| {
            let (x, y) = (attr(c, "x")?, attr(c, "y")?);
            Some((x, y, x + attr(c, "width")?, y + attr(c, "height")?))
        })
        .collect()
}

/// Polylines of data (not the grey grid or black tick marks).
fn data_polylines(svg: &str) -> Vec<Vec<(f64, f64)>> {
    let keep: Vec<bool> = svg
        .split("<polyline")
        .skip(1)
        .map(|c| {
            let head = c.split("/>").next().unwrap_or("");
            !head.contains("#E1E1E1") && !head.contains("#000000")
        })
        .collect();
    polylines(svg)
        .into_iter()
        .zip(keep)
        .filter_map(|(l, k)| k.then_some(l))
        .collect()
}

#[test]
fn legends_never_cover_data() {
    let runs = study_runs();
    let g = crate::group::Grouping::new(&runs, None);
    let mut figs = figures::all(&runs, &g);
    figs.extend(figures::all(
        &runs[..1],
        &crate::group::Grouping::new(&runs[..1], None),
    ));
    let mut boxes = 0;
    for f in figs {
        let svg = crate::to_svg(&f.figure).unwrap();
        for b in rects(&svg, "#FDFDFD") {
            boxes += 1;
            for line in data_polylines(&svg) {
                assert!(
                    !crate::draw::legend::crosses(&line, b),
                    "{}: a line crosses the legend {b:?}",
                    f.name
                );
            }
        }
    }
    assert!(boxes >= 10, "{boxes} legends");
}

#[test]
fn long_runs_get_an_h_mm_axis_and_the_tail_axis_labels_p50() {
    let mut run = run_with(41, &[]);
    let row = |i: u64| rtscope_store::SeriesRow {
        thread: 0,
        offset_ns: (i + 1) * 60_000_000_000,
        length_ns: 60_000_000_000,
        samples: 1000,
        min_ns: Some(4_000),
        max_ns: Some(20_000 + i),
        mean_ns: Some(6_000.0),
        p99_ns: Some(15_000),
        missed: 0,
    };
    run.series = (0..300).map(row).collect();
    let svg = crate::to_svg(&Figure::single(figures::over_time(&run).unwrap())).unwrap();
    assert!(
        svg.contains("time since start (h:mm)"),
        "a 5-hour run in h:mm"
    );
    let t = texts(&svg);
    assert!(
        t.iter().any(|l| l == "1:00") && t.iter().any(|l| l == "0:30"),
        "{t:?}"
    );
    run.series.truncate(10);
    let svg = crate::to_svg(&Figure::single(figures::over_time(&run).unwrap())).unwrap();
    assert!(svg.contains("time since start (s)"));
    let tail = crate::to_svg(&Figure::single(figures::tail(&[run]))).unwrap();
    let t = texts(&tail);
    for label in ["p50", "p90", "p99", "p99.9"] {
        assert!(t.iter().any(|l| l == label), "{label} unlabelled: {t:?}");
    }
    // 4,000 samples: the last percentile drawn is p99.9; the axis stops one step past it
    // (p99.99, where the exact max sits), not at p99.9999.
    assert!(t.iter().any(|l| l == "p99.99"), "{t:?}");
    assert!(!t.iter().any(|l| l == "p99.999"), "{t:?}");
}

#[test]
fn bins_follow_freedman_diaconis_and_small_runs_count_linearly() {
    let mut small = Histogram::new();
    for i in 0..500u64 {
        small.record(Nanos(10_000 + (i % 20) * 1_000));
    }
    // IQR 10 µs, n = 500: 2 · 10 / 7.9 = 2.5 µs, rounded up to 5 µs.
    assert_eq!(crate::histogram::fd_width_us(&small), 5);
    let mut big = Histogram::new();
    for i in 0..1_000_000u64 {
        big.record(Nanos(10_000 + (i % 20) * 1_000));
    }
    assert_eq!(
        crate::histogram::fd_width_us(&big),
        1,
        "a million samples: 1 µs bins"
    );
    // 2,000 samples per thread: log counts; the same runs cut to xmax keep their overflow.
    let runs = study_runs();
    let g = crate::group::Grouping::new(&runs[..2], None);
    let figs = figures::all_with(&runs[..2], &g, Some(6));
    let hist = &figs[0].figure.panels[0];
    assert_eq!(hist.x.range.map(|r| r.1), Some(6.0));
    assert!(
        hist.x.label.contains("later samples counted at 6 µs"),
        "{}",
        hist.x.label
    );
    let mut one = run_with(60, &[]);
    for t in &mut one.detail.threads {
        t.histogram = small.clone();
    }
    let figs = figures::all(
        std::slice::from_ref(&one),
        &crate::group::Grouping::new(&[], None),
    );
    let hist = &figs[0].figure.panels[0];
    assert_eq!(
        hist.y.scale,
        Scale::Linear,
        "500 samples per CPU: linear counts"
    );
}

#[test]
fn several_runs_get_monitor_overlays_coloured_and_named_per_group() {
    let mut runs = Vec::new();
    for (i, kernel) in ["std", "std", "rt", "rt"].iter().enumerate() {
        let mut r = run_data(&format!("overlay-{i}"), "idle");
        r.detail.summary.id = 70 + i as i64;
        r.detail.summary.tags = vec![("kernel".into(), kernel.to_string())];
        runs.push(r);
    }
    let g = crate::group::Grouping::new(&runs, None);
    let panels = crate::monitors::campaign_monitor_panels(&runs, &g);
    let names: Vec<&str> = panels.iter().map(|p| p.0.as_str()).collect();
    assert_eq!(
        names,
        [
            "monitor-temperature",
            "monitor-frequency",
            "monitor-interrupts"
        ]
    );
    for (name, _, p) in &panels {
        assert_eq!(p.series.len(), 4, "{name}: a line per run");
        let legend = legend_names(p);
        assert_eq!(
            legend,
            ["kernel=std", "kernel=rt"],
            "{name}: named once per group"
        );
        let colours: Vec<usize> = p.series.iter().map(|s| s.colour).collect();
        assert_eq!(colours, [0, 0, 1, 1], "{name}: the group's colour");
    }
    let (lo, _) = panels[0].2.y.range.expect("a fitted temperature axis");
    assert!(lo > 10.0, "{lo}");
    assert!(panels[2].2.series.iter().all(|s| s.gaps_at_zero));
}

#[test]
fn events_are_marked_over_time_and_listed_largest_first() {
    let mut run = run_with(80, &[]);
    run.events = (0..300u64)
        .map(|i| rtscope_store::EventRow {
            thread: (i % 2) as u32,
            cycle: i * 100,
            latency_ns: 100_000 + (i * 7_919) % 50_000,
            offset_ns: i * 10_000_000,
            unix_ns: 0,
        })
        .collect();
    let largest = run.events.iter().map(|e| e.latency_ns).max().unwrap();
    let panel = figures::over_time(&run).unwrap();
    let marks = panel
        .series
        .iter()
        .find(|s| s.shape == plot::Shape::Dots)
        .expect("event marks");
    assert_eq!(marks.name, "events (300)");
    assert_eq!(marks.points.len(), crate::samples::MAX_EVENT_MARKS);
    let top = marks.points.iter().map(|p| p.1).fold(0.0, f64::max);
    assert_eq!(top, largest as f64 / 1e3, "the largest event is marked");
    let runs = vec![run];
    let g = crate::group::Grouping::new(&runs, None);
    let mut page = String::new();
    crate::samples::section(&mut page, &runs, &g);
    assert!(page.contains("300 samples above"), "{page}");
    let rows = page.matches("<tr><td>").count();
    assert_eq!(rows, crate::samples::MAX_EVENT_ROWS);
    let first = page.split("<tr><td>").nth(1).unwrap();
    assert!(
        first.contains(&crate::us(largest)),
        "largest first: {first}"
    );
    assert!(first.contains("CPU "), "with its CPU: {first}");
}

#[test]
fn a_raw_run_gets_a_sample_scatter_that_keeps_every_maximum() {
    let mut run = run_with(81, &[]);
    let n = 100_000u64;
    let lat = |t: u64| -> Vec<u64> {
        (0..n)
            .map(|i| {
                if i == 54_321 + t {
                    3_000_000
                } else {
                    5_000 + (i * 31 + t) % 4_000
                }
            })
            .collect()
    };
    let at: Vec<u64> = (0..n).map(|i| i * 200_000).collect();
    let raw: Vec<Vec<(u64, u64, u64)>> = (0..2)
        .map(|t| lat(t).iter().zip(&at).map(|(&l, &a)| (0, l, a)).collect())
        .collect();
    let (cdf, scatter) = crate::raw::views(&[0, 1], |t, sink| {
        sink(&raw[t as usize]);
        Ok::<(), std::convert::Infallible>(())
    })
    .unwrap_or_else(|e| match e {});
    (run.raw, run.scatter) = (Some(cdf), Some(scatter));
    let runs = vec![run];
    let g = crate::group::Grouping::new(&runs, None);
    let figs = figures::all(&runs, &g);
    let fig = &figs
        .iter()
        .find(|f| f.name == "samples")
        .expect("a scatter")
        .figure;
    let p = &fig.panels[0];
    assert_eq!(p.series.len(), 2, "one colour per thread");
    for s in &p.series {
        assert_eq!(s.shape, plot::Shape::Dots);
        assert!(
            s.points.len() <= crate::raw::SCATTER_COLUMNS + 2,
            "{}",
            s.points.len()
        );
        assert!(
            s.points.iter().any(|q| q.1 == 3_000.0),
            "the 3 ms sample survives"
        );
    }
    let svg = crate::to_svg(fig).unwrap();
    assert!(svg.matches("<circle").count() >= 300, "dots drawn");
    assert!(svg.len() < 300_000, "{} bytes", svg.len());
}

#[test]
fn a_histogram_with_ms_outliers_gets_log_bins_unless_cut_by_xmax() {
    let mut r = run_with(90, &[]);
    for t in &mut r.detail.threads {
        t.histogram.record(Nanos(12_000_000));
        t.figures.max_ns = Some(12_000_000);
    }
    r.detail.summary.histogram.record(Nanos(12_000_000));
    let runs = [r];
    let scale = crate::histogram::HistScale::fit(&runs, None);
    assert_eq!(
        scale.log_from_us,
        Some(10.0),
        "a 12 ms tail over a ~50 µs body"
    );
    let p = crate::histogram::histogram_with(&runs[0], "x", scale);
    assert_eq!(p.x.scale, Scale::Log);
    // The body spreads over many bins instead of one 12 µs bin.
    let body = p.series[0]
        .points
        .iter()
        .filter(|q| q.0 < 100.0 && q.1 > 0.0)
        .count();
    assert!(body >= 10, "{body} bins below 100 µs");
    let t = texts(&crate::to_svg(&Figure::single(p)).unwrap());
    // Decades of latency read with their unit (issue 51: not `1000` and `10k` µs).
    for label in ["10 µs", "100 µs", "1 ms", "10 ms"] {
        assert!(t.iter().any(|l| l == label), "{label} missing: {t:?}");
    }
    // (`1000` stays: the count axis's.)
    assert!(!t.iter().any(|l| l == "10k"), "{t:?}");
    assert!(t.iter().any(|l| l == "latency (log axis)"), "{t:?}");
    assert_eq!(
        crate::histogram::HistScale::fit(&runs, Some(100)).log_from_us,
        None
    );
}

#[test]
fn top_consumers_name_their_cpu_and_kind_in_rows_of_their_own() {
    let mut run = run_with(91, &[]);
    let t = |cpu: u32, pct: f64| rtscope_store::TopThread {
        offset_ns: 0,
        rank: 0,
        pid: 39,
        tid: 39,
        comm: "irq/39-dwc_otg".into(),
        cpu_percent: pct,
        last_cpu: cpu,
        kernel: true,
        own: None,
    };
    run.top = vec![t(1, 30.0), t(0, 40.0), t(1, 35.0)];
    let top = crate::monitors::top_consumers(&run, 10);
    assert_eq!(top.len(), 1);
    assert_eq!((top[0].cpu, top[0].kernel, top[0].samples), (1, true, 3));
    assert!((top[0].mean - 35.0).abs() < 1e-9 && top[0].peak == 40.0);
    let runs = vec![run];
    let g = crate::group::Grouping::new(&runs, None);
    let page = crate::html::page(
        &crate::html::Selection::latency(&runs),
        &g,
        &[],
        &[],
        &[],
        &crate::ReportOptions::default(),
    );
    assert!(
        page.contains(
            "<tr><td class=\"t\">irq/39-dwc_otg</td><td>39</td><td>39</td><td class=\"t\">unknown</td><td>1</td><td class=\"t\">kernel</td>"
        ),
        "the row names its CPU and kind"
    );
}

/// Under a heavier load than rtscope's, its own threads (here a load worker) are not pushed
/// out of the table by the first `n` others: up to `n` of them follow.
#[test]
fn rtscope_own_threads_below_the_busiest_others_still_get_rows() {
    let mut run = run_with(92, &[]);
    let t = |tid: u32, pct: f64, own: bool| rtscope_store::TopThread {
        offset_ns: 0,
        rank: 0,
        pid: tid,
        tid,
        comm: if own {
            "load-msg-send"
        } else {
            "stress-ng-cpu"
        }
        .into(),
        cpu_percent: pct,
        last_cpu: 0,
        kernel: false,
        own: Some(own),
    };
    run.top = (0..12)
        .map(|i| t(100 + i, 90.0 - i as f64, false))
        .collect();
    run.top
        .extend([t(7, 5.0, true), t(8, 4.0, true), t(9, 3.0, true)]);
    let top = crate::monitors::top_consumers(&run, 10);
    let tids: Vec<u32> = top.iter().map(|c| c.tid).collect();
    assert_eq!(
        tids,
        [100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 7, 8, 9]
    );
    let top = crate::monitors::top_consumers(&run, 2);
    let tids: Vec<u32> = top.iter().map(|c| c.tid).collect();
    assert_eq!(
        tids,
        [100, 101, 7, 8],
        "at most n of rtscope's own below the first n"
    );
}

#[test]
fn a_png_drawn_in_strips_equals_the_whole_bitmap_but_for_line_edge_pixels() {
    use plotters::prelude::{BitMapBackend, IntoDrawingArea};
    // 11 runs in 2 columns: 6 rows of panels, more than one strip and a last strip that is
    // neither full nor a whole row of panels.
    let runs: Vec<_> = (1..=11).map(|i| run_with(i, &[("kernel", "rt")])).collect();
    let g = crate::group::Grouping::new(&runs, None);
    let figs = figures::all(&runs, &g);
    let hist = &figs.iter().find(|f| f.name == "histogram").unwrap().figure;
    assert_eq!((hist.panels.len(), hist.columns), (11, 2));
    let (w, h) = hist.size();
    assert_eq!(h, 6 * hist.panel_height);
    let rows = (h / hist.panel_height) as usize;
    let strip = crate::draw::PNG_STRIP_ROWS;
    assert!(
        rows > strip && rows % strip != 0,
        "{rows} rows, strips of {strip}"
    );
    let mut whole = vec![255u8; (w * h * 3) as usize];
    {
        let root = BitMapBackend::with_buffer(&mut whole, (w, h)).into_drawing_area();
        crate::draw::figure(&root, hist).unwrap();
        root.present().unwrap();
    }
    let png = crate::to_png(hist).unwrap();
    let mut reader = png::Decoder::new(&png[..]).read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert_eq!((info.width, info.height), (w, h));
    let strips = &buf[..info.buffer_size()];
    assert_eq!(strips.len(), whole.len());
    // plotters rasterises a steep two-pixel segment at a different absolute offset (the strip's
    // y against the whole bitmap's) with a pixel of its edge rounded the other way: the
    // strips may differ from one bitmap only by such edge pixels, each beside the
    // whole bitmap's ink within 2 px (the edge of a line drawn in both, not a panel cut or
    // moved), and few.
    let px = |buf: &[u8], x: i64, y: i64| -> Option<[u8; 3]> {
        if x < 0 || y < 0 || x >= i64::from(w) || y >= i64::from(h) {
            return None;
        }
        let i = ((y * i64::from(w) + x) * 3) as usize;
        Some([buf[i], buf[i + 1], buf[i + 2]])
    };
    let mut differ = 0;
    for y in 0..i64::from(h) {
        for x in 0..i64::from(w) {
            let (s, o) = (px(strips, x, y), px(&whole, x, y));
            if s == o {
                continue;
            }
            differ += 1;
            let near = (-2..=2)
                .flat_map(|dy| (-2..=2).map(move |dx| (dx, dy)))
                .filter(|&d| d != (0, 0))
                .any(|(dx, dy)| px(&whole, x + dx, y + dy).is_some_and(|c| c != [255; 3]));
            assert!(
                near,
                "pixel ({x}, {y}) {s:?} in strips, {o:?} in one bitmap"
            );
        }
    }
    assert!(
        differ <= 64,
        "{differ} pixels differ between strips and one bitmap"
    );
    assert!(whole.iter().any(|&b| b != 255), "something was drawn");
}
