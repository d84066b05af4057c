//! Every default path says what it observes (issue 68 item 4), end to end as root: `measure
//! --explain` names its recorder (the tracefs instance), the trace events it enabled and the
//! kernel stacks it takes, on the tier line and in the run's record (`runs show`, text and
//! JSON); `--explain-stacks on` names the stacks' mechanism (eBPF programs where this kernel
//! runs them); a run without `--explain` shows that no recorder ran; `--explain-recorder ebpf`
//! (measure and run) names the eBPF rings, or the tracefs fallback and why. No time is asserted.

use crate::explain::traceable;
use std::path::{Path, PathBuf};
use std::process::Command;

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn db(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("rtscope-recorder-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d.join("x.db")
}

/// `measure -D 1s` on the last CPU into `db` with `extra` args; its stderr.
fn measure(db: &Path, extra: &[&str]) -> String {
    let cpu = std::thread::available_parallelism().unwrap().get() - 1;
    let o = Command::new(env!("CARGO_BIN_EXE_rtscope"))
        .args([
            "measure",
            "-D",
            "1s",
            "-i",
            "1ms",
            "--cpus",
            &cpu.to_string(),
            "-q",
        ])
        .args(extra)
        .arg("--db")
        .arg(db)
        .output()
        .unwrap();
    let (out, err) = (text(&o.stdout), text(&o.stderr));
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    err
}

/// `runs show last` of `db`, as text and as JSON.
fn show(db: &Path) -> (String, serde_json::Value) {
    let run = |json: bool| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_rtscope"));
        c.args(["runs", "show", "last", "--db"]).arg(db);
        if json {
            c.arg("--json");
        }
        let o = c.output().unwrap();
        assert!(o.status.success(), "{}", text(&o.stderr));
        text(&o.stdout)
    };
    let v = serde_json::from_str(&run(true)).unwrap();
    (run(false), v)
}

/// The value of `runs show`'s line `name: …` (indented or not).
fn line<'a>(show: &'a str, name: &str) -> &'a str {
    let key = format!("{name}: ");
    show.lines()
        .map(str::trim_start)
        .find_map(|l| l.strip_prefix(key.as_str()))
        .unwrap_or_else(|| panic!("no `{name}:` line in\n{show}"))
}

#[test]
fn an_explained_run_names_its_recorder_events_and_stacks_and_a_plain_run_none() {
    rtscope_testkit::require_ok!(traceable());
    let _rt = rtscope_testkit::rt_lock();
    let path = db("off");
    let err = measure(&path, &["--explain", "100us"]);
    let tier = err
        .lines()
        .find(|l| l.contains("explaining spikes: tier "))
        .unwrap_or_else(|| panic!("no tier line: {err}"));
    assert!(
        tier.contains("recorder: tracefs instance rtscope-") && tier.contains(", stacks: none)"),
        "{tier}"
    );
    assert!(
        tier.contains(" trace events (") && tier.contains("sched"),
        "{tier}"
    );
    let (s, v) = show(&path);
    assert!(
        line(&s, "recorder").starts_with("tracefs instance rtscope-"),
        "{s}"
    );
    let events = line(&s, "events");
    assert!(
        events.contains(" trace events (") && events.contains("sched"),
        "{s}"
    );
    assert_eq!(line(&s, "stacks"), "none", "{s}");
    let r = &v["recorder"];
    assert!(
        r["recorder"]
            .as_str()
            .unwrap()
            .starts_with("tracefs instance rtscope-"),
        "{r}"
    );
    let listed = r["events"].as_array().unwrap();
    assert!(listed.iter().any(|e| e == "sched:sched_switch"), "{r}");
    // The count runs show prints is the events listed.
    assert!(
        events.starts_with(&format!("{} trace event", listed.len())),
        "{s}"
    );
    assert_eq!(r["stacks"], "none");

    let plain = db("plain");
    let err = measure(&plain, &[]);
    assert!(!err.contains("explaining"), "{err}");
    let (s, v) = show(&plain);
    assert_eq!(
        (line(&s, "recorder"), line(&s, "events"), line(&s, "stacks")),
        ("none", "none", "none"),
        "{s}"
    );
    assert!(v["recorder"].is_null(), "{v}");
}

