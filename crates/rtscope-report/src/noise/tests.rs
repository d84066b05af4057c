//! The noise section on synthetic noise runs written through the real store: every drawn
//! figure equals what the store holds (bars, bucket counts, class totals, gaps), and noise runs
//! never reach the latency figures and tables.

use super::figures::{all, available_floor};
use super::{classes, CpuNoise};
use crate::model::RunData;
use crate::plot::Shape;
use crate::tests::{run_data, temp_db};
use crate::{build, ReportOptions};
use rtscope_explain::book::ExplainSummary;
use rtscope_explain::model::Category;
use rtscope_store::Store;
use rtscope_testkit::synthetic_noise::{write_noise_run, SyntheticNoise};

/// Two CPUs at a 1 µs threshold: CPU 0 with gaps of 1,200 and 2,000 ns, CPU 1 with one of
/// 1,500 ns, over 10,000 loop iterations of 40–47 ns each (exact buckets: sums are exact).
fn spec(label: &str) -> SyntheticNoise {
    SyntheticNoise {
        label: label.into(),
        cpus: vec![0, 1],
        threshold_ns: 1000,
        iterations: 10_000,
        gaps: vec![
            vec![(100_000_000, 1200), (500_000_000, 2000)],
            vec![(300_000_000, 1500)],
        ],
        explain_json: None,
        tags: Vec::new(),
    }
}

fn noise_run(name: &str, spec: &SyntheticNoise) -> RunData {
    let mut store = Store::open(&temp_db(name)).unwrap();
    let id = write_noise_run(&mut store, spec).unwrap();
    RunData::from(store.bundle(id, false).unwrap())
}

/// 10,000 iterations of 40..=47 ns, 1,250 each.
const LOOP_NS: u64 = 1250 * (40 + 41 + 42 + 43 + 44 + 45 + 46 + 47);

#[test]
fn the_per_cpu_figures_come_from_the_stored_histogram_and_threshold() {
    let r = noise_run("noise-figures", &spec("quiet"));
    let c = CpuNoise::of_run(&r);
    assert_eq!(c.len(), 2);
    assert_eq!(
        (c[0].noise_ns, c[0].gaps_over, c[0].max_single_ns),
        (Some(3200), Some(2), Some(2000))
    );
    assert_eq!((c[1].noise_ns, c[1].gaps_over), (Some(1500), Some(1)));
    assert_eq!(c[0].runtime_ns, Some(LOOP_NS + 3200));
    assert_eq!(
        (c[0].resolution_ns, c[0].iterations),
        (Some(40), Some(10_002))
    );
    let want = 100.0 * LOOP_NS as f64 / (LOOP_NS + 3200) as f64;
    assert!((c[0].available_percent().unwrap() - want).abs() < 1e-9);
}

#[test]
fn a_run_without_a_threshold_has_unknown_noise_and_no_cause_bar() {
    let mut r = noise_run("noise-nothreshold", &spec("oslat"));
    r.detail.config_json = "{}".into();
    let c = CpuNoise::of_run(&r);
    assert_eq!((c[0].noise_ns, c[0].available_percent()), (None, None));
    assert!(super::causes(&r, &c).is_empty());
    let figs = all(std::slice::from_ref(&r));
    assert!(figs[0].figure.panels[0].series.is_empty());
    assert!(figs[2].figure.panels[0].series.is_empty());
    for f in &figs {
        crate::to_svg(&f.figure).unwrap();
    }
}

