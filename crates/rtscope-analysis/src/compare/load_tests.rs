//! Groups read from a store written through its API (`rtscope run` records campaigns; here
//! they are made directly): campaign selectors with the load cases of their plan, missed
//! deadlines as a rate, and the one-pass reading against the run-by-run one.

use super::groups;
use crate::compare::analysis::Comparison;
use crate::compare::group::Group;
use crate::compare::model::{RunData, Stat, DEFAULT_STATS};
use crate::compare::verdict::Thresholds;
use crate::select;
use rtscope_core::{Histogram, Nanos};
use rtscope_store::{
    CampaignRun, Checkpoint, MonitorBatch, NewCampaign, NewRun, RunKind, RunStatus, Store,
    ThreadInfo, ThreadStats,
};
use std::path::PathBuf;

fn tmpdb(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "rtscope-compare-unit-{}-{name}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("rtscope.db")
}

/// A finished one-thread run with `n` samples of `value_us`.
fn add_run(s: &mut Store, value_us: u64, n: u64) -> i64 {
    add_run_with(s, value_us, n, 0, &[])
}

/// A finished one-thread run with `n` samples of `value_us`, `missed` missed deadlines and
/// `tags`.
fn add_run_with(s: &mut Store, value_us: u64, n: u64, missed: u64, tags: &[(&str, &str)]) -> i64 {
    let id = s
        .begin_run(&NewRun {
            kind: RunKind::Measure,
            label: None,
            tags: tags
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            started: "2026-11-22T03:00:00Z".into(),
            started_unix_ns: 1,
            pid: std::process::id(),
            tool_version: "0.1.0".into(),
            command_line_json: "[]".into(),
            config_json: "{}".into(),
            environment: vec![
                ("uname.release".into(), "6.18-rt".into()),
                ("rtscope.sample_rule".into(), "wake-up".into()),
            ],
            threads: vec![ThreadInfo {
                thread: 0,
                cpu: Some(0),
                policy: "fifo".into(),
                priority: 90,
                interval_ns: 1_000_000,
            }],
        })
        .unwrap();
    let mut h = Histogram::new();
    h.record_n(Nanos::from_us(value_us), n);
    let last = Checkpoint {
        progress_ns: n * 1_000_000,
        at_unix_ns: 2,
        threads: vec![ThreadStats {
            thread: 0,
            tid: 1,
            figures: rtscope_store::SampleFigures {
                samples: n,
                min_ns: h.min().map(|v| v.0),
                mean_ns: Some(value_us as f64 * 1e3),
                max_ns: h.max().map(|v| v.0),
                max_cycle: Some(0),
                max_offset_ns: Some(0),
            },
            missed,
            raw_dropped: 0,
            histogram: &h,
        }],
        series: vec![],
        events: vec![],
        samples: vec![],
        monitor: MonitorBatch::default(),
    };
    s.finish_run(id, &last, RunStatus::Complete, "2026-11-22T03:00:01Z", 0)
        .unwrap();
    id
}

/// A campaign with an idle and a hackbench run.
fn add_campaign(s: &mut Store, name: &str, idle_us: u64, load_us: u64) {
    let cid = s
        .begin_campaign(&NewCampaign {
            name: name.into(),
            source: "test".into(),
            definition: String::new(),
            started: "2026-11-22T03:00:00Z".into(),
            planned_runs: 2,
            command_line: vec![],
        })
        .unwrap();
    for (seq, (case, us)) in [("idle", idle_us), ("hackbench", load_us)]
        .into_iter()
        .enumerate()
    {
        let run_id = add_run(s, us, 1000);
        let r = CampaignRun {
            seq: seq as u32,
            run_id,
            scenario: "all".into(),
            load_case: case.into(),
            repeat: 1,
            status: RunStatus::Running,
        };
        s.add_campaign_run(cid, &r).unwrap();
    }
}

/// The comparison of the groups `selectors` name in the store at `path`, with the options of
/// `rtscope compare` (`stats`, `--threshold-only`) and its defaults otherwise.
fn compare(
    path: &std::path::Path,
    selectors: &[&str],
    stats: &str,
    threshold_only: bool,
) -> Comparison {
    let s = Store::open(path).unwrap();
    let selectors: Vec<String> = selectors.iter().map(|t| t.to_string()).collect();
    let loaded = groups(&s, &selectors).unwrap();
    let stats: Vec<Stat> = stats
        .split(',')
        .map(|t| Stat::parse(t, "--stat").unwrap())
        .collect();
    let mut thresholds = Thresholds::parse(&[], "1us").unwrap();
    thresholds.threshold_only = threshold_only;
    let matrix = Stat::parse("max", "--matrix").unwrap();
    Comparison::new(loaded.groups, &stats, thresholds, matrix, None)
}

