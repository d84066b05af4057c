//! The shipped Grafana dashboards checked two ways, for the tests of the crates that own their
//! series (the fleet textfile, watch's `/metrics`):
//!
//! * [`schema_errors`]: Grafana's own dashboard schema (npm's `@grafana/schema`, its TypeScript
//!   types) checked by `tsc`, both installed by .ci/run in `$RTSCOPE_NODE`;
//! * [`lint`]: the error rules of Grafana's dashboard linter (github.com/grafana/dashboard-linter
//!   v0.2.0, as its documentation states them) for the queries these dashboards use. The
//!   linter itself cannot be built from the registries this project's CI reaches: its module
//!   needs `github.com/grafana/loki/v3` and `github.com/grafana/grafana/apps/dashboard`, both
//!   AGPL and not to be used here. This is a check of the same rules written for rtscope, not
//!   the linter: PromQL is scanned, not parsed (a query Prometheus refuses fails the tests that
//!   run every query against a real Prometheus).

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Where .ci/run installs `tsc` and `@grafana/schema` (`$RTSCOPE_NODE`).
pub fn node_dir() -> PathBuf {
    std::env::var_os("RTSCOPE_NODE").map_or_else(|| "/var/cache/rtscope-node".into(), Into::into)
}

/// True when `tsc` and `@grafana/schema` are installed in [`node_dir`].
pub fn have_schema() -> bool {
    let node = node_dir();
    node.join("node_modules/.bin/tsc").exists()
        && node.join("node_modules/@grafana/schema").is_dir()
}

/// The test that Grafana's own schema accepts the dashboard at `path`: it fails naming what
/// `tsc` said; without `tsc` and `@grafana/schema` it cannot run ([`require!`](crate::require)).
pub fn assert_schema_accepts(path: &Path) {
    crate::require!(
        have_schema(),
        "no tsc and @grafana/schema in {} (npm install --prefix {0} @grafana/schema@13.2.3 typescript@5.9.3)",
        node_dir().display()
    );
    let said = schema_errors(path);
    assert!(
        said.is_none(),
        "Grafana's dashboard schema refuses the dashboard:\n{}",
        said.unwrap_or_default()
    );
}