#[test]
fn the_bars_histogram_and_gaps_are_the_stored_data() {
    let r = noise_run("noise-draw", &spec("quiet"));
    let cpus = CpuNoise::of_run(&r);
    let figs = all(std::slice::from_ref(&r));
    let names: Vec<&str> = figs.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "noise-available",
            "noise-histogram",
            "noise-causes",
            "noise-gaps"
        ]
    );
    // One bar per CPU, up to its share available, named with it.
    let bars = &figs[0].figure.panels[0];
    assert_eq!(bars.series.len(), 2);
    for (s, c) in bars.series.iter().zip(&cpus) {
        let p = c.available_percent().unwrap();
        assert_eq!(s.shape, Shape::Cells);
        assert_eq!(s.points[1].1, p);
        assert_eq!(s.points[0].1, available_floor(99.0));
        assert_eq!(s.name, format!("{}: {} %", c.cpu_name(), super::pct(p)));
    }
    // Every histogram bucket, with its stored count.
    let hist = &figs[1].figure.panels[0];
    for (s, t) in hist.series.iter().zip(&r.detail.threads) {
        let drawn: Vec<(u64, u64)> = s
            .points
            .iter()
            .map(|&(x, y)| ((x * 1000.0).round() as u64, y as u64))
            .collect();
        let stored: Vec<(u64, u64)> = t.histogram.buckets().map(|(lo, _, n)| (lo.0, n)).collect();
        assert_eq!(drawn, stored);
    }
    // No --explain: one "not explained" bar of the whole noise, never a cause.
    let causes = &figs[2].figure.panels[0];
    assert_eq!(causes.series.len(), 1);
    assert!(causes.series[0].name.starts_with("not explained"));
    assert_eq!(causes.series[0].points[1].1, (3200 + 1500) as f64 / 1000.0);
    // The recorded gaps at their offset (s) and length (µs), per CPU.
    let gaps = &figs[3].figure.panels[0];
    assert_eq!(gaps.series[0].points, [(0.1, 1.2), (0.5, 2.0)]);
    assert_eq!(gaps.series[1].points, [(0.3, 1.5)]);
    let svg = crate::to_svg(&figs[0].figure).unwrap();
    assert!(svg.contains(&bars.series[0].name), "{svg}");
    let svg = crate::to_svg(&figs[2].figure).unwrap();
    assert!(svg.contains("not explained: 4.7"), "{svg}");
}

/// An explanation of 4.7 µs of gaps: 2.2 µs NMIs, 1.3 µs an IRQ, 0.4 µs the switch back and
/// 0.8 µs that no trace event covers.
fn explained() -> String {
    let totals = vec![
        (Category::Nmi, 2200),
        (
            Category::Irq {
                name: "eth0".into(),
            },
            1300,
        ),
        (Category::ReturnToUser, 400),
        (Category::Unexplained, 800),
    ];
    serde_json::to_string(&ExplainSummary::of_totals(1000, totals)).unwrap()
}

#[test]
fn the_cause_bars_stack_the_stored_class_totals() {
    let mut s = spec("explained");
    s.explain_json = Some(explained());
    let r = noise_run("noise-classes", &s);
    let totals = classes(&r).expect("the run's explanation was stored");
    let figs = all(std::slice::from_ref(&r));
    let causes = &figs[2].figure.panels[0];
    assert!(causes
        .series
        .iter()
        .all(|s| !s.name.contains("not explained")));
    let height = |s: &crate::plot::Series| s.points[1].1 - s.points[0].1;
    let sum: f64 = causes.series.iter().map(height).sum();
    assert!((sum - totals.total_ns() as f64 / 1000.0).abs() < 1e-9);
    assert_eq!(totals.total_ns(), 4700);
    let nmi = causes
        .series
        .iter()
        .find(|s| s.name.starts_with("nmi"))
        .unwrap();
    assert_eq!(height(nmi), 2.2);
    let svg = crate::to_svg(&figs[2].figure).unwrap();
    for name in [
        "nmi: 2.20 µs",
        "irq: 1.30 µs",
        "switch back: 400 ns",
        "unexplained: 800 ns",
    ] {
        assert!(svg.contains(name), "{name} missing");
    }
}

