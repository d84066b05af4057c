//! `compare` of `respond` runs (seed 003: event response, idle against loaded): each mechanism
//! is an operand, every mechanism is a column of the matrix, strata are named once and lost
//! events are called `lost`, in the text and in the JSON.

use rtscope_analysis::compare::analysis::Comparison;
use rtscope_analysis::compare::group::Group;
use rtscope_analysis::compare::model::{RunData, Stat};
use rtscope_analysis::compare::verdict::Thresholds;
use rtscope_present::compare_json as json;
use rtscope_present::compare_text as text;
use rtscope_store::{RunKind, Store};
use rtscope_testkit::synthetic::{write_run, SyntheticRun};

const ROWS: &str = r#"{"rows":[{"thread":0,"source":"eventfd","path":"1→1 same"},{"thread":1,"source":"pipe","path":"1→1 same"},{"thread":2,"source":"signal","path":"1→1 same"}]}"#;

const MECHANISMS: [&str; 3] = ["eventfd 1->1 same", "pipe 1->1 same", "signal 1->1 same"];

/// Two respond runs of eventfd, pipe and signal per label (`idle`, `loaded`), each read back
/// one operand per mechanism; the loaded runs lost 3 events of each mechanism.
fn operands(name: &str) -> Vec<(String, Vec<RunData>)> {
    let path = std::env::temp_dir().join(format!(
        "rtscope-analysis-respond-{}-{name}.db",
        std::process::id()
    ));
    for ext in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{ext}", path.display()));
    }
    let mut store = Store::open(&path).unwrap();
    let mut out = Vec::new();
    for (k, label) in ["idle", "loaded"].into_iter().enumerate() {
        let mut runs = Vec::new();
        for repeat in 0..2u64 {
            let spec = SyntheticRun {
                label: label.into(),
                cpus: 3,
                samples: 2_000,
                base_ns: 4_000 + 2_000 * k as u64,
                seed: 11 + 5 * repeat + k as u64,
                monitors: false,
                tags: vec![],
                ..SyntheticRun::default()
            };
            let id = write_run(&mut store, &spec).unwrap();
            let mut d = store.run(id).unwrap();
            d.summary.kind = RunKind::Respond;
            d.config_json = ROWS.into();
            for t in &mut d.threads {
                t.missed = 3 * k as u64;
            }
            runs.extend(RunData::per_mechanism(&d, None));
        }
        out.push((format!("label:{label}"), runs));
    }
    drop(store);
    let _ = std::fs::remove_file(&path);
    out
}

fn compare(name: &str) -> Comparison {
    let groups = operands(name)
        .into_iter()
        .enumerate()
        .map(|(i, (sel, runs))| Group::new(i, &sel, runs))
        .collect();
    let stats = ["p50", "max", "missed"].map(|s| Stat::parse(s, "--stat").unwrap());
    let t = Thresholds::parse(&[], "1us").unwrap();
    Comparison::new(groups, &stats, t, Stat::Max, None)
}

#[test]
fn every_mechanism_of_respond_runs_is_a_column_of_the_matrix() {
    let c = compare("matrix");
    let m = c
        .matrix
        .as_ref()
        .expect("a matrix: mechanisms are load cases");
    assert_eq!(m.columns, MECHANISMS);
    for (row, cells) in &m.rows {
        assert!(
            cells.iter().all(Option::is_some),
            "{row}: a mechanism without its value: {cells:?}"
        );
    }
    assert_eq!(m.verdicts[0].1.len(), 3);
    let out = text::render(&c);
    assert!(
        out.contains("mechanisms (max of each group and mechanism):"),
        "{out}"
    );
    let doc = json::document(&c, 0);
    assert_eq!(doc["matrix"]["columns_are"], "mechanism");
    assert_eq!(doc["matrix"]["columns"].as_array().unwrap().len(), 3);
}

