//! `rtscope compare A B [C…]`: groups of recorded runs side by side, a load-case matrix, and a
//! verdict per statistic against the first group (the baseline), with exit code 1 on a
//! regression for CI. See docs/compare.md.
//!
//! The analysis is rtscope-analysis's (reading the groups too: `compare::load`); this file
//! reads the options and prints.

use crate::cli::compare::CompareArgs;
use rtscope_analysis::compare::model::Stat;
use rtscope_analysis::compare::plot;
use rtscope_analysis::compare::request::{self, Request};
use rtscope_analysis::compare::verdict::Thresholds;
use rtscope_common::error::{warn, ExitStatus};
use rtscope_present::compare_json as json;
use rtscope_present::compare_text as text;
use std::io::Write;

/// Runs `rtscope compare …`: exit 0, or 1 when a candidate regresses against the baseline.
pub fn run(a: &CompareArgs, out: &mut dyn Write) -> anyhow::Result<ExitStatus> {
    let mut thresholds = Thresholds::parse(&a.thresholds, &a.min_delta)?;
    thresholds.threshold_only = a.threshold_only;
    thresholds.fail_untested = a.fail_untested;
    let r = Request {
        selectors: a.selectors.clone(),
        // None: --stat not given, the groups' defaults (noise's own for noise runs).
        stats: (a.stats.as_ref())
            .map(|v| v.iter().map(|s| Stat::parse(s, "--stat")).collect())
            .transpose()?,
        thresholds,
        matrix_stat: Stat::parse(&a.matrix, "--matrix")?,
        rows: a.rows.clone(),
        tail: a.tail_level.map(|p| (p, a.assume_stationary)),
        no_fail: a.no_fail,
    };
    let store = super::open_db(a.db.as_deref())?;
    let o = request::run(&store, &r)?;
    o.notes.iter().for_each(|n| warn(n));
    if let Some(dir) = &a.plot {
        for path in plot::write(&o.comparison, dir)? {
            warn(&format!("wrote {}", path.display()));
        }
    }
    crate::commands::fleet::compare_ci(&a.ci_output, &o.comparison, out)?;
    if a.json {
        let doc = json::document(&o.comparison, o.status.code());
        writeln!(out, "{}", serde_json::to_string_pretty(&doc)?)?;
    } else {
        out.write_all(text::render(&o.comparison).as_bytes())?;
    }
    Ok(o.status)
}