#[test]
fn the_per_cause_histograms_are_the_stored_buckets_of_each_class_summed_over_cpus() {
    use rtscope_explain::class_hist::ClassHistogram;
    let mut x = ExplainSummary::of_totals(1000, vec![(Category::Nmi, 2200)]);
    let h = |cpu, class: &str, buckets: Vec<(u64, u64)>| ClassHistogram {
        cpu,
        class: class.into(),
        buckets,
    };
    x.class_histograms = vec![
        h(0, "irq", vec![(4_096, 5)]),
        h(1, "irq", vec![(4_096, 2), (65_536, 1)]),
        h(1, "thread", vec![(1_048_576, 3)]),
        h(1, "from a newer rtscope", vec![(1, 1)]),
    ];
    let mut s = spec("histograms");
    s.explain_json = Some(serde_json::to_string(&x).unwrap());
    let r = noise_run("noise-cause-hist", &s);
    let figs = all(std::slice::from_ref(&r));
    let f = figs
        .iter()
        .find(|f| f.name == "noise-cause-histograms")
        .expect("an explained run with histograms has the figure");
    let p = &f.figure.panels[0];
    let names: Vec<&str> = p.series.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        ["thread", "irq"],
        "the classes' order, the unknown one left out"
    );
    assert_eq!(p.series[0].points, [(1048.576, 3.0)]);
    assert_eq!(
        p.series[1].points,
        [(4.096, 7.0), (65.536, 1.0)],
        "CPUs summed"
    );
    assert_eq!(
        p.series[1].colour,
        super::slot(rtscope_explain::classes::Class::Irq)
    );
    assert!(crate::to_svg(&f.figure).unwrap().contains("irq"));
    // Without histograms (no --explain, or stored before they were kept): no figure.
    let plain = all(&[noise_run("noise-plain", &spec("plain"))]);
    assert!(plain.iter().all(|f| f.name != "noise-cause-histograms"));
}

#[test]
fn a_noise_run_explained_shows_the_interference_counts_of_its_stored_explanation() {
    use rtscope_explain::interference::Interference;
    let mut x = ExplainSummary::of_totals(1000, vec![(Category::Nmi, 2200)]);
    x.interference = vec![Interference {
        cpu: 1,
        hw: 4,
        nmi: 1,
        irq: 7,
        softirq: 2,
        thread: 3,
    }];
    let mut s = spec("counted");
    s.explain_json = Some(serde_json::to_string(&x).unwrap());
    let c = CpuNoise::of_run(&noise_run("noise-counts", &s));
    assert_eq!(c[0].counts, [None; 5], "CPU 0 was not counted");
    assert_eq!(c[1].counts, [Some(4), Some(1), Some(7), Some(2), Some(3)]);
    // Without an explanation nothing is counted.
    let plain = CpuNoise::of_run(&noise_run("noise-uncounted", &spec("plain")));
    assert!(plain.iter().all(|c| c.counts == [None; 5]));
}

fn text(files: &[crate::ReportFile], name: &str) -> String {
    let f = files.iter().find(|f| f.name == name).unwrap();
    String::from_utf8(f.bytes.clone()).unwrap()
}

#[test]
fn a_mixed_report_keeps_noise_runs_out_of_the_latency_figures_and_tables() {
    let lat = run_data("noise-mixed-lat", "latency");
    let noise = noise_run("noise-mixed", &spec("quiet"));
    let files = build(&[lat.clone(), noise.clone()], &ReportOptions::default()).unwrap();
    let csv = text(&files, "summary.csv");
    assert!(csv.contains(",latency,"));
    assert!(!csv.contains(",quiet,"), "{csv}");
    let html = text(&files, "report.html");
    assert!(html.contains("<h2 id=\"noise\">OS noise per CPU</h2>"));
    assert!(html.contains("<h2 id=\"statistics\">Latency per CPU (µs)</h2>"));
    for c in CpuNoise::of_run(&noise) {
        let row = super::html::row(&super::html::cells(&noise, &c));
        assert!(html.contains(&row), "{row}");
    }
    // The latency histogram has the latency run's panel alone.
    let hist = text(&files, "histogram.svg");
    assert!(!hist.contains("quiet"));
    // The time per cause: no class, the whole noise (4.7 µs) not explained.
    let causes = format!(
        "<tr><td>{}</td>{}<td>4.7</td></tr>",
        noise.id(),
        "<td>-</td>".repeat(rtscope_explain::classes::Class::ALL.len())
    );
    assert!(html.contains(&causes), "{causes}");
    let md = text(&files, "summary.md");
    assert!(md.contains("## OS noise per CPU"));
}

