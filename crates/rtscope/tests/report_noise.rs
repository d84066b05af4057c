//! `rtscope report` and `rtscope compare` of a real `rtscope noise` run (issue 33, item 4): the
//! report draws it in the noise section with the figures the store holds and never as latency;
//! compare uses the noise statistics and refuses a noise group beside a latency group (exit 2).
//! No figure of the run is asserted: they vary; they are checked against the stored data.

use crate::common::browser::rendered_dom;
use crate::common::{dump, fresh_dir, run, temp_path};
use rtscope_report::noise::html::{cells, row};
use rtscope_report::noise::{pct, CpuNoise};
use rtscope_report::RunData;
use rtscope_store::Store;
use std::path::{Path, PathBuf};

const BIN: &str = env!("CARGO_BIN_EXE_rtscope");

/// A database holding one real 1 s noise run on CPU 0.
fn noise_db(name: &str) -> PathBuf {
    let db = temp_path(&format!("{name}.db"));
    for ext in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{ext}", db.display()));
    }
    let o = crate::noise::one_second_on_cpu_0(&["--db", db.to_str().unwrap()]);
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
    // The table row is the stored run's, column for column.
    let html = read(&dir, "report.html");
    let row = row(&cells(&r, c));
    assert!(html.contains(&row), "{row} not in the page");
    // The bar is named with the run's share available; the cause bar is the whole noise,
    // not explained (the run was recorded without --explain).
    let bar = format!("CPU 0: {} %", pct(c.available_percent().unwrap()));
    assert!(read(&dir, "noise-available.svg").contains(&bar), "{bar}");
    let noise = format!("not explained: {}", rtscope_report::us(c.noise_ns.unwrap()));
    assert!(read(&dir, "noise-causes.svg").contains(&noise), "{noise}");
    // The histogram draws every stored bucket of the loop's gaps.
    let panel = rtscope_report::noise::figures::histogram_panel(std::slice::from_ref(&r));
    let drawn: f64 = panel.series[0].points.iter().map(|p| p.1).sum();
    assert_eq!(drawn as u64, r.detail.threads[0].histogram.count());
    assert_eq!(drawn as u64, r.detail.threads[0].samples);
    // Never as wake-up latency.
    for latency in ["histogram.svg", "tail.svg", "cdf.svg", "over-time.svg"] {
        assert!(
            !dir.join(latency).exists(),
            "{latency} drawn for a noise run"
        );
    }
    assert!(!html.contains("Latency per CPU"));
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
