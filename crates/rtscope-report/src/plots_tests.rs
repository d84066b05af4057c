//! Issue 51, item 2: the data the plots are drawn from — histogram bins that follow the data's
//! resolution and spread, a grouping of two keys carried by colour and dash with a legend that
//! names each once, and exact maxima that do not pile up.

use crate::encoding::{Encoding, MARKER_STEP};
use crate::figures;
use crate::group::Grouping;
use crate::histogram::HistScale;
use crate::plot::{Dash, Panel, Series, Shape, NEUTRAL};
use crate::tests::{legend_names, run_with};
use crate::RunData;
use rtscope_core::{Histogram, Nanos};

/// `run` with one thread holding `h` (the other thread emptied), as an import would store it.
fn with_histogram(mut run: RunData, h: Histogram) -> RunData {
    run.detail.threads.truncate(1);
    let t = &mut run.detail.threads[0];
    t.figures.max_ns = h.max().map(|m| m.0);
    t.figures.samples = h.count();
    t.histogram = h.clone();
    run.detail.summary.histogram = h;
    run
}

/// A cyclictest `-h400` histogram as imported: whole microseconds, 2–300 µs, plus one 12 ms
/// outlier that puts the figure on log bins.
fn whole_us_import() -> RunData {
    let mut h = Histogram::new();
    for us in 2..300u64 {
        h.record_n(Nanos(us * 1000), 20_000 / us);
    }
    h.record(Nanos(12_000_000));
    with_histogram(run_with(301, &[]), h)
}

#[test]
fn whole_microsecond_imports_get_whole_microsecond_bins_without_a_picket_fence() {
    let run = whole_us_import();
    let scale = HistScale::fit(std::slice::from_ref(&run), None);
    assert_eq!(scale.resolution_ns, 1000);
    let lo = scale
        .log_from_us
        .expect("a 12 ms outlier over a µs body: log bins");
    // Every edge a whole µs, none repeated.
    let edges = crate::histogram::log_edges_ns(lo, scale.max_us, scale.resolution_ns);
    assert!(edges.iter().all(|e| e % 1000 == 0), "{edges:?}");
    assert!(edges.windows(2).all(|w| w[1] > w[0]));
    // Below ~21 µs the log spacing is finer than 1 µs: bins of exactly 1 µs there.
    assert!(edges.windows(2).take(15).all(|w| w[1] - w[0] == 1000));
    let panel = crate::histogram::histogram_with(&run, "h400", scale);
    let body: Vec<(f64, f64)> = panel.series[0]
        .points
        .iter()
        .copied()
        .filter(|p| (2.0..300.0).contains(&p.0))
        .collect();
    assert!(body.len() > 50, "{body:?}");
    assert!(
        body.iter().all(|p| p.1 > 0.0),
        "an empty bin inside the body: {body:?}"
    );
    assert!(panel.y.label.contains("at least 1 µs"), "{}", panel.y.label);
    // Without the resolution the same samples leave every other bin empty below ~25 µs.
    let fence = crate::histogram::histogram_points_log(&run.detail.threads[0].histogram, lo, 400);
    assert!(fence.iter().any(|p| p.0 > 2.0 && p.0 < 20.0 && p.1 == 0.0));
    // Cut at 300 µs the figure is linear, its bins whole µs (Freedman–Diaconis's width
    // rounded to the resolution), and every sample in the bin of its µs.
    let cut = HistScale::fit(std::slice::from_ref(&run), Some(300));
    assert_eq!(cut.log_from_us, None);
    assert_eq!(cut.width_ns % 1000, 0, "{} ns bins", cut.width_ns);
    let one_us = crate::histogram::histogram_points_ns(&run.detail.threads[0].histogram, 1000, 300);
    assert!(one_us
        .iter()
        .filter(|p| (2.0..300.0).contains(&p.0))
        .all(|p| p.1 == (20_000 / p.0 as u64) as f64));
}

/// 500 responses measured to the ns, 3.0–6.0 µs: a respond run's body.
fn respond_body() -> RunData {
    let mut h = Histogram::new();
    for i in 0..500u64 {
        h.record(Nanos(3_000 + (i * 7_919) % 3_000));
    }
    with_histogram(run_with(302, &[]), h)
}

