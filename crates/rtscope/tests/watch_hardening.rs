//! `rtscope watch` held to "nothing lost, nothing let in" (issue 49), with the real binary,
//! the real engine, the real store and real sockets and signals:
//!
//! - a second watch of one series and database is refused (exit 2, naming the first's PID,
//!   before its banner) while the first runs on, and the windows never hold more wake-ups
//!   than one watch can make;
//! - `/metrics` answers a scrape beside 1,000 idle connections and a client sending a byte a
//!   second, and that client is cut;
//! - a database on a full file system: the windows it could not take at the stop are counted
//!   as lost, exit 2, never called kept;
//! - the alert command's process group is ended at the stop (SIGTERM, then SIGKILL for one
//!   that ignores it);
//! - every bad path, port, CPU list and series name is refused before the banner, with
//!   nothing created, and a SIGHUP's new configuration is checked the same way.
//!
//! No time, latency or ratio is asserted: the waits are the tests' own bounds.

use crate::common;
use crate::fleet_prometheus::{free_port, get_with};
use crate::hostile_support;
use crate::watch::{until, Watch};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The window rows of the series `name` in `db`.
fn rows_of(db: &Path, name: &str) -> Vec<rtscope_store::watch::WatchWindow> {
    crate::watch::windows_of(db, Some(name))
}

fn watch_args<'a>(series: &'a str, db: &'a str) -> Vec<&'a str> {
    vec![
        "--series",
        series,
        "--db",
        db,
        "--cpus",
        "0",
        "--interval",
        "5ms",
        "--window",
        "1s",
    ]
}

#[test]
fn a_second_watch_of_a_series_is_refused_naming_the_first_which_runs_on() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    let _rt = common::rt_lock();
    let dir = common::fresh_dir("watch-twice");
    let db = dir.join("w.db");
    let dbs = db.to_str().unwrap();
    let mut first = Watch::start(&watch_args("e2e", dbs));
    until(&mut first, "a window of the first watch", || {
        !rows_of(&db, "e2e").is_empty()
    });
    let mut a = vec!["watch"];
    a.extend(watch_args("e2e", dbs));
    let o = hostile_support::rtscope(&a);
    let (out, err) = hostile_support::texts(&o);
    assert_eq!(o.status.code(), Some(2), "{}", common::dump(&o));
    assert!(
        err.contains(&format!("already watched by PID {}", first.pid()))
            && err.contains("kill -TERM")
            && err.contains("--series"),
        "{err}"
    );
    assert!(!out.contains("until stopped"), "no banner: {out}");
    assert!(first.alive(), "the first watch runs on");
    // The lock is the series', not the database's: another series of it runs.
    let mut other = Watch::start(&watch_args("other", dbs));
    until(&mut other, "a window of another series", || {
        !rows_of(&db, "other").is_empty()
    });
    other.signal(libc::SIGTERM);
    let o = other.finish();
    assert_eq!(o.status.code(), Some(0), "{}", common::dump(&o));
    let before = rows_of(&db, "e2e").len();
    until(&mut first, "two more windows", || {
        rows_of(&db, "e2e").len() >= before + 2
    });
    first.signal(libc::SIGTERM);
    let o = first.finish();
    assert_eq!(o.status.code(), Some(0), "{}", common::dump(&o));
    // One watch wakes at most once per 5 ms of a window's span (two watches adding into one
    // row made twice that).
    for r in rows_of(&db, "e2e") {
        let most = (r.end_ns - r.start_ns) as u64 / 5_000_000 + 2;
        assert!(
            r.histogram.count() <= most,
            "{} wake-ups in a window of {} ns at 5 ms",
            r.histogram.count(),
            r.end_ns - r.start_ns
        );
    }
}

/// Raises this process's open-file limit to its hard limit (1,000 connections and more).
fn raise_nofile() -> u64 {
    // SAFETY: getrlimit/setrlimit read and write the `rlimit` record given, which outlives
    // the calls.
    unsafe {
        let mut r: libc::rlimit = std::mem::zeroed();
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut r);
        r.rlim_cur = r.rlim_max;
        libc::setrlimit(libc::RLIMIT_NOFILE, &r);
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut r);
        r.rlim_cur as u64
    }
}

