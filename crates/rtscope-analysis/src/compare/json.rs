//! `compare --json`: the comparison as one JSON document, schema `rtscope.compare/2`
//! (documented in docs/compare.md).

use super::analysis::{Comparison, Matrix, StatRow};
use super::change::Change;
use super::group::Group;
use super::tail::{Side, TailRow};
use rtscope_core::order::collect_map;
use serde_json::{json, Map, Value};

/// The schema name and version written into every document.
pub const SCHEMA: &str = "rtscope.compare/2";

/// Builds the document; `exit_code` is the code the command exits with.
pub fn document(c: &Comparison, exit_code: i32) -> Value {
    let names: Vec<&str> = c.groups.iter().map(|g| g.name.as_str()).collect();
    json!({
        "schema": SCHEMA,
        "baseline": names[0],
        "groups": c.groups.iter().map(group).collect::<Vec<_>>(),
        "thresholds": {
            "default_pct": c.thresholds.default_pct,
            "per_stat_pct": collect_map::<Map<_, _>, _>(c.thresholds.per_stat.iter().map(|(s, p)| (s.to_string(), json!(p)))),
            "min_delta_ns": c.thresholds.min_delta_ns,
            "threshold_only": c.thresholds.threshold_only,
            "fail_untested": c.thresholds.fail_untested,
        },
        "statistics": c.stats.iter().map(|r| stat(c, r, &names)).collect::<Vec<_>>(),
        "matrix": c.matrix.as_ref().map(|m| matrix(c, m)),
        "differences": c.differences.iter().map(|d| json!({
            "kind": d.kind.as_str(),
            "setting": d.setting,
            "values": collect_map::<Map<_, _>, _>(d.values.iter().map(|(g, v)| (g.clone(), json!(v)))),
        })).collect::<Vec<_>>(),
        "strata": {
            "keys": c.strata_keys.iter().map(|k| k.name()).collect::<Vec<_>>(),
            "candidates": c.strata.iter().map(|s| json!({
                "group": s.group,
                "matched": s.matched.iter().map(|(n, b, c)| json!({"name": n, "runs": [b, c]})).collect::<Vec<_>>(),
                "only_baseline": s.only_base,
                "only_candidate": s.only_cand,
            })).collect::<Vec<_>>(),
        },
        "tail": c.tail.as_ref().map(|t| tail(t, &names)),
        "regressions": c.regressions(),
        "verdict": if c.regressions() > 0 { "regression" } else { "ok" },
        "exit_code": exit_code,
    })
}

fn group(g: &Group) -> Value {
    let spread = g.run_max_spread();
    json!({
        "name": g.name,
        "selector": g.selector,
        "run_ids": g.runs.iter().map(|r| r.id).collect::<Vec<_>>(),
        "labels": g.distinct(|r| r.label.as_deref()),
        "kernels": g.distinct(|r| r.kernel.as_deref()),
        "campaigns": g.distinct(|r| r.campaign.as_deref()),
        "load_cases": g.distinct(|r| r.case.as_deref()),
        "samples": g.merged.samples,
        "run_max_ns": spread.map(|(lo, hi)| json!({"min": lo, "max": hi})),
    })
}

fn stat(c: &Comparison, r: &StatRow, names: &[&str]) -> Value {
    json!({
        "stat": r.stat.name(),
        "label": c.stat_name(r.stat),
        "unit": r.stat.unit(),
        "threshold_pct": r.threshold_pct,
        "floor": r.floor,
        "values": collect_map::<Map<_, _>, _>(names.iter().zip(&r.values).map(|(n, v)| (n.to_string(), json!(v)))),
        "changes": changes(&r.changes, names),
    })
}

/// The candidates' changes, each named by its group.
fn changes(changes: &[Change], names: &[&str]) -> Vec<Value> {
    names[1..]
        .iter()
        .zip(changes)
        .map(|(n, ch)| {
            let mut v = change(ch);
            v["group"] = json!(n);
            v
        })
        .collect()
}

/// The tail row: per group its level as `rtscope tail --json` writes one, or its refusals.
fn tail(t: &TailRow, names: &[&str]) -> Value {
    let groups: Vec<Value> = names
        .iter()
        .zip(&t.sides)
        .map(|(n, s)| {
            let (level, refusals) = match s {
                Side::Level(l) => (Some(l), &[][..]),
                Side::Envelope { level, refused, .. } => (Some(level), &refused[..]),
                Side::Refused(r) => (None, &r[..]),
                Side::Within => (None, &[][..]),
            };
            let envelope = match s {
                Side::Envelope { from, .. } => Some(from.as_str()),
                _ => None,
            };
            json!({"group": n, "level": level, "refusals": refusals, "envelope": envelope})
        })
        .collect();
    json!({
        "probability": t.probability,
        "confidence": t.confidence,
        "assumed_stationary": t.assumed_stationary,
        "groups": groups,
        "changes": changes(&t.changes, names),
    })
}

/// One verdict cell (a statistic's change, or a load case's in the matrix).
fn change(ch: &Change) -> Value {
    json!({
        "delta": ch.delta.map(|d| d as i64),
        "delta_pct": ch.delta_pct,
        "verdict": ch.verdict.word(),
        "untested": ch.untested(),
        "threshold_verdict": ch.threshold_verdict.word(),
        "mann_whitney": ch.test.as_ref().map(|t| json!({
            "u": t.u, "p": t.p, "min_p": t.min_p, "decidable": t.decidable(),
            "strata": t.sizes.iter().map(|(b, c)| json!([b, c])).collect::<Vec<_>>(),
        })),
    })
}

fn matrix(c: &Comparison, m: &Matrix) -> Value {
    json!({
        "stat": m.stat.name(),
        "label": c.stat_name(m.stat),
        "unit": m.stat.unit(),
        "columns_are": c.case_word(),
        "rows_by": m.rows_by,
        "columns": m.columns,
        "rows": m.rows.iter().map(|(name, cells)| json!({"name": name, "cells": cells})).collect::<Vec<_>>(),
        "verdicts": m.verdicts.iter().map(|(name, v)| json!({"name": name, "cells": v.iter().map(change).collect::<Vec<_>>()})).collect::<Vec<_>>(),
    })
}