#[test]
fn a_noise_only_report_has_no_latency_section_and_a_latency_only_one_no_noise_section() {
    let noise = noise_run("noise-only", &spec("quiet"));
    let files = build(std::slice::from_ref(&noise), &ReportOptions::default()).unwrap();
    let names: Vec<&str> = files.iter().map(|f| f.name.as_str()).collect();
    for latency in ["histogram.svg", "tail.svg", "cdf.svg", "exceedance.svg"] {
        assert!(!names.contains(&latency), "{latency} drawn for a noise run");
    }
    for fig in [
        "noise-available.svg",
        "noise-histogram.png",
        "noise-gaps.svg",
    ] {
        assert!(names.contains(&fig), "{fig} missing");
    }
    let html = text(&files, "report.html");
    assert!(!html.contains("Latency per CPU"));
    assert!(html.contains("<a href=\"#noise\">OS noise</a>"));
    let lat = run_data("noise-none", "latency");
    let files = build(std::slice::from_ref(&lat), &ReportOptions::default()).unwrap();
    let html = text(&files, "report.html");
    assert!(!html.contains("noise"), "a latency report mentions noise");
}

#[test]
fn the_steal_time_and_smis_a_run_stored_are_its_cpus_columns() {
    let mut r = noise_run("noise-platform", &spec("platform"));
    let mut config: serde_json::Value = serde_json::from_str(&r.detail.config_json).unwrap();
    // CPU 1 first: matched by CPU, not by place.
    config["platform"] = serde_json::json!({"cpus": [
        {"cpu": 1, "steal_ns": null, "smis": 3},
        {"cpu": 0, "steal_ns": 20_000_000, "smis": null}], "smi_unavailable": null});
    r.detail.config_json = config.to_string();
    let c = CpuNoise::of_run(&r);
    assert_eq!((c[0].steal_ns, c[0].smis), (Some(20_000_000), None));
    assert_eq!((c[1].steal_ns, c[1].smis), (None, Some(3)));
    let n = super::html::COLUMNS.len();
    assert_eq!(super::html::COLUMNS[n - 2..], ["steal (µs)", "SMI"]);
    assert_eq!(super::html::cells(&r, &c[0])[n - 2..], ["20000.0", "-"]);
    assert_eq!(super::html::cells(&r, &c[1])[n - 2..], ["-", "3"]);
    // A run stored before: unknown, not 0.
    let old = CpuNoise::of_run(&noise_run("noise-no-platform", &spec("old")));
    assert!(old.iter().all(|c| (c.steal_ns, c.smis) == (None, None)));
}

#[test]
fn an_rtla_import_shows_rtla_s_figures_and_leaves_the_unknown_unknown() {
    let mut r = noise_run("noise-rtla", &spec("rtla"));
    // What the importer records for `rtla osnoise top` (CPU 0) and `rtla hwnoise` (CPU 1: no
    // IRQ, softirq or thread column).
    r.detail.config_json = r#"{"source": {"tool": "rtla osnoise top", "per_cpu": [
        {"runtime_ns": 9023264000, "noise_ns": 6387858000, "noise_events": null,
         "counts": {"hw": 744, "nmi": 0, "irq": 775, "softirq": 0, "thread": 228}},
        {"runtime_ns": 9012096000, "noise_ns": 6358686000,
         "counts": {"hw": 885, "nmi": 0, "irq": null, "softirq": null, "thread": null}}]}}"#
        .into();
    let c = CpuNoise::of_run(&r);
    assert_eq!(c[0].runtime_ns, Some(9_023_264_000));
    assert_eq!(c[0].noise_ns, Some(6_387_858_000));
    assert_eq!(super::pct(c[0].available_percent().unwrap()), "29.21");
    assert_eq!(
        c[0].counts,
        [Some(744), Some(0), Some(775), Some(0), Some(228)]
    );
    assert_eq!(c[1].counts, [Some(885), Some(0), None, None, None]);
    // rtla counts no iterations, has no resolution and states no threshold: unknown.
    assert_eq!(
        (c[0].iterations, c[0].resolution_ns, c[0].gaps_over),
        (None, None, None)
    );
    let cells = super::html::cells(&r, &c[1]);
    let n = super::html::COLUMNS.len();
    assert_eq!(cells[8], "-", "iterations/s");
    assert_eq!(cells[n - 7..], ["885", "0", "-", "-", "-", "-", "-"]);
    // The cause bar is rtla's noise, not explained.
    let causes = super::causes(&r, &c);
    assert_eq!(
        causes,
        [(
            super::NOT_EXPLAINED,
            super::NOT_EXPLAINED_COLOUR,
            12_746_544_000
        )]
    );
}

