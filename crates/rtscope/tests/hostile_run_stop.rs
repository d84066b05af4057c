//! A run with `--explain` and very many spikes still answers SIGINT (issue 67): its control
//! loop attributes spikes for a bounded time per tick (docs/explain.md "Analysing"), so its
//! checkpoints keep advancing while it runs, and the analysis at the stop is bounded. Before,
//! six campaigns at once on 2 vCPUs took 24-29 s to end after a SIGINT, their checkpoints
//! stuck. The only times here are hang guards; nothing asserts how long the end took.

use crate::hostile_support as support;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use support::*;

/// A busy SCHED_OTHER loop on `cpu` (killed on drop): beside it nearly every wake-up of a
/// SCHED_OTHER thread on that CPU is late by more than 1us, a spike to explain.
struct Hog(Child);

impl Hog {
    fn on(cpu: usize) -> Hog {
        let child = Command::new("taskset")
            .args(["-c", &cpu.to_string(), "sh", "-c", "while :; do :; done"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .expect("taskset (util-linux)");
        Hog(child)
    }
}

impl Drop for Hog {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The run's stored progress (0 before its first checkpoint).
fn progress(db: &std::path::Path) -> u64 {
    // Polled from the first instants: no schema yet reads as no progress.
    try_query(db, "SELECT coalesce(max(progress_ns), 0) FROM runs")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Waits until the stored progress passes `above` (a hang guard of `limit`); returns it.
fn progress_past(db: &std::path::Path, above: u64, limit: Duration) -> u64 {
    let end = Instant::now() + limit;
    loop {
        let p = if db.exists() { progress(db) } else { 0 };
        if p > above {
            return p;
        }
        assert!(
            Instant::now() < end,
            "the checkpoints stopped at {p} ns (hang guard {limit:?})"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_run_explaining_every_wake_up_keeps_its_checkpoints_and_ends_on_sigint() {
    rtscope_testkit::require_ok!(crate::explain::traceable());
    rtscope_testkit::require!(
        std::thread::available_parallelism().is_ok_and(|n| n.get() >= 2),
        "needs 2 CPUs (one measured beside a hog, one for the analysis)"
    );
    let dir = scratch("run-stop-explain");
    let db = dir.join("r.db");
    let dbs = db.to_str().unwrap();
    let _hog = Hog::on(1);
    let args = measure_args(dbs, &["-D", "1h", "-c", "1", "--explain", "1us"]);
    let (child, mut reaper) = spawn(&args);
    // Checkpoints keep coming while spikes are analysed: the progress grows twice.
    let guard = Duration::from_secs(120);
    let first = progress_past(&db, 0, guard);
    let second = progress_past(&db, first, guard);
    progress_past(&db, second, guard);
    kill(child.id(), libc::SIGINT);
    // The documented wait (the end's analysis bound, 3 s after a signal) plus a hang guard
    // generous enough for a debug build beside CI's other jobs: the whole test takes 4.9 s on
    // a quiet host, and its end outlasted 90 s beside `stress-ng --cpu 4 --io 2 --vm 1` and
    // the workspace's test build (29 Nov 2026): every wake-up is a spike to analyse, on a CPU
    // where its threads run at the normal policy beside two hogs.
    let out = wait_output(child, Duration::from_secs(300), "run-stop-explain");
    reaper.disarm();
    let (stdout, stderr) = texts(&out);
    assert_eq!(code(&out), 3, "{stdout}\n{stderr}");
    assert!(stdout.contains("interrupted by SIGINT"), "{stdout}");
    assert_eq!(query(&db, "SELECT status FROM runs"), "interrupted");
    assert_eq!(query(&db, "SELECT exit_code FROM runs"), "3");
    // The spikes were explained (their summary is stored with the run).
    assert_eq!(query(&db, "SELECT count(*) FROM spike_summaries"), "1");
}
