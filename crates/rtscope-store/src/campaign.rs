//! Campaigns (a plan of runs: scenarios × load cases × repeats) and the loads a run was
//! measured under.

use crate::read::effective_status;
use crate::{Result, RunId, RunStatus, Store, StoreError};
use rtscope_core::LoadStatus;
use rusqlite::{params, OptionalExtension};

/// A campaign's id.
pub type CampaignId = i64;

/// What is known when a campaign starts.
#[derive(Debug, Clone)]
pub struct NewCampaign {
    /// Name, e.g. `loadcases`.
    pub name: String,
    /// The file it came from, or `preset:NAME`.
    pub source: String,
    /// The campaign TOML text as run (kept for `--resume`).
    pub definition: String,
    /// RFC 3339 start.
    pub started: String,
    /// Runs in the plan.
    pub planned_runs: u32,
    /// The command line.
    pub command_line: Vec<String>,
}

/// A campaign as stored.
#[derive(Debug, Clone)]
pub struct CampaignSummary {
    /// Id.
    pub id: CampaignId,
    /// Name.
    pub name: String,
    /// File path or `preset:NAME`.
    pub source: String,
    /// The TOML text.
    pub definition: String,
    /// RFC 3339 start.
    pub started: String,
    /// RFC 3339 end, when it ended.
    pub ended: Option<String>,
    /// Where it is (`incomplete`: its process is gone).
    pub status: RunStatus,
    /// Runs in the plan.
    pub planned_runs: u32,
    /// The command line.
    pub command_line: Vec<String>,
}

/// One run of a campaign.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CampaignRun {
    /// Position in the plan, from 1.
    pub seq: u32,
    /// The run.
    pub run_id: RunId,
    /// Scenario name.
    pub scenario: String,
    /// Load case name.
    pub load_case: String,
    /// Repeat, from 1.
    pub repeat: u32,
    /// The run's status.
    pub status: RunStatus,
}

/// One thing a load counted.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LoadMetric {
    /// Name, e.g. `messages`.
    pub name: String,
    /// Value.
    pub value: f64,
    /// Unit, e.g. `messages`, `MB/s`.
    pub unit: String,
}

/// A load a run was measured under, and what it did.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadRow {
    /// Name, e.g. `messaging`, `hackbench`.
    pub name: String,
    /// The load spec (JSON).
    pub spec_json: String,
    /// The exact argv executed.
    pub command_line: Vec<String>,
    /// How it ended.
    pub status: LoadStatus,
    /// What went wrong.
    pub error: Option<String>,
    /// How long it ran, ns.
    pub ran_ns: u64,
    /// What it counted.
    pub metrics: Vec<LoadMetric>,
}

/// A stored load status; one this version does not know (a database written by another)
/// reads as failed, the stored text named in the error: the run cannot be said to have been
/// measured under that load.
fn load_status(stored: String, error: Option<String>) -> (LoadStatus, Option<String>) {
    match LoadStatus::parse(&stored) {
        Some(s) => (s, error),
        None => {
            let unknown = format!("unknown load status {stored:?} in the database");
            let error = Some(error.map_or(unknown.clone(), |e| format!("{e}; {unknown}")));
            (LoadStatus::Failed, error)
        }
    }
}

fn json_list<T: serde::de::DeserializeOwned>(text: &str) -> Vec<T> {
    serde_json::from_str(text).unwrap_or_default()
}

impl Store {
    /// Records the start of a campaign (status `running`).
    pub fn begin_campaign(&mut self, c: &NewCampaign) -> Result<CampaignId> {
        let cl = serde_json::to_string(&c.command_line).unwrap_or_else(|_| "[]".into());
        self.conn
            .execute(
                &format!("INSERT INTO campaigns (name, source, definition, started, status, planned_runs, pid, command_line, uuid) VALUES (?1, ?2, ?3, ?4, 'running', ?5, ?6, ?7, {})", crate::schema::UUID_SQL),
                params![c.name, c.source, c.definition, c.started, c.planned_runs, std::process::id(), cl],
            )
            .map_err(self.err())?;
        Ok(self.conn.last_insert_rowid())
    }