/// What `tsc` says against the dashboard at `path` checked as Grafana's `Dashboard` type (an
/// object literal with `satisfies`: literal types and unknown properties are checked too), or
/// `None` when it accepts it. The import wrapper's fields (`__inputs`, …) are removed first:
/// Grafana strips them at import.
pub fn schema_errors(path: &Path) -> Option<String> {
    let node = node_dir();
    let mut d: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    for k in ["__inputs", "__requires", "__elements"] {
        d.as_object_mut().unwrap().remove(k);
    }
    let name = path.file_stem().unwrap().to_string_lossy();
    let dir = std::env::temp_dir().join(format!("rtscope-schema-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ts = format!(
        "import type {{ Dashboard }} from \"@grafana/schema\";\nexport const d = {} satisfies Dashboard;\n",
        serde_json::to_string_pretty(&d).unwrap()
    );
    std::fs::write(dir.join("dashboard.ts"), ts).unwrap();
    let modules = node.join("node_modules");
    let config = serde_json::json!({
        "compilerOptions": {
            "strict": true, "noEmit": true, "skipLibCheck": true,
            "module": "commonjs", "moduleResolution": "node", "baseUrl": ".",
            "typeRoots": [modules.join("@types")],
            "paths": { "@grafana/schema": [modules.join("@grafana/schema")] },
        },
        "files": ["dashboard.ts"],
    });
    std::fs::write(dir.join("tsconfig.json"), config.to_string()).unwrap();
    let o = Command::new(modules.join(".bin/tsc"))
        .arg("-p")
        .arg(&dir)
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let said = String::from_utf8_lossy(&o.stdout).to_string() + &String::from_utf8_lossy(&o.stderr);
    (!o.status.success()).then_some(said)
}

/// Units the linter's `panel-units-rule` accepts that a latency dashboard may use.
const UNITS: [&str; 12] = [
    "s",
    "ms",
    "µs",
    "ns",
    "ops",
    "short",
    "none",
    "percent",
    "percentunit",
    "bool_yes_no",
    "dateTimeAsIso",
    "dateTimeFromNow",
];

/// The panel types whose title, description, units and targets the linter checks.
const CHECKED: [&str; 6] = [
    "stat",
    "singlestat",
    "graph",
    "table",
    "timeseries",
    "gauge",
];

/// The linter's error findings for dashboard `d`, one line each (`rule: where: what`); empty
/// when it would report no error. Warnings (a variable's label) are not reported.
pub fn lint(d: &Value) -> Vec<String> {
    let mut out = Vec::new();
    if d["editable"].as_bool() != Some(false) {
        out.push("uneditable-dashboard: the dashboard is editable".to_string());
    }
    let vars: &[Value] = d["templating"]["list"]
        .as_array()
        .map_or(&[], Vec::as_slice);
    let sources: Vec<&Value> = vars.iter().filter(|v| v["type"] == "datasource").collect();
    if sources.is_empty() {
        out.push("template-datasource-rule: no templated data source".into());
    }
    for s in &sources {
        let name = s["name"].as_str().unwrap_or("");
        if !(name == "prometheus_datasource" || (sources.len() == 1 && name == "datasource")) {
            out.push(format!(
                "template-datasource-rule: the data source variable is named '{name}'"
            ));
        }
    }
    for name in ["job", "instance"] {
        template(vars, name, &mut out);
    }
    for v in vars.iter().filter(|v| v["type"] == "query") {
        variable(v, &mut out);
    }
    for p in d["panels"].as_array().map_or(&[][..], Vec::as_slice) {
        panel(p, &mut out);
    }
    out
}

/// `template-job-rule` / `template-instance-rule`.
fn template(vars: &[Value], name: &str, out: &mut Vec<String>) {
    let rule = format!("template-{name}-rule");
    let Some(t) = vars.iter().find(|v| v["name"] == name) else {
        out.push(format!("{rule}: no '{name}' variable"));
        return;
    };
    let uid = t["datasource"]["uid"].as_str().unwrap_or("");
    if !["$datasource", "${datasource}"].contains(&uid) {
        out.push(format!("{rule}: its data source is '{uid}'"));
    }
    if t["type"] != "query" {
        out.push(format!("{rule}: not a query variable"));
    }
    if t["multi"] != true {
        out.push(format!("{rule}: not a multi select"));
    }
    if t["allValue"] != ".+" {
        out.push(format!("{rule}: allValue is not '.+'"));
    }
}

/// `template-label-promql-rule` and `template-on-time-change-reload-rule`.
fn variable(v: &Value, out: &mut Vec<String>) {
    let name = v["name"].as_str().unwrap_or("");
    let q = v["query"]["query"]
        .as_str()
        .or_else(|| v["query"].as_str())
        .unwrap_or("");
    let f = q.split('(').next().unwrap_or("");
    let known = ["label_names", "label_values", "metrics", "query_result"].contains(&f);
    if !known || !q.ends_with(')') {
        out.push(format!(
            "template-label-promql-rule: variable '{name}': '{q}'"
        ));
    }
    if v["refresh"] != 2 {
        out.push(format!(
            "template-on-time-change-reload-rule: variable '{name}' is not refreshed on a time range change"
        ));
    }
}

fn panel(p: &Value, out: &mut Vec<String>) {
    let title = p["title"].as_str().unwrap_or("");
    let kind = p["type"].as_str().unwrap_or("");
    let checked = CHECKED.contains(&kind);
    if ["singlestat", "graph", "table", "timeseries"].contains(&kind) {
        let uid = p["datasource"]["uid"].as_str().unwrap_or("");
        if !["$datasource", "${datasource}"].contains(&uid) {
            out.push(format!("panel-datasource-rule: '{title}' uses '{uid}'"));
        }
    }
    if checked {
        if title.is_empty() || p["description"].as_str().unwrap_or("").is_empty() {
            out.push(format!(
                "panel-title-description-rule: '{title}' has no title or description"
            ));
        }
        let unit = p["fieldConfig"]["defaults"]["unit"].as_str().unwrap_or("");
        if !UNITS.contains(&unit) {
            out.push(format!("panel-units-rule: '{title}' has unit '{unit}'"));
        }
        if p["targets"].as_array().is_none_or(Vec::is_empty) {
            out.push(format!("panel-no-targets-rule: '{title}' has no target"));
        }
    }
    for t in p["targets"].as_array().map_or(&[][..], Vec::as_slice) {
        let expr = t["expr"].as_str().unwrap_or("");
        for e in query(expr) {
            out.push(format!("{e}: '{title}': {expr}"));
        }
    }
}

/// The target rules on one query: the rule names it breaks.
fn query(expr: &str) -> Vec<&'static str> {
    let mut broken = Vec::new();
    let sel = selectors(expr);
    if sel.is_empty() {
        broken.push("target-promql-rule");
    }
    for (name, matchers, before, after) in &sel {
        if !matchers.contains("job=~\"$job\"") {
            broken.push("target-job-rule");
        }
        if !matchers.contains("instance=~\"$instance\"") {
            broken.push("target-instance-rule");
        }
        let range = after.strip_prefix('[').and_then(|r| r.split(']').next());
        let func = before.trim_end().strip_suffix('(').map(|b| {
            b.trim_end()
                .rsplit(|c: char| !(c.is_alphanumeric() || c == '_'))
                .next()
                .unwrap_or("")
        });
        if name.ends_with("_total")
            && !(range.is_some() && matches!(func, Some("rate" | "irate" | "increase")))
        {
            broken.push("target-counter-agg-rule");
        }
        if matches!(func, Some("rate" | "irate")) && range != Some("$__rate_interval") {
            broken.push("target-rate-interval-rule");
        }
    }
    broken
}

