//! The Prometheus textfile checked by Prometheus' own `promtool check metrics` (Debian's
//! prometheus package), and the Grafana dashboard: its structure (it uses the data source chosen
//! at import and draws per-bucket counts in its heat map, issue 28) and Grafana's own dashboard
//! schema (npm's `@grafana/schema`, checked by `tsc`: no Grafana server can be installed from
//! Debian or the other registries CI uses; .ci/run installs both in $RTSCOPE_NODE).

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
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/grafana-rtscope-fleet.json"
    );
    let text = std::fs::read_to_string(path).unwrap();
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

/// Where .ci/run installs `tsc` and `@grafana/schema` (`$RTSCOPE_NODE`).
fn node_dir() -> std::path::PathBuf {
    std::env::var_os("RTSCOPE_NODE").map_or_else(|| "/var/cache/rtscope-node".into(), Into::into)
}

#[test]
fn the_dashboard_passes_grafanas_own_schema() {
    let node = node_dir();
    let tsc = node.join("node_modules/.bin/tsc");
    rtscope_testkit::require!(
        tsc.exists() && node.join("node_modules/@grafana/schema").is_dir(),
        "no tsc and @grafana/schema in {} (npm install --prefix {0} @grafana/schema@13.2.3 typescript@5.9.3)",
        node.display()
    );
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/grafana-rtscope-fleet.json"
    );
    let mut d: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    // The import wrapper's fields are not the dashboard model's: Grafana strips them at import.
    for k in ["__inputs", "__requires", "__elements"] {
        d.as_object_mut().unwrap().remove(k);
    }
    let dir = std::env::temp_dir().join(format!("rtscope-grafana-schema-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // An object literal checked with `satisfies`: literal types (panel types, variable kinds)
    // and unknown properties are checked too, which an imported .json module would not be.
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
    let o = Command::new(&tsc).arg("-p").arg(&dir).output().unwrap();
    let said = String::from_utf8_lossy(&o.stdout).to_string() + &String::from_utf8_lossy(&o.stderr);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        o.status.success(),
        "Grafana's dashboard schema refuses the dashboard:\n{said}"
    );
}