#[test]
fn a_tight_body_measured_to_the_nanosecond_gets_bins_narrower_than_a_microsecond() {
    let body = respond_body();
    // Beside a run whose body spreads over 5–65 µs (its own FD width is wider).
    let mut wide = Histogram::new();
    for i in 0..500u64 {
        wide.record(Nanos(5_000 + (i * 7_919) % 60_000));
    }
    let runs = [body, with_histogram(run_with(303, &[]), wide)];
    let scale = HistScale::fit(&runs, None);
    assert_eq!((scale.resolution_ns, scale.log_from_us), (1, None));
    assert!(scale.width_ns < 1000, "{} ns bins", scale.width_ns);
    let panel = crate::histogram::histogram_with(&runs[0], "ipc", scale);
    let filled = panel.series[0]
        .points
        .iter()
        .filter(|p| (3.0..6.0).contains(&p.0) && p.1 > 0.0)
        .count();
    assert!(filled >= 6, "the 3–6 µs body in {filled} bins");
    assert_eq!(panel.y.label, format!("samples per {}", scale.width_text()));
    assert!(
        scale.width_text().starts_with("0."),
        "{}",
        scale.width_text()
    );
}

/// The seed-002 design: 5 load cases × 2 kernels, each measured twice (4 campaigns).
fn loadcase_runs() -> Vec<RunData> {
    let cases = ["idle", "hackbench", "stress-m2", "stress-m4", "stress-m8"];
    let mut runs = Vec::new();
    let mut id = 400;
    for _campaign in 0..2 {
        for kernel in ["regular", "rt"] {
            for case in cases {
                id += 1;
                runs.push(run_with(id, &[("kernel", kernel), ("case", case)]));
            }
        }
    }
    runs
}

/// The first panel of the `tail` figure of `runs`, grouped as the report groups them.
fn tail_panel(runs: &[RunData]) -> Panel {
    let g = Grouping::new(runs, None);
    let mut figs = figures::all(runs, &g);
    let at = figs.iter().position(|f| f.name == "tail").unwrap();
    figs.swap_remove(at).figure.panels.swap_remove(0)
}

fn lines(p: &Panel) -> Vec<&Series> {
    p.series
        .iter()
        .filter(|s| s.shape == Shape::Line && !s.points.is_empty())
        .collect()
}

#[test]
fn ten_groups_are_told_apart_by_colour_per_load_case_and_dash_per_kernel() {
    let runs = loadcase_runs();
    let g = Grouping::new(&runs, None);
    assert_eq!(g.groups.len(), 10);
    let enc = Encoding::of(&g).expect("two keys: colour and dash");
    assert_eq!(g.keys[enc.colour_key].name(), "case");
    assert_eq!(enc.dashes, ["kernel=regular", "kernel=rt"]);
    let figs = figures::all(&runs, &g);
    for name in ["tail", "cdf", "exceedance"] {
        let p = &figs.iter().find(|f| f.name == name).unwrap().figure.panels[0];
        let drawn = lines(p);
        assert_eq!(drawn.len(), 10, "{name}: one line per group");
        for (line, group) in drawn.iter().zip(&g.groups) {
            let case = &group.values[enc.colour_key];
            let kernel = &group.values[enc.dash_keys[0]];
            let case_i = enc.colours.iter().position(|c| c == case).unwrap();
            assert_eq!(line.colour, case_i, "{name}: {} by its case", group.name);
            let dash = if kernel == "regular" {
                Dash::Solid
            } else {
                Dash::Dashed
            };
            assert_eq!(line.dash, dash, "{name}: {} by its kernel", group.name);
        }
        // The legend names each case (in its colour) and each kernel (in its dash) once.
        assert_eq!(
            legend_names(p),
            [
                "idle",
                "hackbench",
                "stress-m2",
                "stress-m4",
                "stress-m8",
                "kernel=regular",
                "kernel=rt"
            ],
            "{name}"
        );
        let keys: Vec<&Series> = p.series.iter().filter(|s| !s.name.is_empty()).collect();
        assert!(keys[..5]
            .iter()
            .enumerate()
            .all(|(i, s)| s.colour == i && s.dash == Dash::Solid));
        assert!(keys[5..].iter().all(|s| s.colour == NEUTRAL));
        assert_eq!((keys[5].dash, keys[6].dash), (Dash::Solid, Dash::Dashed));
    }
    let tail = figs.iter().find(|f| f.name == "tail").unwrap();
    assert!(
        tail.caption
            .contains("Colour is the case and the line's dash the kernel"),
        "{}",
        tail.caption
    );
    // Bands of the repeats in their line's colour.
    let bands = tail.figure.panels[0]
        .series
        .iter()
        .filter(|s| s.shape == Shape::Band);
    assert!(bands.clone().count() == 10 && bands.clone().all(|s| s.colour < 5));
    // The tail plot renders with its dashed lines.
    assert!(crate::to_svg(&tail.figure).unwrap().contains("<line"));
}