#[test]
fn explain_stacks_on_names_the_stacks_mechanism_on_the_tier_line_and_in_the_record() {
    rtscope_testkit::require_ok!(traceable());
    let _rt = rtscope_testkit::rt_lock();
    let path = db("on");
    let err = measure(&path, &["--explain", "100us", "--explain-stacks", "on"]);
    let tier = err
        .lines()
        .find(|l| l.contains("explaining spikes: tier "))
        .unwrap_or_else(|| panic!("no tier line: {err}"));
    let (s, _) = show(&path);
    let stacks = line(&s, "stacks");
    // `on` takes late-only stacks by eBPF programs where the kernel runs them, else by hist
    // triggers, else the stacktrace triggers at every wake-up: whichever, it is named.
    let named = [
        "late-only eBPF programs: ",
        "late-only hist triggers: ",
        "stacktrace triggers on every wake-up",
    ];
    assert!(named.iter().any(|n| stacks.starts_with(n)), "{s}");
    assert!(
        tier.contains(&format!(", stacks: {stacks})")),
        "{tier}\n{s}"
    );
    if rtscope_testkit::bpf_events_here() {
        assert!(
            stacks.starts_with("late-only eBPF programs: "),
            "{tier}\n{s}"
        );
        assert!(stacks.contains("(eBPF on "), "{s}");
    }
}

/// Whether this kernel can run the eBPF flight recorder (BPF on trace events with a ring
/// buffer, and BTF): where it can, `--explain-recorder ebpf` must not fall back.
fn bpf_here() -> bool {
    rtscope_testkit::bpf_events_here() && Path::new("/sys/kernel/btf/vmlinux").exists()
}

/// The recorder `runs show last` of `db` names is the eBPF rings, or, where `tier` says the
/// eBPF recorder was not used and why, the tracefs instance (a failure under
/// RTSCOPE_TEST_STRICT=1 on a kernel that has BPF). `None` where it fell back.
fn assert_ebpf_or_fallback(db: &Path, tier: &str) -> Option<()> {
    let (s, v) = show(db);
    let recorder = line(&s, "recorder");
    let recorded = v["recorder"]["recorder"].as_str().unwrap_or_default();
    if recorder.starts_with("eBPF rings on raw tracepoints (") {
        assert!(recorder.contains(" tracepoints, "), "{s}");
        assert!(
            recorded.starts_with("eBPF rings on raw tracepoints ("),
            "{v}"
        );
        return Some(());
    }
    assert!(recorder.starts_with("tracefs instance rtscope-"), "{s}");
    assert!(
        tier.contains("eBPF recorder not used, tracefs instead: "),
        "the fallback says why: {tier}\n{s}"
    );
    rtscope_testkit::require!(!bpf_here(), "the eBPF recorder on this BPF kernel: {tier}");
    None
}

#[test]
fn explain_recorder_ebpf_names_the_rings_or_the_fallback_and_why_in_measure_and_run() {
    rtscope_testkit::require_ok!(traceable());
    let _rt = rtscope_testkit::rt_lock();
    let path = db("ebpf");
    let o = Command::new(env!("CARGO_BIN_EXE_rtscope"))
        .args([
            "measure",
            "-D",
            "2s",
            "--cpus",
            "1",
            "-q",
            "--explain",
            "1ms",
        ])
        .args(["--explain-recorder", "ebpf", "--db"])
        .arg(&path)
        .output()
        .unwrap();
    let err = succeeded(&o);
    let tier = tier_line(&err).unwrap_or_else(|| panic!("no tier line: {err}"));
    if assert_ebpf_or_fallback(&path, tier).is_some() {
        assert!(
            tier.contains("recorder: eBPF rings on raw tracepoints ("),
            "{tier}"
        );
    }

    // `rtscope run` gives the flag to every run of its campaign.
    let campaign = db("ebpf-run");
    let file = campaign.with_file_name("c.toml");
    let toml = "[campaign]\nname = \"ebpf\"\n[measure]\ninterval = \"1ms\"\nduration = \"2s\"\n\
                explain = \"1ms\"\n[[scenario]]\nname = \"1:1\"\nthreads = 1\ncpus = \"1\"\n\
                [[load_case]]\nname = \"idle\"\n";
    std::fs::write(&file, toml).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_rtscope"))
        .arg("run")
        .arg(&file)
        .args(["-q", "--explain-recorder", "ebpf", "--db"])
        .arg(&campaign)
        .output()
        .unwrap();
    let err = succeeded(&o);
    let tier = tier_line(&err).unwrap_or_default();
    assert_ebpf_or_fallback(&campaign, tier);
}

/// The stderr of a command that must have exited 0 (its output in the failure).
fn succeeded(o: &std::process::Output) -> String {
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{}{err}", text(&o.stdout));
    err
}

/// The run's tier line, if it printed one.
fn tier_line(err: &str) -> Option<&str> {
    err.lines().find(|l| l.contains("explaining spikes: tier "))
}
