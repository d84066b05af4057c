//! `rtscope noise`'s text: the per-CPU table (`rtla osnoise top`'s columns), its times, and the
//! line that says what the loops read.

use rtscope_core::text::{count, short, us_or_dash};
use rtscope_core::Nanos;
use rtscope_engine::noise::NoiseRun;
use rtscope_session::noise::CpuNoise;

/// The per-CPU table, `rtla osnoise top`'s columns (the settings its notes name spelt the
/// front end's way).
pub fn table(rows: &[CpuNoise], naming: rtscope_session::field::Naming) -> String {
    let n = |f: rtscope_session::field::Field| naming.name(f);
    let mut s = format!(
        "{:>4} {:>10} {:>12} {:>11} {:>11} {:>9} {:>9} {:>10} {:>8} {:>5}\n",
        "CPU",
        "RUNTIME",
        "NOISE",
        "AVAILABLE",
        "MAX SINGLE",
        "GAPS>THR",
        "ITER/S",
        "RESOLUTION",
        "STEAL",
        "SMI"
    );
    for r in rows {
        s.push_str(&format!(
            "{:>4} {:>10} {:>12} {:>11} {:>11} {:>9} {:>9} {:>10} {:>8} {:>5}\n",
            r.cpu,
            short(Nanos(r.runtime_ns / 1_000_000 * 1_000_000)),
            time_cell(r.noise_ns),
            r.available_percent
                .map_or("unknown".into(), |p| format!("{p:.5}%")),
            r.max_single_ns.map_or("-".into(), time_cell),
            r.gaps_over_threshold,
            r.iterations_per_s.map_or("-".into(), count),
            r.resolution_ns.map_or("-".into(), |v| format!("{v}ns")),
            r.platform
                .steal_ns
                .map_or("-".into(), |v| format!("{}ms", v / 1_000_000)),
            r.platform.smis.map_or("-".into(), |v| v.to_string()),
        ));
    }
    let dropped: u64 = rows.iter().map(|r| r.gaps_dropped).sum();
    if dropped > 0 {
        s.push_str(&format!(
            "{dropped} gaps over the threshold were counted but not kept (the ring was full: raise {})\n",
            n(rtscope_session::field::Field::GapCapacity)
        ));
    }
    let not_kept: u64 = rows.iter().map(|r| r.gaps_not_kept).sum();
    if not_kept > 0 {
        s.push_str(&format!(
            "{not_kept} shorter gaps over the threshold were counted but not kept (only the longest {} per CPU are)\n",
            n(rtscope_session::field::Field::KeepGaps)
        ));
    }
    s.push_str("RESOLUTION is the loop's shortest gap: one counter read and a histogram store.\n");
    s
}

/// A time of the table with its unit, in the unit that keeps it short: µs below 1 ms
/// (`412.3us`), ms below 1 s (`35.412ms`), seconds above (`8.792s`, not `8791850.0us`).
pub fn time_cell(ns: u64) -> String {
    match ns {
        0..=999_999 => format!("{}us", us_or_dash(Some(Nanos(ns)))),
        1_000_000..=999_999_999 => format!("{:.3}ms", ns as f64 / 1e6),
        _ => format!("{:.3}s", ns as f64 / 1e9),
    }
}

/// What the loops read and its calibrated rate, with why `--counter auto` did not take the raw
/// counter when it did not (`not_raw`: `rtscope_session::noise::run::raw_counter_note`).
pub fn counter_line(run: &NoiseRun, not_raw: Option<&str>) -> String {
    let kind = run.counter();
    let mut line = format!("noise: the loops read {}", kind.name());
    let hz: Vec<f64> = run.counter_hz().into_iter().flatten().collect();
    if let (Some(lo), Some(hi)) = (
        hz.iter().copied().reduce(f64::min),
        hz.iter().copied().reduce(f64::max),
    ) {
        line.push_str(&format!(" at {:.6} GHz", lo / 1e9));
        if hi - lo > 1e-6 * lo {
            line.push_str(&format!(" to {:.6} GHz", hi / 1e9));
        }
    }
    if let Some(why) = not_raw {
        line.push_str(&format!(" (not the raw counter: {why})"));
    }
    line
}