    /// Marks a campaign running again under this process (`--resume`).
    pub fn resume_campaign(&mut self, id: CampaignId) -> Result<()> {
        self.conn
            .execute(
                "UPDATE campaigns SET status='running', ended=NULL, pid=?2 WHERE id=?1",
                params![id, std::process::id()],
            )
            .map_err(self.err())?;
        Ok(())
    }

    /// Adds a run to a campaign.
    pub fn add_campaign_run(&mut self, id: CampaignId, r: &CampaignRun) -> Result<()> {
        self.conn
            .execute(
                "INSERT OR REPLACE INTO campaign_runs (campaign_id, seq, run_id, scenario, load_case, repeat) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![id, r.seq, r.run_id, r.scenario, r.load_case, r.repeat],
            )
            .map_err(self.err())?;
        Ok(())
    }

    /// Records a campaign's end: `complete`, `interrupted` or `failed`.
    pub fn finish_campaign(
        &mut self,
        id: CampaignId,
        status: RunStatus,
        ended: &str,
    ) -> Result<()> {
        self.conn
            .execute(
                "UPDATE campaigns SET status=?2, ended=?3 WHERE id=?1",
                params![id, status.as_str(), ended],
            )
            .map_err(self.err())?;
        Ok(())
    }

    /// All campaigns, newest first.
    pub fn campaigns(&self) -> Result<Vec<CampaignSummary>> {
        let mut st = self
            .sql()
            .prepare("SELECT id, name, source, definition, started, ended, status, planned_runs, pid, command_line FROM campaigns ORDER BY id DESC")
            .map_err(self.err())?;
        let rows = st
            .query_map([], |r| {
                let status: String = r.get(6)?;
                let pid: i64 = r.get(8)?;
                let alive = std::path::Path::new(&format!("/proc/{pid}")).exists();
                Ok(CampaignSummary {
                    id: r.get(0)?,
                    name: r.get(1)?,
                    source: r.get(2)?,
                    definition: r.get(3)?,
                    started: r.get(4)?,
                    ended: r.get(5)?,
                    status: match RunStatus::parse(&status) {
                        RunStatus::Running if !alive => RunStatus::Incomplete,
                        s => s,
                    },
                    planned_runs: r.get(7)?,
                    command_line: json_list(&r.get::<_, String>(9)?),
                })
            })
            .map_err(self.err())?;
        rows.collect::<rusqlite::Result<_>>().map_err(self.err())
    }

    /// The newest campaign named `name`.
    pub fn campaign_by_name(&self, name: &str) -> Result<Option<CampaignSummary>> {
        Ok(self.campaigns()?.into_iter().find(|c| c.name == name))
    }

    /// The runs of a campaign in plan order (a resumed position has its older, interrupted
    /// run listed first), with their statuses: one statement however many runs it has.
    pub fn campaign_runs(&self, id: CampaignId) -> Result<Vec<CampaignRun>> {
        let mut st = self
            .sql()
            .prepare("SELECT c.seq, c.run_id, c.scenario, c.load_case, c.repeat, r.status, r.pid, r.checkpoint_unix_ns, r.started_unix_ns FROM campaign_runs c LEFT JOIN runs r ON r.id = c.run_id WHERE c.campaign_id=?1 ORDER BY c.seq, c.run_id")
            .map_err(self.err())?;
        let rows = st
            .query_map(params![id], |r| {
                let status = match r.get::<_, Option<String>>(5)? {
                    Some(s) => Some(effective_status(&s, r.get(6)?, r.get(7)?, r.get(8)?)),
                    None => None,
                };
                let place = CampaignRun {
                    seq: r.get(0)?,
                    run_id: r.get(1)?,
                    scenario: r.get(2)?,
                    load_case: r.get(3)?,
                    repeat: r.get(4)?,
                    status: status.unwrap_or(RunStatus::Unknown),
                };
                Ok((place, status.is_some()))
            })
            .map_err(self.err())?;
        let mut out = Vec::new();
        for row in rows {
            let (place, found) = row.map_err(self.err())?;
            if !found {
                // A place whose run is gone: the error reading that run gives.
                self.summary(place.run_id)?;
            }
            out.push(place);
        }
        Ok(out)
    }

