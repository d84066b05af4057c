//! The Prometheus path end to end with the real components, on loopback only: a run recorded
//! with `--metrics-file` into a textfile directory, Debian's `prometheus-node-exporter`
//! (textfile collector only) and `prometheus` started on free loopback ports with private
//! directories, the HTTP API polled until the metric appears, and the queried max and
//! p99.99 compared with `rtscope runs show --json`. Then every PromQL query of the shipped
//! Grafana dashboard (docs/grafana-rtscope-fleet.json) runs against that Prometheus and must
//! return data. When the programs are not installed (.ci/run installs them) the test fails
//! under RTSCOPE_TEST_STRICT=1 and skips with the reason printed otherwise.

use crate::common;

use serde_json::Value;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

fn rtscope(args: &[&str]) -> Output {
    common::run(env!("CARGO_BIN_EXE_rtscope"), args)
}

/// A child process killed and reaped when the test ends, however it ends.
pub(crate) struct Proc(Child, &'static str);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Proc {
    pub(crate) fn start(name: &'static str, args: &[String], log: &Path) -> Proc {
        let log = std::fs::File::create(log).unwrap();
        let child = Command::new(name)
            .args(args)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {name}: {e}"));
        Proc(child, name)
    }

    pub(crate) fn check_alive(&mut self, log: &Path) {
        if let Ok(Some(status)) = self.0.try_wait() {
            panic!(
                "{} exited ({status}):\n{}",
                self.1,
                std::fs::read_to_string(log).unwrap_or_default()
            );
        }
    }
}

pub(crate) fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

fn encode(q: &str) -> String {
    q.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// GET `path` from 127.0.0.1:`port`; the body, or `None` while the server is not answering.
fn get(port: u16, path: &str) -> Option<String> {
    get_with(port, path, "")
}

/// [`get`] with more request header lines (each ending in CRLF).
pub(crate) fn get_with(port: u16, path: &str, headers: &str) -> Option<String> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n{headers}\r\n").ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    let (head, body) = text.split_once("\r\n\r\n")?;
    head.starts_with("HTTP/1.0 200")
        .then_some(())
        .or_else(|| head.starts_with("HTTP/1.1 200").then_some(()))?;
    Some(body.to_string())
}

/// The result vector of an instant query (empty until Prometheus has the series).
fn query(port: u16, q: &str) -> Vec<Value> {
    get(port, &format!("/api/v1/query?query={}", encode(q)))
        .and_then(|b| serde_json::from_str::<Value>(&b).ok())
        .and_then(|v| v["data"]["result"].as_array().cloned())
        .unwrap_or_default()
}