#[test]
fn campaigns_are_groups_and_their_plan_gives_the_load_cases() {
    let path = tmpdb("campaigns");
    let mut s = Store::open(&path).unwrap();
    add_campaign(&mut s, "stock", 10, 40);
    add_campaign(&mut s, "rt", 10, 12);
    drop(s);
    // One run per load case: only the threshold can gate (`--threshold-only`).
    let c = compare(&path, &["campaign:rt", "stock"], DEFAULT_STATS, true);
    assert!(
        c.regressions() > 0,
        "stock's hackbench max is 40 us against rt's 12 us"
    );
    // What compare's JSON document (rtscope-present) writes, on the typed comparison.
    assert_eq!(
        serde_json::json!(c.groups[0].distinct(|r| r.campaign.as_deref())),
        serde_json::json!(["rt"])
    );
    let ids: Vec<i64> = c.groups[1].runs.iter().map(|r| r.id).collect();
    assert_eq!(ids, [1, 2]);
    assert_eq!(
        serde_json::json!(c.groups[1].distinct(|r| r.kernel.as_deref())),
        serde_json::json!(["6.18-rt"])
    );
    let m = c.matrix.as_ref().unwrap();
    assert_eq!(
        serde_json::json!(m.columns),
        serde_json::json!(["idle", "hackbench"])
    );
    assert_eq!(
        serde_json::json!(m.rows[1].1),
        serde_json::json!([10_000, 40_000])
    );
}

/// The groups as compare read them before issue 28: run by run, each run's campaign looked up
/// alone. The batched reading must give exactly what this gives.
fn groups_run_by_run(s: &Store, selectors: &[&str]) -> Vec<Group> {
    let load = |text: &str| {
        let sel = select::Selector::parse(text).unwrap();
        let mut runs = Vec::new();
        for id in select::resolve(s, &sel, text).unwrap() {
            let detail = s.run(id).unwrap();
            let campaign = s.campaign_of(id).unwrap().map(|(c, r)| (c.name, r));
            let settings: Vec<_> = s
                .checks(id)
                .unwrap()
                .into_iter()
                .filter_map(|c| Some((c.check, c.setting?)))
                .collect();
            for mut r in RunData::per_mechanism(&detail, campaign) {
                r.settings = settings.clone();
                runs.push(r);
            }
        }
        runs
    };
    let groups = selectors.iter().enumerate();
    groups.map(|(i, t)| Group::new(i, t, load(t))).collect()
}

/// Text and JSON of a comparison of `groups` with compare's default options.
fn rendered(groups: Vec<Group>) -> String {
    let stats: Vec<Stat> = DEFAULT_STATS
        .split(',')
        .map(|s| Stat::parse(s, "--stat").unwrap())
        .collect();
    let thresholds = Thresholds::parse(&[], "1us").unwrap();
    let matrix = Stat::parse("max", "--matrix").unwrap();
    let c = Comparison::new(groups, &stats, thresholds, matrix, None);
    // The whole typed comparison, from which compare's text report and JSON document
    // (rtscope-present's, pure functions of it) are rendered: equal comparisons, equal reports.
    format!("{c:#?}")
}

/// Campaigns, tagged runs, audits with settings and a run whose writer died, in one store.
fn mixed_store(name: &str, rounds: u64) -> PathBuf {
    let path = tmpdb(name);
    let mut s = Store::open(&path).unwrap();
    for i in 0..rounds {
        add_campaign(&mut s, "stock", 10 + i, 40 + i);
        add_campaign(&mut s, "rt", 10, 12 + i % 3);
        let id = add_run_with(&mut s, 10 + i, 990, i, &[("kernel", "a"), ("case", "idle")]);
        let row = |setting: &str| rtscope_store::CheckRow {
            check: "governor".into(),
            verdict: "warn".into(),
            evidence: String::new(),
            fix: None,
            setting: Some(setting.into()),
        };
        s.set_checks(
            id,
            &[row(if i % 2 == 0 {
                "performance"
            } else {
                "powersave"
            })],
        )
        .unwrap();
        add_run_with(
            &mut s,
            11,
            1_980,
            2 * i,
            &[("kernel", "b"), ("case", "cpu")],
        );
    }
    let mut dead = NewRun {
        kind: RunKind::Measure,
        label: None,
        tags: vec![("kernel".into(), "b".into())],
        started: "2026-11-22T03:00:00Z".into(),
        started_unix_ns: 1,
        pid: u32::MAX,
        tool_version: "0.1.0".into(),
        command_line_json: "[]".into(),
        config_json: "{}".into(),
        environment: vec![],
        threads: vec![],
    };
    dead.threads.push(ThreadInfo {
        thread: 0,
        cpu: Some(0),
        policy: "fifo".into(),
        priority: 90,
        interval_ns: 1_000_000,
    });
    s.begin_run(&dead).unwrap();
    path
}

