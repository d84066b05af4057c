//! Many runs' summaries read at once: a fixed number of statements whatever the number of runs,
//! each reading a table once for all of them. What `compare` works from: reading run by run
//! (and each run's campaign with every run of it) made a comparison of two groups of 1,000 runs
//! take minutes (issue 28).

use crate::read::{effective_status, histogram_limit, thread_row};
use crate::{
    CampaignRun, CampaignSummary, CheckRow, Result, RunDetail, RunId, RunKind, RunSummary, Store,
    ThreadRow,
};
use rtscope_core::Histogram;
use std::collections::HashMap;

/// One run as a comparison reads it: its detail, its place in a campaign and its audit.
#[derive(Debug, Clone)]
pub struct RunFacts {
    /// Summary, threads, environment, command line (as [`Store::run`] gives it).
    pub detail: RunDetail,
    /// The campaign it belongs to, with its place in it (as [`Store::campaign_of`] gives it).
    pub campaign: Option<(CampaignSummary, CampaignRun)>,
    /// The preflight audit it was started with (as [`Store::checks`] gives it).
    pub checks: Vec<CheckRow>,
}

/// The columns of `runs` a summary and a detail are made of, in this order.
const RUN_COLUMNS: &str = "kind, label, status, started, ended, progress_ns, exit_code, pid, \
     checkpoint_unix_ns, started_unix_ns, config, uuid, tool_version, command_line, id";

impl Store {
    /// Runs `ids` in order, read with a fixed number of statements (one per table) however
    /// many they are; the same values as [`Store::run`], [`Store::campaign_of`] and
    /// [`Store::checks`] run by run. An id that is not in the database is an error, as there.
    pub fn run_facts(&self, ids: &[RunId]) -> Result<Vec<RunFacts>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let Parts {
            list,
            mut threads,
            mut tags,
            mut rows,
        } = self.parts(ids)?;
        let pair = |r: &rusqlite::Row| Ok((r.get(0)?, r.get(1)?));
        let mut environment = self.grouped(
            &format!("SELECT key, value, run_id FROM environment WHERE run_id IN ({list}) ORDER BY run_id, key"),
            2,
            pair,
        )?;
        let mut checks = self.grouped(
            &format!("SELECT check_id, verdict, evidence, fix, setting, run_id FROM run_checks WHERE run_id IN ({list}) ORDER BY run_id, seq"),
            5,
            |r| Ok(CheckRow { check: r.get(0)?, verdict: r.get(1)?, evidence: r.get(2)?, fix: r.get(3)?, setting: r.get(4)? }),
        )?;
        let count = |table: &str| -> Result<HashMap<RunId, u64>> {
            let sql = format!(
                "SELECT run_id, count(*) FROM {table} WHERE run_id IN ({list}) GROUP BY run_id"
            );
            let rows = self.grouped(&sql, 0, |r| r.get::<_, i64>(1))?;
            Ok(rows
                .into_iter()
                .map(|(id, n)| (id, n[0].max(0) as u64))
                .collect())
        };
        let (series, events) = (count("series")?, count("events")?);
        let raw = self.grouped(
            &format!("SELECT coalesce(sum(count), 0), coalesce(sum(length(data)), 0), run_id FROM samples WHERE run_id IN ({list}) GROUP BY run_id"),
            2,
            |r| Ok((r.get::<_, i64>(0)? as u64, r.get::<_, i64>(1)? as u64)),
        )?;
        let mut places = self.places(&list)?;
        let mut out = Vec::with_capacity(ids.len());
        for &id in ids {
            let Some(row) = rows.remove(&id) else {
                // Not there (the error run by run gives), or written since: read alone.
                out.push(self.facts_of(id)?);
                continue;
            };
            let t = threads.remove(&id).unwrap_or_default();
            let summary = row.summary(id, &t, tags.remove(&id).unwrap_or_default());
            let (raw_samples, raw_bytes) = raw.get(&id).map_or((0, 0), |v| v[0]);
            let campaign = places.remove(&id).map(|(c, mut r)| {
                r.status = summary.status;
                (c, r)
            });
            out.push(RunFacts {
                detail: RunDetail {
                    raw_samples,
                    raw_bytes,
                    tool_version: row.tool_version,
                    command_line_json: row.command_line,
                    config_json: row.config,
                    environment: environment.remove(&id).unwrap_or_default(),
                    threads: t,
                    series_points: series.get(&id).copied().unwrap_or(0),
                    events: events.get(&id).copied().unwrap_or(0),
                    summary,
                },
                campaign,
                checks: checks.remove(&id).unwrap_or_default(),
            });
        }
        Ok(out)
    }

    /// The summaries of runs `ids` in order (as [`Store::summary`] gives them), read with a
    /// fixed number of statements however many they are.
    pub fn summaries(&self, ids: &[RunId]) -> Result<Vec<RunSummary>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let Parts {
            mut threads,
            mut tags,
            rows,
            ..
        } = self.parts(ids)?;
        let mut out = Vec::with_capacity(ids.len());
        for &id in ids {
            out.push(match rows.get(&id) {
                Some(row) => row.summary(
                    id,
                    &threads.remove(&id).unwrap_or_default(),
                    tags.remove(&id).unwrap_or_default(),
                ),
                None => self.summary(id)?,
            });
        }
        Ok(out)
    }

    /// What a summary is made of, for runs `ids`: three statements.
    fn parts(&self, ids: &[RunId]) -> Result<Parts> {
        // Ids are integers: written into the statement, they need no parameter per run.
        let list = ids.iter().map(i64::to_string).collect::<Vec<_>>().join(",");
        Ok(Parts {
            threads: self.grouped(
                &format!("SELECT thread, tid, cpu, policy, priority, interval_ns, samples, min_ns, mean_ns, max_ns, max_cycle, max_offset_ns, missed, histogram, raw_dropped, run_id FROM threads WHERE run_id IN ({list}) ORDER BY run_id, thread"),
                15,
                thread_row,
            )?,
            tags: self.grouped(
                &format!("SELECT key, value, run_id FROM tags WHERE run_id IN ({list}) ORDER BY run_id, key"),
                2,
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?,
            rows: self.run_rows(&list)?,
            list,
        })
    }

    /// One run read alone.
    fn facts_of(&self, id: RunId) -> Result<RunFacts> {
        Ok(RunFacts {
            detail: self.run(id)?,
            campaign: self.campaign_of(id)?,
            checks: self.checks(id)?,
        })
    }

    /// The rows of one statement by run, in the statement's order; `id_column` is the run id's.
    fn grouped<T>(
        &self,
        sql: &str,
        id_column: usize,
        row: impl Fn(&rusqlite::Row) -> rusqlite::Result<T>,
    ) -> Result<HashMap<RunId, Vec<T>>> {
        let mut q = self.sql().prepare(sql).map_err(self.err())?;
        let mut rows = q.query([]).map_err(self.err())?;
        let mut out: HashMap<RunId, Vec<T>> = HashMap::new();
        while let Some(r) = rows.next().map_err(self.err())? {
            let id: RunId = r.get(id_column).map_err(self.err())?;
            out.entry(id).or_default().push(row(r).map_err(self.err())?);
        }
        Ok(out)
    }

    /// The campaign places of the listed runs (status left for the caller), every campaign
    /// read once.
    fn places(&self, list: &str) -> Result<HashMap<RunId, (CampaignSummary, CampaignRun)>> {
        let sql = format!("SELECT run_id, campaign_id, seq, scenario, load_case, repeat FROM campaign_runs WHERE run_id IN ({list}) ORDER BY rowid");
        let found = self.grouped(&sql, 0, |r| {
            let place = CampaignRun {
                seq: r.get(2)?,
                run_id: r.get(0)?,
                scenario: r.get(3)?,
                load_case: r.get(4)?,
                repeat: r.get(5)?,
                status: crate::RunStatus::Unknown,
            };
            Ok((r.get::<_, i64>(1)?, place))
        })?;
        if found.is_empty() {
            return Ok(HashMap::new());
        }
        let campaigns: HashMap<i64, CampaignSummary> =
            self.campaigns()?.into_iter().map(|c| (c.id, c)).collect();
        Ok(found
            .into_iter()
            .filter_map(|(id, mut v)| {
                // The first row, as `campaign_of`'s single-row lookup takes.
                let (cid, place) = v.swap_remove(0);
                Some((id, (campaigns.get(&cid)?.clone(), place)))
            })
            .collect())
    }

    fn run_rows(&self, list: &str) -> Result<HashMap<RunId, RunRow>> {
        let sql = format!("SELECT {RUN_COLUMNS} FROM runs WHERE id IN ({list})");
        let rows = self.grouped(&sql, 14, |r| {
            let stored: String = r.get(2)?;
            Ok(RunRow {
                status: effective_status(&stored, r.get(7)?, r.get(8)?, r.get(9)?),
                kind: RunKind::parse(&r.get::<_, String>(0)?),
                label: r.get(1)?,
                started: r.get(3)?,
                ended: r.get(4)?,
                progress_ns: r.get::<_, i64>(5)?.max(0) as u64,
                exit_code: r.get(6)?,
                config: r.get(10)?,
                uuid: r.get(11)?,
                tool_version: r.get(12)?,
                command_line: r.get(13)?,
            })
        })?;
        Ok(rows
            .into_iter()
            .filter_map(|(id, mut v)| Some((id, v.pop()?)))
            .collect())
    }
}

