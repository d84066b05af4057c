//! Unit tests of the campaign expansion: order, overlays, overrides, loads, estimates and
//! located errors, on a fixed set of online CPUs so they do not depend on the machine.

use super::expand::{estimate, from_text, Campaign, DEFAULT_SETTLE};
use super::{presets, CampaignOptions};
use rtscope_common::error::UsageError;
use rtscope_core::Nanos;
use rtscope_engine::{CpuSet, Policy};
use rtscope_load::{LoadSpec, MsgMode, MsgTransport};
use std::time::Duration;

/// The options a command line would give: `--duration`, `--loops`, `--repeats`, `--name` and
/// `--tag` with their values.
fn args(extra: &[&str]) -> CampaignOptions {
    let mut a = CampaignOptions::default();
    for pair in extra.chunks(2) {
        let v = pair[1].to_string();
        match pair[0] {
            "--duration" => a.duration = Some(v),
            "--loops" => a.loops = Some(v.parse().unwrap()),
            "--repeats" => a.repeats = Some(v.parse().unwrap()),
            "--name" => a.name = Some(v),
            "--tag" => a.tags.push(v),
            "--explain" => a.explain = Some(v),
            other => panic!("no such option in these tests: {other}"),
        }
    }
    a
}

fn four() -> CpuSet {
    CpuSet::from_cpus(0..4)
}

fn plan_with(text: &str, extra: &[&str], online: &CpuSet) -> Result<Campaign, UsageError> {
    from_text("t.toml".into(), "t.toml", text.into(), &args(extra), online)
}

fn plan(text: &str, extra: &[&str]) -> Campaign {
    plan_with(text, extra, &four()).unwrap_or_else(|e| panic!("{e}"))
}

fn err(text: &str) -> String {
    plan_with(text, &[], &four()).unwrap_err().to_string()
}

const TWO_BY_TWO: &str = r#"
[campaign]
name = "c"
repeats = 2
tags = { board = "rpi4" }

[measure]
interval = "100us"
duration = "10s"

[[scenario]]
name = "1:1"
threads = 1
cpus = "2"

[[scenario]]
name = "M:N"
threads_per_cpu = 3
cpus = "0-1"
interval = 500
loops = 1000

[[load_case]]
name = "idle"

[[load_case]]
name = "busy"
  [[load_case.load]]
  kind = "messaging"
  [[load_case.load]]
  kind = "memory"
"#;

#[test]
fn grouped_order_runs_each_cell_repeats_back_to_back() {
    let c = plan(TWO_BY_TWO, &[]);
    let cells: Vec<String> = c
        .runs
        .iter()
        .map(|r| format!("{}:{}/{}:{}", r.seq, r.scenario, r.case, r.repeat))
        .collect();
    assert_eq!(
        cells,
        [
            "1:1:1/idle:1",
            "2:1:1/idle:2",
            "3:1:1/busy:1",
            "4:1:1/busy:2",
            "5:M:N/idle:1",
            "6:M:N/idle:2",
            "7:M:N/busy:1",
            "8:M:N/busy:2"
        ]
    );
    assert_eq!(c.runs[3].label, "c/1:1/busy/2");
    let tags: Vec<String> = c.runs[3]
        .tags
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    assert_eq!(
        tags,
        [
            "campaign=c",
            "scenario=1:1",
            "case=busy",
            "repeat=2",
            "board=rpi4"
        ]
    );
    assert!(c.runs.iter().all(|r| r.repeats == 2));
    assert_eq!(c.text, TWO_BY_TWO, "the text is kept for --resume");
}

#[test]
fn interleaved_order_runs_repeat_one_of_everything_first() {
    let text = TWO_BY_TWO.replace("repeats = 2", "repeats = 2\norder = \"interleaved\"");
    let c = plan(&text, &[]);
    let first: Vec<(String, String, u32)> = c
        .runs
        .iter()
        .take(5)
        .map(|r| (r.scenario.clone(), r.case.clone(), r.repeat))
        .collect();
    assert_eq!(first[3], ("M:N".into(), "busy".into(), 1));
    assert_eq!(first[4], ("1:1".into(), "idle".into(), 2));
}