/// Issue 51: `noise-causes.png` drew one bar on a numeric −0.5…0.5 axis with 8-digit µs in
/// its legend. Bars stand on categorical axes named by their run or CPU, and times read in
/// the unit of the tallest bar with 3 significant digits.
#[test]
fn noise_bars_stand_on_categorical_axes_with_times_in_readable_units() {
    use crate::plot::Scale;
    let mut s = spec("busy");
    // 47.6 s of noise on CPU 0 (two gaps), none more on CPU 1.
    s.gaps = vec![
        vec![(100_000_000, 40_000_000_000), (500_000_000, 7_621_777_600)],
        vec![(300_000_000, 1500)],
    ];
    let r = noise_run("noise-categories", &s);
    let figs = all(std::slice::from_ref(&r));
    let avail = &figs[0].figure.panels[0];
    assert_eq!(avail.x.scale, Scale::Category);
    assert_eq!(avail.x.categories, ["CPU 0", "CPU 1"]);
    assert_eq!(avail.x.range, Some((-0.5, 1.5)));
    let causes = &figs[2].figure.panels[0];
    assert_eq!(causes.x.scale, Scale::Category);
    assert_eq!(causes.x.categories, ["busy"]);
    assert_eq!(causes.y.label, "noise time (s)");
    let bar = &causes.series[0];
    assert_eq!(bar.name, "not explained: 47.6 s");
    let stored: u64 = CpuNoise::of_run(&r).iter().filter_map(|c| c.noise_ns).sum();
    assert!(
        (bar.points[1].1 - stored as f64 / 1e9).abs() < 1e-9,
        "{:?}",
        bar.points
    );
    let svg = crate::to_svg(&figs[2].figure).unwrap();
    assert!(
        svg.contains(">busy<") || svg.contains(">\nbusy\n<"),
        "the run names its bar"
    );
    for numeric in ["-0.5", "0.5", "47621779.1", "47621777.6"] {
        assert!(
            !svg.contains(&format!(">{numeric}<")) && !svg.contains(&format!("\n{numeric}\n")),
            "{numeric} drawn"
        );
    }
    let svg = crate::to_svg(&figs[0].figure).unwrap();
    assert!(
        svg.contains("CPU 1\n") || svg.contains(">CPU 1<"),
        "CPU 1 names its bar"
    );
}

/// A thread of command `comm` (PID `pid`) at nice 0.
fn task(comm: &str, pid: i32) -> Category {
    Category::Thread {
        task: rtscope_explain::model::Task {
            comm: comm.into(),
            pid,
            prio: 120,
        },
    }
}

/// A traced gap on `cpu` ending at `end_ns`, `uncovered` ns of it charged to nothing.
fn traced_gap(
    cpu: usize,
    end_ns: u64,
    charges: Vec<(Category, u64)>,
    uncovered: u64,
) -> rtscope_explain::book::Explained {
    use rtscope_explain::model::{Attribution, Charge, Spike};
    let ns: u64 = charges.iter().map(|c| c.1).sum::<u64>() + uncovered;
    rtscope_explain::book::Explained::Traced(Attribution {
        spike: Spike {
            cpu,
            tid: 7,
            deadline_ns: end_ns - ns,
            wakeup_ns: end_ns,
            smis: None,
        },
        charges: charges
            .into_iter()
            .map(|(c, ns)| Charge::new(c, ns))
            .collect(),
        complete: true,
        lost_events: false,
        siblings: Vec::new(),
        stack: None,
        handler: None,
    })
}

