//! `rtscope export`: a recorded run exported as CSV, JSON and Parquet, loaded back with pandas
//! and pyarrow (python3 with `pip install pandas pyarrow`; the tests fail without them), and
//! the errors: unknown run, unusable output directory.

use crate::common;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const TABLES: [&str; 10] = [
    "run",
    "threads",
    "histogram",
    "series",
    "events",
    "samples",
    "environment",
    "monitor",
    "top_threads",
    "loads",
];

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A fresh directory for one test.
fn dir(name: &str) -> PathBuf {
    common::fresh_dir(&format!("export-{name}"))
}

fn rtscope(args: &[&str]) -> Output {
    common::run(env!("CARGO_BIN_EXE_rtscope"), args)
}

fn dump(o: &Output) -> String {
    common::dump(o)
}

/// Records a short run with `label` into `db`; returns its id.
fn record(db: &Path, label: &str) -> String {
    let db = db.to_str().unwrap();
    let o = {
        let _rt = common::rt_lock();
        rtscope(
            &[
                &common::SHORT_MEASURE[..],
                &[
                    "--raw",
                    "--db",
                    db,
                    "--label",
                    label,
                    "--tag",
                    "k=v",
                    "--event-above",
                    "1us",
                ],
            ]
            .concat(),
        )
    };
    assert_eq!(o.status.code(), Some(0), "measure failed\n{}", dump(&o));
    let show = runs_show(Path::new(db), "last");
    show["id"].as_i64().expect("run id").to_string()
}

/// A synthetic run written through the real store (no measurement, so no root): for the tests
/// of export's own behaviour, not of what a measurement stores.
fn synthetic(db: &Path) -> String {
    use rtscope_testkit::synthetic::{write_run, SyntheticRun};
    let mut store = rtscope_store::Store::open(db).unwrap();
    let spec = SyntheticRun {
        samples: 2_000,
        ..SyntheticRun::default()
    };
    write_run(&mut store, &spec).unwrap().to_string()
}

