use super::*;
use rtscope_core::{layout, Nanos};
use serde_json::json;
use std::collections::BTreeMap;

/// Real `rtla osnoise hist` output (crates/rtscope/tests/fixtures/import/rtla/README.md).
macro_rules! fixture {
    ($name:literal) => {
        include_str!(concat!(
            "../../../../rtscope/tests/fixtures/import/rtla/",
            $name
        ))
    };
}
const HIST: &str = fixture!("hist.txt");
const B10: &str = fixture!("hist-c1-b10-E50-culprit.txt");
const NO_HEADER: &str = fixture!("hist-no-header-culprit.txt");
const NO_SUMMARY: &str = fixture!("hist-no-summary-culprit.txt");
const ZEROS: &str = fixture!("hist-with-zeros-E20-culprit.txt");
const STOP: &str = fixture!("hist-stop-culprit.txt");

/// The fixture read independently of the parser: bucket rows (index, counts) and the footer
/// lines by label.
struct Text {
    rows: Vec<(u64, Vec<u64>)>,
    footer: BTreeMap<String, Vec<f64>>,
}

fn read(text: &str) -> Text {
    let (mut rows, mut footer) = (Vec::new(), BTreeMap::new());
    for line in text.lines() {
        let w: Vec<&str> = line.split_whitespace().collect();
        match w.first() {
            Some(l) if l.ends_with(':') => {
                let v = w[1..].iter().map(|x| x.parse().unwrap()).collect();
                footer.insert(l.to_string(), v);
            }
            Some(i) if i.parse::<u64>().is_ok() => {
                let v = w.iter().map(|x| x.parse().unwrap()).collect::<Vec<u64>>();
                rows.push((v[0], v[1..].to_vec()));
            }
            _ => {}
        }
    }
    Text { rows, footer }
}

/// Every number of `text` is in `r`: each row's count in the bucket of its index, the
/// overflows, and the footer's count (the rows' sum plus `over:`, checked here), min, avg, max.
fn assert_every_number(name: &str, text: &str, r: &Imported) {
    let t = read(text);
    assert_eq!(r.kind, Some(RunKind::Noise));
    assert_eq!(r.threads.len(), t.rows[0].1.len(), "{name}");
    let per = r.source["per_cpu"].as_array().unwrap();
    for (c, (th, p)) in r.threads.iter().zip(per).enumerate() {
        let rows: u64 = t.rows.iter().map(|(_, n)| n[c]).sum();
        let over = t.footer["over:"][c] as u64;
        assert_eq!(
            th.histogram.count(),
            rows,
            "{name}: every row is in the histogram"
        );
        assert_eq!(
            th.figures.samples,
            rows + over,
            "{name}: rows + over are the samples"
        );
        assert_eq!(r.source["overflows"][c], json!(over), "{name}");
        if let Some(count) = t.footer.get("count:") {
            assert_eq!(
                count[c] as u64, th.figures.samples,
                "{name}: rtla's count: is rows + over"
            );
            assert_eq!(p["noise_events"], json!(th.figures.samples));
            let (min, avg, max) = (
                t.footer["min:"][c],
                t.footer["avg:"][c],
                t.footer["max:"][c],
            );
            assert_eq!(th.figures.min_ns, Some(min as u64 * 1000), "{name}");
            assert_eq!(th.figures.max_ns, Some(max as u64 * 1000), "{name}");
            assert_eq!(th.figures.mean_ns, Some(avg * 1000.0), "{name}");
            assert_eq!(
                p["noise_ns"],
                json!((avg * 1000.0 * th.figures.samples as f64).round() as u64)
            );
        }
        let mut held = BTreeMap::new();
        for (i, n) in t.rows.iter().filter(|(_, n)| n[c] > 0) {
            *held.entry(layout::index_of(i * 1000)).or_insert(0) += n[c];
        }
        assert_eq!(
            th.histogram.nonzero().collect::<BTreeMap<_, _>>(),
            held,
            "{name}"
        );
        assert_eq!(
            th.histogram.max(),
            t.rows
                .iter()
                .rev()
                .find(|(_, n)| n[c] > 0)
                .map(|(i, _)| Nanos::from_us(*i)),
            "{name}: recorded at the bucket's lower bound"
        );
    }
    assert_eq!(r.source["histogram"], "noise_over_threshold");
    assert!(r.ends_at_mtime);
}

#[test]
fn every_number_of_the_real_histograms_is_in_the_record() {
    for (name, text) in [
        ("hist", HIST),
        ("b10", B10),
        ("no-header", NO_HEADER),
        ("no-summary", NO_SUMMARY),
        ("zeros", ZEROS),
        ("stop", STOP),
    ] {
        let r = parse(text).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_every_number(name, text, &r);
    }
    let r = parse(HIST).unwrap();
    assert_eq!(
        r.threads.iter().map(|t| t.cpu).collect::<Vec<_>>(),
        [Some(0), Some(1)]
    );
    assert_eq!(r.progress_ns, 11_000_000_000, "# Duration:   0 00:00:11");
    assert_eq!(r.source["bucket_width"], json!(1));
    assert_eq!(
        r.source["overflow_at_least"],
        json!(248),
        "the last row, 247, + 1"
    );
    assert!(
        r.notes.iter().any(|n| n.contains("1605 noises")),
        "{:?}",
        r.notes
    );
}

