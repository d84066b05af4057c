//! rtscope-formats: one measurement (recorded, or still running) for monitoring and lab CI, as
//!
//! * [`prometheus`]: the node_exporter textfile format (a per-CPU latency histogram with fixed
//!   log-spaced buckets, the exact percentiles beside it as gauges, max, missed deadlines,
//!   samples, run end time, limit verdicts), written atomically ([`atomic`]);
//! * [`lava`]: LAVA test-case signals;
//! * [`kcidb`]: KernelCI (KCIDB) test objects;
//! * [`junit`]: JUnit XML as GitLab and Jenkins read it;
//! * [`output`]: recorded runs written in these formats (`export`, `--ci-output`);
//! * [`compare`]: a comparison's verdicts in the lab CI formats;
//! * [`missing`]: the boards asked for that recorded no run, failed cases in every CI format;
//! * [`metrics_file`]: the textfile of a running measurement.
//!
//! Every format is drawn from one [`Report`], built from a recorded run
//! ([`Report::from_bundle`]) or from the live threads of a run ([`Report::live`]), so the
//! formats never disagree. The boards themselves (ssh, `targets.toml`, fan-out) are
//! rtscope-fleet's. Docs: docs/fleet.md.

#![warn(missing_docs)]

pub mod atomic;
pub mod compare;
pub mod junit;
pub mod kcidb;
pub mod lava;
pub mod metrics_file;
pub mod missing;
pub mod output;
pub mod prometheus;

use rtscope_common::limits::{self, Check, Limit};
use rtscope_core::{Histogram, Nanos, Stats};
use rtscope_store::{RunBundle, RunStatus};

/// Errors of this crate.
#[derive(Debug, thiserror::Error)]
pub enum FormatError {
    /// A limit recorded on the run's command line (or given) does not parse.
    #[error("{0}")]
    Limit(String),
    /// A recorded run cannot be read.
    #[error("{0}")]
    Run(String),
    /// An option's value is invalid.
    #[error("{0}")]
    Usage(String),
    /// Writing a file failed.
    #[error("cannot write {path}: {source}")]
    Write {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
}

/// What one set of statistics covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ScopeKind {
    /// All threads pinned to one CPU.
    Cpu(u32),
    /// One unpinned thread (index).
    Thread(u32),
    /// Every thread of the run.
    All,
}

impl ScopeKind {
    /// The value of the `cpu` label / the name part: `0`, `t3`, `all`.
    pub fn label(&self) -> String {
        match self {
            ScopeKind::Cpu(c) => c.to_string(),
            ScopeKind::Thread(t) => format!("t{t}"),
            ScopeKind::All => "all".into(),
        }
    }

    /// How limit checks name this scope (`cpu 1`, `thread 3`, `all`).
    fn check_name(&self) -> String {
        match self {
            ScopeKind::Cpu(c) => format!("cpu {c}"),
            ScopeKind::Thread(t) => format!("thread {t}"),
            ScopeKind::All => "all".into(),
        }
    }
}

/// The statistics of one scope.
#[derive(Debug, Clone)]
pub struct Scope {
    /// What it covers.
    pub kind: ScopeKind,
    /// Count, min, max (ns), sum (ns), missed deadlines.
    pub stats: Stats,
    /// The lossless histogram.
    pub histogram: Histogram,
}

impl Scope {
    /// The percentiles whose value is known, ranked over all `stats.count` samples: those
    /// that fall among an import's histogram overflows (only a lower bound known) are left out
    /// rather than published as values.
    pub fn exact_percentiles(&self) -> Vec<rtscope_core::Percentile> {
        let over = rtscope_core::Overflow::of(&self.histogram, self.stats.count, None);
        let mut ps = self.histogram.percentiles_over_all(over);
        ps.retain(|p| !p.lower_bound);
        ps
    }
}

