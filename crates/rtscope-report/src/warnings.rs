//! Findings worth acting on, from a run's environment, statistics, monitors and loads.

use crate::model::RunData;
use rtscope_core::LoadStatus;
use rtscope_store::RunId;
use rtscope_store::RunStatus;

/// One finding, with the runs it applies to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    /// What was seen, e.g. `the kernel is not PREEMPT_RT`.
    pub what: String,
    /// What to do about it.
    pub hint: String,
    /// The runs it was seen in.
    pub runs: Vec<RunId>,
    /// How much it matters to the figures: 0 the runs themselves (incomplete, a load that
    /// failed, deadlines missed, throttling), 1 a bad setting, 2 a setting to improve.
    pub rank: u8,
}

/// What makes two findings of different runs one line: a check by its name and verdict (its
/// evidence differs run to run: IRQ counts, steal time), per-run facts by their kind.
fn key(what: &str) -> String {
    if let Some(rest) = what.strip_prefix("check ") {
        return format!("check {}", rest.split(':').next().unwrap_or(rest));
    }
    if let Some(rest) = what.strip_prefix("run ") {
        // `run 3 missed 5 deadlines …`, `run 3 is interrupted`: the kind, not the run.
        let kind = rest.split_whitespace().nth(1).unwrap_or_default();
        return format!("run {kind}");
    }
    what.to_string()
}

fn rank(what: &str) -> u8 {
    let throttled = what.starts_with("thermal throttling") || what.ends_with("set during the run");
    if what.starts_with("run ") || what.starts_with("load ") || throttled {
        0
    } else if what.contains(" is bad:") || what.contains("not PREEMPT_RT") {
        1
    } else {
        2
    }
}

/// Every finding of the runs, one line per kind (a check, a per-run fact) with the runs listed,
/// the ones that matter most to the figures first. A per-run fact lists each run's figure
/// (`run 1 missed 958 deadlines …; run 2 missed 975 …`); a check shows its first run's
/// evidence.
pub fn collect(runs: &[RunData]) -> Vec<Warning> {
    let mut out: Vec<(String, Warning)> = Vec::new();
    for r in runs {
        for (what, hint) in of_run(r) {
            let k = key(&what);
            match out.iter_mut().find(|(key, _)| *key == k) {
                Some((_, w)) => {
                    if !w.runs.contains(&r.id()) {
                        w.runs.push(r.id());
                    }
                    if w.rank == 0 && !w.what.contains(&what) {
                        w.what.push_str("; ");
                        w.what.push_str(&what);
                    }
                }
                None => out.push((
                    k,
                    Warning {
                        rank: rank(&what),
                        what,
                        hint,
                        runs: vec![r.id()],
                    },
                )),
            }
        }
    }
    let mut out: Vec<Warning> = out.into_iter().map(|(_, w)| w).collect();
    out.sort_by_key(|w| w.rank);
    out
}

const GOVERNORS: [&str; 5] = [
    "powersave",
    "ondemand",
    "schedutil",
    "conservative",
    "userspace",
];

fn environment(r: &RunData, out: &mut Vec<(String, String)>) {
    if r.detail.environment.is_empty() {
        return;
    }
    let rt = r.env("kernel.realtime") == Some("1")
        || r.env("kernel.config.CONFIG_PREEMPT_RT") == Some("y")
        || r.env("uname.version")
            .is_some_and(|v| v.contains("PREEMPT_RT"));
    if !rt {
        out.push(("the kernel is not PREEMPT_RT".into(), "boot a PREEMPT_RT kernel for bounded latencies; a stock kernel's worst case is usually far higher".into()));
    }
    if let Some(g) = r.env("cpu.governors") {
        if let Some(bad) = GOVERNORS.iter().find(|b| g.contains(*b)) {
            out.push((format!("the cpufreq governor is '{bad}', not 'performance'"), "set every CPU's scaling_governor to performance (e.g. cpupower frequency-set -g performance)".into()));
        }
    }
    if r.env("cpu.smt_active") == Some("1") {
        out.push(("SMT (hyper-threading) is on".into(), "a sibling thread shares the core with the measuring thread; turn SMT off (nosmt, or echo off > /sys/devices/system/cpu/smt/control)".into()));
    }
    let isolated = r.env("kernel.cmdline.isolcpus").is_some()
        || r.env("cpu.isolated").is_some_and(|v| !v.trim().is_empty());
    if r.env("kernel.cmdline").is_some() && !isolated {
        out.push(("no CPU is isolated (no isolcpus)".into(), "isolate the measured CPUs with isolcpus= (and nohz_full=, rcu_nocbs=) on the kernel command line".into()));
    }
}