#[test]
fn options_of_the_real_captures_are_recorded() {
    let b10 = parse(B10).unwrap();
    assert_eq!(b10.threads[0].cpu, Some(1));
    assert_eq!(b10.source["bucket_width"], json!(10));
    assert_eq!(
        b10.source["overflow_at_least"],
        json!(500),
        "-E 50 of 10 us"
    );
    assert_eq!(
        b10.threads[0].figures.min_ns,
        Some(0),
        "rtla's min: the lowest bucket's bound"
    );
    let z = parse(ZEROS).unwrap();
    assert_eq!(
        z.source["overflow_at_least"],
        json!(20),
        "-E 20 with zeros: rows 0..=19"
    );
    let nh = parse(NO_HEADER).unwrap();
    assert!(
        nh.threads.iter().all(|t| t.cpu.is_none()),
        "--no-header: CPUs unknown"
    );
    assert_eq!(
        (nh.progress_ns, nh.source["header"].clone()),
        (0, json!(false))
    );
    let ns = parse(NO_SUMMARY).unwrap();
    assert_eq!(ns.source["summary"], json!(false));
    for t in &ns.threads {
        assert_eq!(
            t.figures.max_ns, None,
            "the max is among the overflows: unknown"
        );
        assert_eq!(t.figures.mean_ns, None);
        assert_eq!(t.figures.min_ns, Some(5000), "the lowest row");
    }
    let stop = parse(STOP).unwrap();
    assert_eq!(stop.source["stopped"], json!(true));
    assert_eq!(
        stop.source.get("missed_events"),
        None,
        "rtla 6.1 does not say"
    );
}

#[test]
fn mainline_averages_and_rtla_s_empty_form() {
    // Mainline prints avg with two decimals; 6.1 cuts it to a whole.
    let two = HIST.replace("avg:       3046      3047", "avg:    3046.57   3047.04");
    let r = parse(&two).unwrap();
    assert_eq!(r.threads[0].figures.mean_ns, Some(3_046_570.0));
    assert_eq!(r.threads[1].figures.mean_ns, Some(3_047_040.0));
    // No noise at all: rtla prints no CPU column.
    let empty = "# RTLA osnoise histogram\n# Time unit is microseconds (us)\n# Duration:   0 00:00:10\nIndex\nover: 0\ncount: 0\nmin: 0\navg: 0\nmax: 0\n";
    assert!(parse(empty).unwrap_err().what.contains("no noise"));
    // --no-index: no bucket values.
    let e = parse(&HIST.replace("Index   CPU-000", "CPU-000")).unwrap_err();
    assert!(e.what.contains("--no-index"), "{e}");
}

#[test]
fn broken_histograms_are_refused_naming_the_line_or_cpu() {
    let cases: Vec<(String, &str)> = vec![
        (
            HIST.replace("count:     2390", "count:     2391"),
            "CPU 0: count: is not the rows",
        ),
        (
            HIST.replace("min:          5         5", "min:          6         5"),
            "CPU 0: min",
        ),
        (
            HIST.replace("max:      43051", "max:        246"),
            "CPU 0: min: or max:",
        ),
        (
            HIST.replace("avg:       3046", "avg:          7"),
            "CPU 0: avg",
        ),
        (HIST.replace("\n6 ", "\n4 "), "line 6: a bucket not after"),
        (HIST.replace("count:", "cnt:"), "line 125: not a line"),
        (
            HIST.replace("min:", "mix:").replace("avg:", "min:"),
            "line 126",
        ),
        (
            HIST.replace("146       145 ", "146 "),
            "line 5: not as many values",
        ),
        (HIST.replace("146 ", "x146 "), "line 5: not a count: 'x146'"),
        (
            HIST.replace("106       112", "106       72057594037927937"),
            "line 6: not a count: '72057594037927937'",
        ),
        (
            HIST[..HIST.find("over:").unwrap()].to_string(),
            "no 'over:' line",
        ),
        (HIST.replace("CPU-001", "CPU-000"), "line 4: a CPU twice"),
        (
            HIST.replace(
                "# Time unit is microseconds (us)",
                "# Time unit is fortnights",
            ),
            "line 2",
        ),
        (
            HIST.replace("osnoise histogram", "timerlat histogram"),
            "timerlat",
        ),
        (
            format!("{HIST}rtla osnoise hit stop tracing\n5 1 1\n"),
            "line 130: more output",
        ),
        (
            HIST.replace("Index", "Index\x1b]0;title\x07"),
            "line 4: a control character",
        ),
    ];
    for (text, want) in cases {
        let e = parse(&text).unwrap_err().to_string();
        assert!(e.contains(want), "{want:?} not in {e:?}");
    }
    let cpus: String = (0..5000).map(|c| format!(" CPU-{c}")).collect();
    let wide = format!("Index{cpus}\n");
    assert!(parse(&wide)
        .unwrap_err()
        .to_string()
        .contains("twice, or more than 4096"));
}
