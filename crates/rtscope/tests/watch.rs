//! `rtscope watch` end to end with the real engine (SCHED_FIFO), the real store and its HTTP
//! endpoint on loopback: windows written and served, the scraped page checked by `promtool
//! check metrics` (the validator of Prometheus' own text format), the textfile and the
//! database telling the same counts, alerts running their command, SIGHUP reloading the
//! configuration, SIGKILL then a restart resuming the series, SIGTERM a clean exit 0, and bad
//! input refused with exit 2 before anything starts. No time or latency is asserted.

use crate::common;
use crate::fleet_prometheus::{free_port, get_with};
use crate::hostile_support::{spawn, Reaper};
use rtscope_store::watch::Level;
use rtscope_store::Store;
use rtscope_watch::config::Settings;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};
use std::time::{Duration, Instant};

/// A watch process, SIGKILLed if the test ends before it was waited for.
pub struct Watch(Option<Child>, Reaper);

impl Watch {
    pub fn start(args: &[&str]) -> Watch {
        let mut a = vec!["watch"];
        a.extend_from_slice(args);
        let (child, reaper) = spawn(&a);
        Watch(Some(child), reaper)
    }

    /// A watch of the series `e2e` into `db` on `cpus`, with `more` options after those.
    pub fn start_e2e(db: &Path, cpus: &str, more: &[&str]) -> Watch {
        let mut a = vec![
            "--series",
            "e2e",
            "--db",
            db.to_str().unwrap(),
            "--cpus",
            cpus,
        ];
        a.extend_from_slice(more);
        Watch::start(&a)
    }

    pub fn signal(&self, sig: i32) {
        let pid = self.0.as_ref().unwrap().id() as i32;
        // SAFETY: kill(2) on our own child, which is not reaped yet.
        assert_eq!(unsafe { libc::kill(pid, sig) }, 0);
    }

    /// A watch started by the caller (with its own redirections).
    pub fn adopt(child: Child) -> Watch {
        let reaper = Reaper::new(child.id());
        Watch(Some(child), reaper)
    }

    pub fn pid(&self) -> u32 {
        self.0.as_ref().unwrap().id()
    }

    pub fn alive(&mut self) -> bool {
        matches!(self.0.as_mut().unwrap().try_wait(), Ok(None))
    }

    /// Waits for the end (at most 60 s, then SIGKILL) and returns the output.
    pub fn finish(mut self) -> Output {
        let t0 = Instant::now();
        while self.alive() && t0.elapsed() < Duration::from_secs(60) {
            std::thread::sleep(Duration::from_millis(50));
        }
        let c = self.0.take().unwrap();
        if t0.elapsed() >= Duration::from_secs(60) {
            // SAFETY: kill(2) on our own child, not reaped yet.
            unsafe { libc::kill(c.id() as i32, libc::SIGKILL) };
        }
        let o = c.wait_with_output().unwrap();
        self.1.disarm();
        o
    }
}

/// The measured windows in `db` (none before the watch created it). Opened as the watch opens
/// it (a read-only open sees nothing of the WAL the live watch writes to).
pub fn windows(db: &Path) -> Vec<rtscope_store::watch::WatchWindow> {
    windows_of(db, None)
}

/// The measured windows of the series `name` in `db` (of every series with `None`).
pub fn windows_of(db: &Path, name: Option<&str>) -> Vec<rtscope_store::watch::WatchWindow> {
    if !db.exists() {
        return Vec::new();
    }
    let s = Store::open(db).unwrap();
    let series = s.watch_series().unwrap();
    series
        .iter()
        .filter(|x| name.is_none_or(|n| x.name == n))
        .flat_map(|x| s.windows(x.id, Level::Window, i64::MIN, i64::MAX).unwrap())
        .collect()
}