/// One measurement as every fleet format sees it.
#[derive(Debug, Clone)]
pub struct Report {
    /// The board: the run's `board` tag, else its host name, else `local`.
    pub board: String,
    /// Whether `board` is the run's `board` tag (a fleet's run, merged from its board).
    pub from_board: bool,
    /// The run's label (empty without one).
    pub label: String,
    /// The run id in its store, when recorded.
    pub run_id: Option<i64>,
    /// The run's UUID, when recorded: the id that leaves the machine (KCIDB test ids, JUnit).
    pub uuid: Option<String>,
    /// RFC 3339 start.
    pub started: Option<String>,
    /// End of the run (or time of this snapshot), seconds since the Unix epoch.
    pub ended_unix_s: Option<f64>,
    /// Time measured, seconds.
    pub measured_s: f64,
    /// Whether the run ended (`complete`) or is still going / was interrupted.
    pub status: RunStatus,
    /// Per CPU (or unpinned thread), in order, then [`ScopeKind::All`].
    pub scopes: Vec<Scope>,
    /// The limit verdicts, per scope, then over all threads.
    pub checks: Vec<Check>,
}

impl Report {
    /// A recorded run. `extra` limits are checked besides those on its recorded command line
    /// (`--limit STAT=VALUE`).
    pub fn from_bundle(b: &RunBundle, extra: &[Limit]) -> Result<Report, FormatError> {
        let d = &b.detail;
        let s = &d.summary;
        let threads = d.threads.iter().map(|t| {
            let stats = Stats {
                count: t.figures.samples,
                min: Nanos(t.figures.min_ns.unwrap_or(0)),
                max: Nanos(t.figures.max_ns.unwrap_or(0)),
                sum_ns: (t.figures.mean_ns.unwrap_or(0.0) * t.figures.samples as f64).round()
                    as u128,
                max_cycle: t.figures.max_cycle.unwrap_or(0),
                max_time: Nanos(0),
                missed: t.missed,
            };
            (t.thread, t.cpu, stats, t.histogram.clone())
        });
        let scopes = scopes(threads);
        let mut lim = recorded_limits(&d.command_line_json)?;
        lim.extend_from_slice(extra);
        let board_tag = tag(&s.tags, "board");
        let from_board = board_tag.is_some();
        let board = board_tag
            .or_else(|| tag(&d.environment, "uname.nodename"))
            .unwrap_or_else(|| "local".into());
        Ok(Report {
            board,
            from_board,
            label: s.label.clone().unwrap_or_default(),
            run_id: Some(s.id),
            uuid: s.uuid.clone(),
            started: Some(s.started.clone()),
            ended_unix_s: s
                .ended
                .as_deref()
                .and_then(rtscope_core::civil::parse_rfc3339),
            measured_s: s.progress_ns as f64 / 1e9,
            status: s.status,
            checks: check(&scopes, &lim),
            scopes,
        })
    }

    /// A measurement not (or not yet) read back from a store: `threads` as `(index, cpu,
    /// stats, histogram)`, read from the control thread (never from a measuring thread);
    /// `status` is `Running` while it measures.
    pub fn live(
        board: &str,
        label: &str,
        threads: impl IntoIterator<Item = (u32, Option<u32>, Stats, Histogram)>,
        limits: &[Limit],
        measured_s: f64,
        now_unix_s: f64,
        status: RunStatus,
    ) -> Report {
        let scopes = scopes(threads);
        Report {
            board: board.into(),
            from_board: false,
            label: label.into(),
            run_id: None,
            uuid: None,
            started: None,
            ended_unix_s: Some(now_unix_s),
            measured_s,
            status,
            checks: check(&scopes, limits),
            scopes,
        }
    }

    /// Whether every limit held (`true` without limits).
    pub fn passed(&self) -> bool {
        self.checks.iter().all(|c| c.passed)
    }

    /// The scope for [`ScopeKind::All`].
    pub fn all(&self) -> &Scope {
        self.scopes
            .last()
            .expect("a report always has the `all` scope")
    }
}

fn tag(pairs: &[(String, String)], key: &str) -> Option<String> {
    pairs
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.clone())
        .filter(|v| !v.is_empty())
}