    /// The campaign a run belongs to, with its place in it. Reads that one place and that
    /// run's status, never the campaign's other runs (read per run, that made `compare` of
    /// 1,000 runs quadratic: issue 28).
    pub fn campaign_of(&self, run: RunId) -> Result<Option<(CampaignSummary, CampaignRun)>> {
        let found: Option<(i64, CampaignRun)> = self
            .sql()
            .query_row(
                "SELECT campaign_id, seq, scenario, load_case, repeat FROM campaign_runs WHERE run_id=?1",
                params![run],
                |r| {
                    let place = CampaignRun {
                        seq: r.get(1)?,
                        run_id: run,
                        scenario: r.get(2)?,
                        load_case: r.get(3)?,
                        repeat: r.get(4)?,
                        status: RunStatus::Unknown,
                    };
                    Ok((r.get(0)?, place))
                },
            )
            .optional()
            .map_err(self.err())?;
        let Some((cid, mut place)) = found else {
            return Ok(None);
        };
        let Some(c) = self.campaigns()?.into_iter().find(|c| c.id == cid) else {
            return Ok(None);
        };
        place.status = self.summary(run)?.status;
        Ok(Some((c, place)))
    }

    /// Records the loads a run was measured under (replacing any recorded before).
    pub fn set_loads(&mut self, run: RunId, loads: &[LoadRow]) -> Result<()> {
        self.require(run)?;
        let path = self.path.clone();
        let err = move |source| StoreError::Sqlite {
            path: path.clone(),
            source,
        };
        let tx = self.conn.transaction().map_err(&err)?;
        tx.execute("DELETE FROM loads WHERE run_id=?1", params![run])
            .map_err(&err)?;
        for (idx, l) in loads.iter().enumerate() {
            let cl = serde_json::to_string(&l.command_line).unwrap_or_else(|_| "[]".into());
            let m = serde_json::to_string(&l.metrics).unwrap_or_else(|_| "[]".into());
            tx.execute(
                "INSERT INTO loads (run_id, idx, name, spec, command_line, status, error, ran_ns, metrics) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                params![run, idx as i64, l.name, l.spec_json, cl, l.status.as_str(), l.error, i64::try_from(l.ran_ns).unwrap_or(i64::MAX), m],
            )
            .map_err(&err)?;
        }
        tx.commit().map_err(&err)
    }

    /// The loads a run was measured under.
    pub fn loads(&self, run: RunId) -> Result<Vec<LoadRow>> {
        let mut st = self
            .sql()
            .prepare("SELECT name, spec, command_line, status, error, ran_ns, metrics FROM loads WHERE run_id=?1 ORDER BY idx")
            .map_err(self.err())?;
        let rows = st
            .query_map(params![run], |r| {
                let (status, error) = load_status(r.get(3)?, r.get(4)?);
                Ok(LoadRow {
                    name: r.get(0)?,
                    spec_json: r.get(1)?,
                    command_line: json_list(&r.get::<_, String>(2)?),
                    status,
                    error,
                    ran_ns: r.get::<_, i64>(5)?.max(0) as u64,
                    metrics: json_list(&r.get::<_, String>(6)?),
                })
            })
            .map_err(self.err())?;
        rows.collect::<rusqlite::Result<_>>().map_err(self.err())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stored_load_status_reads_as_its_enum_and_an_unknown_one_as_failed_naming_it() {
        assert_eq!(
            load_status("killed".into(), None),
            (LoadStatus::Killed, None)
        );
        let e = Some("exit status 1".to_string());
        assert_eq!(
            load_status("failed".into(), e.clone()),
            (LoadStatus::Failed, e)
        );
        let (s, e) = load_status("stopped\x1b".into(), Some("it hung".into()));
        assert_eq!(s, LoadStatus::Failed);
        assert_eq!(
            e.as_deref(),
            Some("it hung; unknown load status \"stopped\\u{1b}\" in the database")
        );
        assert_eq!(
            load_status("".into(), None).1.as_deref(),
            Some("unknown load status \"\" in the database")
        );
    }
}
