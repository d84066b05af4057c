//! The analysis as text for people (`rtscope tail`, the report's tail section); JSON is the
//! serde form of [`crate::Analysis`]. Refusals in plain words with their fixes come from
//! [`crate::words`], the answers for a changing tail from [`crate::regimes::text`].

use crate::gate::{TailLimit, Verdict};
use crate::words::{self, Fix, Who};
use crate::{Analysis, Level, Outcome};
use std::fmt::Write;

/// A latency for people: `850 ns`, `12.3 µs`, `38.5 ms`, `6.80 s`.
pub fn us(ns: f64) -> String {
    match ns {
        ns if ns < 1e3 => format!("{ns:.0} ns"),
        ns if ns < 1e7 => format!("{:.1} µs", ns / 1e3),
        ns if ns < 1e9 => format!("{:.1} ms", ns / 1e6),
        ns => format!("{:.2} s", ns / 1e9),
    }
}

/// A time in words: `1 h`, `2.5 d`, `3.2 y`.
pub fn span(s: f64) -> String {
    let year = 365.25 * 86400.0;
    match s {
        s if s < 120.0 => format!("{s:.0} s"),
        s if s < 7200.0 => format!("{:.0} min", s / 60.0),
        s if s < 2.0 * 86400.0 => format!("{:.1} h", s / 3600.0),
        s if s < year => format!("{:.1} d", s / 86400.0),
        s => format!("{:.1} y", s / year),
    }
}

/// The report of one thread (`run 12, CPU 2: …`).
pub fn text(who: &Who, a: &Analysis) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{}: {} wake-ups, largest observed {}",
        who.title(),
        a.observations,
        us(a.observed_max_ns)
    );
    if let Some(b) = &a.binning {
        let _ = writeln!(o, "  input: {b}");
    }
    model(&mut o, a);
    if !a.diagnostics.is_empty() {
        let _ = writeln!(o, "  diagnostics (each at significance {}):", a.alpha);
    }
    for d in &a.diagnostics {
        let (mark, detail) = match &d.outcome {
            Outcome::Pass { statistic, p } => {
                ("pass", format!("statistic {statistic:.4}, p = {p:.3}"))
            }
            Outcome::Fail { statistic, p } => {
                ("FAIL", format!("statistic {statistic:.4}, p = {p:.3}"))
            }
            Outcome::Untested { why } => ("untested", why.clone()),
        };
        let _ = writeln!(o, "    {mark:<8} {}: {detail}", d.test.question());
    }
    if a.accepted() || a.unreliable {
        if !a.accepted() {
            refused(&mut o, who, a);
        }
        levels(&mut o, a);
    } else {
        refused(&mut o, who, a);
        let estimable = !a
            .refusals
            .iter()
            .any(|r| matches!(r, crate::Refusal::NotEstimable { .. }));
        if a.model.is_some() && estimable {
            let _ = writeln!(
                o,
                "  (--unreliable prints the numbers anyway, labelled UNRELIABLE)"
            );
        }
    }
    if let Some(r) = &a.regimes {
        crate::regimes::text(&mut o, r, a.confidence);
    }
    o
}

/// The refusal: each failed assumption in plain words with its fix, and what the run supports
/// when only one stationary tail was refused.
fn refused(o: &mut String, who: &Who, a: &Analysis) {
    let stationarity = a.refusals.iter().any(words::of_stationarity);
    if stationarity {
        let _ = writeln!(
            o,
            "  REFUSED: one stationary tail for the whole run, which every level above assumes, because"
        );
    } else {
        let _ = writeln!(o, "  REFUSED: no worst-case estimate, because");
    }
    let mut last = None;
    for r in &a.refusals {
        let (said, fix) = words::refusal(r, a, who.cpu);
        let _ = writeln!(o, "    - {said}");
        // A fix once where refusals in a row share it.
        if last != Some(fix) {
            let _ = writeln!(o, "      fix: {}", fix.text());
        }
        last = Some(fix);
    }
    if stationarity && a.regimes.is_some() {
        let _ = writeln!(
            o,
            "  what the run supports without that assumption: the segments, the worst-segment envelope and the block maxima below"
        );
    }
}

/// The fixes of an analysis's refusals, for [`words::hints`] over all threads.
pub fn fixes(who: &Who, a: &Analysis) -> Vec<Fix> {
    a.refusals
        .iter()
        .map(|r| words::refusal(r, a, who.cpu).1)
        .collect()
}