#[test]
fn groups_read_in_one_pass_compare_exactly_as_run_by_run() {
    let path = mixed_store("one-pass", 4);
    let s = Store::open(&path).unwrap();
    for selectors in [
        &["campaign:stock", "rt"][..],
        &["kernel=a", "kernel=b", "stock"],
    ] {
        let before = rendered(groups_run_by_run(&s, selectors));
        let texts: Vec<String> = selectors.iter().map(|t| t.to_string()).collect();
        let now = rendered(groups(&s, &texts).unwrap().groups);
        // The same comparison: the same text report and JSON document (rtscope-present's).
        assert_eq!(now, before, "the comparison of {selectors:?}");
        assert!(now.contains("stock") || now.contains("kernel"), "{now}");
    }
}

#[test]
fn a_group_takes_as_many_statements_for_6_runs_as_for_60() {
    let statements = |rounds: u64| {
        let path = mixed_store(&format!("statements-{rounds}"), rounds);
        let s = Store::open(&path).unwrap();
        let before = s.statements();
        let mut notes = Vec::new();
        let runs = super::group(&s, "campaign:stock", &mut notes).unwrap();
        let runs_b = super::group(&s, "kernel=b", &mut notes).unwrap();
        assert_eq!(runs.len(), 2, "the newest campaign named stock");
        assert_eq!(runs_b.len() as u64, rounds + 1);
        s.statements() - before
    };
    // Reading the store a run at a time would take thousands more statements.
    let (small, large) = (statements(3), statements(30));
    assert!(small > 0);
    assert!(
        large <= small,
        "{small} statements for 3 rounds, {large} for 30"
    );
}

#[test]
fn a_run_that_did_not_complete_is_read_with_a_note_naming_it() {
    let path = mixed_store("notes", 1);
    let s = Store::open(&path).unwrap();
    let loaded = groups(&s, &["kernel=b".to_string()]).unwrap();
    assert_eq!(
        loaded.groups[0].runs.len(),
        2,
        "the finished run and the dead one"
    );
    assert_eq!(loaded.notes.len(), 1, "{:?}", loaded.notes);
    let note = &loaded.notes[0];
    assert!(note.starts_with("note: run 7 ('kernel=b') is "), "{note}");
    assert!(
        note.ends_with(": its statistics cover what was recorded"),
        "{note}"
    );
}

#[test]
fn a_watch_selector_without_its_period_range_or_series_is_a_usage_error_with_a_hint() {
    let path = mixed_store("watch-selector", 1);
    let s = Store::open(&path).unwrap();
    let mut notes = Vec::new();
    let e = super::group(&s, "watch:board@2026-11-01", &mut notes).unwrap_err();
    assert_eq!(
        e.message,
        "watch:board@2026-11-01: expected SERIES@FROM..TO"
    );
    assert!(e
        .hint
        .unwrap()
        .contains("watch:board-7@2026-11-01..2026-11-15"));
    let e = super::group(&s, "watch:board", &mut notes).unwrap_err();
    assert!(
        e.message.starts_with("no watch series named 'board' in "),
        "{}",
        e.message
    );
    assert!(notes.is_empty(), "{notes:?}");
}

/// `--stat` given is compared as given, even spelling out the latency default on noise runs
/// (issue 65 item 3: it was silently replaced by noise's defaults); without it, each kind its
/// own defaults.
#[test]
fn a_stat_list_given_is_always_honoured() {
    use crate::compare::model::{tests_support::run, NOISE_STATS};
    let runs = |kind: RunKind, ids: [i64; 2]| {
        ids.map(|id| {
            let mut r = run(id, Histogram::new(), 1_000, Some(1_000));
            r.kind = kind;
            r
        })
        .to_vec()
    };
    let noise = vec![
        Group::new(0, "quiet", runs(RunKind::Noise, [1, 2])),
        Group::new(1, "noisy", runs(RunKind::Noise, [3, 4])),
    ];
    let latency = vec![
        Group::new(0, "a", runs(RunKind::Measure, [5, 6])),
        Group::new(1, "b", runs(RunKind::Measure, [7, 8])),
    ];
    let default = super::default_stats();
    let names = |s: &[Stat]| s.iter().map(|s| s.name()).collect::<Vec<_>>().join(",");
    assert_eq!(names(&default), DEFAULT_STATS);
    assert_eq!(
        super::stats_for(&noise, Some(default.clone())).unwrap(),
        default
    );
    assert_eq!(super::stats_for(&noise, None).unwrap(), NOISE_STATS);
    assert_eq!(super::stats_for(&latency, None).unwrap(), default);
    let max = vec![Stat::Max];
    assert_eq!(super::stats_for(&latency, Some(max.clone())).unwrap(), max);
    let mixed = vec![noise[0].clone(), latency[1].clone()];
    assert!(super::stats_for(&mixed, None).is_err());
}
