//! The worst case beyond the measured time (`rtscope report --tail`, docs/report.md): per run
//! and thread, rtscope-evt's analysis as `rtscope tail` prints it, with three plots of it — the
//! return levels, the QQ plot of the fit and the threshold-stability path — or its refusal in
//! words. The caller makes the analyses (it reads the store); this module only draws them.

use crate::figures::{NamedFigure, Section};
use crate::model::RunData;
use crate::plot::{Axis, Corner, Figure, Panel, Series, Shape, NEUTRAL};
use rtscope_evt::figure::Figures;
use rtscope_evt::Analysis;
use std::fmt::Write;

/// Most threads analysed in one report: each fit runs a bootstrap of seconds on a long run, and
/// each adds a figure of three panels to the page. The runs are taken in the report's order
/// and the rest named as not analysed.
pub const MAX_TAILS: usize = 16;

const CAPTION: &str = "Left: the probability per wake-up of a latency beyond x, past the data: the fitted tail, its interval at the table's levels, the observed cluster maxima. Middle: observed against fitted quantiles (on y = x when the model fits). Right: the shape ξ per candidate threshold, × the one chosen.";
const REFUSED: &str = "REFUSED: no level is drawn; the plots show why the tests above failed.";
/// The caption of a refusal whose tests that ran all passed (a histogram not tested for
/// stationarity, a shape that drifts with the threshold, no tail at all): it names no failed test.
const REFUSED_PASSED: &str = "REFUSED: no level is drawn, for the reason the text above gives; every test that ran passed, and the plots show the fit it was refused on.";

/// The caption of `a`'s figure: the levels' when accepted, else the refusal's, which names
/// failed tests only where a test failed.
fn caption(a: &Analysis) -> &'static str {
    let failed = a
        .diagnostics
        .iter()
        .any(|d| matches!(d.outcome, rtscope_evt::Outcome::Fail { .. }));
    match (a.accepted(), failed) {
        (true, _) => CAPTION,
        (false, true) => REFUSED,
        (false, false) => REFUSED_PASSED,
    }
}

/// The figures of the tail section: one per analysed thread whose candidates were fitted.
pub fn figures(runs: &[RunData]) -> Vec<NamedFigure> {
    let mut out = Vec::new();
    for r in runs {
        for t in r.tails.iter().filter(|t| !t.figures.stability.is_empty()) {
            let a = &t.analysis;
            let mut panels = Vec::new();
            if a.accepted() && !t.figures.curve.is_empty() {
                panels.push(return_levels(a, &t.figures));
            }
            if !t.figures.qq.is_empty() {
                panels.push(qq(&t.figures));
            }
            panels.push(stability(&t.figures));
            let caption = caption(a);
            out.push(NamedFigure {
                name: t.file_name(r),
                section: Section::WorstCase,
                caption: caption.to_string(),
                figure: Figure {
                    width: 400 * panels.len() as u32,
                    panel_height: 380,
                    columns: panels.len() as u32,
                    panels,
                },
            });
        }
    }
    out
}

fn panel(title: &str, x: Axis, y: Axis, series: Vec<Series>, legend: Corner) -> Panel {
    Panel {
        title: title.to_string(),
        x,
        y,
        y2: None,
        series,
        legend,
    }
}

fn dots(name: &str, colour: usize, points: Vec<(f64, f64)>) -> Series {
    Series {
        shape: Shape::Dots,
        ..Series::new(name, colour, points)
    }
}

/// An interval as a band: the upper edge left to right, the lower edge back.
fn band(mut upper: Vec<(f64, f64)>, lower: &[(f64, f64)]) -> Series {
    upper.extend(lower.iter().rev());
    Series {
        shape: Shape::Band,
        ..Series::new("", 0, upper)
    }
}

/// `(probability, ns)` points as `(µs, probability)`.
fn at(points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let mut out = Vec::with_capacity(points.len());
    for &(p, v) in points {
        out.push((v / 1e3, p));
    }
    out
}

/// The exceedance probability per wake-up (log axis) against the latency (µs): the report's
/// exceedance plot continued beyond the data.
fn return_levels(a: &Analysis, f: &Figures) -> Panel {
    let (mut levels, mut upper, mut lower) = (Vec::new(), Vec::new(), Vec::new());
    for l in &a.levels {
        levels.push((l.probability, l.estimate_ns));
        if let Some(u) = l.upper_ns {
            upper.push((l.probability, u));
            lower.push((l.probability, l.lower_ns));
        }
    }
    let conf = format!("{:.0} % interval", a.confidence * 100.0);
    let series = vec![
        band(at(&upper), &at(&lower)),
        Series::new("fitted tail", 0, at(&f.curve)),
        Series {
            markers: true,
            ..Series::new(conf, 0, at(&levels))
        },
        dots("observed", 1, at(&f.observed)),
    ];
    panel(
        "Return levels",
        Axis::linear("latency (µs)"),
        Axis::log("exceedance probability per wake-up"),
        series,
        Corner::UpperRight,
    )
}

