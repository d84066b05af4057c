//! `rtscope run --dry-run`: the run matrix, what each load case starts and the total time, as
//! a pure rendering of the expanded [`Campaign`].

use super::expand::{estimate, Campaign, PlannedRun};
use super::loads;
use rtscope_common::limits::Stat;
use rtscope_core::Nanos;
use std::fmt::Write as _;
use std::time::Duration;

/// The dry-run text of a campaign.
pub fn render(c: &Campaign) -> String {
    let mut s = String::new();
    let from = if super::presets::NAMES.contains(&c.source.as_str()) {
        "preset"
    } else {
        "file"
    };
    let _ = writeln!(s, "Campaign {} ({from} {})", c.name, c.source);
    if let Some(d) = &c.description {
        let _ = writeln!(s, "  {}", d.trim());
    }
    if !c.tags.is_empty() {
        let tags: Vec<String> = c.tags.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let _ = writeln!(s, "  tags: {}", tags.join(" "));
    }
    s.push('\n');
    s.push_str(&matrix(&c.runs));
    s.push_str("\nLoad cases:\n");
    let mut seen: Vec<&str> = Vec::new();
    for r in &c.runs {
        if seen.contains(&r.case.as_str()) {
            continue;
        }
        seen.push(&r.case);
        if r.loads.is_empty() {
            let _ = writeln!(s, "  {}: no load (idle)", r.case);
            continue;
        }
        let _ = writeln!(
            s,
            "  {}: {} load(s), measured after {} of warm-up",
            r.case,
            r.loads.len(),
            short(r.settle)
        );
        for l in &r.loads {
            let _ = writeln!(s, "    {}", loads::describe(l));
        }
    }
    s.push_str(&limits(&c.runs));
    if let Some(u) = &c.until_tail {
        let _ = writeln!(
            s,
            "\nuntil_tail: each run is checked after its first length, then at each doubling, until every thread's level at p {:e} is within {} % or refused, confirmed by a second check (docs/campaigns.md); at most {}, as the total counts. Every sample is kept (raw)",
            u.probability,
            super::until_tail::percent(u.precision),
            human(Duration::from_nanos(u.max_duration.0))
        );
    }
    if let Some(l) = c.runs.iter().find_map(|r| r.plan.latency) {
        let _ = writeln!(
            s,
            "\n/dev/cpu_dma_latency is held at {l} µs during the runs that ask for it"
        );
    }
    let total: Duration = c.runs.iter().map(estimate).sum();
    let n = c.runs.len();
    let _ = writeln!(
        s,
        "\n{n} run{}, about {} (dry run: nothing was started)",
        if n == 1 { "" } else { "s" },
        human(total)
    );
    s
}

fn matrix(runs: &[PlannedRun]) -> String {
    let head = [
        "seq",
        "scenario",
        "case",
        "repeat",
        "threads/CPUs",
        "interval",
        "length",
        "loads",
    ];
    let rows: Vec<[String; 8]> = runs
        .iter()
        .map(|r| {
            [
                r.seq.to_string(),
                r.scenario.clone(),
                r.case.clone(),
                format!("{}/{}", r.repeat, r.repeats),
                layout(r),
                interval(r),
                length(r),
                summary(r),
            ]
        })
        .collect();
    let mut width = head.map(str::len);
    for row in &rows {
        for (w, cell) in width.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut s = String::new();
    let line = |s: &mut String, cells: &[String]| {
        let padded: Vec<String> = cells
            .iter()
            .zip(width)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        let _ = writeln!(s, "  {}", padded.join("  ").trim_end());
    };
    line(&mut s, &head.map(String::from));
    for row in &rows {
        line(&mut s, row);
    }
    s
}

/// `Limits of N:N: max=100us, missed=0` for each scenario that has limits.
fn limits(runs: &[PlannedRun]) -> String {
    let mut s = String::new();
    let mut seen: Vec<&str> = Vec::new();
    for r in runs.iter().filter(|r| !r.plan.limits.is_empty()) {
        if seen.contains(&r.scenario.as_str()) {
            continue;
        }
        seen.push(&r.scenario);
        let each: Vec<String> = r
            .plan
            .limits
            .iter()
            .map(|l| match l.stat {
                Stat::Missed => format!("missed={}", l.value),
                _ => format!("{}={}", l.stat.name(), short(Nanos(l.value))),
            })
            .collect();
        let _ = writeln!(
            s,
            "\nLimits of {}: {} (checked after each run)",
            r.scenario,
            each.join(", ")
        );
    }
    s
}

fn layout(r: &PlannedRun) -> String {
    if let Some(rtscope_session::plan::RespondPlan::Ipc(c)) = r.plan.workload.respond() {
        let each = c
            .iter()
            .map(|c| format!("{} {}", c.kind, c.placement.path()));
        return format!("respond {}", each.collect::<Vec<_>>().join(", "));
    }
    if let Some(n) = r.plan.workload.noise() {
        let cpus = rtscope_engine::CpuSet::from_cpus(n.config.cpus.iter().copied());
        return format!("noise on {cpus}");
    }
    let n = r.plan.config.threads.len();
    let pinned = r.plan.config.pinned_cpus();
    if pinned.is_empty() {
        format!("{n} unpinned")
    } else {
        format!("{n} on {pinned}")
    }
}

fn interval(r: &PlannedRun) -> String {
    // A noise run's loops never sleep: its duty cycle instead.
    if let Some(n) = r.plan.workload.noise() {
        return format!("{}/{}", short(n.config.runtime), short(n.config.period));
    }
    let first = r.plan.config.threads.first().map(|t| t.interval);
    let spread = r
        .plan
        .config
        .threads
        .iter()
        .any(|t| Some(t.interval) != first);
    match first {
        Some(i) if spread => format!("{}+", short(i)),
        Some(i) => short(i),
        None => "-".into(),
    }
}

fn length(r: &PlannedRun) -> String {
    if let Some(u) = &r.until_tail {
        return format!("{}..{}", short(u.first_check), short(u.rule.max_duration));
    }
    match (r.plan.config.duration, r.plan.config.loops) {
        (Some(d), Some(l)) => format!("{} or {l} loops", short(d)),
        (Some(d), None) => short(d),
        (None, Some(l)) => format!("{l} loops"),
        (None, None) => "until stopped".into(),
    }
}

fn summary(r: &PlannedRun) -> String {
    if r.loads.is_empty() {
        return "-".into();
    }
    let names: Vec<String> = r.loads.iter().map(loads::short_name).collect();
    names.join(", ")
}

use crate::progress::human;
use rtscope_core::text::short;

#[cfg(test)]
mod tests {
    use super::{human, short};
    use rtscope_core::Nanos;
    use std::time::Duration;

    #[test]
    fn short_durations_keep_whole_units() {
        assert_eq!(short(Nanos::from_us(200)), "200us");
        assert_eq!(short(Nanos::from_secs(25)), "25s");
        assert_eq!(short(Nanos::from_us(1500)), "1500us");
        assert_eq!(short(Nanos::ZERO), "0s");
    }

    #[test]
    fn totals_read_like_a_clock() {
        assert_eq!(human(Duration::from_millis(51_600)), "52s");
        assert_eq!(human(Duration::from_secs(64)), "1m 04s");
        assert_eq!(human(Duration::from_secs(3900)), "1h 05m");
        assert_eq!(human(Duration::from_secs(40_000 * 3)), "1d 09h");
    }
}
