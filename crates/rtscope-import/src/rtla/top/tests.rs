use super::*;
use serde_json::json;
use serde_json::Value;

/// Real `rtla osnoise top` output (crates/rtscope/tests/fixtures/import/rtla/README.md).
macro_rules! fixture {
    ($name:literal) => {
        include_str!(concat!(
            "../../../../rtscope/tests/fixtures/import/rtla/",
            $name
        ))
    };
}
const Q: &str = fixture!("top-q.txt");
const LIVE: &str = fixture!("top-live.txt");
const C1: &str = fixture!("top-c1-T5-culprit.txt");
const RP: &str = fixture!("top-rp-P-culprit.txt");
const STOP: &str = fixture!("top-stop-culprit.txt");

/// The fixture's last table, read independently of the parser: the text with every `ESC …`
/// sequence cut out, then the number rows after the last header, split on whitespace.
fn last_table(text: &str) -> Vec<Vec<String>> {
    let mut plain = String::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\x1b' {
            plain.push(c);
        } else if chars.next() == Some('[') {
            for d in chars.by_ref() {
                if d == 'm' {
                    break;
                }
            }
        }
    }
    let mut rows = Vec::new();
    for line in plain.lines() {
        if line.contains("Period") {
            rows.clear();
        } else if line.trim_start().starts_with(|c: char| c.is_ascii_digit()) {
            rows.push(line.split_whitespace().map(str::to_string).collect());
        }
    }
    rows
}

fn num(s: &str) -> u64 {
    s.trim_start_matches('#').parse().unwrap()
}

#[test]
fn every_number_of_the_real_tables_is_in_the_record() {
    for (name, text, tables) in [("q", Q, 1), ("live", LIVE, 5), ("c1", C1, 1), ("rp", RP, 1)] {
        let r = parse(text).unwrap_or_else(|e| panic!("{name}: {e}"));
        let rows = last_table(text);
        assert_eq!(r.kind, Some(RunKind::Noise), "{name}");
        assert_eq!(r.threads.len(), rows.len(), "{name}");
        assert_eq!(r.source["tables"], json!(tables), "{name}");
        let per = r.source["per_cpu"].as_array().unwrap();
        for ((t, p), row) in r.threads.iter().zip(per).zip(&rows) {
            let us = |i: usize| Some(num(&row[i]) * 1000);
            assert_eq!(t.cpu, Some(num(&row[0]) as u32), "{name}");
            assert_eq!(p["cpu"], json!(num(&row[0])));
            assert_eq!(p["periods"], json!(num(&row[1])), "{name}");
            assert_eq!(p["runtime_ns"].as_u64(), us(2), "{name}");
            assert_eq!(p["noise_ns"].as_u64(), us(3), "{name}");
            assert_eq!(p["available_pct"], json!(row[4]), "{name}");
            assert_eq!(p["max_noise_ns"].as_u64(), us(5), "{name}");
            assert_eq!(p["max_single_ns"].as_u64(), us(6), "{name}");
            assert_eq!(
                t.figures.max_ns,
                us(6),
                "the longest single noise is the max"
            );
            for (k, class) in super::super::CLASSES.iter().enumerate() {
                assert_eq!(
                    p["counts"][class],
                    json!(num(&row[7 + k])),
                    "{name} {class}"
                );
            }
            // The share rtla prints is the runtime less the noise, over the runtime.
            let (rt, noise) = (num(&row[2]) as f64, num(&row[3]) as f64);
            let printed: f64 = row[4].parse().unwrap();
            assert!((100.0 * (rt - noise) / rt - printed).abs() < 1e-5, "{name}");
            // No gap histogram, no iteration count: nothing made up.
            assert_eq!((t.figures.samples, t.histogram.count()), (0, 0));
            assert_eq!((t.figures.min_ns, t.figures.mean_ns), (None, None));
        }
        assert!(r.ends_at_mtime);
        assert_eq!(r.source["tool"], "rtla osnoise top");
        assert_eq!(r.source["stopped"], json!(false));
        assert_eq!(r.source.get("missed_events"), None, "rtla 6.1 does not say");
    }
    assert_eq!(parse(Q).unwrap().progress_ns, 10_000_000_000);
    assert_eq!(parse(LIVE).unwrap().progress_ns, 4_000_000_000);
    let c1 = parse(C1).unwrap();
    assert_eq!(c1.threads[0].cpu, Some(1));
    assert!(
        c1.notes[0].contains("counts of interference entries"),
        "{:?}",
        c1.notes
    );
}