/// A client that sends a request head a byte a second and never ends it; whether the server
/// cut it (within the test's own bound of 120 s).
fn slow_loris(addr: SocketAddr) -> std::thread::JoinHandle<bool> {
    std::thread::spawn(move || {
        let Ok(mut s) = TcpStream::connect(addr) else {
            return false;
        };
        let _ = s.set_read_timeout(Some(Duration::from_millis(50)));
        let head = b"GET /metrics HTTP/1.1\r\nX-Slow: ";
        let t0 = Instant::now();
        let mut sent = 0usize;
        while t0.elapsed() < Duration::from_secs(120) {
            let b = head.get(sent).copied().unwrap_or(b'a');
            if s.write_all(&[b]).is_err() {
                return true;
            }
            sent += 1;
            let mut buf = [0u8; 256];
            match s.read(&mut buf) {
                Ok(0) => return true,
                Ok(_) => return false,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {}
                Err(_) => return true,
            }
            std::thread::sleep(Duration::from_millis(950));
        }
        false
    })
}

#[test]
fn metrics_answer_beside_a_thousand_idle_connections_and_a_slow_client() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    rtscope_testkit::require!(
        raise_nofile() >= 1_100,
        "the open-file limit's hard limit is under 1,100 (ulimit -Hn)"
    );
    let _rt = common::rt_lock();
    let dir = common::fresh_dir("watch-loris");
    let db = dir.join("w.db");
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let mut a = watch_args("e2e", db.to_str().unwrap());
    a.extend(["--listen", &listen]);
    let mut w = Watch::start(&a);
    let metric = "rtscope_watch_window_wakeups{series=\"e2e\",cpu=\"0\"}";
    until(&mut w, "a served window", || {
        get_with(port, "/metrics", "").is_some_and(|p| p.contains(metric))
    });
    let addr: SocketAddr = listen.parse().unwrap();
    let idle: Vec<TcpStream> = (0..1_000)
        .filter_map(|_| TcpStream::connect_timeout(&addr, Duration::from_secs(10)).ok())
        .collect();
    assert_eq!(idle.len(), 1_000, "idle connections made");
    let loris = slow_loris(addr);
    std::thread::sleep(Duration::from_millis(500));
    // The scrape: its own wait is 10 s (get_with's read timeout), a bound, not a claim.
    let page = get_with(port, "/metrics", "");
    assert!(
        page.as_deref()
            .is_some_and(|p| p.contains(metric)
                && p.contains("# TYPE rtscope_watch_latency_seconds histogram")),
        "no metrics beside {} idle connections: {page:?}",
        idle.len()
    );
    assert!(loris.join().unwrap(), "the slow client was never cut");
    assert!(w.alive());
    drop(idle);
    w.signal(libc::SIGTERM);
    let o = w.finish();
    assert_eq!(o.status.code(), Some(0), "{}", common::dump(&o));
}

/// A tmpfs of `size` mounted at `at`, unmounted (lazily) when dropped.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(at: &Path, size: &str) -> Option<Tmpfs> {
        std::fs::create_dir_all(at).unwrap();
        let o = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(at)
            .output()
            .ok()?;
        o.status.success().then(|| Tmpfs(at.to_path_buf()))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// The watch with its stderr in `err` (read while it runs).
fn start_logged(args: &[&str], err: &Path) -> Child {
    let mut a = vec!["watch"];
    a.extend_from_slice(args);
    Command::new(hostile_support::exe())
        .args(&a)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(err).unwrap())
        .spawn()
        .unwrap()
}

/// Fills the file system of `dir` to the last byte.
fn fill(dir: &Path) {
    let mut f = std::fs::File::create(dir.join("fill")).unwrap();
    let chunk = vec![0xa5u8; 4096];
    while f.write_all(&chunk).is_ok() {}
    let _ = f.sync_all();
}