/// The vector selectors of `expr` (metric names starting `rtscope_`, with or without braces):
/// (metric, the matchers between the braces, the text before the metric, the text after the
/// selector).
fn selectors(expr: &str) -> Vec<(&str, &str, &str, &str)> {
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(i) = expr[at..].find("rtscope_").map(|i| at + i) {
        let end = expr[i..]
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .map_or(expr.len(), |n| i + n);
        let name = &expr[i..end];
        let (matchers, rest) = match expr[end..].strip_prefix('{') {
            Some(r) => r.split_once('}').unwrap_or((r, "")),
            None => ("", &expr[end..]),
        };
        out.push((name, matchers, &expr[..i], rest));
        at = end;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_without_job_and_instance_matchers_or_with_a_bare_counter_breaks_the_rules() {
        assert_eq!(
            query(r#"sum(rtscope_x_total{job=~"$job", instance=~"$instance"})"#),
            ["target-counter-agg-rule"]
        );
        assert_eq!(
            query(r#"rate(rtscope_x_total{board="a"}[5m])"#),
            [
                "target-job-rule",
                "target-instance-rule",
                "target-rate-interval-rule"
            ]
        );
        let good = r#"sum by (le) (increase(rtscope_b_bucket{job=~"$job", instance=~"$instance"}[1h])) / rate(rtscope_c_total{job=~"$job", instance=~"$instance"}[$__rate_interval])"#;
        assert!(query(good).is_empty(), "{:?}", query(good));
    }

    #[test]
    fn an_editable_dashboard_without_job_and_instance_variables_breaks_the_rules() {
        let d = serde_json::json!({
            "editable": true,
            "templating": {"list": [{"name": "ds", "type": "datasource"}]},
            "panels": [{"type": "stat", "title": "t", "description": "",
                        "fieldConfig": {"defaults": {"unit": "s"}}, "targets": []}],
        });
        let rules: Vec<String> = lint(&d)
            .iter()
            .map(|l| l.split(':').next().unwrap().to_string())
            .collect();
        assert_eq!(
            rules,
            [
                "uneditable-dashboard",
                "template-datasource-rule",
                "template-job-rule",
                "template-instance-rule",
                "panel-title-description-rule",
                "panel-no-targets-rule",
            ]
        );
    }
}
