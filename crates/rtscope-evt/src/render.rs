//! The analysis as text for people (`rtscope tail`, the report's tail section); JSON is the
//! serde form of [`crate::Analysis`]. Refusals in plain words with their fixes come from
//! [`crate::words`], the answers for a changing tail at the end of this file ([`regimes_text`]).

use crate::gate::{TailLimit, Verdict};
use crate::regimes::{Answer, BlockMaxima, Envelope, Regimes, Segments, SEGMENTS};
use crate::units::{span, us};
use crate::words::{self, Fix, Who};
use crate::{Analysis, Level, Outcome};
use std::fmt::Write;

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
        regimes_text(&mut o, r, a.confidence);
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
    if let (true, Some(r)) = (stationarity, &a.regimes) {
        let _ = writeln!(o, "  {}", without_one_tail(r, a.observed_max_ns));
        let own = r.observed.given();
        if own.is_some_and(|v| v.tested && !(v.levels.is_empty() && v.per_time.is_empty())) {
            let _ = writeln!(
                o,
                "  within the run, its own values below give tested levels (the rate held in this run, at its conditions; beyond the run nothing is said)"
            );
        }
        let _ = writeln!(
            o,
            "  for a tested estimate: isolate the CPU (isolcpus=, nohz_full=, interrupts moved away), measure longer, on a quieter machine (nothing started or stopped during the run)"
        );
    }
}

/// What the run's answers without one stationary tail give, said as what they give: the
/// envelope's promise only where it gives a level, the block maxima's only where their tests
/// passed, and otherwise that no level beyond the data is given.
fn without_one_tail(r: &Regimes, max_ns: f64) -> String {
    match (r.envelope_gives_a_level(), r.tested_block_levels()) {
        (true, _) => "the answer for this run is the worst-segment envelope below: it promises its levels as if every minute were like the worst segment seen, no more (conditions the run did not see are not covered); the block maxima's levels count only where their tests pass".into(),
        (false, true) => "the answer for this run is the block maxima's levels below, whose tests passed; the worst-segment envelope gives none".into(),
        (false, false) => format!(
            "no level beyond what the run saw is given: neither the worst-segment envelope nor the block maxima bound one (why, below); what the run shows is its largest latency, {}",
            us(max_ns)
        ),
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
        if m.shape == crate::Shape::Gpd && m.gpd.xi < 0.0 {
            let p = crate::bounded_p(m.lr_exponential);
            let _ = writeln!(
                o,
                "  ASSUMED (--allow-bounded): a bounded tail (ξ < 0), tested by the likelihood ratio of ξ = 0: {:.2}, p = {p:.3}: {}",
                m.lr_exponential,
                if p < a.alpha {
                    "the data reject the unbounded tail"
                } else {
                    "the data do NOT reject an unbounded tail, so the bound is an assumption only"
                }
            );
        }
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
    for n in &a.not_given {
        let once = n
            .once_per_s
            .map_or(String::new(), |s| format!(" (once per {})", span(s)));
        let _ = writeln!(
            o,
            "    p = {:<8.0e}{once} not given: {}",
            n.probability, n.why
        );
    }
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
        Verdict::Pass { upper_ns, used } => {
            format!("ok: upper bound {} ({})", us(*upper_ns), used.words())
        }
        Verdict::Exceeded { upper_ns, used } => format!(
            "EXCEEDED: upper bound {} ({})",
            upper_ns.map_or("unbounded".to_string(), us),
            used.words()
        ),
        Verdict::NoEstimate { why } => format!("FAILED: no estimate to check: {why}"),
        Verdict::Untested { upper_ns, why: None } => format!(
            "FAILED: the estimate is untested (--assume-stationary; upper bound {}), and no limit passes on an untested estimate",
            upper_ns.map_or("unbounded".to_string(), us)
        ),
        Verdict::Untested {
            upper_ns,
            why: Some(why),
        } => format!(
            "FAILED: untested: {why} (upper bound {}); no limit passes on an untested level",
            upper_ns.map_or("unbounded".to_string(), us)
        ),
    };
    format!("  limit {l} ≤ {}: {said}", us(l.limit.0 as f64))
}

// ---- the answers for a changing tail (crate::regimes) ----

/// "segments 3 and 7", "segments 2, 5 and 9", "segment 4".
fn named(segments: &[usize]) -> String {
    let n: Vec<String> = segments.iter().map(|s| s.to_string()).collect();
    match n.as_slice() {
        [one] => format!("segment {one}"),
        [rest @ .., last] => format!("segments {} and {last}", rest.join(", ")),
        [] => "no segment".to_string(),
    }
}