#[test]
fn scenarios_overlay_measure_and_choose_their_own_length() {
    let c = plan(TWO_BY_TWO, &[]);
    let one = &c.runs[0].plan.config;
    assert_eq!(one.threads.len(), 1);
    assert_eq!(one.threads[0].affinity, Some(CpuSet::from_cpus([2])));
    assert_eq!(one.threads[0].interval, Nanos::from_us(100));
    assert_eq!(
        (one.duration, one.loops),
        (Some(Nanos::from_secs(10)), None)
    );
    let mn = &c.runs[4].plan.config;
    assert_eq!(mn.threads.len(), 6, "3 per CPU on 2 CPUs");
    assert_eq!(
        mn.threads[0].interval,
        Nanos::from_us(500),
        "a bare number is µs"
    );
    assert_eq!(
        (mn.duration, mn.loops),
        (None, Some(1000)),
        "loops replace duration"
    );
    assert_eq!(mn.threads[0].policy, Policy::Fifo);
    assert_eq!(mn.threads[0].priority, 90, "measure's default priority");
}

#[test]
fn settle_applies_only_to_runs_with_loads_and_counts_in_the_estimate() {
    let c = plan(TWO_BY_TWO, &[]);
    assert_eq!(c.runs[0].settle, Nanos::ZERO);
    assert_eq!(c.runs[2].settle, DEFAULT_SETTLE);
    assert_eq!(estimate(&c.runs[0]), Duration::from_secs(10));
    assert_eq!(estimate(&c.runs[2]), Duration::from_secs(12));
    // 1000 loops at 500 µs = 0.5 s.
    assert_eq!(estimate(&c.runs[4]), Duration::from_millis(500));
    assert_eq!(estimate(&c.runs[6]), Duration::from_millis(2500));
}

#[test]
fn command_line_overrides_length_repeats_name_and_tags() {
    let c = plan(
        TWO_BY_TWO,
        &[
            "--loops",
            "7",
            "--repeats",
            "1",
            "--name",
            "n",
            "--tag",
            "k=v",
        ],
    );
    assert_eq!(c.runs.len(), 4);
    assert!(c
        .runs
        .iter()
        .all(|r| r.plan.config.loops == Some(7) && r.plan.config.duration.is_none()));
    assert_eq!(c.name, "n");
    assert_eq!(c.runs[0].label, "n/1:1/idle/1");
    assert_eq!(
        c.tags,
        [("board".into(), "rpi4".into()), ("k".into(), "v".into())]
    );
    let d = plan(TWO_BY_TWO, &["--duration", "3s"]);
    assert!(d
        .runs
        .iter()
        .all(|r| r.plan.config.duration == Some(Nanos::from_secs(3))));
    let e = plan_with(TWO_BY_TWO, &["--tag", "case=x"], &four()).unwrap_err();
    assert!(e.message.contains("'--tag'"), "{e}");
    let e = plan_with(TWO_BY_TWO, &["--repeats", "0"], &four()).unwrap_err();
    assert!(e.message.contains("'--repeats'"), "{e}");
}

#[test]
fn loads_take_the_peer_tools_defaults() {
    let c = plan(TWO_BY_TWO, &[]);
    assert_eq!(
        c.runs[2].loads,
        [
            LoadSpec::Messaging {
                groups: 10,
                fds: 20,
                size: 100,
                transport: MsgTransport::Socket,
                mode: MsgMode::Processes
            },
            LoadSpec::Memory {
                threads: 4,
                megabytes: 256
            }
        ]
    );
    let text = TWO_BY_TWO.replace(
        "kind = \"memory\"",
        "kind = \"external\"\n  program = \"sh\"\n  args = [\"-c\", \"sleep 1\"]",
    );
    let c = plan(&text, &[]);
    assert_eq!(
        c.runs[2].loads[1],
        LoadSpec::External {
            program: "sh".into(),
            args: vec!["-c".into(), "sleep 1".into()]
        }
    );
}