#[test]
fn windows_a_full_disk_did_not_take_are_counted_lost_with_exit_2() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO and a tmpfs mount");
    let _rt = common::rt_lock();
    let dir = common::fresh_dir("watch-full");
    let mnt = dir.join("mnt");
    let fs = Tmpfs::mount(&mnt, "4m");
    rtscope_testkit::require!(fs.is_some(), "cannot mount a tmpfs (no CAP_SYS_ADMIN?)");
    let (db, err) = (mnt.join("w.db"), dir.join("stderr"));
    let child = start_logged(&watch_args("e2e", db.to_str().unwrap()), &err);
    let stderr = || std::fs::read_to_string(&err).unwrap_or_default();
    let mut w = Watch::adopt(child);
    until(&mut w, "two windows", || rows_of(&db, "e2e").len() >= 2);
    fill(&mnt);
    until(&mut w, "a window the full disk refused", || {
        stderr().contains("cannot write")
    });
    w.signal(libc::SIGTERM);
    let o: Output = w.finish();
    let (out, _) = hostile_support::texts(&o);
    let err = stderr();
    assert_eq!(o.status.code(), Some(2), "{out}\n{err}");
    assert!(
        !out.contains("kept") && !err.contains("kept"),
        "{out}\n{err}"
    );
    let lost: u64 = err
        .split(" window row(s) could not be written to ")
        .next()
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count of lost windows: {err}"));
    assert!(lost >= 1 && err.contains("are lost"), "{err}");
    let written: usize = out
        .split("stopped by signal 15: ")
        .nth(1)
        .and_then(|l| l.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count of written windows: {out}"));
    // What it says it wrote is what the database holds.
    std::fs::remove_file(mnt.join("fill")).unwrap();
    assert_eq!(rows_of(&db, "e2e").len(), written, "{out}\n{err}");
    drop(fs);
}

/// The processes whose process group is `pg`, with their state (from /proc/PID/stat: fields
/// 3 and 5).
fn members(pg: i32) -> Vec<(i32, String)> {
    let mut v = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        // After the command name's closing parenthesis: state, ppid, pgrp.
        let rest = stat.rsplit_once(')').map_or("", |r| r.1);
        let f: Vec<&str> = rest.split_whitespace().collect();
        if f.get(2) == Some(&pg.to_string().as_str()) {
            v.push((pid, f[0].to_string()));
        }
    }
    v
}

#[test]
fn the_alert_commands_process_group_ends_with_the_watch() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    let _rt = common::rt_lock();
    let dir = common::fresh_dir("watch-alert-group");
    let (db, pgfile) = (dir.join("w.db"), dir.join("pg"));
    // It ignores SIGTERM (its children too) and leaves a child behind: only the group's
    // SIGKILL after the grace period ends it.
    let cmd = format!(
        "trap '' TERM; echo $$ > {}.tmp; mv {0}.tmp {0}; sleep 1000 & sleep 1000",
        pgfile.display()
    );
    let mut a = watch_args("e2e", db.to_str().unwrap());
    a.extend(["--alert", "max>1ns", "--alert-command", &cmd]);
    let mut w = Watch::start(&a);
    let pg = || {
        std::fs::read_to_string(&pgfile)
            .ok()
            .and_then(|t| t.trim().parse::<i32>().ok())
    };
    until(&mut w, "the alert command and its child", || {
        pg().is_some_and(|g| members(g).len() >= 2)
    });
    let g = pg().unwrap();
    w.signal(libc::SIGTERM);
    let o = w.finish();
    assert_eq!(o.status.code(), Some(0), "{}", common::dump(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains(
            "1 alert command(s) still running at the stop ended with their process group"
        ),
        "{}",
        common::dump(&o)
    );
    // Ended: no member runs. (A killed member may stay a zombie until init reaps it.)
    let live: Vec<_> = members(g).into_iter().filter(|m| m.1 != "Z").collect();
    assert!(
        live.is_empty(),
        "the alert command's group outlived the watch: {live:?}"
    );
}

/// Runs `rtscope watch ARGS` that must be refused: exit 2, the message names `what` and has a
/// hint or an example, no banner, and nothing in `dir` but `keep`.
fn refused(dir: &Path, args: &[&str], what: &[&str], keep: &[&str]) {
    let db = dir.join("w.db");
    let mut a = vec!["watch", "--db", db.to_str().unwrap()];
    a.extend_from_slice(args);
    let o = hostile_support::rtscope(&a);
    let (out, err) = hostile_support::texts(&o);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {}", common::dump(&o));
    for w in what {
        assert!(err.contains(w), "{args:?}: no '{w}' in {err}");
    }
    assert!(
        ["hint:", "e.g.", "examples", "online CPUs"]
            .iter()
            .any(|f| err.contains(f)),
        "{args:?}: no fix in {err}"
    );
    assert!(out.is_empty(), "{args:?}: printed {out}");
    let mut left: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !keep.contains(&n.as_str()))
        .collect();
    left.sort();
    assert!(left.is_empty(), "{args:?} created {left:?}");
}

