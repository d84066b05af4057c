//! Store tests on real SQLite files in a temporary directory.

use super::*;
use rtscope_core::{Histogram, Nanos};

fn tmpdb(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rtscope-store-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("rtscope.db")
}

/// A measure run of one thread (the store's tests' and its modules' tests' run).
pub(crate) fn new_run(label: &str) -> NewRun {
    NewRun {
        kind: RunKind::Measure,
        label: Some(label.into()),
        tags: vec![("kernel".into(), "rt".into())],
        started: "2026-11-22T03:00:00Z".into(),
        started_unix_ns: 1_795_316_400_000_000_000,
        pid: std::process::id(),
        tool_version: "0.1.0".into(),
        command_line_json: r#"["rtscope","measure"]"#.into(),
        config_json: "{}".into(),
        environment: vec![("uname.release".into(), "6.18".into())],
        threads: vec![ThreadInfo {
            thread: 0,
            cpu: Some(0),
            policy: "fifo".into(),
            priority: 90,
            interval_ns: 1_000_000,
        }],
    }
}

fn hist(values: &[u64]) -> Histogram {
    let mut h = Histogram::new();
    for &v in values {
        h.record(Nanos(v));
    }
    h
}

fn checkpoint(h: &Histogram, progress: u64) -> Checkpoint<'_> {
    Checkpoint {
        progress_ns: progress,
        at_unix_ns: 1,
        threads: vec![ThreadStats {
            thread: 0,
            tid: 42,
            figures: crate::SampleFigures {
                samples: h.count(),
                min_ns: h.min().map(|n| n.0),
                mean_ns: Some(5.0),
                max_ns: h.max().map(|n| n.0),
                max_cycle: Some(1),
                max_offset_ns: Some(10),
            },
            missed: 0,
            raw_dropped: 0,
            histogram: h,
        }],
        series: vec![SeriesPoint {
            thread: 0,
            offset_ns: progress,
            length_ns: 1_000_000_000,
            samples: h.count(),
            min_ns: Some(4),
            max_ns: Some(6),
            mean_ns: Some(5.0),
            p99_ns: Some(6),
            missed: 0,
        }],
        events: vec![EventRow {
            thread: 0,
            cycle: 1,
            latency_ns: 6,
            offset_ns: 10,
            unix_ns: 99,
        }],
        samples: vec![RawChunk {
            thread: 0,
            first_cycle: progress,
            count: 1,
            data: codec::encode_samples(&[(progress, 5, progress + 5)], 1),
        }],
        monitor: MonitorBatch::default(),
    }
}

#[test]
fn a_run_round_trips_with_its_statistics_series_and_events() {
    let path = tmpdb("roundtrip");
    let mut s = Store::open(&path).unwrap();
    let id = s.begin_run(&new_run("idle")).unwrap();
    let h = hist(&[4, 5, 6]);
    s.checkpoint(id, &checkpoint(&h, 1_000_000_000)).unwrap();
    s.finish_run(
        id,
        &checkpoint(&h, 2_000_000_000),
        RunStatus::Complete,
        "2026-11-22T03:00:02Z",
        0,
    )
    .unwrap();
    drop(s);
    let s = Store::open(&path).unwrap();
    let d = s.run(id).unwrap();
    assert_eq!(d.summary.status, RunStatus::Complete);
    assert_eq!(d.summary.label.as_deref(), Some("idle"));
    assert_eq!(
        d.summary.tags,
        vec![("kernel".to_string(), "rt".to_string())]
    );
    assert_eq!(
        (d.summary.samples, d.summary.max_ns, d.summary.progress_ns),
        (3, Some(6), 2_000_000_000)
    );
    assert_eq!(d.threads[0].histogram, h);
    assert_eq!(d.series_points, 2);
    assert_eq!(d.events, 2);
    assert_eq!(s.series(id).unwrap()[1].offset_ns, 2_000_000_000);
    assert_eq!(
        d.environment,
        vec![("uname.release".to_string(), "6.18".to_string())]
    );
}

