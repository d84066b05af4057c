//! `--explain` records: the explained spikes of a run (`spikes`) and its summary
//! (`spike_summaries`). The store keeps the typed attribution as JSON it does not interpret;
//! the scalar columns make the table queryable in SQL.

use crate::{Result, RunId, Store};
use rusqlite::{params, OptionalExtension};

/// One explained spike.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpikeRow {
    /// CPU of the measuring thread.
    pub cpu: u32,
    /// Its thread ID.
    pub tid: i32,
    /// Wake-up time from the run's start (ns).
    pub offset_ns: u64,
    /// Wake-up latency (ns).
    pub latency_ns: u64,
    /// `flight_recorder`, `coarse` or `timerlat`.
    pub tier: String,
    /// The category with the largest share, as text.
    pub culprit: Option<String>,
    /// Its time (ns).
    pub culprit_ns: Option<u64>,
    /// The attribution or coarse context, JSON.
    pub detail: String,
}

/// The explanation summary of a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpikeSummaryRow {
    /// The tier used.
    pub tier: String,
    /// Why a better tier was not used.
    pub tier_reason: Option<String>,
    /// Threshold (ns).
    pub threshold_ns: u64,
    /// The run's start on its clock (ns): spike times in `summary` minus this are offsets.
    pub clock_start_ns: u64,
    /// Counts, culprits and worst spikes, JSON.
    pub summary: String,
}

/// A run's explanation summary as `compare` reads it, with the command line it was run by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExplainedRun {
    /// The run.
    pub run: RunId,
    /// Its explanation summary.
    pub summary: SpikeSummaryRow,
    /// Its command line (JSON array of strings).
    pub command_line_json: String,
}

impl Store {
    /// Writes the explanation of a run (replacing an earlier one).
    pub fn write_spikes(
        &mut self,
        run: RunId,
        summary: &SpikeSummaryRow,
        spikes: &[SpikeRow],
    ) -> Result<()> {
        self.require(run)?;
        let path = self.path().to_path_buf();
        let err = |source| crate::StoreError::Sqlite {
            path: path.clone(),
            source,
        };
        let tx = self.conn.transaction().map_err(err)?;
        tx.execute("DELETE FROM spikes WHERE run_id=?1", params![run])
            .map_err(err)?;
        tx.execute(
            "INSERT OR REPLACE INTO spike_summaries (run_id, tier, tier_reason, threshold_ns, clock_start_ns, summary) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![run, summary.tier, summary.tier_reason, summary.threshold_ns as i64, summary.clock_start_ns as i64, summary.summary],
        )
        .map_err(err)?;
        {
            let mut st = tx
                .prepare("INSERT INTO spikes (run_id, seq, cpu, tid, offset_ns, latency_ns, tier, culprit, culprit_ns, detail) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)")
                .map_err(err)?;
            for (i, s) in spikes.iter().enumerate() {
                st.execute(params![
                    run,
                    i as i64,
                    s.cpu,
                    s.tid,
                    s.offset_ns as i64,
                    s.latency_ns as i64,
                    s.tier,
                    s.culprit,
                    s.culprit_ns.map(|v| v as i64),
                    s.detail
                ])
                .map_err(err)?;
            }
        }
        tx.commit().map_err(err)
    }

    /// The explanation summary of a run, if it was explained.
    pub fn spike_summary(&self, run: RunId) -> Result<Option<SpikeSummaryRow>> {
        self.sql()
            .query_row(
                "SELECT tier, tier_reason, threshold_ns, clock_start_ns, summary FROM spike_summaries WHERE run_id=?1",
                params![run],
                |r| {
                    Ok(SpikeSummaryRow {
                        tier: r.get(0)?,
                        tier_reason: r.get(1)?,
                        threshold_ns: r.get::<_, i64>(2)?.max(0) as u64,
                        clock_start_ns: r.get::<_, i64>(3)?.max(0) as u64,
                        summary: r.get(4)?,
                    })
                },
            )
            .optional()
            .map_err(self.err())
    }

