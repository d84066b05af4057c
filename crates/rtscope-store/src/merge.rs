//! Mergeable records: every run carries a UUID and the identity of the host that measured it
//! (schema: [`crate::schema::MIGRATION_RUN_IDENTITY`]), and [`Store::merge_from`] copies the
//! runs of another database into this one with everything recorded with them, idempotently.

use crate::schema::{SCHEMA_VERSION, UUID_SQL};
use crate::{Result, RunId, Store, StoreError};
use rusqlite::{params, Connection, OptionalExtension, Transaction};
use std::collections::HashMap;
use std::path::Path;

/// Who a run is and where it was measured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunIdentity {
    /// Random UUID, the same in every database the run is merged into.
    pub uuid: String,
    /// Host name.
    pub host: Option<String>,
    /// `/etc/machine-id`.
    pub machine_id: Option<String>,
    /// `/proc/device-tree/model`.
    pub board_model: Option<String>,
}

/// What a merge did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MergeReport {
    /// Runs copied: (id here, id there, UUID).
    pub added: Vec<(RunId, RunId, String)>,
    /// Runs this database already had (same UUID, same run).
    pub skipped: usize,
    /// Campaigns copied (runs of a campaign this database has join it).
    pub campaigns_added: usize,
}

/// Gives a new run its UUID and host identity (from its environment facts `uname.nodename`,
/// `host.machine_id`, `host.board_model`).
pub(crate) fn identify(
    tx: &Connection,
    id: RunId,
    env: &[(String, String)],
) -> rusqlite::Result<()> {
    let get = |k: &str| {
        env.iter()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.as_str())
    };
    tx.execute(
        &format!("UPDATE runs SET uuid = {UUID_SQL}, host = ?2, machine_id = ?3, board_model = ?4 WHERE id = ?1"),
        params![id, get("uname.nodename"), get("host.machine_id"), get("host.board_model")],
    )?;
    Ok(())
}

/// The columns of `table`, without an `INTEGER PRIMARY KEY` other than `run_id` (a rowid
/// alias such as `run_checks.seq`: SQLite numbers the copies anew).
fn columns(tx: &Transaction, table: &str) -> rusqlite::Result<Vec<String>> {
    let info = format!("pragma_table_info('{table}', 'main')");
    let mut st = tx.prepare(&format!(
        "SELECT name, upper(type), pk, (SELECT count(*) FROM {info} WHERE pk > 0) FROM {info}"
    ))?;
    let rows = st.query_map([], |r| {
        let name: String = r.get(0)?;
        let kind: String = r.get(1)?;
        let (pk, pks): (i64, i64) = (r.get(2)?, r.get(3)?);
        Ok((name, pk == 1 && pks == 1 && kind == "INTEGER"))
    })?;
    let mut cols = Vec::new();
    for row in rows {
        let (name, rowid_alias) = row?;
        if !rowid_alias || name == "run_id" {
            cols.push(name);
        }
    }
    Ok(cols)
}

/// Tables holding rows of a run (a `run_id` column), besides the ones copied by hand.
fn run_tables(tx: &Transaction) -> rusqlite::Result<Vec<String>> {
    let mut st = tx.prepare(
        "SELECT m.name FROM main.sqlite_master m WHERE m.type = 'table' AND m.name NOT IN ('runs', 'monitor_metrics', 'campaign_runs') AND EXISTS (SELECT 1 FROM pragma_table_info(m.name, 'main') c WHERE c.name = 'run_id') ORDER BY m.name",
    )?;
    let names = st.query_map([], |r| r.get(0))?.collect();
    names
}

/// Copies the rows of `table` with `key = old` from `src`, setting `key` (and the columns in
/// `set`) to new values; `skip` columns and an `INTEGER PRIMARY KEY` not in `set` are left to
/// SQLite.
fn copy_rows(
    tx: &Transaction,
    table: &str,
    key: &str,
    old: i64,
    set: &[(&str, i64)],
    skip: &[&str],
) -> rusqlite::Result<usize> {
    let mut cols: Vec<String> = columns(tx, table)?
        .into_iter()
        .filter(|c| !skip.contains(&c.as_str()))
        .collect();
    // A rowid alias given a value (a run's id) is copied with it.
    for (k, _) in set {
        if !cols.iter().any(|c| c == k) {
            cols.push((*k).to_owned());
        }
    }
    let select: Vec<String> = cols
        .iter()
        .map(|c| {
            set.iter()
                .find(|(k, _)| k == c)
                .map_or_else(|| format!("\"{c}\""), |(_, v)| v.to_string())
        })
        .collect();
    let list: Vec<String> = cols.iter().map(|c| format!("\"{c}\"")).collect();
    tx.execute(
        &format!(
            "INSERT INTO main.\"{table}\" ({}) SELECT {} FROM src.\"{table}\" WHERE \"{key}\" = ?1",
            list.join(", "),
            select.join(", ")
        ),
        [old],
    )
}

