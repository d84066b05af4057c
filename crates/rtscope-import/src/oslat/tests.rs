use super::*;
use rtscope_core::Nanos;

/// Real `oslat -D 10 -c 1 --json=…` output of rt-tests 2.40 (`/work/shared/reference`).
const REAL: &str = include_str!("../../../rtscope/tests/fixtures/import/oslat.json");

#[test]
fn the_real_file_gives_exact_buckets_an_overflow_bound_and_the_exact_max() {
    let r = parse(REAL).unwrap();
    assert_eq!(r.kind, Some(RunKind::Noise));
    assert_eq!(r.threads.len(), 1);
    let t = &r.threads[0];
    let doc: Value = serde_json::from_str(REAL).unwrap();
    let hist = doc["thread"]["0"]["histogram"].as_object().unwrap();
    let total: u64 = hist.values().map(|v| v.as_u64().unwrap()).sum();
    assert_eq!(t.figures.samples, total, "every iteration is a sample");
    assert_eq!(total, 377_654_680);
    assert_eq!(t.histogram.count() + 3742, total, "the last bucket is out");
    // Buckets 1..=31 µs exactly, each in the histogram's bucket of its value.
    let held: std::collections::BTreeMap<usize, u64> = t.histogram.nonzero().collect();
    assert_eq!(held.len(), 31);
    for (k, n) in hist {
        let k: u64 = k.parse().unwrap();
        if k < 32 {
            let i = rtscope_core::layout::index_of(k * 1000);
            assert_eq!(held.get(&i), n.as_u64().as_ref(), "bucket {k}");
        }
    }
    assert_eq!(t.histogram.count_at_or_above(Nanos::from_us(32)), 0);
    assert_eq!(
        t.histogram.max(),
        Some(Nanos::from_us(31)),
        "overflow floor"
    );
    assert_eq!(r.source["overflows"], json!([3742]));
    assert_eq!(r.source["overflow_bucket_us"], json!([32]));
    assert_eq!(r.source["bucket_width_us"], json!([1]));
    assert_eq!(
        (t.cpu, t.figures.max_ns, t.figures.min_ns),
        (Some(1), Some(9_641_000), Some(1000))
    );
    assert_eq!(t.figures.mean_ns, Some(1.002519 * 1000.0));
    assert_eq!(r.progress_ns, 9_996_000_000, "oslat's duration");
    assert_eq!(r.started_unix_ns, Some(1_795_311_816_000_000_000));
    assert_eq!(r.ended_unix_ns, Some(1_795_311_827_000_000_000));
    assert_eq!(r.source["tool_version"], json!("2.40"));
    assert!(r.source["original_command_line"]
        .as_str()
        .unwrap()
        .starts_with("oslat -D 10 -c 1"));
    assert!(
        r.notes.iter().any(|n| n.contains("3742 gaps")),
        "{:?}",
        r.notes
    );
    assert!(r.notes[0].contains("rounds each gap up"), "{:?}", r.notes);
}

#[test]
fn bucket_size_and_width_come_from_the_command_line_and_the_keys() {
    assert_eq!(bucket_size("oslat -D 2"), 32);
    assert_eq!(bucket_size("oslat -b 8 -D 2"), 8);
    assert_eq!(bucket_size("/usr/bin/oslat -b16"), 16);
    assert_eq!(bucket_size("oslat --bucket-size=64"), 64);
    let doc = REAL.replace("-c 1 --json", "-c 1 -b 64 --json");
    let r = parse(&doc).unwrap();
    assert_eq!(
        r.source["overflows"],
        json!([0]),
        "32 of 64 buckets: none is the last"
    );
    assert_eq!(r.threads[0].histogram.count(), r.threads[0].figures.samples);
}

#[test]
fn broken_documents_get_a_named_error() {
    let half = &REAL[..REAL.len() / 2];
    for (text, want) in [
        (half.to_string(), "truncated"),
        (REAL.replace("\"max\": 9641", "\"max\": 20"), "do not cover"),
        (REAL.replace("\"min\": 1,", "\"min\": 2,"), "do not cover"),
        (REAL.replace("\"5\": 165", "\"x\": 165"), "histogram.\"x\""),
        (
            REAL.replace("\"5\": 165", "\"5\": -1"),
            "not a whole number",
        ),
        (REAL.replace("\"avg\": 1.002519", "\"avg\": \"a\""), "avg"),
        (REAL.replace("\"thread\"", "\"threads\""), "field thread:"),
        (
            REAL.replace("\"cmdline:\": \"oslat", "\"cmdline:\": \"cyclictest"),
            "not oslat",
        ),
        (REAL.replace("\"histogram\"", "\"hist\""), "histogram"),
        ("[1]".into(), "not an object"),
    ] {
        let e = parse(&text).unwrap_err().to_string();
        assert!(e.contains(want), "{want:?} not in {e:?}");
    }
}

#[test]
fn wider_buckets_are_recorded_at_their_upper_bound_and_said_to_be_binned() {
    let doc = r#"{"cmdline:": "oslat -b 4 -D 1", "rt_test_version:": "2.40",
      "thread": {"0": {"cpu": 0, "min": 1, "avg": 2.5, "max": 9, "duration": 1.0,
        "histogram": {"2": 5, "4": 1, "6": 0, "8": 2}}}}"#;
    let r = parse(doc).unwrap();
    let t = &r.threads[0];
    assert_eq!((t.figures.samples, t.histogram.count()), (8, 6));
    assert_eq!(t.histogram.max(), Some(Nanos::from_us(4)));
    assert_eq!(r.source["bucket_width_us"], json!([2]));
    assert_eq!(r.source["overflows"], json!([2]));
    assert!(r.notes[0].contains("2 µs buckets"), "{:?}", r.notes);
    // A max inside the last bucket (7 or 8 µs rounded up) is possible; below it is not.
    assert!(parse(&doc.replace("\"max\": 9", "\"max\": 7")).is_ok());
    assert!(parse(&doc.replace("\"max\": 9", "\"max\": 6")).is_err());
}