#[test]
fn load_start_bounds_the_wait_for_a_load_and_a_scenario_may_set_its_own() {
    let c = plan(TWO_BY_TWO, &[]);
    assert!(c.runs.iter().all(|r| r.load_start == Nanos::from_secs(120)));
    let text = TWO_BY_TWO
        .replace(
            "duration = \"10s\"\n",
            "duration = \"10s\"\nload_start = 0\n",
        )
        .replace("cpus = \"2\"\n", "cpus = \"2\"\nload_start = \"30s\"\n");
    let c = plan(&text, &[]);
    for r in &c.runs {
        let want = if r.scenario == "1:1" { 30 } else { 0 };
        assert_eq!(r.load_start, Nanos::from_secs(want), "{}", r.label);
    }
    assert!(err(&TWO_BY_TWO.replace(
        "duration = \"10s\"\n",
        "duration = \"10s\"\nload_start = \"soon\"\n"
    ))
    .contains("load_start"));
}

#[test]
fn errors_point_at_the_offending_value() {
    let both = TWO_BY_TWO.replace("loops = 1000", "loops = 1000\nduration = \"1s\"");
    assert!(
        err(&both).starts_with("t.toml:22:12: set either 'duration' or 'loops'"),
        "{}",
        err(&both)
    );
    let prio = TWO_BY_TWO.replace("threads = 1\n", "threads = 1\npriority = 120\n");
    assert!(
        err(&prio).starts_with("t.toml:14:12: priority 120 is out of range"),
        "{}",
        err(&prio)
    );
    let pol = TWO_BY_TWO.replace("threads = 1\n", "threads = 1\npolicy = \"fast\"\n");
    assert!(
        err(&pol).contains("hint: policy: fifo, rr, other"),
        "{}",
        err(&pol)
    );
    let slash = TWO_BY_TWO.replace("name = \"busy\"", "name = \"a/b\"");
    assert!(err(&slash).starts_with("t.toml:27:8: invalid load case name 'a/b'"));
    let name = TWO_BY_TWO.replace("duration = \"10s\"", "duration = \"10s\"\nname = \"m\"");
    assert!(err(&name).starts_with("t.toml:10:8: [measure] takes no name"));
    let zero = TWO_BY_TWO.replace("duration = \"10s\"", "duration = \"0\"");
    assert!(err(&zero).starts_with("t.toml:9:12: duration 0 never ends"));
    let msg = TWO_BY_TWO.replace(
        "kind = \"messaging\"",
        "kind = \"messaging\"\n  mode = \"fibers\"",
    );
    assert!(
        err(&msg).contains(":30:10: invalid mode 'fibers'"),
        "{}",
        err(&msg)
    );
}

#[test]
fn every_preset_plans_on_a_small_and_a_large_machine() {
    for online in [CpuSet::from_cpus([0]), CpuSet::from_cpus(0..64)] {
        for name in presets::NAMES {
            let text = presets::get(name).unwrap();
            let c = from_text(
                name.to_string(),
                &format!("preset:{name}"),
                text.into(),
                &args(&[]),
                &online,
            )
            .unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(c.name, *name);
            assert!(!c.runs.is_empty());
        }
    }
}

#[test]
fn a_preset_cpu_that_is_offline_is_located_in_the_preset() {
    let text = presets::get("scenarios").unwrap();
    let e = from_text(
        "scenarios".into(),
        "preset:scenarios",
        text.into(),
        &args(&[]),
        &CpuSet::from_cpus([2, 3]),
    )
    .unwrap_err();
    assert!(e.message.starts_with("preset:scenarios:"), "{e}");
    assert!(
        e.message.ends_with("CPU 0 is not online (online: 2-3)"),
        "{e}"
    );
}

#[test]
fn deadline_scenarios_are_not_pinned_unless_the_file_pins_them() {
    let text = TWO_BY_TWO.replace(
        "threads = 1\ncpus = \"2\"",
        "threads = 1\npolicy = \"deadline\"\ndl_runtime = \"50us\"",
    );
    let c = plan(&text, &[]);
    assert_eq!(c.runs[0].plan.config.threads[0].affinity, None);
    assert!(matches!(
        c.runs[0].plan.config.threads[0].policy,
        Policy::Deadline { .. }
    ));
    let pinned = text.replace("threads = 1\n", "threads = 1\ncpus = \"1\"\n");
    let e = err(&pinned);
    assert!(
        e.starts_with(
            "t.toml:12:8: scenario '1:1': 'cpus' cannot be combined with 'policy deadline'"
        ),
        "{e}"
    );
}