fn model(o: &mut String, a: &Analysis) {
    if a.stability.is_empty() {
        return;
    }
    let _ = writeln!(
        o,
        "  threshold stability (GPD shape ξ of the cluster maxima per threshold):"
    );
    let chosen = a.model.as_ref().map(|m| m.threshold_ns);
    for c in &a.stability {
        let mark = if Some(c.threshold) == chosen {
            "→"
        } else {
            " "
        };
        let fit = match crate::figure::xi_interval(c) {
            Some((xi, half)) => format!("ξ = {xi:+.3} ± {half:.3}"),
            None => "too few clusters".to_string(),
        };
        let _ = writeln!(
            o,
            "   {mark} {:>12}  {:>6} exceedances  {:>6} clusters  {fit}",
            us(c.threshold),
            c.exceedances,
            c.clusters
        );
    }
    if let Some(m) = &a.model {
        let _ = writeln!(
            o,
            "  model: peaks over threshold {}, {} clusters of {} exceedances (extremal index {:.2}), GPD σ = {}, ξ = {:+.3}, {}",
            us(m.threshold_ns),
            m.clusters,
            m.exceedances,
            m.extremal_index,
            us(m.gpd.sigma),
            m.gpd.xi,
            match m.endpoint_ns {
                Some(e) => format!("bounded tail, estimated upper end {}", us(e)),
                None => "unbounded tail".to_string(),
            }
        );
        if m.shape == crate::Shape::Exponential {
            let _ = writeln!(
                o,
                "  levels from the exponential tail (ξ = 0), the conservative choice: a light tail fitted with ξ < 0 extrapolates too low (likelihood ratio of ξ = 0: {:.2}; --allow-bounded uses the bounded fit)",
                m.lr_exponential
            );
        }
    }
}

fn levels(o: &mut String, a: &Analysis) {
    let label = match (a.assumed_stationary, a.unreliable) {
        (true, _) => "UNTESTED (stationarity assumed, not tested) ",
        (false, true) => "UNRELIABLE ",
        (false, false) => "",
    };
    if let Some(m) = a.model.as_ref().filter(|m| m.run_length < 1.0) {
        let _ = writeln!(
            o,
            "  an episode: each wake-up above {} on its own (no clusters: none found, or no time order to find them in)",
            us(m.threshold_ns)
        );
    } else if let Some(m) = &a.model {
        let _ = writeln!(
            o,
            "  an episode: the wake-ups above {} no more than {:.0} wake-ups apart; {:.2} wake-ups above it per episode on average (extremal index {:.2})",
            us(m.threshold_ns),
            m.run_length,
            m.wakeups_per_episode,
            m.extremal_index
        );
    }
    let conf = a.confidence * 100.0;
    if !a.wakeup_levels.is_empty() {
        let _ = writeln!(
            o,
            "  {label}per wake-up: the latency each wake-up exceeds with probability p ({conf:.0} % confidence interval):"
        );
        rows(o, &a.wakeup_levels, false);
    }
    let _ = writeln!(
        o,
        "  {label}per episode: with probability p per wake-up an episode starts whose maximum exceeds the latency; per time: an episode above it once per that time of this workload ({conf:.0} % confidence interval):"
    );
    rows(o, &a.levels, true);
}

/// The rows of one table of levels; `per_time`: say "once per" of each (the episode table).
pub(crate) fn rows(o: &mut String, levels: &[Level], per_time: bool) {
    for l in levels {
        let once = l
            .once_per_s
            .filter(|_| per_time)
            .map_or(String::new(), |s| format!("once per {}", span(s)));
        let upper = l.upper_ns.map_or("unbounded".to_string(), us);
        let beyond = if l.extrapolation >= 1000.0 {
            format!("{:.0e} × the run", l.extrapolation)
        } else if l.extrapolation > 1.0 {
            format!("{:.0} × the run", l.extrapolation)
        } else {
            "within the run".to_string()
        };
        let longer = match l.longer {
            Some(f) if f <= 1.0 => "  (already that precise)".to_string(),
            Some(f) => format!("  (measure {f:.0} × as long for that precision)"),
            None => String::new(),
        };
        let _ = writeln!(
            o,
            "    p = {:<8.0e} {:>16}  {:>12}  [{} .. {}]  {beyond}{longer}",
            l.probability,
            once,
            us(l.estimate_ns),
            us(l.lower_ns),
            upper
        );
    }
    if levels.is_empty() {
        let _ = writeln!(
            o,
            "    (every probability asked for lies within the measured data)"
        );
    }
}

/// One limit's verdict: `  limit tail@1e-9/wakeup ≤ 200.0 µs: ok: upper bound 91.2 µs`.
pub fn limit(l: &TailLimit, v: &Verdict) -> String {
    let said = match v {
        Verdict::Pass { upper_ns } => format!("ok: upper bound {}", us(*upper_ns)),
        Verdict::Exceeded { upper_ns } => format!(
            "EXCEEDED: upper bound {}",
            upper_ns.map_or("unbounded".to_string(), us)
        ),
        Verdict::NoEstimate => match l.per {
            crate::gate::Per::Time(_) => "FAILED: no estimate to check (refused, or the run's wake-up rate is unknown: no per-time level)".to_string(),
            _ => "FAILED: no estimate to check".to_string(),
        },
        Verdict::Untested { upper_ns } => format!(
            "FAILED: the estimate is untested (--assume-stationary; upper bound {}), and no limit passes on an untested estimate",
            upper_ns.map_or("unbounded".to_string(), us)
        ),
    };
    format!("  limit {l} ≤ {}: {said}", us(l.limit.0 as f64))
}