/// The issue's shape: a 40 ms gap on CPU 0 of four large causes (the first a task whose name
/// holds markup), 100 small threads and 3.5 ms no event covers; a 2 ms gap on CPU 1 of one
/// thread.
fn many_causes() -> String {
    let mut big = vec![
        (task("<b>spin", 1), 8_000_000),
        (task("w2", 2), 4_000_000),
        (task("w3", 3), 3_000_000),
        (task("w4", 4), 1_500_000),
    ];
    big.extend((100..200).map(|pid| (task(&format!("s{pid}"), pid), 200_000)));
    let mut b = rtscope_explain::book::SpikeBook::new(60_000_000_000, 5, 10);
    b.add(traced_gap(0, 2_000_000_000, big, 3_500_000));
    b.add(traced_gap(
        1,
        3_000_000_000,
        vec![(task("w2", 2), 2_000_000)],
        0,
    ));
    let s = b.summary(rtscope_explain::model::Tier::FlightRecorder, None, 5_000);
    serde_json::to_string(&s).unwrap()
}

/// Every `href="#x"` of a page has an element with `id="x"`.
fn assert_links_resolve(html: &str) {
    for part in html.split("href=\"#").skip(1) {
        let id = &part[..part.find('"').unwrap()];
        assert!(
            html.contains(&format!(" id=\"{id}\"")),
            "a link to #{id}, a section the page lacks"
        );
    }
}

/// The whole-percent shares of a parts text (`… (20 %), … (9 %)`).
fn shares(parts: &str) -> Vec<u64> {
    parts
        .split(" (")
        .skip(1)
        .filter_map(|p| p.split(" %)").next()?.parse().ok())
        .collect()
}

#[test]
fn a_noise_report_answers_first_with_the_worst_gap_its_parts_and_the_culprits() {
    let mut s = spec("many");
    s.explain_json = Some(many_causes());
    let mut r = noise_run("noise-answer", &s);
    // As rtscope noise stores it: the loops' policy beside the threshold.
    r.detail.config_json = r#"{"threshold_ns":1000,"policy":"other"}"#.into();
    let files = build(std::slice::from_ref(&r), &ReportOptions::default()).unwrap();
    let html = text(&files, "report.html");
    // The answer box comes first, before the warnings.
    let answer = html.find("<div class=\"answer\" id=\"answer\"><h2>The answer</h2>");
    assert!(answer.is_some_and(|a| a < html.find("id=\"warnings\"").unwrap()));
    let (head, lines) = super::answer::answer_of(&r);
    // 4.7 µs of gaps over 870 µs of loop iterations and the gaps themselves.
    assert_eq!(
        head,
        "4.70 µs of noise in 875 µs spun on 2 CPUs, 99.4627 % available"
    );
    // The cause by the cause rule (no thread took half; together they did), then the parts.
    assert_eq!(
        lines[0],
        "the longest traced gap (40.0 ms on CPU 0 at 2.000 s) was caused by 104 threads of \
         higher or equal priority (91 % together, largest <b>spin:1:nice0 20 %; 8 % unexplained)"
    );
    let gap = &lines[1];
    assert_eq!(
        gap,
        "its parts: thread <b>spin:1:nice0 8.00 ms (20 %), thread w2:2:nice0 4.00 ms (10 %), \
         thread w3:3:nice0 3.00 ms (7 %), thread w4:4:nice0 1.50 ms (4 %), + 100 other causes \
         20.0 ms (50 %), unexplained rest 3.50 ms (9 %)"
    );
    assert_eq!(shares(gap).iter().sum::<u64>(), 100);
    // No culprit took half: the spread, its largest named with shares.
    assert!(
        lines[2].starts_with("no culprit took half of the traced gap time (42.0 ms): spread over "),
        "{}",
        lines[2]
    );
    assert!(
        lines[2].contains("thread <b>spin:1:nice0 19 %"),
        "{}",
        lines[2]
    );
    // SCHED_OTHER: every normal thread counts; then each CPU.
    assert!(lines
        .iter()
        .any(|l| l.starts_with("the loops ran at SCHED_OTHER")));
    assert!(lines
        .iter()
        .any(|l| l.starts_with("CPU 1: 1.50 µs of noise")));
    // On the page, escaped, the task's markup as text.
    assert!(html.contains("thread &lt;b&gt;spin:1:nice0 8.00 ms (20 %)"));
    assert!(!html.contains("<b>spin"));
    // The worst gaps, each row's parts adding up to the gap, and the culprits' table.
    let section = &html[html.find("id=\"noise-gaps\"").unwrap()..];
    let rows: Vec<&str> = section
        .split("<tr><td>")
        .skip(1)
        .take_while(|r| r.contains("</td><td class=\"t\">"))
        .collect();
    assert_eq!(rows.len(), 2, "{section}");
    for row in &rows {
        assert_eq!(shares(row).iter().sum::<u64>(), 100, "{row}");
    }
    assert!(rows[1].starts_with("3.000</td><td>1</td><td>2.00 ms</td>"));
    assert!(rows[1].contains("thread w2:2:nice0 2.00 ms (100 %), unexplained rest 0 ns (0 %)"));
    assert!(section.contains("<th class=\"t\">culprit over the run</th>"));
    assert!(section.contains(
        "<td class=\"t\">thread w2:2:nice0</td><td>1</td><td>2</td><td>6.00 ms</td><td>14 %</td>"
    ));
    assert_links_resolve(&html);
}

