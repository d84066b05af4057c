//! `noise` as a workload of the one plan, through the real binary: a campaign's
//! `workload = "noise"` scenario runs, records a run of kind `noise` filed into the campaign
//! with its preflight verdicts and fails on its noise limit (exit 1); noise's keys are refused
//! outside a noise scenario and a bad one is named as the file spells it; the progress line
//! shows on a terminal (a pty from `script`) and never off one or with `-q`.

use crate::common::{dump, fresh_dir, run};
use serde_json::Value;
use std::path::Path;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_rtscope");

fn runs(db: &Path) -> Vec<Value> {
    let o = run(BIN, &["runs", "--json", "--db", db.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", dump(&o));
    serde_json::from_slice::<Value>(&o.stdout)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

const CAMPAIGN: &str = r#"
[campaign]
name = "noisecamp"

[measure]
duration = "1s"
mlock = false

[[scenario]]
name = "busy"
workload = "noise"
cpus = "0"
threshold = "5us"
limits = ["max_single=1ns"]

[[load_case]]
name = "idle"
"#;

#[test]
fn a_campaign_noise_scenario_is_recorded_as_a_noise_run_and_its_limit_gates_the_exit() {
    let _rt = rtscope_testkit::rt_lock();
    let dir = fresh_dir("noise-campaign");
    let (file, db) = (dir.join("noise.toml"), dir.join("noise.db"));
    std::fs::write(&file, CAMPAIGN).unwrap();
    let dry = run(BIN, &["run", file.to_str().unwrap(), "--dry-run"]);
    assert_eq!(dry.status.code(), Some(0), "{}", dump(&dry));
    let plan = String::from_utf8_lossy(&dry.stdout);
    // The layout and the duty cycle of a noise run, not a timer interval.
    assert!(
        plan.contains("noise on 0") && plan.contains("950ms/1s"),
        "{plan}"
    );
    let o = run(
        BIN,
        &[
            "run",
            file.to_str().unwrap(),
            "--explain",
            "off",
            "--db",
            db.to_str().unwrap(),
        ],
    );
    // Two clock readings are never 1 ns or less apart: the limit fails for certain.
    assert_eq!(o.status.code(), Some(1), "{}", dump(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("[1] noisecamp/busy/idle/1: noise on 1 CPU(s), longest gap "),
        "{out}"
    );
    assert!(out.contains("LIMIT EXCEEDED"), "{out}");
    let all = runs(&db);
    assert_eq!(all.len(), 1, "{all:?}");
    let r = &all[0];
    assert_eq!(r["kind"], "noise", "{r}");
    assert_eq!(r["label"], "noisecamp/busy/idle/1", "{r}");
    assert_eq!(r["tags"]["scenario"], "busy", "{r}");
    assert_eq!(r["exit_code"], 1, "{r}");
    let id = r["id"].to_string();
    let show = run(
        BIN,
        &["runs", "show", &id, "--json", "--db", db.to_str().unwrap()],
    );
    assert_eq!(show.status.code(), Some(0), "{}", dump(&show));
    let doc: Value = serde_json::from_slice(&show.stdout).unwrap();
    // The scenario's threshold reached the loops.
    assert_eq!(doc["config"]["threshold_requested_ns"], 5000, "{doc}");
    assert_eq!(doc["config"]["threshold_rule"], "given", "{doc}");
    // The run keeps the preflight audit's verdicts, as a measure run does.
    let store = rtscope_store::Store::open(&db).unwrap();
    let id: rtscope_store::RunId = r["id"].as_i64().unwrap();
    let checks = store.checks(id).unwrap();
    assert!(checks.iter().any(|c| c.check == "preemption"), "{checks:?}");
}

#[test]
fn noise_keys_are_refused_outside_a_noise_scenario_and_named_as_the_file_spells_them() {
    let dir = fresh_dir("noise-campaign-bad");
    let db = dir.join("bad.db");
    let cases = [
        (
            CAMPAIGN.replace("workload = \"noise\"\n", ""),
            "threshold, runtime and period apply to noise scenarios only",
            "add workload = \"noise\"",
        ),
        (
            CAMPAIGN.replace("threshold = \"5us\"", "threshold = \"0\""),
            "invalid value for 'threshold': it must be above 0",
            "threshold = \"1us\"",
        ),
        (
            CAMPAIGN.replace("\"max_single=1ns\"", "\"max=1ns\""),
            "invalid limit 'max=1ns'",
            "max_single=DURATION",
        ),
        (
            CAMPAIGN.replace("workload = \"noise\"", "workload = \"nosie\""),
            "unknown workload 'nosie'",
            "\"noise\"",
        ),
    ];
    for (i, (text, want, hint)) in cases.iter().enumerate() {
        let file = dir.join(format!("bad{i}.toml"));
        std::fs::write(&file, text).unwrap();
        let o = run(
            BIN,
            &["run", file.to_str().unwrap(), "--db", db.to_str().unwrap()],
        );
        assert_eq!(o.status.code(), Some(2), "{want}: {}", dump(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(want), "{want}: {err}");
        assert!(err.contains(hint), "{hint}: {err}");
        // The file's words, never the command line's.
        assert!(!err.contains("'--"), "{err}");
        assert!(
            !db.exists(),
            "{want}: a refused campaign created the database"
        );
    }
}

/// `rtscope noise ARGS` under a pty (`script`): what the terminal showed.
fn on_a_terminal(args: &str) -> String {
    rtscope_testkit::require!(
        rtscope_testkit::have("script", "--version"),
        "script (util-linux) is not installed: it gives the run a terminal"
    );
    let o = Command::new("script")
        .args(["-qfec", &format!("{BIN} noise {args}"), "/dev/null"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", dump(&o));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn noise_shows_its_progress_on_a_terminal_only() {
    let _rt = rtscope_testkit::rt_lock();
    let args = "-D 3s --cpus 0 --no-db --explain off --no-mlock";
    let tty = on_a_terminal(args);
    assert!(
        tty.contains("\r\x1b[2K[1s/3s] gaps over the threshold "),
        "{tty:?}"
    );
    assert!(tty.contains(", longest "), "{tty:?}");
    // The line is cleared before the table.
    assert!(tty.contains("\r\x1b[2K CPU"), "{tty:?}");
    let quiet = on_a_terminal(&format!("{args} -q"));
    assert!(!quiet.contains("s] gaps over the threshold "), "{quiet:?}");
    let piped = run(
        BIN,
        &[
            "noise",
            "-D",
            "2s",
            "--cpus",
            "0",
            "--no-db",
            "--explain",
            "off",
            "--no-mlock",
        ],
    );
    assert_eq!(piped.status.code(), Some(0), "{}", dump(&piped));
    let err = String::from_utf8_lossy(&piped.stderr);
    assert!(!err.contains("s] gaps over the threshold "), "{err}");
    assert!(!err.contains('\r'), "{err:?}");
}
