//! The human summary of `rtscope measure`: its headline (the plan in one line), one row per
//! thread and one for all threads.

use rtscope_common::limits::Check;
use rtscope_core::{text, Histogram, Nanos, Overflow, Stats, PERCENTILES};
use rtscope_engine::{ClockKind, Policy, SleepMode};
use rtscope_session::plan::RunPlan;
use std::fmt::Write;

/// One row of the table.
pub struct Row<'a> {
    /// `0`, `1` … or `all`.
    pub label: String,
    /// CPU (`-` when not pinned or for `all`).
    pub cpu: String,
    /// Statistics.
    pub stats: &'a Stats,
    /// Histogram.
    pub hist: &'a Histogram,
    /// Samples counted but not in `hist` (an import's overflows).
    pub over: Overflow,
    /// Offset of the max from the start of the run.
    pub max_at: Option<Nanos>,
}

use rtscope_core::text::us;

/// Renders the table. Percentiles resting on fewer than 10 samples beyond them get a `*`.
pub fn render(rows: &[Row]) -> String {
    let mut head: Vec<String> = ["thread", "cpu", "samples", "min", "mean"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    head.extend(PERCENTILES.iter().map(|(l, _)| l.to_string()));
    head.extend(
        ["max", "max at", "missed", "miss %"]
            .iter()
            .map(|s| s.to_string()),
    );
    let mut cells: Vec<Vec<String>> = vec![head];
    let (mut starred, mut bounded) = (false, false);
    for r in rows {
        let mut c = vec![r.label.clone(), r.cpu.clone(), r.stats.count.to_string()];
        let has = r.stats.count > 0;
        c.push(if has { us(r.stats.min) } else { "-".into() });
        c.push(
            r.stats
                .mean_ns()
                .map_or("-".into(), |m| format!("{:.1}", m / 1000.0)),
        );
        for p in r.hist.percentiles_over_all(r.over) {
            let star = if p.is_supported() || p.value.is_none() {
                ""
            } else {
                "*"
            };
            starred |= !star.is_empty();
            bounded |= p.lower_bound;
            c.push(format!("{}{star}", text::percentile(&p)));
        }
        // A source may know the longest sample without counting any (rtla osnoise top).
        let max_known = has || r.stats.max.0 > 0;
        c.push(if max_known {
            us(r.stats.max)
        } else {
            "-".into()
        });
        c.push(
            r.max_at
                .map_or("-".into(), |t| format!("{:.3}s", t.as_secs_f64())),
        );
        c.push(r.stats.missed.to_string());
        c.push(r.stats.miss_ratio().map_or("-".into(), percent));
        cells.push(c);
    }
    let mut s = columns(&cells, 2);
    s.push_str("latencies in us; samples = wake-ups; max at = seconds into the run; missed = deadlines passed without a wake-up (not samples); miss % = missed / (samples + missed)\n");
    if bounded {
        s.push_str("≥ lower bound: the percentile falls among samples the source's histogram could not hold (at or above its limit)\n");
    }
    if starred {
        s.push_str("* fewer than 10 samples lie beyond this percentile: measure longer for a meaningful value\n");
    }
    s
}

/// A ratio (0 … 1) as a percentage: two decimals, four below 0.01 % (one miss in a million
/// still shows).
fn percent(r: f64) -> String {
    if r == 0.0 {
        "0".into()
    } else if r >= 0.0001 {
        format!("{:.2}", r * 100.0)
    } else {
        format!("{:.4}", r * 100.0)
    }
}

/// A limit's verdict as its line says it: whether it held and what was checked
/// (`max on cpu 1 = 12.3us <= 20us`, `CPU 2 max_single = 3us (limit 20us)`).
pub trait Verdict {
    /// Whether the value is within the limit.
    fn passed(&self) -> bool;
    /// The statistic, where, the value and the limit, after `limit pass: `.
    fn what(&self) -> String;
}

/// A measure or respond limit: `{stat} on {scope} = {value} <= {limit}` (`>` when it failed).
impl Verdict for Check {
    fn passed(&self) -> bool {
        self.passed
    }

    fn what(&self) -> String {
        let fmt = |v: u64| {
            if self.stat == "missed" {
                v.to_string()
            } else {
                Nanos(v).to_string()
            }
        };
        let op = if self.passed { "<=" } else { ">" };
        format!(
            "{} on {} = {} {op} {}",
            self.stat,
            self.scope,
            fmt(self.value),
            fmt(self.limit)
        )
    }
}

/// A noise limit: `CPU {cpu} {stat} = {value} (limit {limit})`.
impl Verdict for rtscope_session::noise::NoiseCheck {
    fn passed(&self) -> bool {
        self.passed
    }

    fn what(&self) -> String {
        format!(
            "CPU {} {} = {} (limit {})",
            self.cpu, self.stat, self.value, self.limit
        )
    }
}

/// Renders limit results, every command's the same way: one line per check, failures first.
pub fn render_checks<V: Verdict>(checks: &[V]) -> String {
    let mut s = String::new();
    for c in checks
        .iter()
        .filter(|c| !c.passed())
        .chain(checks.iter().filter(|c| c.passed()))
    {
        let verdict = if c.passed() { "pass" } else { "FAIL" };
        let _ = writeln!(s, "limit {verdict}: {}", c.what());
    }
    s
}

pub(crate) use rtscope_core::text::{columns, count};

/// The table of a finished run: a row per thread and one for all of them.
pub fn of_run(
    r: &rtscope_engine::RunResult,
    total_stats: &Stats,
    total_hist: &Histogram,
) -> String {
    let offset = |s: &Stats| Nanos(s.max_time.0.saturating_sub(r.clock_start.0));
    let mut rows: Vec<Row> = r
        .threads
        .iter()
        .map(|t| Row {
            label: t.index.to_string(),
            cpu: t.cpu.map_or("-".into(), |c| c.to_string()),
            stats: &t.stats,
            hist: &t.histogram,
            over: Default::default(),
            max_at: (t.stats.count > 0).then(|| offset(&t.stats)),
        })
        .collect();
    rows.push(Row {
        label: "all".into(),
        cpu: "-".into(),
        stats: total_stats,
        hist: total_hist,
        over: Default::default(),
        max_at: (total_stats.count > 0).then(|| offset(total_stats)),
    });
    render(&rows)
}

/// The line `rtscope measure` starts with: what the plan measures, how, where and for how long.
pub fn headline(plan: &RunPlan) -> String {
    let (c, latency) = (&plan.config, plan.latency);
    let t = &c.threads[0];
    let cpus = c.pinned_cpus();
    let length = match (c.duration, c.loops) {
        (Some(d), Some(l)) => format!("{d} or {l} loops"),
        (Some(d), None) => d.to_string(),
        (None, Some(l)) => format!("{l} loops"),
        (None, None) => "until stopped".into(),
    };
    let sleep = if c.sleep == SleepMode::Absolute {
        "absolute"
    } else {
        "relative"
    };
    let clock = if c.clock == ClockKind::Monotonic {
        "CLOCK_MONOTONIC"
    } else {
        "CLOCK_REALTIME"
    };
    let dma = latency.map_or("cpu_dma_latency untouched".to_string(), |l| {
        format!("cpu_dma_latency={l}us")
    });
    let sched = match t.policy {
        Policy::Deadline {
            runtime,
            deadline,
            period,
        } => {
            format!("SCHED_DEADLINE runtime {runtime} deadline {deadline} period {period}")
        }
        p => format!("SCHED_{} prio {}", p.name().to_uppercase(), t.priority),
    };
    let place = if cpus.is_empty() {
        "unpinned".to_string()
    } else {
        format!("on CPUs {cpus}")
    };
    format!(
        "rtscope measure: {} thread{} {place}, {sched}, interval {}, {length}, {sleep} clock_nanosleep on {clock}, mlock {}, {dma}",
        c.threads.len(),
        if c.threads.len() == 1 { "" } else { "s" },
        t.interval,
        if c.mlock { "on" } else { "off" }
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtscope_engine::CpuSet;
    use rtscope_session::plan::{PlanSpec, PolicyChoice};

    #[test]
    fn the_headline_names_threads_placement_policy_interval_length_and_settings() {
        let spec = PlanSpec {
            cpus: Some(CpuSet::from_cpus([0, 1])),
            policy: PolicyChoice::Fifo,
            priority: 90,
            interval: Nanos::from_ms(1),
            duration: Some(Nanos::from_secs(10)),
            mlock: true,
            latency: Some(0),
            ..PlanSpec::default()
        };
        let plan = RunPlan::build(&spec, &CpuSet::from_cpus([0, 1])).unwrap();
        assert_eq!(
            headline(&plan),
            "rtscope measure: 2 threads on CPUs 0-1, SCHED_FIFO prio 90, interval 1.00ms, \
             10.000s, absolute clock_nanosleep on CLOCK_MONOTONIC, mlock on, cpu_dma_latency=0us"
        );
    }
}
