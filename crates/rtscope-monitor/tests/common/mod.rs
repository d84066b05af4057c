//! Helpers for the fixture tests: copy a fixture tree to a scratch directory and rewrite its
//! counters between samples.

#![allow(dead_code)] // each test binary uses a different subset

use rtscope_monitor::{Monitor, Sample};
use std::fs;
use std::ops::Deref;
use std::path::{Path, PathBuf};

/// The fixture tree `name` under tests/fixtures/.
pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// A scratch directory, removed when dropped.
pub struct Scratch(PathBuf);

impl Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// A fresh copy of fixture `name` in a scratch directory unique to `test`.
pub fn scratch_copy(name: &str, test: &str) -> Scratch {
    let dst = scratch_dir(test);
    copy_tree(&fixture(name), &dst);
    dst
}

/// An empty scratch directory unique to `test` and this process. It lives in /dev/shm where
/// that exists: the tests rewrite many small files, and truncating files on a disk mounted
/// with `discard` (as on the CI machine) costs milliseconds each.
pub fn scratch_dir(test: &str) -> Scratch {
    let shm = Path::new("/dev/shm");
    let base = if shm.is_dir() {
        shm.to_path_buf()
    } else {
        PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
    };
    let dir = base.join(format!("rtscope-monitor-{}-{test}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).expect("create scratch dir");
    Scratch(dir)
}

fn copy_tree(src: &Path, dst: &Path) {
    fs::create_dir_all(dst).expect("mkdir");
    for e in fs::read_dir(src).expect("read fixture dir") {
        let e = e.expect("dir entry");
        let to = dst.join(e.file_name());
        if e.file_type().expect("file type").is_dir() {
            copy_tree(&e.path(), &to);
        } else {
            fs::copy(e.path(), &to).expect("copy fixture file");
        }
    }
}

/// Replaces the line of `root/rel` whose first word is the first word of `line` (`27:`,
/// `cpu0`, `ctxt`) by `line`; with `line` empty, removes the line whose first word is `key`.
pub fn set_line(root: &Path, rel: &str, line: &str) {
    let key = line.split_whitespace().next().expect("a non-empty line");
    rewrite_line(root, rel, key, Some(line));
}

/// Removes the line of `root/rel` whose first word is `key`.
pub fn remove_line(root: &Path, rel: &str, key: &str) {
    rewrite_line(root, rel, key, None);
}

fn rewrite_line(root: &Path, rel: &str, key: &str, new: Option<&str>) {
    let path = root.join(rel);
    let text = fs::read_to_string(&path).expect("read");
    let mut found = 0;
    let out: Vec<&str> = text
        .lines()
        .filter_map(|l| {
            if l.split_whitespace().next() == Some(key) {
                found += 1;
                new
            } else {
                Some(l)
            }
        })
        .collect();
    assert_eq!(found, 1, "{key:?} in {rel}");
    fs::write(&path, out.join("\n") + "\n").expect("write");
}

/// Inserts `line` into `root/rel` just before the line whose first word is `before`.
pub fn insert_line(root: &Path, rel: &str, before: &str, line: &str) {
    let path = root.join(rel);
    let text = fs::read_to_string(&path).expect("read");
    let at = text
        .lines()
        .position(|l| l.split_whitespace().next() == Some(before))
        .expect("anchor line");
    let mut lines: Vec<&str> = text.lines().collect();
    lines.insert(at, line);
    fs::write(&path, lines.join("\n") + "\n").expect("write");
}

/// Writes `text` to `root/rel`, creating directories.
pub fn write(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    fs::write(path, text).expect("write");
}

/// Sets `utime` and `stime` (clock ticks) in `proc/<pid>/task/<tid>/stat`.
pub fn set_task_ticks(root: &Path, pid: u32, tid: u32, utime: u64, stime: u64) {
    set_task_fields(root, pid, tid, &[(14, utime), (15, stime)]);
}

/// Sets fields (numbered as in proc(5), 3 = state) of `proc/<pid>/task/<tid>/stat`.
pub fn set_task_fields(root: &Path, pid: u32, tid: u32, fields: &[(usize, u64)]) {
    let path = root.join(format!("proc/{pid}/task/{tid}/stat"));
    let text = fs::read_to_string(&path).expect("read stat");
    let close = text.rfind(')').expect("comm");
    let mut f: Vec<String> = text[close + 1..]
        .split_whitespace()
        .map(str::to_owned)
        .collect();
    for &(n, v) in fields {
        f[n - 3] = v.to_string();
    }
    fs::write(&path, format!("{} {}\n", &text[..=close], f.join(" "))).expect("write stat");
}

/// The numeric readings of `s` whose metric starts with `prefix`, as (metric, value, unit).
pub fn with_prefix<'a>(s: &'a Sample, prefix: &str) -> Vec<(&'a str, f64, &'static str)> {
    s.readings
        .iter()
        .filter(|r| r.metric.starts_with(prefix))
        .map(|r| (r.metric.as_str(), r.value, r.unit))
        .collect()
}

/// The value of `metric` in `s`, failing the test with the metric's name if it is missing.
pub fn val(s: &Sample, metric: &str) -> f64 {
    s.value(metric)
        .unwrap_or_else(|| panic!("no reading {metric:?}"))
}

/// The top threads as (comm, cpu %).
pub fn top(s: &Sample) -> Vec<(&str, f64)> {
    s.top
        .iter()
        .map(|t| (t.comm.as_str(), t.cpu_percent))
        .collect()
}

/// The fixture `name`'s source availability must be `hardware` (its thermal, hwmon, cpufreq
/// and throttling lines, then its interrupts) followed by the /proc sources every fixture
/// has: its 10 softirqs, stat, loadavg, meminfo and the threads.
pub fn assert_availability(name: &str, hardware: &[&str]) {
    let m = Monitor::new(&fixture(name)).expect("monitor");
    let lines: Vec<String> = m.availability().iter().map(|s| s.to_string()).collect();
    let mut want: Vec<&str> = hardware.to_vec();
    want.extend([
        "softirqs: available (10 sources)",
        "stat: available (/proc/stat)",
        "loadavg: available (/proc/loadavg)",
        "meminfo: available (/proc/meminfo)",
        "threads: available (/proc/<pid>/task/<tid>/stat)",
    ]);
    assert_eq!(lines, want);
}