#[test]
fn a_restated_run_keeps_only_the_events_and_settings_of_its_end() {
    let path = tmpdb("restate");
    let mut s = Store::open(&path).unwrap();
    let id = s.begin_run(&new_run("noise")).unwrap();
    let h = hist(&[4, 5, 6]);
    // Two checkpoints wrote an event each; the end keeps its own one, with new settings.
    s.checkpoint(id, &checkpoint(&h, 1_000_000_000)).unwrap();
    s.checkpoint(id, &checkpoint(&h, 2_000_000_000)).unwrap();
    assert_eq!(s.run(id).unwrap().events, 2);
    s.restate_run(id, r#"{"platform":{}}"#).unwrap();
    let mut last = checkpoint(&h, 3_000_000_000);
    last.events[0].latency_ns = 77;
    s.finish_run(id, &last, RunStatus::Interrupted, "2026-11-22T03:00:03Z", 3)
        .unwrap();
    drop(s);
    let s = Store::open(&path).unwrap();
    let d = s.run(id).unwrap();
    assert_eq!(d.summary.status, RunStatus::Interrupted);
    assert_eq!(d.events, 1);
    assert_eq!(s.events(id).unwrap()[0].latency_ns, 77);
    assert_eq!(d.config_json, r#"{"platform":{}}"#);
}

#[test]
fn a_running_run_whose_writer_is_gone_reads_as_incomplete() {
    let path = tmpdb("incomplete");
    let mut s = Store::open(&path).unwrap();
    let mut r = new_run("killed");
    r.pid = 0x7fff_fff0; // no such process
    let id = s.begin_run(&r).unwrap();
    assert_eq!(s.summary(id).unwrap().status, RunStatus::Incomplete);
    let live = s.begin_run(&new_run("live")).unwrap();
    let h = hist(&[1]);
    let mut c = checkpoint(&h, 1);
    c.at_unix_ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i64;
    s.checkpoint(live, &c).unwrap();
    assert_eq!(s.summary(live).unwrap().status, RunStatus::Running);
}

#[test]
fn tags_and_deletion() {
    let path = tmpdb("tags");
    let mut s = Store::open(&path).unwrap();
    let id = s.begin_run(&new_run("x")).unwrap();
    s.set_tag(id, "board", Some("rpi4")).unwrap();
    s.set_tag(id, "kernel", None).unwrap();
    assert_eq!(
        s.summary(id).unwrap().tags,
        vec![("board".to_string(), "rpi4".to_string())]
    );
    s.delete_run(id).unwrap();
    assert!(matches!(s.summary(id), Err(StoreError::NoSuchRun(_))));
    assert!(matches!(s.delete_run(id), Err(StoreError::NoSuchRun(_))));
    assert!(s.list_runs().unwrap().is_empty());
}

#[test]
fn files_that_are_not_rtscope_databases_are_refused_by_name() {
    let path = tmpdb("garbage");
    std::fs::write(&path, b"this is not a database, just text, long enough to have a header page........................................").unwrap();
    let e = Store::open(&path).err().expect("refused").to_string();
    assert!(
        e.contains("rtscope.db") && e.contains("not an rtscope database"),
        "{e}"
    );

    let other = tmpdb("other");
    let c = rusqlite::Connection::open(&other).unwrap();
    c.execute_batch("CREATE TABLE recipes (name TEXT);")
        .unwrap();
    drop(c);
    let e = Store::open(&other).err().expect("refused").to_string();
    assert!(e.contains("another program"), "{e}");
}

#[test]
fn a_database_from_a_newer_rtscope_is_refused() {
    let path = tmpdb("newer");
    drop(Store::open(&path).unwrap());
    let c = rusqlite::Connection::open(&path).unwrap();
    c.pragma_update(None, "user_version", 99).unwrap();
    drop(c);
    let e = Store::open(&path).err().expect("refused").to_string();
    assert!(e.contains("newer rtscope") && e.contains("99"), "{e}");
}

#[test]
fn a_reader_sees_checkpoints_while_the_writer_is_open() {
    let path = tmpdb("concurrent");
    let mut w = Store::open(&path).unwrap();
    let id = w.begin_run(&new_run("long")).unwrap();
    let h = hist(&[7, 8]);
    w.checkpoint(id, &checkpoint(&h, 5)).unwrap();
    let r = Store::open(&path).unwrap();
    assert_eq!(r.summary(id).unwrap().samples, 2);
    assert_eq!(r.last_run().unwrap(), Some(id));
}

#[test]
fn a_version_1_database_is_migrated_to_the_current_schema() {
    let path = tmpdb("migrate");
    let c = rusqlite::Connection::open(&path).unwrap();
    c.execute_batch(schema::MIGRATIONS[0]).unwrap();
    c.pragma_update(None, "user_version", 1).unwrap();
    drop(c);
    let s = Store::open(&path).unwrap();
    let v: i64 = s
        .conn
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .unwrap();
    assert_eq!(v, schema::SCHEMA_VERSION);
    assert_eq!(s.raw_sample_size(1).unwrap(), (0, 0));
}

#[test]
fn monitor_data_round_trips_with_checkpoints_and_goes_with_the_run() {
    let path = tmpdb("monitor");
    let mut s = Store::open(&path).unwrap();
    let id = s.begin_run(&new_run("m")).unwrap();
    let h = hist(&[1000]);
    for k in 0..3u64 {
        let mut cp = checkpoint(&h, k * 1_000_000_000);
        cp.monitor = MonitorBatch {
            values: vec![
                MonitorValue {
                    metric: "temp.cpu-thermal".into(),
                    unit: "degC".into(),
                    offset_ns: k * 1_000_000_000,
                    value: 50.0 + k as f64,
                },
                MonitorValue {
                    metric: "irq_rate.39 dwc_otg.cpu0".into(),
                    unit: "1/s".into(),
                    offset_ns: k * 1_000_000_000,
                    value: 8000.0,
                },
            ],
            states: (k == 0)
                .then(|| MonitorState {
                    metric: "governor.cpu0".into(),
                    offset_ns: 0,
                    value: "performance".into(),
                })
                .into_iter()
                .collect(),
            top: vec![TopThread {
                offset_ns: k * 1_000_000_000,
                rank: 0,
                pid: 39,
                tid: 39,
                comm: "irq/39-dwc_otg".into(),
                cpu_percent: 30.5,
                last_cpu: 0,
                kernel: true,
                own: Some(false),
            }],
            sources: vec![MonitorSource {
                source: "thermal".into(),
                available: k > 0,
                why: "1 thermal zone".into(),
            }],
        };
        s.checkpoint(id, &cp).unwrap();
    }
    let series = s.monitor_series(id).unwrap();
    assert_eq!(series.len(), 2);
    let temp = series
        .iter()
        .find(|m| m.metric == "temp.cpu-thermal")
        .unwrap();
    assert_eq!(temp.unit, "degC");
    assert_eq!(
        temp.points,
        vec![(0, 50.0), (1_000_000_000, 51.0), (2_000_000_000, 52.0)]
    );
    assert_eq!(s.monitor_states(id).unwrap().len(), 1);
    let top = s.monitor_top(id).unwrap();
    assert_eq!(top.len(), 3);
    assert_eq!(top[2].comm, "irq/39-dwc_otg");
    assert!(top[2].kernel);
    let src = s.monitor_sources(id).unwrap();
    assert_eq!(src.len(), 1);
    assert!(src[0].available, "the last availability wins");
    s.delete_run(id).unwrap();
    assert!(s.monitor_series(id).unwrap().is_empty());
    assert!(s.monitor_top(id).unwrap().is_empty());
}

#[test]
fn loads_and_campaigns_round_trip() {
    let path = tmpdb("campaign");
    let mut s = Store::open(&path).unwrap();
    let cid = s
        .begin_campaign(&NewCampaign {
            name: "loadcases".into(),
            source: "preset:loadcases".into(),
            definition: "[campaign]\nname = \"loadcases\"\n".into(),
            started: "2026-11-22T03:00:00Z".into(),
            planned_runs: 2,
            command_line: vec!["rtscope".into(), "run".into()],
        })
        .unwrap();
    let a = s.begin_run(&new_run("a")).unwrap();
    let b = s.begin_run(&new_run("b")).unwrap();
    for (seq, run) in [(0, a), (1, b)] {
        s.add_campaign_run(
            cid,
            &CampaignRun {
                seq,
                run_id: run,
                scenario: "N:N".into(),
                load_case: if seq == 0 { "idle" } else { "hackbench" }.into(),
                repeat: 1,
                status: RunStatus::Running,
            },
        )
        .unwrap();
    }
    let load = LoadRow {
        name: "hackbench".into(),
        spec_json: r#"{"kind":"external","program":"hackbench","args":[]}"#.into(),
        command_line: vec!["hackbench".into(), "-s".into(), "128".into()],
        status: rtscope_core::LoadStatus::Ok,
        error: None,
        ran_ns: 5_000_000_000,
        metrics: vec![LoadMetric {
            name: "messages".into(),
            value: 1e6,
            unit: "messages".into(),
        }],
    };
    s.set_loads(b, std::slice::from_ref(&load)).unwrap();
    assert_eq!(s.loads(b).unwrap(), vec![load]);
    assert!(s.loads(a).unwrap().is_empty());
    let c = s.campaign_by_name("loadcases").unwrap().unwrap();
    assert_eq!(
        (c.id, c.status.as_str(), c.planned_runs),
        (cid, "running", 2)
    );
    let runs = s.campaign_runs(cid).unwrap();
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[1].load_case, "hackbench");
    // Started at a fixed time long ago with no checkpoint: a dead writer.
    assert_eq!(runs[1].status, RunStatus::Incomplete);
    let (of, place) = s.campaign_of(b).unwrap().unwrap();
    assert_eq!((of.id, place.seq), (cid, 1));
    s.finish_campaign(cid, RunStatus::Interrupted, "2026-11-22T03:01:00Z")
        .unwrap();
    assert_eq!(s.campaigns().unwrap()[0].status, RunStatus::Interrupted);
    s.delete_run(a).unwrap();
    assert_eq!(s.campaign_runs(cid).unwrap().len(), 1);
}

#[test]
fn the_preflight_audit_round_trips_in_order_and_goes_with_the_run() {
    let path = tmpdb("checks");
    let mut s = Store::open(&path).unwrap();
    let id = s.begin_run(&new_run("audited")).unwrap();
    assert!(s.checks(id).unwrap().is_empty(), "a run without an audit");
    let row = |check: &str, verdict: &str, fix: Option<&str>| CheckRow {
        check: check.into(),
        verdict: verdict.into(),
        evidence: format!("{check} evidence"),
        fix: fix.map(Into::into),
        setting: Some("x".into()),
    };
    let rows = vec![
        row("preempt_rt", "ok", None),
        row(
            "governor",
            "warn",
            Some("cpupower -c 0 frequency-set -g performance"),
        ),
        row("affinity", "bad", Some("taskset")),
    ];
    s.set_checks(id, &rows).unwrap();
    assert_eq!(s.checks(id).unwrap(), rows);
    assert_eq!(s.bundle(id, false).unwrap().checks, rows);
    s.set_checks(id, &rows[..1]).unwrap();
    assert_eq!(s.checks(id).unwrap(), rows[..1]);
    s.delete_run(id).unwrap();
    let left: i64 = s
        .conn
        .query_row("SELECT COUNT(*) FROM run_checks", [], |r| r.get(0))
        .unwrap();
    assert_eq!(left, 0);
}

#[test]
fn a_run_whose_writer_is_known_gone_is_marked_incomplete_once() {
    let path = tmpdb("writer-gone");
    let mut s = Store::open(&path).unwrap();
    // Stored as running (a fetched run's writer pid means nothing on this host).
    let id = s.begin_run(&new_run("fetched")).unwrap();
    assert!(s.mark_writer_gone(id).unwrap());
    assert_eq!(s.summary(id).unwrap().status, RunStatus::Incomplete);
    assert!(
        !s.mark_writer_gone(id).unwrap(),
        "only a running run is marked"
    );
}

/// Processes that open a new database at the same moment (a campaign starting while
/// `rtscope runs` polls its file) all succeed: one creates the schema, the others wait for it
/// or see it whole, and none takes the half-made file for another program's database.
#[test]
fn opening_a_new_database_from_many_connections_at_once_never_refuses_it() {
    const OPENERS: usize = 4;
    for round in 0..100 {
        let path = tmpdb(&format!("concurrent-create-{round}"));
        let start = std::sync::Arc::new(std::sync::Barrier::new(OPENERS));
        let openers: Vec<_> = (0..OPENERS)
            .map(|_| {
                let (path, start) = (path.clone(), start.clone());
                std::thread::spawn(move || {
                    start.wait();
                    Store::open(&path).map(|_| ()).map_err(|e| e.to_string())
                })
            })
            .collect();
        for o in openers {
            let r = o.join().unwrap();
            assert!(r.is_ok(), "round {round}: {}", r.unwrap_err());
        }
        let _ = std::fs::remove_file(&path);
    }
}

/// `runs delete 2` then a new run: the new run was "run 2" again (SQLite reuses the largest
/// rowid). A run id is never given twice, also across reopening and after a merge.
#[test]
fn a_run_id_is_never_given_twice() {
    let path = tmpdb("ids");
    let mut s = Store::open(&path).unwrap();
    let a = s.begin_run(&new_run("a")).unwrap();
    let b = s.begin_run(&new_run("b")).unwrap();
    assert_eq!((a, b), (1, 2));
    s.delete_run(b).unwrap();
    let c = s.begin_run(&new_run("c")).unwrap();
    assert_eq!(c, 3, "the deleted run's id was given again");
    s.delete_run(c).unwrap();
    drop(s);
    let mut s = Store::open(&path).unwrap();
    assert_eq!(s.begin_run(&new_run("d")).unwrap(), 4);
    // A merged run gets a new id too, above the deleted ones.
    let other = tmpdb("ids-other");
    let mut o = Store::open(&other).unwrap();
    o.begin_run(&new_run("theirs")).unwrap();
    drop(o);
    s.delete_run(4).unwrap();
    let merged = s.merge_from(&other, &[]).unwrap();
    assert_eq!(merged.added.iter().map(|a| a.0).collect::<Vec<_>>(), [5]);
    assert_eq!(s.begin_run(&new_run("e")).unwrap(), 6);
}

/// A database of schema 6 whose newest run was deleted: the migration starts the sequence at
/// the largest id still there (what was deleted before it cannot be known), then never goes
/// back.
#[test]
fn the_id_sequence_migration_starts_at_the_largest_id() {
    let path = tmpdb("ids-migrate");
    let c = rusqlite::Connection::open(&path).unwrap();
    for m in &schema::MIGRATIONS[..6] {
        c.execute_batch(m).unwrap();
    }
    c.execute_batch(
        "INSERT INTO runs (id, kind, status, started, started_unix_ns, pid, tool_version, command_line, config, uuid) VALUES (7, 'measure', 'complete', '2026-01-01T00:00:00Z', 1, 1, 'x', '[]', '{}', 'u7')",
    )
    .unwrap();
    c.pragma_update(None, "user_version", 6).unwrap();
    drop(c);
    let mut s = Store::open(&path).unwrap();
    s.delete_run(7).unwrap();
    assert_eq!(s.begin_run(&new_run("next")).unwrap(), 8);
}

/// N8: a database merged from elsewhere carried an ESC in a tag value past the check every
/// other input gets; such a database is refused whole.
#[test]
fn a_database_with_control_characters_in_its_tags_is_not_merged() {
    let other = tmpdb("merge-esc");
    let mut o = Store::open(&other).unwrap();
    let id = o.begin_run(&new_run("theirs")).unwrap();
    o.set_tag(id, "rack", Some("1\u{1b}[31m")).unwrap();
    drop(o);
    let mut s = Store::open(&tmpdb("merge-esc-into")).unwrap();
    let e = s.merge_from(&other, &[]).unwrap_err().to_string();
    assert!(e.contains("tag value") && e.contains("\\x1b"), "{e}");
    assert!(s.list_runs().unwrap().is_empty());
}

/// A database of `n` runs in two campaigns (odd runs in none), some finished, some with an
/// audit, raw samples or extra tags; their ids.
fn many_runs(name: &str, n: u32) -> (Store, Vec<RunId>) {
    let mut s = Store::open(&tmpdb(name)).unwrap();
    let campaign = |s: &mut Store, name: &str| {
        s.begin_campaign(&NewCampaign {
            name: name.into(),
            source: "preset:x".into(),
            definition: String::new(),
            started: "2026-11-22T03:00:00Z".into(),
            planned_runs: n,
            command_line: vec!["rtscope".into(), "run".into()],
        })
        .unwrap()
    };
    let cids = [campaign(&mut s, "first"), campaign(&mut s, "second")];
    let mut ids = Vec::new();
    for i in 0..n {
        let mut nr = new_run(&format!("run{i}"));
        nr.tags.push(("case".into(), format!("c{}", i % 3)));
        let id = s.begin_run(&nr).unwrap();
        let h = hist(&[4, 5, 6 + u64::from(i)]);
        if i % 4 != 3 {
            s.finish_run(
                id,
                &checkpoint(&h, 1_000_000_000),
                RunStatus::Complete,
                "2026-11-22T03:00:02Z",
                0,
            )
            .unwrap();
        }
        if i % 3 == 0 {
            let row = CheckRow {
                check: "governor".into(),
                verdict: "warn".into(),
                evidence: format!("run {i}"),
                fix: None,
                setting: Some("powersave".into()),
            };
            s.set_checks(id, &[row]).unwrap();
        }
        if i % 2 == 0 {
            let place = CampaignRun {
                seq: i / 2,
                run_id: id,
                scenario: "N:N".into(),
                load_case: format!("case{i}"),
                repeat: 1,
                status: RunStatus::Running,
            };
            s.add_campaign_run(cids[(i / 2 % 2) as usize], &place)
                .unwrap();
        }
        ids.push(id);
    }
    (s, ids)
}

#[test]
fn many_runs_read_at_once_are_what_they_are_read_one_by_one() {
    let (s, mut ids) = many_runs("facts", 12);
    ids.reverse();
    ids.push(ids[3]);
    let facts = s.run_facts(&ids).unwrap();
    assert_eq!(facts.len(), ids.len());
    for (f, &id) in facts.iter().zip(&ids) {
        assert_eq!(f.detail.summary.id, id);
        assert_eq!(
            format!("{:?}", f.detail),
            format!("{:?}", s.run(id).unwrap())
        );
        assert_eq!(
            format!("{:?}", f.campaign),
            format!("{:?}", s.campaign_of(id).unwrap())
        );
        assert_eq!(f.checks, s.checks(id).unwrap());
    }
    assert!(
        facts.iter().any(|f| f.campaign.is_some()) && facts.iter().any(|f| f.campaign.is_none())
    );
    assert!(facts
        .iter()
        .any(|f| f.detail.summary.status == RunStatus::Incomplete));
    assert!(s.run_facts(&[]).unwrap().is_empty());
    let missing = s.run_facts(&[ids[0], 9_999]).unwrap_err().to_string();
    assert_eq!(missing, s.run(9_999).unwrap_err().to_string());
}

#[test]
fn reading_many_runs_takes_as_many_statements_for_3_runs_as_for_30() {
    let count = |n: u32| {
        let (s, ids) = many_runs(&format!("count{n}"), n);
        let before = s.statements();
        let facts = s.run_facts(&ids).unwrap();
        assert_eq!(facts.len(), n as usize);
        s.statements() - before
    };
    let (small, large) = (count(3), count(30));
    assert!(small > 0, "the counter counts");
    assert_eq!(small, large, "statements for 3 runs, for 30 runs");
    // Run by run, the count grows with the runs: the counter sees it.
    let (s, ids) = many_runs("count-one-by-one", 3);
    let before = s.statements();
    for &id in &ids {
        s.run(id).unwrap();
    }
    assert!(s.statements() - before >= 3 * 5);
}

#[test]
fn durable_commits_sync_each_transaction() {
    let path = tmpdb("durable");
    let s = Store::open(&path).unwrap();
    let mode = |s: &Store| -> i64 {
        s.conn
            .pragma_query_value(None, "synchronous", |r| r.get(0))
            .unwrap()
    };
    // NORMAL (1) after open; FULL (2) for rtscope watch, whose windows must survive a power
    // loss once committed (docs/watch.md).
    assert_eq!(mode(&s), 1);
    s.set_durable_commits().unwrap();
    assert_eq!(mode(&s), 2);
}

#[test]
fn a_reading_command_never_creates_a_database_and_names_the_missing_one_with_its_fix() {
    let path = tmpdb("open-existing");
    let e = Store::open_existing(Some(&path)).err().unwrap();
    assert!(matches!(&e, StoreError::Missing(p) if *p == path), "{e}");
    assert_eq!(
        e.to_string(),
        format!("no run database at {}", path.display())
    );
    assert!(e.hint().contains("pass --db PATH"), "{}", e.hint());
    assert!(
        !path.exists(),
        "a reading command created {}",
        path.display()
    );
    let mut s = Store::open(&path).unwrap();
    let id = s.begin_run(&new_run("existing")).unwrap();
    drop(s);
    let s = Store::open_existing(Some(&path)).unwrap();
    assert_eq!(
        s.run(id).unwrap().summary.label.as_deref(),
        Some("existing")
    );
}