/// Observed cluster maxima against the fitted quantiles, µs, with the y = x line.
fn qq(f: &Figures) -> Panel {
    let (mut points, mut lo, mut hi) = (Vec::new(), f64::INFINITY, 0f64);
    for &(x, y) in &f.qq {
        let (x, y) = (x / 1e3, y / 1e3);
        points.push((x, y));
        (lo, hi) = (lo.min(x).min(y), hi.max(x).max(y));
    }
    let series = vec![
        Series {
            faint: true,
            ..Series::new("y = x", NEUTRAL, vec![(lo, lo), (hi, hi)])
        },
        dots("cluster maxima", 1, points),
    ];
    panel(
        "QQ plot of the fit",
        Axis::linear("fitted quantile (µs)"),
        Axis::linear("observed (µs)"),
        series,
        Corner::UpperLeft,
    )
}

/// The shape ξ with its interval per candidate threshold (µs), the chosen one marked.
fn stability(f: &Figures) -> Panel {
    let (mut xi, mut upper, mut lower) = (Vec::new(), Vec::new(), Vec::new());
    let mut chosen = Vec::new();
    for p in &f.stability {
        let x = p.threshold_ns / 1e3;
        xi.push((x, p.xi));
        upper.push((x, p.xi + p.half_width));
        lower.push((x, p.xi - p.half_width));
        if Some(p.threshold_ns) == f.chosen_ns {
            chosen.push((x, p.xi));
        }
    }
    let mut series = vec![
        band(upper, &lower),
        Series {
            markers: true,
            ..Series::new("ξ", 0, xi)
        },
    ];
    if !chosen.is_empty() {
        series.push(Series {
            shape: Shape::MaxMarker,
            ..Series::new("chosen", 1, chosen)
        });
    }
    panel(
        "Threshold stability",
        Axis::linear("threshold (µs)"),
        Axis::linear("shape ξ"),
        series,
        Corner::UpperRight,
    )
}