/// The first label, tag key or tag value of the attached database that `--label`/`--tag`
/// would refuse (control characters: escape sequences reach terminals, SVG and HTML; over
/// 256 bytes), described; `None` when all are clean (issue 26, N8: a merged database went
/// round the check).
fn unclean_text(tx: &Transaction) -> rusqlite::Result<Option<String>> {
    let mut st = tx.prepare(
        "SELECT id, 'label', label FROM src.runs WHERE label IS NOT NULL \
         UNION ALL SELECT run_id, 'tag key', key FROM src.tags \
         UNION ALL SELECT run_id, 'tag value', value FROM src.tags",
    )?;
    let rows = st.query_map([], |r| {
        Ok((
            r.get::<_, i64>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, String>(2)?,
        ))
    })?;
    for row in rows {
        let (run, what, text) = row?;
        if text.chars().any(char::is_control) || text.len() > 256 {
            let shown =
                rtscope_core::text::escape(&rtscope_core::text::clip(&text, 60)).into_owned();
            return Ok(Some(format!(
                "its run {run} has a {what} '{shown}' that --label/--tag would refuse (control characters or over 256 bytes); nothing was merged"
            )));
        }
    }
    Ok(None)
}

/// What identifies a run beyond its UUID: a UUID shared by two runs that differ here is a
/// conflict.
type Fingerprint = (String, i64, String);

fn fingerprint(tx: &Transaction, db: &str, id: RunId) -> rusqlite::Result<Fingerprint> {
    tx.query_row(
        &format!("SELECT kind, started_unix_ns, command_line FROM {db}.runs WHERE id = ?1"),
        [id],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )
}

impl Store {
    /// Run `id`'s UUID and host identity.
    pub fn identity(&self, id: RunId) -> Result<RunIdentity> {
        self.conn
            .query_row(
                "SELECT uuid, host, machine_id, board_model FROM runs WHERE id = ?1",
                [id],
                |r| {
                    Ok(RunIdentity {
                        uuid: r.get::<_, Option<String>>(0)?.unwrap_or_default(),
                        host: r.get(1)?,
                        machine_id: r.get(2)?,
                        board_model: r.get(3)?,
                    })
                },
            )
            .optional()
            .map_err(self.err())?
            .ok_or(StoreError::NoSuchRun(id))
    }

    /// Copies every run of the database at `other` that this one does not have (by UUID), with
    /// its tags, environment, threads, series, events, raw samples, monitors, loads and
    /// campaign, and sets `tags` on the runs copied. Merging the same database again adds
    /// nothing. A UUID shared by two different runs refuses the whole merge. `other` is
    /// upgraded to this schema version first (as opening it would).
    pub fn merge_from(&mut self, other: &Path, tags: &[(String, String)]) -> Result<MergeReport> {
        let refuse = |why: String| StoreError::Merge {
            path: other.to_path_buf(),
            why,
        };
        if !other.is_file() {
            return Err(refuse("no such database file".into()));
        }
        let same = match (other.canonicalize(), self.path.canonicalize()) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        };
        if same {
            return Err(refuse("it is the database merged into".into()));
        }
        drop(Store::open(other)?);
        let text = other.to_string_lossy().into_owned();
        self.conn
            .execute("ATTACH DATABASE ?1 AS src", [&text])
            .map_err(self.err())?;
        let result = self.merge_attached(other, tags);
        let _ = self.conn.execute("DETACH DATABASE src", []);
        result
    }

    fn merge_attached(&mut self, other: &Path, tags: &[(String, String)]) -> Result<MergeReport> {
        let path = self.path.clone();
        let err = move |source| StoreError::Sqlite {
            path: path.clone(),
            source,
        };
        let tx = self.conn.transaction().map_err(&err)?;
        let version: i64 = tx
            .query_row("PRAGMA src.user_version", [], |r| r.get(0))
            .map_err(&err)?;
        if version != SCHEMA_VERSION {
            return Err(StoreError::Merge {
                path: other.to_path_buf(),
                why: format!("schema version {version}, expected {SCHEMA_VERSION}"),
            });
        }
        if let Some(why) = unclean_text(&tx).map_err(&err)? {
            return Err(StoreError::Merge {
                path: other.to_path_buf(),
                why,
            });
        }
        let runs: Vec<(RunId, String)> = {
            let mut st = tx
                .prepare("SELECT id, uuid FROM src.runs ORDER BY id")
                .map_err(&err)?;
            let rows = st
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
                .map_err(&err)?;
            rows.collect::<rusqlite::Result<_>>().map_err(&err)?
        };
        let mut report = MergeReport::default();
        let mut campaigns: HashMap<i64, i64> = HashMap::new();
        for (old, uuid) in runs {
            let ours: Option<RunId> = tx
                .query_row("SELECT id FROM main.runs WHERE uuid = ?1", [&uuid], |r| {
                    r.get(0)
                })
                .optional()
                .map_err(&err)?;
            if let Some(ours) = ours {
                if fingerprint(&tx, "main", ours).map_err(&err)?
                    != fingerprint(&tx, "src", old).map_err(&err)?
                {
                    return Err(StoreError::UuidConflict {
                        path: other.to_path_buf(),
                        uuid,
                        ours,
                        theirs: old,
                    });
                }
                report.skipped += 1;
                continue;
            }
            let new = copy_run(&tx, old, &mut campaigns, &mut report).map_err(&err)?;
            for (k, v) in tags {
                tx.execute(
                    "INSERT OR REPLACE INTO main.tags (run_id, key, value) VALUES (?1, ?2, ?3)",
                    params![new, k, v],
                )
                .map_err(&err)?;
            }
            report.added.push((new, old, uuid));
        }
        tx.commit().map_err(&err)?;
        Ok(report)
    }
}

