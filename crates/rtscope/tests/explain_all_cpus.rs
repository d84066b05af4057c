//! `--explain` where every CPU is measured (the README's main job, N:N): no housekeeping CPU,
//! so the analysis waits for the end of the run, and the spikes' trace must be kept until then
//! (docs/explain.md "Analysing"). Before, only the last 3 s of such a run were traced: its
//! worst spikes fell back to "trace window passed".

use crate::explain::{culprit, traceable};
use serde_json::Value;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The culprit's spikes from the whole run are traced, not only those of its last seconds:
/// with every CPU measured, each spike's trace is kept past the recorder's 3 s window until
/// the deferred analysis. The only reason a spike may lack its trace here is the kernel losing
/// events (a buffer overrun under a heavy host), never the window or the queue.
#[test]
fn with_every_cpu_measured_the_early_spikes_are_traced_at_the_end() {
    rtscope_testkit::require_ok!(traceable());
    let _rt = rtscope_testkit::rt_lock();
    let dir = std::env::temp_dir().join(format!("rtscope-explain-all-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join("x.json");
    let stop = Arc::new(AtomicBool::new(false));
    let c = culprit(0, stop.clone());
    let o = Command::new(env!("CARGO_BIN_EXE_rtscope"))
        .args(["measure", "-D", "9s", "-i", "1ms", "--explain", "1.5ms"])
        .args(["--explain-keep", "200", "--no-db", "-q", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    stop.store(true, Ordering::Relaxed);
    c.join().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["housekeeping"]["analysis"], "deferred", "{err}");
    let x = &v["explain"];
    let nt = &x["counts"]["not_traced"];
    for why in [
        "out_of_window",
        "timed_out",
        "queue_full",
        "tracer_not_live",
    ] {
        assert_eq!(nt[why], 0, "{why}: {}", x["counts"]);
    }
    // The spikes more than 4 s before the run's last one (the culprit's, every 100 ms on CPU
    // 0): long gone from a 3 s window when the run ended. Counted back from the end, not from
    // the command's start: a loaded host may take seconds to start the measurement.
    let on_cpu0: Vec<&Value> = x["worst"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["spike"]["cpu"] == 0)
        .collect();
    let deadline = |s: &Value| s["spike"]["deadline_ns"].as_u64().unwrap();
    let last = on_cpu0.iter().map(|s| deadline(s)).max().unwrap_or(0);
    let early: Vec<&Value> = on_cpu0
        .into_iter()
        .filter(|s| deadline(s) + 4_000_000_000 < last)
        .collect();
    assert!(!early.is_empty(), "{}", x["counts"]);
    let by_culprit = |s: &&&Value| {
        s["tier"] == "traced"
            && s["charges"]
                .as_array()
                .is_some_and(|c| c.iter().any(|c| c["comm"] == "culprit"))
    };
    let named = early.iter().filter(by_culprit).count();
    assert!(
        named * 2 >= early.len(),
        "{named} of {} early spikes on CPU 0 traced to the culprit: {}",
        early.len(),
        x["culprits"]
    );
}

/// A campaign explains by default where tracefs is usable; where it is not (hidden here by a
/// private mount namespace with an empty /sys/kernel), every run says so at its start with the
/// reason and the fix, records it, and the report shows it — never a silent "no run was
/// recorded with --explain".
#[test]
fn a_campaign_whose_default_explanation_cannot_run_says_why_and_how_to_fix_it() {
    let Some(mut hidden) = without_tracefs() else {
        return;
    };
    let _rt = rtscope_testkit::rt_lock();
    let dir = crate::common::fresh_dir("explain-off");
    let (file, db, rep) = (dir.join("c.toml"), dir.join("r.db"), dir.join("rep"));
    std::fs::write(
        &file,
        "[campaign]\nname = \"off\"\n[measure]\ninterval = \"1ms\"\nduration = \"1s\"\n\
         [[scenario]]\nname = \"1:1\"\nthreads = 1\ncpus = \"0\"\n[[load_case]]\nname = \"idle\"\n",
    )
    .unwrap();
    let o = hidden
        .args(["run", "--db"])
        .args([&db, &file])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(
        err.contains("[1] explain: off — tracefs unavailable")
            && err.contains("fix: mount -t tracefs nodev /sys/kernel/tracing"),
        "{err}"
    );
    let env = crate::common::show_last(&db)["environment"].clone();
    let recorded = env["rtscope.explain"].as_str().unwrap_or_default();
    assert!(recorded.starts_with("off: tracefs unavailable"), "{env}");
    let r = Command::new(env!("CARGO_BIN_EXE_rtscope"))
        .args(["report", "--last", "--db"])
        .arg(&db)
        .arg("-o")
        .arg(&rep)
        .output()
        .unwrap();
    assert_eq!(
        r.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&r.stderr)
    );
    let html = std::fs::read_to_string(rep.join("report.html")).unwrap();
    assert!(
        html.contains("Explaining was off for 1 run(s) (run 1 (off/1:1/idle/1))")
            && html.contains("fix: mount -t tracefs nodev /sys/kernel/tracing"),
        "{}",
        &html[html.find("id=\"why\"").unwrap_or(0)..][..400]
    );
}

/// `rtscope` in a private mount namespace whose /sys/kernel is an empty tmpfs: tracefs is not
/// there and cannot be mounted, as on a kernel without it (`None` where that cannot be made:
/// not root, no `unshare`; the testkit says why).
pub(crate) fn without_tracefs() -> Option<Command> {
    rtscope_testkit::require_root!("a mount namespace hiding tracefs");
    rtscope_testkit::require!(
        rtscope_testkit::have("unshare", "--version"),
        "unshare (apt-get install util-linux)"
    );
    let mut c = Command::new("unshare");
    c.args([
        "-m",
        "sh",
        "-c",
        "mount -t tmpfs none /sys/kernel && exec \"$0\" \"$@\"",
    ])
    .arg(env!("CARGO_BIN_EXE_rtscope"));
    Some(c)
}
