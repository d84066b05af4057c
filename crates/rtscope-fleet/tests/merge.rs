//! `Store::merge_from` (rtscope-store) on full synthetic runs: everything recorded with a run
//! arrives, merging twice adds nothing, tags are set, campaigns come along, and a UUID shared by
//! two different runs refuses the whole merge. (Here because the synthetic runs of
//! rtscope-testkit, which depends on the store, have every table filled.)

use rtscope_store::{CampaignRun, NewCampaign, RunBundle, RunStatus, Store, StoreError};
use rtscope_testkit::synthetic::{write_run, SyntheticRun};
use std::path::PathBuf;

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("rtscope-fleet-m-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn board_db(path: &std::path::Path, seed: u64) -> Store {
    let mut s = Store::open(path).unwrap();
    let cid = s
        .begin_campaign(&NewCampaign {
            name: "nightly".into(),
            source: "preset:quick".into(),
            definition: "[campaign]\n".into(),
            started: "2026-11-22T03:00:00Z".into(),
            planned_runs: 2,
            command_line: vec!["rtscope".into(), "run".into()],
        })
        .unwrap();
    for (seq, label) in [(1, "idle"), (2, "load")] {
        let spec = SyntheticRun {
            label: label.into(),
            samples: 3_000,
            seed: seed * 10 + seq as u64,
            ..SyntheticRun::default()
        };
        let id = write_run(&mut s, &spec).unwrap();
        s.add_campaign_run(
            cid,
            &CampaignRun {
                seq,
                run_id: id,
                scenario: "N:N".into(),
                load_case: label.into(),
                repeat: 1,
                status: RunStatus::Complete,
            },
        )
        .unwrap();
    }
    s
}

/// What a run is, without the ids that differ between databases.
fn essence(b: &RunBundle) -> String {
    let d = &b.detail;
    format!(
        "{:?}|{:?}|{}|{:?}|{:?}|{:?}|{:?}|{:?}|{:?}|{:?}|{:?}|{:?}",
        d.summary.label,
        d.summary.status,
        d.command_line_json,
        d.environment,
        d.threads
            .iter()
            .map(|t| (&t.histogram, t.figures.max_ns, t.figures.samples))
            .collect::<Vec<_>>(),
        b.series,
        b.events,
        b.monitors
            .iter()
            .map(|m| (&m.metric, &m.points))
            .collect::<Vec<_>>(),
        b.states,
        b.top,
        b.loads,
        b.campaign
            .as_ref()
            .map(|(c, r)| (&c.name, r.seq, &r.load_case)),
    )
}

#[test]
fn merging_copies_everything_once_and_tags_the_runs() {
    let d = dir("once");
    let a = board_db(&d.join("a.db"), 1);
    let mut main = Store::open(&d.join("main.db")).unwrap();
    let tags = vec![("board".to_string(), "a".to_string())];
    let r = main.merge_from(&d.join("a.db"), &tags).unwrap();
    assert_eq!((r.added.len(), r.skipped, r.campaigns_added), (2, 0, 1));
    for (here, there, uuid) in &r.added {
        let theirs = a.bundle(*there, true).unwrap();
        let ours = main.bundle(*here, true).unwrap();
        assert_eq!(essence(&theirs), essence(&ours));
        assert_eq!(&main.identity(*here).unwrap(), &a.identity(*there).unwrap());
        assert_eq!(uuid.len(), 36);
        assert!(ours
            .detail
            .summary
            .tags
            .contains(&("board".into(), "a".into())));
        assert!(ours
            .detail
            .summary
            .tags
            .contains(&("kernel".into(), "rt".into())));
    }
    // Twice: nothing added.
    let again = main.merge_from(&d.join("a.db"), &tags).unwrap();
    assert_eq!(
        (again.added.len(), again.skipped, again.campaigns_added),
        (0, 2, 0)
    );
    assert_eq!(main.list_runs().unwrap().len(), 2);
    // A second board: its runs join, its campaign is its own.
    board_db(&d.join("b.db"), 2);
    let rb = main
        .merge_from(&d.join("b.db"), &[("board".into(), "b".into())])
        .unwrap();
    assert_eq!((rb.added.len(), rb.campaigns_added), (2, 1));
    assert_eq!(main.list_runs().unwrap().len(), 4);
    assert_eq!(main.campaigns().unwrap().len(), 2);
    // Into itself: refused.
    let e = main.merge_from(&d.join("main.db"), &[]).unwrap_err();
    assert!(e.to_string().contains("merged into"), "{e}");
    let e = main.merge_from(&d.join("missing.db"), &[]).unwrap_err();
    assert!(e.to_string().contains("no such database"), "{e}");
    std::fs::remove_dir_all(d).unwrap();
}

#[test]
fn a_uuid_shared_by_two_different_runs_refuses_the_merge() {
    let d = dir("conflict");
    let a = board_db(&d.join("a.db"), 1);
    let first = a.identity(1).unwrap().uuid;
    drop(a);
    let mut b = board_db(&d.join("b.db"), 2);
    drop(b);
    // Forge: b's second run takes a's first run's UUID.
    let c = forge_uuid(&d.join("b.db"), &first);
    assert!(c, "sqlite3 is needed to forge a conflict");
    b = Store::open(&d.join("b.db")).unwrap();
    let mut main = Store::open(&d.join("main.db")).unwrap();
    main.merge_from(&d.join("a.db"), &[]).unwrap();
    let e = main.merge_from(&d.join("b.db"), &[]).unwrap_err();
    assert!(matches!(e, StoreError::UuidConflict { .. }), "{e}");
    assert!(e.to_string().contains(&first));
    // Nothing of b arrived, not even its run before the conflicting one.
    assert_eq!(main.list_runs().unwrap().len(), 2);
    drop(b);
    std::fs::remove_dir_all(d).unwrap();
}

/// Sets run 2's UUID with the sqlite3 shell; false when it is not installed.
fn forge_uuid(db: &std::path::Path, uuid: &str) -> bool {
    std::process::Command::new("sqlite3")
        .arg(db)
        .arg(format!("UPDATE runs SET uuid = '{uuid}' WHERE id = 2;"))
        .status()
        .is_ok_and(|s| s.success())
}
