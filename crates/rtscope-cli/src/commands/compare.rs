//! `rtscope compare A B [C…]`: groups of recorded runs side by side, a load-case matrix, and a
//! verdict per statistic against the first group (the baseline), with exit code 1 on a
//! regression for CI. See docs/compare.md.
//!
//! The analysis is rtscope-analysis's (reading the groups too: `compare::load`); this file
//! reads the options and prints.

use crate::cli::compare::CompareArgs;
use rtscope_analysis::compare::analysis::Comparison;
use rtscope_analysis::compare::model::Stat;
use rtscope_analysis::compare::verdict::Thresholds;
use rtscope_analysis::compare::{json, load, plot, text};
use rtscope_common::error::ExitStatus;
use std::io::Write;

/// Runs `rtscope compare …`: exit 0, or 1 when a candidate regresses against the baseline.
pub fn run(a: &CompareArgs, out: &mut dyn Write) -> anyhow::Result<ExitStatus> {
    // None: --stat not given, the groups' defaults (noise's own for noise runs).
    let stats = a
        .stats
        .as_ref()
        .map(|v| v.iter().map(|s| Stat::parse(s, "--stat")).collect())
        .transpose()?;
    let mut thresholds = Thresholds::parse(&a.thresholds, &a.min_delta)?;
    thresholds.threshold_only = a.threshold_only;
    thresholds.fail_untested = a.fail_untested;
    let matrix_stat = Stat::parse(&a.matrix, "--matrix")?;
    let store = super::open_db(a.db.as_deref())?;
    let loaded = load::groups(&store, &a.selectors)?;
    for note in &loaded.notes {
        rtscope_common::error::warn(note);
    }
    let groups = loaded.groups;
    let stats = load::stats_for(&groups, stats)?;
    let mut c = Comparison::new(groups, &stats, thresholds, matrix_stat, a.rows.as_deref());
    if let Some(p) = a.tail_level {
        c = c
            .with_tail_level(p, a.assume_stationary)
            .with_tail_envelopes(&store)?;
    }
    let stacks = load::stacks(&store, &c.groups)?;
    let mut unreadable: Vec<_> = stacks
        .iter()
        .filter_map(|(id, s)| match s {
            rtscope_analysis::compare::functions::RunStacks::Unreadable(why) => Some((id, why)),
            _ => None,
        })
        .collect();
    unreadable.sort();
    for (id, why) in unreadable {
        rtscope_common::error::warn(&format!(
            "note: run {id}: its explanation summary is unreadable ({}): left out of the kernel functions",
            rtscope_core::text::escape(why)
        ));
    }
    c = c.with_functions(&stacks);
    if let (Some(key), None) = (&a.rows, &c.matrix) {
        rtscope_common::error::warn(&format!("note: --rows {key}: no load-case matrix, as no run has a `case` tag or a campaign load case"));
    }
    let status = if c.regressions() > 0 && !a.no_fail {
        ExitStatus::LimitExceeded
    } else {
        ExitStatus::Success
    };
    if let Some(dir) = &a.plot {
        for path in plot::write(&c, dir)? {
            rtscope_common::error::warn(&format!("wrote {}", path.display()));
        }
    }
    crate::commands::fleet::compare_ci(&a.ci_output, &c, out)?;
    if a.json {
        let doc = json::document(&c, status.code());
        writeln!(out, "{}", serde_json::to_string_pretty(&doc)?)?;
    } else {
        out.write_all(text::render(&c).as_bytes())?;
    }
    Ok(status)
}