#[test]
fn a_table_rtla_stopped_before_any_row_is_refused() {
    let e = parse(STOP).unwrap_err();
    assert!(e.what.contains("no CPU row"), "{e}");
    // Its stop line is read: it is the rows that are missing.
    let rows_then_stop = format!("{Q}osnoise hit stop tracing\n");
    let r = parse(&rows_then_stop).unwrap();
    assert_eq!(r.source["stopped"], json!(true));
    assert!(r.notes.iter().any(|n| n.contains("stop condition")));
}

/// The colour escapes stripped: what mainline rtla writes with -q or into a file.
fn plain(text: &str) -> String {
    let mut s = text.replace("\x1bc", "");
    for sgr in ["\x1b[2;37;40m", "\x1b[0;0;0m", "\x1b[2;30;47m"] {
        s = s.replace(sgr, "");
    }
    s
}

#[test]
fn mainline_variants_plain_text_hwnoise_and_missed_events_are_read() {
    let a = parse(Q).unwrap();
    let b = parse(&plain(Q)).unwrap();
    assert_eq!(a.source, b.source);
    // hwnoise: its title, and the header and rows end at NMI (rtla's source; Debian 12's rtla
    // 6.1 has no hwnoise).
    let hw: String = plain(Q)
        .lines()
        .map(|l| {
            let l = l.replace("Operating System Noise", "Hardware-related Noise");
            let w: Vec<&str> = l.split_whitespace().collect();
            if l.starts_with("CPU") || l.trim_start().starts_with(char::is_numeric) {
                w[..w.len() - 3].join("  ") + "\n"
            } else {
                l + "\n"
            }
        })
        .collect();
    let r = parse(&format!(
        "{hw}12 (0.50%) events missed, results might not be accurate\n"
    ))
    .unwrap();
    assert_eq!(r.source["tool"], "rtla hwnoise");
    let p = &r.source["per_cpu"][0]["counts"];
    assert_eq!((p["hw"].clone(), p["nmi"].clone()), (json!(744), json!(0)));
    for unknown in ["irq", "softirq", "thread"] {
        assert_eq!(p[unknown], Value::Null, "{unknown} is unknown, not 0");
    }
    assert_eq!(r.source["missed_events"], json!(12));
    assert!(r.notes.iter().any(|n| n.contains("unknown, not 0")));
}

#[test]
fn broken_tables_are_refused_naming_the_line() {
    let row = "  0 #9           9023264      6387858    29.20679      840325       133365         744            0         775            0          228";
    let esc = "\x1b";
    let cases: Vec<(String, &str, &str)> = vec![
        (
            Q.replace("29.20679", "29.20680"),
            "line 4",
            "does not follow",
        ),
        (
            Q.replace("6387858", "9999999"),
            "line 4",
            "larger than the runtime",
        ),
        (Q.replace("133365", "933365"), "line 4", "not in order"),
        (Q.replace(" #9 ", " #x "), "line 4", "#N"),
        (Q.replace("         228", ""), "line 4", "fields"),
        (Q.replace("  1 #9 ", "  0 #9 "), "line 5", "twice"),
        (
            Q.replace("time is in us", "time is in ms"),
            "line 2",
            "time is in us",
        ),
        (
            Q.replace(" 0 00:00:10", " 0 00:99:10"),
            "line 2",
            "D HH:MM:SS",
        ),
        (Q.replace("Softirq", "SoftIRQ"), "line 3", "header"),
        (format!("{Q}{Q}"), "line 6", "second table"),
        (
            format!("{Q}osnoise hit stop tracing\n{row}\n"),
            "line 7",
            "more output after",
        ),
        (Q.replace("[2;30;47m", "[2J"), "line 3", "escape"),
        (Q.replace(" #9 ", " #9\x07 "), "line 4", "control character"),
        (format!("hello\n{Q}"), "line 1", "not a line"),
        (format!("{row}\n"), "line 1", "before rtla's title"),
        (
            Q.replace("9023264", "184467440737095516150"),
            "line 4",
            "not a count",
        ),
        (
            Q.replace("9023264", "72057594037927936"),
            "line 4",
            "the runtime is not a count of µs",
        ),
        (
            format!("{}\n", "9".repeat((1 << 20) + 1)),
            "line 1",
            "longer than",
        ),
        (Q.replace(esc, "^["), "line 1", "not a line"),
    ];
    for (text, at, what) in cases {
        let e = parse(&text).unwrap_err();
        assert_eq!(e.at.as_deref(), Some(at), "{what}: {e}");
        assert!(e.what.contains(what), "{what:?} not in {e}");
        assert!(
            !e.what.contains('\x07') && !e.what.contains('\x1b'),
            "{e:?}"
        );
    }
    assert!(parse("")
        .unwrap_err()
        .what
        .contains("no rtla osnoise top table"));
}
