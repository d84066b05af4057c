//! cyclictest's `--json` layout, key for key and in the same order, written with proper escaping
//! and never NaN. rtscope's additions come after cyclictest's keys in each object:
//! per thread `interval_us`, `priority`, `policy`, `missed_periods`, `min_ns`, `max_ns`,
//! `avg_ns`, `max_cycle`, `percentiles_ns` and `overflows`; at the top level `rtscope`
//! (tool version, unit, break, interruption).

use rtscope_core::Nanos;
use rtscope_engine::ThreadResult;
use rtscope_session::sysinfo::SysInfo;
use std::fmt::Write;

/// Everything the JSON file holds.
pub struct JsonDoc<'a> {
    /// The command line, as typed.
    pub cmdline: &'a str,
    /// Start time, cyclictest's date format.
    pub start_time: &'a str,
    /// End time.
    pub end_time: &'a str,
    /// The exit code rtscope returns.
    pub return_code: i32,
    /// uname and realtime flag.
    pub sysinfo: &'a SysInfo,
    /// Threads.
    pub threads: &'a [ThreadResult],
    /// CPU per thread (-1 unpinned).
    pub cpus: &'a [i32],
    /// Display unit (1 µs or 1 ns).
    pub unit: Nanos,
    /// Whether the linear histogram is written.
    pub histogram: bool,
    /// Break info: (thread id, value in units).
    pub break_fired: Option<(i32, u64)>,
    /// Whether a signal ended the run early.
    pub interrupted: bool,
}

fn q(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

/// A finite float with two decimals (0.00 instead of NaN).
fn f2(v: f64) -> String {
    if v.is_finite() {
        format!("{v:.2}")
    } else {
        "0.00".into()
    }
}

/// Renders the file.
pub fn render(d: &JsonDoc) -> String {
    let mut s = String::from("{\n");
    let _ = writeln!(s, "  \"file_version\": 1,");
    let _ = writeln!(s, "  \"cmdline:\": {},", q(d.cmdline));
    let _ = writeln!(s, "  \"rt_test_version:\": \"2.40\",");
    let _ = writeln!(s, "  \"start_time\": {},", q(d.start_time));
    let _ = writeln!(s, "  \"end_time\": {},", q(d.end_time));
    let _ = writeln!(s, "  \"return_code\": {},", d.return_code);
    let si = d.sysinfo;
    let _ = writeln!(s, "  \"sysinfo\": {{");
    for (k, v) in [
        ("sysname", &si.sysname),
        ("nodename", &si.nodename),
        ("release", &si.release),
        ("version", &si.version),
        ("machine", &si.machine),
    ] {
        let _ = writeln!(s, "    \"{k}\": {},", q(v));
    }
    let _ = writeln!(s, "    \"realtime\": {}\n  }},", si.realtime);
    let _ = writeln!(s, "  \"num_threads\": {},", d.threads.len());
    let _ = writeln!(s, "  \"resolution_in_ns\": {},", u8::from(d.unit.0 == 1));
    s.push_str("  \"thread\": {\n");
    for (i, t) in d.threads.iter().enumerate() {
        thread(&mut s, d, i, t);
        s.push_str(if i + 1 == d.threads.len() {
            "\n"
        } else {
            ",\n"
        });
    }
    s.push_str("  },\n");
    rtscope_block(&mut s, d);
    s.push_str("}\n");
    s
}

fn thread(s: &mut String, d: &JsonDoc, i: usize, t: &ThreadResult) {
    let u = |v: Nanos| v.0 / d.unit.0;
    let _ = writeln!(s, "    \"{i}\": {{");
    s.push_str("      \"histogram\": {");
    match (&t.linear, d.histogram) {
        (Some(lin), true) => {
            let rows: Vec<String> = lin
                .counts
                .iter()
                .enumerate()
                .filter(|(_, &c)| c > 0)
                .map(|(b, c)| format!("        \"{b}\": {c}"))
                .collect();
            if !rows.is_empty() {
                let _ = write!(s, "\n{}\n", rows.join(",\n"));
            }
            s.push_str("      },\n");
        }
        _ => s.push_str("      },\n"),
    }
    let st = &t.stats;
    let min = if st.count == 0 { 0 } else { u(st.min) };
    let avg = t.histogram.mean_truncated(d.unit).unwrap_or(0.0);
    let _ = writeln!(
        s,
        "      \"cycles\": {},\n      \"min\": {min},\n      \"max\": {},\n      \"avg\": {},",
        st.count,
        u(st.max),
        f2(avg)
    );
    let _ = writeln!(
        s,
        "      \"cpu\": {},\n      \"node\": -1,",
        d.cpus.get(i).copied().unwrap_or(-1)
    );
    let _ = writeln!(
        s,
        "      \"interval_us\": {},\n      \"priority\": {},\n      \"policy\": {},",
        t.interval.as_us_trunc(),
        t.priority,
        q(t.policy.name())
    );
    let _ = writeln!(
        s,
        "      \"missed_periods\": {},\n      \"min_ns\": {},\n      \"max_ns\": {},",
        st.missed, st.min.0, st.max.0
    );
    let _ = writeln!(
        s,
        "      \"avg_ns\": {},\n      \"max_cycle\": {},",
        f2(st.mean_ns().unwrap_or(0.0)),
        st.max_cycle
    );
    let pct: Vec<String> = t
        .histogram
        .percentiles()
        .iter()
        .map(|p| {
            format!(
                "\"{}\": {}",
                p.label,
                p.value.map_or("null".into(), |v| v.0.to_string())
            )
        })
        .collect();
    let _ = writeln!(s, "      \"percentiles_ns\": {{{}}},", pct.join(", "));
    let overflows = t.linear.as_ref().map_or(0, |l| l.overflows);
    let _ = write!(s, "      \"overflows\": {overflows}\n    }}");
}

fn rtscope_block(s: &mut String, d: &JsonDoc) {
    let brk = match d.break_fired {
        Some((tid, v)) => format!("{{\"thread_id\": {tid}, \"value\": {v}}}"),
        None => "null".into(),
    };
    let _ = writeln!(
        s,
        "  \"rtscope\": {{\n    \"version\": {},\n    \"unit_ns\": {},",
        q(env!("CARGO_PKG_VERSION")),
        d.unit.0
    );
    let _ = writeln!(
        s,
        "    \"break\": {brk},\n    \"interrupted\": {}\n  }}",
        d.interrupted
    );
}
