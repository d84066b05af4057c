//! The Parquet writer's encodings read back by pyarrow (python3 with `pip install pandas
//! pyarrow`; the test fails without them): adversarial integers (the extremes, wrapping
//! deltas, nulls, blocks and pages cut mid-miniblock), repeated and distinct text with nulls
//! (dictionary or PLAIN) and a noisy run's samples, every value and each chunk's encoding
//! compared, and the samples' file at most a quarter of its CSV.

use rtscope_export::table::Table;
use rtscope_export::{csv, parquet};
use std::process::Command;

/// A 64-bit LCG: deterministic noise.
fn lcg(x: &mut u64) -> u64 {
    *x = x
        .wrapping_mul(6_364_136_223_846_793_005)
        .wrapping_add(1_442_695_040_888_963_407);
    *x >> 11
}

fn adversarial() -> Vec<i64> {
    let mut v = vec![0, i64::MIN, i64::MAX, i64::MIN, -1, 1, i64::MAX, 0];
    let mut x = 7;
    for i in 0..992 {
        let r = lcg(&mut x) as i64;
        v.push(match i % 5 {
            0 => r.wrapping_mul(4_096),
            1 => i,
            2 => -(r % 1_000),
            _ => r % 300_000,
        });
    }
    v
}

/// A noisy run: latencies mostly 3–40 µs with a tail to 2 ms, on a 200 µs grid.
fn samples() -> Vec<(i64, i64, i64)> {
    let mut x = 11;
    (0..20_000)
        .map(|c| {
            let r = lcg(&mut x);
            let latency = 3_000 + (r % 37_000) as i64 + if r % 500 == 0 { 2_000_000 } else { 0 };
            (c, latency, 1_000_000 + c * 200_000 + latency)
        })
        .collect()
}

/// A column's values, `None` a null; a column with a null is nullable.
#[derive(Clone)]
enum Col {
    Int(Vec<Option<i64>>),
    Text(Vec<Option<String>>),
}

/// Columns with the encoding pyarrow must report for their data pages.
type Columns = Vec<(&'static str, Col, &'static str)>;

const DELTA: &str = "DELTA_BINARY_PACKED";

fn columns() -> (Columns, Columns) {
    let a = adversarial();
    let nulls = a
        .iter()
        .enumerate()
        .map(|(i, &v)| (i % 3 != 0).then_some(v))
        .collect();
    // 1,000 rows: 10 full groups of 100 below (a group of a few rows would keep text PLAIN).
    // Text: 40 names in runs of 1–6 (a monitor table's metrics), 3 units with nulls, and
    // values that are all distinct (PLAIN: a dictionary would not be smaller).
    let metric = (0..a.len())
        .map(|i| Some(format!("metric.{}", (i / (1 + i % 6)) % 40)))
        .collect();
    let unit = (0..a.len())
        .map(|i| ["ns", "%", "é"].get(i % 4).map(|u| u.to_string()))
        .collect();
    let unique = (0..a.len()).map(|i| Some(format!("v{i}"))).collect();
    let t = vec![
        ("v", Col::Int(a.iter().copied().map(Some).collect()), DELTA),
        ("n", Col::Int(nulls), DELTA),
        (
            "constant",
            Col::Int(a.iter().map(|_| Some(-5)).collect()),
            DELTA,
        ),
        ("metric", Col::Text(metric), "RLE_DICTIONARY"),
        ("unit", Col::Text(unit), "RLE_DICTIONARY"),
        ("unique", Col::Text(unique), "PLAIN"),
    ];
    let s = samples();
    let int = |f: fn(&(i64, i64, i64)) -> i64| Col::Int(s.iter().map(|r| Some(f(r))).collect());
    let samples = vec![
        ("run_id", int(|_| 1), DELTA),
        ("thread", int(|_| 0), DELTA),
        ("cycle", int(|r| r.0), DELTA),
        ("latency_ns", int(|r| r.1), DELTA),
        ("offset_ns", int(|r| r.2), DELTA),
    ];
    (t, samples)
}