/// The warn and bad verdicts of the preflight audit the run started with (`rtscope check`),
/// bad first; they replace the guesses from the environment for runs that have one.
fn checks(r: &RunData, out: &mut Vec<(String, String)>) {
    for verdict in ["bad", "warn"] {
        for c in r.checks.iter().filter(|c| c.verdict == verdict) {
            out.push((
                format!("check {} is {verdict}: {}", c.check, c.evidence),
                c.fix.clone().unwrap_or_else(|| "see docs/check.md".into()),
            ));
        }
    }
}

fn throttled(r: &RunData) -> Option<String> {
    let grew = |prefix: &str| {
        r.monitors_with(prefix).any(|m| {
            let first = m.points.first().map_or(0.0, |p| p.1);
            m.points.iter().any(|p| p.1 > first)
        })
    };
    let flagged = r
        .monitors
        .iter()
        .filter(|m| m.metric.starts_with("rpi.") && m.metric != "rpi.under_voltage_occurred")
        .filter(|m| !m.metric.ends_with("_occurred"))
        .find(|m| m.points.iter().any(|p| p.1 > 0.0));
    if grew("throttle.") {
        return Some("thermal throttling was seen during the run".into());
    }
    flagged.map(|m| format!("{} was set during the run", m.metric))
}

/// The warning about a load that did not end `ok`. A load the supervisor SIGKILLed at the
/// planned stop (it ignored SIGTERM) ran for the whole measurement: the run was measured under
/// it, only the stop was unclean. Any other status (failed, ended early) means it was not.
fn load_warning(l: &rtscope_store::LoadRow, s: &rtscope_store::RunSummary) -> (String, String) {
    let why = l.error.clone().unwrap_or_default();
    let what = format!("load '{}' of run {} {}: {why}", l.name, s.id, l.status);
    let whole = l.ran_ns >= s.progress_ns;
    if l.status == LoadStatus::Killed && whole {
        let what = format!(
            "load '{}' of run {} was SIGKILLed at the stop, after the measurement ended: {why}",
            l.name, s.id
        );
        let hint = "it ran for the whole measurement, so the run was measured under it; make the program end on SIGTERM (or give it a longer grace period) so it stops cleanly";
        return (what, hint.into());
    }
    let hint = "the run was not measured under the load it was meant to; fix the load and re-run";
    (what, hint.into())
}

fn of_run(r: &RunData) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let s = &r.detail.summary;
    if s.status != RunStatus::Complete {
        out.push((
            format!("run {} is {}", s.id, s.status),
            "its statistics cover only the part measured; re-run it to the end".into(),
        ));
    }
    if r.checks.is_empty() {
        environment(r, &mut out);
    } else {
        checks(r, &mut out);
    }
    if r.detail.sample_rule() == rtscope_store::SampleRule::Deadline {
        out.push((
            format!("run {} was recorded with the old sample rule (every missed deadline was also a sample)", s.id),
            "its sample count, mean, minimum and percentiles include synthetic samples and are not comparable with cyclictest or newer runs; re-measure it".into(),
        ));
    }
    if s.missed > 0 {
        let deadlines = s.samples.saturating_add(s.missed).max(1);
        let ratio = s.missed as f64 * 100.0 / deadlines as f64;
        out.push((format!("run {} missed {} deadlines ({ratio:.4} % of {deadlines})", s.id, s.missed), "a wake-up came later than the next period; look at the over-time plot for when, and at the loads and monitors for why".into()));
    }
    if let Some(t) = throttled(r) {
        out.push((
            t,
            "cool the board or lower the load; throttled clocks raise latency".into(),
        ));
    }
    for l in r.loads.iter().filter(|l| l.status != LoadStatus::Ok) {
        out.push(load_warning(l, s));
    }
    out.extend(short_histogram(r));
    out.extend(cadence_gaps(r));
    let dropped: u64 = r.detail.threads.iter().map(|t| t.raw_dropped).sum();
    if dropped > 0 && crate::noise::is_noise(r) {
        out.push((
            format!(
                "run {}'s gap ring dropped {dropped} gaps over the threshold",
                s.id
            ),
            "they are counted, not recorded; raise --gap-capacity".into(),
        ));
    } else if dropped > 0 {
        out.push((
            format!("run {} dropped {dropped} raw samples", s.id),
            "the writer could not keep up; histograms and statistics are still complete".into(),
        ));
    }
    out
}