    /// The explanation summaries of `runs` with each run's command line (JSON array), in one
    /// statement however many runs there are (`compare` reads a group's); runs not explained
    /// are absent.
    pub fn spike_summaries(&self, runs: &[RunId]) -> Result<Vec<ExplainedRun>> {
        if runs.is_empty() {
            return Ok(Vec::new());
        }
        // Ids are integers: written into the statement, they need no parameter per run.
        let list = runs
            .iter()
            .map(i64::to_string)
            .collect::<Vec<_>>()
            .join(",");
        let mut st = self
            .sql()
            .prepare(&format!(
                "SELECT s.run_id, s.tier, s.tier_reason, s.threshold_ns, s.clock_start_ns, s.summary, r.command_line \
                 FROM spike_summaries s JOIN runs r ON r.id = s.run_id WHERE s.run_id IN ({list}) ORDER BY s.run_id"
            ))
            .map_err(self.err())?;
        let rows = st
            .query_map([], |r| {
                Ok(ExplainedRun {
                    run: r.get(0)?,
                    summary: SpikeSummaryRow {
                        tier: r.get(1)?,
                        tier_reason: r.get(2)?,
                        threshold_ns: r.get::<_, i64>(3)?.max(0) as u64,
                        clock_start_ns: r.get::<_, i64>(4)?.max(0) as u64,
                        summary: r.get(5)?,
                    },
                    command_line_json: r.get(6)?,
                })
            })
            .map_err(self.err())?;
        rows.collect::<std::result::Result<Vec<_>, _>>()
            .map_err(self.err())
    }

    /// The explained spikes of a run, in wake-up order.
    pub fn spikes(&self, run: RunId) -> Result<Vec<SpikeRow>> {
        let mut st = self
            .sql()
            .prepare("SELECT cpu, tid, offset_ns, latency_ns, tier, culprit, culprit_ns, detail FROM spikes WHERE run_id=?1 ORDER BY seq")
            .map_err(self.err())?;
        let rows = st
            .query_map(params![run], |r| {
                Ok(SpikeRow {
                    cpu: r.get(0)?,
                    tid: r.get(1)?,
                    offset_ns: r.get::<_, i64>(2)?.max(0) as u64,
                    latency_ns: r.get::<_, i64>(3)?.max(0) as u64,
                    tier: r.get(4)?,
                    culprit: r.get(5)?,
                    culprit_ns: r.get::<_, Option<i64>>(6)?.map(|v| v.max(0) as u64),
                    detail: r.get(7)?,
                })
            })
            .map_err(self.err())?;
        rows.collect::<std::result::Result<Vec<_>, _>>()
            .map_err(self.err())
    }
}

#[cfg(test)]
mod tests {
    use crate::{NewRun, RunKind, Store, ThreadInfo};

    #[test]
    fn spikes_round_trip_and_go_with_their_run() {
        let dir = std::env::temp_dir().join(format!("rtscope-store-spikes-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let mut s = Store::open(&dir.join("rtscope.db")).unwrap();
        let id = s
            .begin_run(&NewRun {
                kind: RunKind::Measure,
                label: None,
                tags: vec![],
                started: "2026-11-22T03:00:00Z".into(),
                started_unix_ns: 1,
                pid: 1,
                tool_version: "0".into(),
                command_line_json: "[]".into(),
                config_json: "{}".into(),
                environment: vec![],
                threads: vec![ThreadInfo {
                    thread: 0,
                    cpu: Some(1),
                    policy: "fifo".into(),
                    priority: 90,
                    interval_ns: 1_000_000,
                }],
            })
            .unwrap();
        assert_eq!(s.spike_summary(id).unwrap(), None);
        let summary = super::SpikeSummaryRow {
            tier: "flight_recorder".into(),
            tier_reason: None,
            threshold_ns: 1_500_000,
            clock_start_ns: 77,
            summary: "{}".into(),
        };
        let spike = super::SpikeRow {
            cpu: 1,
            tid: 42,
            offset_ns: 5_000_000_000,
            latency_ns: 2_380_000,
            tier: "flight_recorder".into(),
            culprit: Some("thread culprit:4711:rt99".into()),
            culprit_ns: Some(2_300_000),
            detail: "{}".into(),
        };
        s.write_spikes(id, &summary, &[spike.clone(), spike.clone()])
            .unwrap();
        s.write_spikes(id, &summary, std::slice::from_ref(&spike))
            .unwrap();
        assert_eq!(s.spike_summary(id).unwrap(), Some(summary.clone()));
        let batch = s.spike_summaries(&[id, id + 1000]).unwrap();
        assert_eq!(batch.len(), 1, "the run not in the store is absent");
        assert_eq!((batch[0].run, &batch[0].summary), (id, &summary));
        assert_eq!(batch[0].command_line_json, "[]");
        assert!(s.spike_summaries(&[]).unwrap().is_empty());
        assert_eq!(s.spikes(id).unwrap(), vec![spike]);
        s.delete_run(id).unwrap();
        assert!(s.spikes(id).unwrap().is_empty());
        std::fs::remove_dir_all(dir).unwrap();
    }
}