#[test]
fn every_bad_path_port_cpu_list_and_series_is_refused_before_anything_is_created() {
    let dir = common::fresh_dir("watch-refusals");
    let keep = ["sub", "link.prom", "busy"];
    std::fs::create_dir(dir.join("sub")).unwrap();
    std::os::unix::fs::symlink("/tmp/elsewhere.prom", dir.join("link.prom")).unwrap();
    let missing = dir.join("nope/w.prom");
    let link = dir.join("link.prom");
    let sub = dir.join("sub");
    let t = |p: &Path| p.to_str().unwrap().to_string();
    let (missing, link, sub) = (t(&missing), t(&link), t(&sub));
    refused(
        &dir,
        &["--textfile", &missing],
        &["--textfile", "does not exist"],
        &keep,
    );
    refused(
        &dir,
        &["--textfile", &link],
        &["--textfile", "symlink"],
        &keep,
    );
    refused(
        &dir,
        &["--textfile", &sub],
        &["--textfile", "is a directory"],
        &keep,
    );
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = busy.local_addr().unwrap().to_string();
    refused(
        &dir,
        &["--listen", &addr],
        &["--listen", "free ADDR:PORT"],
        &keep,
    );
    refused(&dir, &["--cpus", "4096"], &["--cpus", "not online"], &keep);
    refused(&dir, &["--cpus", "1-"], &["--cpus"], &keep);
    refused(&dir, &["--housekeeping", "x"], &["--housekeeping"], &keep);
    refused(
        &dir,
        &["--series", ""],
        &["--series", "needs a name"],
        &keep,
    );
    let nodir = dir.join("nope/w.db");
    let o = hostile_support::rtscope(&["watch", "--db", nodir.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", common::dump(&o));
    let (_, err) = hostile_support::texts(&o);
    assert!(
        err.contains("--db") && err.contains("does not exist"),
        "{err}"
    );
    assert!(!dir.join("nope").exists());
}

/// A SIGHUP's new configuration is checked as at the start: an unusable `--textfile` or CPU
/// list is refused, the old configuration stays and the watch runs on.
#[test]
fn a_reload_refuses_a_bad_textfile_or_cpu_list_and_keeps_the_old_configuration() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    let _rt = common::rt_lock();
    let dir = common::fresh_dir("watch-reload-refused");
    let (db, conf, err) = (dir.join("w.db"), dir.join("w.toml"), dir.join("stderr"));
    let write = |cpus: &str, extra: &str| {
        let text = format!(
            "series = \"e2e\"\ndb = \"{}\"\ncpus = \"{cpus}\"\nwindow = \"1s\"\n{extra}",
            db.display()
        );
        std::fs::write(&conf, text).unwrap();
    };
    write("0", "");
    let mut w = Watch::adopt(start_logged(&["--config", conf.to_str().unwrap()], &err));
    until(&mut w, "a window", || !rows_of(&db, "e2e").is_empty());
    let refusals = || {
        std::fs::read_to_string(&err)
            .unwrap_or_default()
            .matches("SIGHUP: the new configuration is refused")
            .count()
    };
    let textfile = format!("textfile = \"{}\"\n", dir.join("nope/w.prom").display());
    for (i, (cpus, extra)) in [("0", textfile.as_str()), ("4096", "")].iter().enumerate() {
        write(cpus, extra);
        w.signal(libc::SIGHUP);
        until(&mut w, "the refusal", || refusals() > i);
        let before = rows_of(&db, "e2e").len();
        until(&mut w, "a window after the refusal", || {
            rows_of(&db, "e2e").len() > before
        });
    }
    w.signal(libc::SIGTERM);
    let o = w.finish();
    let log = std::fs::read_to_string(&err).unwrap_or_default();
    assert_eq!(o.status.code(), Some(0), "{log}");
    assert!(
        log.contains("--textfile") && log.contains("--cpus") && !dir.join("nope").exists(),
        "{log}"
    );
}