/// Groups threads by CPU (unpinned threads alone), then adds the scope of all threads.
fn scopes(threads: impl IntoIterator<Item = (u32, Option<u32>, Stats, Histogram)>) -> Vec<Scope> {
    let mut out: Vec<Scope> = Vec::new();
    for (index, cpu, stats, hist) in threads {
        let kind = cpu.map_or(ScopeKind::Thread(index), ScopeKind::Cpu);
        match out.iter_mut().find(|s| s.kind == kind) {
            Some(s) => {
                s.stats = s.stats.merge(&stats);
                s.histogram.merge(&hist);
            }
            None => out.push(Scope {
                kind,
                stats,
                histogram: hist,
            }),
        }
    }
    out.sort_by_key(|s| s.kind);
    let mut all = Scope {
        kind: ScopeKind::All,
        stats: Stats::default(),
        histogram: Histogram::new(),
    };
    for s in &out {
        all.stats = all.stats.merge(&s.stats);
        all.histogram.merge(&s.histogram);
    }
    out.push(all);
    out
}

fn check(scopes: &[Scope], lim: &[Limit]) -> Vec<Check> {
    scopes
        .iter()
        .flat_map(|s| limits::check(lim, &s.kind.check_name(), &s.stats, &s.histogram))
        .collect()
}

/// The `--limit` options of a recorded command line (a JSON array of strings).
pub fn recorded_limits(command_line_json: &str) -> Result<Vec<Limit>, FormatError> {
    let args: Vec<String> = serde_json::from_str(command_line_json).unwrap_or_default();
    let mut out = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let value = if a == "--limit" {
            it.next().map(String::as_str)
        } else {
            a.strip_prefix("--limit=")
        };
        if let Some(v) = value {
            out.push(limits::parse(v).map_err(|e| FormatError::Limit(e.to_string()))?);
        }
    }
    Ok(out)
}

/// `text` with every character outside `[A-Za-z0-9_.-]` replaced by `_` (names in LAVA
/// test-case ids, KCIDB paths and file names).
pub fn name_part(text: &str) -> String {
    let s: String = text
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.is_empty() {
        "_".into()
    } else {
        s
    }
}

/// A statistic of a scope, as every format names and reports it.
#[derive(Debug, Clone, PartialEq)]
pub struct Measurement {
    /// `min`, `mean`, `max`, `p99.99`, `missed`, `samples`.
    pub stat: &'static str,
    /// The value: µs for latencies, a count otherwise.
    pub value: f64,
    /// `us` or `count`.
    pub unit: &'static str,
}

/// The statistics reported for one scope: min, mean, max, the percentiles, missed, samples.
/// Latencies in µs (ns / 1000, exact to the ns).
pub fn measurements(s: &Scope) -> Vec<Measurement> {
    let us = |ns: u64| ns as f64 / 1000.0;
    let mut out = Vec::new();
    if s.stats.count > 0 {
        out.push(Measurement {
            stat: "min",
            value: us(s.stats.min.0),
            unit: "us",
        });
        out.push(Measurement {
            stat: "mean",
            value: s.stats.mean_ns().unwrap_or(0.0).round() / 1000.0,
            unit: "us",
        });
        out.push(Measurement {
            stat: "max",
            value: us(s.stats.max.0),
            unit: "us",
        });
        for p in s.exact_percentiles() {
            if let Some(v) = p.value {
                out.push(Measurement {
                    stat: p.label,
                    value: us(v.0),
                    unit: "us",
                });
            }
        }
    }
    out.push(Measurement {
        stat: "missed",
        value: s.stats.missed as f64,
        unit: "count",
    });
    out.push(Measurement {
        stat: "samples",
        value: s.stats.count as f64,
        unit: "count",
    });
    out
}

/// A limit check's value and limit for people: `12.3us` or a count.
pub fn check_text(c: &Check) -> (String, String) {
    if c.stat == "missed" {
        (c.value.to_string(), c.limit.to_string())
    } else {
        (
            format!("{}us", c.value as f64 / 1000.0),
            format!("{}us", c.limit as f64 / 1000.0),
        )
    }
}

#[cfg(test)]
mod tests;