/// The answers as `rtscope tail` prints them, below the thread's analysis.
pub fn regimes_text(o: &mut String, r: &Regimes, confidence: f64) {
    use std::fmt::Write;
    let conf = confidence * 100.0;
    let _ = writeln!(
        o,
        "  while the run ran (answers that do not assume one stationary tail):"
    );
    match &r.segments {
        Answer::Given(s) => segments_text(o, s),
        Answer::NotGiven { why } => {
            let _ = writeln!(o, "    segments: not given: {why}");
        }
    }
    match &r.envelope {
        Answer::Given(e) => envelope_text(o, e, conf),
        Answer::NotGiven { why } => {
            let _ = writeln!(o, "    worst-segment envelope: not given: {why}");
        }
    }
    match &r.blocks {
        Answer::Given(b) => blocks_text(o, b, conf),
        Answer::NotGiven { why } => {
            let _ = writeln!(o, "    block maxima: not given: {why}");
        }
    }
    match &r.observed {
        Answer::Given(v) => observed_text(o, v, conf),
        Answer::NotGiven { why } => {
            let _ = writeln!(o, "    within the run (its own values): not given: {why}");
        }
    }
}

/// The run's own values: "within the run (its own values, no model of the tail)".
fn observed_text(o: &mut String, v: &crate::regimes::observed::Observed, conf: f64) {
    use std::fmt::Write;
    let label = if v.tested { "" } else { " UNTESTED" };
    let _ = writeln!(
        o,
        "    within the run (its own values, no model of the tail){label}, {conf:.0} % confidence interval; extremal index {:.2} above {} ({:.1} wake-ups per episode, {} episodes):",
        v.extremal_index,
        us(v.threshold_ns),
        v.wakeups_per_episode,
        v.episodes
    );
    for l in &v.levels {
        let _ = writeln!(
            o,
            "      P = {:e} per wake-up: {} [{}, {}] (rank {} of {} wake-ups, {:.1} episodes, θ = {:.2})",
            l.probability,
            us(l.estimate_ns),
            us(l.lower_ns),
            us(l.upper_ns),
            l.rank,
            v.wakeups,
            l.episodes,
            l.extremal_index
        );
    }
    for l in &v.per_time {
        let _ = writeln!(
            o,
            "      once per {}: {} [{}, {}] (an episode's maximum; {:.1} in the run)",
            crate::regimes::per_time::words(l.once_per_s),
            us(l.estimate_ns),
            us(l.lower_ns),
            us(l.upper_ns),
            l.times_in_run
        );
    }
    for n in &v.not_given {
        let what = match (n.probability, n.once_per_s) {
            (Some(p), _) => format!("P = {p:e} per wake-up"),
            (None, Some(t)) => format!("once per {}", crate::regimes::per_time::words(t)),
            (None, None) => String::new(),
        };
        let _ = writeln!(o, "      {what}: not given: {}", n.why);
    }
    let test = if v.tested { "passed" } else { "FAILED" };
    let _ = writeln!(o, "      test {test}: {}", v.test.words());
    let _ = writeln!(
        o,
        "      promise: the rate held in this run, at its conditions; beyond the run nothing is said. For more: a longer run (more episodes), isolated CPUs (fewer)"
    );
}

fn envelope_text(o: &mut String, e: &Envelope, conf: f64) {
    let _ = writeln!(
        o,
        "    worst-segment envelope: per wake-up, as if every moment were like the worst segment at that probability ({conf:.0} % confidence interval):"
    );
    for w in &e.levels {
        let mut line = String::new();
        rows(&mut line, std::slice::from_ref(&w.level), false);
        let from = w
            .from_segment
            .map_or("the fit".to_string(), |s| format!("segment {s}'s values"));
        let _ = writeln!(o, "  {}  from {from}", line.trim_end());
    }
    for n in &e.not_given {
        let _ = writeln!(o, "      p = {:<8.0e} not given: {}", n.probability, n.why);
    }
    let fit = match (&e.fit, &e.fit_refused) {
        (Some(f), None) => format!(
            "above {} the {} episodes' maxima of {} follow one GPD (ξ = {:+.2})",
            us(f.threshold_ns),
            f.episodes,
            named(&f.segments),
            f.gpd.xi
        ),
        (_, Some(why)) if e.not_given.iter().any(|n| &n.why == why) => {
            "no level (why above)".to_string()
        }
        (_, Some(why)) => format!("no level: {why}"),
        (None, None) => "no fit".to_string(),
    };
    let _ = writeln!(
        o,
        "      assumes: the worst segment at each probability shows this workload's worst conditions there; within one segment ({} wake-ups) the levels are read off every segment's values, beyond it {fit}; nothing below {:.0e}; conditions the run did not see are not covered",
        e.wakeups_per_segment,
        e.smallest_probability
    );
    per_time_text(o, &e.per_time, conf);
}

