//! `rtscope compare A B [C…]`: groups of recorded runs side by side, a load-case matrix, and a
//! verdict per statistic against the first group (the baseline), with exit code 1 on a
//! regression for CI. See docs/compare.md.
//!
//! * [`model`]: statistics and groups of runs merged losslessly;
//! * [`verdict`]: thresholds and the verdict rule;
//! * [`analysis`]: the comparison as data;
//! * [`text`] and [`json`]: the two renderings; [`plot`]: the overlaid plots.

pub mod analysis;
pub mod json;
pub mod model;
pub mod plot;
pub mod text;
pub mod verdict;

#[cfg(test)]
mod tests;

use crate::exit::{ExitStatus, UsageError};
use crate::{record, select};
use analysis::{Comparison, Group};
use clap::Args;
use model::{RunData, Stat};
use rtscope_store::{RunId, Store};
use std::io::Write;
use std::path::PathBuf;
use verdict::Thresholds;

/// Options of `rtscope compare`.
#[derive(Debug, Clone, Args)]
pub struct CompareArgs {
    /// Groups of runs, the first is the baseline: run id, `last`, label, campaign:NAME (or a
    /// campaign's name), or tags such as kernel=rt,case=idle
    #[arg(required = true, num_args = 2.., value_name = "SELECTOR")]
    pub selectors: Vec<String>,
    /// The run database [default: $RTSCOPE_DB, else ./rtscope.db]
    #[arg(long, value_name = "PATH")]
    pub db: Option<PathBuf>,
    /// Statistics to compare (repeatable or comma-separated): min, mean, p50, p90, p99, p99.9,
    /// p99.99, p99.999, p99.9999, max, missed
    #[arg(
        long = "stat",
        value_name = "STAT",
        value_delimiter = ',',
        default_value = "p50,p99,p99.99,max,missed"
    )]
    pub stats: Vec<String>,
    /// A candidate statistic higher than the baseline's by more than this % (and by more than
    /// --min-delta) is a regression; STAT=PCT sets one statistic's threshold (repeatable)
    /// [default: 10%]
    #[arg(long = "threshold", value_name = "[STAT=]PCT", value_delimiter = ',')]
    pub thresholds: Vec<String>,
    /// Latency changes up to this are noise, whatever their % (a bare number is µs)
    #[arg(long, value_name = "DUR", default_value = "1us")]
    pub min_delta: String,
    /// The statistic in the cells of the load-case matrix
    #[arg(long, value_name = "STAT", default_value = "max")]
    pub matrix: String,
    /// Rows of the load-case matrix: the values of this tag (e.g. kernel) [default: one row per
    /// group]
    #[arg(long, value_name = "TAGKEY")]
    pub rows: Option<String>,
    /// Also write the groups' distributions overlaid (tail latency and exceedance, SVG and
    /// PNG) into this directory
    #[arg(long, value_name = "DIR")]
    pub plot: Option<PathBuf>,
    /// Print JSON (schema rtscope.compare/1) instead of text
    #[arg(long)]
    pub json: bool,
    /// Exit 0 even when a candidate regresses (report only)
    #[arg(long)]
    pub no_fail: bool,
}

/// Runs `rtscope compare …`: exit 0, or 1 when a candidate regresses against the baseline.
pub fn run(a: &CompareArgs, out: &mut dyn Write) -> anyhow::Result<ExitStatus> {
    let stats = a
        .stats
        .iter()
        .map(|s| Stat::parse(s, "--stat"))
        .collect::<Result<Vec<_>, _>>()?;
    let thresholds = Thresholds::parse(&a.thresholds, &a.min_delta)?;
    let matrix_stat = Stat::parse(&a.matrix, "--matrix")?;
    let store = record::open_existing(a.db.as_deref())?;
    let groups = a
        .selectors
        .iter()
        .enumerate()
        .map(|(i, text)| Ok(Group::new(i, text, load_group(&store, text)?)))
        .collect::<Result<Vec<_>, UsageError>>()?;
    let c = Comparison::new(groups, &stats, thresholds, matrix_stat, a.rows.as_deref());
    if let (Some(key), None) = (&a.rows, &c.matrix) {
        eprintln!("note: --rows {key}: no load-case matrix, as no run has a `case` tag or a campaign load case");
    }
    let status = if c.regressions() > 0 && !a.no_fail {
        ExitStatus::LimitExceeded
    } else {
        ExitStatus::Success
    };
    if let Some(dir) = &a.plot {
        for path in plot::write(&c, dir)? {
            eprintln!("wrote {}", path.display());
        }
    }
    if a.json {
        let doc = json::document(&c, status.code());
        writeln!(out, "{}", serde_json::to_string_pretty(&doc)?)?;
    } else {
        out.write_all(text::render(&c).as_bytes())?;
    }
    Ok(status)
}

/// The runs one selector names, read from the store.
fn load_group(store: &Store, text: &str) -> Result<Vec<RunData>, UsageError> {
    let sel = select::Selector::parse(text)?;
    let ids = select::resolve(store, &sel, text)?;
    let runs = ids
        .into_iter()
        .map(|id| load_run(store, id))
        .collect::<Result<Vec<_>, _>>()?;
    for r in runs.iter().filter(|r| r.status != "complete") {
        eprintln!(
            "note: run {} ('{text}') is {}: its statistics cover what was recorded",
            r.id, r.status
        );
    }
    Ok(runs)
}

fn load_run(store: &Store, id: RunId) -> Result<RunData, UsageError> {
    let err = |e: rtscope_store::StoreError| UsageError::new(e.to_string());
    let detail = store.run(id).map_err(err)?;
    let campaign = store
        .campaign_of(id)
        .map_err(err)?
        .map(|(c, r)| (c.name, r.load_case));
    Ok(RunData::from_detail(&detail, campaign))
}
