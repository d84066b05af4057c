//! Every query of the watch's Grafana dashboard (docs/grafana-rtscope-watch.json) against a
//! real Prometheus (Debian's, on loopback, private directories) scraping a real `rtscope
//! watch` (1-second windows, `--explain`, on loopback): each must return data. The dashboard's
//! variables are replaced by their "All" value and `$__rate_interval` by one minute, as
//! Grafana would for a 15-second scrape. Also checked on what Prometheus returns: the cause of
//! the latest explained spike is a command with its PIDs in their own label, not one cause
//! per PID. No time or latency is asserted.

use crate::common;
use crate::fleet_prometheus::{free_port, poll, prometheus};
use crate::watch::Watch;
use serde_json::Value;
use std::path::Path;
use std::time::Duration;

/// The dashboard's queries: (panel title, query as Prometheus gets it).
fn queries() -> Vec<(String, String)> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/grafana-rtscope-watch.json");
    let d: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let all: Vec<(String, String)> = d["templating"]["list"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|v| v["type"] == "query")
        .map(|v| {
            let name = v["name"].as_str().unwrap();
            (
                format!("${name}"),
                v["allValue"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let mut out = Vec::new();
    for p in d["panels"].as_array().unwrap() {
        for t in p["targets"].as_array().unwrap() {
            let mut q = t["expr"]
                .as_str()
                .unwrap()
                .replace("$__rate_interval", "1m");
            for (var, value) in &all {
                q = q.replace(&format!("\"{var}\""), &format!("\"{value}\""));
            }
            assert!(!q.contains('$'), "a variable left in {q}");
            out.push((p["title"].as_str().unwrap().to_string(), q));
        }
    }
    out
}

#[test]
fn every_query_of_the_watch_dashboard_returns_data_from_a_scraped_watch() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory; tracefs");
    rtscope_testkit::require!(
        rtscope_testkit::have("prometheus", "--version"),
        "`prometheus` is not installed (apt-get install prometheus; .ci/run installs it)"
    );
    rtscope_testkit::require!(
        common::cpus() >= 2,
        "needs 2 CPUs (the watch's control thread stays off the measured one)"
    );
    let queries = queries();
    let _rt = common::rt_lock();
    let dir = common::fresh_dir("watch-dashboard");
    let db = dir.join("w.db");
    let (port, server) = (free_port(), free_port());
    let listen = format!("127.0.0.1:{port}");
    // Every window's worst wake-up is a spike (1 µs): each is explained, so the cause panel
    // has data; every window breaches the alert, so its counter moves.
    let mut w = Watch::start_e2e(
        &db,
        "1",
        &[
            "--window",
            "1s",
            "--listen",
            &listen,
            "--explain",
            "--spike",
            "1us",
            "--alert",
            "max>1us",
        ],
    );
    let (mut prom, plog) = prometheus(&dir, port, server);
    let limit = Duration::from_secs(120);
    let mut alive = || prom.check_alive(&plog);
    for (title, q) in &queries {
        let r = poll(server, q, limit, &mut alive);
        if q.contains("_bucket") {
            assert!(r.len() >= 2, "{title}: one bucket only: {r:?}");
        }
        eprintln!("{title}: {} series for {q}", r.len());
    }
    let causes = poll(
        server,
        r#"rtscope_watch_window_cause_seconds{series="e2e"}"#,
        limit,
        &mut alive,
    );
    eprintln!("causes: {causes:?}");
    for c in &causes {
        let (cause, pids) = (
            c["metric"]["cause"].as_str().unwrap(),
            c["metric"]["pids"].as_str().unwrap_or(""),
        );
        // `thread name:PID:prio` was one series per PID; now the command, its PIDs beside. A
        // command may hold a colon itself (`kworker/u8:1`), never a PID and a priority after it.
        if cause.starts_with("thread ") || cause.starts_with("blocking ") {
            let fields: Vec<&str> = cause.rsplitn(3, ':').collect();
            assert!(
                !(fields.len() == 3 && fields[1].parse::<i32>().is_ok()),
                "{c}"
            );
            assert!(
                !pids.is_empty()
                    && pids
                        .split(',')
                        .all(|p| p.parse::<i32>().is_ok() || p.starts_with('+')),
                "{c}"
            );
        }
    }
    assert!(w.alive());
    w.signal(libc::SIGTERM);
    let o = w.finish();
    assert_eq!(o.status.code(), Some(0), "{}", common::dump(&o));
    drop(prom);
    std::fs::remove_dir_all(&dir).unwrap();
}