/// The envelope per time: "once per 1 min of the worst conditions seen: above 12.3 ms".
fn per_time_text(o: &mut String, t: &crate::regimes::per_time::TimeEnvelope, conf: f64) {
    let _ = writeln!(
        o,
        "    worst-segment envelope per time: the largest latency of a {} block, as if every moment were like the worst segment at that time ({conf:.0} % confidence interval):",
        span(t.block_s)
    );
    for w in &t.levels {
        let l = &w.level;
        let _ = writeln!(
            o,
            "      once per {} of the worst conditions seen: above {}  [{} .. {}]  from segment {}'s blocks",
            crate::regimes::per_time::words(l.once_per_s),
            us(l.estimate_ns),
            us(l.lower_ns),
            l.upper_ns.map_or("unbounded".to_string(), us),
            w.from_segment
        );
    }
    for n in &t.not_given {
        let _ = writeln!(
            o,
            "      once per {}: not given: {}",
            crate::regimes::per_time::words(n.once_per_s),
            n.why
        );
    }
    let _ = writeln!(
        o,
        "      assumes: the worst segment at each time shows this workload's worst conditions; a 1 s block of it exceeds the level once per that time (what the block maxima's levels mean); times within one segment ({} blocks) only",
        t.blocks_per_segment
    );
}

fn blocks_text(o: &mut String, b: &BlockMaxima, conf: f64) {
    use std::fmt::Write;
    let _ = writeln!(
        o,
        "    block maxima: the largest latency of each of {} blocks of {}, a GEV (ξ = {:+.2}, fitted to the largest {:.0} % of them); per time of this workload ({conf:.0} % confidence interval):",
        b.blocks,
        span(b.block_s),
        b.gev.xi,
        100.0 * (1.0 - b.censored_share)
    );
    for l in &b.levels {
        let beyond = if l.extrapolation > 1.0 {
            format!("{:.0} × the run", l.extrapolation)
        } else {
            "within the run".to_string()
        };
        let _ = writeln!(
            o,
            "      once per {:<8} {:>12}  [{} .. {}]  {beyond}",
            span(l.once_per_s),
            us(l.estimate_ns),
            us(l.lower_ns),
            l.upper_ns.map_or("unbounded".to_string(), us)
        );
    }
    for n in &b.not_given {
        let _ = writeln!(
            o,
            "      once per {}: not given: {}",
            span(n.once_per_s),
            n.why
        );
    }
    for t in &b.tests {
        let (mark, detail) = match &t.outcome {
            Outcome::Pass { statistic, p } => {
                ("pass", format!("statistic {statistic:.4}, p = {p:.3}"))
            }
            Outcome::Fail { statistic, p } => {
                ("FAIL", format!("statistic {statistic:.4}, p = {p:.3}"))
            }
            Outcome::Untested { why } => ("untested", why.clone()),
        };
        let _ = writeln!(o, "      {mark:<8} {}: {detail}", t.test.question());
    }
    if !b.tested {
        let _ = writeln!(
            o,
            "      UNTESTED: a test of the block maxima did not pass, so no --limit tail@1/TIME passes on these levels"
        );
    }
    if let Some(h) = &b.held_out {
        let _ = writeln!(
            o,
            "      held out: fitted on {} alternate blocks, the level a block exceeds with probability {} ({}) was exceeded by {} of the other {}, {:.1} expected: {:.2} ×",
            h.fitted,
            h.per_block,
            us(h.level_ns),
            h.observed,
            h.checked,
            h.expected,
            h.ratio()
        );
    }
    let _ = writeln!(
        o,
        "      assumes: the run's mix of conditions goes on in the same proportions (the blocks come from that mix, not from one regime)"
    );
}

fn segments_text(o: &mut String, s: &Segments) {
    use std::fmt::Write;
    let level = us(s.level_ns);
    let each = span(s.seconds_per_segment);
    let held = format!(
        "{} of {SEGMENTS} hold {:.0} % of them; {each} each",
        named(&s.holding),
        s.holding_share * 100.0
    );
    let said = match s.change {
        _ if s.same_rate_p >= 0.01 => format!(
            "the rate of latencies above {level} stayed about the same across the run's {SEGMENTS} segments of {each} (p = {:.2} for one rate)",
            s.same_rate_p
        ),
        Some(c) => format!(
            "the rate of latencies above {level} changed {c:.0} × during the run ({held})"
        ),
        None => format!(
            "the rate of latencies above {level} went from none in some segments to {} in one ({held})",
            s.counts.iter().max().unwrap_or(&0)
        ),
    };
    let _ = writeln!(o, "    segments: {said}");
    let cells = |v: Vec<String>| v.iter().map(|c| format!("{c:>6}")).collect::<String>();
    let _ = writeln!(
        o,
        "      segment {}",
        cells((1..=SEGMENTS).map(|i| i.to_string()).collect())
    );
    let _ = writeln!(
        o,
        "      above   {}",
        cells(s.counts.iter().map(|c| c.to_string()).collect())
    );
}