/// The rows a summary is made of, by run.
struct Parts {
    /// The ids, comma-separated, for `WHERE run_id IN (…)`.
    list: String,
    threads: HashMap<RunId, Vec<ThreadRow>>,
    tags: HashMap<RunId, Vec<(String, String)>>,
    rows: HashMap<RunId, RunRow>,
}

/// One row of `runs`.
struct RunRow {
    kind: RunKind,
    label: Option<String>,
    status: crate::RunStatus,
    started: String,
    ended: Option<String>,
    progress_ns: u64,
    exit_code: Option<i32>,
    config: String,
    uuid: Option<String>,
    tool_version: String,
    command_line: String,
}

impl RunRow {
    /// The summary [`Store::summary`] gives for this run.
    fn summary(&self, id: RunId, threads: &[ThreadRow], tags: Vec<(String, String)>) -> RunSummary {
        let mut histogram = Histogram::new();
        for t in threads {
            histogram.merge(&t.histogram);
        }
        RunSummary {
            id,
            uuid: self.uuid.clone(),
            kind: self.kind,
            label: self.label.clone(),
            status: self.status,
            started: self.started.clone(),
            ended: self.ended.clone(),
            progress_ns: self.progress_ns,
            exit_code: self.exit_code,
            tags,
            threads: threads.len() as u32,
            samples: threads.iter().map(|t| t.figures.samples).sum(),
            max_ns: threads.iter().filter_map(|t| t.figures.max_ns).max(),
            missed: threads.iter().map(|t| t.missed).sum(),
            histogram,
            histogram_limit: histogram_limit(&self.config),
        }
    }
}
