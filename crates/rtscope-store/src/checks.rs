//! The preflight audit a run was started with (`rtscope check`'s findings): one row per check.

use crate::{Result, RunId, Store, StoreError};
use rusqlite::params;

/// One check's finding as recorded with a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckRow {
    /// The check's stable id (`preempt_rt`, `governor`, …).
    pub check: String,
    /// `ok`, `warn`, `bad` or `unavailable`.
    pub verdict: String,
    /// What was read.
    pub evidence: String,
    /// The fix, for warn and bad.
    pub fix: Option<String>,
    /// The setting in a short comparable form (`performance`, `on`, …).
    pub setting: Option<String>,
}

impl Store {
    /// Records the audit of run `run` (replacing any recorded before).
    pub fn set_checks(&mut self, run: RunId, rows: &[CheckRow]) -> Result<()> {
        let path = self.path.clone();
        let err = move |source| StoreError::Sqlite {
            path: path.clone(),
            source,
        };
        let tx = self.conn.transaction().map_err(&err)?;
        tx.execute("DELETE FROM run_checks WHERE run_id = ?1", params![run])
            .map_err(&err)?;
        for r in rows {
            tx.execute(
                "INSERT INTO run_checks (run_id, check_id, verdict, evidence, fix, setting) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![run, r.check, r.verdict, r.evidence, r.fix, r.setting],
            )
            .map_err(&err)?;
        }
        tx.commit().map_err(&err)
    }

    /// The audit recorded with run `run`, in the order it was recorded; empty for runs
    /// recorded without one (imports, cyclictest runs, older rtscope).
    pub fn checks(&self, run: RunId) -> Result<Vec<CheckRow>> {
        let err = |source| StoreError::Sqlite {
            path: self.path.clone(),
            source,
        };
        let mut stmt = self
            .sql()
            .prepare(
                "SELECT check_id, verdict, evidence, fix, setting FROM run_checks WHERE run_id = ?1 ORDER BY seq",
            )
            .map_err(err)?;
        let rows = stmt
            .query_map(params![run], |r| {
                Ok(CheckRow {
                    check: r.get(0)?,
                    verdict: r.get(1)?,
                    evidence: r.get(2)?,
                    fix: r.get(3)?,
                    setting: r.get(4)?,
                })
            })
            .map_err(err)?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(err)?;
        Ok(rows)
    }
}
