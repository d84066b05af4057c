//! The hostile suite (issue 12), memory cases: exports, `report --raw` and histogram imports of
//! inputs far larger than the memory they may use, run under an address-space limit
//! (`ulimit -v`) that the former whole-in-memory code exceeded. No timing assertions.

use crate::hostile_support as support;

use std::path::Path;
use support::*;

/// Address space allowed for the bounded commands, KiB: the streamed code runs in 60 MB of it
/// (debug build); holding 2 M raw samples (Parquet ≈ 110 bytes each, `report --raw` ≈ 31)
/// needs more (measured: the former code aborts under 150 MB and 90 MB respectively).
const LIMIT_KIB: u64 = 85_000;

/// A database whose run 1 holds at least `n` raw samples: a short `--raw` run whose chunks
/// are copied (under new cycle numbers) until there are that many.
fn big_raw_run(case: &str, n: u64) -> (std::path::PathBuf, std::path::PathBuf) {
    let dir = scratch(case);
    let db = dir.join("r.db");
    let dbs = db.to_str().unwrap();
    let out = rtscope(&measure_args(dbs, &["-i", "200us", "-l", "3000", "--raw"]));
    assert_eq!(code(&out), 0, "{:?}", texts(&out));
    let have: u64 = query(&db, "SELECT sum(count) FROM samples")
        .parse()
        .unwrap();
    let copies = n.div_ceil(have.max(1));
    let o = std::process::Command::new("sqlite3")
        .arg(&db)
        .arg(format!(
            "WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < {copies}) \
             INSERT INTO samples SELECT s.run_id, s.thread, s.first_cycle + k.i * 1000000, s.count, s.data \
             FROM samples s, k WHERE s.run_id = 1"
        ))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    (dir, db)
}

fn limited(cmd: &str) -> std::process::Output {
    bash(&format!("ulimit -v {LIMIT_KIB}; \"$RTSCOPE\" {cmd}"))
}

fn raw_count(db: &Path) -> u64 {
    query(db, "SELECT sum(count) FROM samples").parse().unwrap()
}

/// Case 19: Parquet is written in row groups streamed from the store: 2 M raw samples export
/// under the address-space limit, and pyarrow reads every one of them, in several row groups.
#[test]
fn parquet_export_is_streamed_in_row_groups() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    let (dir, db) = big_raw_run("parquet-rowgroups", 2_000_000);
    let n = raw_count(&db);
    let exp = dir.join("exp");
    let out = limited(&format!(
        "export 1 --db {} -o {} --format parquet",
        db.display(),
        exp.display()
    ));
    assert_eq!(code(&out), 0, "{:?}", texts(&out));
    assert!(
        texts(&out)
            .0
            .contains(&format!("samples.parquet ({n} rows)")),
        "{:?}",
        texts(&out)
    );
    let file = exp.join("run-1-samples.parquet");
    let check = std::process::Command::new("python3")
        .args([
            "-c",
            "import sys, pyarrow.parquet as pq\n\
             f = pq.ParquetFile(sys.argv[1])\n\
             t = f.read()\n\
             print(f.metadata.num_row_groups, t.num_rows, t.column('latency_ns').null_count)",
        ])
        .arg(&file)
        .output()
        .expect("python3 with pyarrow (pip install pandas pyarrow)");
    let said = String::from_utf8_lossy(&check.stdout);
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
    let v: Vec<u64> = said
        .split_whitespace()
        .map(|x| x.parse().unwrap())
        .collect();
    assert!(v[0] >= 2, "several row groups: {said}");
    assert_eq!((v[1], v[2]), (n, 0), "{said}");
}

/// Case 19: `report --raw` streams the raw samples (twice) instead of holding them: 2 M
/// samples under the address-space limit, and the CDF still says it is drawn from them.
#[test]
fn report_raw_is_bounded() {
    rtscope_testkit::require_root!("the real engine at SCHED_FIFO with locked memory");
    let (dir, db) = big_raw_run("report-raw", 2_000_000);
    let out_dir = dir.join("rep");
    let out = limited(&format!(
        "report 1 --raw --db {} -o {}",
        db.display(),
        out_dir.display()
    ));
    assert_eq!(code(&out), 0, "{:?}", texts(&out));
    let html = std::fs::read_to_string(out_dir.join("report.html")).unwrap();
    assert!(
        html.contains("Drawn from raw samples (exact)"),
        "raw CDF caption"
    );
}

/// Case 12: a histogram import is streamed: a 43 MB cyclictest -h file (2 M bucket rows) is
/// imported under a 60 MB address-space limit; reading it whole took 219 MB.
#[test]
fn histogram_import_is_streamed() {
    let dir = scratch("hist-stream");
    let file = dir.join("big-hist.txt");
    let rows = 2_000_000u64;
    let mut text = String::with_capacity(44 << 20);
    text.push_str("# Histogram\n");
    for i in 0..rows {
        let c = u64::from(i % 1000 == 0);
        text.push_str(&format!("{i:06} {c:06}\t{c:06}\n"));
    }
    let k = rows / 1000;
    text.push_str(&format!(
        "# Total: {k:09} {k:09}\n# Min Latencies: 00000 00000\n# Avg Latencies: 00999 00999\n\
         # Max Latencies: {m:05} {m:05}\n# Histogram Overflows: 00000 00000\n",
        m = rows - 1000
    ));
    std::fs::write(&file, text).unwrap();
    let db = dir.join("r.db");
    let out = bash(&format!(
        "ulimit -v 60000; \"$RTSCOPE\" import {} --db {}",
        file.display(),
        db.display()
    ));
    assert_eq!(code(&out), 0, "{:?}", texts(&out));
    assert!(
        texts(&out)
            .0
            .contains(&format!("2 threads, {} samples", 2 * k)),
        "{:?}",
        texts(&out)
    );
    let stored = query(&db, "SELECT samples FROM threads ORDER BY thread");
    assert_eq!(stored, format!("{k}\n{k}"));
}