#[test]
fn one_key_or_too_many_values_keep_a_colour_per_group() {
    let runs: Vec<RunData> = (0..3)
        .map(|i| run_with(420 + i, &[("kernel", &format!("k{i}"))]))
        .collect();
    assert_eq!(Encoding::of(&Grouping::new(&runs, None)), None);
    // Five kernels: more dash patterns than there are; the kernels (5) as colours and the
    // cases (2) as dashes instead.
    let mut runs = Vec::new();
    for k in 0..5 {
        for case in ["idle", "load"] {
            runs.push(run_with(
                430 + runs.len() as i64,
                &[("kernel", &format!("k{k}")), ("case", case)],
            ));
        }
    }
    let g = Grouping::new(&runs, None);
    let enc = Encoding::of(&g).unwrap();
    assert_eq!(g.keys[enc.colour_key].name(), "kernel");
    assert_eq!(enc.dashes, ["idle", "load"]);
}

#[test]
fn exact_maxima_of_runs_of_one_length_are_set_side_by_side() {
    let runs = loadcase_runs();
    let p = &tail_panel(&runs);
    let mut xs: Vec<f64> = p
        .series
        .iter()
        .filter(|s| s.shape == Shape::MaxMarker)
        .map(|s| s.points[0].0)
        .collect();
    assert_eq!(xs.len(), 10);
    // Each marker keeps its line's encoding: the kernel's dash (× solid, + dashed).
    let dashes: Vec<Dash> = p
        .series
        .iter()
        .filter(|s| s.shape == Shape::MaxMarker)
        .map(|s| s.dash)
        .collect();
    assert_eq!(dashes.iter().filter(|&&d| d == Dash::Dashed).count(), 5);
    assert!(p.x.label.ends_with("× and + = exact max"), "{}", p.x.label);
    xs.sort_by(f64::total_cmp);
    // Every group holds 2 runs × 2 CPUs × 2,000 samples: all ten at log10(8,000) before.
    let at = 8_000f64.log10();
    for w in xs.windows(2) {
        assert!(w[1] - w[0] >= MARKER_STEP - 1e-9, "{xs:?}");
    }
    let mid = xs.iter().sum::<f64>() / 10.0;
    assert!((mid - at).abs() < 1e-9, "centred on log10(n): {xs:?}");
    let (_, hi) = p.x.range.unwrap();
    assert!(xs[9] <= hi, "inside the axis: {xs:?} to {hi}");
}

#[test]
fn latency_decades_read_with_their_unit_on_every_log_latency_axis() {
    use crate::plot::{latency_decade, without_us};
    let labels: Vec<String> = (-1..=6).map(|d| latency_decade(f64::from(d))).collect();
    assert_eq!(
        labels,
        ["100 ns", "1 µs", "10 µs", "100 µs", "1 ms", "10 ms", "100 ms", "1 s"]
    );
    assert_eq!(latency_decade(2.5), "", "no label between decades");
    assert_eq!(without_us("latency (µs, log axis)"), "latency (log axis)");
    assert_eq!(without_us("latency (µs)"), "latency");
    // The tail's latency axis, a long tail's histogram and CDF axes are latency axes.
    let runs = &loadcase_runs()[..4];
    let figs = figures::all(runs, &Grouping::new(runs, None));
    let tail = &figs.iter().find(|f| f.name == "tail").unwrap().figure;
    assert!(tail.panels[0].y.latency_us);
    let run = whole_us_import();
    let scale = HistScale::fit(std::slice::from_ref(&run), None);
    assert!(
        crate::histogram::histogram_with(&run, "h", scale)
            .x
            .latency_us
    );
    let axis = figures::latency_axis(std::iter::once(run.merged()));
    assert!(axis.latency_us && axis.scale == crate::plot::Scale::Log);
}

#[test]
fn runs_drawn_one_line_each_take_their_groups_colour_and_dash() {
    // 2 kernels × 2 load cases, one run each: a line per run (no repeats to merge).
    let runs: Vec<RunData> = [
        ("std", "idle"),
        ("rt", "idle"),
        ("std", "cpu"),
        ("rt", "cpu"),
    ]
    .iter()
    .enumerate()
    .map(|(i, (k, c))| run_with(440 + i as i64, &[("kernel", k), ("case", c)]))
    .collect();
    let p = &tail_panel(&runs);
    let drawn: Vec<(usize, Dash)> = lines(p).iter().map(|s| (s.colour, s.dash)).collect();
    assert_eq!(
        drawn,
        [
            (0, Dash::Solid),
            (0, Dash::Dashed),
            (1, Dash::Solid),
            (1, Dash::Dashed)
        ]
    );
    assert_eq!(legend_names(p), ["idle", "cpu", "kernel=std", "kernel=rt"]);
}