#[test]
fn the_one_culprit_of_most_gap_time_is_named_and_an_unexplained_run_says_so() {
    let mut b = rtscope_explain::book::SpikeBook::new(60_000_000_000, 5, 10);
    b.add(traced_gap(
        0,
        1_000_000_000,
        vec![
            (
                Category::Irq {
                    name: "eth0".into(),
                },
                700_000,
            ),
            (Category::Nmi, 300_000),
        ],
        0,
    ));
    let x = b.summary(rtscope_explain::model::Tier::FlightRecorder, None, 5_000);
    assert_eq!(
        super::answer::culprits_phrase(&x).unwrap(),
        "IRQ eth0 took 70 % of the traced gap time (1.00 ms)".replace(
            "IRQ eth0",
            &rtscope_explain::render::culprit_label(&x.culprits[0])
        )
    );
    // Without --explain: the longest gap, not explained, and no culprit.
    let r = noise_run("noise-answer-plain", &spec("plain"));
    let (_, lines) = super::answer::answer_of(&r);
    assert!(
        lines[0].starts_with("the longest gap, 2.00 µs on CPU 0: not explained"),
        "{lines:?}"
    );
    assert!(!lines.iter().any(|l| l.contains("culprit")));
    let files = build(std::slice::from_ref(&r), &ReportOptions::default()).unwrap();
    let html = text(&files, "report.html");
    assert!(html.contains("its gaps were not explained"));
    assert_links_resolve(&html);
}

#[test]
fn every_navigation_link_has_its_section_on_noise_latency_and_mixed_pages() {
    let noise = noise_run("noise-nav", &spec("quiet"));
    let lat = run_data("noise-nav-lat", "latency");
    for runs in [vec![noise.clone()], vec![lat.clone()], vec![lat, noise]] {
        let files = build(&runs, &ReportOptions::default()).unwrap();
        let html = text(&files, "report.html");
        let nav = &html[html.find("<nav>").unwrap()..html.find("</nav>").unwrap()];
        assert!(nav.contains("summary.csv"));
        assert_links_resolve(&html);
        // A page of noise runs alone links no latency section; one with latency runs does.
        let latency = runs.iter().any(|r| !super::is_noise(r));
        for id in ["statistics", "latency", "events", "why"] {
            assert_eq!(nav.contains(&format!("#{id}\"")), latency, "{id}: {nav}");
        }
        let noisy = runs.iter().any(super::is_noise);
        assert_eq!(nav.contains("#noise\""), noisy, "{nav}");
        assert!(nav.contains("#answer\""), "{nav}");
    }
}
