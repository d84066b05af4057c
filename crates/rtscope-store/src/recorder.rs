//! What an explained run observed with (issue 68 item 4): the recorder, the trace events it
//! enabled and the kernel stacks it took, beside the run's explanation summary
//! (`spike_summaries`, since schema version 11). A run without a summary ran no recorder.

use crate::{Result, RunId, Store};
use rusqlite::{params, OptionalExtension};

pub use rtscope_core::recorder::Recorder;

/// What the record says of a run's recorder.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Recorded {
    /// The run was not explained: no recorder ran.
    #[default]
    None,
    /// Explained by an rtscope that did not record its recorder (schema before 11): the tier.
    NotRecorded(String),
    /// The tier (`flight_recorder`, `timerlat`, `coarse`) and the recorder.
    Ran(String, Recorder),
}

impl Recorded {
    /// The recorder, if its facts are recorded.
    pub fn row(&self) -> Option<&Recorder> {
        match self {
            Recorded::Ran(_, r) => Some(r),
            _ => None,
        }
    }
}

impl Store {
    /// Records what explained run `run` observed with, beside its summary (written before by
    /// [`Store::write_spikes`], which replaces the summary and so these too).
    pub fn write_recorder(&mut self, run: RunId, r: &Recorder) -> Result<()> {
        self.conn
            .execute(
                "UPDATE spike_summaries SET recorder=?2, events=?3, stacks=?4 WHERE run_id=?1",
                params![run, r.recorder, r.events.join("\n"), r.stacks],
            )
            .map(drop)
            .map_err(self.err())
    }

    /// What run `run` observed with: nothing (not explained), not recorded (an older
    /// rtscope), or its recorder.
    pub fn recorder(&self, run: RunId) -> Result<Recorded> {
        type Cols = (String, Option<String>, Option<String>, Option<String>);
        let row: Option<Cols> = self
            .sql()
            .query_row(
                "SELECT tier, recorder, events, stacks FROM spike_summaries WHERE run_id=?1",
                params![run],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
            )
            .optional()
            .map_err(self.err())?;
        Ok(match row {
            None => Recorded::None,
            Some((tier, None, _, _)) => Recorded::NotRecorded(tier),
            Some((tier, Some(recorder), events, stacks)) => Recorded::Ran(
                tier,
                Recorder {
                    recorder,
                    events: events
                        .unwrap_or_default()
                        .lines()
                        .filter(|l| !l.is_empty())
                        .map(String::from)
                        .collect(),
                    stacks: stacks.unwrap_or_else(|| "none".into()),
                },
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::MIGRATIONS;
    use crate::{NewRun, SpikeSummaryRow};

    fn run() -> NewRun {
        crate::tests::new_run("recorder")
    }

    fn summary() -> SpikeSummaryRow {
        SpikeSummaryRow {
            tier: "flight_recorder".into(),
            tier_reason: None,
            threshold_ns: 100_000,
            clock_start_ns: 0,
            summary: "{}".into(),
        }
    }

    fn tmp(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "rtscope-store-recorder-{name}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir.join("rtscope.db")
    }

    #[test]
    fn an_explained_run_records_its_recorder_and_a_plain_run_none() {
        let path = tmp("round");
        let mut s = Store::open(&path).unwrap();
        let plain = s.begin_run(&run()).unwrap();
        let id = s.begin_run(&run()).unwrap();
        s.write_spikes(id, &summary(), &[]).unwrap();
        assert_eq!(
            s.recorder(id).unwrap(),
            Recorded::NotRecorded("flight_recorder".into())
        );
        let row = Recorder {
            recorder: "tracefs instance rtscope-4711-0".into(),
            events: vec![
                "sched:sched_switch".into(),
                "sched:sched_waking".into(),
                "irq:softirq_entry".into(),
            ],
            stacks: "none".into(),
        };
        s.write_recorder(id, &row).unwrap();
        assert_eq!(
            s.recorder(id).unwrap(),
            Recorded::Ran("flight_recorder".into(), row.clone())
        );
        assert_eq!(row.events_words(), "3 trace events (sched, irq)");
        assert_eq!(row.cost().unwrap(), "tracefs, 3 events");
        let stacked = Recorder {
            stacks: "late-only eBPF programs: switch (eBPF on raw tracepoints)".into(),
            ..row
        };
        assert!(stacked
            .cost()
            .unwrap()
            .ends_with(", stacks: late-only eBPF programs: switch (eBPF on raw tracepoints)"));
        assert_eq!(s.recorder(plain).unwrap(), Recorded::None);
        assert_eq!(s.bundle(plain, false).unwrap().recorder, Recorded::None);
        let coarse = Recorder {
            recorder: "none".into(),
            events: vec![],
            stacks: "none".into(),
        };
        assert_eq!(
            (coarse.cost(), coarse.events_words()),
            (None, "no trace events".into())
        );
    }

    #[test]
    fn a_version_10_database_upgrades_with_its_explained_runs_read_as_not_recorded() {
        let path = tmp("v10");
        let c = rusqlite::Connection::open(&path).unwrap();
        for m in &MIGRATIONS[..10] {
            c.execute_batch(m).unwrap();
        }
        c.pragma_update(None, "user_version", 10).unwrap();
        c.execute_batch(
            "INSERT INTO runs (id, kind, status, started, started_unix_ns, pid, tool_version, command_line, config) \
             VALUES (1, 'measure', 'complete', '2026-11-01T00:00:00Z', 1, 1, '0', '[]', '{}'), \
                    (2, 'measure', 'complete', '2026-11-01T00:00:00Z', 1, 1, '0', '[]', '{}'); \
             INSERT INTO spike_summaries (run_id, tier, tier_reason, threshold_ns, clock_start_ns, summary) \
             VALUES (1, 'timerlat', NULL, 100000, 0, '{}');",
        )
        .unwrap();
        drop(c);
        let mut s = Store::open(&path).unwrap();
        let v: i64 = s
            .conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .unwrap();
        assert_eq!(v, crate::schema::SCHEMA_VERSION);
        assert_eq!(
            s.recorder(1).unwrap(),
            Recorded::NotRecorded("timerlat".into())
        );
        assert_eq!(s.recorder(2).unwrap(), Recorded::None);
        assert_eq!(s.spike_summary(1).unwrap().unwrap().tier, "timerlat");
        let row = Recorder {
            recorder: "tracefs instance rtscope-1-0 (timerlat tracer)".into(),
            events: vec!["osnoise:irq_noise".into()],
            stacks: "none".into(),
        };
        s.write_recorder(1, &row).unwrap();
        assert_eq!(s.recorder(1).unwrap().row(), Some(&row));
    }
}
