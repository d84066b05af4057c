//! The Prometheus textfile checked by Prometheus' own `promtool check metrics` (Debian's
//! prometheus package), and the Grafana dashboard: its structure (it uses the data source chosen
//! at import and draws per-bucket counts in its heat map, issue 28) and Grafana's own dashboard
//! schema (npm's `@grafana/schema`, checked by `tsc`: no Grafana server can be installed from
//! Debian or the other registries CI uses; .ci/run installs both in $RTSCOPE_NODE) and the rules
//! of Grafana's dashboard linter (rtscope_testkit::grafana says why not the linter itself).

use rtscope_common::limits;
use rtscope_formats::{prometheus, Report};
use rtscope_store::Store;
use rtscope_testkit::synthetic::{write_run, SyntheticRun};
use std::io::Write;
use std::process::{Command, Stdio};

fn report() -> Report {
    let d = std::env::temp_dir().join(format!("rtscope-promtool-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    let mut s = Store::open(&d.join("r.db")).unwrap();
    let spec = SyntheticRun {
        label: "rt \"kernel\"\\x".into(),
        samples: 5_000,
        monitors: false,
        ..SyntheticRun::default()
    };
    let id = write_run(&mut s, &spec).unwrap();
    let b = s.bundle(id, false).unwrap();
    let lim = [limits::parse("max=1us").unwrap()];
    let r = Report::from_bundle(&b, &lim).unwrap();
    let _ = std::fs::remove_dir_all(&d);
    r
}

/// `promtool check metrics` exited 3 on every rtscope textfile (21 times `non-summary metrics
/// should not have "quantile" label`); it must accept it with nothing to say.
#[test]
fn promtool_accepts_the_textfile() {
    rtscope_testkit::require!(
        rtscope_testkit::have("promtool", "--version"),
        "promtool is not installed (apt-get install prometheus; .ci/run installs it)"
    );
    let mut text = Vec::new();
    prometheus::write(&mut text, &report()).unwrap();
    let child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = child.expect("promtool runs");
    child.stdin.take().unwrap().write_all(&text).unwrap();
    let o = child.wait_with_output().unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        o.status.success() && said.trim().is_empty(),
        "promtool: {said}"
    );
}

#[test]
fn the_dashboard_uses_its_import_input_and_per_bucket_heatmap_counts() {
    let text = std::fs::read_to_string(DASHBOARD).unwrap();
    let d: serde_json::Value = serde_json::from_str(&text).unwrap();
    // Every input declared is referenced: Grafana substitutes `${NAME}` at import.
    for input in d["__inputs"].as_array().unwrap() {
        let name = input["name"].as_str().unwrap();
        assert!(
            text.contains(&format!("${{{name}}}")),
            "input {name} is never used"
        );
    }
    let var = d["templating"]["list"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["type"] == "datasource")
        .expect("a data source variable");
    assert_eq!(var["current"]["value"], "${DS_PROMETHEUS}");
    for p in d["panels"].as_array().unwrap() {
        for t in p["targets"].as_array().into_iter().flatten() {
            let expr = t["expr"].as_str().unwrap();
            assert!(!expr.contains("quantile"), "{expr}");
            if expr.contains("_bucket") {
                assert_eq!(p["type"], "heatmap");
                assert_eq!(t["format"], "heatmap", "cumulative buckets drawn as counts");
                assert_eq!(p["options"]["calculate"], false);
            }
        }
    }
}

const DASHBOARD: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../docs/grafana-rtscope-fleet.json"
);

#[test]
fn the_dashboard_passes_grafanas_own_schema() {
    rtscope_testkit::grafana::assert_schema_accepts(std::path::Path::new(DASHBOARD));
}

/// Grafana's dashboard linter counted 26 errors here (issue 51: no `job` and `instance`
/// variables or matchers, panels without a description, editable); its rules now find none.
#[test]
fn the_dashboard_breaks_no_rule_of_grafanas_dashboard_linter() {
    let d: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(DASHBOARD).unwrap()).unwrap();
    let found = rtscope_testkit::grafana::lint(&d);
    assert!(found.is_empty(), "{}", found.join("\n"));
}