/// An imported histogram too short for the run: samples at or above its limit have no value,
/// so the percentiles ranked among them are lower bounds. Says by how much it was too short.
fn short_histogram(r: &RunData) -> Option<(String, String)> {
    let d = &r.detail;
    let over = d.overflow_all();
    let count = d.overflows();
    if count == 0 {
        return None;
    }
    let s = &d.summary;
    let share = count as f64 * 100.0 / s.samples.max(1) as f64;
    let first = over_first(r);
    let floor_us = over.floor.0 / 1000;
    let max = s.max_ns.map_or(String::new(), |m| {
        format!(
            "; the largest sample was {} µs, {:.1}× the limit",
            crate::us(m),
            m as f64 / over.floor.0.max(1) as f64
        )
    });
    let need = s.max_ns.map_or(floor_us * 2, |m| m.div_ceil(1000) + 1);
    Some((
        format!(
            "run {}'s source histogram was too short: {count} samples ({share:.4} %) were at or above its {floor_us} µs limit and have no value{max}; {first}",
            s.id
        ),
        format!("re-run cyclictest with -h {need} (or larger) so every sample has a value"),
    ))
}

/// Which percentiles are only lower bounds: from the lowest reported one that is.
fn over_first(r: &RunData) -> String {
    let d = &r.detail;
    let bounded = d
        .threads
        .iter()
        .flat_map(|t| t.histogram.percentiles_over_all(d.overflow(t)))
        .chain(d.summary.histogram.percentiles_over_all(d.overflow_all()))
        .filter(|p| p.lower_bound)
        .min_by(|a, b| a.quantile.total_cmp(&b.quantile));
    bounded.map_or("no percentile shown is affected".into(), |p| {
        let floor_us = d.overflow_all().floor.0 / 1000;
        format!(
            "the percentiles from {} up are lower bounds (shown ≥{floor_us})",
            p.label
        )
    })
}

/// The housekeeping threads' cadence gaps (`rtscope.cadence.*`, see rtscope-session's
/// `housekeeping`): periods more than 1.5× the planned one, when the control thread (series
/// points, checkpoints) or the monitor could not run on time.
fn cadence_gaps(r: &RunData) -> Vec<(String, String)> {
    let field = |v: &str, key: &str| {
        v.split_whitespace()
            .find_map(|f| f.strip_prefix(key)?.strip_prefix('='))
            .map(str::to_string)
    };
    let mut out = Vec::new();
    for (key, what) in [
        ("rtscope.cadence.control", "series points and checkpoints"),
        ("rtscope.cadence.monitor", "monitor samples"),
    ] {
        let Some(v) = r.env(key) else { continue };
        let late: u64 = field(v, "late").and_then(|n| n.parse().ok()).unwrap_or(0);
        if late == 0 {
            continue;
        }
        let periods = field(v, "periods").unwrap_or_default();
        let longest = field(v, "longest").unwrap_or_default();
        let period = field(v, "period").unwrap_or_default();
        let sched = r.env("rtscope.housekeeping").unwrap_or("unknown");
        out.push((
            format!("run {}'s {what} stalled: {late} of {periods} periods were over 1.5× their {period} (longest {longest}; housekeeping threads: {sched})", r.id()),
            "those points cover more time than planned; give rtscope a CPU the run does not measure (--main-cpus, isolcpus) or keep --housekeeping-prio on".into(),
        ));
    }
    out
}

#[cfg(test)]
mod key_tests {
    use super::{key, rank};

    #[test]
    fn findings_of_several_runs_are_one_line_per_kind_ranked_by_what_they_do_to_the_figures() {
        let a =
            "check irq_affinity is warn: 19 device IRQs: 36 virtio1-req.0 (80409 on measured CPUs)";
        let b =
            "check irq_affinity is warn: 19 device IRQs: 36 virtio1-req.0 (81384 on measured CPUs)";
        assert_eq!(key(a), key(b));
        assert_eq!(key(a), "check irq_affinity is warn");
        let m1 = "run 1 missed 958 deadlines (0.3832 % of 250000)";
        let m2 = "run 2 missed 975 deadlines (0.3900 % of 250000)";
        assert_eq!(key(m1), key(m2));
        assert_ne!(key(m1), key("run 2 is interrupted"));
        assert_eq!(rank(m1), 0);
        assert_eq!(rank("check preemption is bad: mode none"), 1);
        assert_eq!(rank(a), 2);
        assert_eq!(
            rank("check rt_throttling is warn: sched_rt_runtime_us = 950000"),
            2
        );
        assert_eq!(rank("thermal throttling was seen during the run"), 0);
    }
}
