//! `rtscope run` with `until_tail`: a real campaign (SCHED_FIFO, under the test lock) measured
//! until its tail estimate is precise enough, or refused, or its max_duration. Nothing here
//! assumes how quiet the machine is: which outcome a run gets is the machine's; the test checks
//! that the outcome printed and recorded is the one `rtscope tail` gives the recorded run, and
//! that the checks, the stop and `--resume` are consistent with the rule.

use crate::common;
use crate::common::compat::rtscope_bin as bin;
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// One thread on CPU 0 every 200 µs, first checked after 2 s, at most 8 s.
const CAMPAIGN: &str = concat!(
    r#"
[campaign]
name = "NAME"
until_tail = "probability=1e-6,precision=10%,max_duration=8s"
[measure]
interval = "200us"
duration = "2s"
explain = "off"
"#,
    crate::one_thread_on_cpu0_then_idle!()
);

fn rtscope(db: &Path, args: &[&str]) -> Output {
    Command::new(bin())
        .args(args)
        .args(["--db", db.to_str().unwrap()])
        .output()
        .expect("run rtscope")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn show(db: &Path, id: i64) -> Value {
    let o = rtscope(db, &["runs", "show", &id.to_string(), "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", common::dump(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// The lines `rtscope tail ID -p 1e-6` prints for the level at 1e-6 per episode (the level
/// `until_tail` watches), or its refusal reasons.
fn tail_says(db: &Path, id: i64) -> (Option<String>, Vec<String>, Value) {
    let o = rtscope(db, &["tail", &id.to_string(), "-p", "1e-6"]);
    assert_eq!(o.status.code(), Some(0), "{}", common::dump(&o));
    let t = text(&o.stdout);
    let level = t
        .lines()
        .skip_while(|l| !l.contains("per episode: "))
        .find(|l| l.trim_start().starts_with("p = 1e-6"))
        .map(str::to_string);
    let reasons = t
        .lines()
        .filter_map(|l| l.strip_prefix("    - "))
        .map(str::to_string)
        .collect();
    let o = rtscope(db, &["tail", &id.to_string(), "-p", "1e-6", "--json"]);
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    (level, reasons, doc["threads"][0]["analysis"].clone())
}

/// Checks what the campaign said of run `id`'s thread (`said`: the text after `CPU 0 `) against
/// `rtscope tail`'s own analysis of the recorded run; returns the standing's word.
fn check_against_tail(db: &Path, id: i64, said: &str) -> &'static str {
    let (level, reasons, a) = tail_says(db, id);
    // The campaign names the failed tests as the analysis states them; `rtscope tail` says the
    // same refusals in plain words, one line each, with the tests' reasons in its JSON.
    let json_reasons = a["refusals"].as_array().unwrap();
    if let Some(r) = said.strip_prefix("refused: ") {
        assert_eq!(
            r.split("; ").count(),
            reasons.len(),
            "the refusal is tail's: {r} / {reasons:?}"
        );
        assert_eq!(reasons.len(), json_reasons.len(), "{a}");
        return "refused";
    }
    if let Some(r) = said.strip_prefix("no estimate yet: ") {
        if let Some(rest) = r.strip_prefix("too few exceedances: ") {
            // `37 clusters above …, 100 needed` against tail's `37 episodes above …, 100 needed`.
            let have = rest.split(' ').next().unwrap();
            let need = rest.split(", ").nth(1).unwrap().split(' ').next().unwrap();
            assert_eq!(reasons.len(), 1, "the shortage is tail's: {reasons:?}");
            assert!(
                reasons[0].starts_with("too few large latencies to fit a tail: ")
                    && reasons[0].contains(&format!(": {have} episodes above"))
                    && reasons[0].contains(&format!(", {need} needed")),
                "the shortage is tail's: {r} / {reasons:?}"
            );
        } else {
            assert!(level.is_none() && reasons.is_empty(), "{a}");
        }
        return "short";
    }
    let (word, rest) = said.split_once(": ").expect("narrow: or wide:");
    // `71.3 µs [64.0 µs .. 77.0 µs], upper bound +8.0 %`: tail prints the same estimate and
    // interval on its 1e-6 line.
    let (estimate, interval) = rest.split_once(" [").unwrap();
    let interval = format!("[{}", interval.split_once(']').unwrap().0);
    let line = level.unwrap_or_else(|| panic!("tail has no 1e-6 level: {a}"));
    assert!(
        line.contains(&format!("{estimate}  {interval}]")),
        "campaign: {said}\ntail:     {line}"
    );
    let l = a["levels"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["probability"] == 1e-6)
        .unwrap();
    let narrow = l["upper_ns"]
        .as_f64()
        .is_some_and(|u| u <= 1.1 * l["estimate_ns"].as_f64().unwrap());
    assert_eq!(word, if narrow { "narrow" } else { "wide" }, "{l}");
    if narrow {
        "narrow"
    } else {
        "wide"
    }
}

#[test]
fn until_tail_records_the_outcome_that_rtscope_tail_gives_the_recorded_run() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    let rt = common::rt_lock();
    let dir = common::fresh_dir("campaign-tail");
    let (file, db) = (dir.join("c.toml"), dir.join("r.db"));
    std::fs::write(&file, CAMPAIGN.replace("NAME", "ut")).unwrap();
    let args = common::campaign_run_args(&file, &db);
    let (o, timed_out) = common::run_for(bin(), &args, Duration::from_secs(120));
    // The checks below (`runs show`, `tail`) run no SCHED_FIFO thread.
    drop(rt);
    assert!(
        !timed_out && o.status.code() == Some(0),
        "{}",
        common::dump(&o)
    );
    let out = text(&o.stdout);
    // The final line per run says why it stopped, then CPU 0's standing on the whole run.
    let (head, cpu) = out
        .split_once("[1] ut/1:1/idle/1: until_tail ")
        .and_then(|(_, rest)| rest.split_once("\n      CPU 0 "))
        .unwrap_or_else(|| panic!("no final until_tail line in {out}"));
    let said = cpu.lines().next().unwrap();
    let outcome = head.split_once(' ').unwrap().0.to_lowercase();
    let run = show(&db, 1);
    assert_eq!(run["status"], "complete", "{run}");
    assert_eq!(run["tags"]["until_tail"], outcome.as_str());
    let env = &run["environment"];
    assert_eq!(
        env["rtscope.until_tail.rule"],
        "probability=1e-6,precision=10%,max_duration=8s,first_check=2s"
    );
    assert_eq!(env["rtscope.until_tail.thread.0"], format!("CPU 0 {said}"));
    // The independent check: what the campaign printed and recorded is tail's analysis.
    let word = check_against_tail(&db, 1, said);
    let expected = match word {
        "narrow" => "narrow",
        "refused" => "refused",
        _ => "wide",
    };
    assert_eq!(outcome, expected, "{out}");
    // Every check printed is recorded; the stop names a check made, or the max.
    let checks = out.matches("[1] ut/1:1/idle/1: tail check ").count();
    let recorded = env["rtscope.until_tail.checks"].as_str().unwrap();
    let made = if recorded == "none" {
        0
    } else {
        recorded.split("; ").count()
    };
    assert_eq!(checks, made, "{out}\n{recorded}");
    let stop = env["rtscope.until_tail.stop"].as_str().unwrap();
    match stop.strip_prefix("check ") {
        Some(k) => {
            let k: usize = k.split(' ').next().unwrap().parse().unwrap();
            assert!((2..=made).contains(&k), "one look never settles: {stop}");
            assert!(out.contains(": the run stops"), "{out}");
        }
        None => {
            assert_eq!(stop, "max_duration 8s reached");
            // The engine measured its whole length (its own deadline, not the machine's
            // speed): it ends at its last wake-up, the one for the last deadline before the
            // end, 8 s less one 200 µs interval (beside the hog: 7,999,970,289 ns, that
            // deadline woken 170 µs late).
            assert!(
                run["measured_ns"].as_u64().unwrap() >= 8_000_000_000 - 200_000,
                "{run}"
            );
        }
    }
    assert!(out.contains("campaign ut complete"), "{out}");
}

/// Starts `rtscope args`, reading its stdout line by line.
fn spawn(args: &[&str]) -> (std::process::Child, mpsc::Receiver<String>) {
    let mut child = Command::new(bin())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let (tx, rx) = mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    (child, rx)
}

#[test]
fn an_interrupted_until_tail_run_is_measured_again_by_resume_with_the_rule_it_was_started_with() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    let _rt = common::rt_lock();
    let dir = common::fresh_dir("campaign-tail-resume");
    let (file, db) = (dir.join("c.toml"), dir.join("r.db"));
    // The rule from the command line only; two runs, so a signal after the first check
    // interrupts one of them even if the first settles at once.
    let body = CAMPAIGN.replace("NAME", "utr").replace(
        "until_tail = \"probability=1e-6,precision=10%,max_duration=8s\"\n",
        "",
    ) + "[[load_case]]\nname = \"idle2\"\n";
    std::fs::write(&file, body).unwrap();
    let (f, d) = (file.to_str().unwrap(), db.to_str().unwrap());
    let rule = "probability=1e-6,precision=10%,max_duration=12s";
    let start = [
        "run",
        f,
        "--db",
        d,
        "--monitor-interval",
        "0",
        "--until-tail",
        rule,
    ];
    let (mut child, lines) = spawn(&start);
    let end = Instant::now() + Duration::from_secs(60);
    let mut seen: Vec<String> = Vec::new();
    while !seen.iter().any(|l| l.contains("tail check 1 at")) {
        match lines.recv_timeout(end.saturating_duration_since(Instant::now())) {
            Ok(l) => seen.push(l),
            Err(_) => {
                let _ = child.kill();
                panic!("no first check within a minute: {seen:#?}");
            }
        }
    }
    // SAFETY: kill with our child's pid and a valid signal number.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    seen.extend(lines.iter());
    let out = seen.join("\n");
    assert_eq!(status.code(), Some(3), "{out}");
    assert!(
        out.contains(&format!(
            "rtscope run {f} --until-tail {rule} --db {d} --resume"
        )),
        "{out}"
    );
    let interrupted = |r: &Value| r["status"] == "interrupted";
    let first: Vec<Value> = (1..=2).filter_map(|id| shown(&db, id)).collect();
    assert!(first.iter().any(interrupted), "{first:#?}");
    for r in first.iter().filter(|r| interrupted(r)) {
        assert_eq!(r["tags"]["until_tail"], "interrupted", "{r}");
    }
    // A different rule is refused; none given, the rule it was started with is kept.
    let o = rtscope(&db, &["run", f, "--resume", "--until-tail", "off", "-q"]);
    assert_eq!(o.status.code(), Some(2), "{}", common::dump(&o));
    assert!(
        text(&o.stderr).contains("--until-tail \"off\" contradicts"),
        "{}",
        common::dump(&o)
    );
    let args = ["run", f, "--db", d, "--resume", "-q"];
    let (o, timed_out) = common::run_for(bin(), &args, Duration::from_secs(120));
    assert!(
        !timed_out && o.status.code() == Some(0),
        "{}",
        common::dump(&o)
    );
    let want = "probability=1e-6,precision=10%,max_duration=12s,first_check=2s";
    let complete: Vec<Value> = (1..=4)
        .filter_map(|id| shown(&db, id))
        .filter(|r| r["status"] == "complete")
        .collect();
    assert_eq!(complete.len(), 2, "both cases done once: {complete:#?}");
    for r in &complete {
        assert_eq!(r["environment"]["rtscope.until_tail.rule"], want, "{r}");
        let tag = r["tags"]["until_tail"].as_str().unwrap();
        assert!(["narrow", "wide", "refused"].contains(&tag), "{r}");
    }
}

/// Run `id` as `runs show --json` shows it, when there is one.
fn shown(db: &Path, id: i64) -> Option<Value> {
    let o = rtscope(db, &["runs", "show", &id.to_string(), "--json"]);
    (o.status.code() == Some(0)).then(|| serde_json::from_slice(&o.stdout).unwrap())
}