/// The section of the page: nothing unless the report was asked for tails (`--tail`).
pub fn section(h: &mut String, runs: &[RunData], figs: &[(&NamedFigure, &str)], asked: bool) {
    if !asked {
        return;
    }
    h.push_str("<h2 id=\"worst-case\">Worst case beyond the measured time</h2>\n<p>As <code>rtscope tail</code> prints it (docs/worst-case.md): an estimate only when every test passed, else the refusal.</p>\n");
    let mut skipped = Vec::new();
    for r in runs {
        if r.tails.is_empty() {
            skipped.push(format!("{} (run {})", r.name(), r.id()));
        }
        for t in &r.tails {
            // Line by line: the escape shows control characters, a newline too, as `\n`.
            let who = rtscope_evt::words::Who {
                run: r.id().to_string(),
                thread: t.thread,
                cpu: t.cpu,
                shared_cpu: r.tails.iter().filter(|u| u.cpu == t.cpu).count() > 1,
            };
            let text = rtscope_evt::render::text(&who, &t.analysis);
            let lines: Vec<String> = text.lines().map(crate::escape::escape).collect();
            let _ = writeln!(
                h,
                "<h3>{} (run {}) — {}</h3>\n<pre style=\"white-space: pre-wrap; overflow-wrap: anywhere\">{}</pre>",
                crate::escape::escape(&r.name()),
                r.id(),
                t.title(),
                lines.join("\n")
            );
            let name = t.file_name(r);
            if let Some((f, svg)) = figs.iter().find(|(f, _)| f.name == name) {
                crate::markup::figure(h, f, svg);
            }
        }
    }
    if !skipped.is_empty() {
        let _ = writeln!(
            h,
            "<p class=\"muted\">Not analysed (a report analyses at most {MAX_TAILS} threads): {}.</p>",
            crate::escape::escape(&skipped.join(", "))
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ThreadTail;
    use rtscope_evt::gpd::Gpd;
    use rtscope_evt::{analyse, Options, Refusal, Tail, Test};

    /// A thread of 20 µs plus a GPD tail, analysed; `refused` adds a failed test.
    fn thread(cpu: u32, refused: bool) -> ThreadTail {
        let g = Gpd {
            sigma: 1000.0,
            xi: 0.1,
        };
        let tail = Tail::with_gpd_tail(20_000.0, g, 20_000, 7);
        let mut analysis = analyse(&tail, &Options::default(), false);
        assert!(analysis.accepted(), "{:?}", analysis.refusals);
        if refused {
            analysis
                .refusals
                .push(Refusal::Failed { test: Test::FitAd });
            analysis.levels.clear();
        }
        let figures = rtscope_evt::figure::figures(&tail, &analysis);
        ThreadTail {
            thread: cpu,
            cpu: Some(cpu),
            analysis,
            figures,
        }
    }

    fn series<'a>(p: &'a Panel, name: &str) -> &'a Series {
        p.series.iter().find(|s| s.name == name).unwrap()
    }

    #[test]
    fn the_plots_draw_the_analysis_and_a_refusal_draws_no_level() {
        let mut run = crate::tests::run_data("worst", "tail");
        run.tails = vec![thread(0, false), thread(1, true)];
        let figs = figures(std::slice::from_ref(&run));
        assert_eq!(figs.len(), 2);
        let (ok, no) = (&figs[0].figure, &figs[1].figure);
        let titles = |f: &Figure| f.panels.iter().map(|p| p.title.clone()).collect::<Vec<_>>();
        assert_eq!(
            titles(ok),
            ["Return levels", "QQ plot of the fit", "Threshold stability"]
        );
        // A refusal: no return level, only the plots that show why.
        assert_eq!(titles(no), ["QQ plot of the fit", "Threshold stability"]);
        assert!(figs[1].caption.starts_with("REFUSED"));
        // The levels drawn are the levels reported, in µs at their probability.
        let t = &run.tails[0];
        let levels = &series(&ok.panels[0], "95 % interval").points;
        assert_eq!(levels.len(), t.analysis.levels.len());
        for (l, &(x, y)) in t.analysis.levels.iter().zip(levels) {
            assert_eq!((x, y), (l.estimate_ns / 1e3, l.probability));
        }
        let curve = &series(&ok.panels[0], "fitted tail").points;
        assert_eq!(curve.len(), t.figures.curve.len());
        // The stability path is the analysis's, the chosen threshold marked on it.
        let xi = &series(&ok.panels[2], "ξ").points;
        let path = &t.figures.stability;
        assert_eq!(xi.len(), path.len());
        assert!(xi
            .iter()
            .zip(path)
            .all(|(&(x, y), p)| x == p.threshold_ns / 1e3 && y == p.xi));
        let chosen = series(&ok.panels[2], "chosen").points[0];
        let m = t.analysis.model.as_ref().unwrap();
        assert_eq!(chosen.0, m.threshold_ns / 1e3);
        assert_eq!(
            series(&ok.panels[1], "cluster maxima").points.len(),
            t.figures.qq.len()
        );
    }

    #[test]
    fn a_refusal_is_captioned_as_failed_only_where_a_test_failed_and_its_text_wraps() {
        // Refused with every diagnostic passed: the caption names no failed test.
        let t = thread(1, true);
        let failed = |a: &Analysis| {
            a.diagnostics
                .iter()
                .any(|d| matches!(d.outcome, rtscope_evt::Outcome::Fail { .. }))
        };
        assert!(!failed(&t.analysis));
        assert_eq!(caption(&t.analysis), REFUSED_PASSED);
        assert!(!REFUSED_PASSED.contains("failed"));
        // A diagnostic that failed: the caption says the tests failed.
        let mut a = t.analysis.clone();
        a.diagnostics[1].outcome = rtscope_evt::Outcome::Fail {
            statistic: 3.0,
            p: 0.001,
        };
        assert_eq!(caption(&a), REFUSED);
        assert_eq!(caption(&thread(0, false).analysis), CAPTION);
        // The text wraps inside the page instead of running past its right edge.
        let mut run = crate::tests::run_data("worst-wrap", "tail");
        run.tails = vec![t];
        let mut h = String::new();
        section(&mut h, std::slice::from_ref(&run), &[], true);
        assert!(
            h.contains("<pre style=\"white-space: pre-wrap; overflow-wrap: anywhere\">"),
            "{h}"
        );
    }

    #[test]
    fn the_section_is_on_the_page_only_when_asked() {
        let mut run = crate::tests::run_data("worst-page", "tail");
        let plain = crate::build(std::slice::from_ref(&run), &Default::default()).unwrap();
        let page = |files: &[crate::ReportFile]| {
            String::from_utf8(
                files
                    .iter()
                    .find(|f| f.name == "report.html")
                    .unwrap()
                    .bytes
                    .clone(),
            )
            .unwrap()
        };
        assert!(!page(&plain).contains("worst-case"));
        run.tails = vec![thread(0, false), thread(1, true)];
        let opts = crate::ReportOptions {
            tail: true,
            ..Default::default()
        };
        let files = crate::build(std::slice::from_ref(&run), &opts).unwrap();
        let html = page(&files);
        let section = &html[html.find("id=\"worst-case\"").unwrap()..];
        assert!(
            section.contains("CPU 0")
                && section.contains("per wake-up: the latency each wake-up exceeds")
        );
        assert!(section.contains("REFUSED: no worst-case estimate"));
        // The text of `rtscope tail`, line by line.
        assert!(section.contains("\n  model: peaks over threshold"));
        // Its refusals in plain words, each with its fix.
        assert!(section
            .contains("- the largest latencies do not follow the fitted tail (Anderson-Darling"));
        // A failed goodness of fit is not fixed by measuring longer (issue 66).
        assert!(section.contains("fix: the largest latencies mix several sources"));
        assert!(!section.contains("fix: measure about"));
        let id = run.id();
        for name in [
            format!("worst-case-run{id}-cpu0"),
            format!("worst-case-run{id}-cpu1"),
        ] {
            assert!(files.iter().any(|f| f.name == format!("{name}.svg")));
            assert!(section.contains(&format!("id=\"fig-{name}\"")));
        }
    }
}