fn runs_show(db: &Path, run: &str) -> Value {
    let o = rtscope(&["runs", "--db", db.to_str().unwrap(), "show", run, "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", dump(&o));
    serde_json::from_slice(&o.stdout).expect("runs show --json is JSON")
}

fn export(db: &Path, run: &str, out: &Path, extra: &[&str]) -> Output {
    let mut args = vec![
        "export",
        run,
        "--db",
        db.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    rtscope(&args)
}

/// What the pandas checks need, and how to install it.
const PANDAS: &str =
    "python3 with pandas and pyarrow is not installed: run `pip install pandas pyarrow`";

/// Whether python3 can import pandas and pyarrow.
fn have_pandas() -> bool {
    rtscope_testkit::python3_imports("pandas, pyarrow")
}

/// Runs a Python check script with `args`; panics with its output unless it prints `ok`.
fn python(script: &str, args: &[&str]) {
    rtscope_testkit::require!(have_pandas(), "{PANDAS}");
    let o = Command::new("python3")
        .arg("-c")
        .arg(script)
        .args(args)
        .output()
        .expect("run python3");
    assert!(
        o.status.success() && text(&o.stdout).trim_end().ends_with("ok"),
        "the pandas check failed\n{}",
        dump(&o)
    );
}

/// Loads every file with pandas (read_csv, read_parquet, json) and checks them against each
/// other and against `rtscope runs show --json`.
const CHECK_ALL: &str = r#"
import json, os, sys
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

out, rid, show = sys.argv[1], int(sys.argv[2]), json.load(open(sys.argv[3]))
TABLES = sys.argv[4].split(",")
doc = json.load(open(f"{out}/run-{rid}.json"))
assert doc["schema"] == "rtscope.export/1", doc["schema"]
assert [k for k in doc if k != "schema"] == TABLES, list(doc)

f = {}
for t in TABLES:
    base = f"{out}/run-{rid}-{t}"
    c, p, j = pd.read_csv(base + ".csv"), pd.read_parquet(base + ".parquet"), pd.DataFrame(doc[t])
    # A plain measure run has no load, and this one is usually too short (300 wake-ups at
    # 200 us) for thread shares — on a loaded machine it may last long enough to have some:
    # empty tables, with the same columns, or the general checks below.
    if t == "loads" or (t == "top_threads" and len(c) == 0):
        assert len(c) == len(p) == len(doc[t]) == 0 and list(c.columns) == list(p.columns), t
        continue
    assert list(c.columns) == list(p.columns) == list(j.columns), (t, c.columns, p.columns, j.columns)
    assert len(c) == len(p) == len(j) > 0, (t, len(c), len(p), len(j))
    for col in p.columns:
        if col.endswith("_ns"):
            want = "float64" if col == "mean_ns" else "int64"
            for fmt, df in (("csv", c), ("parquet", p), ("json", j)):
                assert str(df[col].dtype) == want, (t, fmt, col, df[col].dtype)
    assert (p.run_id == rid).all(), t
    pd.testing.assert_frame_equal(c, p, check_dtype=False)
    pd.testing.assert_frame_equal(j, p, check_dtype=False)
    f[t] = p

schema = pq.read_schema(f"{out}/run-{rid}-threads.parquet")
assert schema.field("samples").type == pa.int64() and not schema.field("samples").nullable
assert schema.field("min_ns").type == pa.int64() and schema.field("min_ns").nullable
assert schema.field("mean_ns").type == pa.float64()
assert schema.field("policy").type == pa.string()
assert pq.read_metadata(f"{out}/run-{rid}-run.parquet").metadata[b"rtscope.schema"] == b"rtscope.export/1"

# Integer columns are delta-encoded, floats PLAIN, repeated text dictionary-encoded; the raw
# samples (read equal to the CSV above) take a fraction of the CSV's bytes.
sm = pq.read_metadata(f"{out}/run-{rid}-samples.parquet")
for g in range(sm.num_row_groups):
    for c in range(sm.num_columns):
        assert sm.row_group(g).column(c).encodings == ("DELTA_BINARY_PACKED", "RLE"), (g, c)
def encodings(table):
    g = pq.read_metadata(f"{out}/run-{rid}-{table}.parquet").row_group(0)
    return {g.column(c).path_in_schema: g.column(c).encodings for c in range(g.num_columns)}
th_enc, mo_enc = encodings("threads"), encodings("monitor")
assert th_enc["samples"] == ("DELTA_BINARY_PACKED", "RLE") and th_enc["mean_ns"] == ("PLAIN", "RLE"), th_enc
# The monitor's units repeat: a dictionary page, then indices (its metric names repeat only in
# a run long enough for several points per metric).
assert mo_enc["unit"] == ("PLAIN", "RLE_DICTIONARY", "RLE"), mo_enc
data = sum(sm.row_group(g).total_byte_size for g in range(sm.num_row_groups))
csv_bytes = os.path.getsize(f"{out}/run-{rid}-samples.csv")
assert 0 < data * 2 < csv_bytes, (data, csv_bytes)

run = f["run"].iloc[0]
assert len(f["run"]) == 1
assert (run.kind, run.label, run.status) == ("measure", show["label"], "complete"), run
assert json.loads(run.tags) == {"k": "v"} == show["tags"], run.tags
assert json.loads(run.command_line) == show["command_line"]
assert run.measured_ns == show["measured_ns"] and run.exit_code == 0

th = f["threads"].set_index("thread")
assert len(th) == len(show["thread_stats"])
for s in show["thread_stats"]:
    r = th.loc[s["thread"]]
    for col in ("samples", "min_ns", "max_ns", "max_cycle", "max_offset_ns", "missed_periods", "interval_ns"):
        assert r[col] == s[col], (s["thread"], col, r[col], s[col])
    for label, v in s["percentiles_ns"].items():
        assert r[label.replace(".", "_") + "_ns"] == v, (label, r, v)
    assert abs(r.mean_ns - s["mean_ns"]) < 1e-6
    assert abs(r.miss_ratio - s["miss_ratio"]) < 1e-12, (r.miss_ratio, s["miss_ratio"])

h = f["histogram"]
per_thread = h[h.thread >= 0].groupby("thread")["count"].sum()
assert per_thread.to_dict() == th.samples.to_dict(), (per_thread, th.samples)
assert h[h.thread == -1]["count"].sum() == show["samples"] == th.samples.sum()
assert (h.width_ns >= 1).all() and (h.groupby("thread").lowest_ns.diff().dropna() > 0).all()

se = f["series"]
assert len(se) == show["series_points"]
assert se.groupby("thread").samples.sum().to_dict() == th.samples.to_dict()

ev = f["events"]
assert len(ev) == show["events"] and (ev.latency_ns >= 1000).all()

env = f["environment"]
assert dict(zip(env.key, env.value)) == show["environment"]

mo = f["monitor"]
assert len(mo) > 0 and (mo.unit != "").all() and (mo.offset_ns >= 0).all()
assert "load.1m" in set(mo.metric)
print("ok")
"#;

#[test]
fn export_writes_every_table_in_every_format_and_pandas_loads_them() {
    rtscope_testkit::require!(have_pandas(), "{PANDAS}");
    let d = dir("all");
    let db = d.join("r.db");
    let id = record(&db, "x");
    let out = d.join("out");
    let o = export(&db, &id, &out, &["-f", "csv,json,parquet"]);
    assert_eq!(o.status.code(), Some(0), "{}", dump(&o));

    // One `wrote PATH (N rows)` line per file, and nothing else in the directory.
    let stdout = text(&o.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 2 * TABLES.len() + 1, "{stdout}");
    let mut want: Vec<String> = TABLES.iter().map(|t| format!("run-{id}-{t}.csv")).collect();
    want.push(format!("run-{id}.json"));
    want.extend(TABLES.iter().map(|t| format!("run-{id}-{t}.parquet")));
    for (line, name) in lines.iter().zip(&want) {
        let path = out.join(name);
        let prefix = format!("wrote {} (", path.display());
        assert!(
            line.starts_with(&prefix) && line.ends_with(" rows)"),
            "{line}"
        );
        assert!(path.is_file(), "{} missing", path.display());
    }
    let mut found: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    found.sort();
    want.sort();
    assert_eq!(found, want, "no partial or extra files");

    let show = d.join("show.json");
    std::fs::write(&show, runs_show(&db, &id).to_string()).unwrap();
    python(
        CHECK_ALL,
        &[
            out.to_str().unwrap(),
            &id,
            show.to_str().unwrap(),
            &TABLES.join(","),
        ],
    );
}

#[test]
fn csv_quoting_of_a_label_with_comma_quote_and_newline_round_trips_through_pandas() {
    let d = dir("quoting");
    let db = d.join("r.db");
    let label = "a,b \"quoted\"\nsecond line";
    // `--label` refuses control characters since issue 12; a database written before (or by
    // another tool) may still hold one, and the export must quote it.
    let id = synthetic(&db);
    let o = std::process::Command::new("sqlite3")
        .arg(&db)
        .arg(format!(
            "UPDATE runs SET label = '{}' WHERE id = {id}",
            label.replace('\'', "''")
        ))
        .output()
        .expect("the sqlite3 program");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = d.join("out");
    let o = export(&db, "last", &out, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", dump(&o));
    let csv = std::fs::read_to_string(out.join(format!("run-{id}-run.csv"))).unwrap();
    assert!(csv.contains("\"a,b \"\"quoted\"\"\nsecond line\""), "{csv}");
    python(
        r#"
import json, os, sys
import pandas as pd
out, rid, label = sys.argv[1], sys.argv[2], sys.argv[3]
c = pd.read_csv(f"{out}/run-{rid}-run.csv")
p = pd.read_parquet(f"{out}/run-{rid}-run.parquet")
j = json.load(open(f"{out}/run-{rid}.json"))["run"]
assert c.label[0] == label, repr(c.label[0])
assert p.label[0] == label, repr(p.label[0])
assert j[0]["label"] == label, repr(j[0]["label"])
assert len(c) == 1 and len(c.columns) == len(p.columns)
print("ok")
"#,
        &[out.to_str().unwrap(), &id, label],
    );
}

#[test]
fn unknown_run_exits_2_naming_it() {
    let d = dir("unknown");
    let db = d.join("r.db");
    synthetic(&db);
    let out = d.join("out");
    for run in ["99", "nonsense"] {
        let o = export(&db, run, &out, &[]);
        assert_eq!(o.status.code(), Some(2), "{}", dump(&o));
        let err = text(&o.stderr);
        assert!(err.contains(run) && !err.contains("panicked"), "{err}");
        assert!(o.stdout.is_empty(), "{}", dump(&o));
    }
    assert!(!out.exists(), "nothing written for an unknown run");

    let missing = d.join("missing.db");
    let o = export(&missing, "last", &out, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", dump(&o));
    assert!(
        text(&o.stderr).contains(missing.to_str().unwrap()),
        "{}",
        dump(&o)
    );
    assert!(!missing.exists(), "export must not create a database");
}

#[test]
fn unwritable_output_directory_exits_2_naming_it() {
    let d = dir("unwritable");
    let db = d.join("r.db");
    let id = synthetic(&db);
    // Root may write anywhere the permissions forbid, so the directories are made unusable by
    // a regular file standing where a directory must be.
    let file = d.join("a-file");
    std::fs::write(&file, "not a directory").unwrap();
    for out in [file.clone(), file.join("sub")] {
        let o = export(&db, &id, &out, &[]);
        assert_eq!(o.status.code(), Some(2), "{}", dump(&o));
        let err = text(&o.stderr);
        assert!(
            err.contains(out.to_str().unwrap()) && !err.contains("panicked"),
            "{err}"
        );
    }
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "not a directory");
}

#[test]
fn formats_are_written_once_each_as_asked() {
    let d = dir("formats");
    let db = d.join("r.db");
    let id = synthetic(&db);
    let out = d.join("out");
    let o = export(&db, &id, &out, &["-f", "parquet", "-f", "json,parquet"]);
    assert_eq!(o.status.code(), Some(0), "{}", dump(&o));
    let stdout = text(&o.stdout);
    assert_eq!(stdout.lines().count(), TABLES.len() + 1, "{stdout}");
    assert!(stdout.lines().all(|l| l.starts_with("wrote ")), "{stdout}");
    assert!(stdout
        .lines()
        .nth(TABLES.len())
        .unwrap()
        .contains(&format!("run-{id}.json")));
    assert!(!out.join(format!("run-{id}-run.csv")).exists());
}

/// Seed 001's table: `export --wide` writes the histogram one row per microsecond, one count
/// column per CPU and `all`, each column holding every sample of its thread.
#[test]
fn export_wide_gives_one_row_per_microsecond_and_a_column_per_cpu() {
    let d = dir("wide");
    let db = d.join("w.db");
    let id = synthetic(&db);
    let out = d.join("out");
    let o = export(&db, &id, &out, &["-f", "csv", "--wide"]);
    assert_eq!(o.status.code(), Some(0), "{}", dump(&o));
    let csv = std::fs::read_to_string(out.join(format!("run-{id}-histogram-wide.csv"))).unwrap();
    let mut lines = csv.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!(head[0], "latency_us");
    assert_eq!(*head.last().unwrap(), "all");
    assert!(head[1..head.len() - 1]
        .iter()
        .all(|c| c.starts_with("cpu") || c.starts_with("thread")));
    let rows: Vec<Vec<u64>> = lines
        .map(|l| l.split(',').map(|v| v.parse().unwrap()).collect())
        .collect();
    // Consecutive microseconds from 0.
    assert!(rows.iter().enumerate().all(|(i, r)| r[0] == i as u64));
    let show = runs_show(&db, &id);
    let samples = show["samples"].as_u64().unwrap();
    let all: u64 = rows.iter().map(|r| r[head.len() - 1]).sum();
    let threads: u64 = rows
        .iter()
        .map(|r| r[1..head.len() - 1].iter().sum::<u64>())
        .sum();
    assert_eq!(all, samples, "{show}");
    assert_eq!(threads, samples);
}
