use super::*;
use crate::missing::{BoardEnd, MissingBoard};
use rtscope_store::Store;
use rtscope_testkit::synthetic::{write_run, SyntheticRun};

fn store(name: &str) -> (Store, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!("rtscope-formats-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    (Store::open(&dir.join("r.db")).unwrap(), dir)
}

fn report(limits: &[&str]) -> Report {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let (mut s, dir) = store(&format!("unit{n}"));
    let spec = SyntheticRun {
        label: "rt kernel".into(),
        samples: 20_000,
        monitors: false,
        ..SyntheticRun::default()
    };
    let id = write_run(&mut s, &spec).unwrap();
    let b = s.bundle(id, false).unwrap();
    let lim: Vec<Limit> = limits.iter().map(|l| limits::parse(l).unwrap()).collect();
    let r = Report::from_bundle(&b, &lim).unwrap();
    std::fs::remove_dir_all(dir).unwrap();
    r
}

#[test]
fn scopes_are_per_cpu_then_all_and_add_up() {
    let r = report(&[]);
    let kinds: Vec<_> = r.scopes.iter().map(|s| s.kind).collect();
    assert_eq!(
        kinds,
        [ScopeKind::Cpu(0), ScopeKind::Cpu(1), ScopeKind::All]
    );
    let all = r.all();
    assert_eq!(
        all.stats.count,
        r.scopes[0].stats.count + r.scopes[1].stats.count
    );
    assert_eq!(
        all.stats.max,
        r.scopes[0].stats.max.max(r.scopes[1].stats.max)
    );
    assert_eq!(all.histogram.count(), all.stats.count);
    assert!(r.checks.is_empty() && r.passed());
    assert_eq!(r.status, RunStatus::Complete);
    assert!(r.ended_unix_s.unwrap() > 1_795_316_400.0);
}

#[test]
fn limits_come_from_the_recorded_command_line_and_from_the_caller() {
    let cl = r#"["rtscope","measure","--limit","max=100us","--limit=missed=0","-l","5"]"#;
    let l = recorded_limits(cl).unwrap();
    assert_eq!(l.len(), 2);
    assert_eq!(l[0].value, 100_000);
    assert!(recorded_limits(r#"["rtscope","--limit","bogus=1"]"#).is_err());
    assert!(recorded_limits("not json").unwrap().is_empty());
    // One tight and one loose limit: checked per CPU and over all threads.
    let r = report(&["max=1us", "missed=0"]);
    assert_eq!(r.checks.len(), 2 * 3);
    assert!(!r.passed());
    assert!(r
        .checks
        .iter()
        .filter(|c| c.stat == "missed")
        .all(|c| c.passed));
    assert!(r
        .checks
        .iter()
        .filter(|c| c.stat == "max")
        .all(|c| !c.passed));
}

#[test]
fn prometheus_histogram_is_cumulative_and_gauges_are_exact() {
    let r = report(&["max=1us"]);
    let mut out = Vec::new();
    prometheus::write(&mut out, &r).unwrap();
    let text = String::from_utf8(out).unwrap();
    let cpu0: Vec<f64> = text
        .lines()
        .filter(|l| l.starts_with("rtscope_latency_seconds_bucket{") && l.contains("cpu=\"0\""))
        .map(|l| l.rsplit(' ').next().unwrap().parse().unwrap())
        .collect();
    assert_eq!(cpu0.len(), rtscope_common::prometheus::BUCKETS_NS.len() + 1);
    assert!(cpu0.windows(2).all(|w| w[0] <= w[1]), "{cpu0:?}");
    assert_eq!(*cpu0.last().unwrap(), r.scopes[0].stats.count as f64);
    let max = r.all().stats.max.0 as f64 / 1e9;
    let line = format!(
        "rtscope_latency_max_seconds{{board=\"{}\",label=\"rt kernel\",cpu=\"all\"}} {max}",
        r.board
    );
    assert!(text.contains(&line), "{line}\n{text}");
    let p = r.all().histogram.value_at_quantile(0.9999).unwrap().0 as f64 / 1e9;
    assert!(text.contains(&format!("cpu=\"all\",percentile=\"99.99\"}} {p}\n")));
    assert!(text.contains("percentile=\"50\"}") && text.contains("percentile=\"99.9999\"}"));
    assert!(!text.contains("quantile"), "{text}");
    assert!(text.contains("rtscope_limits_passed{") && text.contains("stat=\"max\"} 0\n"));
    assert!(!text.contains("run_id") && !text.contains("started"));
    // Every sample line: name{labels} value; every family announced once before its samples.
    let mut families = std::collections::HashSet::new();
    for l in text.lines() {
        if let Some(rest) = l.strip_prefix("# TYPE ") {
            assert!(
                families.insert(rest.split(' ').next().unwrap().to_string()),
                "{l}"
            );
        } else if !l.starts_with('#') {
            let (series, value) = l.rsplit_once(' ').unwrap();
            assert!(value.parse::<f64>().is_ok(), "{l}");
            let name = series.split('{').next().unwrap();
            let base = ["_bucket", "_sum", "_count"]
                .iter()
                .find_map(|s| name.strip_suffix(s))
                .unwrap_or(name);
            assert!(families.contains(name) || families.contains(base), "{l}");
        }
    }
}

#[test]
fn label_values_are_escaped() {
    assert_eq!(
        junit::escape("<a & \"b\">\u{1}"),
        "&lt;a &amp; &quot;b&quot;&gt;\u{FFFD}"
    );
    assert_eq!(name_part("rt kernel/6.6"), "rt_kernel_6.6");
    assert_eq!(name_part(""), "_");
}

#[test]
fn lava_cases_have_no_whitespace_in_names_and_carry_verdicts() {
    let r = report(&["max=1us", "missed=0"]);
    let mut out = Vec::new();
    lava::write(&mut out, &r).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(text.starts_with("<LAVA_SIGNAL_TESTSET START rt_kernel>\n"));
    let cases: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("<LAVA_SIGNAL_TESTCASE "))
        .collect();
    // run + 3 scopes × (min mean max 7 percentiles missed samples) + 6 checks
    assert_eq!(cases.len(), 1 + 3 * 12 + 6);
    for c in &cases {
        let id = c
            .split("TEST_CASE_ID=")
            .nth(1)
            .unwrap()
            .split(' ')
            .next()
            .unwrap();
        assert!(
            id.chars()
                .all(|ch| ch.is_ascii_alphanumeric() || "_.-".contains(ch)),
            "{c}"
        );
    }
    assert!(text.contains("TEST_CASE_ID=limit-cpu0-max RESULT=fail"));
    assert!(text.contains("TEST_CASE_ID=limit-all-missed RESULT=pass MEASUREMENT=0 UNITS=count>"));
    let max = r.all().stats.max.0 as f64 / 1000.0;
    assert!(text.contains(&format!(
        "TEST_CASE_ID=cpuall-max RESULT=pass MEASUREMENT={max} UNITS=us>"
    )));
}

/// Issue 51: a fleet's LAVA file named every board's set `idle`, with board-less case ids.
/// A board's run (its `board` tag) is in the set `BOARD-LABEL`, its case ids `BOARD.…`; two
/// boards' runs share no set and no case id, and a board without a run is its own set.
#[test]
fn lava_sets_and_case_ids_are_per_board() {
    let (mut s, dir) = store("lava-boards");
    let mut text = Vec::new();
    for board in ["rpi4", "imx8"] {
        let spec = SyntheticRun {
            label: "idle".into(),
            samples: 2_000,
            monitors: false,
            tags: vec![("board".into(), board.into())],
            ..SyntheticRun::default()
        };
        let id = write_run(&mut s, &spec).unwrap();
        let r = Report::from_bundle(&s.bundle(id, false).unwrap(), &[]).unwrap();
        assert!(r.from_board && r.board == board);
        lava::write(&mut text, &r).unwrap();
    }
    let gone = MissingBoard {
        board: "rpi3".into(),
        end: BoardEnd::Interrupted,
        reason: "not run: interrupted before it started".into(),
    };
    lava::write_missing(&mut text, &gone).unwrap();
    let text = String::from_utf8(text).unwrap();
    let sets: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("<LAVA_SIGNAL_TESTSET START "))
        .collect();
    assert_eq!(sets, ["rpi4-idle>", "imx8-idle>", "rpi3>"]);
    let ids: Vec<&str> = text
        .lines()
        .filter_map(|l| l.split("TEST_CASE_ID=").nth(1))
        .map(|l| l.split(' ').next().unwrap())
        .collect();
    let of = |b: &str| {
        ids.iter()
            .filter(|i| i.starts_with(&format!("{b}.")))
            .count()
    };
    assert_eq!(of("rpi4") + of("imx8") + of("rpi3"), ids.len(), "{ids:?}");
    assert_eq!(of("rpi4"), of("imx8"));
    assert!(text.contains("<LAVA_SIGNAL_TESTCASE TEST_CASE_ID=rpi4.cpuall-max RESULT=pass"));
    assert!(text.contains(
        "<LAVA_SIGNAL_TESTCASE TEST_CASE_ID=rpi3.run RESULT=fail>\n<LAVA_SIGNAL_TESTSET STOP>\n\
         # rpi3: board rpi3 interrupted: not run: interrupted before it started\n"
    ));
    std::fs::remove_dir_all(dir).unwrap();
}

/// Two CI jobs with fresh databases both record "run 1": their KCIDB test ids used the run
/// number and overwrote each other in KernelCI. Ids that leave the machine use the run's UUID.
#[test]
fn two_fresh_databases_never_submit_the_same_kcidb_ids() {
    let (a, b) = (report(&[]), report(&[]));
    assert_eq!((a.run_id, b.run_id), (Some(1), Some(1)));
    let (ua, ub) = (a.uuid.clone().unwrap(), b.uuid.clone().unwrap());
    assert_ne!(ua, ub);
    let ids = |r: &Report| -> Vec<String> {
        kcidb::document(r, &kcidb::Submission::default())["tests"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["id"].as_str().unwrap().to_owned())
            .collect()
    };
    let (ia, ib) = (ids(&a), ids(&b));
    assert!(ia.iter().all(|i| i.contains(&ua)), "{ia:?}");
    assert!(ia.iter().all(|i| !ib.contains(i)), "{ia:?}\n{ib:?}");
    let mut out = Vec::new();
    junit::write(&mut out, &a).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(
        text.contains(&format!(r#".run1.run_uuid" value="{ua}"/>"#)),
        "{text}"
    );
}

#[test]
fn an_empty_junit_document_says_zero_time_not_minus_zero() {
    let mut out = Vec::new();
    junit::write_all(&mut out, &[], &[]).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(text.contains(r#"time="0.000""#), "{text}");
}