/// Polls until `f` holds (at most 120 s; the watch must stay alive meanwhile).
pub fn until(w: &mut Watch, what: &str, mut f: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !f() {
        assert!(w.alive(), "the watch ended while waiting for {what}");
        assert!(
            t0.elapsed() < Duration::from_secs(120),
            "no {what} within 120 s"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The value of the sample line that starts with `prefix` in a metrics page.
fn value(page: &str, prefix: &str) -> Option<f64> {
    page.lines()
        .find(|l| l.starts_with(prefix))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

fn textfile_windows(t: &Path) -> f64 {
    let page = std::fs::read_to_string(t).unwrap_or_default();
    value(
        &page,
        "rtscope_watch_window_wakeups{series=\"e2e\",cpu=\"0\"}",
    )
    .unwrap_or(0.0)
}

#[test]
fn a_watch_serves_and_stores_its_windows_alerts_and_stops_cleanly() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    rtscope_testkit::require!(
        rtscope_testkit::have("promtool", "--version"),
        "`promtool` is not installed (apt-get install prometheus; .ci/run installs it)"
    );
    let _rt = common::rt_lock();
    let dir = common::fresh_dir("watch-serve");
    let (db, text, alerts) = (dir.join("w.db"), dir.join("w.prom"), dir.join("alerts"));
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let cmd = format!(
        "echo \"$RTSCOPE_CPU|$RTSCOPE_ALERT\" >> {}",
        alerts.display()
    );
    let mut w = Watch::start_e2e(
        &db,
        "0",
        &[
            "--interval",
            "500us",
            "--window",
            "1s",
            "--listen",
            &listen,
            "--textfile",
            text.to_str().unwrap(),
            "--alert",
            "max>1ns",
            "--alert-command",
            &cmd,
        ],
    );
    let mut page = String::new();
    until(&mut w, "a served window", || {
        page = get_with(port, "/metrics", "").unwrap_or_default();
        page.contains("rtscope_watch_window_wakeups{series=\"e2e\",cpu=\"0\"}")
    });
    // Prometheus' own validator accepts the page; OpenMetrics when asked for it.
    let scraped = dir.join("scraped.prom");
    std::fs::write(&scraped, &page).unwrap();
    let o = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(std::fs::File::open(&scraped).unwrap())
        .output()
        .unwrap();
    assert!(o.status.success(), "promtool: {}\n{page}", common::dump(&o));
    let om = get_with(
        port,
        "/metrics",
        "Accept: application/openmetrics-text; version=1.0.0\r\n",
    )
    .unwrap();
    assert!(
        om.ends_with("# EOF\n") && om.contains("# TYPE rtscope_watch_spikes counter"),
        "{om}"
    );
    until(&mut w, "three windows", || {
        textfile_windows(&text) > 0.0 && windows(&db).len() >= 3
    });
    w.signal(libc::SIGTERM);
    let o = w.finish();
    assert_eq!(o.status.code(), Some(0), "{}", common::dump(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("stopped by signal 15"),
        "{}",
        common::dump(&o)
    );
    // The database holds every window (the open one written at the stop); the last textfile
    // counts the same wake-ups; one alert command per window (every max is over 1 ns).
    let rows = windows(&db);
    assert!(
        rows.iter().all(|r| r.cpu == Some(0)),
        "one CPU: no 'all' rows"
    );
    let stored: u64 = rows.iter().map(|r| r.histogram.count()).sum();
    let page = std::fs::read_to_string(&text).unwrap();
    let count = value(
        &page,
        "rtscope_watch_latency_seconds_count{series=\"e2e\",cpu=\"0\"}",
    )
    .unwrap();
    assert_eq!(stored, count as u64, "{page}");
    assert!(rows
        .iter()
        .all(|r| r.alert.as_deref().is_some_and(|a| a.starts_with("max "))));
    let worst: Vec<_> = rows.iter().filter_map(|r| r.explain.as_deref()).collect();
    assert!(
        !worst.is_empty() && worst.iter().all(|e| e.contains("\"worst\"")),
        "{worst:?}"
    );
    let t0 = Instant::now();
    let lines = || {
        std::fs::read_to_string(&alerts)
            .unwrap_or_default()
            .lines()
            .count()
    };
    while lines() < rows.len() - 1 && t0.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(100));
    }
    // The last window's command may still have been starting at the exit.
    assert!(
        lines() + 1 >= rows.len(),
        "{} commands for {} windows",
        lines(),
        rows.len()
    );
    assert!(std::fs::read_to_string(&alerts)
        .unwrap()
        .lines()
        .all(|l| l.starts_with("0|max ")));
}

fn write_config(path: &Path, db: &Path, alert: &str) {
    let text = format!(
        "series = \"e2e\"\ndb = \"{}\"\ncpus = \"0\"\ninterval = \"1ms\"\nwindow = \"1s\"\nalert = [\"{alert}\"]\n",
        db.display()
    );
    std::fs::write(path, text).unwrap();
}

#[test]
fn sighup_reloads_the_configuration_and_a_killed_watch_resumes_its_series() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    let _rt = common::rt_lock();
    let dir = common::fresh_dir("watch-resume");
    let (db, conf) = (dir.join("w.db"), dir.join("watch.toml"));
    write_config(&conf, &db, "max>1ns");
    let conf_arg: PathBuf = conf.clone();
    let mut w = Watch::start(&["--config", conf_arg.to_str().unwrap()]);
    until(&mut w, "an alerted window", || {
        Path::new(&db).exists() && windows(&db).iter().any(|r| r.alert.is_some())
    });
    write_config(&conf, &db, "missed>1000000000");
    w.signal(libc::SIGHUP);
    let before = windows(&db).len();
    until(&mut w, "windows after the reload", || {
        windows(&db).len() >= before + 2
    });
    w.signal(libc::SIGKILL);
    let killed = w.finish();
    assert_eq!(killed.status.code(), None, "{}", common::dump(&killed));
    let err = String::from_utf8_lossy(&killed.stderr).to_string();
    assert!(err.contains("SIGHUP: configuration reloaded"), "{err}");
    let last = windows(&db).iter().map(|r| r.start_ns).max().unwrap();
    assert!(
        windows(&db)
            .iter()
            .filter(|r| r.start_ns > last - 1)
            .all(|r| r.alert.is_none()),
        "the new alert is in force"
    );

    let mut w = Watch::start(&["--config", conf.to_str().unwrap()]);
    until(&mut w, "a window of the restarted watch", || {
        windows(&db).iter().any(|r| r.start_ns > last)
    });
    w.signal(libc::SIGINT);
    let o = w.finish();
    assert_eq!(o.status.code(), Some(0), "{}", common::dump(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("resuming series 'e2e'"),
        "{}",
        common::dump(&o)
    );
    let s = Store::open(&db).unwrap().watch_series().unwrap();
    assert_eq!((s.len(), s[0].resumed), (1, 1), "{s:?}");
    let o = common::run(
        env!("CARGO_BIN_EXE_rtscope"),
        &["runs", "--db", db.to_str().unwrap()],
    );
    let text = String::from_utf8_lossy(&o.stdout);
    let row = text
        .lines()
        .find(|l| l.starts_with("1 ") && l.contains(" e2e "))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(row.trim_end().ends_with(" 1"), "resumed once: {row}");
}

#[test]
fn bad_input_is_refused_before_anything_starts() {
    let dir = common::fresh_dir("watch-bad");
    let db = dir.join("w.db");
    let db = db.to_str().unwrap();
    let bad = |args: &[&str], what: &str| {
        let mut a = vec!["watch", "--db", db];
        a.extend_from_slice(args);
        let o = common::run(env!("CARGO_BIN_EXE_rtscope"), &a);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", common::dump(&o));
        assert!(
            String::from_utf8_lossy(&o.stderr).contains(what),
            "{args:?}: {}",
            common::dump(&o)
        );
    };
    bad(&["--window", "7s"], "divide an hour");
    bad(&["--alert", "max=1us"], "STAT>VALUE");
    bad(&["--disk-budget", "1k"], "--disk-budget");
    let conf = dir.join("w.toml");
    std::fs::write(&conf, "intervall = \"1ms\"\n").unwrap();
    bad(&["--config", conf.to_str().unwrap()], "intervall");
    bad(&["--config", dir.to_str().unwrap()], "regular file");
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = busy.local_addr().unwrap().to_string();
    bad(&["--listen", &addr, "--cpus", "0"], "--listen");
    assert!(!Path::new(db).exists() || windows(Path::new(db)).is_empty());
}

/// The repository's root, where `systemd-analyze` can check units (`None` where it is not
/// installed; the testkit says why).
fn repo_with_systemd_analyze() -> Option<std::path::PathBuf> {
    rtscope_testkit::require!(
        rtscope_testkit::have("systemd-analyze", "--version"),
        "`systemd-analyze` is not installed (apt-get install systemd; .ci/run installs it)"
    );
    Some(Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."))
}

/// `scripts/install-watch.sh` of `root` with the test's binary, staged under `stage` with
/// PREFIX /opt/rt.
fn install_watch(root: &Path, stage: &Path) -> std::process::Output {
    Command::new("bash")
        .arg(root.join("scripts/install-watch.sh"))
        .arg(env!("CARGO_BIN_EXE_rtscope"))
        .env("DESTDIR", stage)
        .env("PREFIX", "/opt/rt")
        .output()
        .unwrap()
}

/// What `systemd-analyze verify` says of the unit at `path`, but for its man page (installed
/// by the package, not where the tests run).
fn verify_unit(path: &Path) -> Vec<String> {
    let o = Command::new("systemd-analyze")
        .arg("verify")
        .arg(path)
        .output()
        .unwrap();
    String::from_utf8_lossy(&o.stderr)
        .lines()
        .filter(|l| !l.contains("man rtscope-watch(1)"))
        .map(str::to_string)
        .collect()
}

/// The shipped unit passes systemd's own check with the binary in place, and runs the watch
/// with the configuration file the package installs (a conffile, every line a comment).
#[test]
fn the_service_unit_and_its_configuration_are_valid() {
    let Some(root) = repo_with_systemd_analyze() else {
        return;
    };
    let dir = common::fresh_dir("watch-unit");
    let unit = std::fs::read_to_string(root.join("packaging/rtscope-watch.service")).unwrap();
    assert!(unit.contains("ExecStart=/usr/bin/rtscope watch --config /etc/rtscope/watch.toml"));
    let unit = unit.replace("/usr/bin/rtscope", env!("CARGO_BIN_EXE_rtscope"));
    let path = dir.join("rtscope-watch.service");
    std::fs::write(&path, unit).unwrap();
    assert_eq!(verify_unit(&path), Vec::<String>::new());
    // As shipped every key is commented out; with each example uncommented it is valid.
    let conf = root.join("packaging/watch.toml");
    let file = Settings::read(&conf).unwrap();
    assert_eq!(file, Settings::default(), "every key commented out");
    let text = std::fs::read_to_string(&conf).unwrap();
    let examples: String = text
        .lines()
        .filter_map(|l| l.strip_prefix("# ").filter(|l| l.contains(" = ")))
        .map(|l| format!("{l}\n"))
        .collect();
    let all = dir.join("all.toml");
    std::fs::write(&all, &examples).unwrap();
    let s = Settings::read(&all).unwrap();
    assert!(
        s.listen.is_some() && s.alert.len() == 2 && s.disk_budget.is_some(),
        "{s:?}"
    );
    rtscope_watch::config::Config::build(&s, "host").unwrap();
}

/// `--explain`: with a SCHED_FIFO 99 `culprit` busy 20 ms every 100 ms on the measured CPU,
/// the worst wake-up of the windows is charged to it in their rows (`explain.culprit`, the
/// attribution beside the worst wake-up), by the same flight recorder as `measure --explain`.
/// At least one window must name it: on a loaded host some windows' worst is a stall of the
/// VM instead, which the trace charges elsewhere. (With 3 ms, beside the CI hog and a build,
/// every window's worst was such a stall of 7-12 ms for 120 s.)
#[test]
fn explain_names_the_injected_culprit_in_the_windows_it_made_worst() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    rtscope_testkit::require!(
        common::cpus() >= 2,
        "needs 2 CPUs (the watch's control thread stays off the measured one)"
    );
    let _rt = common::rt_lock();
    let dir = common::fresh_dir("watch-explain");
    let (db, alerts) = (dir.join("w.db"), dir.join("alerts"));
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let c = crate::explain::culprit_busy(1, 20, stop.clone());
    let cmd = format!(
        "echo \"$RTSCOPE_WINDOW_START|$RTSCOPE_CPU|$RTSCOPE_CAUSE\" >> {}",
        alerts.display()
    );
    let mut w = Watch::start_e2e(
        &db,
        "1",
        &[
            "--window",
            "1s",
            "--spike",
            "1ms",
            "--explain",
            "--alert",
            "max>1ms",
            "--alert-command",
            &cmd,
        ],
    );
    let named = |rows: &[rtscope_store::watch::WatchWindow]| {
        rows.iter()
            .filter(|r| {
                r.explain
                    .as_deref()
                    .is_some_and(|e| e.contains("\"culprit\":\"thread culprit\""))
            })
            .count()
    };
    let alerted = || std::fs::read_to_string(&alerts).unwrap_or_default();
    until(
        &mut w,
        "a window and an alert charged to the culprit",
        || named(&windows(&db)) >= 1 && alerted().contains("|1|thread culprit:"),
    );
    w.signal(libc::SIGTERM);
    let o = w.finish();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    c.join().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", common::dump(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("explaining each window's worst wake-up: tier"),
        "{err}"
    );
    let rows = windows(&db);
    let v: serde_json::Value = serde_json::from_str(
        rows.iter()
            .filter_map(|r| r.explain.as_deref())
            .find(|e| e.contains("\"culprit\":\"thread culprit\""))
            .unwrap(),
    )
    .unwrap();
    // The attribution is of the window's worst wake-up itself.
    let worst = v["worst"]["latency_ns"].as_u64().unwrap();
    let spike = &v["explained"]["spike"];
    assert_eq!(
        spike["wakeup_ns"].as_u64().unwrap() - spike["deadline_ns"].as_u64().unwrap(),
        worst,
        "{v}"
    );
    assert!(v["culprit_ns"].as_u64().unwrap() <= worst, "{v}");
    // An alert waits for its window's explanation and carries its cause as the one rule
    // states it (a culprit only with half of the wake-up), the line stored with the window.
    for line in alerted().lines().filter(|l| !l.ends_with('|')) {
        let mut f = line.splitn(3, '|');
        let (start, cause) = (f.next().unwrap(), f.nth(1).unwrap());
        let row = rows
            .iter()
            .find(|r| r.start_ns.to_string() == start && r.cpu == Some(1))
            .unwrap_or_else(|| panic!("no row for alert {line}"));
        let stored: serde_json::Value =
            serde_json::from_str(row.explain.as_deref().unwrap()).unwrap();
        assert_eq!(
            stored["cause"].as_str(),
            Some(cause),
            "alert {line}, row {stored}"
        );
        assert!(cause.contains(" %"), "every share printed: {line}");
        // The largest cause kept for the report's colours: a thread cause is its command, its
        // PIDs listed beside it, not one cause per PID.
        let name = stored["culprit"].as_str().unwrap();
        if name.starts_with("thread ") {
            assert!(!name.contains(':'), "{stored}");
            assert!(
                !stored["culprit_pids"].as_array().unwrap().is_empty(),
                "{stored}"
            );
        }
    }
    // Every CPU row at or above --spike is explained or says why not, in the shared
    // vocabulary (issue 65 item 5: 36 of 52 such windows were stored without either).
    let spiky: Vec<&rtscope_store::watch::WatchWindow> = rows
        .iter()
        .filter(|r| r.cpu.is_some() && r.histogram.max() >= Some(rtscope_core::Nanos::from_ms(1)))
        .collect();
    let mut why = std::collections::BTreeMap::new();
    for r in &spiky {
        let v: serde_json::Value =
            serde_json::from_str(r.explain.as_deref().unwrap_or("{}")).unwrap();
        if v.get("explained").is_some() {
            continue;
        }
        let name = v["unexplained"]
            .as_str()
            .unwrap_or_else(|| panic!("window {} neither explained nor says why: {v}", r.start_ns));
        let known = rtscope_explain::unexplained::Unexplained::from_name(name);
        assert!(known.is_some(), "unknown reason {name}");
        *why.entry(name.to_string()).or_insert(0) += 1;
    }
    eprintln!(
        "{} of {} windows name the culprit; {} at or above --spike, not explained: {why:?}",
        named(&rows),
        rows.len(),
        spiky.len()
    );
}

/// A real Prometheus (Debian's, on loopback, private directories) scrapes the watch's
/// `/metrics` directly; the last window's max and end time it returns, taken from one scrape,
/// are those of the window's row in the database, and its wake-up count is the rows' sum.
#[test]
fn prometheus_scrapes_the_watch_and_returns_the_windows_values() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    use crate::fleet_prometheus::{poll, prometheus};
    rtscope_testkit::require!(
        rtscope_testkit::have("prometheus", "--version"),
        "`prometheus` is not installed (apt-get install prometheus; .ci/run installs it)"
    );
    let _rt = common::rt_lock();
    let dir = common::fresh_dir("watch-prometheus");
    let db = dir.join("w.db");
    let (port, server) = (free_port(), free_port());
    let listen = format!("127.0.0.1:{port}");
    let mut w = Watch::start_e2e(&db, "0", &["--window", "2s", "--listen", &listen]);
    let (mut prom, plog) = prometheus(&dir, port, server);
    let q =
        r#"{__name__=~"rtscope_watch_window_(max|end_timestamp)_seconds",series="e2e",cpu="0"}"#;
    let limit = Duration::from_secs(120);
    let mut alive = || prom.check_alive(&plog);
    let r = poll(server, q, limit, &mut alive);
    assert_eq!(r.len(), 2, "{r:?}");
    let get = |name: &str| -> f64 {
        let v = r.iter().find(|x| x["metric"]["__name__"] == name).unwrap();
        v["value"][1].as_str().unwrap().parse().unwrap()
    };
    let (max_s, end_s) = (
        get("rtscope_watch_window_max_seconds"),
        get("rtscope_watch_window_end_timestamp_seconds"),
    );
    let count = poll(
        server,
        r#"rtscope_watch_latency_seconds_count{series="e2e",cpu="0"}"#,
        limit,
        &mut alive,
    );
    let count: f64 = count[0]["value"][1].as_str().unwrap().parse().unwrap();
    assert!(w.alive());
    w.signal(libc::SIGTERM);
    let o = w.finish();
    assert_eq!(o.status.code(), Some(0), "{}", common::dump(&o));
    let rows = windows(&db);
    let row = rows
        .iter()
        .find(|x| (x.end_ns as f64 / 1e9 - end_s).abs() < 1e-6)
        .unwrap_or_else(|| {
            panic!(
                "no row ends at {end_s}: {:?}",
                rows.iter().map(|x| x.end_ns).collect::<Vec<_>>()
            )
        });
    assert_eq!((max_s * 1e9).round() as u64, row.histogram.max().unwrap().0);
    let upto: u64 = rows
        .iter()
        .filter(|x| x.end_ns <= row.end_ns)
        .map(|x| x.histogram.count())
        .sum();
    assert!(
        count as u64 >= upto
            && count as u64 <= rows.iter().map(|x| x.histogram.count()).sum::<u64>()
    );
}