/// Copies run `old` of `src` and everything recorded with it; returns its id here.
fn copy_run(
    tx: &Transaction,
    old: RunId,
    campaigns: &mut HashMap<i64, i64>,
    report: &mut MergeReport,
) -> rusqlite::Result<RunId> {
    let new: RunId = tx.query_row(&format!("SELECT {}", crate::schema::NEXT_RUN_ID), [], |r| {
        r.get(0)
    })?;
    copy_rows(tx, "runs", "id", old, &[("id", new)], &[])?;
    for table in run_tables(tx)? {
        copy_rows(tx, &table, "run_id", old, &[("run_id", new)], &[])?;
    }
    let metrics: Vec<i64> = {
        let mut st = tx.prepare("SELECT id FROM src.monitor_metrics WHERE run_id = ?1")?;
        let rows = st.query_map([old], |r| r.get(0))?;
        rows.collect::<rusqlite::Result<_>>()?
    };
    for m in metrics {
        copy_rows(tx, "monitor_metrics", "id", m, &[("run_id", new)], &["id"])?;
        let id = tx.last_insert_rowid();
        copy_rows(
            tx,
            "monitor_values",
            "metric_id",
            m,
            &[("metric_id", id)],
            &[],
        )?;
    }
    let places: Vec<(i64, i64)> = {
        let mut st =
            tx.prepare("SELECT campaign_id, seq FROM src.campaign_runs WHERE run_id = ?1")?;
        let rows = st.query_map([old], |r| Ok((r.get(0)?, r.get(1)?)))?;
        rows.collect::<rusqlite::Result<_>>()?
    };
    for (cid, seq) in places {
        let here = match campaigns.get(&cid) {
            Some(&c) => c,
            None => {
                let uuid: String =
                    tx.query_row("SELECT uuid FROM src.campaigns WHERE id = ?1", [cid], |r| {
                        r.get(0)
                    })?;
                let known: Option<i64> = tx
                    .query_row(
                        "SELECT id FROM main.campaigns WHERE uuid = ?1",
                        [&uuid],
                        |r| r.get(0),
                    )
                    .optional()?;
                let c = match known {
                    Some(c) => c,
                    None => {
                        copy_rows(tx, "campaigns", "id", cid, &[], &["id"])?;
                        report.campaigns_added += 1;
                        tx.last_insert_rowid()
                    }
                };
                campaigns.insert(cid, c);
                c
            }
        };
        tx.execute(
            "INSERT OR REPLACE INTO main.campaign_runs (campaign_id, seq, run_id, scenario, load_case, repeat) SELECT ?1, seq, ?2, scenario, load_case, repeat FROM src.campaign_runs WHERE campaign_id = ?3 AND run_id = ?4 AND seq = ?5",
            params![here, new, cid, old, seq],
        )?;
    }
    Ok(new)
}
