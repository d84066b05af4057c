//! Issue 25, item 7, as a person sees it: one report over a real `respond` run of three
//! mechanisms, imports of cyclictest `-q`, `-h400` and `--spike` output, and synthetic runs
//! laid out as a 4-column grid, opened in headless Chromium. A script measures the rendered
//! SVGs: no two panel titles overlap, no title leaves the figure, and every histogram panel
//! has a plot area of real size (no empty panel, no squashed one).

use crate::common;
use crate::common::browser::{chromium, layout_check};

use rtscope_store::Store;
use rtscope_testkit::synthetic::{write_run, SyntheticRun};
use std::path::{Path, PathBuf};

const BIN: &str = env!("CARGO_BIN_EXE_rtscope");

fn reference(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/reference/cyclictest-2.40")
        .join(name)
}

fn ok(args: &[&str]) -> String {
    let o = common::run(BIN, args);
    assert_eq!(o.status.code(), Some(0), "{}", common::dump(&o));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The database: runs 1-8 synthetic (kernels × cases idle/cpu), 9 a respond run of eventfd,
/// pipe and signal, 10-12 the imports; runs 9-12 make the `mixed` row of the grid.
fn mixed_db(dir: &Path) -> PathBuf {
    let db = dir.join("r.db");
    let kernels = [
        "6.12.0-rt-preempt-a",
        "6.12.0-rt-preempt-b",
        "6.12.0-rt-c",
        "6.12.0-std-d",
    ];
    {
        let mut store = Store::open(&db).unwrap();
        for (i, (case, kernel)) in ["idle", "cpu"]
            .iter()
            .flat_map(|c| kernels.iter().map(move |k| (c, k)))
            .enumerate()
        {
            let spec = SyntheticRun {
                label: format!("{case}-{kernel}"),
                samples: 5_000,
                base_ns: 4_000 + 700 * i as u64,
                seed: i as u64 + 3,
                monitors: false,
                tags: vec![
                    ("kernel".into(), kernel.to_string()),
                    ("case".into(), case.to_string()),
                ],
                ..SyntheticRun::default()
            };
            write_run(&mut store, &spec).unwrap();
        }
    }
    let d = db.to_str().unwrap();
    ok(&[
        "respond",
        "--ipc",
        "eventfd,pipe,signal",
        "-D",
        "1s",
        "-q",
        "--policy",
        "other",
        "-p",
        "0",
        "--no-mlock",
        "--db",
        d,
        "--label",
        "ipc",
    ]);
    for f in ["summary-q.txt", "hist-h400.txt", "spike-100.txt"] {
        ok(&["import", "--db", d, reference(f).to_str().unwrap()]);
    }
    let mut store = Store::open(&db).unwrap();
    for (id, kernel) in (9..=12).zip(kernels) {
        store.set_tag(id, "kernel", Some(kernel)).unwrap();
        store.set_tag(id, "case", Some("mixed")).unwrap();
    }
    db
}

/// Measures every figure's SVG once rendered: each panel title's box (the largest centred
/// text), and for each title the box of the data lines drawn below it in its cell. Written as
/// JSON into `<pre id="layout-check">`.
const CHECK_JS: &str = r#"<pre id="layout-check"></pre><script>
const out = [];
for (const fig of document.querySelectorAll('figure')) {
  const svg = fig.querySelector('svg');
  if (!svg) continue;
  const w = svg.viewBox.baseVal.width, h = svg.viewBox.baseVal.height;
  const texts = [...svg.querySelectorAll('text[text-anchor="middle"]')];
  const big = Math.max(...texts.map(t => parseFloat(t.getAttribute('font-size'))));
  const titles = texts.filter(t => parseFloat(t.getAttribute('font-size')) === big)
    .map(t => { const b = t.getBBox(); return {text: t.textContent.trim().split('\n').pop(), x: b.x, y: b.y, w: b.width, h: b.height}; });
  const rows = {};
  for (const t of titles) rows[Math.round(t.y)] = (rows[Math.round(t.y)] || 0) + 1;
  const cols = Math.max(1, ...Object.values(rows));
  const cellW = w / cols;
  const lines = [...svg.querySelectorAll('polyline')].map(p => p.getBBox());
  const plots = titles.map(t => {
    const cx = t.x + t.w / 2, top = t.y + t.h;
    const below = titles.filter(o => o.y > t.y + 1 && Math.abs(o.x + o.w / 2 - cx) < cellW / 2).map(o => o.y);
    const bottom = below.length ? Math.min(...below) : h;
    const mine = lines.filter(b => Math.abs(b.x + b.width / 2 - cx) < cellW / 2 && b.y >= top - 1 && b.y + b.height <= bottom + 1);
    if (!mine.length) return {w: 0, h: 0};
    const x0 = Math.min(...mine.map(b => b.x)), x1 = Math.max(...mine.map(b => b.x + b.width));
    const y0 = Math.min(...mine.map(b => b.y)), y1 = Math.max(...mine.map(b => b.y + b.height));
    return {w: x1 - x0, h: y1 - y0};
  });
  out.push({fig: fig.id, width: w, cols, titles, plots});
}
document.getElementById('layout-check').textContent = JSON.stringify(out);
</script>"#;

type Boxes = Vec<(f64, f64, f64, f64)>;

fn overlaps(a: (f64, f64, f64, f64), b: (f64, f64, f64, f64)) -> bool {
    a.0 < b.0 + b.2 && b.0 < a.0 + a.2 && a.1 < b.1 + b.3 && b.1 < a.1 + a.3
}

#[test]
fn a_mixed_report_names_mechanisms_and_lays_out_in_chromium_without_overlap() {
    let dir = common::fresh_dir("report-layout-mixed");
    let db = mixed_db(&dir);
    let out = dir.join("out");
    let ids: Vec<String> = (1..=12).map(|i| i.to_string()).collect();
    let mut args = vec![
        "report",
        "--db",
        db.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ];
    args.extend(ids.iter().map(String::as_str));
    args.extend(["--rows", "case", "--cols", "kernel"]);
    ok(&args);
    let read = |f: &str| std::fs::read_to_string(out.join(f)).unwrap();
    let md = read("summary.md");
    for m in ["eventfd", "pipe", "signal"] {
        assert!(
            md.contains(&format!("| {m} ")),
            "summary.md lacks {m}:\n{md}"
        );
    }
    let q = md
        .lines()
        .find(|l| l.contains("summary-q.txt") && l.contains("| all |"))
        .unwrap();
    assert!(
        q.contains("| — |"),
        "an import's missed count is unknown: {q}"
    );
    assert!(
        read("histogram.svg").contains("signal "),
        "no mechanism in the legends"
    );
    let page = read("report.html");
    assert!(page.contains("id=\"spikes\"") && page.contains("<td>162.0</td>"));
    assert!(page.contains("Not drawn: ") && page.contains("summary-q.txt"));
    assert!(
        !page.contains("run 9 was recorded with the old sample rule"),
        "a respond run"
    );
    // The page with the measuring script, rendered.
    let check = dir.join("out/check.html");
    std::fs::write(
        &check,
        page.replace("</body>", &format!("{CHECK_JS}</body>")),
    )
    .unwrap();
    let Some(o) = chromium(&check, &["--dump-dom"], "chromium-report-layout") else {
        return;
    };
    let figs = layout_check(&o);
    let hist = figs
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["fig"] == "fig-histogram")
        .expect("a histogram figure");
    assert_eq!(hist["cols"], 4, "{hist}");
    // 12 runs less the two summary-only imports.
    assert_eq!(hist["titles"].as_array().unwrap().len(), 10, "{hist}");
    for f in figs.as_array().unwrap() {
        let width = f["width"].as_f64().unwrap();
        let boxes: Boxes = f["titles"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                let n = |k: &str| t[k].as_f64().unwrap();
                (n("x"), n("y"), n("w"), n("h"))
            })
            .collect();
        for (i, a) in boxes.iter().enumerate() {
            assert!(
                a.0 >= 0.0 && a.0 + a.2 <= width,
                "{}: title {i} leaves the figure: {f}",
                f["fig"]
            );
            for b in &boxes[i + 1..] {
                assert!(
                    !overlaps(*a, *b),
                    "{}: titles overlap: {a:?} {b:?}",
                    f["fig"]
                );
            }
        }
    }
    let cell = hist["width"].as_f64().unwrap() / 4.0;
    for (t, p) in hist["titles"]
        .as_array()
        .unwrap()
        .iter()
        .zip(hist["plots"].as_array().unwrap())
    {
        let (w, h) = (p["w"].as_f64().unwrap(), p["h"].as_f64().unwrap());
        assert!(h >= 60.0, "{}: a plot {h} px high", t["text"]);
        assert!(
            w >= cell * 0.4,
            "{}: a plot {w} px wide in a {cell} px cell",
            t["text"]
        );
    }
}