/// Polls `q` until it returns data (at most `limit`; each poll is a real query).
pub(crate) fn poll(port: u16, q: &str, limit: Duration, alive: &mut dyn FnMut()) -> Vec<Value> {
    let start = Instant::now();
    loop {
        let r = query(port, q);
        if !r.is_empty() {
            return r;
        }
        alive();
        assert!(
            start.elapsed() < limit,
            "no data for `{q}` within {limit:?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn ns(v: &Value) -> u64 {
    let s = v["value"][1].as_str().expect("a sample value");
    (s.parse::<f64>().unwrap() * 1e9).round() as u64
}

fn record(db: &Path, metrics: &Path) -> Value {
    let o = {
        let _rt = common::rt_lock();
        rtscope(&[
            "measure",
            "-l",
            "2000",
            "-i",
            "200us",
            "-q",
            "--series-interval",
            "100ms",
            "--db",
            db.to_str().unwrap(),
            "--label",
            "idle",
            "--tag",
            "board=e2e",
            "--limit",
            "max=10s",
            "--metrics-file",
            metrics.to_str().unwrap(),
        ])
    };
    assert_eq!(o.status.code(), Some(0), "{}", common::dump(&o));
    common::show_last(db)
}

/// Debian's `prometheus` scraping 127.0.0.1:`target` every second, serving on `server`, its
/// configuration, database and log in `dir`; the process and its log.
pub(crate) fn prometheus(dir: &Path, target: u16, server: u16) -> (Proc, PathBuf) {
    let log = dir.join("prometheus.log");
    let p = Proc::start(
        "prometheus",
        &[
            format!("--config.file={}", config(dir, target).display()),
            format!("--storage.tsdb.path={}", dir.join("tsdb").display()),
            format!("--web.listen-address=127.0.0.1:{server}"),
        ],
        &log,
    );
    (p, log)
}

fn config(dir: &Path, exporter: u16) -> PathBuf {
    let path = dir.join("prometheus.yml");
    let yml = format!(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: boards\n    static_configs:\n      - targets: ['127.0.0.1:{exporter}']\n"
    );
    std::fs::write(&path, yml).unwrap();
    path
}

#[test]
fn prometheus_scrapes_the_textfile_and_the_dashboard_queries_return_rtscopes_numbers() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    for p in ["prometheus", "prometheus-node-exporter"] {
        rtscope_testkit::require!(
            rtscope_testkit::have(p, "--version"),
            "`{p}` is not installed (apt-get install {p}; .ci/run installs it)"
        );
    }
    let dir = common::fresh_dir("fleet-prometheus");
    let textfiles = dir.join("textfile");
    std::fs::create_dir_all(&textfiles).unwrap();
    let show = record(&dir.join("r.db"), &textfiles.join("rtscope.prom"));
    let max_ns = show["max_ns"].as_u64().unwrap();
    let p9999_ns = show["percentiles_ns"]["p99.99"].as_u64().unwrap();
    // The export of the recorded run says the same as the live file's last write.
    let o = rtscope(&[
        "export",
        "last",
        "--db",
        dir.join("r.db").to_str().unwrap(),
        "-f",
        "prometheus",
        "-o",
        dir.join("export").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", common::dump(&o));
    let exported = std::fs::read_to_string(dir.join("export/rtscope-e2e-idle.prom")).unwrap();
    let live = std::fs::read_to_string(textfiles.join("rtscope.prom")).unwrap();
    let gauges = |t: &str| -> Vec<String> {
        t.lines()
            .filter(|l| {
                l.starts_with("rtscope_latency_max_seconds{")
                    || l.starts_with("rtscope_latency_percentile_seconds{")
            })
            .map(str::to_string)
            .collect()
    };
    assert_eq!(gauges(&live), gauges(&exported));

    let (exporter, server) = (free_port(), free_port());
    let elog = dir.join("node-exporter.log");
    let mut ne = Proc::start(
        "prometheus-node-exporter",
        &[
            format!("--web.listen-address=127.0.0.1:{exporter}"),
            "--collector.disable-defaults".into(),
            "--collector.textfile".into(),
            format!("--collector.textfile.directory={}", textfiles.display()),
        ],
        &elog,
    );
    let (mut prom, plog) = prometheus(&dir, exporter, server);
    let mut alive = || {
        ne.check_alive(&elog);
        prom.check_alive(&plog);
    };
    let limit = Duration::from_secs(120);
    let max = poll(
        server,
        r#"rtscope_latency_max_seconds{board="e2e",cpu="all"}"#,
        limit,
        &mut alive,
    );
    assert_eq!(ns(&max[0]), max_ns, "{max:?}");
    let q = r#"rtscope_latency_percentile_seconds{board="e2e",cpu="all",percentile="99.99"}"#;
    let p = poll(server, q, limit, &mut alive);
    assert_eq!(ns(&p[0]), p9999_ns, "{p:?}");
    assert_eq!(max[0]["metric"]["label"], "idle");
    assert!(max[0]["metric"].get("run_id").is_none());

    // The dashboard: every panel's query returns data, the headline panels rtscope's numbers.
    let board: Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/grafana-rtscope-fleet.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let panels = board["panels"].as_array().unwrap();
    assert!(panels.len() >= 8);
    for panel in panels {
        for t in panel["targets"].as_array().unwrap() {
            let expr = t["expr"].as_str().unwrap();
            let q = expr
                .replace("$job", ".+")
                .replace("$instance", ".+")
                .replace("$board", ".+")
                .replace("$__rate_interval", "1m");
            let r = poll(server, &q, limit, &mut alive);
            match panel["title"].as_str().unwrap() {
                "Maximum latency per board" | "5-minute maximum (OSADL-style)" => {
                    assert_eq!(ns(&r[0]), max_ns, "{}: {r:?}", panel["title"])
                }
                "p99.99 per board (exact)" => assert_eq!(ns(&r[0]), p9999_ns),
                "Limits" => assert_eq!(r[0]["value"][1], "1"),
                _ => {}
            }
        }
    }
    drop(prom);
    drop(ne);
    std::fs::remove_dir_all(&dir).unwrap();
}