#[test]
fn a_respond_comparison_names_each_stratum_once() {
    let c = compare("strata");
    let keys: Vec<&str> = c.strata_keys.iter().map(|k| k.name()).collect();
    assert_eq!(keys.len(), 1, "one key per stratum value: {keys:?}");
    let names: Vec<&str> = c.strata[0]
        .matched
        .iter()
        .map(|(n, _, _)| n.as_str())
        .collect();
    assert_eq!(names, MECHANISMS);
    let out = text::render(&c);
    assert!(
        out.contains("tested within ") && out.contains("eventfd 1->1 same (2 vs 2)"),
        "{out}"
    );
    assert!(
        !out.contains("same · eventfd"),
        "a stratum named twice:\n{out}"
    );
}

#[test]
fn lost_events_of_respond_runs_are_called_lost_not_missed() {
    let c = compare("lost");
    assert!(c.events);
    let out = text::render(&c);
    let row = out
        .lines()
        .find(|l| l.starts_with("lost "))
        .unwrap_or_else(|| panic!("no `lost` row:\n{out}"));
    // 3 lost of 2,003 events per operand on the loaded side.
    assert!(row.contains("0.150%"), "{row}");
    assert!(
        !out.lines().any(|l| l.starts_with("missed ")),
        "a `missed` row:\n{out}"
    );
    assert!(
        out.contains("lost = events lost in % of all events sent"),
        "{out}"
    );
    assert!(!out.contains("missed deadlines"), "{out}");
    let doc = json::document(&c, 0);
    let lost = &doc["statistics"][2];
    assert_eq!(
        (&lost["stat"], &lost["label"]),
        (&"missed".into(), &"lost".into())
    );
    assert_eq!(Stat::parse("lost", "--stat").unwrap(), Stat::Missed);
}

#[test]
fn measure_runs_keep_missed_and_load_cases() {
    let mut groups = operands("measure");
    for (_, runs) in &mut groups {
        for r in runs.iter_mut() {
            r.kind = RunKind::Measure;
        }
    }
    let groups = groups
        .into_iter()
        .enumerate()
        .map(|(i, (sel, runs))| Group::new(i, &sel, runs))
        .collect();
    let stats = [Stat::Missed];
    let c = Comparison::new(
        groups,
        &stats,
        Thresholds::parse(&[], "1us").unwrap(),
        Stat::Max,
        None,
    );
    assert!(!c.events);
    let out = text::render(&c);
    assert!(out.lines().any(|l| l.starts_with("missed ")), "{out}");
    assert!(
        out.contains("load cases (max of each group and load case):"),
        "{out}"
    );
}

/// A respond campaign's runs of one mechanism each keep their load cases as the matrix's
/// columns (`idle`, `cpu`), their lost events still `lost`.
#[test]
fn a_respond_campaign_keeps_its_load_cases_as_columns() {
    let mut groups = operands("campaign");
    for (k, (_, runs)) in groups.iter_mut().enumerate() {
        runs.retain(|r| r.tag("mechanism") == Some(MECHANISMS[0]));
        for r in runs.iter_mut() {
            r.tags.retain(|(key, _)| key != "mechanism");
            r.case = Some(["idle", "cpu"][k].into());
        }
    }
    let groups = groups
        .into_iter()
        .enumerate()
        .map(|(i, (sel, runs))| Group::new(i, &sel, runs))
        .collect();
    let c = Comparison::new(
        groups,
        &[Stat::Missed],
        Thresholds::parse(&[], "1us").unwrap(),
        Stat::Max,
        None,
    );
    assert!(c.events && !c.mechanisms);
    assert_eq!(c.matrix.as_ref().unwrap().columns, ["idle", "cpu"]);
    let out = text::render(&c);
    assert!(
        out.contains("load cases (max of each group and load case):"),
        "{out}"
    );
    assert!(out.lines().any(|l| l.starts_with("lost ")), "{out}");
}