/// Rows `rows` of `cols` as a table.
fn table(name: &'static str, cols: &Columns, rows: std::ops::Range<usize>) -> Table {
    cols.iter().fold(Table::new(name), |t, (c, v, _)| match v {
        Col::Int(v) if v.iter().any(Option::is_none) => t.opt_int(*c, v[rows.clone()].to_vec()),
        Col::Int(v) => t.int(*c, v[rows.clone()].iter().flatten().copied()),
        Col::Text(v) if v.iter().any(Option::is_none) => t.opt_text(*c, v[rows.clone()].to_vec()),
        Col::Text(v) => t.text(*c, v[rows.clone()].iter().flatten().cloned()),
    })
}

fn json(cols: &Columns) -> String {
    // Pairs, not an object: the column order is checked too.
    let pairs: Vec<serde_json::Value> = cols
        .iter()
        .map(|(c, v, enc)| match v {
            Col::Int(v) => serde_json::json!([c, v, enc]),
            Col::Text(v) => serde_json::json!([c, v, enc]),
        })
        .collect();
    serde_json::Value::Array(pairs).to_string()
}

const CHECK: &str = r#"
import json, sys
import pyarrow.parquet as pq
for path, want_path in zip(sys.argv[1::2], sys.argv[2::2]):
    cols = json.load(open(want_path))
    want = {c: v for c, v, _ in cols}
    f = pq.ParquetFile(path)
    got = f.read().to_pydict()
    assert list(got) == list(want), (list(got), list(want))
    for k in want:
        assert got[k] == want[k], (path, k, [(i, a, b) for i, (a, b) in enumerate(zip(got[k], want[k])) if a != b][:5])
    for g in range(f.metadata.num_row_groups):
        for c in range(f.metadata.num_columns):
            enc = f.metadata.row_group(g).column(c).encodings
            assert cols[c][2] in enc, (path, g, c, enc)
print("ok")
"#;

#[test]
fn pyarrow_reads_every_encoded_value_and_samples_are_a_quarter_of_csv() {
    rtscope_testkit::require!(
        rtscope_testkit::python3_imports("pandas, pyarrow"),
        "python3 with pandas and pyarrow is not installed: run `pip install pandas pyarrow`"
    );
    let dir = std::env::temp_dir().join(format!("rtscope-export-pyarrow-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (t, samples) = columns();
    let mut args = Vec::new();
    for (name, cols, group) in [
        ("t", &t, None),
        ("t", &t, Some(100)),
        ("samples", &samples, None),
    ] {
        let n = match &cols[0].1 {
            Col::Int(v) => v.len(),
            Col::Text(v) => v.len(),
        };
        let whole = table(name, cols, 0..n);
        let mut buf = Vec::new();
        match group {
            None => parquet::write(&mut buf, &whole, "rtscope test", "s").unwrap(),
            Some(rows) => {
                // Row groups of 100 rows: blocks and miniblocks cut short in every group.
                let mut w = parquet::Writer::new(&mut buf, &whole, "rtscope test", "s").unwrap();
                for start in (0..n).step_by(rows) {
                    w.row_group(&table(name, cols, start..n.min(start + rows)))
                        .unwrap();
                }
                w.finish().unwrap();
            }
        }
        let stem = dir.join(format!("{name}-{}", group.unwrap_or(0)));
        std::fs::write(stem.with_extension("parquet"), &buf).unwrap();
        std::fs::write(stem.with_extension("json"), json(cols)).unwrap();
        args.push(stem.with_extension("parquet").to_str().unwrap().to_string());
        args.push(stem.with_extension("json").to_str().unwrap().to_string());
    }
    let o = Command::new("python3")
        .arg("-c")
        .arg(CHECK)
        .args(&args)
        .output()
        .expect("run python3 (install python3, then `pip install pandas pyarrow`)");
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success() && out.trim_end().ends_with("ok"),
        "pyarrow's check failed (it needs `pip install pandas pyarrow`)\n{out}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );

    let mut csv_bytes = Vec::new();
    let n = 20_000;
    csv::write(&mut csv_bytes, &table("samples", &samples, 0..n)).unwrap();
    let pq_bytes = std::fs::metadata(dir.join("samples-0.parquet"))
        .unwrap()
        .len() as usize;
    assert!(
        pq_bytes * 4 <= csv_bytes.len(),
        "samples: {pq_bytes} B of Parquet against {} B of CSV",
        csv_bytes.len()
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
