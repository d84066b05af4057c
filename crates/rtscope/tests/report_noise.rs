//! `rtscope report` and `rtscope compare` of a real `rtscope noise` run (issue 33, item 4): the
//! report draws it in the noise section with the figures the store holds and never as latency;
//! compare uses the noise statistics and refuses a noise group beside a latency group (exit 2).
//! No figure of the run is asserted: they vary; they are checked against the stored data.

use crate::common::browser::rendered_dom;
use crate::common::{dump, fresh_dir, run, temp_path};
use rtscope_report::model::RunData;
use rtscope_report::noise::html::{cells, row};
use rtscope_report::noise::{pct, CpuNoise};
use rtscope_store::Store;
use std::path::{Path, PathBuf};

const BIN: &str = env!("CARGO_BIN_EXE_rtscope");

/// A database holding one real 1 s noise run on CPU 0.
fn noise_db(name: &str) -> PathBuf {
    let db = temp_path(&format!("{name}.db"));
    for ext in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{ext}", db.display()));
    }
    // Not explained: the cause bar is then the whole noise, "not explained".
    let o = crate::noise::one_second_on_cpu_0(&["--explain", "off", "--db", db.to_str().unwrap()]);
    assert!(o.status.success(), "{}", dump(&o));
    db
}

fn read(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn a_recorded_noise_run_is_reported_as_noise_with_its_stored_figures() {
    let db = noise_db("report-noise");
    let dir = fresh_dir("report-noise");
    let (db_s, dir_s) = (db.to_str().unwrap(), dir.to_str().unwrap());
    let o = run(BIN, &["report", "--db", db_s, "-o", dir_s]);
    assert!(o.status.success(), "{}", dump(&o));
    let store = Store::open(&db).unwrap();
    let id = store.last_run().unwrap().unwrap();
    let r = RunData::from(store.bundle(id, false).unwrap());
    let cpus = CpuNoise::of_run(&r);
    assert_eq!(cpus.len(), 1);
    let c = &cpus[0];
    assert_eq!(c.cpu, Some(0));
    // The steal time the run read is stored with it (/proc/stat is readable here); the SMI
    // count is only where the CPU has a counter.
    assert!(c.steal_ns.is_some(), "{:?}", r.detail.config_json);
    let config: serde_json::Value = serde_json::from_str(&r.detail.config_json).unwrap();
    assert_eq!(config["platform"]["cpus"][0]["cpu"], 0);
    // The table row is the stored run's, column for column.
    let html = read(&dir, "report.html");
    let row = row(&cells(&r, c));
    assert!(html.contains(&row), "{row} not in the page");
    // The bar is named with the run's share available; the cause bar is the whole noise,
    // not explained (the run was recorded without --explain).
    let bar = format!("CPU 0: {} %", pct(c.available_percent().unwrap()));
    assert!(read(&dir, "noise-available.svg").contains(&bar), "{bar}");
    let noise = format!(
        "not explained: {}",
        rtscope_report::units::latency(c.noise_ns.unwrap())
    );
    assert!(read(&dir, "noise-causes.svg").contains(&noise), "{noise}");
    // The histogram draws every stored bucket of the loop's gaps.
    let panel = rtscope_report::noise::figures::histogram_panel(std::slice::from_ref(&r));
    let drawn: f64 = panel.series[0].points.iter().map(|p| p.1).sum();
    assert_eq!(drawn as u64, r.detail.threads[0].histogram.count());
    assert_eq!(drawn as u64, r.detail.threads[0].figures.samples);
    // Never as wake-up latency.
    for latency in ["histogram.svg", "tail.svg", "cdf.svg", "over-time.svg"] {
        assert!(
            !dir.join(latency).exists(),
            "{latency} drawn for a noise run"
        );
    }
    assert!(!html.contains("Latency per CPU"));
    // The answer first: the run's noise, and its longest gap not explained (no --explain);
    // every link of the page has its section.
    let answer = answer_box(&html);
    assert!(answer.contains(" of noise in "), "{answer}");
    assert!(answer.contains("not explained"), "{answer}");
    links_resolve(&html);
    let Some(dom) = rendered_dom(&dir.join("report.html"), "chromium-noise") else {
        return;
    };
    for want in [
        "OS noise per CPU",
        "noise-available.png",
        "noise-histogram.png",
        "noise-gaps.png",
    ] {
        assert!(dom.contains(want), "the rendered page lacks {want}");
    }
}

#[test]
fn compare_of_noise_runs_uses_the_noise_statistics_and_refuses_a_latency_group() {
    let db = noise_db("compare-noise");
    let db_s = db.to_str().unwrap();
    let latency = {
        let mut store = Store::open(&db).unwrap();
        let spec = rtscope_testkit::synthetic::SyntheticRun {
            samples: 1000,
            monitors: false,
            ..Default::default()
        };
        rtscope_testkit::synthetic::write_run(&mut store, &spec).unwrap()
    };
    let o = run(BIN, &["compare", "1", "1", "--db", db_s]);
    assert!(o.status.success(), "{}", dump(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    for stat in ["available", "noise/s", "max", "p99.99"] {
        assert!(out.contains(stat), "{stat} not compared:\n{out}");
    }
    assert!(!out.contains("missed"), "missed compared for noise:\n{out}");
    let o = run(BIN, &["compare", "1", &latency.to_string(), "--db", db_s]);
    assert_eq!(o.status.code(), Some(2), "{}", dump(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("kind noise") && err.contains("kind measure"),
        "{err}"
    );
}

/// `rtscope noise --explain`: the per-cause histograms are in the JSON, kept with the stored
/// explanation and drawn by the report from it. A thread of this test spins on the loop's CPU
/// beside it (both SCHED_OTHER: the scheduler shares the CPU), so there are thread gaps to
/// count whatever else the machine does.
#[test]
fn an_explained_noise_runs_per_cause_histograms_are_stored_and_drawn() {
    rtscope_testkit::require_root!("noise --explain reads tracefs");
    rtscope_testkit::require!(
        Path::new("/sys/kernel/tracing/instances").is_dir(),
        "needs tracefs mounted at /sys/kernel/tracing (mount -t tracefs nodev /sys/kernel/tracing)"
    );
    let db = temp_path("noise-cause-hist.db");
    let json = temp_path("noise-cause-hist.json");
    for ext in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{ext}", db.display()));
    }
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let spinner = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            // SAFETY: a zeroed cpu_set_t is a valid empty set; CPU_SET and
            // sched_setaffinity(0, …) act on this thread only; the name is NUL-terminated.
            unsafe {
                libc::prctl(libc::PR_SET_NAME, c"spinner".as_ptr(), 0, 0, 0);
                let mut set: libc::cpu_set_t = std::mem::zeroed();
                libc::CPU_SET(0, &mut set);
                libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
            }
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                std::hint::spin_loop();
            }
        })
    };
    let o = crate::noise::one_second_on_cpu_0(&[
        "--explain",
        "20us",
        "--db",
        db.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ]);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    spinner.join().unwrap();
    assert!(o.status.success(), "{}", dump(&o));
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let hists = &doc["explain"]["class_histograms"];
    let thread = hists
        .as_array()
        .and_then(|a| a.iter().find(|h| h["class"] == "thread" && h["cpu"] == 0))
        .unwrap_or_else(|| panic!("no thread histogram on CPU 0: {hists}"));
    // Each bucket is a power of two, and the thread class counts at most one per traced gap.
    let buckets = thread["buckets"].as_array().unwrap();
    let counted: u64 = buckets.iter().map(|b| b[1].as_u64().unwrap()).sum();
    assert!(buckets
        .iter()
        .all(|b| b[0].as_u64().unwrap().is_power_of_two()));
    assert!(counted >= 1 && counted <= doc["explain"]["counts"]["traced"].as_u64().unwrap());
    // Stored with the explanation, drawn from it.
    let store = Store::open(&db).unwrap();
    let id = store.last_run().unwrap().unwrap();
    let r = RunData::from(store.bundle(id, false).unwrap());
    let (stored, _) = r.explain.as_ref().expect("the explanation is stored");
    assert_eq!(
        serde_json::to_value(&stored.class_histograms).unwrap(),
        *hists
    );
    let dir = fresh_dir("report-noise-cause-hist");
    let o = run(
        BIN,
        &[
            "report",
            "--db",
            db.to_str().unwrap(),
            "-o",
            dir.to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{}", dump(&o));
    assert!(read(&dir, "noise-cause-histograms.svg").contains("thread"));
    let html = read(&dir, "report.html");
    assert!(html.contains("noise-cause-histograms"));
    // The answer names the longest gap's parts and who took the gap time; the worst gaps'
    // rows add up to 100 % (±1) and the spinner is among the culprits over the run.
    let answer = answer_box(&html);
    assert!(
        answer.contains("the longest traced gap (") && answer.contains("its parts: "),
        "{answer}"
    );
    assert!(answer.contains("of the traced gap time"), "{answer}");
    let gaps = &html[html.find("id=\"noise-gaps\"").expect("no worst gaps")..];
    let rows: Vec<&str> = gaps
        .split("<tr><td>")
        .skip(1)
        .take_while(|r| r.contains("unexplained rest"))
        .collect();
    assert!(!rows.is_empty(), "{gaps}");
    for row in rows {
        let shares: u64 = row
            .split(" (")
            .skip(1)
            .filter_map(|p| p.split(" %)").next()?.parse::<u64>().ok())
            .sum();
        assert!((99..=101).contains(&shares), "{shares} %: {row}");
    }
    assert!(gaps.contains("thread spinner:"), "{gaps}");
    links_resolve(&html);
}

/// The page's answer box.
fn answer_box(html: &str) -> &str {
    let at = html
        .find("<div class=\"answer\" id=\"answer\">")
        .expect("no answer box");
    let a = &html[at..];
    &a[..a.find("</div>").unwrap()]
}

/// Every `href="#x"` of the page has an element `id="x"`.
fn links_resolve(html: &str) {
    for link in html.split("href=\"#").skip(1) {
        let id = &link[..link.find('"').unwrap()];
        assert!(
            html.contains(&format!(" id=\"{id}\"")),
            "a link to #{id}, which the page lacks"
        );
    }
}