/// From a source build, `scripts/install-watch.sh` puts the binary, the unit (its ExecStart on
/// that binary, not the package's /usr/bin), the configuration and the man pages in place; the
/// unit it writes passes systemd's own check. Staged under DESTDIR: nothing on this machine is
/// touched.
#[test]
fn the_install_script_writes_a_unit_that_runs_the_installed_binary() {
    let Some(root) = repo_with_systemd_analyze() else {
        return;
    };
    let stage = common::fresh_dir("watch-install");
    let o = install_watch(&root, &stage);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let bin = stage.join("opt/rt/bin/rtscope");
    assert!(bin.is_file());
    assert!(stage.join("etc/rtscope/watch.toml").is_file());
    assert!(stage
        .join("opt/rt/share/man/man1/rtscope-watch.1")
        .is_file());
    let unit_path = stage.join("etc/systemd/system/rtscope-watch.service");
    let unit = std::fs::read_to_string(&unit_path).unwrap();
    assert!(
        unit.contains("ExecStart=/opt/rt/bin/rtscope watch --config /etc/rtscope/watch.toml")
            && !unit.contains("/usr/bin/rtscope"),
        "{unit}"
    );
    // On the target the path is /opt/rt/bin/rtscope; here, the staged copy.
    let check = stage.join("check.service");
    let staged = unit.replace("/opt/rt/bin/rtscope", bin.to_str().unwrap());
    std::fs::write(&check, staged).unwrap();
    assert_eq!(verify_unit(&check), Vec::<String>::new());
    // Again: the configuration a user edited is kept.
    std::fs::write(stage.join("etc/rtscope/watch.toml"), "# mine\n").unwrap();
    let again = install_watch(&root, &stage);
    assert!(again.status.success());
    let conf = std::fs::read_to_string(stage.join("etc/rtscope/watch.toml")).unwrap();
    assert_eq!(conf, "# mine\n");
}