#[test]
fn unknown_keys_in_inline_tables_name_their_table() {
    let text = format!(
        "{TWO_BY_TWO}\n[[load_case]]\nname = \"inline\"\nload = [{{ kind = \"cpu\", thread = 1 }}]\n"
    );
    let e = err(&text);
    assert!(
        e.contains("unknown key 'thread' in [[load_case.load]]"),
        "{e}"
    );
    assert!(e.contains("did you mean 'threads'?"), "{e}");
}

#[test]
fn other_policy_defaults_to_nice_zero() {
    let text = TWO_BY_TWO.replace("threads = 1\n", "threads = 1\npolicy = \"other\"\n");
    let c = plan(&text, &[]);
    assert_eq!(c.runs[0].plan.config.threads[0].policy, Policy::Other);
    assert_eq!(c.runs[0].plan.config.threads[0].priority, 0);
    let nice = text.replace("policy = \"other\"", "policy = \"other\"\npriority = -5");
    assert_eq!(plan(&nice, &[]).runs[0].plan.config.threads[0].priority, -5);
}

#[test]
fn explain_comes_from_the_flag_then_the_file_then_the_default() {
    let text = TWO_BY_TWO.replace(
        "duration = \"10s\"",
        "duration = \"10s\"\nexplain = \"250us\"",
    );
    let thresholds = |c: &Campaign| c.runs.iter().map(|r| r.plan.explain).collect::<Vec<_>>();
    assert!(thresholds(&plan(&text, &[]))
        .iter()
        .all(|e| *e == Some(Nanos::from_us(250))));
    assert!(thresholds(&plan(&text, &["--explain", "1ms"]))
        .iter()
        .all(|e| *e == Some(Nanos::from_ms(1))));
    assert!(thresholds(&plan(&text, &["--explain", "off"]))
        .iter()
        .all(Option::is_none));
    let off = TWO_BY_TWO.replace(
        "duration = \"10s\"",
        "duration = \"10s\"\nexplain = \"off\"",
    );
    assert!(thresholds(&plan(&off, &[])).iter().all(Option::is_none));
    // Without a setting: on from 100 µs exactly where tracefs is usable.
    let default = rtscope_session::explain::default_threshold();
    assert!(thresholds(&plan(TWO_BY_TWO, &[]))
        .iter()
        .all(|e| *e == default));
    assert!(plan_with(TWO_BY_TWO, &["--explain", "soon"], &four())
        .unwrap_err()
        .to_string()
        .contains("--explain"));
}

#[test]
fn explain_recorder_comes_from_the_flag_then_the_file_and_is_tracefs_by_default() {
    use rtscope_session::explain::RecorderChoice;
    let recorders = |c: &Campaign| {
        let r: Vec<_> = c.runs.iter().map(|r| r.plan.explain_recorder).collect();
        assert!(!r.is_empty());
        r
    };
    let every = |c: &Campaign, want| recorders(c).iter().all(|r| *r == want);
    assert!(every(&plan(TWO_BY_TWO, &[]), RecorderChoice::Tracefs));
    let text = TWO_BY_TWO.replace(
        "duration = \"10s\"",
        "duration = \"10s\"\nexplain_recorder = \"ebpf\"",
    );
    assert!(every(&plan(&text, &[]), RecorderChoice::Bpf));
    let mut a = args(&[]);
    a.explain_recorder = Some(RecorderChoice::Auto);
    let c = from_text("t.toml".into(), "t.toml", text.clone(), &a, &four()).unwrap();
    assert!(
        every(&c, RecorderChoice::Auto),
        "the flag replaces the file"
    );
    let bad = text.replace("\"ebpf\"", "\"bpf\"");
    let e = plan_with(&bad, &[], &four()).unwrap_err().to_string();
    assert!(
        e.contains("explain_recorder") && e.contains("tracefs, ebpf, auto"),
        "{e}"
    );
}
