//! `rtscope compare --json`: the comparison as one JSON document, schema `rtscope.compare/3`
//! (documented in docs/compare.md).

use rtscope_analysis::compare::analysis::{Comparison, Matrix, StatRow};
use rtscope_analysis::compare::change::Change;
use rtscope_analysis::compare::functions::{FunctionComparison, FunctionRow, GroupTime, Presence};
use rtscope_analysis::compare::group::Group;
use rtscope_analysis::compare::tail::{Side, TailRow};
use serde_json::{json, Map, Value};

/// The schema name and version written into every document.
pub const SCHEMA: &str = "rtscope.compare/3";

/// Builds the document; `exit_code` is the code the command exits with.
pub fn document(c: &Comparison, exit_code: i32) -> Value {
    let names: Vec<&str> = c.groups.iter().map(|g| g.name.as_str()).collect();
    json!({
        "schema": SCHEMA,
        "baseline": names[0],
        "groups": c.groups.iter().map(group).collect::<Vec<_>>(),
        "thresholds": {
            "default_pct": c.thresholds.default_pct,
            "per_stat_pct": c.thresholds.per_stat.iter().map(|(s, p)| (s.to_string(), json!(p))).collect::<Map<_, _>>(),
            "min_delta_ns": c.thresholds.min_delta_ns,
            "threshold_only": c.thresholds.threshold_only,
            "fail_untested": c.thresholds.fail_untested,
        },
        "statistics": c.stats.iter().map(|r| stat(c, r, &names)).collect::<Vec<_>>(),
        "matrix": c.matrix.as_ref().map(|m| matrix(c, m)),
        "differences": c.differences.iter().map(|d| json!({
            "kind": d.kind.as_str(),
            "setting": d.setting,
            "values": d.values.iter().map(|(g, v)| (g.clone(), json!(v))).collect::<Map<_, _>>(),
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
        "kernel_functions": c.functions.as_ref().map(functions),
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
        "samples": g.merged.totals.samples,
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
        "values": names.iter().zip(&r.values).map(|(n, v)| (n.to_string(), json!(v))).collect::<Map<_, _>>(),
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

/// Function rows written per candidate; the rest are summed in `rest`.
const FUNCTION_ROWS: usize = 200;

/// The comparison by kernel function ([`rtscope_analysis::compare::functions`]).
fn functions(f: &FunctionComparison) -> Value {
    let coverage = f.coverage.iter().map(|c| {
        json!({
            "group": c.group,
            "runs_with_stacks": c.with_stacks,
            "left_out": c.left_out.iter().map(|(id, why)| json!({"run": id, "reason": why.json_name()})).collect::<Vec<_>>(),
            "traced_spike_ns": c.traced_ns,
            "charged_to_functions_ns": c.function_ns,
            "exposure": c.exposure,
            "explain_thresholds_ns": c.thresholds_ns,
        })
    });
    let side = |s: &GroupTime| json!({"ns": s.ns, "spikes": s.spikes, "rate_ns": s.rate, "share": s.share});
    let row = |r: &FunctionRow| {
        json!({
            "function": r.function,
            "baseline": side(&r.base),
            "candidate": side(&r.cand),
            "change_ns": r.change,
            "presence": match r.presence { Presence::Both => "both", Presence::New => "new", Presence::Gone => "gone" },
            "outcome": r.outcome.word(),
            "significant": r.outcome.significant(),
            "holm_p": r.outcome.holm_p(),
            "mann_whitney": r.outcome.test().map(|t| json!({
                "u": t.u, "p": t.p, "min_p": t.min_p, "decidable": t.decidable(),
                "strata": t.sizes.iter().map(|(b, c)| json!([b, c])).collect::<Vec<_>>(),
            })),
        })
    };
    let candidates = f.candidates.iter().map(|c| {
        let rest = c.rows.get(FUNCTION_ROWS..).unwrap_or_default();
        json!({
            "group": c.group,
            "compared": c.compared,
            "holm_tests": c.rows.iter().filter(|r| r.outcome.holm_p().is_some()).count(),
            "functions": c.rows.iter().take(FUNCTION_ROWS).map(row).collect::<Vec<_>>(),
            "rest": (!rest.is_empty()).then(|| json!({
                "functions": rest.len(),
                "baseline_rate_ns": rest.iter().map(|r| r.base.rate).sum::<f64>(),
                "candidate_rate_ns": rest.iter().map(|r| r.cand.rate).sum::<f64>(),
                "significant": rest.iter().filter(|r| r.outcome.significant()).count(),
            })),
        })
    });
    json!({
        "per": f.exposure.json_name(),
        "thresholds_differ": f.thresholds_differ(),
        "groups": coverage.collect::<Vec<_>>(),
        "candidates": candidates.collect::<Vec<_>>(),
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
